"""``railyard serve --workers N``: real subprocesses over the harness's Redis.

Which worker answered is read from /metrics: each worker's OpenTelemetry
resource has its own ``service.instance.id`` (host-pid), in ``target_info``.
Fresh connections (no keep-alive) let the kernel's SO_REUSEPORT hash pick a
worker per request."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import grpc
import httpx
import pytest

from railyard_api import game_service_pb2 as pb
from railyard_api import game_service_pb2_grpc as pb_grpc
from service.ops.workers import cpu_count, worker_count
from service.settings import Settings
from tests.service_helpers import run
from tests.test_service_resilience import (
    RAILYARD,
    SHORT_JSON,
    Serve,
    free_port,
    play_http,
    serve,
    stop_gracefully,
)

#: A connection per request: each one is spread by the kernel anew.
FRESH = httpx.Limits(max_keepalive_connections=0)
INSTANCE = re.compile(r'target_info\{[^}]*service_instance_id="[^"]*-(\d+)"')


def wait_for(what: str, check: Callable[[], bool], server: Serve, within: float = 30) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {within} s\n{server.log()}"
        time.sleep(0.05)


def worker_pids(server: Serve) -> list[int]:
    """The pids of the supervisor's start line (once it is logged)."""
    pattern = re.compile(r"with (\d+) workers \(pids ([\d, ]+)\)")
    wait_for("the start line", lambda: pattern.search(server.log()) is not None, server)
    found = pattern.search(server.log())
    assert found is not None
    pids = [int(p) for p in found.group(2).split(", ")]
    assert len(pids) == int(found.group(1))
    return pids


def scrape(server: Serve) -> tuple[int, str]:
    """One /metrics over a fresh connection: the answering worker's pid, the text."""
    text = httpx.get(f"{server.base_url}/metrics", timeout=10).text
    found = INSTANCE.search(text)
    assert found is not None, text[:2000]
    return int(found.group(1)), text


def scrape_each(server: Serve, pids: set[int], tries: int = 200) -> dict[int, str]:
    """A /metrics of each of ``pids`` (fresh connections until every one answered)."""
    seen: dict[int, str] = {}
    for _ in range(tries):
        pid, text = scrape(server)
        seen[pid] = text
        if pids <= seen.keys():
            return seen
    raise AssertionError(f"{tries} connections reached only workers {sorted(seen)} of {pids}")


def count(text: str, metric: str, label: str) -> float:
    """The sum of ``metric``'s samples whose labels contain ``label``."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(metric + "{") and label in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def descendants(pid: int) -> set[int]:
    """Every live process under ``pid`` (workers, their bot pools, helpers)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_the_default_is_one_per_cpu_with_redis_and_one_without() -> None:
    assert worker_count(Settings(redis_url="redis://127.0.0.1:1/0")) == cpu_count()
    assert worker_count(Settings(redis_url="redis://127.0.0.1:1/0", workers=3)) == 3
    assert worker_count(Settings(redis_url="")) == 1
    assert worker_count(Settings(redis_url="", workers=1)) == 1
    assert cpu_count() == len(os.sched_getaffinity(0))


@pytest.mark.parametrize("how", ["flag", "env"])
def test_more_than_one_worker_over_the_memory_store_is_refused(how: str) -> None:
    argv = [str(RAILYARD), "serve", "--grpc-port", str(free_port())]
    argv += ["--http-port", str(free_port())]
    env = {"PATH": "/usr/bin:/bin"}
    if how == "flag":
        argv += ["--workers", "2"]
    else:
        env["RAILYARD_WORKERS"] = "2"
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "2 workers" in line
    assert "shared store" in line
    assert "REDIS_URL" in line


def test_two_workers_answer_on_both_ports_and_share_games(tmp_path: Path, redis_url: str) -> None:
    """Both workers answer on the one HTTP and the one gRPC port; a game
    created through one connection is played through fresh connections
    reaching both, moves continuing from the other's versions."""
    with serve(tmp_path, redis_url, "two", RAILYARD_WORKERS="2") as server:
        pids = worker_pids(server)
        assert len(set(pids)) == 2
        # Where to go is said once, by the supervisor, with the shared ports.
        where = re.compile(
            r"ready: the table at http://127\.0\.0\.1:(\d+)/.* on 127\.0\.0\.1:(\d+)"
        )
        wait_for("where to go", lambda: where.search(server.log()) is not None, server)
        assert where.findall(server.log()) == [(str(server.http_port), str(server.grpc_port))]
        assert server.proc.pid not in pids
        before = scrape_each(server, set(pids))

        async def play() -> None:
            async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as one:
                players = [{"displayName": "Ana"}, {"displayName": "Ben"}]
                reply = await one.post(
                    "/v1/games", json={"ruleset": SHORT_JSON, "players": players, "seed": "w2"}
                )
                assert reply.status_code == 200, reply.text
                body = reply.json()
            game_id = body["game"]["gameId"]
            tokens = {int(s.get("seat", 0)): s["token"] for s in body["seats"]}
            async with httpx.AsyncClient(
                base_url=server.base_url, timeout=10, limits=FRESH
            ) as fresh:
                view = await play_http(fresh, game_id, tokens, moves=12)
            assert int(view["version"]) >= 12
            # gRPC: a channel (a connection) per call, each spread anew.
            for _ in range(24):
                async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
                    got = await pb_grpc.GameServiceStub(channel).GetGame(
                        pb.GetGameRequest(game_id=game_id), timeout=10
                    )
                    assert got.version == int(view["version"])

        run(play())
        after = scrape_each(server, set(pids))
        for pid in pids:
            moves = 'operation="ApplyMove"'
            http = "railyard_http_requests_total"
            applied = count(after[pid], http, moves) - count(before[pid], http, moves)
            assert applied > 0, f"worker {pid} applied no move of the game"
            gets = 'method="GetGame"'
            grpc_total = "railyard_grpc_requests_total"
            assert count(after[pid], grpc_total, gets) > 0, f"worker {pid} answered no gRPC call"
        stop_gracefully(server, within=20)


def test_a_killed_worker_is_restarted_and_sigterm_stops_every_process(
    tmp_path: Path, redis_url: str
) -> None:
    with serve(tmp_path, redis_url, "restart", RAILYARD_WORKERS="2") as server:
        first, second = worker_pids(server)
        os.kill(first, signal.SIGKILL)
        restarted = re.compile(r"worker \d+ restarted: pid (\d+)")
        wait_for("a restart", lambda: restarted.search(server.log()) is not None, server)
        found = restarted.search(server.log())
        assert found is not None
        new = int(found.group(1))
        assert new not in (first, second)
        assert "died" in server.log()
        assert "signal SIGKILL" in server.log()
        assert not alive(first)
        # The new worker serves (its /metrics answers on the shared port).
        scrape_each(server, {new, second})
        processes = descendants(server.proc.pid)
        assert {new, second} <= processes
        stop_gracefully(server, within=30)
        assert "stopped: 2 workers" in server.log()
        # The killed worker's own helpers (its bot pool, the forkserver) were
        # orphaned by the SIGKILL: they go when they see their parent's pipes
        # close, which under CI's load once took longer than the stop.
        give_up = time.monotonic() + 20
        while (left := [pid for pid in processes if alive(pid)]) and time.monotonic() < give_up:
            time.sleep(0.2)
        assert not left, f"processes left after SIGTERM: {left}\n{server.log()}"


def test_the_workers_stop_when_the_supervisor_is_killed(tmp_path: Path, redis_url: str) -> None:
    """Even SIGKILL of the supervisor leaves no worker on the ports."""
    with serve(tmp_path, redis_url, "orphans", RAILYARD_WORKERS="2") as server:
        worker_pids(server)
        processes = descendants(server.proc.pid)
        server.proc.kill()
        server.proc.wait(10)
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in processes):
            assert time.monotonic() < deadline, [p for p in processes if alive(p)]
            time.sleep(0.1)


def test_one_worker_runs_without_a_supervisor(tmp_path: Path, redis_url: str) -> None:
    """N = 1 is the one process of before: it serves itself (no supervisor,
    no worker processes, no worker's log line)."""
    with serve(tmp_path, redis_url, "one", RAILYARD_WORKERS="1") as server:
        assert httpx.get(f"{server.base_url}/metrics", timeout=10).status_code == 200
        assert "worker" not in server.log()
        for pid in descendants(server.proc.pid):
            assert "spawn_main" not in Path(f"/proc/{pid}/cmdline").read_text()
        stop_gracefully(server)


def test_a_worker_that_cannot_start_stops_the_start(redis_url: str) -> None:
    """A configuration error found in the workers (here an exporter that is
    not installed) is not restarted in a loop: exit 1, with its line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAILYARD_", "OTEL_"))}
    env |= {"REDIS_URL": redis_url, "RAILYARD_WORKERS": "2", "OTEL_TRACES_EXPORTER": "nosuch"}
    argv = [str(RAILYARD), "serve", "--grpc-port", str(free_port())]
    done = subprocess.run(
        [*argv, "--http-port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 1, done.stderr
    assert "worker cannot start: OpenTelemetry" in done.stderr, done.stderr
    assert "nosuch" in done.stderr
    assert "exited at its start" in done.stderr
    assert "restarted" not in done.stderr


#: A replica's grace period (service.ops.serve.serve: gRPC's stop, uvicorn's
#: graceful shutdown and background play's hand-back are each bounded at
#: it), and what the issue allows beyond it for every process to be gone.
GRACE = 5.0
SLACK = 2.0


def bot_traffic(server: Serve) -> None:
    """Games against expert bots (their turns are played in each worker's
    bot pool, a forkserver and its resource tracker beside it) and games of
    bots only (played in the background), through fresh connections so both
    workers take some."""

    async def go() -> None:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=30, limits=FRESH) as http:
            for n in range(6):
                players = [
                    {"displayName": "Ana"},
                    {"displayName": "Bot", "bot": "BOT_LEVEL_EXPERT"},
                ]
                reply = await http.post(
                    "/v1/games",
                    json={"ruleset": SHORT_JSON, "players": players, "seed": f"bots{n}"},
                )
                assert reply.status_code == 200, reply.text
                body = reply.json()
                tokens = {int(s.get("seat", 0)): s["token"] for s in body["seats"]}
                await play_http(http, body["game"]["gameId"], tokens, moves=3)
                everyone = [{"displayName": f"B{i}", "bot": "BOT_LEVEL_EXPERT"} for i in range(2)]
                reply = await http.post("/v1/games", json={"players": everyone, "seed": f"bg{n}"})
                assert reply.status_code == 200, reply.text

    run(go())


def pool_started(processes: set[int]) -> bool:
    """Whether a bot pool's forkserver is among ``processes``."""
    for pid in processes:
        with contextlib.suppress(OSError):
            if "forkserver" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace"):
                return True
    return False


def gone_within(processes: set[int], seconds: float) -> list[int]:
    """The processes still alive after ``seconds`` (waited for as they go)."""
    deadline = time.monotonic() + seconds
    while (left := [pid for pid in processes if alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_every_process_is_gone_within_the_grace_after_bot_traffic(
    tmp_path: Path, redis_url: str, how: str
) -> None:
    """After bot traffic (each worker's bot pool and forkserver running, games
    of bots only playing in the background), a SIGTERM to the supervisor, or
    a SIGKILL of it, leaves no process of the tree (workers, bot workers,
    forkservers, resource trackers) past the grace period plus 2 s."""
    with serve(tmp_path, redis_url, f"bots-{how}", RAILYARD_WORKERS="2") as server:
        worker_pids(server)
        bot_traffic(server)
        processes = descendants(server.proc.pid)
        assert pool_started(processes), "no bot pool started: the test would prove nothing"
        server.proc.send_signal(signal.Signals[how])
        begun = time.monotonic()
        left = gone_within(processes | {server.proc.pid}, GRACE + SLACK)
        took = time.monotonic() - begun
        assert not left, (
            f"{how}: {len(left)} processes left after {took:.1f} s: "
            + "; ".join(
                Path(f"/proc/{pid}/cmdline").read_text(errors="replace").replace("\0", " ")[:120]
                for pid in left
                if alive(pid)
            )
            + f"\n{server.log()[-4000:]}"
        )
