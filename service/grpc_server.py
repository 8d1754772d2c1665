"""The gRPC transport: railyard.v1.GameService, with the standard health
service (SERVING only while the store answers) and server reflection on the
same port. Handlers only translate; GameApp decides.

grpc's threaded server (``grpc.server``), not grpc.aio's: each call arrives
on a thread of its pool, and its handler, a coroutine, runs on the event
loop that serves the store and HTTP (:class:`LoopCalls`) while the thread
waits. Measured under bench/service.py's load (50 clients, whole games), it
cost 0.2 ms less server CPU a move than grpc.aio, where every call takes
four completion-queue events, each handed by a poller thread to the loop
over a socket, three tasks and two ``asyncio.wait`` (README: "Where a gRPC
call's server CPU goes"). The price is a thread per call in flight, and a
thread per open stream for its whole life (:func:`call_threads`)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterator,
    Sequence,
)
from typing import Any, Final, NoReturn, TypeVar

import grpc
from google.protobuf import any_pb2, message_factory
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import DecodeError, Message
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status
from opentelemetry.instrumentation.grpc import server_interceptor

from service import errors, reflection, tracing
from service.api import game_service_pb2 as pb
from service.api import game_service_pb2_grpc as pb_grpc
from service.app import Caller, GameApp
from service.errors import DOMAIN, ServiceError
from service.identity import TrustedProxies, api_key_of, grpc_peer_host, seat_token
from service.settings import Settings
from service.streams import until_closed

log = logging.getLogger("railyard.grpc")
T = TypeVar("T")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["GameService"].full_name


def to_status(error: ServiceError) -> grpc.Status:
    """A ServiceError as a grpc Status with a google.rpc.Status + ErrorInfo detail."""
    info = error_details_pb2.ErrorInfo(reason=error.reason, domain=DOMAIN, metadata=error.metadata)
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(code=error.code.value[0], message=error.message, details=[detail])
    return rpc_status.to_status(status)


def _abort(context: grpc.ServicerContext, error: ServiceError) -> NoReturn:
    """End the call with ``error``. The threaded server's ``abort`` only
    records the status and raises, so it is called on the loop too: grpc
    sends the status when the exception reaches the call's thread. The
    details go as trailing metadata first (the tracing interceptor's context
    records the code from ``abort``, not from ``abort_with_status``)."""
    status = to_status(error)
    context.set_trailing_metadata(status.trailing_metadata)
    context.abort(status.code, status.details)


def _caller(context: grpc.ServicerContext, proxies: TrustedProxies) -> Caller:
    """The bearer token (:func:`~service.identity.seat_token`: a malformed
    header raises UNAUTHENTICATED) and the client's address: the peer's host
    (every connection has its own port), through trusted proxies only."""
    authorization: list[str] = []
    api_keys: list[str] = []
    forwarded: str | None = None
    forwarded_for: str | None = None
    for key, value in context.invocation_metadata() or ():
        if not isinstance(value, str):
            continue
        if key == "authorization":
            authorization.append(value)
        elif key == "x-api-key":
            api_keys.append(value)
        elif key == "forwarded":
            forwarded = value
        elif key == "x-forwarded-for":
            forwarded_for = value
    address = grpc_peer_host(context.peer() or "")
    if proxies.networks:
        address = proxies.client(address, forwarded=forwarded, forwarded_for=forwarded_for)
    return Caller(token=seat_token(authorization), address=address, api_key=api_key_of(api_keys))


class _Undecodable:
    """A request whose bytes did not decode (:func:`_decoder`). grpc lets a
    deserializer only return or raise, and what it raises becomes UNKNOWN
    with a traceback in the log; so it returns this, and the handler
    (:func:`_refusing`) answers with the error."""

    __slots__ = ("error",)

    def __init__(self, error: ServiceError) -> None:
        self.error = error


def _decoder(message_class: type[Message]) -> Callable[[bytes], Message | _Undecodable]:
    """``message_class.FromString``, with bytes that are not one (a string
    field that is not UTF-8, a field cut short) an INVALID_ARGUMENT."""
    name = message_class.DESCRIPTOR.full_name

    def decode(raw: bytes) -> Message | _Undecodable:
        try:
            return message_class.FromString(raw)
        except DecodeError as exc:
            return _Undecodable(
                errors.invalid(f"the request does not decode: {exc}", messageType=name)
            )

    return decode


#: Counts a call by method and code (GameApp.metrics.grpc_call's shape).
_Count = Callable[[str, str, float], None]

#: The pool's threads beyond the watches' (:func:`call_threads`): with every
#: watch open, calls past these wait for one. bench/service.py's 50 clients
#: keep about 50 busy; the loop is the limit long before (a pool of 16
#: measured no cheaper).
UNARY_THREADS: Final = 64


def call_threads(settings: Settings) -> int:
    """The pool's size: every WatchGame the app lets open (each holds its
    thread while open; the one past ``max_watchers`` is refused at once) and
    :data:`UNARY_THREADS` besides, which health watches and reflection
    streams share with the unary calls. Threads start as calls need them."""
    return settings.max_watchers + UNARY_THREADS


class _Running:
    """A call's coroutine on the loop, cancelled when the call ends first:
    the client went away, its deadline passed, the server stopped. grpc runs
    the callback on its own thread, so either it sees the future or the
    call's thread sees ``ended``."""

    __slots__ = ("ended", "future")

    def __init__(self, context: grpc.ServicerContext) -> None:
        self.future: concurrent.futures.Future[Any] | None = None
        self.ended = not context.add_callback(self.end)

    def end(self) -> None:
        self.ended = True
        if self.future is not None:
            self.future.cancel()


class LoopCalls:
    """Runs a call's coroutine on the event loop of the store, from the grpc
    thread the call arrived on, which waits for its answer. The context
    (contextvars) of the thread goes with it: the tracing interceptor's span
    is current in the handler."""

    def __init__(self) -> None:
        #: The loop the server started on (:meth:`GrpcServer.start`).
        self.loop: asyncio.AbstractEventLoop | None = None

    def call(self, context: grpc.ServicerContext, work: Coroutine[Any, Any, T]) -> T:
        """``work``'s answer (its exception raised here: grpc answers it)."""
        running = _Running(context)
        if running.ended:
            work.close()
            context.abort(grpc.StatusCode.CANCELLED, "the call ended")
        return self._run(context, running, work)

    def _run(
        self, context: grpc.ServicerContext, running: _Running, work: Coroutine[Any, Any, T]
    ) -> T:
        assert self.loop is not None, "the server has not started"
        future = asyncio.run_coroutine_threadsafe(work, self.loop)
        running.future = future
        if running.ended:
            future.cancel()
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            # The call is over (nothing reaches the client); the abort keeps
            # grpc from logging the exception as the handler's.
            context.abort(grpc.StatusCode.CANCELLED, "the call ended")

    def stream(
        self, context: grpc.ServicerContext, responses: AsyncGenerator[T, None]
    ) -> Iterator[T]:
        """``responses``' items, each awaited on the loop when grpc asks for
        the next: the generator runs no further ahead than the client reads."""
        running = _Running(context)
        idle = False  # suspended at a yield, no step of it on the loop
        try:
            while True:
                item = self._run(context, running, _next(responses))
                if isinstance(item, _Done):
                    return
                idle = True
                yield item
                if running.ended:
                    context.abort(grpc.StatusCode.CANCELLED, "the call ended")
                idle = False
        finally:
            # Left between two items (the call ended, or grpc dropped this
            # generator): closed on the loop, where its finally ends the
            # watch; not waited for, as grpc may drop it on any thread, the
            # loop's included. A step cancelled on the loop ends it there.
            if idle and self.loop is not None and not self.loop.is_closed():
                asyncio.run_coroutine_threadsafe(_close(responses), self.loop)


class _Done:
    """The end of a stream (:func:`_next`)."""


_DONE: Final = _Done()


# Coroutines: run_coroutine_threadsafe takes no other awaitable.
async def _next(responses: AsyncGenerator[T, None]) -> T | _Done:
    try:
        return await anext(responses)
    except StopAsyncIteration:
        return _DONE


async def _close(responses: AsyncGenerator[Any, None]) -> None:
    await responses.aclose()


class GrpcServer:
    """grpc's threaded server with ``settings``' channel arguments, whose
    handlers (:func:`add_servicer`) run on the loop it starts on; started
    and stopped from that loop, as grpc.aio's server is."""

    def __init__(
        self, settings: Settings, interceptors: Sequence[grpc.ServerInterceptor[Any, Any]] = ()
    ) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(
            call_threads(settings), thread_name_prefix="grpc-call"
        )
        self.server = grpc.server(
            self._pool, interceptors=list(interceptors), options=grpc_options(settings)
        )
        self.calls = LoopCalls()

    def bind(self, host: str, port: int) -> int:
        """Listen on ``host:port`` (0: any free port); the port bound."""
        bound = self.server.add_insecure_port(f"{host}:{port}")
        if bound == 0:
            raise OSError(f"could not bind gRPC to {host}:{port}")
        return bound

    async def start(self) -> None:
        self.calls.loop = asyncio.get_running_loop()
        self.server.start()

    async def stop(self, grace: float | None) -> None:
        """Refuse new calls and let those in flight finish for ``grace``
        seconds, then cancel them (None: at once). Waited for on another
        thread: the calls in flight need this loop to finish."""
        stopped = self.server.stop(grace)
        await asyncio.to_thread(stopped.wait)
        self._pool.shutdown(wait=False)


def _threaded(
    method: str,
    behavior: Callable[..., Any],
    streaming: bool,
    count: _Count | None,
    calls: LoopCalls,
) -> Callable[..., Any]:
    """A handler for grpc's threads running ``behavior`` (a coroutine
    function, or an async generator function when ``streaming``) on the
    loop, and answering an :class:`_Undecodable` request with its error."""

    async def refuse(request: _Undecodable, context: grpc.ServicerContext) -> NoReturn:
        if count is not None:
            count(method, request.error.code.name, 0.0)
        tracing.note_error(request.error)
        _abort(context, request.error)

    if streaming:

        def stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            if isinstance(request, _Undecodable):
                calls.call(context, refuse(request, context))
            yield from calls.stream(context, behavior(request, context))

        return stream

    def unary(request: Any, context: grpc.ServicerContext) -> Any:
        if isinstance(request, _Undecodable):
            return calls.call(context, refuse(request, context))
        return calls.call(context, behavior(request, context))

    return unary


def add_servicer(
    server: GrpcServer,
    servicer: object,
    service: ServiceDescriptor,
    count: _Count | None = None,
) -> None:
    """Serve ``servicer``'s methods of ``service`` on ``server``, as the
    generated ``add_*Servicer_to_server`` does, but run on the server's loop
    (the servicer's methods are coroutine and async generator functions),
    and with a request that does not decode answered
    INVALID_ARGUMENT with the house ErrorInfo (and counted by ``count``), not
    grpc's UNKNOWN. Built from the descriptor, so the generated code stays as
    generated. A method the servicer does not implement itself (a plain
    function of a generated base class) keeps grpc's own handling."""
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
    for method in service.methods:
        if method.client_streaming:
            raise ValueError(f"{method.full_name}: client streaming is not served here")
        request = message_factory.GetMessageClass(method.input_type)
        response = message_factory.GetMessageClass(method.output_type)
        behavior = getattr(servicer, method.name)
        serving = inspect.iscoroutinefunction(behavior) or inspect.isasyncgenfunction(behavior)
        handler = (
            grpc.unary_stream_rpc_method_handler
            if method.server_streaming
            else grpc.unary_unary_rpc_method_handler
        )
        handlers[method.name] = handler(
            _threaded(method.name, behavior, method.server_streaming, count, server.calls)
            if serving
            else behavior,
            request_deserializer=_decoder(request) if serving else request.FromString,
            response_serializer=response.SerializeToString,
        )
    server.server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service.full_name, handlers),)
    )


class GameServicer(pb_grpc.GameServiceServicer):
    def __init__(self, app: GameApp, closing: asyncio.Event | None = None) -> None:
        self.app = app
        #: Set when a graceful shutdown begins: open watches end at once.
        self.closing = closing if closing is not None else asyncio.Event()

    def _caller(self, context: grpc.ServicerContext) -> Caller:
        return _caller(context, self.app.proxies)

    async def _run(
        self,
        method: str,
        context: grpc.ServicerContext,
        call: Callable[[Caller], Awaitable[T]],
    ) -> T:
        """``call``'s answer for the caller, or its ServiceError as the call's
        status; timed and counted (telemetry) either way. The caller is read
        in here, not by the handler: a malformed authorization header is a
        ServiceError too, and outside this try it would reach grpc as an
        unexpected exception (UNKNOWN)."""
        begun = time.perf_counter()
        code = "UNKNOWN"  # a bug: grpc answers UNKNOWN
        try:
            answer = await call(self._caller(context))
            code = "OK"
            return answer
        except ServiceError as error:
            code = error.code.name
            tracing.note_error(error)
            _abort(context, error)
        except asyncio.CancelledError:
            code = "CANCELLED"  # the client went away
            raise
        finally:
            self.app.metrics.grpc_call(method, code, time.perf_counter() - begun)

    async def CreateGame(  # noqa: N802 (gRPC method names)
        self, request: pb.CreateGameRequest, context: grpc.ServicerContext
    ) -> pb.CreateGameResponse:
        return await self._run(
            "CreateGame", context, lambda caller: self.app.create_game(request, caller)
        )

    async def GetGame(  # noqa: N802
        self, request: pb.GetGameRequest, context: grpc.ServicerContext
    ) -> pb.GameView:
        return await self._run(
            "GetGame", context, lambda caller: self.app.get_game(request.game_id, caller)
        )

    async def ListLegalMoves(  # noqa: N802
        self, request: pb.ListLegalMovesRequest, context: grpc.ServicerContext
    ) -> pb.ListLegalMovesResponse:
        return await self._run(
            "ListLegalMoves",
            context,
            lambda caller: self.app.list_legal_moves(request.game_id, caller),
        )

    async def ApplyMove(  # noqa: N802
        self, request: pb.ApplyMoveRequest, context: grpc.ServicerContext
    ) -> pb.ApplyMoveResponse:
        return await self._run(
            "ApplyMove", context, lambda caller: self.app.apply_move(request, caller)
        )

    async def WatchGame(  # noqa: N802
        self, request: pb.WatchGameRequest, context: grpc.ServicerContext
    ) -> AsyncIterator[pb.GameEvent]:
        after = request.after_version if request.HasField("after_version") else None
        events: AsyncGenerator[tuple[pb.GameEvent, ...] | None, None] | None = None
        code = "CANCELLED"  # unless it ends otherwise: the client went away
        try:
            # In the try: a malformed authorization header is a ServiceError.
            events = self.app.watch_game(request.game_id, after, self._caller(context))
            # Ended between versions when the server shuts down (without it,
            # grpc would cancel the stream at the grace period's end,
            # wherever it was).
            async for version in until_closed(events, self.closing):
                for event in version or ():  # None: a quiet keep-alive period (HTTP only)
                    yield event
            if self.closing.is_set():
                raise errors.shutting_down()
            code = "OK"
        except ServiceError as error:
            code = error.code.name
            tracing.note_error(error)
            _abort(context, error)
        finally:
            if events is not None:
                await events.aclose()
            self.app.metrics.grpc_call("WatchGame", code, 0.0)

    async def GetGameLog(  # noqa: N802
        self, request: pb.GetGameLogRequest, context: grpc.ServicerContext
    ) -> pb.GetGameLogResponse:
        return await self._run(
            "GetGameLog", context, lambda caller: self.app.get_game_log(request.game_id, caller)
        )

    async def ListRulesets(  # noqa: N802
        self, request: pb.ListRulesetsRequest, context: grpc.ServicerContext
    ) -> pb.ListRulesetsResponse:
        begun = time.perf_counter()
        answer = self.app.list_rulesets()
        self.app.metrics.grpc_call("ListRulesets", "OK", time.perf_counter() - begun)
        return answer


class StoreHealth(health_pb2_grpc.HealthServicer):  # type: ignore[misc]
    """grpc.health.v1: SERVING only while the store answers a ping."""

    _KNOWN = ("", SERVICE_NAME)

    def __init__(self, app: GameApp, poll: float = 1.0) -> None:
        self.app = app
        self.poll = poll

    async def _status(self) -> int:
        serving: int = health_pb2.HealthCheckResponse.SERVING
        not_serving: int = health_pb2.HealthCheckResponse.NOT_SERVING
        return serving if await self.app.ready() else not_serving

    async def Check(  # noqa: N802
        self,
        request: health_pb2.HealthCheckRequest,
        context: grpc.ServicerContext,
    ) -> health_pb2.HealthCheckResponse:
        if request.service not in self._KNOWN:
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown service {request.service!r}")
        return health_pb2.HealthCheckResponse(status=await self._status())

    async def Watch(  # noqa: N802
        self,
        request: health_pb2.HealthCheckRequest,
        context: grpc.ServicerContext,
    ) -> AsyncIterator[health_pb2.HealthCheckResponse]:
        if request.service not in self._KNOWN:
            yield health_pb2.HealthCheckResponse(
                status=health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
            )
            return
        last = None
        while True:
            status = await self._status()
            if status != last:
                yield health_pb2.HealthCheckResponse(status=status)
                last = status
            await asyncio.sleep(self.poll)


def grpc_options(settings: Settings) -> list[tuple[str, int]]:
    """The server's channel arguments: the limits of ``settings``, each of
    which tests/test_limits_server.py sees take effect on a real server."""
    metadata = settings.max_header_bytes
    return [
        # Off (gRPC's default is on) so that a second server on a taken port
        # fails instead of silently sharing it; on for the workers of one
        # `serve --workers N`, which share it on purpose (service.workers).
        ("grpc.so_reuseport", int((settings.workers or 1) > 1)),
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.max_receive_message_length", settings.max_body_bytes),
        # Closed as soon as accepted beyond it (counted from accept to close,
        # handshakes included).
        ("grpc.max_allowed_incoming_connections", settings.grpc_max_connections),
        # From accept until the client's HTTP/2 preface and SETTINGS: a
        # connection that sends nothing is closed then (gRPC's default: 120 s).
        ("grpc.server_handshake_timeout_ms", round(settings.header_timeout * 1000)),
        # gRPC refuses metadata over the hard limit, and over the soft one
        # with a rising probability: the same for both, so it is one limit.
        ("grpc.max_metadata_size", metadata),
        ("grpc.absolute_max_metadata_size", metadata),
        # GOAWAY to a connection with no call open that long.
        ("grpc.max_connection_idle_ms", round(settings.grpc_idle_timeout * 1000)),
    ]


def create_grpc_server(
    app: GameApp, host: str = "[::]", port: int = 0, closing: asyncio.Event | None = None
) -> tuple[GrpcServer, int]:
    """A gRPC server (not started) for ``app``, and the port it bound (0: any
    free port). Setting ``closing`` ends every open WatchGame stream with
    UNAVAILABLE (SERVER_SHUTTING_DOWN), between two versions: set it when a
    graceful shutdown begins, as ``GrpcServer.stop`` would otherwise wait out
    its grace period for them. The connection limits are ``app.settings``'."""
    # A server span per call, joined to the caller's trace by its traceparent
    # metadata; not installed when tracing is off (nothing to pay per call).
    interceptors = (
        # (untyped in the instrumentation package)
        [server_interceptor(tracer_provider=app.tracer_provider)]  # type: ignore[no-untyped-call]
        if app.tracer_provider is not None
        else []
    )
    server = GrpcServer(app.settings, interceptors)
    add_servicer(
        server,
        GameServicer(app, closing),
        pb.DESCRIPTOR.services_by_name["GameService"],
        app.metrics.grpc_call,
    )
    add_servicer(server, StoreHealth(app), health_pb2.DESCRIPTOR.services_by_name["Health"])
    reflection.enable(
        server.server, (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name)
    )
    return server, server.bind(host, port)
