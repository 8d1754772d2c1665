"""The floor of the service benchmark: the same server stack, no rules.

    .venv/bin/python bench/service_floor.py --grpc-port P --http-port Q --redis-url URL

One process, exactly as ``railyard serve`` runs (``asyncio.run`` with the
default event loop; grpc.aio's server on that loop, with the service's
channel arguments and handlers (service.transports.grpc.server); uvicorn
serving a Starlette app inside the same loop), whose ApplyMove does only the
Redis round trips a real apply-move does, through the service's own
:class:`~service.store.redis.RedisStore` (same pool, same scripts): one
``load`` (HMGET of state, version, meta) and one ``commit`` (EVALSHA of the
compare-and-set script: HSET the state blob back with version + 1, XADD a
tile-played and a turn-started event, PEXPIRE). No token check, no JSON or
rules work, a tiny response. Keys live under the ``floor`` prefix
(``floor:{<game id>}:g``), which ``bench/service.py`` seeds from the real
games, so the very same requests (real game ids in path or message) drive it.

* gRPC: ``/railyard.v1.GameService/ApplyMove`` (served through
  ``service.transports.grpc.server.service_handler`` as the service's methods are; the
  ``authorization`` metadata is read);
* HTTP: ``POST /v1/games/{gameId}/moves`` (body read, not parsed), a route
  of an included router as the service serves it, and ``GET /healthz``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

# Run as a script, bench/ comes first on sys.path and bench/service.py would
# shadow the ``service`` package: put the repository root there instead.
_HERE: Final = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import contextlib  # noqa: E402
import logging  # noqa: E402
import signal  # noqa: E402
from collections.abc import Iterator  # noqa: E402

import grpc  # noqa: E402
import uvicorn  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse, Response  # noqa: E402
from starlette.routing import Route  # noqa: E402

from railyard_api import game_service_pb2 as pb  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.store import Commit, StoredEvent  # noqa: E402
from service.store.redis import RedisStore  # noqa: E402
from service.transports.grpc.server import Context, channel_options, service_handler  # noqa: E402
from service.transports.http.server import json_response, scope_header  # noqa: E402

PREFIX: Final = "floor"

#: What a typical play commits: the tile played and the next seat's turn.
_PLAYED: Final = pb.GameEvent(
    tile_played=pb.TilePlayed(seat=1, tile=pb.Tile(a=5, b=12), train=pb.TrainRef(seat=1))
)
_TURN: Final = pb.GameEvent(turn_started=pb.TurnStarted(seat=2))


def _event(template: pb.GameEvent, version: int) -> bytes:
    event = pb.GameEvent()
    event.CopyFrom(template)
    event.version = version
    return event.SerializeToString()


class Floor:
    """An apply-move that only loads and commits."""

    def __init__(self, store: RedisStore) -> None:
        self.store = store

    async def apply(self, game_id: str) -> int:
        """The new version, or -1 when the game is unknown or the race was lost."""
        record = await self.store.load(game_id)
        if record is None:
            return -1
        version = record.version + 1
        events = [
            StoredEvent(version, 1, _event(_PLAYED, version)),
            StoredEvent(version, 2, _event(_TURN, version)),
        ]
        result = await self.store.commit(
            game_id, record.version, version, record.state, events, None, None
        )
        return version if result is Commit.OK else -1


class FloorServicer:
    def __init__(self, floor: Floor) -> None:
        self.floor = floor

    async def ApplyMove(  # noqa: N802 (gRPC method names)
        self, request: pb.ApplyMoveRequest, context: Context
    ) -> pb.ApplyMoveResponse:
        _token = dict(context.invocation_metadata() or ()).get("authorization")
        version = await self.floor.apply(request.game_id)
        if version < 0:
            await context.abort(grpc.StatusCode.ABORTED, "floor: lost the race or no game")
        return pb.ApplyMoveResponse(game=pb.GameView(version=version))


def create_http_app(floor: Floor) -> Starlette:
    """ApplyMove is the first route, an endpoint taking the Request, under
    Starlette's middleware, as the service serves it (the same body reader,
    header lookup and response objects)."""

    async def apply_move(request: Request) -> Response:
        await request.body()
        _token = scope_header(request.scope, b"authorization")
        version = await floor.apply(request.path_params["gameId"])
        if version < 0:
            return JSONResponse({"code": 10, "message": "floor: lost the race"}, status_code=409)
        return json_response({"game": {"version": str(version)}})

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    return Starlette(
        routes=[
            Route("/v1/games/{gameId}/moves", apply_move, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
        ]
    )


class _QuietServer(uvicorn.Server):
    """uvicorn without its own signal handling (as service.ops.serve does it)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve(host: str, grpc_port: int, http_port: int, redis_url: str) -> None:
    store = RedisStore(redis_url, prefix=PREFIX)
    floor = Floor(store)
    # The server and options of service.transports.grpc.server.create_grpc_server.
    server = grpc.aio.server(options=channel_options(Settings()))
    servicer = FloorServicer(floor)  # only ApplyMove is served
    server.add_generic_rpc_handlers(
        (
            service_handler(
                servicer,
                pb.DESCRIPTOR.services_by_name["GameService"],
                lambda method, code, seconds: None,
            ),
        )
    )
    server.add_insecure_port(f"{host}:{grpc_port}")
    # The uvicorn options of service.ops.serve.serve.
    config = uvicorn.Config(
        create_http_app(floor),
        host=host,
        port=http_port,
        log_level="warning",
        access_log=False,
        lifespan="off",
    )
    http_server = _QuietServer(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await server.start()
    http_task = asyncio.create_task(http_server.serve())
    await stop.wait()
    http_server.should_exit = True
    await asyncio.gather(server.stop(grace=2), http_task)
    await store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--grpc-port", type=int, required=True)
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--redis-url", required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(serve(args.host, args.grpc_port, args.http_port, args.redis_url))
    return 0


if __name__ == "__main__":
    sys.exit(main())
