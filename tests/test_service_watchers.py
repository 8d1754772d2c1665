"""Many watchers on one replica, against real servers and a real redis-server.

* The cap (``Settings.max_watchers``), counted across both transports: the
  watch past it is refused before its stream starts, over HTTP with a plain
  429, Retry-After and a Status body (reason TOO_MANY_WATCHERS), over gRPC
  with RESOURCE_EXHAUSTED and the ErrorInfo; once a stream closes, a new
  watch is admitted. Refused or failed watches hold no place.
* Hundreds of watchers of many games on one GameApp use a constant number
  of Redis connections (``CLIENT LIST``), and each sees every move of its
  game, in order, within seconds of the move (the keep-alive
  re-check is 15 s away, so this is the notification at work).
* ``railyard serve`` takes the cap from RAILYARD_MAX_WATCHERS and
  ``--max-watchers``.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
import redis

from railyard_api import game_service_pb2 as pb
from service import cli
from service.settings import Settings
from service.store.redis import RedisStore
from tests.service_helpers import error_info, people, run
from tests.test_service_resilience import (
    ERROR_INFO,
    SHORT,
    SHORT_JSON,
    Frame,
    Instance,
    Watcher,
    as_json,
    instance,
    play_grpc,
    serve,
    sse_events,
    stop_gracefully,
    watch_grpc,
    watch_sse,
)

RESOURCE_EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED


async def until(condition: Any, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)


async def opened(watcher: Watcher) -> None:
    """The watch's first item must be its snapshot."""
    first = await watcher.next_event()
    if isinstance(first, Frame):
        assert "snapshot" in first.json(), first
    else:
        assert isinstance(first, pb.GameEvent), first
        assert first.WhichOneof("kind") == "snapshot"


async def refused_over_http(svc: Instance, game_id: str) -> None:
    refused = watch_sse(svc.http, game_id)
    response = await refused.next_event()
    assert isinstance(response, httpx.Response), response
    assert response.status_code == 429, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert response.headers["retry-after"] == "5"
    body = response.json()
    assert body["code"] == RESOURCE_EXHAUSTED.value[0]
    (info,) = body["details"]
    assert info["@type"] == ERROR_INFO
    assert info["reason"] == "TOO_MANY_WATCHERS"
    assert info["metadata"] == {"retryAfterSeconds": "5", "maxWatchers": "3"}
    await refused.drop()


async def refused_over_grpc(svc: Instance, game_id: str) -> None:
    refused = watch_grpc(svc.stub, game_id)
    failure = await refused.next_event()
    assert isinstance(failure, grpc.aio.AioRpcError), failure
    code, reason, metadata = error_info(failure)
    assert (code, reason) == (RESOURCE_EXHAUSTED, "TOO_MANY_WATCHERS")
    assert metadata == {"retryAfterSeconds": "5", "maxWatchers": "3"}
    assert refused.received == [failure]  # nothing streamed before the refusal
    await refused.drop()


def test_the_watch_past_max_watchers_is_refused_on_both_transports(redis_url: str) -> None:
    async def go() -> None:
        async with instance(RedisStore(redis_url), Settings(max_watchers=3)) as svc:
            created = await svc.stub.CreateGame(
                pb.CreateGameRequest(ruleset=SHORT, players=people(2), seed="cap")
            )
            game_id = created.game.game_id
            tokens = {s.seat: s.token for s in created.seats}
            # Three streams, counted across the transports.
            open_ = [
                watch_grpc(svc.stub, game_id),
                watch_sse(svc.http, game_id),
                watch_grpc(svc.stub, game_id, token=tokens[0]),
            ]
            try:
                for watcher in open_:
                    await opened(watcher)
                assert svc.app.watching == 3
                await refused_over_http(svc, game_id)
                await refused_over_grpc(svc, game_id)
                assert svc.app.watching == 3  # refusals hold no place

                # An SSE stream closes: a gRPC watch gets its place.
                await open_.pop(1).drop()
                await until(lambda: svc.app.watching == 2, "the closed stream still counts")
                open_.append(watch_grpc(svc.stub, game_id))
                await opened(open_[-1])
                await refused_over_http(svc, game_id)
                # A gRPC stream closes: an SSE watch gets its place.
                await open_.pop(0).drop()
                await until(lambda: svc.app.watching == 2, "the closed stream still counts")
                open_.append(watch_sse(svc.http, game_id))
                await opened(open_[-1])
                await refused_over_grpc(svc, game_id)

                # The admitted streams are live: a move reaches all three.
                moved = await play_grpc(svc.stub, game_id, tokens, moves=1)
                for watcher in open_:
                    event = await watcher.next_event()
                    version = int(event.id) if isinstance(event, Frame) else event.version
                    assert version == moved.version
            finally:
                for watcher in open_:
                    await watcher.drop()
            await until(lambda: svc.app.watching == 0, "closed streams still count")
            # A watch that fails (an unknown game) holds no place either.
            for _ in range(4):
                unknown = watch_sse(svc.http, "0" * 20)
                response = await unknown.next_event()
                assert isinstance(response, httpx.Response)
                assert response.status_code == 404
                await unknown.drop()
            assert svc.app.watching == 0
            # Ended with their game, streams free their places too.
            watchers = [watch_grpc(svc.stub, game_id) for _ in range(3)]
            for watcher in watchers:
                await opened(watcher)
            await play_grpc(svc.stub, game_id, tokens)
            for watcher in watchers:
                await watcher.until_end()
            await until(lambda: svc.app.watching == 0, "finished streams still count")

    run(go())


async def reached(watcher: Watcher, version: int, deadline: float) -> None:
    """Read the watcher's events up to ``version``'s, by ``deadline``."""
    while True:
        event = await watcher.next_event(timeout=max(0.01, deadline - time.monotonic()))
        assert isinstance(event, (Frame, pb.GameEvent)), event
        if (int(event.id or 0) if isinstance(event, Frame) else event.version) == version:
            return


def events_of(watcher: Watcher) -> list[Any]:
    """What the watcher received after its snapshot, keep-alives left out."""
    return [
        item
        for item in watcher.received[1:]
        if not (isinstance(item, Frame) and item.comment is not None)
    ]


def service_connections(url: str) -> list[str]:
    """The names of the clients of the Redis server that are the service's."""
    with redis.Redis.from_url(url) as client:
        names = [c.get("name", "") for c in client.client_list()]
    return sorted(n for n in names if n.startswith("railyard"))


def test_hundreds_of_watchers_share_a_constant_number_of_redis_connections(
    redis_url: str,
) -> None:
    """300 watchers (150 SSE, 150 gRPC) of 30 games on one GameApp: the
    process holds its 2 shared connections and 1 subscriber, no more, and
    every watcher sees every move of its game in order, each within a few
    seconds of its ApplyMove (the keep-alive re-check is 15 s away)."""
    games, per_game, rounds = 30, 10, 4

    # The 150 gRPC watches share the one channel of the instance: its
    # connection may hold them all (a client over the default cap of
    # RAILYARD_GRPC_MAX_STREAMS a connection opens more connections).
    settings = Settings(grpc_max_streams=games * per_game)

    async def go() -> None:
        async with instance(RedisStore(redis_url), settings) as svc:
            created = [
                await svc.stub.CreateGame(pb.CreateGameRequest(players=people(2), seed=f"many-{i}"))
                for i in range(games)
            ]
            ids = [c.game.game_id for c in created]
            tokens = {c.game.game_id: {s.seat: s.token for s in c.seats} for c in created}
            # Before any watch: the shared connections (the subscriber comes
            # with the first watcher).
            assert service_connections(redis_url) == ["railyard", "railyard"]
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
            async with httpx.AsyncClient(
                base_url=svc.http.base_url, limits=limits, timeout=30
            ) as http:
                watchers: list[tuple[str, Watcher]] = []
                for i in range(games * per_game):
                    game_id = ids[i % games]
                    if i % 2:
                        watchers.append((game_id, watch_sse(http, game_id)))
                    else:
                        watchers.append((game_id, watch_grpc(svc.stub, game_id)))
                try:
                    for _, watcher in watchers:
                        await opened(watcher)
                    assert svc.app.watching == games * per_game
                    connections = ["railyard", "railyard", "railyard-watch"]
                    assert service_connections(redis_url) == connections
                    start = {c.game.game_id: c.game.version for c in created}
                    for _ in range(rounds):
                        versions = await asyncio.gather(
                            *(play_grpc(svc.stub, g, tokens[g], moves=1) for g in ids)
                        )
                        deadline = time.monotonic() + 8
                        for (game_id, watcher), moved in zip(
                            watchers, versions * per_game, strict=True
                        ):
                            assert game_id == moved.game_id
                            await reached(watcher, moved.version, deadline)
                        assert service_connections(redis_url) == connections
                    for game_id, watcher in watchers:
                        log = await svc.stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id))
                        expected = [e for e in log.events if e.version > start[game_id]]
                        # The rest of the last version's events.
                        while len(got := events_of(watcher)) < len(expected):
                            await watcher.next_event(timeout=5)
                        if got and isinstance(got[0], Frame):
                            assert sse_events(got) == as_json(expected)
                        else:
                            assert got == expected
                finally:
                    for _, watcher in watchers:
                        await watcher.drop()
            await until(lambda: svc.app.watching == 0, "closed streams still count")

    run(go())


def test_railyard_serve_takes_the_cap_from_its_flag_and_its_environment(
    tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RAILYARD_MAX_WATCHERS=1 on a real ``railyard serve``: the second SSE
    watch is a 429; ``--max-watchers`` reaches the same setting (and wins)."""
    with serve(tmp_path, redis_url, "cap", RAILYARD_MAX_WATCHERS="1") as server:

        async def go() -> None:
            async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as client:
                body = {"players": [{}, {}], "ruleset": SHORT_JSON}
                created = await client.post("/v1/games", json=body)
                game_id = created.json()["game"]["gameId"]
                first = watch_sse(client, game_id)
                try:
                    await opened(first)
                    second = watch_sse(client, game_id)
                    refused = await second.next_event()
                    assert isinstance(refused, httpx.Response)
                    assert refused.status_code == 429
                    assert refused.json()["details"][0]["metadata"]["maxWatchers"] == "1"
                finally:
                    await first.drop()

        run(go())
        stop_gracefully(server)

    seen: list[Settings] = []

    async def capture(settings: Settings) -> None:
        seen.append(settings)

    monkeypatch.setattr("service.ops.serve.serve", capture)
    # (This process's logging is pytest's: leave it alone.)
    monkeypatch.setattr("service.ops.telemetry.configure_logging", lambda *_: None)
    monkeypatch.setenv("RAILYARD_MAX_WATCHERS", "7")
    assert cli.main(["serve", "--max-watchers", "9"]) == 0
    assert cli.main(["serve"]) == 0
    assert [s.max_watchers for s in seen] == [9, 7]
    assert cli.main(["serve", "--max-watchers", "0"]) == 2  # at least one
