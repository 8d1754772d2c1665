"""The server's limits, against real ``railyard serve`` processes (docs/operations.md "Limits").

Each test starts the service with small limits through the environment and
shows, with raw sockets or real clients, that a slow, silent, oversized or
surplus client is refused or closed in time, and that a normal client keeps
playing meanwhile:

* HTTP: slow heads (silent, partial, trickled) closed at the header timeout,
  slow bodies at the body timeout, idle keep-alive connections at the idle
  timeout; heads over the size or field-count limit refused 431 without the
  process's memory growing by their size; connections over the cap closed at
  once, and service back when they go.
* gRPC: each channel argument in effect: a silent TCP connection closed at
  the handshake timeout, oversized metadata and messages refused, idle
  connections sent GOAWAY, connections over the cap closed.
* Start-up: the descriptor limit raised to the hard one, and a start refused
  when the caps do not fit. The accept() failure log: N failures, one line.

Bounds leave room for a loaded 2-core machine: a connection must close
within its timeout + 3 s (and not before the timeout: the deadline closed it).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

from railyard_api import game_service_pb2 as pb
from railyard_api import game_service_pb2_grpc as pb_grpc
from service.ops.serve import (
    ACCEPT_FAILED,
    GRPC_AIO_LOGGER,
    OWN_DESCRIPTORS,
    AcceptFailureLog,
    ClientGoneLog,
)
from tests.service_helpers import run
from tests.test_service_resilience import RAILYARD, Serve, auth, free_port, serve

#: Seconds a connection may outlive its deadline on a loaded machine.
SLACK = 3.0
#: A person against a greedy bot: every move of the person is followed by
#: the bot's, in the same request.
GAME = {"players": [{"displayName": "A"}, {"bot": "BOT_LEVEL_GREEDY"}]}


# ------------------------------------------------------------------ helpers


async def keep_playing(client: httpx.AsyncClient, until: asyncio.Event) -> int:
    """Play games through the HTTP API (create, legal moves, moves) until
    ``until`` is set; every call must succeed. The moves played."""
    played = 0
    while True:
        created = await client.post("/v1/games", json=GAME)
        assert created.status_code == 200, created.text
        body = created.json()
        game_id = body["game"]["gameId"]
        token = next(s["token"] for s in body["seats"] if s.get("seat", 0) == 0)
        while True:
            legal = await client.get(f"/v1/games/{game_id}/legal-moves", headers=auth(token))
            assert legal.status_code == 200, legal.text
            moves = legal.json()
            if not moves.get("moves"):
                break  # the game is over
            applied = await client.post(
                f"/v1/games/{game_id}/moves",
                json={
                    "move": moves["moves"][0]["move"],
                    "expectedVersion": moves.get("version", "0"),
                },
                headers=auth(token),
            )
            assert applied.status_code == 200, applied.text
            played += 1
            if until.is_set():
                return played
            if applied.json()["game"]["status"] == "GAME_STATUS_FINISHED":
                break


async def read_to_close(reader: asyncio.StreamReader, within: float) -> bytes:
    """Everything the server sends until it closes the connection (a reset
    counts as closed); fails when it is still open after ``within`` s."""
    data = b""
    deadline = time.monotonic() + within
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"still open after {within} s; got {data[:200]!r}")
        try:
            chunk = await asyncio.wait_for(reader.read(65536), left)
        except TimeoutError:
            continue  # the deadline check above fails it
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def answer(data: bytes) -> tuple[int, dict[str, Any]]:
    """The status and JSON body of one HTTP/1.1 answer."""
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body)


def assert_status_body(data: bytes, status: int, reason: str, **metadata: str) -> None:
    """``data`` is one answer: ``status`` with a Status body of one ErrorInfo."""
    got, body = answer(data)
    assert got == status, data[:300]
    (info,) = body["details"]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert (info["reason"], info["metadata"]) == (reason, metadata), body


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def log_lines(server: Serve, text: str) -> list[str]:
    return [line for line in server.log().splitlines() if text in line]


# ------------------------------------------------------------------ HTTP: slow clients


async def slow_client(port: int, first: bytes, drip: bytes, wait: float) -> tuple[bytes, float]:
    """A slow client: connect, send ``first``, then ``drip`` one byte every
    0.2 s, and read until the server closes (up to ``wait`` s). What came
    back, and the seconds from the connection's start to its close."""
    opened = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def dribble() -> None:
        with contextlib.suppress(OSError):
            for byte in drip:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.2)

    writer.write(first)
    dribbling = asyncio.create_task(dribble())
    try:
        data = await read_to_close(reader, wait)
    finally:
        dribbling.cancel()
        writer.close()
    return data, time.monotonic() - opened


def test_slow_heads_are_closed_at_the_header_timeout_while_a_game_goes_on(
    tmp_path: Path, redis_url: str
) -> None:
    """RAILYARD_HEADER_TIMEOUT=1: connections that send nothing, half a head,
    or a head one byte at a time are all closed about 1 s after they opened
    (408 with a Status body when they sent something), while a client plays
    through the API without a failure."""
    timeout = 1.0
    with serve(tmp_path, redis_url, "slow-heads", RAILYARD_HEADER_TIMEOUT=str(timeout)) as server:

        async def slow(send: bytes, trickle: bool) -> tuple[bytes, float]:
            drip = b"X-Slow: " + b"a" * 1000 if trickle else b""
            return await slow_client(server.http_port, send, drip, timeout + SLACK)

        async def go() -> None:
            partial = b"GET /v1/rulesets HTTP/1.1\r\nHost: railyard\r\n"
            done = asyncio.Event()
            async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as client:
                playing = asyncio.create_task(keep_playing(client, done))
                kinds = [(b"", False)] * 20 + [(partial, False)] * 20 + [(partial, True)] * 10
                results = await asyncio.gather(*(slow(s, t) for s, t in kinds))
                done.set()
                assert await playing >= 1
            for (sent, _), (data, took) in zip(kinds, results, strict=True):
                assert timeout * 0.9 <= took <= timeout + SLACK, took
                if sent:
                    assert_status_body(data, 408, "REQUEST_TIMEOUT", field="headers")
                else:
                    assert data == b""  # nothing asked, nothing answered

        run(go())
    # A flood of refusals is a line or two in the log, not one each.
    assert 1 <= len(log_lines(server, "HTTP request too slow")) <= 2, server.log()


def test_slow_bodies_and_idle_connections_are_closed_in_time(
    tmp_path: Path, redis_url: str
) -> None:
    """RAILYARD_BODY_TIMEOUT=1: a body stalled or trickled after a complete
    head, on CreateGame and ApplyMove, is closed about 1 s after its
    head with a 408 (field body), without a traceback in the log, while a
    game goes on. RAILYARD_IDLE_TIMEOUT=1: a keep-alive connection with no
    next request is closed after about 1 s (the header timeout is 10 s)."""
    timeout = 1.0
    env = {"RAILYARD_BODY_TIMEOUT": str(timeout), "RAILYARD_IDLE_TIMEOUT": "1"}
    with serve(tmp_path, redis_url, "slow-bodies", **env) as server:

        async def slow_body(path: str, trickle: bool) -> tuple[bytes, float]:
            head = (
                f"POST {path} HTTP/1.1\r\nHost: railyard\r\nContent-Type: application/json\r\n"
                "Authorization: Bearer nobody\r\nContent-Length: 1000\r\n\r\n"
            )
            drip = b" " * 1000 if trickle else b""
            return await slow_client(
                server.http_port, head.encode() + b'{"players": ', drip, timeout + SLACK
            )

        async def idle() -> float:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.http_port)
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: railyard\r\n\r\n")
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            await asyncio.wait_for(reader.readexactly(length), 10)
            answered = time.monotonic()
            try:
                assert await read_to_close(reader, 1 + SLACK) == b""
            finally:
                writer.close()
            return time.monotonic() - answered

        async def go() -> None:
            done = asyncio.Event()
            async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as client:
                playing = asyncio.create_task(keep_playing(client, done))
                paths = ["/v1/games", "/v1/games/some-game/moves"]
                kinds = [(p, t) for p in paths for t in (False, True) for _ in range(10)]
                results, idled = await asyncio.gather(
                    asyncio.gather(*(slow_body(p, t) for p, t in kinds)), idle()
                )
                done.set()
                assert await playing >= 1
            for data, took in results:
                assert timeout * 0.9 <= took <= timeout + SLACK, took
                assert_status_body(data, 408, "REQUEST_TIMEOUT", field="body")
            assert 0.9 <= idled <= 1 + SLACK, idled

        run(go())
    assert "Traceback" not in server.log(), server.log()


# ------------------------------------------------------------------ HTTP: large heads


def _request(sock: socket.socket, head: bytes) -> bytes:
    """Send ``head`` (as much as the server takes) and read its answer to the close."""
    with contextlib.suppress(OSError):  # the server may stop reading before the end
        sock.sendall(head)
    sock.settimeout(10)
    data = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            data += chunk
    return data


def test_heads_over_the_limits_are_refused_431_unbuffered(tmp_path: Path, redis_url: str) -> None:
    """Default limits (16 KiB, 100 fields): a 1 MB header and 101 header
    fields are answered 431 with a Status body (HEADERS_TOO_LARGE, field
    headers); a 32 MB header leaves the process's memory as it was (httptools
    alone buffered it all); heads just under the limits are served."""
    with serve(tmp_path, redis_url, "large-heads") as server:

        def send(head: bytes) -> bytes:
            with socket.create_connection(("127.0.0.1", server.http_port)) as sock:
                return _request(sock, head)

        start = b"GET /healthz HTTP/1.1\r\nHost: railyard\r\n"
        fits = send(start + b"X-Big: " + b"a" * 15_000 + b"\r\nConnection: close\r\n\r\n")
        assert answer(fits)[0] == 200
        many = b"".join(b"X-F%d: v\r\n" % i for i in range(98))  # with Host, 99 fields
        assert answer(send(start + many + b"Connection: close\r\n\r\n"))[0] == 200  # 100

        big = send(start + b"X-Big: " + b"a" * 1_000_000 + b"\r\n\r\n")
        assert_status_body(big, 431, "HEADERS_TOO_LARGE", field="headers")
        assert "larger than 16384 bytes" in answer(big)[1]["message"]
        too_many = send(start + many + b"X-One: more\r\nX-Two: more\r\n\r\n")  # 101
        assert_status_body(too_many, 431, "HEADERS_TOO_LARGE", field="headers")
        assert "more than 100 header fields" in answer(too_many)[1]["message"]

        before = rss_bytes(server.proc.pid)
        huge = 32 << 20
        refused = send(start + b"X-Huge: " + b"a" * huge + b"\r\n\r\n")
        assert answer(refused)[0] == 431
        grown = rss_bytes(server.proc.pid) - before
        assert grown < huge // 4, f"RSS grew by {grown} bytes"
        assert httpx.get(f"{server.base_url}/healthz", timeout=10).status_code == 200


# ------------------------------------------------------------------ HTTP: connection cap


def test_connections_over_the_cap_are_closed_at_once(tmp_path: Path, redis_url: str) -> None:
    """RAILYARD_MAX_CONNECTIONS=20 with 20 connections held open: each one
    more is answered 503 (TOO_MANY_CONNECTIONS) and closed at once, logged
    once for all; when the 20 go, the service answers again and a game is
    played."""
    cap = 20
    env = {"RAILYARD_MAX_CONNECTIONS": str(cap), "RAILYARD_HEADER_TIMEOUT": "60"}
    with serve(tmp_path, redis_url, "cap", **env) as server:

        async def go() -> None:
            held = [
                await asyncio.open_connection("127.0.0.1", server.http_port) for _ in range(cap)
            ]
            try:
                for _ in range(10):
                    begun = time.monotonic()
                    reader, writer = await asyncio.open_connection("127.0.0.1", server.http_port)
                    data = await read_to_close(reader, SLACK)
                    writer.close()
                    assert time.monotonic() - begun < SLACK
                    assert_status_body(data, 503, "TOO_MANY_CONNECTIONS", retryAfterSeconds="1")
            finally:
                for _, writer in held:
                    writer.close()
            deadline = time.monotonic() + 10
            async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as client:
                while True:
                    with contextlib.suppress(httpx.HTTPError):
                        if (await client.get("/healthz")).status_code == 200:
                            break
                    assert time.monotonic() < deadline, "not served after the held connections went"
                    await asyncio.sleep(0.05)
                done = asyncio.Event()
                done.set()
                assert await keep_playing(client, done) == 1

        run(go())
    assert len(log_lines(server, "HTTP connection refused")) == 1, server.log()


# ------------------------------------------------------------------ gRPC


def test_grpc_channel_arguments_take_effect(tmp_path: Path, redis_url: str) -> None:
    """RAILYARD_HEADER_TIMEOUT=1: a TCP connection that sends nothing (or only
    the HTTP/2 preface) is closed about 1 s after it opened. RAILYARD_MAX_HEADER_BYTES=4096:
    metadata over it is RESOURCE_EXHAUSTED, and so is an HTTP head (431).
    RAILYARD_MAX_BODY_BYTES=4096: a larger message is RESOURCE_EXHAUSTED, a
    larger HTTP body INVALID_ARGUMENT (field body). RAILYARD_GRPC_IDLE_TIMEOUT=1:
    a channel with no call open is sent away (GOAWAY) after about 1 s."""
    env = {
        "RAILYARD_HEADER_TIMEOUT": "1",
        "RAILYARD_MAX_HEADER_BYTES": "4096",
        "RAILYARD_MAX_BODY_BYTES": "4096",
        "RAILYARD_GRPC_IDLE_TIMEOUT": "1",
    }
    with serve(tmp_path, redis_url, "grpc-args", **env) as server:

        async def silent(send: bytes) -> float:
            opened = time.monotonic()
            reader, writer = await asyncio.open_connection("127.0.0.1", server.grpc_port)
            writer.write(send)
            try:
                await read_to_close(reader, 1 + SLACK)
            finally:
                writer.close()
            return time.monotonic() - opened

        async def go() -> None:
            for took in await asyncio.gather(
                silent(b""), silent(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            ):
                assert 0.9 <= took <= 1 + SLACK, took
            async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
                stub = pb_grpc.GameServiceStub(channel)
                small = (("x-pad", "a" * 2000),)
                assert (await stub.ListRulesets(pb.ListRulesetsRequest(), metadata=small)).rulesets
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await stub.ListRulesets(
                        pb.ListRulesetsRequest(), metadata=(("x-pad", "a" * 8000),)
                    )
                assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                players = [pb.Player(display_name="A" * 5000), pb.Player(display_name="B")]
                with pytest.raises(grpc.aio.AioRpcError) as too_big:
                    await stub.CreateGame(pb.CreateGameRequest(players=players))
                assert too_big.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                created = await stub.CreateGame(
                    pb.CreateGameRequest(players=[pb.Player(), pb.Player()])
                )
                assert created.game.game_id
                # Idle now (no call open): the server sends it away.
                assert channel.get_state() == grpc.ChannelConnectivity.READY
                idle_from = time.monotonic()
                while channel.get_state() == grpc.ChannelConnectivity.READY:
                    assert time.monotonic() - idle_from < 1 + SLACK, "an idle channel kept"
                    await asyncio.sleep(0.05)
                assert time.monotonic() - idle_from >= 0.5
                # ... and the next call reconnects by itself.
                assert (await stub.ListRulesets(pb.ListRulesetsRequest())).rulesets

        run(go())
        head = b"GET /healthz HTTP/1.1\r\nHost: railyard\r\nX-Pad: " + b"a" * 5000 + b"\r\n\r\n"
        with socket.create_connection(("127.0.0.1", server.http_port)) as sock:
            assert_status_body(_request(sock, head), 431, "HEADERS_TOO_LARGE", field="headers")
        body = '{"players": [{}, {}]}' + " " * 5000
        refused = httpx.post(f"{server.base_url}/v1/games", content=body, timeout=10)
        assert refused.status_code == 400
        assert refused.json()["details"][0]["metadata"] == {"field": "body"}


def test_grpc_connections_over_the_cap_are_closed(tmp_path: Path, redis_url: str) -> None:
    """RAILYARD_GRPC_MAX_CONNECTIONS=5 with 5 connections held (gRPC has
    answered each with its SETTINGS): one more is closed at once, unanswered;
    when the 5 go, calls succeed again."""
    cap = 5
    env = {"RAILYARD_GRPC_MAX_CONNECTIONS": str(cap), "RAILYARD_HEADER_TIMEOUT": "60"}
    with serve(tmp_path, redis_url, "grpc-cap", **env) as server:

        async def go() -> None:
            held = []
            try:
                for _ in range(cap):
                    reader, writer = await asyncio.open_connection("127.0.0.1", server.grpc_port)
                    held.append(writer)
                    assert await asyncio.wait_for(reader.read(9), 10)  # its SETTINGS frame
                for _ in range(3):
                    begun = time.monotonic()
                    reader, writer = await asyncio.open_connection("127.0.0.1", server.grpc_port)
                    assert await read_to_close(reader, SLACK) == b""
                    writer.close()
                    assert time.monotonic() - begun < SLACK
            finally:
                for writer in held:
                    writer.close()
            async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
                stub = pb_grpc.GameServiceStub(channel)
                request = pb.ListRulesetsRequest()
                assert (await stub.ListRulesets(request, timeout=10, wait_for_ready=True)).rulesets

        run(go())


# ------------------------------------------------------------------ start-up and the log


#: Sets the soft descriptor limit, then becomes the command: a preexec_fn
#: would make subprocess fork the test process, and gRPC's fork handlers
#: then abort the child before it runs the command (seen under load).
WITH_SOFT_LIMIT = (
    "import os, resource, sys; "
    "hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]; "
    "resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), hard)); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)


@contextlib.contextmanager
def serve_with_soft_limit(tmp_path: Path, redis_url: str, soft: int) -> Iterator[int]:
    """``railyard serve`` started with its soft RLIMIT_NOFILE at ``soft``; its pid, once ready."""
    http_port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAILYARD_")}
    log = tmp_path / "soft.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                WITH_SOFT_LIMIT,
                str(soft),
                str(RAILYARD),
                "serve",
                "--host",
                "127.0.0.1",
                "--grpc-port",
                str(free_port()),
                "--http-port",
                str(http_port),
            ],
            env={**env, "REDIS_URL": redis_url, "RAILYARD_WORKERS": "1"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 20
        while True:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{http_port}/readyz", timeout=1).status_code == 200:
                    break
            time.sleep(0.05)
        yield proc.pid
    finally:
        proc.kill()
        proc.wait(10)


def test_the_descriptor_limit_is_raised_to_the_hard_one(tmp_path: Path, redis_url: str) -> None:
    """Started with a soft limit of 256 (below the default caps' 2,128), the
    process raises it to the hard limit and serves."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # A host below it cannot serve the default caps at all (the service
    # refuses to start): say so rather than skip.
    assert hard >= 1000 + 1000 + OWN_DESCRIPTORS, (
        f"this host's hard limit of open files ({hard}) does not fit the default connection "
        "caps: raise it (ulimit -Hn, a container's nofile limit)"
    )
    with serve_with_soft_limit(tmp_path, redis_url, 256) as pid:
        limits = Path(f"/proc/{pid}/limits").read_text()
        row = next(line for line in limits.splitlines() if line.startswith("Max open files"))
        assert row.split()[3:5] == [str(hard), str(hard)], row


def test_caps_that_do_not_fit_the_descriptors_refuse_to_start(redis_url: str) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAILYARD_")}
    done = subprocess.run(
        [
            str(RAILYARD),
            "serve",
            "--host",
            "127.0.0.1",
            "--max-connections",
            str(hard),
            "--grpc-port",
            str(free_port()),
            "--http-port",
            str(free_port()),
        ],
        env={**env, "REDIS_URL": redis_url},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1, done.stderr
    assert "cannot start: the connection caps need" in done.stderr, done.stderr
    assert "RAILYARD_MAX_CONNECTIONS" in done.stderr


def test_failed_accepts_are_one_line_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    """1,000 accept() failures make one log line at once and one summary line
    with the count after the interval; any other context still reaches the
    loop's default handler."""
    failure = OSError(errno.EMFILE, "Too many open files")

    async def go() -> None:
        loop = asyncio.get_running_loop()
        handler = AcceptFailureLog(interval=0.2)
        with caplog.at_level(logging.INFO):
            for _ in range(1000):
                handler(loop, {"message": ACCEPT_FAILED, "exception": failure})
            lines = [r for r in caplog.records if r.name == "railyard"]
            assert len(lines) == 1, [r.getMessage() for r in lines]
            assert "Too many open files" in lines[0].getMessage()
            handler(loop, {"message": "something else broke", "exception": ValueError("x")})
            others = [r for r in caplog.records if r.name == "asyncio"]
            assert [r.getMessage() for r in others] == ["something else broke"]
            deadline = time.monotonic() + 10
            while len([r for r in caplog.records if r.name == "railyard"]) < 2:
                assert time.monotonic() < deadline, "no summary line"
                await asyncio.sleep(0.02)
            summary = [r for r in caplog.records if r.name == "railyard"][1].getMessage()
            assert "999 more in the last 0.2 s" in summary, summary

    run(go())


def test_grpc_answers_to_departed_clients_are_tallied(caplog: pytest.LogCaptureFixture) -> None:
    """grpc.aio logs an ERROR with a traceback for each answer it could not
    send to a client that had gone: a client leaving in the middle of its
    answers, on purpose or not, would write one each. Through the filter
    serve installs, the first is one INFO line, the rest counted into one
    line per interval; grpc's other records pass untouched."""

    async def go() -> None:
        loop = asyncio.get_running_loop()
        grpc_log = logging.getLogger(GRPC_AIO_LOGGER)
        gone = ClientGoneLog(loop, interval=0.2)
        grpc_log.addFilter(gone)
        try:
            with caplog.at_level(logging.INFO):
                for n in range(500):
                    try:
                        raise RuntimeError("ExecuteBatchError")
                    except RuntimeError:
                        # grpc's two wordings of it, by grpcio release.
                        grpc_log.exception(
                            "ExecuteBatchError raised in core by servicer method [%s]"
                            if n % 2
                            else "Unexpected [ExecuteBatchError] raised by servicer method [%s]",
                            "/railyard.v1.GameService/GetGame",
                        )
                grpc_log.error("something else in grpc")
                ours = [r for r in caplog.records if r.name == "railyard.grpc"]
                assert len(ours) == 1, [r.getMessage() for r in ours]
                assert ours[0].levelno == logging.INFO
                assert "GetGame" in ours[0].getMessage()
                assert not ours[0].exc_info
                theirs = [r.getMessage() for r in caplog.records if r.name == GRPC_AIO_LOGGER]
                assert theirs == ["something else in grpc"]
                deadline = time.monotonic() + 10
                while len([r for r in caplog.records if r.name == "railyard.grpc"]) < 2:
                    assert time.monotonic() < deadline, "the count never came"
                    await asyncio.sleep(0.05)
                counted = [r for r in caplog.records if r.name == "railyard.grpc"][1]
                assert "499" in counted.getMessage(), counted.getMessage()
        finally:
            grpc_log.removeFilter(gone)

    run(go())
