"""Engine events as wire events (convert.event_to_proto): every event of full
games of every preset, read back by an independent reader, is the event."""

from __future__ import annotations

import random
from collections import Counter

import pytest

import engine
from railyard_api import convert
from railyard_api import game_service_pb2 as pb
from tests.presets import is_line_game, players_for

_DRAW_REASONS = {v: k for k, v in convert._DRAW_REASON.items()}
_END_REASONS = {v: k for k, v in convert._END_REASON.items()}
_POINTS_REASONS = {v: k for k, v in convert._POINTS_REASON.items()}


def _tile(message: pb.Tile) -> engine.Tile:
    return engine.Tile(message.a, message.b)


def read_back(message: pb.GameEvent) -> engine.Event:
    kind = message.WhichOneof("kind")
    body = getattr(message, kind)
    if kind == "tile_played":
        return engine.TilePlayed(body.seat, _tile(body.tile), convert.train_from_proto(body.train))
    if kind == "tile_drawn":
        tile = _tile(body.tile) if body.HasField("tile") else None
        return engine.TileDrawn(body.seat, tile, _DRAW_REASONS[body.reason])
    if kind == "double_satisfied":
        train = convert.train_from_proto(body.train)
        return engine.DoubleSatisfied(train, body.value, body.dead)
    if kind == "round_started":
        engine_tile = _tile(body.engine) if body.HasField("engine") else None
        return engine.RoundStarted(body.round, engine_tile, body.starter)
    if kind == "round_ended":
        winner = body.winner if body.HasField("winner") else None
        return engine.RoundEnded(body.round, _END_REASONS[body.reason], tuple(body.scores), winner)
    if kind == "points_scored":
        team = body.team if body.HasField("team") else None
        return engine.PointsScored(body.seat, body.points, _POINTS_REASONS[body.reason], team)
    if kind == "game_ended":
        return engine.GameEnded(tuple(body.totals), tuple(body.winners), body.seed)
    seat_only = {
        "turn_started": engine.TurnStarted,
        "passed": engine.Passed,
        "marker_placed": engine.MarkerPlaced,
        "marker_removed": engine.MarkerRemoved,
    }
    return seat_only[kind](body.seat)


@pytest.mark.parametrize("preset", sorted(engine.PRESETS))
def test_every_event_of_full_games_reads_back_as_itself(preset: str) -> None:
    seen: Counter[str] = Counter()
    for wanted in (2, 5):
        players = players_for(preset, wanted)
        game = engine.new_game(preset, players, f"events-{preset}-{players}")
        rng = random.Random(players)
        events = [(0, e) for e in game.opening_events]
        while not game.over:
            events += [(game.version, e) for e in game.apply(rng.choice(game.legal_moves()))]
        for version, event in events:
            message = convert.event_to_proto(event, version)
            again = pb.GameEvent.FromString(message.SerializeToString())
            assert again.version == version
            assert read_back(again) == event
            seen[type(event).__name__] += 1
    common = {"TilePlayed", "TurnStarted", "RoundStarted", "GameEnded"}
    if not is_line_game(preset):
        common |= {"TileDrawn", "RoundEnded"}
    assert common <= set(seen), seen
