"""The Store contract, against both stores: MemoryStore and RedisStore.

The Redis tests run a real ``redis-server`` (tests/redis_harness.py; the
``redis_url`` fixture is one server per xdist worker, flushed per test); the
tests that kill or freeze Redis start a server of their own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import pytest
import redis
from redis.crc import key_slot

from service.store import Commit, GameExistsError, GameRecord, StoredEvent, StoreUnavailableError
from service.store.memory import MemoryStore
from service.store.redis import RedisStore
from tests.redis_harness import RedisServer

T = TypeVar("T")

GAME = "g0123456789abcdef"
OPENING = [StoredEvent(0, 1, b"deal"), StoredEvent(0, 2, b"round"), StoredEvent(1, 1, b"bot")]
RECORD = GameRecord(GAME, 1, b"state-1", b'{"names":["a","b"]}')


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def move(version: int, *payloads: bytes) -> list[StoredEvent]:
    return [StoredEvent(version, i, p) for i, p in enumerate(payloads, 1)]


@pytest.fixture(params=["memory", "redis"])
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


class HandClock:
    """A clock the test moves (the memory store's TTLs age by it)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> HandClock:
    return HandClock()


@pytest.fixture
def make_store(kind: str, request: pytest.FixtureRequest, clock: HandClock) -> Callable[..., Any]:
    """A factory of stores of this kind; Redis ones all share one server.
    The memory store ages by ``clock``."""
    if kind == "memory":
        return lambda **kw: MemoryStore(clock=clock, **kw)
    url = request.getfixturevalue("redis_url")
    return lambda **kw: RedisStore(url, **kw)


@pytest.fixture
def elapse(kind: str, clock: HandClock) -> Callable[[float], Any]:
    """Let ``seconds`` pass for the store: the memory store's clock is moved;
    Redis expires keys by its own clock, so real time passes there (TTLs of
    tenths of a second, checked with margins a loaded machine keeps)."""

    async def wait(seconds: float) -> None:
        if kind == "memory":
            clock.now += seconds
        else:
            await asyncio.sleep(seconds)

    return wait


async def two_stores(make_store: Callable[..., Any], kind: str, **kw: Any) -> tuple[Any, Any]:
    """Two handles on the same data: two RedisStores, or one MemoryStore twice."""
    first = make_store(**kw)
    return first, (first if kind == "memory" else make_store(**kw))


async def close(*stores: Any) -> None:
    for store in {id(s): s for s in stores}.values():
        await store.close()


# --- create, load, commit, recall ------------------------------------------


def test_create_and_load_round_trip(make_store):
    async def go():
        store = make_store()
        assert await store.load(GAME) is None
        assert await store.create(RECORD, OPENING, None, None) is None
        assert await store.load(GAME) == RECORD
        assert await store.read_events(GAME, -1) == OPENING
        # Empty bytes survive the trip.
        other = GameRecord("other", 0, b"", b"")
        assert await store.create(other, [], None, None) is None
        assert await store.load("other") == other
        assert await store.read_events("other", -1) == []
        await store.ping()
        await store.close()

    run(go())


def test_create_twice_with_a_remembered_request_returns_the_first_answer(make_store):
    async def go():
        store = make_store()
        assert await store.create(RECORD, OPENING, "create:r1", b"first") is None
        again = GameRecord(GAME, 5, b"other-state", b"other-meta")
        assert await store.create(again, move(5, b"x"), "create:r1", b"second") == b"first"
        assert await store.load(GAME) == RECORD
        assert await store.read_events(GAME, -1) == OPENING
        assert await store.recall(GAME, "create:r1") == b"first"
        # Another request for an existing game id is a bug of the caller.
        with pytest.raises(GameExistsError, match="exists"):
            await store.create(again, [], "create:r2", b"third")
        with pytest.raises(GameExistsError, match="exists"):
            await store.create(again, [], None, None)
        assert await store.load(GAME) == RECORD
        assert await store.recall(GAME, "create:r2") is None
        await store.close()

    run(go())


def test_commit_bumps_the_version_and_appends_the_events(make_store):
    async def go():
        store = make_store()
        await store.create(RECORD, OPENING, None, None)
        events = move(2, b"play", b"bot-play")
        assert await store.commit(GAME, 1, 2, b"state-2", events, "m:1", b"answer") is Commit.OK
        assert await store.load(GAME) == GameRecord(GAME, 2, b"state-2", RECORD.meta)
        assert await store.read_events(GAME, -1) == OPENING + events
        assert await store.read_events(GAME, 1) == events
        assert await store.recall(GAME, "m:1") == b"answer"
        # No request key, no events: still a commit.
        assert await store.commit(GAME, 2, 3, b"state-3", [], None, None) is Commit.OK
        assert (await store.load(GAME)).version == 3
        assert await store.read_events(GAME, 2) == []
        await store.close()

    run(go())


def test_commit_with_a_stale_version_changes_nothing(make_store):
    async def go():
        store = make_store()
        await store.create(RECORD, OPENING, None, None)
        for stale in (0, 2, 7):
            got = await store.commit(GAME, stale, stale + 1, b"no", move(9, b"no"), "m:x", b"no")
            assert got is Commit.VERSION_MISMATCH
        assert await store.load(GAME) == RECORD
        assert await store.read_events(GAME, -1) == OPENING
        assert await store.recall(GAME, "m:x") is None
        await store.close()

    run(go())


def test_commit_on_a_missing_game_creates_nothing(make_store, kind, request):
    async def go():
        store = make_store()
        got = await store.commit("nope", 0, 1, b"s", move(1, b"e"), "m:1", b"answer")
        assert got is Commit.NOT_FOUND
        assert await store.load("nope") is None
        assert await store.read_events("nope", -1) == []
        assert await store.recall("nope", "m:1") is None
        await store.close()

    run(go())
    if kind == "redis":
        assert redis_keys(request.getfixturevalue("redis_url")) == set()


def test_recall(make_store):
    async def go():
        store = make_store()
        assert await store.recall(GAME, "k") is None  # no game
        await store.create(RECORD, OPENING, "create:k", b"c")
        assert await store.recall(GAME, "k") is None  # no such key
        assert await store.recall(GAME, "create:k") == b"c"
        # A request key without a response remembers nothing.
        assert await store.commit(GAME, 1, 2, b"s2", move(2, b"e"), "m:1", None) is Commit.OK
        assert await store.recall(GAME, "m:1") is None
        await store.close()

    run(go())


# --- the event log -----------------------------------------------------------


def test_read_events_after_each_version(make_store):
    async def go():
        store = make_store()
        await store.create(RECORD, OPENING, None, None)
        log = list(OPENING)
        for version, count in ((2, 3), (3, 1), (4, 0), (5, 2)):
            events = move(version, *(b"v%d-%d" % (version, i) for i in range(count)))
            assert await store.commit(GAME, version - 1, version, b"s", events, None, None) is (
                Commit.OK
            )
            log += events
        for after in range(-2, 7):
            assert await store.read_events(GAME, after) == [e for e in log if e.version > after]
        assert await store.read_events("missing", -1) == []
        await store.close()

    run(go())


def test_wait_events_positions_and_timeout(make_store):
    async def go():
        store = make_store()
        await store.create(RECORD, OPENING, None, None)
        assert await store.wait_events(GAME, (0, 0), 1) == OPENING
        assert await store.wait_events(GAME, (-1, 0), 1) == OPENING
        assert await store.wait_events(GAME, (0, 1), 1) == OPENING[1:]
        assert await store.wait_events(GAME, (1, 0), 1) == OPENING[2:]
        assert await store.wait_events(GAME, (0, 5), 0) == OPENING[2:]  # no wait at all
        for position, game in (((1, 1), GAME), ((2, 0), GAME), ((0, 0), "missing")):
            start = time.monotonic()
            assert await store.wait_events(game, position, 0.3) == []
            assert 0.25 <= time.monotonic() - start < 2
        await store.close()

    run(go())


def test_wait_events_sees_a_commit_made_through_another_store(make_store, kind):
    async def go():
        watcher, writer = await two_stores(make_store, kind)
        await writer.create(RECORD, OPENING, None, None)
        events = move(2, b"play", b"bot")
        start = time.monotonic()
        waiting = asyncio.create_task(watcher.wait_events(GAME, (2, 0), 5))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        assert await writer.commit(GAME, 1, 2, b"s2", events, None, None) is Commit.OK
        assert await waiting == events
        assert time.monotonic() - start < 2
        # And a game created while watched.
        waiting = asyncio.create_task(watcher.wait_events("late", (0, 0), 5))
        await asyncio.sleep(0.1)
        await writer.create(GameRecord("late", 0, b"s", b""), move(0, b"a", b"b"), None, None)
        assert await waiting == move(0, b"a", b"b")
        await close(watcher, writer)

    run(go())


def test_blocking_waits_do_not_starve_other_calls(redis_url):
    async def go():
        store = RedisStore(redis_url, connections=1)
        await store.create(RECORD, OPENING, None, None)
        waiters = [asyncio.create_task(store.wait_events(GAME, (2, 0), 5)) for _ in range(30)]
        await asyncio.sleep(0.2)
        start = time.monotonic()
        for _ in range(10):
            assert await store.load(GAME) == RECORD
        assert await store.commit(GAME, 1, 2, b"s2", move(2, b"e"), None, None) is Commit.OK
        assert time.monotonic() - start < 1
        assert await asyncio.gather(*waiters) == [move(2, b"e")] * 30
        await store.close()

    run(go())


def service_clients(url: str) -> list[str]:
    """The names of the store's connections to the server (CLIENT LIST)."""
    with redis.Redis.from_url(url) as client:
        names = [c.get("name", "") for c in client.client_list()]
    return sorted(n for n in names if n.startswith("railyard"))


def test_waiters_share_one_subscriber_connection(redis_url):
    """300 waiters of 100 games: the store keeps its two shared connections
    and one subscriber, and each commit wakes its own game's waiters with
    its events, promptly (they wait 20 s)."""
    games = [f"w{i:019x}" for i in range(100)]

    async def go():
        store = RedisStore(redis_url)
        for game in games:
            await store.create(GameRecord(game, 1, b"s", b""), OPENING, None, None)
        waiters = {
            (game, k): asyncio.create_task(store.wait_events(game, (2, 0), 20))
            for game in games
            for k in range(3)
        }
        with redis.Redis.from_url(redis_url) as client:
            deadline = time.monotonic() + 10
            while client.pubsub_numsub(store.events_key(games[-1]))[0][1] != 1:
                assert time.monotonic() < deadline, "the waiters did not subscribe"
                await asyncio.sleep(0.02)
        assert service_clients(redis_url) == ["railyard", "railyard", "railyard-watch"]
        begun = time.monotonic()
        for i, game in enumerate(games[:50]):
            assert (
                await store.commit(game, 1, 2, b"s2", move(2, b"%d" % i), None, None) is Commit.OK
            )
        for (game, _), waiter in waiters.items():
            if game in games[:50]:
                assert await waiter == move(2, b"%d" % games.index(game))
            else:
                assert not waiter.done()
        assert time.monotonic() - begun < 3
        assert service_clients(redis_url) == ["railyard", "railyard", "railyard-watch"]
        for waiter in waiters.values():
            waiter.cancel()
        await asyncio.gather(*waiters.values(), return_exceptions=True)
        # The last waiter of a game gone, so is its subscription.
        with redis.Redis.from_url(redis_url) as client:
            deadline = time.monotonic() + 5
            while client.pubsub_numsub(store.events_key(games[-1]))[0][1] != 0:
                assert time.monotonic() < deadline, "still subscribed"
                await asyncio.sleep(0.02)
        await store.close()

    run(go())


def test_the_waiters_of_a_game_share_their_reads(redis_url):
    """20 waiters of one game, woken by one commit, read the stream once
    between them (XREAD calls counted by the server), and each gets it all."""

    async def go():
        store = RedisStore(redis_url)
        await store.create(RECORD, OPENING, None, None)
        waiters = [asyncio.create_task(store.wait_events(GAME, (2, 0), 10)) for _ in range(20)]
        with redis.Redis.from_url(redis_url) as client:
            deadline = time.monotonic() + 5
            while client.pubsub_numsub(store.events_key(GAME))[0][1] != 1:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.1)  # every waiter has checked and waits
            assert not any(w.done() for w in waiters)
            client.config_resetstat()
            assert await store.commit(GAME, 1, 2, b"s2", move(2, b"e"), None, None) is Commit.OK
            assert await asyncio.gather(*waiters) == [move(2, b"e")] * 20
            reads = client.info("commandstats")["cmdstat_xread"]["calls"]
        assert reads == 1
        await store.close()

    run(go())


def test_a_commit_while_the_subscriber_reconnects_is_not_missed(redis_url):
    """The subscriber's connection is killed and a commit lands before it is
    back: the waiter checks the stream once subscribed again, and returns the
    events at once, not at its timeout."""

    async def go():
        store, writer = RedisStore(redis_url), RedisStore(redis_url)
        await writer.create(RECORD, OPENING, None, None)
        waiting = asyncio.create_task(store.wait_events(GAME, (2, 0), 20))
        with redis.Redis.from_url(redis_url) as client:
            deadline = time.monotonic() + 5
            while client.pubsub_numsub(store.events_key(GAME))[0][1] != 1:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.02)
            assert client.client_kill_filter(_type="pubsub") == 1
        begun = time.monotonic()
        assert await writer.commit(GAME, 1, 2, b"s2", move(2, b"e"), None, None) is Commit.OK
        assert await asyncio.wait_for(waiting, 5) == move(2, b"e")
        assert time.monotonic() - begun < 2
        await close(store, writer)

    run(go())


def test_memory_store_wakes_only_the_waiters_of_the_game_that_changed():
    async def go():
        store = MemoryStore()
        other = GameRecord("other", 1, b"s", b"")
        await store.create(RECORD, OPENING, None, None)
        await store.create(other, OPENING, None, None)
        mine = asyncio.create_task(store.wait_events(GAME, (2, 0), 5))
        theirs = asyncio.create_task(store.wait_events("other", (2, 0), 5))
        await asyncio.sleep(0.01)
        (waiting_other,) = store._waiters["other"]
        assert await store.commit(GAME, 1, 2, b"s2", move(2, b"e"), None, None) is Commit.OK
        assert await mine == move(2, b"e")
        assert store._waiters["other"] == {waiting_other}
        assert not waiting_other.done()  # not woken, not even to check again
        theirs.cancel()
        await asyncio.gather(theirs, return_exceptions=True)
        assert store._waiters == {}

    run(go())


# --- TTLs ------------------------------------------------------------------------


def test_a_game_expires(make_store, elapse):
    async def go():
        store = make_store(game_ttl=0.3, request_ttl=0.3)
        await store.create(RECORD, OPENING, "create:k", b"c")
        assert await store.load(GAME) == RECORD
        await elapse(0.45)
        assert await store.load(GAME) is None
        assert await store.read_events(GAME, -1) == []
        assert await store.recall(GAME, "create:k") is None
        assert await store.commit(GAME, 1, 2, b"s", [], None, None) is Commit.NOT_FOUND
        # The id is free again.
        assert await store.create(RECORD, OPENING[:1], "create:k", b"new") is None
        assert await store.read_events(GAME, -1) == OPENING[:1]
        await store.close()

    run(go())


def test_a_commit_refreshes_the_game_ttl(make_store, elapse):
    async def go():
        store = make_store(game_ttl=1.0)
        await store.create(RECORD, OPENING, None, None)
        await elapse(0.6)
        assert await store.commit(GAME, 1, 2, b"s2", move(2, b"e"), None, None) is Commit.OK
        await elapse(0.6)  # 1.2 s after the create, 0.6 s after the commit
        assert (await store.load(GAME)).version == 2
        assert len(await store.read_events(GAME, -1)) == 4
        await elapse(0.6)
        assert await store.load(GAME) is None
        await store.close()

    run(go())


def test_a_response_is_forgotten_after_its_ttl(make_store, elapse):
    async def go():
        store = make_store(game_ttl=30, request_ttl=0.3)
        await store.create(RECORD, OPENING, "create:k", b"c")
        assert await store.commit(GAME, 1, 2, b"s2", [], "m:k", b"m") is Commit.OK
        await elapse(0.45)
        assert await store.recall(GAME, "create:k") is None
        assert await store.recall(GAME, "m:k") is None
        assert (await store.load(GAME)).version == 2
        with pytest.raises(GameExistsError, match="exists"):
            await store.create(RECORD, OPENING, "create:k", b"c")
        await store.close()

    run(go())


def test_redis_ttls_are_set_and_refreshed(redis_url):
    client = redis.Redis.from_url(redis_url)
    g, e = f"ry:{{{GAME}}}:g", f"ry:{{{GAME}}}:e"

    async def go():
        store = RedisStore(redis_url, game_ttl=100, request_ttl=50)
        await store.create(RECORD, OPENING, "create:k", b"c")
        assert 99_000 < client.pttl(g) <= 100_000
        assert 99_000 < client.pttl(e) <= 100_000
        assert 49_000 < client.pttl(f"ry:{{{GAME}}}:r:create:k") <= 50_000
        client.pexpire(g, 5_000)
        client.pexpire(e, 5_000)
        # A refused commit refreshes nothing.
        assert await store.commit(GAME, 0, 1, b"s", [], None, None) is Commit.VERSION_MISMATCH
        assert client.pttl(g) <= 5_000
        assert client.pttl(e) <= 5_000
        assert await store.commit(GAME, 1, 2, b"s2", move(2, b"x"), "m:k", b"m") is Commit.OK
        assert 99_000 < client.pttl(g) <= 100_000
        assert 99_000 < client.pttl(e) <= 100_000
        assert 49_000 < client.pttl(f"ry:{{{GAME}}}:r:m:k") <= 50_000
        await store.close()

    try:
        run(go())
    finally:
        client.close()


# --- keys and cluster slots --------------------------------------------------


def crc16(data: bytes) -> int:
    """CRC16-XMODEM, the hash of Redis Cluster's key slots."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def slot(key: bytes) -> int:
    start = key.find(b"{")
    if start != -1:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1 : end]
    return crc16(key) % 16384


def redis_keys(url: str) -> set[bytes]:
    with redis.Redis.from_url(url) as client:
        return set(client.keys("*"))


def test_slot_function_matches_redis():
    assert slot(b"foo") == 12182 == key_slot(b"foo")
    assert slot(b"{user1000}.following") == slot(b"user1000") == key_slot(b"user1000")
    assert slot(b"foo{}{bar}") == key_slot(b"foo{}{bar}")


def test_every_key_of_a_game_carries_its_tag_and_lands_in_one_slot(redis_url):
    async def go():
        store = RedisStore(redis_url, prefix="rail")
        await store.create(RECORD, OPENING, "create:k", b"c")
        await store.commit(GAME, 1, 2, b"s2", move(2, b"e"), "move:0:{odd}", b"m")
        await store.close()

    run(go())
    keys = redis_keys(redis_url)
    tag = b"{" + GAME.encode() + b"}"
    assert keys == {
        b"rail:" + tag + b":g",
        b"rail:" + tag + b":e",
        b"rail:" + tag + b":r:create:k",
        b"rail:" + tag + b":r:move:0:{odd}",
    }
    assert {slot(k) for k in keys} == {slot(GAME.encode())}
    assert {key_slot(k) for k in keys} == {slot(GAME.encode())}


def test_the_store_runs_on_a_cluster_node():
    """On a cluster-mode node a script whose KEYS span slots fails (CROSSSLOT):
    the store's scripts pass, and CLUSTER KEYSLOT agrees with our slots."""
    with RedisServer("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf") as srv:
        client = redis.Redis.from_url(srv.url)
        try:
            client.execute_command("CLUSTER", "ADDSLOTS", *range(16384))
            deadline = time.monotonic() + 10
            while b"cluster_state:ok" not in client.execute_command("CLUSTER", "INFO"):
                assert time.monotonic() < deadline, "the one-node cluster did not come up"
                time.sleep(0.05)
            with pytest.raises(redis.ResponseError, match="same slot"):
                client.eval("return 1", 2, "{a}x", "{b}x")

            async def go():
                store = RedisStore(srv.url)
                await store.create(RECORD, OPENING, "create:k", b"c")
                assert await store.create(RECORD, [], "create:k", b"x") == b"c"
                got = await store.commit(GAME, 1, 2, b"s2", move(2, b"e"), "m:k", b"m")
                assert got is Commit.OK
                assert await store.recall(GAME, "m:k") == b"m"
                assert await store.read_events(GAME, 1) == move(2, b"e")
                assert await store.wait_events(GAME, (1, 1), 1) == move(2, b"e")
                await store.close()

            run(go())
            keys = client.keys("*")
            assert len(keys) == 4
            for key in keys:
                assert client.execute_command("CLUSTER", "KEYSLOT", key) == slot(key)
                assert slot(key) == slot(GAME.encode())
        finally:
            client.close()


def test_redis_rejects_bad_ids_and_events(redis_url):
    async def go():
        store = RedisStore(redis_url)
        for bad in ("", "a{b", "a}b"):
            with pytest.raises(ValueError, match="game id"):
                await store.load(bad)
        with pytest.raises(ValueError, match="order"):
            await store.create(RECORD, list(reversed(OPENING)), None, None)
        with pytest.raises(ValueError, match="position"):
            await store.create(RECORD, [StoredEvent(1, 0, b"x")], None, None)
        assert await store.load(GAME) is None
        # Events must follow the log: the script checks before writing anything.
        await store.create(RECORD, [*OPENING, StoredEvent(5, 1, b"later")], None, None)
        with pytest.raises(ValueError, match="follow"):
            await store.commit(GAME, 1, 2, b"s2", move(2, b"e"), "m:k", b"m")
        assert await store.load(GAME) == RECORD
        assert len(await store.read_events(GAME, -1)) == 4
        assert await store.recall(GAME, "m:k") is None
        await store.close()

    run(go())


# --- concurrency -----------------------------------------------------------------


def test_fifty_racing_commits_one_wins(make_store, kind):
    async def go():
        first, second = await two_stores(make_store, kind)
        await first.create(RECORD, OPENING, None, None)
        moves = [move(2, b"move-%d" % i, b"bot-%d" % i) for i in range(50)]
        results = await asyncio.gather(
            *(
                (first if i % 2 else second).commit(
                    GAME, 1, 2, b"state-%d" % i, moves[i], f"m:{i}", b"answer-%d" % i
                )
                for i in range(50)
            )
        )
        assert results.count(Commit.OK) == 1
        assert results.count(Commit.VERSION_MISMATCH) == 49
        winner = results.index(Commit.OK)
        assert await second.load(GAME) == GameRecord(GAME, 2, b"state-%d" % winner, RECORD.meta)
        assert await first.read_events(GAME, -1) == OPENING + moves[winner]
        for i in range(50):
            expected = b"answer-%d" % i if i == winner else None
            assert await first.recall(GAME, f"m:{i}") == expected
        await close(first, second)

    run(go())


# --- Redis down, Redis back ------------------------------------------------------


async def all_calls(store: RedisStore, wait: float) -> dict[str, Coroutine[Any, Any, Any]]:
    return {
        "create": store.create(GameRecord("new", 0, b"s", b""), [], "create:n", b"n"),
        "load": store.load(GAME),
        "commit": store.commit(GAME, 1, 2, b"s2", move(2, b"e"), "m:1", b"m"),
        "recall": store.recall(GAME, "create:k"),
        "read_events": store.read_events(GAME, -1),
        "wait_events": store.wait_events(GAME, (9, 0), wait),
        "ping": store.ping(),
    }


async def expect_unavailable(name: str, call: Coroutine[Any, Any, Any], within: float) -> None:
    start = time.monotonic()
    with pytest.raises(StoreUnavailableError, match=r"redis store at redis://127\.0\.0\.1") as info:
        await call
    elapsed = time.monotonic() - start
    assert elapsed < within, f"{name} took {elapsed:.2f} s to fail"
    assert "failed" in str(info.value)


async def works_again(store: RedisStore) -> None:
    await store.ping()
    assert await store.load(GAME) is None  # no persistence: the data is gone
    assert await store.create(RECORD, OPENING, "create:k", b"c") is None
    assert await store.commit(GAME, 1, 2, b"s2", move(2, b"e"), None, None) is Commit.OK
    assert await store.wait_events(GAME, (1, 1), 1) == move(2, b"e")
    assert await store.recall(GAME, "create:k") == b"c"


@pytest.mark.parametrize("how", ["kill", "stop"])
def test_redis_down_fails_fast_then_recovers(how):
    with RedisServer() as srv:

        async def go():
            store = RedisStore(srv.url)
            await store.create(RECORD, OPENING, "create:k", b"c")
            # Its shared connections and its subscriber, a waiter on it.
            watching = asyncio.create_task(store.wait_events(GAME, (5, 0), 10))
            await asyncio.gather(*(store.load(GAME) for _ in range(5)))
            await asyncio.sleep(0.2)
            getattr(srv, how)()
            await expect_unavailable("blocked wait_events", watching, 3)
            for name, call in (await all_calls(store, 10)).items():
                await expect_unavailable(name, call, 3)
            srv.start()
            await works_again(store)
            await store.close()

        run(go())


def test_redis_frozen_times_out_then_recovers():
    with RedisServer() as srv:

        async def go():
            store = RedisStore(srv.url, timeout=1.5)
            await store.create(RECORD, OPENING, "create:k", b"c")
            await asyncio.gather(*(store.load(GAME) for _ in range(5)))
            srv.freeze()
            try:
                calls = await all_calls(store, 0.5)
                await asyncio.gather(
                    *(expect_unavailable(name, call, 3) for name, call in calls.items())
                )
            finally:
                srv.thaw()
            await store.ping()
            assert await store.recall(GAME, "create:k") == b"c"
            await store.close()

        run(go())


def test_redis_harness_restarts_on_the_same_port():
    with RedisServer() as srv:
        port = srv.port
        srv.kill()
        assert not srv.running
        with pytest.raises(ConnectionRefusedError):
            srv.command("PING")
        srv.start()
        assert srv.port == port
        assert srv.command("PING") == b"+PONG"
        assert srv.command("CONFIG", "GET", "save") == b"*2"
        srv.stop()
        assert not srv.running
    assert not srv.running
