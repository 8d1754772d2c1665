"""Instructions per HTTP ApplyMove, counted under callgrind: this tree against
another commit's, the same moves through each.

    .venv/bin/python bench/instructions.py --against REF [--games 2,8] [--redis]

Why: server CPU per move read by ``bench/service.py`` moves by a fifth from
run to run on a shared 2-core VM, more than the changes it is asked to
judge. An instruction count does not: the same program on the same input
runs the same instructions whatever else the machine does (PYTHONHASHSEED
is fixed, so dicts and sets lay out alike run to run).

What runs: each tree's own HTTP app (``create_http_app`` over ``GameApp``),
called in-process as uvicorn calls it (an ASGI scope, one body message),
with the memory store, or with ``--redis`` a RedisStore on a redis-server
this script starts. The games are 4-player one-round Mexican Train games of
fixed seeds; every move is scripted first with the local engine (a random
legal move, seeded) and sent as the canonical JSON body with
``expectedVersion``, so only ApplyMove calls go through the app. Each tree
runs the whole program twice under ``valgrind --tool=callgrind``, with the
two game counts of ``--games``; the difference of the two counts over the
difference of the moves is what one move costs, imports and start-up
cancelled out. Not in it: uvicorn and httptools (the same packages for
both trees), the kernel's work for sockets, and anything that depends on
time (timers, the GC's pauses are in).

With ``--server`` it counts a whole ``railyard serve --workers 1``
process instead, over Redis, the moves sent over loopback HTTP by
``--clients`` connections at once (each its share of the games, one move
at a time): uvicorn, httptools, the connection limits, the event loop, the
gRPC server beside it and the store's client are in the count; the
kernel's socket work is not. Same scripted moves, same seeds, both trees
served by this venv's packages but their own ``service``, engine and
``railyard_api``.

It judges changes to the application and transport code; the service's
targets are read by ``bench/service.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import http.client
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
ROOT = _HERE.parent
# Run as a script, bench/ comes first on sys.path and bench/service.py would
# hide the service package: the repository's root instead (a tree being
# measured puts its own folder before it, --drive).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(ROOT))
PYTHON = sys.executable


# ---------------------------------------------------------------- the driver
# (run inside a tree, under callgrind)


async def _call(
    app: Any, method: str, path: str, raw: bytes, token: str | None
) -> tuple[int, bytes]:
    headers = [
        (b"host", b"bench"),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(raw)).encode()),
    ]
    if token:
        headers.append((b"authorization", b"Bearer " + token.encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8080),
        "state": {},
    }
    given = False

    async def receive() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": raw, "more_body": False}
        await asyncio.Event().wait()  # (never: the app reads one message)
        raise AssertionError

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


async def _drive(games: int, redis_url: str | None) -> int:
    """Play ``games`` games through the app of the tree in the current
    folder; the number of moves."""
    # Each tree's own modules, in its layout of the time.
    from google.protobuf import json_format

    import engine
    from service.app import GameApp
    from service.settings import Settings

    if Path("service/http_server.py").exists():  # before issue 23's layout
        from service.api import game_service_pb2 as pb  # type: ignore[import-not-found]
        from service.http_server import create_http_app  # type: ignore[import-not-found]

        from service import convert  # type: ignore[attr-defined]
    else:
        from railyard_api import convert
        from railyard_api import game_service_pb2 as pb
        from service.transports.http.server import create_http_app

    store: Any
    if redis_url:
        from service.store.redis import RedisStore

        store = RedisStore(redis_url, prefix=f"bench{os.getpid()}")
    else:
        from service.store.memory import MemoryStore

        store = MemoryStore()
    app = create_http_app(GameApp(store, Settings()))
    rng = random.Random(7)
    moves = 0
    for number in range(games):
        request = pb.CreateGameRequest(
            ruleset=pb.Ruleset(preset="standard", rounds=1),
            players=[pb.Player(display_name=f"p{i}") for i in range(4)],
            seed=f"instructions-{number}",
        )
        body = json.dumps(json_format.MessageToDict(request)).encode()
        status, answer = await _call(app, "POST", "/v1/games", body, None)
        if status != 200:
            raise RuntimeError(f"CreateGame: {status} {answer[:200]!r}")
        created = json.loads(answer)
        path = f"/v1/games/{created['game']['gameId']}/moves"
        tokens = {seat.get("seat", 0): seat["token"] for seat in created["seats"]}
        local = engine.new_game(convert.ruleset_from_proto(request.ruleset), 4, request.seed)
        while not local.over:
            seat = local.current_seat
            move = rng.choice(local.legal_moves())
            body = json.dumps(
                {
                    "move": json_format.MessageToDict(convert.move_to_proto(move)),
                    "expectedVersion": str(local.version),
                },
                separators=(",", ":"),
            ).encode()
            local.apply(move, seat=seat)
            status, answer = await _call(app, "POST", path, body, tokens[seat])
            if status != 200:
                raise RuntimeError(f"ApplyMove: {status} {answer[:200]!r}")
            moves += 1
    return moves


# ---------------------------------------------------------------- the bench


def _counted(tree: Path, games: int, redis_url: str | None) -> tuple[int, int]:
    """(instructions, moves) of the driver in ``tree`` over ``games`` games."""
    from bench.service import TREE_PACKAGES  # (not in --drive: it imports the engine)

    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env["PYTHONPATH"] = os.pathsep.join(str(tree / d) for d in TREE_PACKAGES)
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", PYTHON]
    argv += [str(Path(__file__).resolve()), "--drive", str(games)]
    if redis_url:
        argv += ["--redis-url", redis_url]
    done = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, check=False)
    collected = re.search(r"Collected : (\d+)", done.stderr)
    played = re.search(r"^moves (\d+)$", done.stdout, re.MULTILINE)
    if done.returncode or not collected or not played:
        raise RuntimeError(f"{tree}: {done.stderr[-800:]}")
    return int(collected.group(1)), int(played.group(1))


# ----------------------------------------------------- --server: a whole process


def _scripts(games: int) -> list[tuple[bytes, list[tuple[int, bytes]]]]:
    """Each game's CreateGame body and its moves (seat, ApplyMove body), the
    same games and moves as ``_drive`` plays, scripted with this tree's engine."""
    from google.protobuf import json_format

    import engine
    from railyard_api import convert
    from railyard_api import game_service_pb2 as pb

    rng = random.Random(7)
    out = []
    for number in range(games):
        request = pb.CreateGameRequest(
            ruleset=pb.Ruleset(preset="standard", rounds=1),
            players=[pb.Player(display_name=f"p{i}") for i in range(4)],
            seed=f"instructions-{number}",
        )
        local = engine.new_game(convert.ruleset_from_proto(request.ruleset), 4, request.seed)
        moves = []
        while not local.over:
            seat = local.current_seat
            move = rng.choice(local.legal_moves())
            body = {
                "move": json_format.MessageToDict(convert.move_to_proto(move)),
                "expectedVersion": str(local.version),
            }
            local.apply(move, seat=seat)
            moves.append((seat, json.dumps(body, separators=(",", ":")).encode()))
        out.append((json.dumps(json_format.MessageToDict(request)).encode(), moves))
    return out


def _play(port: int, games: list[tuple[bytes, list[tuple[int, bytes]]]]) -> int:
    """``games`` played over one keep-alive HTTP connection; the moves sent."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    json_type = {"content-type": "application/json"}
    moves = 0
    for create, script in games:
        for _ in range(10):
            connection.request("POST", "/v1/games", body=create, headers=json_type)
            answer = connection.getresponse()
            created = json.loads(answer.read())
            # The store refused before anything was written: a slow start
            # under callgrind (its first Redis connection), safe to retry.
            if answer.status != 503 or "STORE_UNAVAILABLE" not in str(created):
                break
            time.sleep(1)
        if answer.status != 200:
            # Under callgrind the server runs some fifty times slower: with
            # many connections (or a busy machine) a request can wait past
            # the store's 2 s timeout, which the service answers 503.
            raise RuntimeError(
                f"CreateGame: {answer.status} {created} (if STORE_UNAVAILABLE: "
                "fewer --clients, or a quieter machine)"
            )
        path = f"/v1/games/{created['game']['gameId']}/moves"
        tokens = {seat.get("seat", 0): seat["token"] for seat in created["seats"]}
        for seat, body in script:
            headers = {**json_type, "authorization": f"Bearer {tokens[seat]}"}
            connection.request("POST", path, body=body, headers=headers)
            answer = connection.getresponse()
            text = answer.read()
            if answer.status != 200:
                raise RuntimeError(f"ApplyMove: {answer.status} {text[:200]!r}")
            moves += 1
    connection.close()
    return moves


def _served(
    tree: Path, games: int, clients: int, redis_url: str, scripts: list[Any]
) -> tuple[int, int]:
    """(instructions, moves) of a ``railyard serve`` process of ``tree`` under
    callgrind while ``clients`` connections play its first ``games`` games."""
    from bench.service import TREE_PACKAGES, free_port

    http_port, grpc_port = free_port(), free_port()
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env["PYTHONPATH"] = os.pathsep.join(str(tree / d) for d in TREE_PACKAGES)
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", PYTHON]
    argv += ["-m", "service.cli", "serve", "--host", "127.0.0.1", "--workers", "1"]
    argv += ["--http-port", str(http_port), "--grpc-port", str(grpc_port)]
    argv += ["--redis-url", redis_url, "--log-level", "warning"]
    server = subprocess.Popen(
        argv, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        # Started under callgrind: a poll every 2 s (each a few hundred
        # thousand instructions, lost in the difference of the two counts).
        while server.poll() is None:
            time.sleep(2)
            try:
                connection = http.client.HTTPConnection("127.0.0.1", http_port, timeout=60)
                # /readyz: up, and its store answering (the first games
                # must not meet a connection to Redis still being made).
                connection.request("GET", "/readyz")
                if connection.getresponse().status == 200:
                    break
            except OSError:
                continue
        shares = [scripts[:games][k::clients] for k in range(clients)]
        with ThreadPoolExecutor(clients) as pool:
            moves = sum(pool.map(lambda share: _play(http_port, share), shares))
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=600)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    collected = re.search(r"Collected : (\d+)", err)
    if server.returncode or not collected:
        raise RuntimeError(f"{tree}: {err[-800:]}")
    return int(collected.group(1)), moves


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", help="the commit to compare with")
    parser.add_argument(
        "--games",
        help="the two game counts (default 2,8; with --server 1,3 a connection)",
    )
    parser.add_argument("--redis", action="store_true", help="a RedisStore (else memory)")
    parser.add_argument(
        "--server",
        action="store_true",
        help="count a whole `railyard serve` process over Redis and loopback HTTP",
    )
    parser.add_argument("--clients", type=int, default=8, help="--server: connections at once (8)")
    parser.add_argument("--drive", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--redis-url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.drive is not None:
        sys.path.insert(0, os.getcwd())  # the tree's own service package
        gc.set_threshold(10_000, 10, 10)  # as `railyard serve` runs
        print(f"moves {asyncio.run(_drive(args.drive, args.redis_url))}")
        return 0
    if not args.against:
        parser.error("--against REF is required")
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    few, many = (int(n) for n in (args.games or ("1,3" if args.server else "2,8")).split(","))
    if args.server:
        # Each connection plays as many games in both counts' difference.
        few, many = few * args.clients, many * args.clients
        args.redis = True
    from bench.service import checkout, free_port

    with tempfile.TemporaryDirectory(prefix="railyard-instructions-") as work:
        print(f"building {args.against} ...", flush=True)
        trees = {"ours": ROOT, args.against: checkout(args.against, Path(work))}
        redis: subprocess.Popen[bytes] | None = None
        redis_url = None
        if args.redis:
            port = free_port()
            redis = subprocess.Popen(
                ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
                stdout=subprocess.DEVNULL,
            )
            redis_url = f"redis://127.0.0.1:{port}/0"
        try:
            per_move = {}
            scripts = _scripts(many) if args.server else []
            for name, tree in trees.items():
                # Both counts at once, one core each (the counts do not
                # depend on what else runs).
                with ThreadPoolExecutor(2) as pool:
                    if args.server:
                        assert redis_url is not None
                        counts = pool.map(
                            lambda games, tree=tree: _served(
                                tree, games, args.clients, redis_url, scripts
                            ),
                            (few, many),
                        )
                    else:
                        counts = pool.map(
                            lambda games, tree=tree: _counted(tree, games, redis_url), (few, many)
                        )
                    (low, low_moves), (high, high_moves) = counts
                per_move[name] = (high - low) / (high_moves - low_moves)
                print(f"{name}: {per_move[name] / 1000:,.1f}k instructions a move", flush=True)
        finally:
            if redis is not None:
                redis.terminate()
                redis.wait(10)
    ratio = per_move["ours"] / per_move[args.against]
    what = "a `railyard serve` process" if args.server else "the app in-process"
    print(f"ours / {args.against}, instructions an HTTP move ({what}): {ratio:.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
