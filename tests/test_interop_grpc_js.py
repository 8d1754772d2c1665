"""The gRPC server against a second, independent client stack: Node's @grpc/grpc-js.

grpcio's client (tests/test_grpc.py) shares grpc's C core with the server
(grpc.aio); grpc-js shares nothing with it: Node's ``http2`` (nghttp2)
frames and HPACK, grpc-js's own call state, protobufjs messages. The client,
``tests/interop/grpc-js/play.mjs``, is installed from its lockfile (``npm
ci``, once per lockfile) and run against the real service, in-process on a
free port, as a subprocess that does not block the event loop the server
runs on. What it checks is listed in its functions; it prints one JSON line
that the tests here read, and the server's side of the same calls is
checked here (its counters, its open watches).

Node and npm are required, as for tests/test_client_js.py:
``scripts/install-node`` (run by ``make unit``) installs them, and without
them these tests fail rather than skip.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import logging
import re
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from railyard_api import game_service_pb2 as pb
from railyard_api.fields import message_of
from service.app import Caller, GameApp
from service.settings import Settings
from service.store import Store
from service.store.memory import MemoryStore
from service.store.redis import RedisStore
from service.transports.grpc.server import create_grpc_server
from service.transports.http.jsonwire import to_dict

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / "tests" / "interop" / "grpc-js"
NODE_MIN_MAJOR = 20
#: The whole script takes 2-3 s on a quiet machine; past this it hangs.
NODE_TIMEOUT = 60.0
#: ``npm ci`` of three packages (33 with their dependencies).
NPM_TIMEOUT = 300.0
#: The server's metadata limit: play.mjs sends metadata under it, over it,
#: and past four times it (the HPACK decoder's bound).
MAX_HEADER_BYTES = 4096
#: The server's message limit (64 KiB; real messages are under 1 KiB):
#: play.mjs sends one three times over it, and compressed ones that inflate
#: past it.
MAX_BODY_BYTES = 64 * 1024
#: Written into node_modules after a successful ``npm ci``: the lockfile's digest.
STAMP = CLIENT / "node_modules" / ".railyard-lockfile.sha256"


def tool(name: str) -> str:
    """``node`` or ``npm`` on PATH (node checked to be new enough)."""
    path = shutil.which(name)
    assert path is not None, f"{name} is not installed: run ./scripts/install-node (or `make unit`)"
    if name == "node":
        version = subprocess.run([path, "--version"], capture_output=True, text=True, check=True)
        found = re.fullmatch(r"v(\d+)\..*", version.stdout.strip())
        assert found, f"node --version said {version.stdout!r}"
        assert int(found[1]) >= NODE_MIN_MAJOR, (
            f"node {version.stdout.strip()} is too old; {NODE_MIN_MAJOR}+ is needed"
        )
    return path


def lockfile_digest() -> str:
    """What ``npm ci`` installs from: package.json and package-lock.json."""
    digest = hashlib.sha256()
    for name in ("package.json", "package-lock.json"):
        digest.update((CLIENT / name).read_bytes())
    return digest.hexdigest()


@contextlib.contextmanager
def exclusive(name: str) -> Iterator[None]:
    """A lock across processes (pytest -n workers install once, in turn)."""
    path = Path(tempfile.gettempdir()) / name
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass(frozen=True)
class Client:
    """play.mjs's folder, its node_modules installed, and the node to run it."""

    root: Path
    node: str


@pytest.fixture(scope="session")
def grpc_js() -> Client:
    """tests/interop/grpc-js with its node_modules as the lockfile pins them:
    ``npm ci`` when they are missing or were installed from another lockfile,
    else as they are."""
    client = Client(CLIENT, tool("node"))
    digest = lockfile_digest()
    with exclusive("railyard-interop-grpc-js-npm.lock"):
        if STAMP.is_file() and STAMP.read_text().strip() == digest:
            return client
        # --ignore-scripts: protobufjs's postinstall only prints a version
        # notice; nothing here needs a build step.
        done = subprocess.run(
            [tool("npm"), "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
            cwd=CLIENT,
            capture_output=True,
            text=True,
            timeout=NPM_TIMEOUT,
            check=False,
        )
        assert done.returncode == 0, f"npm ci failed:\n{done.stdout}\n{done.stderr}"
        STAMP.write_text(digest + "\n")
    return client


@dataclass
class Outcome:
    """The script's exit code and output, and the server's side afterwards."""

    code: int
    stdout: str
    stderr: str
    #: Open WatchGame streams once every stream the script opened had ended.
    watching: int
    #: railyard_grpc_requests_total by (method, code).
    calls: dict[tuple[str, str], float]
    #: The played game's view, from the store, when the script named it.
    game: dict[str, Any] | None

    def summary(self) -> dict[str, Any]:
        assert self.code == 0, f"play.mjs exited {self.code}:\n{self.stderr}\n{self.stdout}"
        lines = self.stdout.strip().splitlines()
        assert len(lines) == 1, f"play.mjs printed {len(lines)} lines:\n{self.stdout}"
        found = json.loads(lines[0])
        assert isinstance(found, dict)
        return found


def grpc_calls(app: GameApp) -> dict[tuple[str, str], float]:
    """railyard_grpc_requests_total by (method, code), from the app's exposition."""
    return {
        (sample.labels["method"], sample.labels["code"]): sample.value
        for family in text_string_to_metric_families(app.metrics.exposition().decode())
        for sample in family.samples
        if sample.name == "railyard_grpc_requests_total"
    }


@contextlib.asynccontextmanager
async def serving(app: GameApp) -> AsyncIterator[int]:
    """The real gRPC server for ``app`` on a free loopback port."""
    server, port = create_grpc_server(app, "127.0.0.1", 0)
    await server.start()
    try:
        yield port
    finally:
        await server.stop(None)


async def run_play(client: Client, port: int, max_header_bytes: int) -> tuple[int, str, str]:
    """play.mjs against 127.0.0.1:``port``, told the server's limits, as a
    subprocess the event loop (serving it) awaits: exit code, stdout, stderr."""
    proc = await asyncio.create_subprocess_exec(
        client.node,
        str(client.root / "play.mjs"),
        f"127.0.0.1:{port}",
        str(ROOT / "proto"),
        "--max-header-bytes",
        str(max_header_bytes),
        "--max-message-bytes",
        str(MAX_BODY_BYTES),
        cwd=client.root,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), NODE_TIMEOUT)
    except TimeoutError:
        proc.kill()
        out, err = await proc.communicate()
        said = f"{err.decode()}\n{out.decode()}"
        raise AssertionError(f"play.mjs did not finish in {NODE_TIMEOUT:g} s:\n{said}") from None
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def settings(**overrides: Any) -> Settings:
    """The service's settings here: no rate limit, bots on the loop, small limits."""
    base: dict[str, Any] = {
        "rate_limit": 0,
        "bot_processes": 0,
        "max_header_bytes": MAX_HEADER_BYTES,
        "max_body_bytes": MAX_BODY_BYTES,
        # play.mjs multiplexes 50 concurrent calls on one connection: over
        # the default cap of 32 streams, with overload protection, grpc may
        # refuse a stream opened past it (docs/adr/0002-grpc-on-grpcio.md).
        "grpc_max_streams": 64,
    }
    return Settings(**{**base, **overrides})


async def play(client: Client, store_kind: str, redis_url: str | None) -> Outcome:
    """Runs play.mjs against a fresh service over ``store_kind``, then reads
    the server's side: open watches, call counters, the game played."""
    store: Store = MemoryStore()
    if store_kind == "redis":
        assert redis_url is not None
        store = RedisStore(redis_url)
    app = GameApp(store, settings())
    try:
        async with serving(app) as port:
            code, out, err = await run_play(client, port, MAX_HEADER_BYTES)
            # The node process is gone: every stream it had open is over,
            # and the server's end of each follows on the loop.
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 5
            while app.watching and loop.time() < deadline:
                await asyncio.sleep(0.02)
            game = None
            game_id = re.search(r'"game":\{"gameId":"(\w+)"', out)
            if game_id:
                game = to_dict(message_of(pb.GameView, await app.get_game(game_id[1], Caller())))
            return Outcome(code, out, err, app.watching, grpc_calls(app), game)
    finally:
        app.close()
        await store.close()


def test_grpc_js_plays_a_whole_game_and_meets_the_protocol(
    grpc_js: Client,
    store_kind: str,
    url: str | None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """grpc-js plays a whole game (ListLegalMoves + ApplyMove with
    expectedVersion and the seat's bearer token) while a WatchGame opened
    before the first move sees every public event in version order and ends
    OK with the game; the answers, errors, cancellations and limits it meets
    are the ones API.md promises, as a grpcio client meets them; and the
    server is left clean: every watch closed, the cancelled ones counted
    CANCELLED, nothing logged as an error."""
    with caplog.at_level(logging.WARNING):
        outcome = asyncio.run(play(grpc_js, store_kind, url))
    summary = outcome.summary()
    assert summary["ok"] is True
    assert (
        summary["grpcJs"]
        == json.loads((grpc_js.root / "package.json").read_text())["dependencies"]["@grpc/grpc-js"]
    ), "the client ran with the pinned grpc-js"
    assert {"standard", "pagat"} <= set(summary["rulesets"])

    # The whole game, and its watch from the start to the end.
    game = summary["game"]
    assert game["moves"] >= 30
    assert game["finalVersion"] >= game["moves"]
    assert game["watchEnd"] == "OK"
    assert game["watchEvents"] > game["moves"]
    assert outcome.game is not None, outcome.stdout
    assert outcome.game["status"] == "GAME_STATUS_FINISHED"
    assert outcome.game["version"] == str(game["finalVersion"])  # proto3 JSON: int64 as text
    assert outcome.game["winners"] == game["winners"]

    # Refusals: code, grpc-message and google.rpc.Status/ErrorInfo (service/app/errors.py).
    assert summary["errors"] == {
        "staleVersion": "ABORTED VERSION_MISMATCH",
        "noGame": "NOT_FOUND GAME_NOT_FOUND",
        "oddId": "NOT_FOUND GAME_NOT_FOUND",
        "noToken": "UNAUTHENTICATED UNAUTHENTICATED",
        "emptyMove": "INVALID_ARGUMENT INVALID_ARGUMENT",
        "outOfTurn": "FAILED_PRECONDITION NOT_YOUR_TURN",
    }
    # A watch the client cancels, one past grpc-js's deadline, one past the
    # server's (grpc-timeout as metadata): ended on the client as it should,
    # and on the server each is a closed watch, counted CANCELLED.
    assert summary["cancelled"] == "CANCELLED"
    assert summary["deadline"]["code"] == "DEADLINE_EXCEEDED"
    server_deadline = summary["serverDeadline"]
    assert (server_deadline["code"], server_deadline["details"]) == (
        "DEADLINE_EXCEEDED",
        "Deadline Exceeded",  # the server's words: grpc-js's own are "Deadline exceeded after 0.3s"
    )
    assert outcome.watching == 0, "a watch the client ended is still open on the server"
    assert outcome.calls.get(("WatchGame", "CANCELLED")) == 3, outcome.calls
    # The played game's watch, the small window's replay.
    assert outcome.calls.get(("WatchGame", "OK")) == 2, outcome.calls
    assert outcome.calls.get(("ApplyMove", "ABORTED")) == 3, outcome.calls  # 1 + gzip + deflate

    assert summary["health"] == {
        "(server)": "SERVING",
        "railyard.v1.GameService": "SERVING",
        "watch": "SERVING",
        "/grpc.health.v1.Health/List": "OK",
        "/railyard.v1.GameService/Nope": "UNIMPLEMENTED",
    }

    # Compressed requests reached the server compressed, and were served.
    assert set(summary["compression"]) == {"gzip", "deflate"}
    for compressed in summary["compression"].values():
        assert compressed["version"] >= 1
        assert compressed["inflated"] == "RESOURCE_EXHAUSTED"  # past max_body_bytes
    # A 1 KiB window: the server's answers waited for Node's WINDOW_UPDATEs.
    flow = summary["flowControl"]
    assert flow["window"] == 1024
    assert flow["replayedEvents"] == game["watchEvents"]

    # Metadata under, over, and far over the limit (play.mjs says why the
    # last one reads as it does); a message over its limit.
    half, over, far = MAX_HEADER_BYTES // 2, MAX_HEADER_BYTES * 3 // 2, MAX_HEADER_BYTES * 5
    assert summary["limits"] == {
        "metadata": {
            str(half): "OK",
            str(over): "RESOURCE_EXHAUSTED",
            str(far): "RESOURCE_EXHAUSTED",
        },
        # A message past max_body_bytes, answered while it still arrives.
        "message": {str(3 * MAX_BODY_BYTES): "RESOURCE_EXHAUSTED"},
    }

    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, caplog.text


def test_play_mjs_fails_loudly_on_a_failed_check(grpc_js: Client) -> None:
    """The script is a real check: against a server whose metadata limit is
    not the one it is told, it exits 1 with one line naming the failed
    check, and prints no summary."""

    async def go() -> tuple[int, str, str]:
        app = GameApp(MemoryStore(), settings(max_header_bytes=4 * MAX_HEADER_BYTES))
        try:
            async with serving(app) as port:
                # Told the limit is MAX_HEADER_BYTES: the metadata it sends
                # over that is not over the server's.
                return await run_play(grpc_js, port, MAX_HEADER_BYTES)
        finally:
            app.close()

    code, out, err = asyncio.run(go())
    assert code == 1, (out, err)
    assert out == ""
    assert err.startswith("play.mjs: in step limits: check failed: "), err
    assert len(err.strip().splitlines()) == 1, err
