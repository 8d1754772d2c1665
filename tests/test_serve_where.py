"""``railyard serve`` says where to go once it serves: the web table, the API
docs and the gRPC port, at the ports it bound and an address to open on
this machine (its loopback for a host of every interface); and that it
stopped, after SIGTERM as after Ctrl-C (SIGINT). ``--workers N``'s
supervisor says it once: tests/test_workers.py; with TLS: tests/test_tls.py."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from service.ops.serve import where_to_go
from tests.test_service_resilience import Serve, serve
from tests.test_workers import alive, descendants

#: The line, with the table's URL, the docs' URL and the gRPC address.
WHERE = re.compile(
    r"ready: the table at (\S+)/, the API docs at (\S+/docs), gRPC on (\S+?)( \(listening on all "
    r"interfaces\))?$",
    re.MULTILINE,
)


@pytest.mark.parametrize(
    ("host", "tls", "line"),
    [
        (
            "127.0.0.1",
            False,
            "ready: the table at http://127.0.0.1:8080/, the API docs at "
            "http://127.0.0.1:8080/docs, gRPC on 127.0.0.1:50051",
        ),
        (
            "0.0.0.0",
            False,
            "ready: the table at http://127.0.0.1:8080/, the API docs at "
            "http://127.0.0.1:8080/docs, gRPC on 127.0.0.1:50051 (listening on all interfaces)",
        ),
        (
            "::",
            False,
            "ready: the table at http://localhost:8080/, the API docs at "
            "http://localhost:8080/docs, gRPC on localhost:50051 (listening on all interfaces)",
        ),
        (
            "[::]",
            True,
            "ready: the table at https://localhost:8080/, the API docs at "
            "https://localhost:8080/docs, gRPC (TLS) on localhost:50051 (listening on all "
            "interfaces)",
        ),
        (
            "::1",
            False,
            "ready: the table at http://[::1]:8080/, the API docs at "
            "http://[::1]:8080/docs, gRPC on [::1]:50051",
        ),
        (
            "play.example.com",
            True,
            "ready: the table at https://play.example.com:8080/, the API docs at "
            "https://play.example.com:8080/docs, gRPC (TLS) on play.example.com:50051",
        ),
    ],
)
def test_the_line_names_an_address_to_open(host: str, tls: bool, line: str) -> None:
    assert where_to_go(host, 8080, 50051, tls=tls) == line


def wait_for_line(server: Serve, pattern: re.Pattern[str], within: float = 30) -> re.Match[str]:
    """``pattern``'s first match in the log, once written (/readyz may answer
    a moment before the line is logged)."""
    deadline = time.monotonic() + within
    while (found := pattern.search(server.log())) is None:
        assert time.monotonic() < deadline, f"no line {pattern.pattern!r}:\n{server.log()}"
        time.sleep(0.05)
    return found


def bot_pool_playing(server: Serve, game_url: str, within: float = 60) -> set[int]:
    """The processes under the service once its bot pool plays a game of
    expert bots: moves made, so the pool's processes are past their start
    (the forkserver takes Ctrl-C like any process until it has set itself
    to ignore it)."""
    deadline = time.monotonic() + within
    while (
        int(httpx.get(game_url, timeout=10).json().get("version", 0)) < 3
        or len(found := descendants(server.proc.pid)) < 3
    ):
        assert time.monotonic() < deadline, f"no bot pool playing:\n{server.log()}"
        time.sleep(0.05)
    return found


@pytest.mark.parametrize(
    ("host", "stop"), [("127.0.0.1", signal.SIGTERM), ("0.0.0.0", signal.SIGINT)]
)
def test_serve_says_where_to_go_and_that_it_stopped(
    tmp_path: Path, host: str, stop: signal.Signals
) -> None:
    """Started on free ports, it logs (at INFO, the default level) one line
    whose addresses answer: the table's page and the docs' page over HTTP,
    the health service on the gRPC port. Then, while its bot pool plays,
    SIGTERM to it, or SIGINT to it and every process under it as Ctrl-C in
    a terminal does: it exits cleanly, "stopped" last, no traceback from
    any process, none left behind."""
    with serve(tmp_path, None, f"where-{host}", args=["--host", host]) as server:
        found = wait_for_line(server, WHERE)
        table, docs, grpc_address, everywhere = found.groups()
        assert table == f"http://127.0.0.1:{server.http_port}"
        assert docs == f"http://127.0.0.1:{server.http_port}/docs"
        assert grpc_address == f"127.0.0.1:{server.grpc_port}"
        assert (everywhere is not None) == (host == "0.0.0.0")
        assert " INFO railyard: ready: the table at " in server.log()
        assert len(WHERE.findall(server.log())) == 1
        page = httpx.get(f"{table}/", timeout=10)
        assert page.status_code == 200
        assert "text/html" in page.headers["content-type"]
        assert httpx.get(docs, timeout=10).status_code == 200
        with grpc.insecure_channel(grpc_address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            answer = health.Check(health_pb2.HealthCheckRequest(), timeout=10)
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
        experts = [{"bot": "BOT_LEVEL_EXPERT"}] * 3
        created = httpx.post(f"{table}/v1/games", json={"players": experts}, timeout=30)
        assert created.status_code == 200, created.text
        helpers = bot_pool_playing(server, f"{table}/v1/games/{created.json()['game']['gameId']}")
        targets = [server.proc.pid, *helpers] if stop == signal.SIGINT else [server.proc.pid]
        for pid in targets:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, stop)
        try:
            code = server.proc.wait(15)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"still running 15 s after {stop.name}:\n{server.log()}") from None
        assert code == 0, server.log()
    lines = server.log().splitlines()
    assert lines[-1].endswith(" INFO railyard: stopped"), server.log()
    assert "Traceback" not in server.log()
    deadline = time.monotonic() + 20
    while (left := [pid for pid in helpers if alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"processes left after {stop.name}: {left}\n{server.log()}"
