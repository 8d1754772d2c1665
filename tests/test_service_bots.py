"""Bot seats in the service play the engine's levels (BOT_LEVEL_RANDOM,
_GREEDY, _EXPERT): deterministically, so two replicas (or a replay) agree,
with expert decisions made in worker processes off the event loop."""

from __future__ import annotations

import asyncio
import random

import pytest

import engine
from service.api import game_service_pb2 as pb
from service.app import Caller, GameApp
from service.bots import LEVELS, BotPlayer
from service.settings import Settings
from service.store.memory import MemoryStore

SHORT = pb.Ruleset(preset="standard", rounds=1)


async def _play(app: GameApp, level: int, seed: str) -> list[str]:
    """One human (seat 0, random legal moves) against three bots of ``level``;
    the log of every move played, bots' included."""
    created = await app.create_game(
        pb.CreateGameRequest(
            ruleset=SHORT,
            players=[pb.Player(display_name="me")] + [pb.Player(bot=level)] * 3,
            seed=seed,
        ),
        Caller(),
    )
    game_id = created.game.game_id
    me = Caller(created.seats[0].token)
    rng = random.Random(seed)
    view = created.game
    while view.status != pb.GAME_STATUS_FINISHED:
        assert view.current_seat == 0, "bots move until the person is to move"
        legal = await app.list_legal_moves(game_id, me)
        request = pb.ApplyMoveRequest(game_id=game_id, move=rng.choice(list(legal.moves)).move)
        view = (await app.apply_move(request, me)).game
    log = await app.get_game_log(game_id, Caller())
    return [str(e) for e in log.events]


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_bot_levels_finish_games_and_replay_exactly(level: int) -> None:
    async def go() -> None:
        inline = GameApp(MemoryStore(), Settings(bot_processes=0))
        pooled = GameApp(MemoryStore(), Settings(bot_processes=1))
        try:
            first = await _play(inline, level, f"bots-{level}")
            # Another replica, with its expert in a worker process: the same game.
            assert await _play(pooled, level, f"bots-{level}") == first
            assert len(first) > 20
        finally:
            inline.close()
            pooled.close()

    asyncio.run(go())


def test_levels_play_differently() -> None:
    async def go() -> None:
        app = GameApp(MemoryStore(), Settings(bot_processes=0))
        logs = {level: await _play(app, level, "same deal") for level in LEVELS}
        assert len(set(map(tuple, logs.values()))) == len(LEVELS)

    asyncio.run(go())


def test_expert_decisions_run_in_worker_processes() -> None:
    """The expert thinks in the pool's processes, off the event loop, and
    chooses there exactly what it chooses inline."""

    async def go() -> None:
        bots = BotPlayer(processes=1)
        game = engine.new_game("standard", 4, "busy")
        rng = random.Random(3)
        for _ in range(25):  # a middle-game position, with choices to weigh
            game.push(rng.choice(game.legal_moves()))
        view = engine.build_view(game, game.current_seat)
        legal = game.legal_moves()
        inline = engine.bots.choose("expert", view, legal, engine.bots.bot_key(view))
        moves = await asyncio.gather(
            *(bots.choose(pb.BOT_LEVEL_EXPERT, view, legal) for _ in range(3))
        )
        pool = bots._pool
        assert pool is not None
        assert pool._processes  # the worker is a real process
        bots.close()
        assert moves == [inline] * 3

    asyncio.run(go())


def test_a_game_of_experts_only_is_played_by_create_game() -> None:
    """API.md: CreateGame plays a game of bots only to its end. Its experts
    search at ALL_BOTS_BUDGET (the caller waits for the whole game), and the
    game still replays exactly."""

    async def go() -> None:
        request = pb.CreateGameRequest(
            ruleset=pb.Ruleset(preset="standard", rounds=2),
            players=[pb.Player(bot=pb.BOT_LEVEL_EXPERT)] * 3,
            seed="experts only",
        )
        apps = [GameApp(MemoryStore(), Settings(bot_processes=p)) for p in (0, 1)]
        try:
            views = [(await app.create_game(request, Caller())).game for app in apps]
        finally:
            for app in apps:
                app.close()
        assert views[0].status == pb.GAME_STATUS_FINISHED
        assert len(views[0].players[0].round_scores) == 2
        views[1].game_id = views[0].game_id  # ids are random without a requestId
        assert views[0] == views[1]

    asyncio.run(go())
