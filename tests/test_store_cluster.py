"""The Redis store on a real Redis Cluster: three redis-server masters that
the harness forms on free loopback ports (tests/redis_harness.py).

The store is given one seed node, as an operator would configure it. Games
spread over every node; each call goes to the node owning its game's slot,
through resharding (``MOVED``), a slot in mid-migration (``ASK``) and a node
going down and coming back. The service's own end-to-end tests (full games,
two replicas racing, watchers across instances) then run on the cluster.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from redis.crc import key_slot as redis_py_key_slot
from redis.exceptions import AskError

from service.store import Commit, GameRecord, StoredEvent, StoreUnavailableError
from service.store.redis import RedisStore
from service.store.resp import key_slot
from tests import test_service_chicken_foot as cf
from tests import test_service_e2e as e2e
from tests import test_service_resilience as resilience
from tests.redis_harness import RedisCluster


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def cluster() -> Iterator[RedisCluster]:
    with RedisCluster(masters=3) as formed:
        yield formed


@pytest.fixture
def cluster_url(cluster: RedisCluster) -> str:
    """The cluster's seed node, every node running, serving its first slots, empty."""
    for node in cluster.nodes:
        node.start()
    cluster.wait_ok()
    cluster.flushall()
    return cluster.url


def game_ids(count: int, prefix: str = "c") -> list[str]:
    return [f"{prefix}{i:019x}" for i in range(count)]


def record(game_id: str, version: int = 1) -> GameRecord:
    return GameRecord(game_id, version, f"state-{version}".encode(), b'{"names":["a"]}')


def events(version: int, *payloads: bytes) -> list[StoredEvent]:
    return [StoredEvent(version, i, p) for i, p in enumerate(payloads, 1)]


async def exercise(store: RedisStore, game_id: str) -> None:
    """Every store call once on ``game_id``, created here."""
    assert await store.create(record(game_id), events(1, b"opening"), "create:k", b"c") is None
    assert await store.create(record(game_id), [], "create:k", b"x") == b"c"
    assert await store.load(game_id) == record(game_id)
    got = await store.commit(game_id, 1, 2, b"state-2", events(2, b"a", b"b"), "m:k", b"m")
    assert got is Commit.OK
    assert await store.recall(game_id, "m:k") == b"m"
    assert await store.read_events(game_id, 1) == events(2, b"a", b"b")
    assert await store.wait_events(game_id, (1, 9), 0) == events(2, b"a", b"b")
    # A blocking read, woken by a commit made while it waits.
    waiter = asyncio.create_task(store.wait_events(game_id, (2, 2), 5))
    await asyncio.sleep(0.05)
    got = await store.commit(game_id, 2, 3, b"state-3", events(3, b"c"), None, None)
    assert got is Commit.OK
    assert await asyncio.wait_for(waiter, 5) == events(3, b"c")
    assert await store.commit(game_id, 2, 3, b"late", [], None, None) is Commit.VERSION_MISMATCH


def test_key_slots_are_the_clusters(cluster: RedisCluster) -> None:
    keys = ["", "a", "ry:{0123456789abcdef0123}:g", "x{}y", "{}{a}", "a{b}c{d}", "é{ü}", "{", "}{"]
    keys += [f"ry:{{{gid}}}:r:move:1:req" for gid in game_ids(50)]
    with cluster.client(0) as client:
        for key in keys:
            expected = client.execute_command("CLUSTER", "KEYSLOT", key)
            assert key_slot(key) == expected == redis_py_key_slot(key.encode()), key
            assert key_slot(key.encode()) == expected


def test_games_spread_over_every_node_and_each_call_reaches_its_node(
    cluster: RedisCluster, cluster_url: str
) -> None:
    ids = game_ids(24)

    async def go() -> None:
        store = RedisStore(cluster_url)
        try:
            for game_id in ids:
                await exercise(store, game_id)
            assert store._client.cluster
        finally:
            await store.close()

    run(go())
    owners = {cluster.owner(key_slot(gid)) for gid in ids}
    assert owners == {0, 1, 2}, "the ids should land on every node"
    for game_id in ids:
        slot = key_slot(game_id)
        owner = cluster.owner(slot)
        for i in range(3):
            with cluster.client(i) as client:
                count = client.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)
                if i == owner:
                    assert client.exists(f"ry:{{{game_id}}}:g", f"ry:{{{game_id}}}:e") == 2
            # Its game and stream, and the remembered answers of two requests.
            assert count == (4 if i == owner else 0), (game_id, i, owner)


def test_resharding_a_game_mid_play_is_followed(cluster: RedisCluster, cluster_url: str) -> None:
    """A game's slot moves to another node between two moves (MOVED)."""
    game_id = game_ids(1, "m")[0]
    slot = key_slot(game_id)

    async def go() -> None:
        store = RedisStore(cluster_url)
        try:
            await exercise(store, game_id)
            source = cluster.owner(slot)
            target = (source + 1) % 3
            cluster.migrate(slot, target)
            assert cluster.owner(slot) == target
            # The store still routes to the old owner: MOVED, then the new one.
            assert (await store.load(game_id)) == GameRecord(
                game_id, 3, b"state-3", record(game_id).meta
            )
            got = await store.commit(game_id, 3, 4, b"state-4", events(4, b"d"), None, None)
            assert got is Commit.OK
            assert [e.version for e in await store.read_events(game_id, -1)] == [1, 2, 2, 3, 4]
            # And back again, with a watcher waiting meanwhile: the commit's
            # notification reaches it wherever the slot is, and its read
            # follows MOVED.
            waiter = asyncio.create_task(store.wait_events(game_id, (4, 1), 5))
            await asyncio.sleep(0.05)
            cluster.migrate(slot, source)
            got = await store.commit(game_id, 4, 5, b"state-5", events(5, b"e"), None, None)
            assert got is Commit.OK
            assert await asyncio.wait_for(waiter, 6) == events(5, b"e")
        finally:
            await store.close()

    run(go())


def test_a_game_in_mid_migration_is_served_through_ask(
    cluster: RedisCluster, cluster_url: str
) -> None:
    """While a slot migrates, its moved keys are answered ASK by the old owner;
    a script whose keys the migration splits is refused (TRYAGAIN) until the
    slot has moved, and changes nothing."""
    played, fresh = game_ids(2, "a")
    slot = key_slot(played)

    async def go() -> None:
        store = RedisStore(cluster_url)
        try:
            await exercise(store, played)
            source = cluster.owner(slot)
            target = (source + 2) % 3
            cluster.begin_migration(slot, target)
            try:
                assert cluster.move_keys(slot, source, target) == 4  # game, stream, 2 answers
                with cluster.client(source) as client, pytest.raises(AskError):
                    client.hget(f"ry:{{{played}}}:g", "version")
                loaded = await store.load(played)
                assert loaded is not None
                assert loaded.version == 3
                got = await store.commit(played, 3, 4, b"state-4", events(4, b"d"), None, None)
                assert got is Commit.OK
                assert await store.recall(played, "m:k") == b"m"
                assert [e.version for e in await store.read_events(played, 2)] == [3, 4]
                assert await store.wait_events(played, (3, 1), 1) == events(4, b"d")
                # A new remembered answer is a key the target does not have yet.
                with pytest.raises(StoreUnavailableError, match="TRYAGAIN"):
                    await store.commit(played, 4, 5, b"state-5", events(5, b"e"), "m:2", b"r")
                loaded = await store.load(played)
                assert loaded is not None
                assert loaded.version == 4
            finally:
                cluster.end_migration(slot, target)
            got = await store.commit(played, 4, 5, b"state-5", events(5, b"e"), "m:2", b"r")
            assert got is Commit.OK
            assert await store.recall(played, "m:2") == b"r"
            with cluster.client(target) as client:
                assert client.hget(f"ry:{{{played}}}:g", "version") == b"5"
            # A game created on a slot in mid-migration: refused until it ends.
            slot_fresh = key_slot(fresh)
            source = cluster.owner(slot_fresh)
            cluster.begin_migration(slot_fresh, (source + 1) % 3)
            try:
                with pytest.raises(StoreUnavailableError, match="TRYAGAIN"):
                    await store.create(record(fresh), events(1, b"opening"), None, None)
            finally:
                assert cluster.move_keys(slot_fresh, source, (source + 1) % 3) == 0
                cluster.end_migration(slot_fresh, (source + 1) % 3)
            await exercise(store, fresh)
        finally:
            await store.close()

    run(go())


def test_a_publish_on_any_node_reaches_a_subscriber_on_another(
    cluster: RedisCluster, cluster_url: str
) -> None:
    """What the store's one subscription relies on: a plain PUBLISH, from a
    client or from a Lua script run for a key, reaches the subscribers of
    every node of the cluster."""
    with cluster.client(0) as listener_client:
        listener = listener_client.pubsub()
        listener.subscribe("ry:{p}:e")
        assert listener.get_message(timeout=2)["type"] == "subscribe"
        for node in (1, 2):
            with cluster.client(node) as client:
                client.publish("ry:{p}:e", f"from {node}")
            message = listener.get_message(timeout=2)
            assert message is not None
            assert message["data"] == f"from {node}".encode()
        game = next(g for g in game_ids(30, "p") if cluster.owner(key_slot(g)) == 2)
        with cluster.client(2) as client:
            script = "redis.call('SET', KEYS[1], 1); return redis.call('PUBLISH', ARGV[1], 'lua')"
            client.eval(script, 1, f"ry:{{{game}}}:g", "ry:{p}:e")
        message = listener.get_message(timeout=2)
        assert message is not None
        assert message["data"] == b"lua"
        listener.close()


def subscribers(cluster: RedisCluster, node: int) -> int:
    """The store's subscriber connections to ``node``."""
    with cluster.client(node) as client:
        return sum(1 for c in client.client_list() if c.get("name") == "railyard-watch")


def test_watchers_of_every_node_share_one_subscription(
    cluster: RedisCluster, cluster_url: str
) -> None:
    """Waiters of games on every node: one subscriber connection, on the
    seed, hears the commits of them all; when the seed goes down it moves
    to another node and the waiters of the other nodes' games go on."""
    ids = game_ids(30, "w")
    on = {i: [g for g in ids if cluster.owner(key_slot(g)) == i] for i in range(3)}
    assert all(on.values())

    async def go() -> None:
        store = RedisStore(cluster_url, timeout=1.0, connect_timeout=0.5)
        try:
            for game_id in ids:
                await exercise(store, game_id)
            waiters = {g: asyncio.create_task(store.wait_events(g, (3, 1), 10)) for g in ids}
            deadline = time.monotonic() + 5
            while [subscribers(cluster, i) for i in range(3)] != [1, 0, 0]:
                assert time.monotonic() < deadline, "not one subscriber, on the seed"
                await asyncio.sleep(0.05)
            for game_id in ids:
                got = await store.commit(game_id, 3, 4, b"s4", events(4, b"n"), None, None)
                assert got is Commit.OK
            for game_id, waiter in waiters.items():
                assert await asyncio.wait_for(waiter, 5) == events(4, b"n"), game_id
            # The seed goes down: the subscription moves to another node.
            elsewhere = on[1][0]
            waiter = asyncio.create_task(store.wait_events(elsewhere, (4, 1), 10))
            await asyncio.sleep(0.1)
            cluster.nodes[0].stop()
            got = await store.commit(elsewhere, 4, 5, b"s5", events(5, b"m"), None, None)
            assert got is Commit.OK
            try:
                woken = await asyncio.wait_for(waiter, 8)
            except StoreUnavailableError:
                # It may have asked the seed in the instant it died: a watcher
                # then watches again, and its next subscription is elsewhere.
                woken = await store.wait_events(elsewhere, (4, 1), 5)
            assert woken == events(5, b"m")
            assert subscribers(cluster, 1) + subscribers(cluster, 2) == 1
        finally:
            await store.close()
            cluster.nodes[0].start()
            await asyncio.to_thread(cluster.wait_ok)

    run(go())


def test_a_node_down_fails_its_own_games_only_and_they_come_back(
    cluster: RedisCluster, cluster_url: str
) -> None:
    ids = game_ids(12, "d")
    by_node: dict[int, str] = {}
    for game_id in ids:
        by_node.setdefault(cluster.owner(key_slot(game_id)), game_id)
    assert len(by_node) == 3
    down = 1
    lost, kept = by_node[down], by_node[(down + 1) % 3]

    async def go() -> None:
        store = RedisStore(cluster_url, timeout=1.0, connect_timeout=0.5)
        try:
            for game_id in by_node.values():
                await exercise(store, game_id)
            cluster.nodes[down].stop()  # SIGTERM: its keys are in its AOF
            start = time.monotonic()
            with pytest.raises(StoreUnavailableError, match="redis store"):
                await store.load(lost)
            assert time.monotonic() - start < 3
            with pytest.raises(StoreUnavailableError):
                await store.commit(lost, 3, 4, b"x", events(4, b"x"), None, None)
            # The other nodes' games go on, before and after the cluster has
            # marked the node failed (cluster-require-full-coverage no).
            got = await store.commit(kept, 3, 4, b"s4", events(4, b"k"), None, None)
            assert got is Commit.OK
            await asyncio.to_thread(_wait_marked_failed, cluster, down)
            got = await store.commit(kept, 4, 5, b"s5", events(5, b"k"), None, None)
            assert got is Commit.OK
            assert (await store.load(kept)) == GameRecord(kept, 5, b"s5", record(kept).meta)
            cluster.nodes[down].start()
            await asyncio.to_thread(cluster.wait_ok)
            # Back without a restart of anything on our side, the game intact.
            deadline = time.monotonic() + 10
            while True:
                try:
                    loaded = await store.load(lost)
                    break
                except StoreUnavailableError:
                    assert time.monotonic() < deadline, "the node's games did not come back"
                    await asyncio.sleep(0.1)
            assert loaded == GameRecord(lost, 3, b"state-3", record(lost).meta)
            got = await store.commit(lost, 3, 4, b"s4", events(4, b"x"), None, None)
            assert got is Commit.OK
        finally:
            await store.close()

    run(go())


def _wait_marked_failed(cluster: RedisCluster, down: int, timeout: float = 15.0) -> None:
    port = str(cluster.nodes[down].port).encode()
    deadline = time.monotonic() + timeout
    with cluster.client((down + 1) % 3) as client:
        while True:
            nodes = client.execute_command("CLUSTER", "NODES")
            line = next(n for n in nodes.splitlines() if b":" + port + b"@" in n)
            if b"fail" in line.split()[2] and b"fail?" not in line.split()[2]:
                return
            assert time.monotonic() < deadline, f"node {down} never marked failed: {line!r}"
            time.sleep(0.1)


def test_the_seed_node_down_the_store_still_answers(
    cluster: RedisCluster, cluster_url: str
) -> None:
    """The node named in the URL goes down: readiness (PING) is answered by
    another node, and the games on the other nodes go on."""
    ids = game_ids(12, "s")
    elsewhere = next(g for g in ids if cluster.owner(key_slot(g)) != 0)
    on_seed = next(g for g in ids if cluster.owner(key_slot(g)) == 0)

    async def go() -> None:
        store = RedisStore(cluster_url, timeout=1.0, connect_timeout=0.5)
        try:
            await exercise(store, elsewhere)
            await exercise(store, on_seed)
            cluster.nodes[0].stop()
            await store.ping()
            got = await store.commit(elsewhere, 3, 4, b"s4", events(4, b"x"), None, None)
            assert got is Commit.OK
            with pytest.raises(StoreUnavailableError):
                await store.load(on_seed)
            cluster.nodes[0].start()
            await asyncio.to_thread(cluster.wait_ok)
            deadline = time.monotonic() + 10
            while True:
                try:
                    assert (await store.load(on_seed)) is not None
                    break
                except StoreUnavailableError:
                    assert time.monotonic() < deadline, "the seed's games did not come back"
                    await asyncio.sleep(0.1)
        finally:
            await store.close()

    run(go())


# --- the service on the cluster: the end-to-end tests, unchanged -------------


def test_full_games_through_both_transports_on_a_cluster(cluster_url: str) -> None:
    e2e.test_full_game(cluster_url, "grpc", "pagat", {"rounds": 2})
    e2e.test_game_moves_between_instances_and_transports(cluster_url, "http-then-grpc", "standard")
    # A classic game's state and events in the cluster too.
    e2e.test_game_moves_between_instances_and_transports(cluster_url, "grpc-then-http", "bergen")


def test_chicken_foot_on_a_cluster(cluster_url: str) -> None:
    # CL-CF-1's lines and feet in the cluster's state and events too.
    cf.test_chicken_foot_crosses_replicas_and_transports(
        cluster_url, "grpc-then-http", {"preset": "chicken_foot_game", "rounds": 3}
    )


def test_replicas_racing_on_a_cluster_one_winner(cluster_url: str) -> None:
    e2e.test_racing_moves_one_version_one_winner(cluster_url)
    e2e.test_retries_with_one_request_id_apply_once(cluster_url)


def test_watchers_across_instances_on_a_cluster(cluster_url: str) -> None:
    resilience.test_watchers_on_b_see_every_move_applied_through_a(cluster_url)
    resilience.test_reconnecting_watchers_resume_exactly_after_the_version(cluster_url)
