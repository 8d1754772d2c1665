"""service.transports.http.jsonwire, the one JSON encoder of the HTTP transport, writes
exactly what json_format.MessageToDict writes, on the views, events and
responses of real games of every preset."""

from __future__ import annotations

import asyncio
import random

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

import engine
from railyard_api import game_service_pb2 as pb
from railyard_api.fields import message_of
from service.app import Caller, GameApp
from service.store.memory import MemoryStore
from service.transports.http import jsonwire
from service.transports.http.jsonwire import to_dict
from tests.presets import is_line_game


async def _messages(preset: str, seed: str) -> list[Message]:
    app = GameApp(MemoryStore())
    players = [
        pb.Player(display_name=f"P{i}", bot=pb.BOT_LEVEL_RANDOM if i == 2 else 0) for i in range(4)
    ]
    # Mexican Train: two rounds; a classic game: a target of 100.
    ruleset = pb.Ruleset(preset=preset)
    if is_line_game(preset):
        ruleset.target_score = 100
    else:
        ruleset.rounds = 2
    created = await app.create_game(
        pb.CreateGameRequest(ruleset=ruleset, players=players, seed=seed),
        Caller(),
    )
    out: list[Message] = [created, app.list_rulesets()]
    game_id = created.game.game_id
    tokens = {s.seat: s.token for s in created.seats}
    rng = random.Random(seed)
    view = created.game
    while view.status != pb.GAME_STATUS_FINISHED:
        seat = view.current_seat
        legal = await app.list_legal_moves(game_id, Caller(tokens[seat]))
        applied = message_of(
            pb.ApplyMoveResponse,
            await app.apply_move(
                pb.ApplyMoveRequest(game_id=game_id, move=rng.choice(list(legal.moves)).move),
                Caller(tokens[seat]),
            ),
        )
        out += [legal, applied, message_of(pb.GameView, await app.get_game(game_id, Caller()))]
        view = applied.game
    out.append(await app.get_game_log(game_id, Caller()))
    return out


@pytest.mark.parametrize("preset", sorted(engine.PRESETS))
def test_to_dict_equals_message_to_dict(preset: str) -> None:
    messages = asyncio.run(_messages(preset, f"jsonwire-{preset}"))
    assert len(messages) > 50
    for message in messages:
        assert to_dict(message) == json_format.MessageToDict(message)


def test_zero_values_are_omitted_and_presence_kept() -> None:
    view = pb.GameView(version=0, current_seat=0, engine=pb.Tile(a=0, b=0))
    view.trains.add(ref=pb.TrainRef(seat=0), tiles=[pb.Tile(a=0, b=5)])
    assert to_dict(view) == json_format.MessageToDict(view)
    assert to_dict(view) == {
        "currentSeat": 0,
        "engine": {},
        "trains": [{"ref": {"seat": 0}, "tiles": [{"b": 5}]}],
    }


def test_remembered_trains_follow_their_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    """A train's JSON is remembered by its bytes: a train that changed is
    written anew, an equal one (of another view) the same, a full memo starts
    over, and an unknown enum number is written as the number, as
    MessageToDict writes it."""
    monkeypatch.setattr(jsonwire, "_MEMO_SIZE", 2)
    monkeypatch.setattr(jsonwire, "_ENCODERS", {})  # memos of this size only
    view = pb.GameView()
    train = view.trains.add(ref=pb.TrainRef(mexican=0), tiles=[pb.Tile(a=1, b=2)])
    for b in range(3, 9):
        first = to_dict(view)
        train.tiles.add(a=2, b=b)  # the same train, one tile longer
        assert first != to_dict(view) == json_format.MessageToDict(view)
        again = pb.GameView()
        again.trains.add().CopyFrom(train)
        assert to_dict(again) == to_dict(view)
    view.status = 99  # GameStatus has no value 99
    assert to_dict(view) == json_format.MessageToDict(view)
    assert to_dict(view)["status"] == 99
