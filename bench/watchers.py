"""Watchers benchmark: many WatchGame streams on one ``railyard serve`` with Redis.

    .venv/bin/python bench/watchers.py [--watchers 300] [--games 30]
                                       [--transport grpc|http] [--moves 10]

It starts a throw-away redis-server and one ``railyard serve`` process on
free ports, creates ``--games`` two-player games, opens ``--watchers``
streams spread evenly over them (gRPC WatchGame or HTTP Server-Sent Events,
from this process), then plays ``--moves`` rounds of one move in every game
through gRPC. It reports:

* the server's connections to Redis (``CLIENT LIST`` on the server: clients
  named ``railyard...``) with no watcher and with every watcher open;
* the server's resident memory before and after the watchers opened (per
  watcher: what a cap on watchers has to budget for);
* the latency from sending a move's ApplyMove to each watcher receiving that
  move's first event (p50, p99, max), next to the ApplyMove round trip alone;
* whether every watcher saw every version of its game, in order, once.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

# Run as a script, bench/ comes first on sys.path and bench/service.py would
# shadow the ``service`` package: put the repository root there instead.
_HERE: Final = Path(__file__).resolve().parent
ROOT: Final = _HERE.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import grpc  # noqa: E402
import httpx  # noqa: E402

from railyard_api import game_service_pb2 as pb  # noqa: E402
from railyard_api import game_service_pb2_grpc as pb_grpc  # noqa: E402
from tests.redis_harness import RedisServer  # noqa: E402

RAILYARD: Final = Path(sys.executable).with_name("railyard")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise LookupError("no VmRSS")


def service_connections(redis: RedisServer) -> int:
    """Clients of the server whose name starts with ``railyard``."""
    import redis as redis_py

    with redis_py.Redis(port=redis.port) as client:
        return sum(1 for c in client.client_list() if c.get("name", "").startswith("railyard"))


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def watch_grpc(
    stub: pb_grpc.GameServiceAsyncStub, game_id: str, seen: list[tuple[int, float]]
) -> None:
    async for event in stub.WatchGame(pb.WatchGameRequest(game_id=game_id)):
        if not seen or seen[-1][0] != event.version:
            seen.append((event.version, time.monotonic()))


async def watch_http(
    client: httpx.AsyncClient, game_id: str, seen: list[tuple[int, float]]
) -> None:
    timeout = httpx.Timeout(30, read=None)
    async with client.stream("GET", f"/v1/games/{game_id}/events", timeout=timeout) as response:
        if response.status_code != 200:
            raise RuntimeError(f"watch refused: {response.status_code} {await response.aread()!r}")
        async for line in response.aiter_lines():
            if line.startswith("id: "):
                version = int(line[4:])
                if not seen or seen[-1][0] != version:
                    seen.append((version, time.monotonic()))


async def bench(
    args: argparse.Namespace, redis: RedisServer, server_pid: int, ports: tuple[int, int]
) -> None:
    grpc_port, http_port = ports
    # Watchers come from many clients: one HTTP/2 connection per 100 streams
    # (one connection holding thousands cancels streams past its own limits).
    channels = [
        grpc.aio.insecure_channel(
            f"127.0.0.1:{grpc_port}", options=[("grpc.use_local_subchannel_pool", 1)]
        )
        for _ in range(1 + (args.watchers + 99) // 100)
    ]
    stub = pb_grpc.GameServiceStub(channels[0])
    stubs = [pb_grpc.GameServiceStub(c) for c in channels[1:]]
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    http = httpx.AsyncClient(base_url=f"http://127.0.0.1:{http_port}", limits=limits, timeout=30)
    players = [pb.Player(display_name="A"), pb.Player(display_name="B")]
    games: list[tuple[str, dict[int, str]]] = []
    for i in range(args.games):
        created = await stub.CreateGame(pb.CreateGameRequest(players=players, seed=f"watch-{i}"))
        games.append((created.game.game_id, {s.seat: s.token for s in created.seats}))
    idle_connections = service_connections(redis)
    rss_before = rss_mib(server_pid)

    seen: list[list[tuple[int, float]]] = [[] for _ in range(args.watchers)]
    game_of = [games[w % len(games)][0] for w in range(args.watchers)]
    tasks = []
    for w in range(args.watchers):
        if args.transport == "grpc":
            watch = watch_grpc(stubs[w % len(stubs)], game_of[w], seen[w])
            tasks.append(asyncio.create_task(watch))
            if w % 100 == 99:
                # Clients arrive, not all in one instant: grpc itself cancels
                # some of ~1,500 streams opened within half a second.
                await asyncio.sleep(0.1)
        else:
            tasks.append(asyncio.create_task(watch_http(http, game_of[w], seen[w])))
    deadline = time.monotonic() + 60
    while not all(seen) and time.monotonic() < deadline:
        for task in tasks:
            if task.done() and task.exception() is not None:
                raise RuntimeError("a watch failed") from task.exception()
        await asyncio.sleep(0.05)
    opened = sum(1 for s in seen if s)
    await asyncio.sleep(1.0)  # let the server settle before measuring it
    watching_connections = service_connections(redis)
    rss_after = rss_mib(server_pid)

    sent: dict[tuple[str, int], float] = {}
    applies: list[float] = []

    async def move(game_id: str, tokens: dict[int, str]) -> None:
        view = await stub.GetGame(pb.GetGameRequest(game_id=game_id))
        if view.status == pb.GAME_STATUS_FINISHED:
            return
        auth = (("authorization", f"Bearer {tokens[view.current_seat]}"),)
        legal = await stub.ListLegalMoves(pb.ListLegalMovesRequest(game_id=game_id), metadata=auth)
        plays = [m for m in legal.moves if m.move.WhichOneof("action") == "play"]
        chosen = (plays or list(legal.moves))[0].move
        request = pb.ApplyMoveRequest(game_id=game_id, move=chosen, expected_version=legal.version)
        begun = time.monotonic()
        sent[game_id, legal.version + 1] = begun
        await stub.ApplyMove(request, metadata=auth)
        applies.append(time.monotonic() - begun)

    for _ in range(args.moves):
        await asyncio.gather(*(move(g, t) for g, t in games))
        await asyncio.sleep(0.05)
    final = {g: (await stub.GetGame(pb.GetGameRequest(game_id=g))).version for g, _ in games}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if all(s and s[-1][0] == final[g] for s, g in zip(seen, game_of, strict=True)):
            break
        await asyncio.sleep(0.05)

    latencies: list[float] = []
    complete = 0
    for stream, game_id in zip(seen, game_of, strict=True):
        versions = [v for v, _ in stream]
        start = versions[0] if versions else 0
        if versions == list(range(start, final[game_id] + 1)):
            complete += 1
        for version, at in stream[1:]:
            if (game_id, version) in sent:
                latencies.append(at - sent[game_id, version])
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await http.aclose()
    for channel in channels:
        await channel.close(None)
    ms = 1000
    report = {
        "transport": args.transport,
        "watchers": args.watchers,
        "opened": opened,
        "games": args.games,
        "redis_connections_idle": idle_connections,
        "redis_connections_watching": watching_connections,
        "rss_mib_before": round(rss_before, 1),
        "rss_mib_after": round(rss_after, 1),
        "kib_per_watcher": round((rss_after - rss_before) * 1024 / max(1, opened), 1),
        "watchers_complete_in_order": complete,
        "apply_ms_p50": round(statistics.median(applies) * ms, 2) if applies else None,
        "event_ms_p50": round(percentile(latencies, 0.5) * ms, 2) if latencies else None,
        "event_ms_p99": round(percentile(latencies, 0.99) * ms, 2) if latencies else None,
        "event_ms_max": round(max(latencies) * ms, 2) if latencies else None,
        "events_timed": len(latencies),
    }
    print(json.dumps(report, indent=2))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--watchers", type=int, default=300)
    parser.add_argument("--games", type=int, default=30)
    parser.add_argument("--transport", choices=["grpc", "http"], default="grpc")
    parser.add_argument("--moves", type=int, default=10, help="moves per game")
    args = parser.parse_args()
    grpc_port, http_port = free_port(), free_port()
    log_path = Path(tempfile.mkdtemp(prefix="railyard-watchers-")) / "serve.log"
    with RedisServer() as redis, log_path.open("wb") as log:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAILYARD_")}
        # One process (no --workers supervisor): the memory read is the
        # process that serves the watchers.
        env.update(
            REDIS_URL=redis.url,
            RAILYARD_MAX_WATCHERS=str(args.watchers + 10),
            RAILYARD_WORKERS="1",
        )
        argv = [str(RAILYARD), "serve", "--host", "127.0.0.1"]
        argv += ["--grpc-port", str(grpc_port), "--http-port", str(http_port)]
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 20
            while True:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"railyard serve did not start; see {log_path}")
                with contextlib.suppress(httpx.HTTPError):
                    ready = httpx.get(f"http://127.0.0.1:{http_port}/readyz", timeout=1)
                    if ready.status_code == 200:
                        break
                time.sleep(0.05)
            asyncio.run(bench(args, redis, proc.pid, (grpc_port, http_port)))
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    errors = [
        line for line in log_path.read_text(errors="replace").splitlines() if " ERROR " in line
    ]
    if errors:
        print(f"the server logged {len(errors)} errors: {log_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
