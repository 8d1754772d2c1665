"""``railyard serve``: one process serving gRPC and HTTP over one GameApp."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import resource
import signal
import socket
import ssl
from collections.abc import Iterator
from typing import Any, Final

import uvicorn

import engine.native
from service.app import GameApp
from service.app.background import BackgroundPlayer
from service.ops import tracing
from service.ops.sockets import bound_socket, shares_ports
from service.ops.telemetry import LogTally
from service.settings import Settings
from service.store import Store
from service.store.memory import MemoryStore
from service.store.resp import redact_url
from service.transports.grpc.server import create_grpc_server

log = logging.getLogger("railyard")

#: Descriptors the process needs besides its connections: the listening
#: sockets, Redis connections, the bot workers' pipes, the log, gRPC's own
#: (epoll, wake-ups). An idle process holds about 16.
OWN_DESCRIPTORS: Final = 128

#: How asyncio's loop reports a failed accept() (EMFILE, ENFILE, ENOBUFS,
#: ENOMEM) to its exception handler.
ACCEPT_FAILED: Final = "socket.accept() out of system resource"


class StartupError(Exception):
    """A configuration this host cannot serve: the process does not start."""


def where_to_go(host: str, http_port: int, grpc_port: int, *, tls: bool) -> str:
    """The line that says, once serving, where to go: the web table, the API
    docs and the gRPC port, at an address to open on this machine. A host of
    every interface (0.0.0.0, ::) is not one a browser can open: its
    loopback is shown instead, and the line says it listens on all of them."""
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    everywhere = bare in ("", "0.0.0.0", "::")
    if everywhere:
        # localhost, not 127.0.0.1, for "::": it names the IPv6 loopback too.
        address = "localhost" if ":" in bare else "127.0.0.1"
    else:
        address = f"[{bare}]" if ":" in bare else bare
    web = f"{'https' if tls else 'http'}://{address}:{http_port}"
    line = (
        f"ready: the table at {web}/, the API docs at {web}/docs, "
        f"gRPC{' (TLS)' if tls else ''} on {address}:{grpc_port}"
    )
    return f"{line} (listening on all interfaces)" if everywhere else line


def _listen_http(settings: Settings) -> socket.socket:
    """The HTTP port's socket, bound (uvicorn listens on it), or a
    StartupError naming the setting to change."""
    try:
        sock = bound_socket(settings.host, settings.http_port, reuse_port=shares_ports(settings))
    except OSError as exc:
        raise StartupError(
            f"HTTP cannot listen on {settings.host}:{settings.http_port} ({exc.strerror}): "
            "choose another with --http-port / RAILYARD_HTTP_PORT (or --host / RAILYARD_HOST)"
        ) from None
    sock.set_inheritable(True)
    return sock


class AcceptFailureLog:
    """The loop's exception handler. Out of descriptors, asyncio reports
    every failed accept() (one per connection waiting in the listen backlog,
    again every second while it lasts), each a traceback by default: a log
    flood of its own (bench/reports/2026-12-02-figures-from-the-code.md).
    These are tallied (the first logged at once, then one line per
    ``interval`` with the count); anything else goes to the default handler."""

    def __init__(self, interval: float = 60.0) -> None:
        self.tally = LogTally(
            log, "accept() failed: new connections wait in the backlog", interval, logging.ERROR
        )

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") != ACCEPT_FAILED:
            loop.default_exception_handler(context)
            return
        self.tally.add(loop, str(context.get("exception")))


#: grpc.aio's logger, and the error it logs (with a traceback, as
#: "ExecuteBatchError raised in core by servicer method [...]") for an answer
#: it could not send because the client had gone: a client, or an attacker,
#: that leaves in the middle of its answers makes one each.
GRPC_AIO_LOGGER: Final = "grpc._cython.cygrpc"
CLIENT_GONE: Final = "ExecuteBatchError"


class ClientGoneLog(logging.Filter):
    """A filter on grpc.aio's logger: its ERROR with a traceback for each
    answer a departed client did not take is tallied instead (the first
    logged at once, then one line per ``interval`` with the count, at INFO:
    the client's doing, not the server's); every other record passes."""

    def __init__(self, loop: asyncio.AbstractEventLoop, interval: float = 60.0) -> None:
        super().__init__()
        self.loop = loop
        self.tally = LogTally(
            logging.getLogger("railyard.grpc"),
            "gRPC answer not sent: its client had gone",
            interval,
            logging.INFO,
        )

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if CLIENT_GONE not in message or "servicer method" not in message:
            return True
        self.tally.add(self.loop, message.rpartition("servicer method")[2].strip())
        return False


def descriptors_needed(settings: Settings) -> int:
    """Descriptors a process with ``settings`` may need at once."""
    return settings.max_connections + settings.grpc_max_connections + OWN_DESCRIPTORS


def raise_descriptor_limit(settings: Settings) -> int:
    """Raise the soft RLIMIT_NOFILE to the hard one, and return it: connections
    beyond the soft limit (often 1,024) would fail in accept() while the host
    allows more. StartupError when the connection caps do not fit in it."""
    needed = descriptors_needed(settings)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # An unlimited hard limit (not Linux's way for NOFILE): ask for what is needed.
    target = max(soft, needed) if hard == resource.RLIM_INFINITY else hard
    if soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as exc:
            log.warning("could not raise the descriptor limit from %d to %d: %s", soft, target, exc)
    if needed > soft:
        raise StartupError(
            f"the connection caps need {needed} file descriptors "
            f"(max_connections {settings.max_connections} + grpc_max_connections "
            f"{settings.grpc_max_connections} + {OWN_DESCRIPTORS} for the process), but "
            f"only {soft} are allowed (ulimit -n; a container's nofile limit): lower "
            "RAILYARD_MAX_CONNECTIONS / RAILYARD_GRPC_MAX_CONNECTIONS or raise the limit"
        )
    return soft


class _QuietServer(uvicorn.Server):
    """uvicorn without its own signal handling: this process stops both servers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _tls_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's own TLS settings for the HTTP port (none: cleartext); with
    a client CA, a client must present a certificate it signed."""
    if not settings.tls_cert:
        return {}
    options: dict[str, Any] = {
        "ssl_certfile": settings.tls_cert,
        "ssl_keyfile": settings.tls_key,
    }
    if settings.tls_client_ca:
        options["ssl_ca_certs"] = settings.tls_client_ca
        options["ssl_cert_reqs"] = ssl.CERT_REQUIRED
    return options


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
    descriptors = raise_descriptor_limit(settings)
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(AcceptFailureLog())
    # Tracing and any metric push, as the OTEL_* environment asks (nothing
    # when it asks for nothing), before the app that reads them.
    try:
        metric_readers = tracing.configure_from_env()
    except ValueError as exc:
        raise StartupError(f"OpenTelemetry: {exc}") from None
    store = make_store(settings)
    where = redact_url(settings.redis_url) if settings.redis_url else "in-process memory"
    log.info("store: %s (%s)", store.name, where)
    log.info("engine: %s", engine.native.DESCRIPTION)
    # Both ports first: one that is taken is one line naming its setting,
    # not uvicorn's traceback after gRPC already started.
    http_socket = _listen_http(settings)
    app = GameApp(store, settings, metric_readers=metric_readers)
    watches_closing = asyncio.Event()
    try:
        grpc_server, grpc_port = create_grpc_server(
            app, settings.host, settings.grpc_port, watches_closing
        )
    except (OSError, RuntimeError):  # (grpc raises RuntimeError for a port it cannot bind)
        http_socket.close()
        app.close()
        raise StartupError(
            f"gRPC cannot listen on {settings.host}:{settings.grpc_port} (in use, or not an "
            "address of this host): choose another with --grpc-port / RAILYARD_GRPC_PORT "
            "(or --host / RAILYARD_HOST)"
        ) from None
    from service.transports.http.limits import limited_protocol
    from service.transports.http.server import close_streams, create_http_app

    http_api = create_http_app(app)
    config = uvicorn.Config(
        http_api,
        host=settings.host,
        port=settings.http_port,
        # httptools (uvicorn's pick) within the connection, head and timeout limits.
        http=limited_protocol(settings),
        timeout_keep_alive=settings.idle_timeout,
        log_level=settings.log_level.lower(),
        # No logging config of uvicorn's own: its handlers would write past
        # the process's one handler and its redaction (configure_logging).
        log_config=None,
        access_log=False,
        # Who the client is behind a proxy is service.app.identity's to say, from
        # --trusted-proxies only: uvicorn would believe X-Forwarded-For from
        # any peer on 127.0.0.1 (its forwarded_allow_ips default).
        proxy_headers=False,
        lifespan="off",
        # Watch streams only end with their game: without a bound, one open
        # SSE watcher would hold SIGTERM forever. Clients resume elsewhere with
        # Last-Event-ID.
        timeout_graceful_shutdown=5,
        **_tls_options(settings),
    )
    http_server = _QuietServer(config)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await grpc_server.start()
    http_task = asyncio.create_task(http_server.serve(sockets=[http_socket]))
    while not http_server.started and not http_task.done():
        await asyncio.sleep(0.01)
    if http_task.done():
        await grpc_server.stop(None)
        await http_task  # re-raises the bind error
    # The port bound, not the one asked for: port 0 is any free one.
    http_port = http_socket.getsockname()[1]
    log.info(
        "serving gRPC on %s:%d and HTTP on %s:%d%s",
        settings.host,
        grpc_port,
        settings.host,
        http_port,
        f" (worker pid {os.getpid()})" if shares_ports(settings) else "",
    )
    log.info(
        "limits: %d HTTP + %d gRPC connections (%d descriptors allowed); heads %d bytes, "
        "%d fields, %g s; bodies %d bytes, %g s; idle %d s HTTP, %g s gRPC",
        settings.max_connections,
        settings.grpc_max_connections,
        descriptors,
        settings.max_header_bytes,
        settings.max_headers,
        settings.header_timeout,
        settings.max_body_bytes,
        settings.body_timeout,
        settings.idle_timeout,
        settings.grpc_idle_timeout,
    )
    # Everything alive now (modules, servers, caches) lives as long as the
    # process: keep it out of the collector's way, so the garbage of each
    # request is collected without rescanning it.
    gc.collect()
    gc.freeze()
    # A move allocates thousands of short-lived objects: at the default 700
    # the young generation was collected several times a move, each time
    # rescanning the in-flight requests' live objects.
    gc.set_threshold(10_000, 10, 10)
    # Due work (games of bots only, turn timers) is the store's: every
    # replica claims from it, so this one's loop is one of many.
    client_gone = ClientGoneLog(loop)
    logging.getLogger(GRPC_AIO_LOGGER).addFilter(client_gone)
    background = BackgroundPlayer(app)
    background.start()
    # Webhooks: GameApp's emit calls queue the events in the store; every
    # replica's task delivers from the queues (service.app.webhooks).
    app.webhooks.start()
    if not shares_ports(settings):  # (a worker's supervisor says it, once)
        tls = bool(settings.tls_cert)
        log.info("%s", where_to_go(settings.host, http_port, grpc_port, tls=tls))
    if ready is not None:
        ready.set()
    await stop.wait()
    log.info("shutting down: finishing in-flight calls")
    # Open watchers, ended between two versions, reconnect elsewhere and resume
    # exactly: SSE with a last comment, gRPC with UNAVAILABLE.
    close_streams(http_api)
    watches_closing.set()
    http_server.should_exit = True
    await asyncio.gather(
        grpc_server.stop(grace=5),
        http_task,
        background.stop(grace=5),
        app.webhooks.stop(grace=5),
    )
    app.close()
    await store.close()
    tracing.shutdown()  # the last spans leave
    logging.getLogger(GRPC_AIO_LOGGER).removeFilter(client_gone)
    log.info("stopped")
