"""``railyard-loadtest`` against two real replicas (``railyard serve``
subprocesses sharing one real redis-server), over gRPC and over HTTP: the
games it reports finished exist in Redis and are FINISHED through GetGame,
both replicas served some, the summary counts what was played; a service that
cannot be reached, or a wrong ``--url``, ends in one line and a non-zero code.
The client's ``headers`` (the operator's ``x-api-key``) reach a real server
on both transports.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
import redis

from railyard_client import Client, pb
from service.ops.serve import _listen_http
from service.settings import Settings
from tests.test_service_resilience import RAILYARD, Serve, free_port, serve

#: The Python client's load test command, beside ``railyard`` in the venv.
LOADTEST = RAILYARD.parent / "railyard-loadtest"


@pytest.fixture
def replicas(tmp_path: Path, redis_url: str) -> Iterator[list[Serve]]:
    with serve(tmp_path, redis_url, "a") as a, serve(tmp_path, redis_url, "b") as b:
        yield [a, b]


def loadtest(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LOADTEST), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def games_created(replica: Serve) -> float:
    metrics = httpx.get(f"{replica.base_url}/metrics", timeout=5).text
    found = re.search(r"^railyard_games_created_total (\S+)$", metrics, re.MULTILINE)
    assert found, metrics
    return float(found.group(1))


@pytest.mark.parametrize(
    ("transport", "seats"),
    [
        ("grpc", ["--players", "4"]),
        # Mixed: two seats played by the tool, one by the service's random bot.
        ("http", ["--players", "2", "--bots", "1", "--bot-level", "random"]),
    ],
)
def test_loadtest_plays_real_games_on_two_replicas(
    replicas: list[Serve], redis_url: str, tmp_path: Path, transport: str, seats: list[str]
) -> None:
    if transport == "grpc":
        urls = [f"127.0.0.1:{r.grpc_port}" for r in replicas]
    else:
        urls = [r.base_url for r in replicas]
    summary_path = tmp_path / "summary.json"
    done = loadtest(
        "--url",
        ",".join(urls),
        "--transport",
        transport,
        "--games",
        "4",
        "--concurrency",
        "2",
        "--duration",
        "150",
        "--rounds",
        "1",
        "--progress-interval",
        "0.2",
        "--summary-json",
        str(summary_path),
        *seats,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    out = done.stdout
    assert f"railyard-loadtest: {transport} to 2 URL(s), 2 concurrent" in out
    assert re.search(r"^games +4 finished", out, re.MULTILINE), out
    assert re.search(r"^errors +none$", out, re.MULTILINE), out
    for kind in ("CreateGame", "ListLegalMoves", "ApplyMove"):
        assert re.search(rf"^{kind} +\d+ +0 +[\d.]+ +[\d.]+ +[\d.]+$", out, re.MULTILINE), out
    # The progress line, at least once (several seconds of play, every 0.2 s).
    assert re.search(r"^\[ *[\d.]+s\] games \d+/4 finished", done.stderr, re.MULTILINE), done.stderr

    summary: dict[str, Any] = json.loads(summary_path.read_text())
    assert summary["transport"] == transport
    assert summary["errors"] == {}
    assert summary["games"]["finished"] == 4
    assert summary["moves"]["applied"] > 0
    assert summary["calls"]["ApplyMove"]["ok"] == summary["moves"]["applied"]
    assert summary["calls"]["CreateGame"]["ok"] == 4
    if "--bots" in seats:
        assert summary["moves"]["bot_moves"] > 0
    game_ids = summary["finished_game_ids"]
    assert len(set(game_ids)) == 4

    # The games are in the shared Redis, and over when asked through GetGame.
    store = redis.Redis.from_url(redis_url)
    with Client(f"127.0.0.1:{replicas[0].grpc_port}") as client:
        for game_id in game_ids:
            assert store.exists(f"ry:{{{game_id}}}:g"), game_id
            view = client.get_game(game_id)
            assert view.status == pb.GAME_STATUS_FINISHED, game_id
            assert view.winners
    # Both replicas took players (player i plays on URL i mod 2).
    assert all(games_created(r) >= 1 for r in replicas)


def test_loadtest_of_an_unreachable_service_says_so_in_one_line() -> None:
    for url in (f"127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"):
        done = loadtest("--url", url, "--games", "1", "--duration", "5", timeout=60)
        assert done.returncode == 1, done.stdout + done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith(f"railyard-loadtest: cannot reach {url}: UNAVAILABLE"), lines


def test_loadtest_refuses_an_http_url_for_grpc_and_an_unknown_preset(
    replicas: list[Serve],
) -> None:
    done = loadtest("--url", replicas[0].base_url, "--transport", "grpc", timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"railyard-loadtest: --url {replicas[0].base_url} is an HTTP URL, "
        "but --transport is grpc: give host:port"
    )
    done = loadtest("--url", replicas[0].base_url, "--preset", "nope", timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith(
        f"railyard-loadtest: --preset nope: {replicas[0].base_url} has no such preset"
    ), done.stderr
    assert "standard" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------ the client's headers


def test_client_headers_reach_the_server_over_http() -> None:
    """A real HTTP server (asyncio) records the request head the client sends."""
    heads: list[bytes] = []

    async def go() -> None:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            heads.append(await reader.readuntil(b"\r\n\r\n"))
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                b"content-length: 2\r\nconnection: close\r\n\r\n{}"
            )
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            await asyncio.to_thread(_list_rulesets, f"http://127.0.0.1:{port}")

    asyncio.run(go())
    assert b"\r\nx-api-key: k-123\r\n" in heads[0].lower()


def _list_rulesets(url: str) -> None:
    with Client(url, headers={"X-Api-Key": "k-123"}) as client:
        client.list_rulesets()


def test_client_headers_reach_the_server_as_grpc_metadata() -> None:
    seen: list[tuple[tuple[str, Any], ...]] = []

    def list_rulesets(request: pb.ListRulesetsRequest, context: grpc.ServicerContext) -> Any:
        seen.append(tuple(context.invocation_metadata() or ()))
        return pb.ListRulesetsResponse()

    async def go() -> None:
        server = grpc.aio.server()
        handler = grpc.method_handlers_generic_handler(
            "railyard.v1.GameService",
            {
                "ListRulesets": grpc.unary_unary_rpc_method_handler(
                    list_rulesets,
                    request_deserializer=pb.ListRulesetsRequest.FromString,
                    response_serializer=pb.ListRulesetsResponse.SerializeToString,
                )
            },
        )
        server.add_generic_rpc_handlers((handler,))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            await asyncio.to_thread(_list_rulesets, f"127.0.0.1:{port}")
        finally:
            await server.stop(None)

    asyncio.run(go())
    assert ("x-api-key", "k-123") in seen[0]


# ------------------------------------------------------------------ the HTTP socket


def test_http_connections_are_accepted_with_tcp_nodelay() -> None:
    """Found with the load tool: without TCP_NODELAY every keep-alive response
    waited ~40 ms (Nagle's algorithm against the client's delayed ACK).
    asyncio sets it only on sockets that say IPPROTO_TCP, so the service's
    listening socket must say so for the connections it accepts."""
    listening = _listen_http(Settings(host="127.0.0.1", http_port=0))
    nodelay: list[int] = []

    async def go() -> None:
        class Record(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                nodelay.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        server = await asyncio.get_running_loop().create_server(Record, sock=listening)
        port = listening.getsockname()[1]
        async with server:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            while not nodelay:
                await asyncio.sleep(0.01)
            writer.close()

    asyncio.run(go())
    assert nodelay == [1]


def test_more_players_than_a_connection_takes_are_never_refused(
    tmp_path: Path, redis_url: str
) -> None:
    """48 players in one process over gRPC, more than the 16 calls a
    connection carries at once (--grpc-max-streams): each client has a
    connection of its own, so none of their calls is refused. (When the
    clients shared one, 122 of 160 games were abandoned on UNAVAILABLE at
    80 players.)"""
    with serve(tmp_path, redis_url, "many") as server:
        done = loadtest(
            "--url",
            f"127.0.0.1:{server.grpc_port}",
            "--games",
            "48",
            "--concurrency",
            "48",
            "--duration",
            "8",
            "--rounds",
            "1",
        )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert re.search(r"^errors +none$", out, re.MULTILINE), out
    applied = re.search(r"^moves +(\d+) applied", out, re.MULTILINE)
    assert applied, out
    assert int(applied[1]) >= 48, out  # every player got going
