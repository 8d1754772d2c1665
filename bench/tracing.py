"""What tracing costs a move: the same turns with tracing off and on, interleaved.

    .venv/bin/python bench/tracing.py [--turns N] [--repeat R] [--transport http|grpc]
                                      [--modes off,on] [--redis-url URL] [--root DIR]

A turn is one person's ListLegalMoves then ApplyMove (two-person games, played
to their end, then a new one), over a real transport in this one process: HTTP
as raw ASGI calls into ``create_http_app`` (no sockets: the app's own cost),
gRPC through a real loopback server and client. What is measured is the
process's CPU time per turn (every thread: the batch span processor's export
thread counts), median of ``--repeat`` runs of each mode, the modes taking
turns run by run so that the machine's drift falls on both.

* off: no TracerProvider (the default when no OTEL_* variable asks for one);
* on: an SDK TracerProvider with a BatchSpanProcessor and an exporter that
  drops what it is given (OTLP without the network).

``--root`` serves the app of another checkout (the same benchmark before a
change; only ``--modes off`` for one that predates tracing).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

_HERE: Final = Path(__file__).resolve().parent
# Run as a script, bench/ comes first on sys.path: put the repository root
# (or --root) there instead, so that ``service`` is the package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
_ROOT = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--root=")), str(_HERE.parent))
sys.path.insert(0, _ROOT)

import grpc  # noqa: E402
import orjson  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import (  # noqa: E402
    BatchSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from starlette.types import Message as ASGIMessage  # noqa: E402

from railyard_api import game_service_pb2 as pb  # noqa: E402
from railyard_api import game_service_pb2_grpc as pb_grpc  # noqa: E402
from service.app import GameApp  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.store import Store  # noqa: E402
from service.store.memory import MemoryStore  # noqa: E402
from service.transports.grpc.server import create_grpc_server  # noqa: E402
from service.transports.http.server import create_http_app  # noqa: E402

RULES: Final = {"setMax": 9, "handSize": 10, "rounds": 1}


class DroppingExporter(SpanExporter):
    """Takes every batch and sends it nowhere: the export minus the network."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


def make_store(redis_url: str | None) -> Store:
    if redis_url:
        from service.store.redis import RedisStore

        return RedisStore(redis_url)
    return MemoryStore()


class HttpTurns:
    """Turns as raw ASGI calls into the HTTP app."""

    def __init__(self, app: GameApp) -> None:
        self.api = create_http_app(app)

    async def call(self, method: str, path: str, token: str | None = None, body: Any = None) -> Any:
        raw = orjson.dumps(body) if body is not None else b""
        headers = [(b"content-type", b"application/json")]
        if token:
            headers.append((b"authorization", f"Bearer {token}".encode()))
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "headers": headers,
            "client": ("127.0.0.1", 5000),
            "server": ("127.0.0.1", 8080),
        }
        sent = False
        chunks: list[bytes] = []
        status = 0

        async def receive() -> ASGIMessage:
            nonlocal sent
            if sent:
                await asyncio.sleep(3600)
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}

        async def send(message: ASGIMessage) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.api(scope, receive, send)
        answer = orjson.loads(b"".join(chunks))
        if status != 200:
            raise RuntimeError(f"{method} {path}: {status} {answer}")
        return answer

    async def new_game(self) -> tuple[str, dict[int, str], int]:
        created = await self.call("POST", "/v1/games", body={"players": [{}, {}], "ruleset": RULES})
        tokens = {s.get("seat", 0): s["token"] for s in created["seats"]}
        return created["game"]["gameId"], tokens, created["game"].get("currentSeat", 0)

    async def turn(self, game_id: str, token: str) -> tuple[bool, int]:
        """One turn; (the game is over, the next seat)."""
        legal = await self.call("GET", f"/v1/games/{game_id}/legal-moves", token)
        move = legal["moves"][0]["move"]
        answer = await self.call("POST", f"/v1/games/{game_id}/moves", token, {"move": move})
        game = answer["game"]
        return game.get("status") == "GAME_STATUS_FINISHED", game.get("currentSeat", 0)

    async def close(self) -> None:
        return None


class GrpcTurns:
    """Turns through a real loopback gRPC server."""

    def __init__(self, app: GameApp) -> None:
        self.server, port = create_grpc_server(app, "127.0.0.1", 0)
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        self.stub = pb_grpc.GameServiceStub(self.channel)

    async def start(self) -> None:
        await self.server.start()

    async def new_game(self) -> tuple[str, dict[int, str], int]:
        created = await self.stub.CreateGame(
            pb.CreateGameRequest(
                ruleset=pb.Ruleset(set_max=9, hand_size=10, rounds=1), players=[pb.Player()] * 2
            )
        )
        tokens = {s.seat: s.token for s in created.seats}
        return created.game.game_id, tokens, created.game.current_seat

    async def turn(self, game_id: str, token: str) -> tuple[bool, int]:
        auth = (("authorization", f"Bearer {token}"),)
        legal = await self.stub.ListLegalMoves(
            pb.ListLegalMovesRequest(game_id=game_id), metadata=auth
        )
        answer = await self.stub.ApplyMove(
            pb.ApplyMoveRequest(game_id=game_id, move=legal.moves[0].move), metadata=auth
        )
        return answer.game.status == pb.GAME_STATUS_FINISHED, answer.game.current_seat

    async def close(self) -> None:
        await self.channel.close(None)
        await self.server.stop(None)


async def measure(mode: str, transport: str, turns: int, redis_url: str | None) -> float:
    """CPU seconds per turn of ``turns`` turns with tracing ``mode``."""
    store = make_store(redis_url)
    provider: TracerProvider | None = None
    settings = Settings(rate_limit=0, bot_processes=0)
    if mode == "on":
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(DroppingExporter()))
        app = GameApp(store, settings, tracer_provider=provider)
    else:
        app = GameApp(store, settings)
    driver: HttpTurns | GrpcTurns
    if transport == "http":
        driver = HttpTurns(app)
    else:
        driver = GrpcTurns(app)
        await driver.start()
    try:
        game_id, tokens, seat = await driver.new_game()
        await driver.turn(game_id, tokens[seat])  # warm: first calls import and cache
        game_id, tokens, seat = await driver.new_game()
        begun = time.process_time()
        for _ in range(turns):
            over, seat = await driver.turn(game_id, tokens[seat])
            if over:
                game_id, tokens, seat = await driver.new_game()
        if provider is not None:
            provider.force_flush()  # the export of these turns' spans is theirs
        spent = time.process_time() - begun
    finally:
        await driver.close()
        app.close()
        await store.close()
        if provider is not None:
            provider.shutdown()
    return spent / turns


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--transport", choices=("http", "grpc"), default="http")
    parser.add_argument("--modes", default="off,on", help="off, on, or both (interleaved)")
    parser.add_argument("--redis-url", default=None, help="a Redis store (else in-process)")
    parser.add_argument("--root", default=None, help="serve this checkout's service package")
    opts = parser.parse_args(argv)
    modes = [m.strip() for m in opts.modes.split(",") if m.strip()]
    results: dict[str, list[float]] = {mode: [] for mode in modes}
    for run in range(opts.repeat):
        for mode in modes if run % 2 == 0 else reversed(modes):
            results[mode].append(
                asyncio.run(measure(mode, opts.transport, opts.turns, opts.redis_url))
            )
    store = "redis" if opts.redis_url else "memory"
    print(f"{opts.transport}, {store} store, {opts.turns} turns x {opts.repeat} runs ({_ROOT})")
    medians = {}
    for mode, values in results.items():
        medians[mode] = statistics.median(values)
        runs = " ".join(f"{v * 1e6:.0f}" for v in values)
        print(f"  tracing {mode:<3}: {medians[mode] * 1e6:7.0f} us CPU per turn (runs: {runs})")
    if "off" in medians and "on" in medians:
        print(f"  on/off: {medians['on'] / medians['off']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
