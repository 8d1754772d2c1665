"""The process's one subscriber connection (service/store/pubsub.py), as a
library, against a real redis-server: refcounted SUBSCRIBE / UNSUBSCRIBE,
a message waking only its channel's holders, thousands of channels on one
connection, a killed and restarted server (holders woken, ``ready`` failing
fast while it is down, every channel subscribed again once it is back), a
frozen server, and closing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis

from service.store.pubsub import Subscriber
from service.store.resp import Address
from tests.redis_harness import RedisServer


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def at(url: str) -> Callable[[], Awaitable[list[Address]]]:
    async def locate() -> list[Address]:
        return [Address.parse(url)]

    return locate


def numsub(client: redis.Redis, *channels: str) -> list[int]:
    """How many subscribers the server counts on each channel."""
    return [count for _name, count in client.pubsub_numsub(*channels)]


def watch_clients(client: redis.Redis) -> list[dict[str, Any]]:
    return [c for c in client.client_list() if c.get("name") == "railyard-watch"]


async def until(condition: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)


def test_refcounted_subscribe_and_unsubscribe(redis_url: str) -> None:
    """The first holder of a channel subscribes, the last one to let go
    unsubscribes (here at once: no linger); the channels of every holder
    share one connection."""
    server = redis.Redis.from_url(redis_url)

    async def go() -> None:
        subscriber = Subscriber(at(redis_url), linger=0)
        first = subscriber.subscribe("ry:{a}:e")
        second = subscriber.subscribe("ry:{a}:e")
        other = subscriber.subscribe("ry:{b}:e")
        await asyncio.gather(first.ready(2), second.ready(2), other.ready(2))
        assert numsub(server, "ry:{a}:e", "ry:{b}:e") == [1, 1]
        (client,) = watch_clients(server)
        assert int(client["sub"]) == 2
        first.close()
        await asyncio.sleep(0.1)
        assert numsub(server, "ry:{a}:e") == [1]  # the second one still holds it
        assert second.subscribed
        second.close()
        await until(lambda: numsub(server, "ry:{a}:e") == [0], "not unsubscribed")
        assert subscriber.channels == 1
        with other:
            pass
        await until(lambda: numsub(server, "ry:{b}:e") == [0], "not unsubscribed")
        # Held again after the last one let go: subscribed again.
        again = subscriber.subscribe("ry:{a}:e")
        await again.ready(2)
        assert numsub(server, "ry:{a}:e") == [1]
        assert subscriber.connections == 1
        assert len(watch_clients(server)) == 1
        await subscriber.close()

    run(go())


def test_a_message_wakes_the_holders_of_its_channel_only(redis_url: str) -> None:
    server = redis.Redis.from_url(redis_url)

    async def go() -> None:
        subscriber = Subscriber(at(redis_url))
        mine = [subscriber.subscribe("ry:{a}:e") for _ in range(3)]
        theirs = subscriber.subscribe("ry:{b}:e")
        for held in (*mine, theirs):
            await held.ready(2)
        waits = [asyncio.create_task(held.wait(5)) for held in mine]
        other = asyncio.create_task(theirs.wait(0.5))
        await asyncio.sleep(0.05)
        assert server.publish("ry:{a}:e", "7") == 1  # one connection heard it
        begun = time.monotonic()
        assert await asyncio.gather(*waits) == [True, True, True]
        assert time.monotonic() - begun < 1
        assert await other is False
        # A message between ready() and wait() is kept: wait returns at once.
        await mine[0].ready(2)
        server.publish("ry:{a}:e", "8")
        await until(lambda: mine[0]._woken, "the message did not arrive")
        assert await mine[0].wait(5) is True
        # ready() forgets what came before it.
        await mine[0].ready(2)
        assert await mine[0].wait(0.2) is False
        await subscriber.close()

    run(go())


def test_churn_on_one_channel_ends_subscribed(redis_url: str) -> None:
    """Holders coming and going faster than the server answers: every
    SUBSCRIBE / UNSUBSCRIBE is counted until confirmed, so the channel is
    subscribed exactly when a holder is there."""
    server = redis.Redis.from_url(redis_url)

    async def go() -> None:
        subscriber = Subscriber(at(redis_url), linger=0)
        keep = subscriber.subscribe("warm")
        await keep.ready(2)  # connected: what follows goes out as commands
        for _ in range(50):
            subscriber.subscribe("ry:{c}:e").close()
        held = subscriber.subscribe("ry:{c}:e")
        await held.ready(2)
        assert numsub(server, "ry:{c}:e") == [1]
        waiting = asyncio.create_task(held.wait(5))
        await asyncio.sleep(0.05)
        server.publish("ry:{c}:e", "1")
        assert await waiting is True
        held.close()
        await until(lambda: numsub(server, "ry:{c}:e") == [0], "not unsubscribed")
        await subscriber.close()

    run(go())


def test_a_channel_let_go_of_lingers_before_it_is_unsubscribed(redis_url: str) -> None:
    """A watcher lets go of its channel between two waits: taken again
    within ``linger`` seconds, it is still subscribed (no round trip); left
    alone, it is unsubscribed after that."""
    server = redis.Redis.from_url(redis_url)

    async def go() -> None:
        subscriber = Subscriber(at(redis_url), linger=0.5)
        first = subscriber.subscribe("ry:{l}:e")
        await first.ready(2)
        first.close()
        again = subscriber.subscribe("ry:{l}:e")
        assert again.subscribed  # ready() has nothing to wait for
        waiting = asyncio.create_task(again.wait(5))
        await asyncio.sleep(0.7)  # past the linger: held, so still subscribed
        assert numsub(server, "ry:{l}:e") == [1]
        server.publish("ry:{l}:e", "1")
        assert await waiting is True
        again.close()
        begun = time.monotonic()
        await until(lambda: numsub(server, "ry:{l}:e") == [0], "never unsubscribed")
        assert time.monotonic() - begun >= 0.3
        assert subscriber.channels == 0
        await subscriber.close()

    run(go())


def test_thousands_of_channels_share_one_connection(redis_url: str) -> None:
    server = redis.Redis.from_url(redis_url)
    names = [f"ry:{{g{i:05d}}}:e" for i in range(2500)]

    async def go() -> None:
        subscriber = Subscriber(at(redis_url))
        held = [subscriber.subscribe(name) for name in names]
        await asyncio.gather(*(h.ready(5) for h in held))
        (client,) = watch_clients(server)
        assert int(client["sub"]) == len(names)
        waits = [asyncio.create_task(h.wait(5)) for h in held[::10]]
        await asyncio.sleep(0.05)
        pipe = server.pipeline(transaction=False)
        for name in names[::10]:
            pipe.publish(name, "1")
        assert pipe.execute() == [1] * len(waits)
        assert all(await asyncio.gather(*waits))
        assert subscriber.connections == 1
        await subscriber.close()
        await until(lambda: not watch_clients(server), "the connection stays open")

    run(go())


def test_killed_server_fails_fast_then_every_channel_is_subscribed_again() -> None:
    with RedisServer() as srv:
        server = redis.Redis(port=srv.port)

        async def go() -> None:
            subscriber = Subscriber(at(srv.url), connect_timeout=0.5, timeout=1.0)
            held = [subscriber.subscribe(f"ry:{{k{i}}}:e") for i in range(20)]
            await asyncio.gather(*(h.ready(2) for h in held))
            waits = [asyncio.create_task(h.wait(10)) for h in held]
            await asyncio.sleep(0.05)
            srv.kill()
            begun = time.monotonic()
            # The loss wakes every holder: each checks again after ready().
            assert all(await asyncio.gather(*waits))
            assert time.monotonic() - begun < 1
            assert not any(h.subscribed for h in held)
            for h in held[:3]:
                with pytest.raises(ConnectionError, match="no subscription to Redis"):
                    await h.ready(2)
            assert time.monotonic() - begun < 2, "ready() should fail fast while it is down"
            srv.start()
            await asyncio.gather(*(h.ready(2) for h in held))
            assert numsub(server, *(f"ry:{{k{i}}}:e" for i in range(20))) == [1] * 20
            waiting = asyncio.create_task(held[5].wait(5))
            await asyncio.sleep(0.05)
            server.publish("ry:{k5}:e", "1")
            assert await waiting is True
            assert subscriber.connections == 2
            await subscriber.close()

        run(go())


def test_a_dropped_connection_is_made_again_without_failing_anyone(redis_url: str) -> None:
    """The server closes the subscriber's connection (CLIENT KILL, a proxy, a
    master switch via reconnect()): holders wake, and ready() waits for the
    resubscription instead of failing."""
    server = redis.Redis.from_url(redis_url)

    async def go() -> None:
        subscriber = Subscriber(at(redis_url))
        held = subscriber.subscribe("ry:{d}:e")
        await held.ready(2)
        waiting = asyncio.create_task(held.wait(10))
        await asyncio.sleep(0.05)
        assert server.client_kill_filter(_type="pubsub") == 1
        assert await waiting is True
        await held.ready(2)
        subscriber.reconnect()
        await asyncio.sleep(0)
        await held.ready(2)
        assert subscriber.connections == 3
        assert numsub(server, "ry:{d}:e") == [1]
        assert len(watch_clients(server)) == 1
        await subscriber.close()

    run(go())


def test_frozen_server_times_out_then_the_subscription_comes_back() -> None:
    with RedisServer() as srv:
        server = redis.Redis(port=srv.port)

        async def go() -> None:
            subscriber = Subscriber(at(srv.url), timeout=0.5, ping_after=0.3)
            held = subscriber.subscribe("ry:{f}:e")
            await held.ready(2)
            srv.freeze()
            try:
                begun = time.monotonic()
                # Quiet, then a PING unanswered: the connection is dropped.
                assert await held.wait(5) is True
                assert time.monotonic() - begun < 2
                late = subscriber.subscribe("ry:{g}:e")
                with pytest.raises((ConnectionError, TimeoutError)):
                    await late.ready(1)
                assert time.monotonic() - begun < 3
            finally:
                srv.thaw()
            await asyncio.gather(held.ready(3), late.ready(3))
            assert numsub(server, "ry:{f}:e", "ry:{g}:e") == [1, 1]
            await subscriber.close()

        run(go())


def test_closed_subscriber_fails_its_holders(redis_url: str) -> None:
    async def go() -> None:
        subscriber = Subscriber(at(redis_url))
        held = subscriber.subscribe("ry:{h}:e")
        await held.ready(2)
        waiting = asyncio.create_task(held.wait(10))
        await asyncio.sleep(0.05)
        await subscriber.close()
        assert await waiting is True
        with pytest.raises(ConnectionError, match="closed"):
            await held.ready(1)
        with pytest.raises(ConnectionError, match="closed"):
            subscriber.subscribe("ry:{i}:e")

    run(go())


def test_nowhere_to_connect_fails_ready_at_once() -> None:
    async def nowhere() -> list[Address]:
        raise ConnectionError("no live master named 'x'")

    async def go() -> None:
        subscriber = Subscriber(nowhere)
        held = subscriber.subscribe("ry:{j}:e")
        begun = time.monotonic()
        with pytest.raises(ConnectionError, match="no live master"):
            await held.ready(5)
        assert time.monotonic() - begun < 1
        await subscriber.close()

    run(go())
