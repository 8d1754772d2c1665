"""The Redis store through Redis Sentinel: a real master, a replica and a
sentinel that the harness starts on free loopback ports
(tests/redis_harness.py), with a ``redis+sentinel://`` URL as an operator
would configure it.

The store asks the sentinel where the master is and talks to it (its
watchers' one subscription included); when the master dies the sentinel
promotes the replica and the running service moves to it by itself; a
failover ordered by hand (the old master demoted while it still runs) is
followed the same way. No game is damaged either time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from redis import Redis
from redis.asyncio import Redis as AsyncRedis

from railyard_api import game_service_pb2 as pb
from service.settings import Settings
from service.store import Commit
from service.store.redis import RedisStore
from service.store.resp import SENTINEL_PORT, Address, SentinelConfig, redact_url
from tests import test_service_e2e as e2e
from tests.redis_harness import RedisSentinels
from tests.service_helpers import bearer, error_info, people
from tests.test_service_resilience import (
    FAIL_FAST,
    NOT_SERVING,
    SERVING,
    SHORT,
    UNAVAILABLE,
    expect_unavailable,
    health_status,
    instance,
    pick,
    play_grpc,
)
from tests.test_store_cluster import events, exercise


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture
def sentinels() -> Iterator[RedisSentinels]:
    # Three seconds before a dead master counts as down: the outage checks of
    # the kill test stay inside that window even on a loaded CI machine.
    with RedisSentinels(down_after_ms=3000) as group:
        yield group


def test_sentinel_urls() -> None:
    config = SentinelConfig.parse(
        "redis+sentinel://app:s%40cret@10.0.0.1:26380,sentinel-b,[::1]:26400/prod%20main/3"
        "?sentinel_password=watch"
    )
    assert config.master_name == "prod main"
    assert [(a.host, a.port) for a in config.sentinels] == [
        ("10.0.0.1", 26380),
        ("sentinel-b", SENTINEL_PORT),
        ("::1", 26400),
    ]
    assert {(a.username, a.password, a.db, a.tls) for a in config.sentinels} == {
        (None, "watch", 0, False)
    }
    assert config.master == Address(None, 0, None, False, "app", "s@cret", 3)
    assert SentinelConfig.parse("rediss+sentinel://h/m").master.tls
    assert SentinelConfig.parse("redis+sentinel://:pw@h/m").master.password == "pw"
    assert SentinelConfig.applies("redis+sentinel://h/m")
    assert not SentinelConfig.applies("redis://h:6379/0")
    for bad, why in [
        ("redis+sentinel://h:26379", "names the master"),
        ("redis+sentinel://h:26379/", "names the master"),
        ("redis+sentinel://h/m/x", "database number"),
        ("redis+sentinel://h:port/m", "sentinel address"),
        ("redis+sentinel://h,,k/m", "sentinel address"),
    ]:
        with pytest.raises(ValueError, match=why):
            SentinelConfig.parse(bad)
    # No password reaches a log line or an error message.
    assert (
        redact_url("redis+sentinel://app:pw@h1,h2/m/3?sentinel_password=watch&x=1")
        == "redis+sentinel://app:***@h1,h2/m/3?sentinel_password=***&x=1"
    )


def test_every_store_call_goes_to_the_master_the_sentinel_names(
    sentinels: RedisSentinels,
) -> None:
    async def go() -> None:
        store = RedisStore(sentinels.url)
        try:
            await store.ping()
            await exercise(store, "s0000000000000000001")
        finally:
            await store.close()

    run(go())
    master = Redis(port=sentinels.master.port)
    assert master.exists("ry:{s0000000000000000001}:g")
    # The service end to end through the sentinel URL.
    e2e.test_full_game(sentinels.url, "http", "pagat", {"rounds": 2})


def _promoted(sentinels: RedisSentinels, old: int) -> bool:
    port = sentinels.master_port()
    return port != old and sentinels.role(sentinels.replica) == "master"


def test_master_dies_the_replica_is_promoted_and_the_game_goes_on(
    sentinels: RedisSentinels,
) -> None:
    """SIGKILL the master: calls are UNAVAILABLE (fast) until the sentinel has
    promoted the replica, then the same running service serves the game from
    it, at the version it had, and plays it to the end."""

    async def go() -> None:
        async with instance(RedisStore(sentinels.url), Settings(keepalive=0.5)) as svc:
            stub = svc.stub
            created = await stub.CreateGame(
                pb.CreateGameRequest(ruleset=SHORT, players=people(2), seed="sentinel")
            )
            game_id = created.game.game_id
            tokens = {s.seat: s.token for s in created.seats}
            view = await play_grpc(stub, game_id, tokens, moves=3)
            log = await stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id))
            assert sentinels.replicated()  # what the game wrote is on the replica
            old = sentinels.master.port

            sentinels.master.kill()
            await expect_unavailable(lambda: stub.GetGame(pb.GetGameRequest(game_id=game_id)))
            assert await health_status(svc) == NOT_SERVING

            begun = time.monotonic()
            while not _promoted(sentinels, old):
                assert time.monotonic() - begun < 20, "the sentinel promoted nobody"
                await asyncio.sleep(0.1)
            while await health_status(svc) != SERVING:
                assert time.monotonic() - begun < 20 + FAIL_FAST, "health did not come back"
                await asyncio.sleep(0.1)
            assert await stub.GetGame(pb.GetGameRequest(game_id=game_id)) == view
            assert await stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id)) == log
            final = await play_grpc(stub, game_id, tokens)
            assert final.status == pb.GAME_STATUS_FINISHED
            assert Redis(port=sentinels.replica.port).exists(f"ry:{{{game_id}}}:g")

    run(go())


def test_a_failover_by_hand_is_followed_without_a_restart(sentinels: RedisSentinels) -> None:
    """SENTINEL FAILOVER: the replica is promoted while the old master still
    runs, and still takes writes until the sentinel demotes it, about ten
    seconds later (they would be lost then). The store hears the sentinel's
    +switch-master: the next move lands on the new master, a retry with its
    requestId applies nothing twice, and the game goes on there."""

    async def go() -> None:
        async with instance(RedisStore(sentinels.url)) as svc:
            stub = svc.stub
            created = await stub.CreateGame(
                pb.CreateGameRequest(ruleset=SHORT, players=people(2), seed="by-hand")
            )
            game_id = created.game.game_id
            key = f"ry:{{{game_id}}}:g"
            tokens = {s.seat: s.token for s in created.seats}
            view = await play_grpc(stub, game_id, tokens, moves=2)
            assert sentinels.replicated()
            old = sentinels.master.port
            mover = tokens[view.current_seat]
            legal = await stub.ListLegalMoves(
                pb.ListLegalMovesRequest(game_id=game_id), metadata=bearer(mover)
            )
            request = pb.ApplyMoveRequest(
                game_id=game_id,
                move=pick(legal.moves).move,
                expected_version=view.version,
                request_id="failover-1",
            )

            announcements = AsyncRedis(port=sentinels.sentinel.port).pubsub()
            await announcements.subscribe("+switch-master")
            assert Redis(port=sentinels.sentinel.port).execute_command(
                "SENTINEL", "FAILOVER", sentinels.name
            )
            begun = time.monotonic()
            # The announcement ends the failover. Before it (one sentinel tick
            # after the promotion) a write may still reach the old master, as
            # with any Sentinel client: Redis replicates asynchronously.
            while await announcements.get_message(ignore_subscribe_messages=True) is None:
                assert time.monotonic() - begun < 20, "the failover did not complete"
                await asyncio.sleep(0.02)
            await announcements.aclose()
            await asyncio.sleep(0.05)  # the service's own subscription got it too
            assert _promoted(sentinels, old)

            applied = None
            refused: list[tuple[grpc.StatusCode, str]] = []
            while applied is None:
                assert time.monotonic() - begun < 20, "the service did not follow the failover"
                try:
                    applied = await stub.ApplyMove(request, metadata=bearer(mover))
                except grpc.aio.AioRpcError as exc:  # while it finds the new master
                    refused.append(error_info(exc)[:2])
                    await asyncio.sleep(0.05)
            assert set(refused) <= {(UNAVAILABLE, "STORE_UNAVAILABLE")}, refused
            assert applied.game.version == view.version + 1
            new_master = Redis(port=sentinels.replica.port)
            assert int(new_master.hget(key, "version") or 0) == view.version + 1
            old_master = Redis(port=old)
            if sentinels.role(sentinels.master) == "master":  # not demoted yet
                assert int(old_master.hget(key, "version") or 0) == view.version
            assert await stub.ApplyMove(request, metadata=bearer(mover)) == applied
            final = await play_grpc(stub, game_id, tokens)
            assert final.status == pb.GAME_STATUS_FINISHED
            assert int(new_master.hget(key, "version") or 0) == final.version

    run(go())


def test_a_waiting_watcher_follows_a_failover_by_hand(sentinels: RedisSentinels) -> None:
    """The store's one subscriber connection follows the master: after
    SENTINEL FAILOVER it is on the new master, and a waiter that waited
    through the failover is woken by the next commit there."""
    game_id = "s0000000000000000002"

    async def go() -> None:
        store = RedisStore(sentinels.url)
        channel = store.events_key(game_id)
        try:
            await exercise(store, game_id)  # the game is at version 3
            waiter = asyncio.create_task(store.wait_events(game_id, (3, 1), 30))
            old, new = Redis(port=sentinels.master.port), Redis(port=sentinels.replica.port)
            begun = time.monotonic()
            while old.pubsub_numsub(channel)[0][1] != 1:
                assert time.monotonic() - begun < 5, "the waiter did not subscribe"
                await asyncio.sleep(0.02)
            assert sentinels.replicated()
            assert Redis(port=sentinels.sentinel.port).execute_command(
                "SENTINEL", "FAILOVER", sentinels.name
            )
            # On +switch-master the subscriber moves to the new master.
            while new.pubsub_numsub(channel)[0][1] != 1:
                assert time.monotonic() - begun < 20, "the subscriber did not follow"
                await asyncio.sleep(0.05)
            assert not waiter.done()
            got = await store.commit(game_id, 3, 4, b"state-4", events(4, b"after"), None, None)
            assert got is Commit.OK
            assert await asyncio.wait_for(waiter, 5) == events(4, b"after")
            assert new.hget(f"ry:{{{game_id}}}:g", "version") == b"4"
        finally:
            await store.close()

    run(go())
