"""``railyard serve``: one process serving gRPC and HTTP over one GameApp."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
from collections.abc import Iterator

import uvicorn

from service.app import GameApp
from service.grpc_server import create_grpc_server
from service.settings import Settings
from service.store import Store
from service.store.memory import MemoryStore
from service.store.resp import redact_url

log = logging.getLogger("railyard")


class _QuietServer(uvicorn.Server):
    """uvicorn without its own signal handling: this process stops both servers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def make_store(settings: Settings) -> Store:
    """Redis when a URL is configured; else the in-process memory store."""
    if settings.redis_url:
        from service.store.redis import RedisStore

        return RedisStore(
            settings.redis_url, game_ttl=settings.game_ttl, request_ttl=settings.request_ttl
        )
    return MemoryStore(game_ttl=settings.game_ttl, request_ttl=settings.request_ttl)


async def serve(settings: Settings, ready: asyncio.Event | None = None) -> None:
    """Run until SIGTERM/SIGINT, then stop gracefully (in-flight calls finish)."""
    store = make_store(settings)
    where = redact_url(settings.redis_url) if settings.redis_url else "in-process memory"
    log.info("store: %s (%s)", store.name, where)
    app = GameApp(store, settings)
    watches_closing = asyncio.Event()
    grpc_server, grpc_port = create_grpc_server(
        app, settings.host, settings.grpc_port, watches_closing
    )
    from service.http_limits import limited_protocol
    from service.http_server import close_streams, create_http_app

    http_api = create_http_app(app)
    config = uvicorn.Config(
        http_api,
        host=settings.host,
        port=settings.http_port,
        # httptools (uvicorn's pick) within the connection, head and timeout limits.
        http=limited_protocol(settings),
        timeout_keep_alive=settings.idle_timeout,
        log_level=settings.log_level.lower(),
        # JSON logs: uvicorn's loggers reach the process's one handler.
        log_config=None if settings.log_format == "json" else uvicorn.config.LOGGING_CONFIG,
        access_log=False,
        lifespan="off",
        # Watch streams only end with their game: without a bound, one open
        # SSE watcher would hold SIGTERM forever. Clients resume elsewhere with
        # Last-Event-ID.
        timeout_graceful_shutdown=5,
    )
    http_server = _QuietServer(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await grpc_server.start()
    http_task = asyncio.create_task(http_server.serve())
    while not http_server.started and not http_task.done():
        await asyncio.sleep(0.01)
    if http_task.done():
        await grpc_server.stop(None)
        await http_task  # re-raises the bind error
    log.info(
        "serving gRPC on %s:%d and HTTP on %s:%d",
        settings.host,
        grpc_port,
        settings.host,
        settings.http_port,
    )
    # Everything alive now (modules, servers, caches) lives as long as the
    # process: keep it out of the collector's way, so the garbage of each
    # request is collected without rescanning it.
    gc.collect()
    gc.freeze()
    if ready is not None:
        ready.set()
    await stop.wait()
    log.info("shutting down: finishing in-flight calls")
    # Open watchers, ended between two versions, reconnect elsewhere and resume
    # exactly: SSE with a last comment, gRPC with UNAVAILABLE.
    close_streams(http_api)
    watches_closing.set()
    http_server.should_exit = True
    await asyncio.gather(grpc_server.stop(grace=5), http_task)
    app.close()
    await store.close()
    log.info("stopped")
