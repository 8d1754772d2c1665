"""HTTP's views are built as JSON straight from the engine's view
(convert.view_to_json) and its ApplyMove/GetGame answers without protobuf
messages (GameApp.apply_move_json / get_game_json). They must be exactly what
MessageToDict writes for the gRPC answer: checked on every position of real
games of every preset, for every seat and a spectator."""

from __future__ import annotations

import asyncio
import random

import pytest
from google.protobuf import json_format

import engine
from service import convert
from service.api import game_service_pb2 as pb
from service.app import Caller, GameApp
from service.store.memory import MemoryStore


@pytest.mark.parametrize("preset", sorted(engine.PRESETS))
@pytest.mark.parametrize("players", [2, 5])
def test_view_to_json_equals_message_to_dict(preset: str, players: int) -> None:
    game = engine.new_game(preset, players, f"json-{preset}-{players}")
    rng = random.Random(players)
    names = tuple("" if s == 1 else f"P{s}" for s in range(players))  # "" is left out
    bots = tuple(s % len(pb.BotLevel.values()) for s in range(players))
    checked = 0
    while True:
        for seat in (None, *range(players)):
            view = engine.build_view(game, seat)
            expected = json_format.MessageToDict(convert.view_to_proto(view, "g" * 20, names, bots))
            assert convert.view_to_json(view, "g" * 20, names, bots) == expected
            checked += 1
        if game.over:
            break
        game.push(rng.choice(game.legal_moves()))
    assert checked > 50


def test_http_answers_equal_the_grpc_answers_in_json() -> None:
    async def go() -> None:
        grpc_side, http_side = GameApp(MemoryStore()), GameApp(MemoryStore())
        create = pb.CreateGameRequest(
            ruleset=pb.Ruleset(preset="chicken_foot", rounds=2),
            players=[pb.Player(display_name="A"), pb.Player(bot=pb.BOT_LEVEL_RANDOM)]
            + [pb.Player() for _ in range(2)],
            seed="same deal",
            request_id="same game",
        )
        a = await grpc_side.create_game(create, Caller())
        b = await http_side.create_game(create, Caller())
        assert a.game == b.game
        game_id = a.game.game_id
        tokens = [s.token for s in a.seats], [s.token for s in b.seats]
        rng = random.Random(7)
        view = a.game
        moves = 0
        while view.status != pb.GAME_STATUS_FINISHED:
            seat = view.current_seat
            legal = await grpc_side.list_legal_moves(game_id, Caller(tokens[0][seat]))
            move = rng.choice(list(legal.moves)).move
            # Every tenth move carries a requestId: that answer is remembered
            # as a message, and its JSON must not change.
            rid = f"r{moves}" if moves % 10 == 0 else ""
            request = pb.ApplyMoveRequest(game_id=game_id, move=move, request_id=rid)
            answer = await grpc_side.apply_move(request, Caller(tokens[0][seat]))
            as_json = await http_side.apply_move_json(request, Caller(tokens[1][seat]))
            assert as_json == json_format.MessageToDict(answer)
            other = (seat + 1) % 4
            for grpc_caller, http_caller in (
                (Caller(), Caller()),
                (Caller(tokens[0][other]), Caller(tokens[1][other])),
            ):
                got = await http_side.get_game_json(game_id, http_caller)
                expected = await grpc_side.get_game(game_id, grpc_caller)
                assert got == json_format.MessageToDict(expected)
            if rid:
                again = await http_side.apply_move_json(request, Caller(tokens[1][seat]))
                assert again == as_json
            view = answer.game
            moves += 1
        assert moves > 20

    asyncio.run(go())
