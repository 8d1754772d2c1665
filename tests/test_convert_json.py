"""A view has one description on the wire, its fields (convert.view_fields),
which gRPC builds its GameView message from (convert.view_to_proto) and
HTTP writes as JSON (service.transports.http.jsonwire) with no message in
between. The message must be exactly the one the protobuf API fills field
by field from the engine's view (the trains are copied from those of
earlier views: a stale one would show here), and its JSON, events' and the
HTTP answers' exactly what MessageToDict writes for the gRPC answer, byte
for byte whether written from the fields or from the message: checked on
every position of real games of every preset, for every seat and a
spectator."""

from __future__ import annotations

import asyncio
import dataclasses
import random

import httpx
import orjson
import pytest
from google.protobuf import json_format

import engine
from railyard_api import convert
from railyard_api import game_service_pb2 as pb
from railyard_api.fields import message_of
from service.app import Caller, GameApp
from service.store.memory import MemoryStore
from service.transports.http.jsonwire import fields_to_dict, to_dict
from service.transports.http.server import create_http_app
from tests.presets import players_for


def filled_field_by_field(view: engine.GameView, names: tuple[str, ...], bots: tuple[int, ...]):
    """The reference: ``view_to_proto`` written field by field, nothing reused."""
    message = pb.GameView(
        game_id="g" * 20,
        version=view.version,
        status=convert._STATUS[view.status],
        round=view.round,
        rounds_total=view.rounds_total,
        boneyard_count=view.boneyard_count,
        seed_sha256=view.seed_sha256,
        winners=view.winners,
        target_score=view.target_score,
    )
    if view.engine is not None:
        message.engine.CopyFrom(pb.Tile(a=view.engine.a, b=view.engine.b))
    if view.line is not None:
        message.line.SetInParent()
        message.line.open_ends.extend(view.line.open_ends)
        for tile in view.line.tiles:
            message.line.tiles.add(a=tile.a, b=tile.b)
    for team in view.teams:
        message.teams.add(seats=team.seats, score=team.score)
    message.ruleset.CopyFrom(convert._ruleset_message(view.ruleset))
    for field in ("current_seat", "viewer_seat", "seed"):
        if getattr(view, field) is not None:
            setattr(message, field, getattr(view, field))
    if view.turn is not None:
        message.turn.owes_tile = view.turn.owes_tile
        message.turn.drew_this_turn = view.turn.drew_this_turn
        message.turn.first_turn = view.turn.first_turn
    for tile in view.hand or ():
        message.hand.add(a=tile.a, b=tile.b)
    for p in view.players:
        message.players.add(
            seat=p.seat,
            display_name=names[p.seat],
            hand_count=p.hand_count,
            marker=p.marker,
            score=p.score,
            round_scores=p.round_scores,
            bot=bots[p.seat],
        )
    for t in view.trains:
        train = message.trains.add(open_ends=t.open_ends, marker=t.marker)
        convert._set_ref(train.ref, t.ref)
        for tile in t.tiles:
            train.tiles.add(a=tile.a, b=tile.b)
        for b in t.branches:
            branch = train.branches.add(end=b.end)
            for tile in b.tiles:
                branch.tiles.add(a=tile.a, b=tile.b)
            if b.parent_end is not None:
                branch.parent_end = b.parent_end
            if b.open_end is not None:
                branch.open_end = b.open_end
    for d in view.open_doubles:
        double = message.open_doubles.add(value=d.value, answers=d.answers)
        convert._set_ref(double.train, d.train)
    return message


def assert_same_message(view: engine.GameView, names: tuple[str, ...], bots: tuple[int, ...]):
    got = convert.view_to_proto(view, "g" * 20, names, bots)
    expected = filled_field_by_field(view, names, bots)
    assert got == expected
    assert got.SerializeToString(deterministic=True) == expected.SerializeToString(
        deterministic=True
    )
    assert_same_json(convert.view_fields(view, "g" * 20, names, bots), expected)


def assert_same_json(fields: dict[str, object], message: pb.GameView) -> None:
    """The JSON written from a view's fields is MessageToDict's of its
    message, and the very bytes written from the message (a retry's answer,
    remembered as a message, repeats the first one's bytes)."""
    written = fields_to_dict(pb.GameView.DESCRIPTOR, fields)
    assert written == json_format.MessageToDict(message)
    assert orjson.dumps(written) == orjson.dumps(to_dict(message))


@pytest.mark.parametrize("preset", sorted(engine.PRESETS))
@pytest.mark.parametrize("players", [2, 4])
def test_view_to_proto_equals_the_message_filled_field_by_field(preset: str, players: int):
    players = players_for(preset, players)
    game = engine.new_game(preset, players, f"proto-{preset}-{players}")
    rng = random.Random(players)
    names = tuple(f"P{s}" for s in range(players))
    bots = (0,) * players
    checked = branched = 0
    while not game.over:
        for seat in (None, *range(players)):
            view = engine.build_view(game, seat)
            assert_same_message(view, names, bots)
            branched += any(t.branches for t in view.trains)
            checked += 1
        game.push(rng.choice(game.legal_moves()))
    assert checked > 50
    if preset == "chicken_foot":
        assert branched, "no chicken foot came up: the branches went unchecked"


def test_view_to_proto_long_trains_and_branches():
    """Long trains and branches, the classic line's ref, ends, and the zeros
    proto3 writes (an optional set to 0) or leaves out (None: unset)."""
    game = engine.new_game("chicken_foot", 3, "long trains")
    view = engine.build_view(game, 0)
    long = tuple(engine.Tile(a % 19, (a * 7) % 19) for a in range(60))
    trains = (
        engine.view.TrainView(engine.TrainRef.seat(0), long, (0,), True),
        engine.view.TrainView(
            engine.TrainRef.mexican(0),
            long[:3],
            (5, 0, 18),
            False,
            (
                engine.view.BranchView(0, None, long[:3], 18),
                engine.view.BranchView(1, 0, long, None),
                engine.view.BranchView(2, 0, (), 0),
                engine.view.BranchView(3, 2, long[:40], 7),
            ),
        ),
        engine.view.TrainView(engine.TrainRef(engine.TrainKind.LINE, 0, 1), (), (), False),
        engine.view.TrainView(engine.TrainRef.seat(2, 3), (), (), False),
    )
    hand = tuple(engine.Tile(a, b) for a in range(13) for b in range(a, 13))
    view = dataclasses.replace(view, trains=trains, hand=hand)
    assert_same_message(view, ("a", "b", "c"), (0, 1, 2))


@pytest.mark.parametrize("preset", sorted(engine.PRESETS))
@pytest.mark.parametrize("players", [2, 5])
def test_view_json_equals_message_to_dict(preset: str, players: int) -> None:
    """Every position, as each seat and a spectator see it, in turn: the
    trains' JSON remembered from one view to the next must follow them."""
    players = players_for(preset, players)
    game = engine.new_game(preset, players, f"json-{preset}-{players}")
    rng = random.Random(players)
    names = tuple("" if s == 1 else f"P{s}" for s in range(players))  # "" is left out
    bots = tuple(s % len(pb.BotLevel.values()) for s in range(players))
    checked = 0
    while True:
        for seat in (None, *range(players)):
            view = engine.build_view(game, seat)
            caller_seed = seat == 0  # both values of GameView.seedFromCaller
            message = convert.view_to_proto(view, "g" * 20, names, bots, caller_seed)
            assert to_dict(message) == json_format.MessageToDict(message)
            assert_same_json(convert.view_fields(view, "g" * 20, names, bots, caller_seed), message)
            checked += 1
        if game.over:
            break
        game.push(rng.choice(game.legal_moves()))
    assert checked > 50


@pytest.mark.parametrize("preset", sorted(engine.PRESETS))
def test_event_json_equals_message_to_dict(preset: str) -> None:
    """Every event of a few real games (every kind they raise: deals,
    plays, draws, passes, markers, doubles, round and game ends), as each
    seat and a spectator get it."""
    kinds: set[str] = set()
    for players in (2, 4):
        players = players_for(preset, players)
        game = engine.new_game(preset, players, f"events-{preset}-{players}")
        rng = random.Random(players)
        events = list(game.opening_events)
        while True:
            for event in events:
                message = convert.event_to_proto(event, game.version)
                for seat in (None, *range(players)):
                    shown = convert.redact(message, seat)
                    assert to_dict(shown) == json_format.MessageToDict(shown)
                kinds.add(str(message.WhichOneof("kind")))
            if game.over:
                break
            events = game.apply(rng.choice(game.legal_moves()), seat=game.current_seat)
    assert {"tile_played", "turn_started", "game_ended"} <= kinds, kinds


def test_event_json_writes_zeros_as_the_mapping_does() -> None:
    """Seat 0, tile 0-0, Mexican train 0 (a oneof member: written even at 0),
    version 0, an unset tile and reason."""
    played = pb.GameEvent()
    played.tile_played.seat = 0
    played.tile_played.tile.SetInParent()
    played.tile_played.train.mexican = 0
    drawn = pb.GameEvent(version=3)
    drawn.tile_drawn.SetInParent()
    line = pb.GameEvent(version=9)
    line.tile_played.train.line.SetInParent()
    line.tile_played.train.end = 2
    for message in (played, drawn, line, pb.GameEvent(), pb.GameEvent(passed=pb.Passed())):
        assert to_dict(message) == json_format.MessageToDict(message)


def test_http_answers_equal_the_grpc_answers_in_json() -> None:
    """The same game played on two services, one through the application
    (what gRPC serves) and one through the HTTP app: every HTTP answer is
    MessageToDict of the other's, and a repeated requestId answers the very
    same bytes."""

    async def go() -> None:
        grpc_side, http_side = GameApp(MemoryStore()), GameApp(MemoryStore())
        create = pb.CreateGameRequest(
            ruleset=pb.Ruleset(preset="chicken_foot", rounds=2),
            players=[pb.Player(display_name="A"), pb.Player(bot=pb.BOT_LEVEL_RANDOM)]
            + [pb.Player() for _ in range(2)],
            seed="same deal",
            request_id="same game",
        )
        transport = httpx.ASGITransport(app=create_http_app(http_side))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            a = await grpc_side.create_game(create, Caller())
            created = await http.post("/v1/games", json=json_format.MessageToDict(create))
            assert created.status_code == 200, created.text
            b = created.json()
            assert b["game"] == json_format.MessageToDict(a.game)
            game_id = a.game.game_id
            # By seat, the people's seats only: seat 1 is a bot and has no token.
            tokens = (
                {s.seat: s.token for s in a.seats},
                {s.get("seat", 0): s["token"] for s in b["seats"]},
            )
            assert sorted(tokens[0]) == sorted(tokens[1]) == [0, 2, 3]

            def auth(seat: int) -> dict[str, str]:
                return {"authorization": f"Bearer {tokens[1][seat]}"}

            rng = random.Random(7)
            view = a.game
            moves = 0
            while view.status != pb.GAME_STATUS_FINISHED:
                seat = view.current_seat
                legal = await grpc_side.list_legal_moves(game_id, Caller(tokens[0][seat]))
                move = rng.choice(list(legal.moves)).move
                # Every tenth move carries a requestId: that answer is
                # remembered as a message, and its JSON must not change.
                rid = f"r{moves}" if moves % 10 == 0 else ""
                request = pb.ApplyMoveRequest(game_id=game_id, move=move, request_id=rid)
                answer = message_of(
                    pb.ApplyMoveResponse,
                    await grpc_side.apply_move(request, Caller(tokens[0][seat])),
                )
                body = {"move": json_format.MessageToDict(move), "requestId": rid}
                url = f"/v1/games/{game_id}/moves"
                applied = await http.post(url, json=body, headers=auth(seat))
                assert applied.status_code == 200, applied.text
                assert applied.json() == json_format.MessageToDict(answer)
                other = next(s for s in ((seat + 1) % 4, (seat + 2) % 4) if s in tokens[0])
                for grpc_caller, headers in (
                    (Caller(), {}),
                    (Caller(tokens[0][other]), auth(other)),
                ):
                    got = await http.get(f"/v1/games/{game_id}", headers=headers)
                    expected = message_of(
                        pb.GameView, await grpc_side.get_game(game_id, grpc_caller)
                    )
                    assert got.json() == json_format.MessageToDict(expected)
                if rid:
                    again = await http.post(url, json=body, headers=auth(seat))
                    assert again.content == applied.content
                view = answer.game
                moves += 1
            assert moves > 20

    asyncio.run(go())
