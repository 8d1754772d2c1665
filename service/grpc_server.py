"""The gRPC transport: railyard.v1.GameService over grpc.aio, with the
standard health service (SERVING only while the store answers) and server
reflection on the same port. Handlers only translate; GameApp decides."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
from google.protobuf import any_pb2, message_factory
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import DecodeError, Message
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status
from opentelemetry.instrumentation.grpc import aio_server_interceptor

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


async def _abort(context: grpc.aio.ServicerContext[object, object], error: ServiceError) -> None:
    status = to_status(error)
    await context.abort(status.code, status.details, status.trailing_metadata)


def _caller(context: grpc.aio.ServicerContext[object, object], proxies: TrustedProxies) -> Caller:
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


def _refusing(
    method: str, behavior: Callable[..., Any], streaming: bool, count: _Count | None
) -> Callable[..., Any]:
    """``behavior``, answering an :class:`_Undecodable` request with its
    error. grpc.aio picks how to run a handler by what it is (a coroutine
    function, an async generator function), so the wrapper is one too."""

    async def refuse(request: _Undecodable, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        if count is not None:
            count(method, request.error.code.name, 0.0)
        tracing.note_error(request.error)
        await _abort(context, request.error)

    if streaming:

        async def stream(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            if isinstance(request, _Undecodable):
                await refuse(request, context)
                return
            # aclosing: a client that goes away closes this generator, and
            # with it the handler's (its finally ends the watch).
            async with contextlib.aclosing(behavior(request, context)) as responses:
                async for response in responses:
                    yield response

        return stream

    async def unary(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        if isinstance(request, _Undecodable):
            await refuse(request, context)
        return await behavior(request, context)

    return unary


def add_servicer(
    server: grpc.aio.Server,
    servicer: object,
    service: ServiceDescriptor,
    count: _Count | None = None,
) -> None:
    """Serve ``servicer``'s methods of ``service`` on ``server``, as the
    generated ``add_*Servicer_to_server`` does, but with a request that does
    not decode answered INVALID_ARGUMENT with the house ErrorInfo (and
    counted by ``count``), not grpc's UNKNOWN. Built from the descriptor, so the
    generated code stays as generated. A method the servicer does not
    implement itself (a plain function of a generated base class) keeps
    grpc's own handling."""
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
            _refusing(method.name, behavior, method.server_streaming, count)
            if serving
            else behavior,
            request_deserializer=_decoder(request) if serving else request.FromString,
            response_serializer=response.SerializeToString,
        )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service.full_name, handlers),)
    )
    # As the generated code does: grpc looks registered methods up by name
    # before it tries the generic handlers (not in grpc-stubs yet).
    server.add_registered_method_handlers(service.full_name, handlers)  # type: ignore[attr-defined]


class GameServicer(pb_grpc.GameServiceServicer):
    def __init__(self, app: GameApp, closing: asyncio.Event | None = None) -> None:
        self.app = app
        #: Set when a graceful shutdown begins: open watches end at once.
        self.closing = closing if closing is not None else asyncio.Event()

    def _caller(self, context: grpc.aio.ServicerContext[object, object]) -> Caller:
        return _caller(context, self.app.proxies)

    async def _run(
        self,
        method: str,
        context: grpc.aio.ServicerContext[object, object],
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
            await _abort(context, error)
            raise  # abort raises; this keeps type checkers content
        except asyncio.CancelledError:
            code = "CANCELLED"  # the client went away
            raise
        finally:
            self.app.metrics.grpc_call(method, code, time.perf_counter() - begun)

    async def CreateGame(  # noqa: N802 (gRPC method names)
        self, request: pb.CreateGameRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.CreateGameResponse:
        return await self._run(
            "CreateGame", context, lambda caller: self.app.create_game(request, caller)
        )

    async def GetGame(  # noqa: N802
        self, request: pb.GetGameRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.GameView:
        return await self._run(
            "GetGame", context, lambda caller: self.app.get_game(request.game_id, caller)
        )

    async def ListLegalMoves(  # noqa: N802
        self, request: pb.ListLegalMovesRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.ListLegalMovesResponse:
        return await self._run(
            "ListLegalMoves",
            context,
            lambda caller: self.app.list_legal_moves(request.game_id, caller),
        )

    async def ApplyMove(  # noqa: N802
        self, request: pb.ApplyMoveRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.ApplyMoveResponse:
        return await self._run(
            "ApplyMove", context, lambda caller: self.app.apply_move(request, caller)
        )

    async def WatchGame(  # noqa: N802
        self, request: pb.WatchGameRequest, context: grpc.aio.ServicerContext[object, object]
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
            await _abort(context, error)
        finally:
            if events is not None:
                await events.aclose()
            self.app.metrics.grpc_call("WatchGame", code, 0.0)

    async def GetGameLog(  # noqa: N802
        self, request: pb.GetGameLogRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.GetGameLogResponse:
        return await self._run(
            "GetGameLog", context, lambda caller: self.app.get_game_log(request.game_id, caller)
        )

    async def ListRulesets(  # noqa: N802
        self, request: pb.ListRulesetsRequest, context: grpc.aio.ServicerContext[object, object]
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
        context: grpc.aio.ServicerContext[object, object],
    ) -> health_pb2.HealthCheckResponse:
        if request.service not in self._KNOWN:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"unknown service {request.service!r}")
        return health_pb2.HealthCheckResponse(status=await self._status())

    async def Watch(  # noqa: N802
        self,
        request: health_pb2.HealthCheckRequest,
        context: grpc.aio.ServicerContext[object, object],
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
) -> tuple[grpc.aio.Server, int]:
    """A gRPC server (not started) for ``app``, and the port it bound (0: any
    free port). Setting ``closing`` ends every open WatchGame stream with
    UNAVAILABLE (SERVER_SHUTTING_DOWN), between two versions: set it when a
    graceful shutdown begins, as ``Server.stop`` would otherwise wait out its
    grace period for them. The connection limits are ``app.settings``'."""
    # A server span per call, joined to the caller's trace by its traceparent
    # metadata; not installed when tracing is off (nothing to pay per call).
    interceptors = (
        # (untyped in the instrumentation package)
        [aio_server_interceptor(tracer_provider=app.tracer_provider)]  # type: ignore[no-untyped-call]
        if app.tracer_provider is not None
        else []
    )
    server = grpc.aio.server(options=grpc_options(app.settings), interceptors=interceptors)
    add_servicer(
        server,
        GameServicer(app, closing),
        pb.DESCRIPTOR.services_by_name["GameService"],
        app.metrics.grpc_call,
    )
    add_servicer(server, StoreHealth(app), health_pb2.DESCRIPTOR.services_by_name["Health"])
    reflection.enable(
        server, (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name)
    )
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"could not bind gRPC to {host}:{port}")
    return server, bound
