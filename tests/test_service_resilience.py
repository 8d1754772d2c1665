"""Resilience and streaming of the service, against real servers and real Redis.

* Streams across instances: moves applied through instance A reach watchers
  on instance B (gRPC WatchGame and HTTP Server-Sent Events) in order, with
  no gap and no duplicate; reconnecting with ``afterVersion`` or
  ``Last-Event-ID`` resumes exactly after that version; SSE keep-alives.
* Restart: ``railyard serve`` as a subprocess is SIGKILLed mid-game and a new
  process finishes the game; SIGTERM stops it cleanly.
* Redis dies: every call answers UNAVAILABLE / 503 ``STORE_UNAVAILABLE``
  quickly, health turns NOT_SERVING, and the service recovers by itself when
  Redis is back, with no game damaged (a Redis with an fsync'd append-only
  file, so its data survives the SIGKILL).
* The error rows of API.md not covered by ``test_grpc.py``: RATE_LIMITED,
  GAME_OVER, an over-long ``requestId``; each leaves the game's version as is.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
import uvicorn
from google.protobuf import json_format
from grpc_health.v1 import health_pb2, health_pb2_grpc

from railyard_api import game_service_pb2 as pb
from railyard_api import game_service_pb2_grpc as pb_grpc
from railyard_api.fields import message_of
from service.app import Caller, GameApp
from service.app.errors import ServiceError
from service.settings import Settings
from service.store import Store
from service.store.redis import RedisStore
from service.transports.grpc.server import create_grpc_server
from service.transports.http.server import create_http_app
from tests.redis_harness import RedisServer
from tests.service_helpers import bearer, error_info, expect_error, people, run

RAILYARD = Path(sys.executable).with_name("railyard")
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
UNAVAILABLE = grpc.StatusCode.UNAVAILABLE
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
#: How long a call may take to fail while the store is down (API.md: fail fast).
FAIL_FAST = 3.0
#: A short game: double-9, one round, three seats, seat 1 a bot.
MEDIUM = pb.Ruleset(set_max=9, rounds=1)
#: A shorter one: double-6, seven tiles each, one round.
SHORT = pb.Ruleset(set_max=6, hand_size=7, rounds=1)
SHORT_JSON = {"setMax": 6, "handSize": 7, "rounds": 1}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# ------------------------------------------------------------------ in-loop instances


class _Uvicorn(uvicorn.Server):
    """uvicorn without signal handlers of its own (the test owns the process)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@dataclass
class Instance:
    """One replica: a GameApp with its gRPC server and its HTTP server."""

    app: GameApp
    stub: pb_grpc.GameServiceAsyncStub
    health: health_pb2_grpc.HealthStub
    http: httpx.AsyncClient


@asynccontextmanager
async def instance(store: Store, settings: Settings | None = None) -> AsyncIterator[Instance]:
    """A GameApp over ``store`` served on free loopback ports (gRPC and HTTP)."""
    app = GameApp(store, settings)
    grpc_server, grpc_port = create_grpc_server(app, "127.0.0.1", 0)
    await grpc_server.start()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    http_port = sock.getsockname()[1]
    config = uvicorn.Config(
        create_http_app(app),
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=1,
    )
    http_server = _Uvicorn(config)
    http_task = asyncio.create_task(http_server.serve(sockets=[sock]))
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}")
    client = httpx.AsyncClient(base_url=f"http://127.0.0.1:{http_port}", timeout=10)
    try:
        while not http_server.started:
            if http_task.done():
                await http_task  # raises why it did not start
            await asyncio.sleep(0.01)
        yield Instance(
            app, pb_grpc.GameServiceStub(channel), health_pb2_grpc.HealthStub(channel), client
        )
    finally:
        await client.aclose()
        await channel.close()
        http_server.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(http_task, 5)
        await grpc_server.stop(None)
        sock.close()
        await store.close()


# ------------------------------------------------------------------ playing


def pick(moves: Any) -> Any:
    """A deterministic legal move that moves the game on: a play if any."""
    plays = [m for m in moves if m.move.WhichOneof("action") == "play"]
    return (plays or list(moves))[0]


async def play_grpc(
    stub: pb_grpc.GameServiceAsyncStub,
    game_id: str,
    tokens: dict[int, str],
    moves: int | None = None,
) -> pb.GameView:
    """Play ``moves`` person moves (None: to the end) through ``stub``; the
    public view after the last one. Versions must go up by at least one."""
    view = await stub.GetGame(pb.GetGameRequest(game_id=game_id))
    played = 0
    while view.status != pb.GAME_STATUS_FINISHED and (moves is None or played < moves):
        seat = view.current_seat
        legal = await stub.ListLegalMoves(
            pb.ListLegalMovesRequest(game_id=game_id), metadata=bearer(tokens[seat])
        )
        assert legal.version == view.version
        applied = await stub.ApplyMove(
            pb.ApplyMoveRequest(
                game_id=game_id, move=pick(legal.moves).move, expected_version=legal.version
            ),
            metadata=bearer(tokens[seat]),
        )
        assert applied.game.version >= view.version + 1
        assert applied.events[0].version == view.version + 1
        view = await stub.GetGame(pb.GetGameRequest(game_id=game_id))
        assert view.version == applied.game.version
        played += 1
    return view


def auth(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def version_of(body: dict[str, Any]) -> int:
    """An int64 version in canonical JSON: a string, absent when 0."""
    return int(body.get("version", "0"))


async def play_http(
    client: httpx.AsyncClient, game_id: str, tokens: dict[int, str], moves: int | None = None
) -> dict[str, Any]:
    """``play_grpc`` over HTTP/JSON; the public view (JSON) after the last move."""
    view = (await client.get(f"/v1/games/{game_id}")).json()
    played = 0
    while view["status"] != "GAME_STATUS_FINISHED" and (moves is None or played < moves):
        token = tokens[int(view.get("currentSeat", 0))]
        legal = await client.get(f"/v1/games/{game_id}/legal-moves", headers=auth(token))
        assert legal.status_code == 200, legal.text
        body = legal.json()
        assert version_of(body) == version_of(view)
        plays = [m for m in body["moves"] if "play" in m["move"]]
        move = (plays or body["moves"])[0]["move"]
        applied = await client.post(
            f"/v1/games/{game_id}/moves",
            json={"move": move, "expectedVersion": str(version_of(body))},
            headers=auth(token),
        )
        assert applied.status_code == 200, applied.text
        assert version_of(applied.json()["game"]) >= version_of(view) + 1
        view = (await client.get(f"/v1/games/{game_id}")).json()
        assert version_of(view) == version_of(applied.json()["game"])
        played += 1
    return view


# ------------------------------------------------------------------ watchers

END = "end"  # the stream closed normally


@dataclass
class Frame:
    """One SSE event frame, or one comment line (``comment`` set)."""

    id: str | None = None
    event: str | None = None
    data: str | None = None
    comment: str | None = None

    def json(self) -> dict[str, Any]:
        assert self.data is not None
        parsed: dict[str, Any] = json.loads(self.data)
        return parsed


@dataclass
class Watcher:
    """A watch running in a task, pushing what it receives into a queue."""

    task: asyncio.Task[None] | None = None
    queue: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)
    received: list[Any] = field(default_factory=list)
    status: int | None = None  # HTTP status of an SSE watch
    headers: dict[str, str] = field(default_factory=dict)

    async def next(self, timeout: float = 10.0) -> Any:
        item = await asyncio.wait_for(self.queue.get(), timeout)
        self.received.append(item)
        return item

    async def next_event(self, timeout: float = 10.0) -> Any:
        """The next event (skipping SSE comments); END or an error at the end."""
        deadline = time.monotonic() + timeout
        while True:
            item = await self.next(max(0.01, deadline - time.monotonic()))
            if not (isinstance(item, Frame) and item.comment is not None):
                return item

    async def until_end(self, timeout: float = 20.0) -> list[Any]:
        """Every event up to the end of the stream, which must end normally."""
        out = []
        while True:
            item = await self.next_event(timeout)
            if item is END:
                return out
            assert not isinstance(item, BaseException), f"the stream failed: {item!r}"
            out.append(item)

    async def drop(self) -> None:
        """The client goes away."""
        assert self.task is not None
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


def watch_grpc(
    stub: pb_grpc.GameServiceAsyncStub,
    game_id: str,
    after: int | None = None,
    token: str | None = None,
) -> Watcher:
    watcher = Watcher()
    request = pb.WatchGameRequest(game_id=game_id)
    if after is not None:
        request.after_version = after

    async def pump() -> None:
        call = stub.WatchGame(request, metadata=bearer(token) if token else None)
        try:
            async for event in call:
                await watcher.queue.put(event)
            await watcher.queue.put(END)
        except grpc.aio.AioRpcError as exc:
            await watcher.queue.put(exc)
        finally:
            call.cancel()

    watcher.task = asyncio.create_task(pump())
    return watcher


def watch_sse(
    client: httpx.AsyncClient,
    game_id: str,
    *,
    last_event_id: int | None = None,
    after: int | None = None,
    token: str | None = None,
) -> Watcher:
    watcher = Watcher()
    headers = {"accept": "text/event-stream"}
    if last_event_id is not None:
        headers["last-event-id"] = str(last_event_id)
    if token:
        headers.update(auth(token))
    params = {} if after is None else {"afterVersion": str(after)}

    async def pump() -> None:
        try:
            await read()
        except httpx.HTTPError as exc:  # the server went away mid-stream
            await watcher.queue.put(exc)

    async def read() -> None:
        url = f"/v1/games/{game_id}/events"
        timeout = httpx.Timeout(10, read=None)
        async with client.stream(
            "GET", url, headers=headers, params=params, timeout=timeout
        ) as response:
            watcher.status = response.status_code
            watcher.headers = dict(response.headers)
            if response.status_code != 200:
                await response.aread()
                await watcher.queue.put(response)
                return
            frame = Frame()
            async for line in response.aiter_lines():
                if line.startswith(":"):
                    await watcher.queue.put(Frame(comment=line))
                elif line == "":
                    if frame != Frame():
                        await watcher.queue.put(frame)
                    frame = Frame()
                else:
                    name, _, value = line.partition(":")
                    value = value.removeprefix(" ")
                    assert name in ("id", "event", "data"), f"unexpected SSE line {line!r}"
                    assert getattr(frame, name) is None, f"two {name} lines in one frame"
                    setattr(frame, name, value)
            assert frame == Frame(), f"the stream ended inside a frame: {frame!r}"
            await watcher.queue.put(END)

    watcher.task = asyncio.create_task(pump())
    return watcher


def sse_events(frames: list[Frame]) -> list[dict[str, Any]]:
    """The events of SSE frames, checking each frame's id is its version."""
    out = []
    for frame in frames:
        assert frame.event is None, f"not a plain event: {frame!r}"
        event = frame.json()
        assert frame.id == str(version_of(event)), f"id {frame.id} of {event}"
        out.append(event)
    return out


def as_json(events: Any) -> list[dict[str, Any]]:
    return [json_format.MessageToDict(e) for e in events]


def assert_in_order(events: list[pb.GameEvent]) -> None:
    versions = [e.version for e in events]
    assert versions == sorted(versions), versions


# ------------------------------------------------------------------ 1. streams


def test_watchers_on_b_see_every_move_applied_through_a(redis_url: str) -> None:
    """One Redis, two replicas: every event of moves made through A reaches
    B's watchers (gRPC spectator, gRPC seat, SSE), in order, once each; each
    stream opens with a snapshot and closes after gameEnded; SSE ids are the
    versions and a keep-alive comment comes when nothing happens."""

    async def go() -> None:
        settings = Settings(keepalive=0.5)
        async with (
            instance(RedisStore(redis_url), settings) as a,
            instance(RedisStore(redis_url), settings) as b,
        ):
            created = await a.stub.CreateGame(
                pb.CreateGameRequest(
                    ruleset=MEDIUM, players=people(3, {1: pb.BOT_LEVEL_RANDOM}), seed="cross"
                )
            )
            game_id, start = created.game.game_id, created.game.version
            tokens = {s.seat: s.token for s in created.seats}
            spectator = watch_grpc(b.stub, game_id)
            seat0 = watch_grpc(b.stub, game_id, token=tokens[0])
            sse = watch_sse(b.http, game_id)
            try:
                first = await spectator.next_event()
                assert first.WhichOneof("kind") == "snapshot"
                assert first.version == start
                assert first.snapshot == created.game  # the public view, as created
                first0 = await seat0.next_event()
                assert first0.WhichOneof("kind") == "snapshot"
                assert first0.snapshot.viewer_seat == 0
                assert len(first0.snapshot.hand) == first0.snapshot.players[0].hand_count > 0
                snapshot = await sse.next()
                assert sse.status == 200
                assert sse.headers["content-type"].startswith("text/event-stream")
                assert snapshot.id == str(start)
                assert snapshot.json() == json_format.MessageToDict(first)
                # Nothing happens: a keep-alive comment (Settings.keepalive = 0.5 s).
                comment = await sse.next(timeout=3)
                assert comment.comment is not None, comment
                assert spectator.queue.empty()  # gRPC sends nothing for keep-alives

                final = await play_grpc(a.stub, game_id, tokens)
                assert final.status == pb.GAME_STATUS_FINISHED
                got = await spectator.until_end()
                got0 = await seat0.until_end()
                got_sse = sse_events(await sse.until_end())
            finally:
                for w in (spectator, seat0, sse):
                    await w.drop()

            log = await b.stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id))
            assert log == await a.stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id))
            expected = [e for e in log.events if e.version > start]
            assert len(expected) > 40
            assert_in_order(list(log.events))
            assert expected[-1].WhichOneof("kind") == "game_ended"
            assert expected[-1].version == final.version
            assert got == expected
            assert got_sse == as_json(expected)
            # The seat's stream: the same events, its own draws with the tile.
            assert len(got0) == len(expected)
            own_draws = 0
            for mine, public in zip(got0, expected, strict=True):
                if mine.WhichOneof("kind") == "tile_drawn" and mine.tile_drawn.seat == 0:
                    assert mine.tile_drawn.HasField("tile")
                    assert not public.tile_drawn.HasField("tile")
                    mine.tile_drawn.ClearField("tile")
                    own_draws += 1
                assert mine == public
            assert own_draws > 0, "pick a seed where seat 0 draws"
            # Watching a finished game: its snapshot, then the stream ends.
            done = watch_grpc(b.stub, game_id)
            snap = await done.next_event()
            assert snap.WhichOneof("kind") == "snapshot"
            assert snap.snapshot.status == pb.GAME_STATUS_FINISHED
            assert await done.until_end() == []

    run(go())


def test_reconnecting_watchers_resume_exactly_after_the_version(redis_url: str) -> None:
    """Drop B's watchers mid-game, play on through A, reconnect: with
    ``afterVersion=N`` (gRPC, SSE query) or ``Last-Event-ID: N`` (SSE) the
    events are exactly those of the log with a version above N."""

    async def go() -> None:
        settings = Settings(keepalive=0.5)
        async with (
            instance(RedisStore(redis_url), settings) as a,
            instance(RedisStore(redis_url), settings) as b,
        ):
            created = await a.stub.CreateGame(
                pb.CreateGameRequest(
                    ruleset=MEDIUM, players=people(3, {1: pb.BOT_LEVEL_RANDOM}), seed="resume"
                )
            )
            game_id, start = created.game.game_id, created.game.version
            tokens = {s.seat: s.token for s in created.seats}

            async def log_events() -> list[pb.GameEvent]:
                log = await a.stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id))
                return list(log.events)

            g1, s1 = watch_grpc(b.stub, game_id), watch_sse(b.http, game_id)
            try:
                assert (await g1.next_event()).version == start
                assert (await s1.next_event()).id == str(start)
                middle = (await play_grpc(a.stub, game_id, tokens, moves=3)).version
                dropped_at = (await play_grpc(a.stub, game_id, tokens, moves=3)).version
                want = [e for e in await log_events() if start < e.version <= dropped_at]
                seen = [await g1.next_event() for _ in want]
                seen_sse = sse_events([await s1.next_event() for _ in want])
                assert seen == want
                assert seen_sse == as_json(want)
                last_id = int(s1.received[-1].id)
                assert last_id == dropped_at
            finally:
                await g1.drop()
                await s1.drop()
            # Nobody watches while the game goes on.
            now = (await play_grpc(a.stub, game_id, tokens, moves=4)).version
            assert now > dropped_at

            g2 = watch_grpc(b.stub, game_id, after=middle)
            s2 = watch_sse(b.http, game_id, last_event_id=last_id)
            s3 = watch_sse(b.http, game_id, after=middle)
            try:
                for w in (g2, s2, s3):
                    snap = await w.next_event()
                    if isinstance(snap, Frame):
                        assert snap.id == str(now)
                        assert "snapshot" in snap.json()
                    else:
                        assert (snap.WhichOneof("kind"), snap.version) == ("snapshot", now)
                final = await play_grpc(a.stub, game_id, tokens)
                resumed = await g2.until_end()
                resumed_sse = sse_events(await s2.until_end())
                resumed_query = sse_events(await s3.until_end())
            finally:
                for w in (g2, s2, s3):
                    await w.drop()
            events = await log_events()
            assert events[-1].WhichOneof("kind") == "game_ended"
            assert events[-1].version == final.version
            assert resumed == [e for e in events if e.version > middle]
            assert resumed_sse == as_json([e for e in events if e.version > last_id])
            assert resumed_query == as_json([e for e in events if e.version > middle])
            # Nothing missed, nothing twice: first connection + resumed = the log.
            assert seen + [e for e in resumed if e.version > dropped_at] == [
                e for e in events if e.version > start
            ]

    run(go())


# ------------------------------------------------------------------ 2. restart


@dataclass
class Serve:
    """A ``railyard serve`` subprocess."""

    proc: subprocess.Popen[bytes]
    log_path: Path
    grpc_port: int
    http_port: int
    #: "https" when it serves TLS.
    scheme: str = "http"

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.http_port}"

    @property
    def target(self) -> str:
        """The gRPC port, as grpc's channels take it."""
        return f"127.0.0.1:{self.grpc_port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextlib.contextmanager
def serve(
    tmp_path: Path,
    redis_url: str | None,
    name: str,
    *,
    ready: bool = True,
    args: Sequence[str] = (),
    tls: ssl.SSLContext | None = None,
    **env: str,
) -> Iterator[Serve]:
    """``railyard serve`` on free ports with REDIS_URL (None: the in-process
    store) and ``args``, killed at the end; yielded once ready (``ready=False``:
    once up, for a store that is down). ``tls``: it serves HTTPS, probed with
    this context."""
    log_path = tmp_path / f"{name}.log"
    environment = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith("RAILYARD_") and k != "REDIS_URL"
        },
        # One process, whatever the CPUs (the default with Redis is one
        # worker per CPU): these tests are about a replica; tests/test_workers.py
        # passes RAILYARD_WORKERS itself.
        "RAILYARD_WORKERS": "1",
        **({} if redis_url is None else {"REDIS_URL": redis_url}),
        **env,
    }
    probe = "/readyz" if ready else "/healthz"
    verify: ssl.SSLContext | bool = True if tls is None else tls
    # A free port can be taken by another process between free_port() and
    # the bind (other test workers, other jobs on the machine): the service
    # then exits naming it, and it is started again on new ports.
    for attempt in range(3):
        grpc_port, http_port = free_port(), free_port()
        with log_path.open("wb") as log_file:
            proc = subprocess.Popen(
                [
                    str(RAILYARD),
                    "serve",
                    "--host",
                    "127.0.0.1",
                    "--grpc-port",
                    str(grpc_port),
                    "--http-port",
                    str(http_port),
                    *args,
                ],
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
            )
        server = Serve(proc, log_path, grpc_port, http_port, "http" if tls is None else "https")
        deadline = time.monotonic() + 60
        up = False
        while not up and proc.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                reply = httpx.get(f"{server.base_url}{probe}", verify=verify, timeout=2)
                up = reply.status_code == 200
            if not up:
                time.sleep(0.05)
        # A port taken between free_port() and the bind ("cannot listen
        # on"), or between the HTTP socket's bind and uvicorn's listen, where
        # another process bound the same port meanwhile (EADDRINUSE).
        lost_port = any(
            sign in server.log() for sign in ("cannot listen on", "Address already in use")
        )
        if proc.poll() is None or not lost_port or attempt == 2:
            break
    try:
        assert proc.poll() is None, f"railyard serve exited:\n{server.log()}"
        assert up, f"railyard serve not ready:\n{server.log()}"
        yield server
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def stop_gracefully(server: Serve, within: float = 8.0) -> float:
    """SIGTERM; the seconds it took to exit, which must be cleanly."""
    begun = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    try:
        code = server.proc.wait(within)
    except subprocess.TimeoutExpired:
        raise AssertionError(
            f"railyard serve still running {within} s after SIGTERM:\n{server.log()}"
        ) from None
    took = time.monotonic() - begun
    assert code == 0, f"exit code {code}:\n{server.log()}"
    assert "stopped" in server.log(), server.log()
    return took


def test_a_new_process_finishes_a_game_after_sigkill(tmp_path: Path, redis_url: str) -> None:
    """Nothing about a game lives in the process: SIGKILL mid-game, a new
    process on other ports finishes it (same state, versions continue); its
    SSE keep-alive follows RAILYARD_KEEPALIVE; SIGTERM stops it cleanly."""
    players = [{"displayName": "Ana"}, {"displayName": "Ben"}]
    with serve(tmp_path, redis_url, "first") as first:

        async def begin() -> tuple[str, dict[int, str], dict[str, Any], dict[str, Any]]:
            async with httpx.AsyncClient(base_url=first.base_url, timeout=10) as client:
                reply = await client.post(
                    "/v1/games", json={"ruleset": SHORT_JSON, "players": players, "seed": "kill"}
                )
                assert reply.status_code == 200, reply.text
                body = reply.json()
                game_id = body["game"]["gameId"]
                tokens = {int(s.get("seat", 0)): s["token"] for s in body["seats"]}
                view = await play_http(client, game_id, tokens, moves=4)
                assert view["status"] == "GAME_STATUS_IN_PROGRESS"
                log = (await client.get(f"/v1/games/{game_id}/log")).json()
                return game_id, tokens, view, log

        game_id, tokens, view, log = run(begin())
        first.proc.send_signal(signal.SIGKILL)
        assert first.proc.wait(10) == -signal.SIGKILL
    before = version_of(view)
    assert before >= 4

    with serve(tmp_path, redis_url, "second", RAILYARD_KEEPALIVE="0.5") as second:
        assert (second.grpc_port, second.http_port) != (first.grpc_port, first.http_port)

        async def finish() -> None:
            async with (
                httpx.AsyncClient(base_url=second.base_url, timeout=10) as client,
                grpc.aio.insecure_channel(f"127.0.0.1:{second.grpc_port}") as channel,
            ):
                assert (await client.get(f"/v1/games/{game_id}")).json() == view
                assert (await client.get(f"/v1/games/{game_id}/log")).json() == log
                stub = pb_grpc.GameServiceStub(channel)
                assert (await stub.GetGame(pb.GetGameRequest(game_id=game_id))).version == before
                # A quiet game: the keep-alive comes every RAILYARD_KEEPALIVE seconds.
                sse = watch_sse(client, game_id)
                try:
                    assert (await sse.next()).id == str(before)
                    assert (await sse.next(timeout=3)).comment is not None
                    assert (await sse.next(timeout=3)).comment is not None
                finally:
                    await sse.drop()
                after = await play_http(client, game_id, tokens, moves=1)
                assert version_of(after) == before + 1  # two people: one move, one version
                final = await play_http(client, game_id, tokens)
                assert final["status"] == "GAME_STATUS_FINISHED"
                assert final["seed"] == "kill"
                full = (await client.get(f"/v1/games/{game_id}/log")).json()
                events = full["events"]
                assert events[: len(log["events"])] == log["events"]
                versions = [version_of(e) for e in events]
                assert versions == sorted(versions)
                assert set(versions) == set(range(version_of(final) + 1))  # no gap
                assert "gameEnded" in events[-1]
                assert full["seed"] == "kill"

        run(finish())
        took = stop_gracefully(second)
        assert took < 8


def test_sigterm_stops_the_service_with_watchers_connected(tmp_path: Path, redis_url: str) -> None:
    """SIGTERM with a gRPC and an SSE watcher open on a game in progress: both
    watches end at once (retryable), and the process stops with exit code 0
    without waiting out gRPC's grace period."""
    with serve(tmp_path, redis_url, "term", RAILYARD_KEEPALIVE="0.5") as server:

        async def go() -> float:
            async with (
                httpx.AsyncClient(base_url=server.base_url, timeout=10) as client,
                grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel,
            ):
                stub = pb_grpc.GameServiceStub(channel)
                created = await stub.CreateGame(
                    pb.CreateGameRequest(ruleset=SHORT, players=people(2), seed="term")
                )
                game_id = created.game.game_id
                g, s = watch_grpc(stub, game_id), watch_sse(client, game_id)
                try:
                    assert (await g.next_event()).WhichOneof("kind") == "snapshot"
                    assert "snapshot" in (await s.next_event()).json()
                    took = await asyncio.to_thread(stop_gracefully, server, 10.0)
                    # Both streams are over, none hangs: SSE with a last
                    # comment, gRPC with a retryable UNAVAILABLE.
                    ended = []
                    for w in (g, s):
                        while True:
                            item = await w.next(timeout=5)
                            if not (isinstance(item, Frame) and item.comment is not None):
                                break
                        ended.append(item)
                    assert isinstance(ended[0], grpc.aio.AioRpcError), ended[0]
                    assert error_info(ended[0])[:2] == (UNAVAILABLE, "SERVER_SHUTTING_DOWN")
                    assert ended[1] is END
                finally:
                    await g.drop()
                    await s.drop()
                return took

        took = run(go())
        assert took < 5  # under gRPC's grace period: no watch held the stop


def test_json_logs_one_object_per_line(tmp_path: Path, redis_url: str) -> None:
    """RAILYARD_LOG_FORMAT=json: every line the process writes, uvicorn's
    included, is one JSON object with time, level, logger and message."""
    with serve(tmp_path, redis_url, "json-logs", RAILYARD_LOG_FORMAT="json") as server:
        body = {"players": [{}, {}], "ruleset": SHORT_JSON}
        created = httpx.post(f"{server.base_url}/v1/games", json=body, timeout=10)
        assert created.status_code == 200
        game_id = created.json()["game"]["gameId"]
        stop_gracefully(server)
    lines = [line for line in server.log().splitlines() if line.strip()]
    entries = [json.loads(line) for line in lines]  # fails on any non-JSON line
    for entry in entries:
        assert set(entry) >= {"time", "level", "logger", "message"}, entry
        assert entry["time"].endswith("+00:00")
    messages = [(e["logger"], e["message"]) for e in entries]
    assert any(m.startswith("store: redis") for _, m in messages), messages
    assert any(m.startswith(f"game {game_id} created") for _, m in messages), messages
    assert any(logger.startswith("uvicorn") for logger, _ in messages), messages
    assert messages[-1] == ("railyard", "stopped")


# ------------------------------------------------------------------ 3. Redis dies


@pytest.fixture
def durable_redis() -> Iterator[RedisServer]:
    """A throw-away Redis whose data survives SIGKILL (AOF, fsync per write)."""
    server = RedisServer("--appendonly", "yes", "--appendfsync", "always")
    try:
        yield server
    finally:
        server.close()


async def timed(call: Callable[[], Awaitable[Any]]) -> tuple[Any, float]:
    begun = time.monotonic()
    result = await call()
    return result, time.monotonic() - begun


async def expect_unavailable(call: Callable[[], Awaitable[Any]]) -> None:
    (code, reason, _), took = await timed(lambda: expect_error(call))
    assert (code, reason) == (UNAVAILABLE, "STORE_UNAVAILABLE")
    assert took < FAIL_FAST, f"took {took:.1f} s"


def assert_store_unavailable_body(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["code"] == UNAVAILABLE.value[0]
    assert body["message"]
    (info,) = body["details"]
    assert info["@type"] == ERROR_INFO
    assert info["reason"] == "STORE_UNAVAILABLE"
    assert info["domain"]


async def health_status(inst: Instance) -> int:
    reply = await inst.health.Check(health_pb2.HealthCheckRequest(), timeout=FAIL_FAST + 1)
    status: int = reply.status
    return status


def test_redis_dies_and_comes_back(durable_redis: RedisServer) -> None:
    """Redis is SIGKILLed under a running service: every call is UNAVAILABLE
    / 503 STORE_UNAVAILABLE (never 500) within a few seconds, open watches end
    with that error, health and /readyz say not ready. Redis restarts on the
    same port: the service recovers by itself, the game is intact (same
    version, same log), a move refused during the outage can be retried with
    its requestId, and the game is played to the end."""

    async def go() -> None:
        store = RedisStore(durable_redis.url)
        async with instance(store, Settings(keepalive=0.5)) as svc:
            created = await svc.stub.CreateGame(
                pb.CreateGameRequest(ruleset=SHORT, players=people(2), seed="outage")
            )
            game_id = created.game.game_id
            tokens = {s.seat: s.token for s in created.seats}
            view = await play_grpc(svc.stub, game_id, tokens, moves=3)
            log = await svc.stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id))
            mover = tokens[view.current_seat]
            legal = await svc.stub.ListLegalMoves(
                pb.ListLegalMovesRequest(game_id=game_id), metadata=bearer(mover)
            )
            move = pick(legal.moves).move
            retry = pb.ApplyMoveRequest(
                game_id=game_id, move=move, expected_version=view.version, request_id="outage-1"
            )
            assert await health_status(svc) == SERVING
            g, s = watch_grpc(svc.stub, game_id), watch_sse(svc.http, game_id)
            try:
                assert (await g.next_event()).version == view.version
                assert (await s.next_event()).id == str(view.version)

                durable_redis.kill()

                # Open watches end with the error instead of hanging.
                ended = await g.next_event(timeout=FAIL_FAST + 2)
                assert isinstance(ended, grpc.aio.AioRpcError), ended
                assert ended.code() == UNAVAILABLE
                frame = await s.next_event(timeout=FAIL_FAST + 2)
                assert isinstance(frame, Frame)
                assert frame.event == "error", frame
                assert frame.json()["details"][0]["reason"] == "STORE_UNAVAILABLE"
                assert await s.next_event() is END
            finally:
                await g.drop()
                await s.drop()

            stub = svc.stub
            await expect_unavailable(lambda: stub.GetGame(pb.GetGameRequest(game_id=game_id)))
            await expect_unavailable(
                lambda: stub.ListLegalMoves(
                    pb.ListLegalMovesRequest(game_id=game_id), metadata=bearer(mover)
                )
            )
            await expect_unavailable(lambda: stub.ApplyMove(retry, metadata=bearer(mover)))
            await expect_unavailable(
                lambda: stub.ApplyMove(
                    pb.ApplyMoveRequest(game_id=game_id, move=move), metadata=bearer(mover)
                )
            )
            await expect_unavailable(
                lambda: stub.CreateGame(pb.CreateGameRequest(ruleset=SHORT, players=people(2)))
            )
            await expect_unavailable(lambda: stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id)))

            async def first_event() -> Any:
                async for event in stub.WatchGame(pb.WatchGameRequest(game_id=game_id)):
                    return event
                return None

            await expect_unavailable(first_event)
            assert await health_status(svc) == NOT_SERVING

            http = svc.http
            body = {"move": json_format.MessageToDict(move), "expectedVersion": view.version}
            calls = [
                lambda: http.get(f"/v1/games/{game_id}"),
                lambda: http.get(f"/v1/games/{game_id}/legal-moves", headers=auth(mover)),
                lambda: http.post(f"/v1/games/{game_id}/moves", json=body, headers=auth(mover)),
                lambda: http.post("/v1/games", json={"ruleset": SHORT_JSON, "players": [{}, {}]}),
                lambda: http.get(f"/v1/games/{game_id}/log"),
                lambda: http.get(f"/v1/games/{game_id}/events"),
                lambda: http.get(f"/v1/games/{game_id}/events", headers={"last-event-id": "1"}),
                lambda: http.get("/readyz"),
            ]
            for call in calls:
                response, took = await timed(call)
                assert_store_unavailable_body(response)
                assert took < FAIL_FAST, f"{response.request.url} took {took:.1f} s"
            assert (await http.get("/healthz")).status_code == 200  # the process is up

            durable_redis.start()  # same port, same data directory

            deadline = time.monotonic() + 10
            while await health_status(svc) != SERVING:
                assert time.monotonic() < deadline, "health did not come back"
                await asyncio.sleep(0.1)
            assert (await http.get("/readyz")).status_code == 200
            # The game is as it was before the outage: nothing applied, nothing lost.
            assert await stub.GetGame(pb.GetGameRequest(game_id=game_id)) == view
            assert await stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id)) == log
            again = await stub.ListLegalMoves(
                pb.ListLegalMovesRequest(game_id=game_id), metadata=bearer(mover)
            )
            assert again == legal
            # The move refused during the outage, retried with its requestId:
            # applied once, and a second retry returns the same answer.
            applied = await stub.ApplyMove(retry, metadata=bearer(mover))
            assert applied.game.version == view.version + 1
            assert await stub.ApplyMove(retry, metadata=bearer(mover)) == applied
            assert (await http.get(f"/v1/games/{game_id}")).status_code == 200
            final = await play_grpc(stub, game_id, tokens)
            assert final.status == pb.GAME_STATUS_FINISHED
            full = await stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id))
            assert list(full.events[: len(log.events)]) == list(log.events)
            assert {e.version for e in full.events} == set(range(final.version + 1))
            assert_in_order(list(full.events))

    run(go())


def test_redis_hangs_calls_fail_fast_and_nothing_changes(
    redis_server: RedisServer, redis_url: str
) -> None:
    """Redis stops answering (SIGSTOP) with connections open: calls still
    answer UNAVAILABLE / 503 STORE_UNAVAILABLE within a few seconds instead of
    hanging, health is NOT_SERVING; once Redis answers again, so does the
    service, and the move refused meanwhile was not applied."""

    async def go() -> None:
        async with instance(RedisStore(redis_url)) as svc:
            stub, http = svc.stub, svc.http
            created = await stub.CreateGame(
                pb.CreateGameRequest(ruleset=SHORT, players=people(2), seed="hang")
            )
            game_id = created.game.game_id
            tokens = {s.seat: s.token for s in created.seats}
            view = await play_grpc(stub, game_id, tokens, moves=2)
            mover = tokens[view.current_seat]
            legal = await stub.ListLegalMoves(
                pb.ListLegalMovesRequest(game_id=game_id), metadata=bearer(mover)
            )
            request = pb.ApplyMoveRequest(game_id=game_id, move=pick(legal.moves).move)
            redis_server.freeze()
            try:
                # All at once, so the test waits for one timeout, not one per call.
                grpc_calls = [
                    lambda: stub.GetGame(pb.GetGameRequest(game_id=game_id)),
                    lambda: stub.ApplyMove(request, metadata=bearer(mover)),
                ]
                http_calls = [
                    lambda: http.get(f"/v1/games/{game_id}"),
                    lambda: http.post(
                        f"/v1/games/{game_id}/moves",
                        json={"move": json_format.MessageToDict(request.move)},
                        headers=auth(mover),
                    ),
                    lambda: http.get("/readyz"),
                ]
                results = await asyncio.gather(
                    *(expect_unavailable(c) for c in grpc_calls),
                    *(timed(c) for c in http_calls),
                    timed(lambda: health_status(svc)),
                )
                for response, took in results[len(grpc_calls) : -1]:
                    assert_store_unavailable_body(response)
                    assert took < FAIL_FAST, f"{response.request.url} took {took:.1f} s"
                status, took = results[-1]
                assert status == NOT_SERVING
                assert took < FAIL_FAST
            finally:
                redis_server.thaw()
            deadline = time.monotonic() + 10
            while await health_status(svc) != SERVING:
                assert time.monotonic() < deadline, "health did not come back"
                await asyncio.sleep(0.1)
            await asyncio.sleep(0.2)  # anything Redis had buffered has run by now
            assert await stub.GetGame(pb.GetGameRequest(game_id=game_id)) == view
            applied = await stub.ApplyMove(request, metadata=bearer(mover))
            assert applied.game.version == view.version + 1

    run(go())


# ------------------------------------------------------------------ 4. error rows


def status_reason(response: httpx.Response) -> tuple[int, str]:
    body = response.json()
    (info,) = body["details"]
    assert info["@type"] == ERROR_INFO
    return response.status_code, str(info["reason"])


def test_rate_limited_changes_nothing(redis_url: str) -> None:
    """Settings(rate_limit=1, rate_burst=2): the third call of a seat within a
    second is RESOURCE_EXHAUSTED RATE_LIMITED (HTTP 429 with Retry-After) and
    changes nothing; after a second the seat may move again."""

    async def go() -> None:
        limited = Settings(rate_limit=1, rate_burst=2)
        async with (
            instance(RedisStore(redis_url)) as free,
            instance(RedisStore(redis_url), limited) as svc,
        ):
            created = await free.stub.CreateGame(
                pb.CreateGameRequest(ruleset=SHORT, players=people(2), seed="rate")
            )
            game_id = created.game.game_id
            token = {s.seat: s.token for s in created.seats}[created.game.current_seat]

            async def version() -> int:
                view = await free.stub.GetGame(pb.GetGameRequest(game_id=game_id))
                return view.version

            before = await version()
            legal = await svc.stub.ListLegalMoves(
                pb.ListLegalMovesRequest(game_id=game_id), metadata=bearer(token)
            )
            await svc.stub.GetGame(pb.GetGameRequest(game_id=game_id), metadata=bearer(token))
            request = pb.ApplyMoveRequest(game_id=game_id, move=pick(legal.moves).move)
            code, reason, meta = await expect_error(
                lambda: svc.stub.ApplyMove(request, metadata=bearer(token))
            )
            assert (code, reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED")
            assert int(meta["retryAfterSeconds"]) >= 1
            response = await svc.http.post(
                f"/v1/games/{game_id}/moves",
                json={"move": json_format.MessageToDict(request.move)},
                headers=auth(token),
            )
            assert status_reason(response) == (429, "RATE_LIMITED")
            assert response.json()["code"] == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
            assert int(response.headers["retry-after"]) >= 1
            assert await version() == before
            # Another caller (a spectator, by peer) is not limited by this seat.
            await svc.stub.GetGame(pb.GetGameRequest(game_id=game_id))
            await asyncio.sleep(1.1)  # one token back
            applied = await svc.stub.ApplyMove(request, metadata=bearer(token))
            assert applied.game.version == before + 1

    run(go())


@pytest.mark.parametrize("scope", ["replica", "store"])
def test_rate_limit_per_replica_or_shared_through_redis(redis_url: str, scope: str) -> None:
    """rate_limit_scope: with "replica" two replicas each give a seat its own
    burst; with "store" the seat has one bucket in Redis, whichever replica it
    calls, and the refusal says when a token is back."""

    async def go() -> None:
        limited = Settings(rate_limit=0.5, rate_burst=3, rate_limit_scope=scope)  # type: ignore[arg-type]
        async with (
            instance(RedisStore(redis_url), limited) as a,
            instance(RedisStore(redis_url), limited) as b,
        ):
            created = await a.stub.CreateGame(
                pb.CreateGameRequest(ruleset=SHORT, players=people(2), seed=f"shared-{scope}")
            )
            game_id = created.game.game_id
            token = created.seats[0].token
            get = pb.GetGameRequest(game_id=game_id)
            allowed = 3 if scope == "store" else 6
            for i in range(allowed):
                await (a, b)[i % 2].stub.GetGame(get, metadata=bearer(token))
            for replica in (a, b):
                code, reason, meta = await expect_error(
                    lambda r=replica: r.stub.GetGame(get, metadata=bearer(token))  # type: ignore[misc]
                )
                assert (code, reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED")
                assert 1 <= int(meta["retryAfterSeconds"]) <= 3  # a token every 2 s
            # Another caller has a bucket of its own.
            await a.stub.GetGame(get, metadata=bearer(created.seats[1].token))

    run(go())


def test_shared_rate_limit_never_turns_an_outage_into_a_429() -> None:
    """With the buckets in the store and the store down, a call is answered
    UNAVAILABLE by its own use of the store, as without a limit."""

    async def go() -> None:
        store = RedisStore(f"redis://127.0.0.1:{free_port()}/0")
        app = GameApp(store, Settings(rate_limit=1, rate_burst=1, rate_limit_scope="store"))
        try:
            for _ in range(3):
                with pytest.raises(ServiceError) as refused:
                    message_of(pb.GameView, await app.get_game("0" * 20, Caller(token="t")))
                assert refused.value.reason == "STORE_UNAVAILABLE"
        finally:
            app.close()
            await store.close()

    run(go())


def test_game_over_changes_nothing(redis_url: str) -> None:
    """A finished game refuses every move with FAILED_PRECONDITION GAME_OVER
    (HTTP 400), lists no legal moves, and keeps its version."""

    async def go() -> None:
        async with instance(RedisStore(redis_url)) as svc:
            created = await svc.stub.CreateGame(
                pb.CreateGameRequest(ruleset=SHORT, players=people(2), seed="over")
            )
            game_id = created.game.game_id
            tokens = {s.seat: s.token for s in created.seats}
            final = await play_grpc(svc.stub, game_id, tokens)
            assert final.status == pb.GAME_STATUS_FINISHED
            log = await svc.stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id))
            for seat, token in tokens.items():
                legal = await svc.stub.ListLegalMoves(
                    pb.ListLegalMovesRequest(game_id=game_id), metadata=bearer(token)
                )
                assert list(legal.moves) == []
                assert legal.version == final.version
                for move in (
                    pb.Move(draw=pb.Move.Draw()),
                    pb.Move(**{"pass": pb.Move.Pass()}),
                    pb.Move(end_turn=pb.Move.EndTurn()),
                    pb.Move(
                        play=pb.Move.Play(tile=pb.Tile(a=0, b=0), train=pb.TrainRef(seat=seat))
                    ),
                ):
                    request = pb.ApplyMoveRequest(
                        game_id=game_id, move=move, expected_version=final.version
                    )
                    code, reason, _ = await expect_error(
                        lambda r=request, t=token: svc.stub.ApplyMove(r, metadata=bearer(t))
                    )
                    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "GAME_OVER")
                response = await svc.http.post(
                    f"/v1/games/{game_id}/moves", json={"move": {"draw": {}}}, headers=auth(token)
                )
                assert status_reason(response) == (400, "GAME_OVER")
            assert await svc.stub.GetGame(pb.GetGameRequest(game_id=game_id)) == final
            assert await svc.stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id)) == log

    run(go())


def test_request_id_longer_than_64_characters_is_invalid(redis_url: str) -> None:
    """requestId is any string up to 64 characters: 65 is INVALID_ARGUMENT
    (ApplyMove and CreateGame, HTTP 400) and changes nothing; 64 is accepted,
    counted in characters, not bytes."""

    async def go() -> None:
        async with instance(RedisStore(redis_url)) as svc:
            created = await svc.stub.CreateGame(
                pb.CreateGameRequest(ruleset=SHORT, players=people(2), seed="rid")
            )
            game_id = created.game.game_id
            tokens = {s.seat: s.token for s in created.seats}

            async def state() -> tuple[pb.GameView, pb.GetGameLogResponse]:
                view = await svc.stub.GetGame(pb.GetGameRequest(game_id=game_id))
                log = await svc.stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id))
                return view, log

            for too_long, just_right in (("r" * 65, "r" * 64), ("é" * 65, "é" * 64)):
                before, log = await state()
                token = tokens[before.current_seat]
                legal = await svc.stub.ListLegalMoves(
                    pb.ListLegalMovesRequest(game_id=game_id), metadata=bearer(token)
                )
                move = pick(legal.moves).move
                code, reason, _ = await expect_error(
                    lambda m=move, t=token, r=too_long: svc.stub.ApplyMove(
                        pb.ApplyMoveRequest(game_id=game_id, move=m, request_id=r),
                        metadata=bearer(t),
                    )
                )
                assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT")
                response = await svc.http.post(
                    f"/v1/games/{game_id}/moves",
                    json={"move": json_format.MessageToDict(move), "requestId": too_long},
                    headers=auth(token),
                )
                assert status_reason(response) == (400, "INVALID_ARGUMENT")
                code, reason, _ = await expect_error(
                    lambda r=too_long: svc.stub.CreateGame(
                        pb.CreateGameRequest(ruleset=SHORT, players=people(2), request_id=r)
                    )
                )
                assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT")
                assert await state() == (before, log)
                request = pb.ApplyMoveRequest(game_id=game_id, move=move, request_id=just_right)
                applied = await svc.stub.ApplyMove(request, metadata=bearer(token))
                assert applied.game.version == before.version + 1
                assert await svc.stub.ApplyMove(request, metadata=bearer(token)) == applied
            made = await svc.stub.CreateGame(
                pb.CreateGameRequest(ruleset=SHORT, players=people(2), request_id="c" * 64)
            )
            assert made.game.version == 0

    run(go())
