"""The gRPC transport: railyard.v1.GameService on grpcio's asyncio server
(``grpc.aio``), with grpcio-health-checking's health service (SERVING only
while the store answers) and grpcio-reflection's reflection on the same port.
Handlers only translate; GameApp decides.

HTTP/2, TLS and gRPC's framing are grpcio's C core, hardened against
hostile peers by the people who maintain it; what one connection may hold
(streams, metadata, message size, idle time, age, pings) is set through its
channel arguments (:func:`channel_options`, one row each in the docs'
Limits table). Tracing is OpenTelemetry's own server interceptor. What
grpcio costs against the hand-written server this replaced is in
docs/adr/0002-grpc-on-grpcio.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, Final, NoReturn, TypeVar

import grpc
from google.protobuf import any_pb2, message_factory
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import DecodeError, Message
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health_pb2
from grpc_health.v1.health import aio as health_aio  # type: ignore[attr-defined]
from grpc_status import rpc_status

from railyard_api import game_service_pb2 as pb
from railyard_api.fields import build, message_of
from service.app import Caller, GameApp, errors
from service.app.errors import DOMAIN, ServiceError
from service.app.identity import TrustedProxies, api_key_of, grpc_peer_host, seat_token
from service.app.streams import until_closed
from service.ops import tracing
from service.ops.sockets import shares_ports
from service.settings import Settings
from service.transports.grpc import reflection

log = logging.getLogger("railyard.grpc")
T = TypeVar("T")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["GameService"].full_name
HEALTH_SERVICE_NAME = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name

Context = grpc.aio.ServicerContext[Any, Any]


def to_status(error: ServiceError) -> grpc.Status:
    """A ServiceError as a grpc Status with a google.rpc.Status + ErrorInfo detail."""
    info = error_details_pb2.ErrorInfo(reason=error.reason, domain=DOMAIN, metadata=error.metadata)
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(code=error.code.value[0], message=error.message, details=[detail])
    return rpc_status.to_status(status)


async def _abort(context: Context, error: ServiceError) -> NoReturn:
    """End the call with ``error``: its status, with the google.rpc.Status
    (ErrorInfo and all) in ``grpc-status-details-bin``."""
    tracing.note_error(error)
    status = to_status(error)
    await context.abort(status.code, status.details, status.trailing_metadata)
    raise AssertionError("abort returned")  # (grpc.aio's abort always raises)


def _caller(context: Context, proxies: TrustedProxies) -> Caller:
    """The bearer token (:func:`~service.app.identity.seat_token`: a malformed
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


def channel_options(settings: Settings) -> list[tuple[str, int]]:
    """grpcio's channel arguments for the server: every limit on what one
    client may hold or send (docs: Limits)."""
    return [
        # A message past the body limit is refused RESOURCE_EXHAUSTED before
        # it is decoded; compressed messages are checked once inflated.
        ("grpc.max_receive_message_length", settings.max_body_bytes),
        # Metadata past it is refused (RESOURCE_EXHAUSTED); grpc's hard limit
        # is the same, so no metadata past it is ever held.
        ("grpc.max_metadata_size", settings.max_header_bytes),
        ("grpc.absolute_max_metadata_size", settings.max_header_bytes),
        # Streams open at once on one connection: half-open streams cannot
        # pile up past it (the one over is refused with RST_STREAM), and with
        # overload protection a stream the client reset keeps counting until
        # the server is done with it, so a rapid-reset flood cannot start
        # calls faster than they end (tests/test_grpc_floods.py).
        ("grpc.max_concurrent_streams", settings.grpc_max_streams),
        ("grpc.http.overload_protection", 1),
        ("grpc.max_allowed_incoming_connections", settings.grpc_max_connections),
        ("grpc.server_handshake_timeout_ms", int(settings.header_timeout * 1000)),
        # A connection with no call open is closed (GOAWAY); a client
        # reconnects by itself on its next call.
        ("grpc.max_connection_idle_ms", int(settings.grpc_idle_timeout * 1000)),
        # Every connection ends after its age (GOAWAY, its calls given the
        # grace to finish): clients spread again over the replicas, and no
        # connection's state lives forever. Watches resume (after_version).
        ("grpc.max_connection_age_ms", int(settings.grpc_max_connection_age * 1000)),
        ("grpc.max_connection_age_grace_ms", int(settings.grpc_connection_age_grace * 1000)),
        # The server pings a silent connection to find dead peers, and
        # tolerates a client's keepalive pings no more often than every 10 s
        # (grpc's clients default to none; more is a ping flood: GOAWAY
        # ENHANCE_YOUR_CALM after two strikes).
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.keepalive_timeout_ms", 10_000),
        ("grpc.keepalive_permit_without_calls", 0),
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
        ("grpc.http2.max_ping_strikes", 2),
        # Only `serve --workers N`'s workers share the port; otherwise a
        # second server on a taken port fails instead of splitting its calls.
        ("grpc.so_reuseport", 1 if shares_ports(settings) else 0),
    ]


class _Undecodable:
    """A request whose bytes did not decode (:func:`_decoder`). grpc lets a
    deserializer only return or raise, and what it raises becomes an
    INTERNAL status with a traceback in the log; so it returns this, and the
    handler (:func:`_serving`) answers INVALID_ARGUMENT with the house
    ErrorInfo."""

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


def _serving(
    name: str, behavior: Callable[..., Any], streaming: bool, count: _Count | None
) -> Callable[..., Any]:
    """``behavior``, with a request that did not decode (an
    :class:`_Undecodable`) answered with its INVALID_ARGUMENT (and counted)
    before it runs."""

    async def refuse(request: _Undecodable, context: Context) -> NoReturn:
        if count is not None:
            count(name, request.error.code.name, 0.0)
        await _abort(context, request.error)

    if streaming and inspect.isasyncgenfunction(behavior):

        async def stream(request: Any, context: Context) -> AsyncIterator[Any]:
            if isinstance(request, _Undecodable):
                await refuse(request, context)
            async for item in behavior(request, context):
                yield item

        return stream

    # A unary answer, or a stream written with ``context.write`` (the
    # health servicer's Watch).
    async def unary(request: Any, context: Context) -> Any:
        if isinstance(request, _Undecodable):
            await refuse(request, context)
        return await behavior(request, context)

    return unary


def service_handler(
    servicer: object, service: ServiceDescriptor, count: _Count | None = None
) -> grpc.GenericRpcHandler[Any, Any]:
    """grpc's handler for ``servicer``'s methods of ``service``, built from the
    descriptor (the generated code stays as generated), each request decoded
    by :func:`_decoder` (counted by ``count`` when it does not decode)."""
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
    for method in service.methods:
        behavior = getattr(servicer, method.name, None)
        if behavior is None:
            continue  # not served here: grpc answers UNIMPLEMENTED
        request = message_factory.GetMessageClass(method.input_type)
        response = message_factory.GetMessageClass(method.output_type)
        wrapped = _serving(method.name, behavior, method.server_streaming, count)
        make = (
            grpc.unary_stream_rpc_method_handler
            if method.server_streaming
            else grpc.unary_unary_rpc_method_handler
        )
        handlers[method.name] = make(
            wrapped,
            request_deserializer=_decoder(request),
            response_serializer=response.SerializeToString,
        )
    return grpc.method_handlers_generic_handler(service.full_name, handlers)


class GameServicer:
    """railyard.v1.GameService: each method reads the caller, asks GameApp,
    and turns a ServiceError into the call's status."""

    def __init__(self, app: GameApp, closing: asyncio.Event | None = None) -> None:
        self.app = app
        #: Set when a graceful shutdown begins: open watches end at once.
        self.closing = closing if closing is not None else asyncio.Event()

    async def _run(
        self,
        method: str,
        context: Context,
        call: Callable[[Caller], Awaitable[T]],
    ) -> T:
        """``call``'s answer for the caller, or its ServiceError as the call's
        status; timed and counted (telemetry) either way. The caller is read
        in here: a malformed authorization header is a ServiceError too."""
        begun = time.perf_counter()
        code = "UNKNOWN"  # a bug: grpc answers UNKNOWN
        try:
            answer = await call(_caller(context, self.app.proxies))
            code = "OK"
            return answer
        except ServiceError as error:
            code = error.code.name
            await _abort(context, error)
        except asyncio.CancelledError:
            code = "CANCELLED"  # the client went away, or its deadline passed
            raise
        finally:
            self.app.metrics.grpc_call(method, code, time.perf_counter() - begun)

    async def CreateGame(  # noqa: N802 (gRPC method names)
        self, request: pb.CreateGameRequest, context: Context
    ) -> pb.CreateGameResponse:
        return await self._run(
            "CreateGame", context, lambda caller: self.app.create_game(request, caller)
        )

    async def GetGame(  # noqa: N802
        self, request: pb.GetGameRequest, context: Context
    ) -> pb.GameView:
        fields = await self._run(
            "GetGame", context, lambda caller: self.app.get_game(request.game_id, caller)
        )
        return build(pb.GameView(), fields)

    async def ListLegalMoves(  # noqa: N802
        self, request: pb.ListLegalMovesRequest, context: Context
    ) -> pb.ListLegalMovesResponse:
        return await self._run(
            "ListLegalMoves",
            context,
            lambda caller: self.app.list_legal_moves(request.game_id, caller),
        )

    async def ApplyMove(  # noqa: N802
        self, request: pb.ApplyMoveRequest, context: Context
    ) -> pb.ApplyMoveResponse:
        answer = await self._run(
            "ApplyMove", context, lambda caller: self.app.apply_move(request, caller)
        )
        return message_of(pb.ApplyMoveResponse, answer)

    async def WatchGame(  # noqa: N802
        self, request: pb.WatchGameRequest, context: Context
    ) -> AsyncIterator[pb.GameEvent]:
        after = request.after_version if request.HasField("after_version") else None
        events: AsyncGenerator[tuple[pb.GameEvent, ...] | None, None] | None = None
        code = "CANCELLED"  # unless it ends otherwise: the client went away
        try:
            # In the try: a malformed authorization header is a ServiceError.
            events = self.app.watch_game(request.game_id, after, _caller(context, self.app.proxies))
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
            await _abort(context, error)
        finally:
            if events is not None:
                await events.aclose()
            self.app.metrics.grpc_call("WatchGame", code, 0.0)

    async def GetGameLog(  # noqa: N802
        self, request: pb.GetGameLogRequest, context: Context
    ) -> pb.GetGameLogResponse:
        return await self._run(
            "GetGameLog", context, lambda caller: self.app.get_game_log(request.game_id, caller)
        )

    async def JoinGame(  # noqa: N802
        self, request: pb.JoinGameRequest, context: Context
    ) -> pb.JoinGameResponse:
        return await self._run(
            "JoinGame", context, lambda caller: self.app.join_game(request, caller)
        )

    async def StartGame(  # noqa: N802
        self, request: pb.StartGameRequest, context: Context
    ) -> pb.StartGameResponse:
        fields = await self._run(
            "StartGame", context, lambda caller: self.app.start_game(request.game_id, caller)
        )
        return pb.StartGameResponse(game=build(pb.GameView(), fields))

    async def ListGames(  # noqa: N802
        self, request: pb.ListGamesRequest, context: Context
    ) -> pb.ListGamesResponse:
        return await self._run(
            "ListGames", context, lambda caller: self.app.list_games(request, caller)
        )

    async def LeaveGame(  # noqa: N802
        self, request: pb.LeaveGameRequest, context: Context
    ) -> pb.LeaveGameResponse:
        fields = await self._run(
            "LeaveGame", context, lambda caller: self.app.leave_game(request.game_id, caller)
        )
        return pb.LeaveGameResponse(game=build(pb.GameView(), fields))

    async def Rematch(  # noqa: N802
        self, request: pb.RematchRequest, context: Context
    ) -> pb.RematchResponse:
        return await self._run(
            "Rematch", context, lambda caller: self.app.rematch(request.game_id, caller)
        )

    async def ListRulesets(  # noqa: N802
        self, request: pb.ListRulesetsRequest, context: Context
    ) -> pb.ListRulesetsResponse:
        # No caller to read: the rulesets are the same for everyone.
        begun = time.perf_counter()
        answer = self.app.list_rulesets()
        self.app.metrics.grpc_call("ListRulesets", "OK", time.perf_counter() - begun)
        return answer


class StoreHealth(health_aio.HealthServicer):  # type: ignore[misc]
    """grpc.health.v1 (grpcio-health-checking's servicer): SERVING only while
    the store answers a ping. Check asks the store at each call; Watch is
    told of a change by :meth:`poll`, which the server runs while it serves."""

    SERVICES: Final = ("", SERVICE_NAME)

    def __init__(self, app: GameApp) -> None:
        super().__init__()
        self.app = app

    async def refresh(self) -> None:
        serving = await self.app.ready()
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if serving
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        for service in self.SERVICES:
            await self.set(service, status)

    async def Check(  # noqa: N802
        self, request: health_pb2.HealthCheckRequest, context: Context
    ) -> health_pb2.HealthCheckResponse:
        if request.service in self.SERVICES:
            await self.refresh()
        answer: health_pb2.HealthCheckResponse = await super().Check(request, context)
        return answer

    async def List(  # noqa: N802
        self, request: health_pb2.HealthListRequest, context: Context
    ) -> health_pb2.HealthListResponse:
        await self.refresh()
        answer = health_pb2.HealthListResponse()
        for service in self.SERVICES:
            answer.statuses[service].status = self._server_status[service]
        return answer

    async def poll(self, every: float) -> None:
        while True:
            await self.refresh()
            await asyncio.sleep(every)


class GrpcServer:
    """The service's grpc.aio server and what runs beside it (the health
    poll): :meth:`start`, then :meth:`stop`."""

    def __init__(self, server: grpc.aio.Server, health: StoreHealth, poll: float = 1.0) -> None:
        self.server = server
        self.health = health
        self.poll = poll
        self._polling: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.server.start()
        self._polling = asyncio.get_running_loop().create_task(self.health.poll(self.poll))

    async def stop(self, grace: float | None) -> None:
        """Refuse new calls and let those in flight finish for ``grace``
        seconds, then cancel them (None: at once). Health says NOT_SERVING
        from the start of it."""
        await self.health.enter_graceful_shutdown()
        if self._polling is not None:
            self._polling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._polling
        await self.server.stop(grace)


def _address(host: str, port: int) -> str:
    """grpc's form of ``host:port`` (an IPv6 host bracketed)."""
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


def server_credentials(settings: Settings) -> grpc.ServerCredentials | None:
    """TLS from the settings' certificate and key (None: cleartext); with a
    client CA, mutual TLS: a client without a certificate it signed is
    refused in the handshake."""
    if not settings.tls_cert:
        return None
    with open(settings.tls_key, "rb") as key, open(settings.tls_cert, "rb") as cert:
        pair = (key.read(), cert.read())
    client_ca = None
    if settings.tls_client_ca:
        with open(settings.tls_client_ca, "rb") as ca:
            client_ca = ca.read()
    return grpc.ssl_server_credentials(
        [pair], root_certificates=client_ca, require_client_auth=client_ca is not None
    )


def create_grpc_server(
    app: GameApp, host: str = "[::]", port: int = 0, closing: asyncio.Event | None = None
) -> tuple[GrpcServer, int]:
    """A gRPC server (not started) for ``app``, and the port it bound (0: any
    free port). Setting ``closing`` ends every open WatchGame stream with
    UNAVAILABLE (SERVER_SHUTTING_DOWN), between two versions: set it when a
    graceful shutdown begins, as ``stop`` would otherwise wait out its grace
    period for them. The limits are ``app.settings``'; with tracing on
    (``app.tracer_provider``), a server span per call, joined to the
    caller's trace by its ``traceparent`` metadata."""
    interceptors: list[grpc.aio.ServerInterceptor[Any, Any]] = []
    if app.tracer_provider is not None:
        interceptors.append(tracing.grpc_server_interceptor(app.tracer_provider))
    server = grpc.aio.server(interceptors=interceptors, options=channel_options(app.settings))
    server.add_generic_rpc_handlers(
        (
            service_handler(
                GameServicer(app, closing),
                pb.DESCRIPTOR.services_by_name["GameService"],
                app.metrics.grpc_call,
            ),
        )
    )
    health_servicer = StoreHealth(app)
    server.add_generic_rpc_handlers(
        (service_handler(health_servicer, health_pb2.DESCRIPTOR.services_by_name["Health"]),)
    )
    reflection.enable(server, (SERVICE_NAME, HEALTH_SERVICE_NAME))
    address = _address(host, port)
    credentials = server_credentials(app.settings)
    try:
        if credentials is None:
            bound = server.add_insecure_port(address)
        else:
            bound = server.add_secure_port(address, credentials)
    except RuntimeError as exc:
        raise OSError(f"could not bind gRPC to {address}: {exc}") from None
    if not bound:  # (grpc's older way of saying it could not bind)
        raise OSError(f"could not bind gRPC to {address}")
    return GrpcServer(server, health_servicer), bound
