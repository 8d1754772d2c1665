"""Whole-history reads are bounded per process (service/app/history.py): a
finished game's log is read from the store once and kept, an unfinished
game's never is, and past ``max_log_reads`` reads at once GetGameLog and a
replaying WatchGame are refused (RESOURCE_EXHAUSTED TOO_MANY_LOG_READS, HTTP
429 with Retry-After, gRPC with the same ErrorInfo metadata), then admitted
again once reads end."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import grpc
import httpx
import pytest

from railyard_api import game_service_pb2 as pb
from railyard_api import game_service_pb2_grpc as pb_grpc
from railyard_api.fields import message_of
from service.app import Caller, GameApp
from service.app.errors import ServiceError
from service.app.history import KEPT_SECONDS, FinishedLogs
from service.settings import Settings
from service.store import GameRecord, StoredEvent
from service.store.memory import MemoryStore
from service.store.redis import RedisStore
from service.transports.grpc.server import create_grpc_server
from service.transports.http.server import create_http_app
from tests.service_helpers import bearer, expect_error, people, run

SHORT = pb.Ruleset(set_max=6, hand_size=7, rounds=1)
SPECTATOR = Caller(address="192.0.2.1")


class Counting:
    """A store that counts its loads and event reads, and holds each event
    read at ``gate`` while one is set (a read in flight, for as long as a
    test needs it)."""

    loads = 0
    reads = 0
    gate: asyncio.Event | None = None

    async def load(self, game_id: str) -> GameRecord | None:
        self.loads += 1
        found: GameRecord | None = await super().load(game_id)  # type: ignore[misc]
        return found

    async def read_events(self, game_id: str, after_version: int) -> list[StoredEvent]:
        self.reads += 1
        if self.gate is not None:
            await self.gate.wait()
        found: list[StoredEvent] = await super().read_events(game_id, after_version)  # type: ignore[misc]
        return found


class CountingMemoryStore(Counting, MemoryStore):
    pass


class CountingRedisStore(Counting, RedisStore):
    pass


CountingStore = CountingMemoryStore | CountingRedisStore


def counting_store(url: str | None) -> CountingStore:
    """The memory store (``url`` None) or Redis at ``url``, counting."""
    return CountingMemoryStore() if url is None else CountingRedisStore(url)


def app_over(store: CountingStore, **settings: Any) -> GameApp:
    # bots_only "request": a game of bots is played to its end by CreateGame.
    return GameApp(store, Settings(bot_processes=0, bots_only="request", **settings))


async def finished_game(app: GameApp) -> str:
    bots = dict.fromkeys(range(3), int(pb.BOT_LEVEL_RANDOM))
    created = await app.create_game(
        pb.CreateGameRequest(ruleset=SHORT, players=people(3, bots)), Caller()
    )
    assert created.game.status == pb.GAME_STATUS_FINISHED
    return created.game.game_id


async def open_game(app: GameApp) -> tuple[str, list[str]]:
    created = await app.create_game(
        pb.CreateGameRequest(ruleset=SHORT, players=people(2)), Caller()
    )
    assert created.game.status == pb.GAME_STATUS_IN_PROGRESS
    return created.game.game_id, [s.token for s in created.seats]


async def close(app: GameApp, store: CountingStore) -> None:
    app.close()
    await store.close()


def test_a_finished_games_log_is_read_from_the_store_once(url: str | None) -> None:
    """Over both stores: the second GetGameLog of a finished game is the
    first's answer, and reads nothing from the store."""

    async def go() -> None:
        store = counting_store(url)
        app = app_over(store)
        try:
            game_id = await finished_game(app)
            loads, reads = store.loads, store.reads
            first = await app.get_game_log(game_id, SPECTATOR)
            assert (store.loads, store.reads) == (loads + 1, reads + 1)
            assert first.seed  # MT-FAIR-1: over, so the seed is there
            assert first.events[-1].WhichOneof("kind") == "game_ended"
            again = await app.get_game_log(game_id, Caller(address="192.0.2.2"))
            assert again == first
            assert (store.loads, store.reads) == (loads + 1, reads + 1)
            assert len(app.finished_logs) == 1
        finally:
            await close(app, store)

    run(go())


def test_an_unfinished_games_log_is_never_kept(url: str | None) -> None:
    async def go() -> None:
        store = counting_store(url)
        app = app_over(store)
        try:
            game_id, tokens = await open_game(app)
            before = await app.get_game_log(game_id, SPECTATOR)
            assert store.reads == 1
            assert not before.seed
            view = message_of(pb.GameView, await app.get_game(game_id, Caller()))
            legal = await app.list_legal_moves(game_id, Caller(tokens[view.current_seat]))
            move = pb.ApplyMoveRequest(game_id=game_id, move=legal.moves[0].move)
            await app.apply_move(move, Caller(tokens[view.current_seat]))
            after = await app.get_game_log(game_id, SPECTATOR)
            assert store.reads == 2
            assert len(after.events) > len(before.events)  # the move is in it: read again
            assert len(app.finished_logs) == 0
        finally:
            await close(app, store)

    run(go())


def test_a_kept_log_is_read_again_after_its_lifetime() -> None:
    """A finished game still expires from the store (game_ttl): a kept log is
    used for KEPT_SECONDS, by the app's clock, then read again."""
    now = [1000.0]

    async def go() -> None:
        store = CountingMemoryStore()
        app = GameApp(store, Settings(bot_processes=0, bots_only="request"), clock=lambda: now[0])
        try:
            game_id = await finished_game(app)
            await app.get_game_log(game_id, SPECTATOR)
            now[0] += KEPT_SECONDS - 1
            await app.get_game_log(game_id, SPECTATOR)
            assert store.reads == 1
            now[0] += 1
            await app.get_game_log(game_id, SPECTATOR)
            assert store.reads == 2
        finally:
            await close(app, store)

    run(go())


def stored(version: int, size: int) -> StoredEvent:
    return StoredEvent(version, 1, b"x" * size)


def test_kept_logs_are_bounded_in_count_and_bytes_least_recently_used_first() -> None:
    empty = pb.GetGameLogResponse()
    logs = FinishedLogs(max_games=2, max_bytes=1000, clock=lambda: 0.0)
    logs.put("a", [stored(1, 100)], empty)
    logs.put("b", [stored(1, 100)], empty)
    assert logs.get("a") is not None  # a is now the more recently used
    logs.put("c", [stored(1, 100)], empty)
    assert logs.get("b") is None  # the least recently used of the two
    assert logs.get("a") is not None
    assert logs.get("c") is not None
    assert len(logs) == 2
    logs.put("d", [stored(1, 700)], empty)  # 100 + 700 fit, 100 + 100 + 700 would not
    assert logs.get("a") is None
    assert logs.get("c") is not None
    big = logs.put("e", [stored(1, 1001)], empty)  # answered, not kept
    assert big.events[0].version == 1
    assert logs.get("e") is None
    assert logs.get("c") is not None


def test_a_kept_log_gives_the_events_after_a_version() -> None:
    events = [StoredEvent(v, s, b"") for v in range(4) for s in (1, 2)]
    kept = FinishedLogs().put("a", events, pb.GetGameLogResponse())
    assert kept.after(-1) == events
    assert [(e.version, e.seq) for e in kept.after(1)] == [(2, 1), (2, 2), (3, 1), (3, 2)]
    assert kept.after(3) == []


def test_a_finished_games_replay_comes_from_its_kept_log() -> None:
    """A WatchGame that resumes from an early version of a finished game
    replays from the kept log (read whole on the first replay), and a
    GetGameLog after it reads nothing either."""

    async def go() -> None:
        store = CountingMemoryStore()
        app = app_over(store)
        try:
            game_id = await finished_game(app)
            expected = list((await app.get_game_log(game_id, SPECTATOR)).events)
            app.finished_logs = FinishedLogs()  # forgotten: the first replay reads it
            reads = store.reads
            assert await replayed(app, game_id, -1) == expected
            assert await replayed(app, game_id, -1) == expected
            assert await replayed(app, game_id, 2) == [e for e in expected if e.version > 2]
            assert store.reads == reads + 1
            await app.get_game_log(game_id, SPECTATOR)
            assert store.reads == reads + 1
        finally:
            await close(app, store)

    run(go())


async def replayed(app: GameApp, game_id: str, after: int) -> list[pb.GameEvent]:
    """The events a spectator's WatchGame gives after its snapshot, to the game's end."""
    events: list[pb.GameEvent] = []
    async for group in app.watch_game(game_id, after, SPECTATOR):
        assert group is not None  # (a keep-alive: a finished game's stream has none)
        events += [e for e in group if e.WhichOneof("kind") != "snapshot"]
    return events


def test_reads_past_the_limit_are_refused_with_a_retry_delay_then_admitted() -> None:
    """With every read slot held by a read in flight, GetGameLog and a
    replaying WatchGame are refused before they read, over the app, HTTP
    (429, Retry-After) and gRPC (ErrorInfo metadata); a watch with nothing
    to replay is not. Once the reads end, reads are admitted again."""

    async def go() -> None:
        store = CountingMemoryStore()
        app = app_over(store, max_log_reads=2)
        server, port = create_grpc_server(app, "127.0.0.1", 0)
        await server.start()
        transport = httpx.ASGITransport(app=create_http_app(app))
        try:
            async with (
                httpx.AsyncClient(transport=transport, base_url="http://t") as http,
                grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel,
            ):
                stub = pb_grpc.GameServiceStub(channel)
                game_id, tokens = await open_game(app)
                store.gate = asyncio.Event()
                held = [asyncio.create_task(app.get_game_log(game_id, SPECTATOR)) for _ in range(2)]
                while store.reads < 2:
                    await asyncio.sleep(0)
                assert app.history_reads.busy == 2

                with pytest.raises(ServiceError) as refused:
                    await app.get_game_log(game_id, SPECTATOR)
                assert refused.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert refused.value.reason == "TOO_MANY_LOG_READS"
                assert refused.value.metadata == {"retryAfterSeconds": "1", "maxLogReads": "2"}

                answer = await http.get(f"/v1/games/{game_id}/log")
                assert answer.status_code == 429
                assert answer.headers["Retry-After"] == "1"
                assert reason_of(answer.json()) == "TOO_MANY_LOG_READS"
                replay = await http.get(f"/v1/games/{game_id}/events?afterVersion=-1")
                assert replay.status_code == 429, "refused before the stream starts"
                assert replay.headers["Retry-After"] == "1"

                code, reason, metadata = await expect_error(
                    lambda: stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id))
                )
                assert (code, reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_LOG_READS")
                assert metadata["retryAfterSeconds"] == "1"
                code, reason, _ = await expect_error(
                    lambda: first_of(
                        stub.WatchGame(
                            pb.WatchGameRequest(game_id=game_id, after_version=-1),
                            metadata=bearer(tokens[0]),
                        )
                    )
                )
                assert (code, reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_LOG_READS")

                # Nothing to replay (no afterVersion): no slot needed.
                live = app.watch_game(game_id, None, SPECTATOR)
                snapshot = await anext(live)
                assert snapshot is not None
                assert snapshot[0].WhichOneof("kind") == "snapshot"
                await live.aclose()
                assert store.reads == 2  # none of the refused calls read

                store.gate.set()
                logs = await asyncio.gather(*held)
                assert logs[0] == logs[1]
                assert app.history_reads.busy == 0
                store.gate = None
                assert (await http.get(f"/v1/games/{game_id}/log")).status_code == 200
                await stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id))
                assert store.reads == 4
        finally:
            await server.stop(None)
            await close(app, store)

    run(go())


async def first_of(stream: Any) -> Any:
    async for item in stream:
        return item
    return None


def reason_of(body: dict[str, Any]) -> str:
    details: Sequence[dict[str, Any]] = body["details"]
    return str(details[0]["reason"])


def test_the_limit_is_a_setting() -> None:
    assert Settings().max_log_reads == 32
    assert Settings(max_log_reads=5).max_log_reads == 5
    with pytest.raises(ValueError, match="max_log_reads"):
        Settings(max_log_reads=0)


def test_the_python_client_retries_a_refused_log_read() -> None:
    """A refusal for want of a read slot passes within the second: the
    client (clients/python) waits its Retry-After and tries again."""
    from railyard_client import RailyardError
    from railyard_client._common import is_transient

    refused = RailyardError(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "this server is already reading 32 game histories: retry in 1 s",
        "TOO_MANY_LOG_READS",
        {"retryAfterSeconds": "1"},
        retry_after=1,
    )
    assert is_transient(refused)
