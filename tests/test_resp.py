"""The lean Redis client of the store (service/store/resp.py), against a real
redis-server: encoding, replies in order under concurrency, error replies,
scripts surviving SCRIPT FLUSH, authentication, and failing fast (then
recovering) when the server dies or freezes."""

from __future__ import annotations

import asyncio
import time

import pytest

from service.store.resp import (
    Address,
    ReplyError,
    RespClient,
    Script,
    _redirection,
    _split,
    encode,
)
from tests.redis_harness import RedisServer


def run(coro):
    return asyncio.run(coro)


def test_encode_is_a_resp_array_of_bulk_strings():
    assert encode(("SET", b"k\r\n", 12)) == b"*3\r\n$3\r\nSET\r\n$3\r\nk\r\n\r\n$2\r\n12\r\n"
    assert encode(("ECHO", "é")) == b"*2\r\n$4\r\nECHO\r\n$2\r\n\xc3\xa9\r\n"
    with pytest.raises(TypeError, match="float"):
        encode(("SET", "k", 1.5))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bool"):
        encode(("SET", "k", True))


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis://localhost", Address("localhost", 6379, None, False, None, None, 0)),
        ("redis://h:7000/3", Address("h", 7000, None, False, None, None, 3)),
        ("rediss://u:p%40ss@h:1/0", Address("h", 1, None, True, "u", "p@ss", 0)),
        ("redis://:secret@h", Address("h", 6379, None, False, None, "secret", 0)),
        ("unix:///tmp/r.sock?db=2", Address(None, 6379, "/tmp/r.sock", False, None, None, 2)),
    ],
)
def test_addresses_from_urls(url, expected):
    assert Address.parse(url) == expected


@pytest.mark.parametrize("url", ["http://h", "redis://h/x"])
def test_bad_urls_are_refused(url):
    with pytest.raises(ValueError, match=r"scheme|database"):
        Address.parse(url)


def test_replies_come_back_to_their_callers_in_order(redis_url):
    async def go():
        client = RespClient(redis_url, connections=2)
        await client.call("SET", "n", 0)
        # Many calls in flight at once on two shared connections: each caller
        # gets the reply to its own command.
        replies = await asyncio.gather(*(client.call("INCR", "n") for _ in range(500)))
        assert sorted(replies) == list(range(1, 501))
        echoes = await asyncio.gather(*(client.call("ECHO", f"m{i}") for i in range(500)))
        assert echoes == [f"m{i}".encode() for i in range(500)]
        big = bytes(range(256)) * 4000
        assert await client.call("SET", "big", big) == b"OK"
        assert await client.call("GET", "big") == big
        assert await client.pipeline(("EXISTS", "big"), ("GET", "none")) == [1, None]
        await client.close()

    run(go())


def test_error_replies_raise_and_leave_the_connection_usable(redis_url):
    async def go():
        client = RespClient(redis_url, connections=1)
        await client.call("SET", "s", "text")
        with pytest.raises(ReplyError, match="WRONGTYPE"):
            await client.call("LPUSH", "s", "x")
        with pytest.raises(ReplyError, match="unknown command"):
            await client.call("NOSUCHCOMMAND")
        assert await client.call("GET", "s") == b"text"
        await client.close()

    run(go())


def test_a_cancelled_call_does_not_shift_the_replies(redis_url):
    async def go():
        client = RespClient(redis_url, connections=1)
        slow = asyncio.create_task(client.call("BLPOP", "nothing", 0.3))
        after = asyncio.create_task(client.call("ECHO", "after"))
        await asyncio.sleep(0.05)
        slow.cancel()
        assert await after == b"after"
        assert await client.call("ECHO", "next") == b"next"
        await client.close()

    run(go())


def test_scripts_are_reloaded_after_a_flush(redis_url):
    async def go():
        client = RespClient(redis_url)
        script = Script(client, "return {KEYS[1], ARGV[1]}")
        assert await script(["k"], [b"v"]) == [b"k", b"v"]
        await client.call("SCRIPT", "FLUSH")
        assert await script(["k2"], [7]) == [b"k2", b"7"]
        assert await client.call("SCRIPT", "EXISTS", script.sha) == [1]
        await client.close()

    run(go())


def test_password_and_database_from_the_url():
    with RedisServer() as srv:
        port = srv.port

        async def go():
            admin = RespClient(srv.url)
            await admin.call("CONFIG", "SET", "requirepass", "s3cret")
            await admin.close()
            client = RespClient(f"redis://:s3cret@127.0.0.1:{port}/2")
            await client.call("SET", "where", "db2")
            assert await client.call("CLIENT", "GETNAME") == b"railyard"
            # One connection: SELECT below changes only the connection it runs on.
            other = RespClient(f"redis://default:s3cret@127.0.0.1:{port}/0", connections=1)
            assert await other.call("GET", "where") is None
            await other.call("SELECT", 2)
            assert await other.call("GET", "where") == b"db2"
            await client.close()
            await other.close()
            wrong = RespClient(f"redis://:nope@127.0.0.1:{port}")
            with pytest.raises(ReplyError, match=r"WRONGPASS|invalid password"):
                await wrong.call("PING")
            await wrong.close()

        run(go())


def test_dead_server_fails_fast_and_the_client_recovers():
    with RedisServer() as srv:

        async def go():
            client = RespClient(srv.url, connect_timeout=0.5, timeout=1.0)
            assert await client.call("PING") == b"PONG"
            srv.kill()
            for _ in range(3):
                start = time.monotonic()
                with pytest.raises(ConnectionError):
                    await client.call("PING")
                assert time.monotonic() - start < 1.5
            srv.start()
            deadline = time.monotonic() + 5
            while True:
                try:
                    assert await client.call("PING") == b"PONG"
                    break
                except OSError:
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.05)
            await client.close()

        run(go())


def test_frozen_server_times_out_every_waiting_call():
    with RedisServer() as srv:

        async def go():
            client = RespClient(srv.url, timeout=0.5)
            assert await client.call("PING") == b"PONG"
            srv.freeze()
            try:
                start = time.monotonic()
                results = await asyncio.gather(
                    *(client.call("PING") for _ in range(20)), return_exceptions=True
                )
                assert all(isinstance(r, TimeoutError) for r in results), results
                assert time.monotonic() - start < 1.5
            finally:
                srv.thaw()
            assert await client.call("PING") == b"PONG"
            await client.close()

        run(go())


def test_split_cuts_a_pipeline_back_into_its_commands():
    """ASK makes the client send ASKING before each command of a pipeline."""
    commands = [("SET", b"k\r\n$3\r\n", 12), ("GET", ""), ("EVAL", "x" * 1000, 0), ("PING",)]
    payload = b"".join(encode(c) for c in commands)
    assert _split(payload, len(commands)) == [encode(c) for c in commands]
    assert _split(encode(commands[0]), 1) == [encode(commands[0])]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("MOVED 3999 127.0.0.1:6381", ("MOVED", 3999, "127.0.0.1", 6381)),
        ("ASK 12 ::1:7000", ("ASK", 12, "::1", 7000)),
        ("MOVED 7 :7001", ("MOVED", 7, "", 7001)),
        ("TRYAGAIN Multiple keys request during rehashing of slot", ("TRYAGAIN", -1, "", 0)),
        ("MOVED nonsense", None),
        ("ERR MOVED 1 h:1", None),
        ("NOSCRIPT No matching script", None),
    ],
)
def test_cluster_redirections_are_read_from_error_replies(reply, expected):
    assert _redirection(ReplyError(reply)) == expected
    assert _redirection(reply) is None  # only error replies redirect
