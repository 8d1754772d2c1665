"""The gRPC transport: railyard.v1.GameService, with the standard health
service (SERVING only while the store answers) and server reflection on the
same port. Handlers only translate; GameApp decides.

Served by our own gRPC over :mod:`service.http2`, on the event loop that
serves the store and HTTP: each call is a task there, nothing crosses a
thread. grpc's own servers cost 0.18 (grpc.aio) to 0.54 ms (threaded) of
CPU a call more (``bench/grpc_transports.py``, medians; README "gRPC served
on the event loop"): the
threaded one hands every call to the loop and back, grpc.aio hands each of a
call's four completion-queue events from a poller thread to the loop. What a
call is given is the part of ``grpc.ServicerContext`` the servicers use
(:class:`CallContext`); statuses are grpc's codes (``grpc.StatusCode``), the
error details google.rpc.Status in ``grpc-status-details-bin`` as grpc-status
sends them, so every gRPC client reads them as from a grpc server.

What the gRPC protocol asks of a server (PROTOCOL-HTTP2.md in grpc's
repository) and how it is met here:

* ``grpc-timeout``: the call is cancelled at its deadline, DEADLINE_EXCEEDED;
* ``grpc-encoding`` gzip or deflate (a compressed request), identity answers;
  any other: UNIMPLEMENTED with ``grpc-accept-encoding``;
* a request past ``max_body_bytes`` (compressed or not): RESOURCE_EXHAUSTED;
  metadata past ``max_header_bytes``: RESOURCE_EXHAUSTED;
* a method not served: UNIMPLEMENTED; a content-type not ``application/grpc``:
  HTTP 415; a unary call with no message or two: INTERNAL;
* the client resets the stream, or its connection goes: the call's task is
  cancelled (a WatchGame's generator closed on the loop);
* ``stop(grace)``: GOAWAY to every connection, the calls in flight finish for
  ``grace`` seconds, then are cancelled.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import logging
import socket
import struct
import time
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, NoReturn, TypeVar
from urllib.parse import quote

import grpc
from google.protobuf import any_pb2, message_factory
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import DecodeError, Message
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health_pb2
from grpc_status import rpc_status
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from service import errors, http2, reflection, tracing
from service.api import game_service_pb2 as pb
from service.app import Caller, GameApp
from service.errors import DOMAIN, ServiceError
from service.identity import TrustedProxies, api_key_of, grpc_peer_host, seat_token
from service.settings import Settings
from service.sockets import bound_socket, shares_ports
from service.streams import until_closed

log = logging.getLogger("railyard.grpc")
T = TypeVar("T")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["GameService"].full_name

#: Metadata values as grpc gives them: text, or bytes for a ``-bin`` key.
Metadata = tuple[tuple[str, str | bytes], ...]


def to_status(error: ServiceError) -> grpc.Status:
    """A ServiceError as a grpc Status with a google.rpc.Status + ErrorInfo detail."""
    info = error_details_pb2.ErrorInfo(reason=error.reason, domain=DOMAIN, metadata=error.metadata)
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(code=error.code.value[0], message=error.message, details=[detail])
    return rpc_status.to_status(status)


class Abort(Exception):  # noqa: N818 (grpc's word for ending a call with a status)
    """Ends a call with ``code`` and ``details`` (:meth:`CallContext.abort`)."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code
        self.details = details


#: Request headers that are the protocol's, not the caller's metadata.
_RESERVED: Final = frozenset(
    (b"content-type", b"te", b"grpc-timeout", b"grpc-encoding", b"grpc-accept-encoding")
)


class CallContext:
    """What a handler knows of its call, and how it ends it: the part of
    ``grpc.ServicerContext`` the servicers use, with grpc's meanings."""

    __slots__ = ("_headers", "_metadata", "_peer", "deadline", "trailing")

    def __init__(self, headers: list[tuple[bytes, bytes]], peer: str, deadline: float | None):
        self._headers = headers
        self._metadata: Metadata | None = None
        self._peer = peer
        #: When the call's deadline passes (the loop's clock), if it has one.
        self.deadline = deadline
        self.trailing: Metadata = ()

    def invocation_metadata(self) -> Metadata:
        """The caller's metadata, keys in lower case, in order; a ``-bin``
        value decoded from base64 to bytes (one that does not decode is left out)."""
        if self._metadata is None:
            found: list[tuple[str, str | bytes]] = []
            for name, value in self._headers:
                if name[:1] == b":" or name in _RESERVED:
                    continue
                key = name.decode("latin-1")
                if key.endswith("-bin"):
                    try:
                        found.append((key, base64.b64decode(value + b"==")))
                    except ValueError:
                        continue
                else:
                    found.append((key, value.decode("latin-1")))
            self._metadata = tuple(found)
        return self._metadata

    def peer(self) -> str:
        """The client's address as grpc writes it (``ipv4:1.2.3.4:5678``)."""
        return self._peer

    def time_remaining(self) -> float | None:
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - asyncio.get_running_loop().time())

    def set_trailing_metadata(self, metadata: Metadata) -> None:
        self.trailing = tuple(metadata)

    def abort(self, code: grpc.StatusCode, details: str) -> NoReturn:
        raise Abort(code, details)


def _abort(context: CallContext, error: ServiceError) -> NoReturn:
    """End the call with ``error``: its status, with the google.rpc.Status
    (ErrorInfo and all) in ``grpc-status-details-bin``."""
    status = to_status(error)
    context.set_trailing_metadata(status.trailing_metadata)
    context.abort(status.code, status.details)


def _caller(context: CallContext, proxies: TrustedProxies) -> Caller:
    """The bearer token (:func:`~service.identity.seat_token`: a malformed
    header raises UNAUTHENTICATED) and the client's address: the peer's host
    (every connection has its own port), through trusted proxies only."""
    authorization: list[str] = []
    api_keys: list[str] = []
    forwarded: str | None = None
    forwarded_for: str | None = None
    for key, value in context.invocation_metadata():
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
    address = grpc_peer_host(context.peer())
    if proxies.networks:
        address = proxies.client(address, forwarded=forwarded, forwarded_for=forwarded_for)
    return Caller(token=seat_token(authorization), address=address, api_key=api_key_of(api_keys))


# ------------------------------------------------------------------ the wire

_HEAD: Final = (
    b"\x88"  # :status 200, static table entry 8
    + http2.literal(b"content-type", b"application/grpc")
    + http2.literal(b"grpc-accept-encoding", b"identity,deflate,gzip")
)
_OK: Final = http2.literal(b"grpc-status", b"0")
_PREFIX: Final = struct.Struct(">BI")

#: grpc-timeout's units in seconds.
_UNITS: Final = {b"H": 3600.0, b"M": 60.0, b"S": 1.0, b"m": 1e-3, b"u": 1e-6, b"n": 1e-9}


def _timeout(value: bytes) -> float | None:
    """``grpc-timeout`` in seconds (None: not a timeout).

    >>> _timeout(b"10S"), _timeout(b"250m"), _timeout(b"x"), _timeout(b"123456789S")
    (10.0, 0.25, None, None)
    """
    unit = _UNITS.get(value[-1:])
    digits = value[:-1]
    if unit is None or not digits.isdigit() or len(digits) > 8:
        return None
    return int(digits) * unit


def _message_text(details: str) -> bytes:
    """``grpc-message``: percent-encoded UTF-8 (printable ASCII but % as is).

    >>> _message_text("no game 'x' (100%)")
    b"no game 'x' (100%25)"
    """
    return quote(details, safe=" !\"#$&'()*+,-./:;<=>?@[\\]^_`{|}~").encode("ascii")


def _metadata_block(metadata: Metadata) -> bytes:
    out = []
    for key, value in metadata:
        if key.endswith("-bin"):
            raw = value if isinstance(value, bytes) else value.encode()
            out.append(http2.literal(key.encode(), base64.b64encode(raw).rstrip(b"=")))
        else:
            out.append(http2.literal(key.encode(), str(value).encode("latin-1")))
    return b"".join(out)


def _status_block(code: grpc.StatusCode, details: str, trailing: Metadata) -> bytes:
    block = http2.literal(b"grpc-status", str(code.value[0]).encode())
    if details:
        block += http2.literal(b"grpc-message", _message_text(details))
    return block + _metadata_block(trailing)


def _framed(payload: bytes) -> bytes:
    return _PREFIX.pack(0, len(payload)) + payload


class _RefusedError(Exception):
    """A request the wire refuses before any handler: its status."""

    def __init__(self, code: grpc.StatusCode, details: str, http_status: int = 200) -> None:
        super().__init__(details)
        self.code = code
        self.details = details
        #: Not 200: an HTTP answer, not a gRPC status (415 for a content-type not gRPC).
        self.http_status = http_status


class _Undecodable:
    """A request whose bytes did not decode (:func:`_decoder`): the handler
    (:func:`_serving`) answers with the error, counted as the method's."""

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

#: Streams one connection may hold open beyond the watches
#: (:func:`call_streams`).
UNARY_STREAMS: Final = 64

# How a method's messages go.
UNARY: Final = 0
SERVER_STREAMING: Final = 1
BIDI_STREAMING: Final = 2

#: Codes that are the server's failure, not the caller's (OpenTelemetry's
#: conventions for gRPC servers): the span's status is ERROR.
_SERVER_FAILURES: Final = frozenset(
    (
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.UNIMPLEMENTED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DATA_LOSS,
    )
)


def call_streams(settings: Settings) -> int:
    """Streams one connection may open at once (SETTINGS_MAX_CONCURRENT_STREAMS):
    every WatchGame the app lets open (the one past ``max_watchers`` is
    refused by the app) and :data:`UNARY_STREAMS` besides."""
    return settings.max_watchers + UNARY_STREAMS


@dataclass(frozen=True, slots=True)
class Method:
    """A method served: its path (``/package.Service/Method``), how its
    messages go, its handler (a coroutine function for a unary answer, an
    async generator function for a stream; for BIDI_STREAMING it takes an
    async iterator of requests), and its messages' codecs."""

    path: str
    kind: int
    behavior: Callable[..., Any]
    decode: Callable[[bytes], Any]
    encode: Callable[[Any], bytes]

    @property
    def service(self) -> str:
        return self.path[1:].rpartition("/")[0]

    @property
    def name(self) -> str:
        return self.path.rpartition("/")[2]


class _Call:
    """One call on a stream: its method, context, deadline and task."""

    __slots__ = (
        "code",
        "context",
        "encoding",
        "expired",
        "method",
        "queue",
        "stream",
        "task",
        "timer",
    )

    def __init__(self, method: Method, stream: http2.Stream, context: CallContext) -> None:
        self.method = method
        self.stream = stream
        self.context = context
        self.encoding: bytes | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.task: asyncio.Task[None] | None = None
        #: The deadline passed (the task was cancelled for it).
        self.expired = False
        #: The status the call ended with (tracing).
        self.code = grpc.StatusCode.OK
        #: BIDI_STREAMING: the requests as they arrive, then _END.
        self.queue: asyncio.Queue[Any] | None = None


_END: Final = object()


class _Calls:
    """The gRPC calls of one HTTP/2 connection (an :class:`http2.Handler`)."""

    __slots__ = ("connection", "server")

    def __init__(self, server: GrpcServer, connection: http2.Connection) -> None:
        self.server = server
        self.connection = connection

    # ------------------------------------------------ http2.Handler

    def request(self, stream: http2.Stream) -> None:
        try:
            call = self._open(stream)
        except _RefusedError as refused:
            self._refuse(stream, refused)
            return
        stream.call = call
        if call.method.kind == BIDI_STREAMING:
            call.queue = asyncio.Queue()
            self._start(call, self._bidi(call))

    def data(self, stream: http2.Stream) -> None:
        call = stream.call
        if not isinstance(call, _Call) or (call.task is not None and call.queue is None):
            return  # answered, refused, or its one message is in
        try:
            if call.queue is not None:
                self._stream_in(call)
                return
            body = stream.body
            if len(body) < 5:
                if stream.remote_closed:
                    raise _RefusedError(grpc.StatusCode.INTERNAL, "the call has no request message")
                return
            size = int.from_bytes(body[1:5], "big")
            if size > self.server.max_message:
                raise _RefusedError(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    f"Received message larger than max ({size} vs. {self.server.max_message})",
                )
            if len(body) > 5 + size:
                raise _RefusedError(
                    grpc.StatusCode.INTERNAL, "a unary request takes one message, not more"
                )
            if not stream.remote_closed:
                return
            if len(body) < 5 + size:
                raise _RefusedError(grpc.StatusCode.INTERNAL, "the request message is cut short")
            payload = self._payload(call, body[0], bytes(body[5:]))
        except _RefusedError as refused:
            self._refuse(stream, refused)
            return
        del body[:]
        self.connection.release(stream)
        if call.method.kind == UNARY:
            self._start(call, self._unary(call, payload))
        else:
            self._start(call, self._server_streaming(call, payload))

    def reset(self, stream: http2.Stream) -> None:
        call = stream.call
        if isinstance(call, _Call) and call.task is not None:
            call.task.cancel()

    # ------------------------------------------------ requests

    def _open(self, stream: http2.Stream) -> _Call:
        path = verb = content_type = timeout = encoding = None
        for name, value in stream.headers:
            if name == b":path":
                path = value
            elif name == b":method":
                verb = value
            elif name == b"content-type":
                content_type = value
            elif name == b"grpc-timeout":
                timeout = value
            elif name == b"grpc-encoding":
                encoding = value
        if verb != b"POST" or content_type is None or not _is_grpc(content_type):
            raise _RefusedError(grpc.StatusCode.UNKNOWN, "", http_status=415)
        server = self.server
        if http2.header_list_size(stream.headers) > server.settings.max_header_bytes:
            raise _RefusedError(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"the metadata is over {server.settings.max_header_bytes} bytes",
            )
        method = server.methods.get(path or b"")
        if method is None:
            raise _RefusedError(grpc.StatusCode.UNIMPLEMENTED, "Method not found!")
        if encoding not in (None, b"identity", b"gzip", b"deflate"):
            raise _RefusedError(
                grpc.StatusCode.UNIMPLEMENTED,
                f"the message encoding {encoding!r} is not supported (identity, deflate, gzip)",
            )
        deadline = None
        loop = asyncio.get_running_loop()
        if timeout is not None:
            seconds = _timeout(timeout)
            if seconds is None:
                raise _RefusedError(
                    grpc.StatusCode.INTERNAL, f"a malformed grpc-timeout {timeout!r}"
                )
            deadline = loop.time() + seconds
        call = _Call(method, stream, CallContext(stream.headers, self.connection.peer, deadline))
        call.encoding = encoding
        if deadline is not None:
            call.timer = loop.call_at(deadline, _expire, call)
        return call

    def _payload(self, call: _Call, flag: int, payload: bytes) -> bytes:
        """A message's bytes, decompressed when its flag says so."""
        if not flag:
            return payload
        if flag != 1 or call.encoding in (None, b"identity"):
            raise _RefusedError(
                grpc.StatusCode.INTERNAL,
                "a compressed message without a grpc-encoding to decompress it",
            )
        limit = self.server.max_message
        inflate = zlib.decompressobj(31 if call.encoding == b"gzip" else 15)
        try:
            raw = inflate.decompress(payload, limit + 1)
        except zlib.error as exc:
            raise _RefusedError(
                grpc.StatusCode.INTERNAL, f"the message does not decompress: {exc}"
            ) from exc
        if len(raw) > limit:
            raise _RefusedError(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"Received message larger than max (decompressed past {limit})",
            )
        return raw

    def _stream_in(self, call: _Call) -> None:
        """Each whole message of a streaming request to its queue."""
        body = call.stream.body
        queue = call.queue
        assert queue is not None
        while len(body) >= 5:
            size = int.from_bytes(body[1:5], "big")
            if size > self.server.max_message:
                queue.put_nowait(
                    Abort(
                        grpc.StatusCode.RESOURCE_EXHAUSTED,
                        f"Received message larger than max ({size} vs. {self.server.max_message})",
                    )
                )
                del body[:]
                self.connection.release(call.stream)
                return
            if len(body) < 5 + size:
                break
            failure: Abort | None = None
            try:
                payload = self._payload(call, body[0], bytes(body[5 : 5 + size]))
                message = call.method.decode(payload)
            except _RefusedError as refused:
                failure = Abort(refused.code, refused.details)
            except DecodeError as exc:
                failure = Abort(grpc.StatusCode.INTERNAL, f"the request does not decode: {exc}")
            del body[: 5 + size]
            if failure is not None:
                self.connection.release(call.stream, 5 + size)
                queue.put_nowait(failure)
            else:
                # Its bytes count against the connection's held bytes until
                # the handler takes it (_requests): a handler that does not
                # read cannot make the queue grow past Limits.max_held.
                queue.put_nowait((message, 5 + size))
        if call.stream.remote_closed:
            queue.put_nowait(_END)

    # ------------------------------------------------ answers

    def _refuse(self, stream: http2.Stream, refused: _RefusedError) -> None:
        """A trailers-only answer (or HTTP 415) before any handler ran."""
        call = stream.call
        if isinstance(call, _Call) and call.timer is not None:
            call.timer.cancel()
        if refused.http_status != 200:
            status = str(refused.http_status).encode()
            block = http2.literal(b":status", status) + http2.literal(
                b"content-type", b"text/plain"
            )
        else:
            block = _HEAD + _status_block(refused.code, refused.details, ())
        stream.call = None
        self.connection.send_trailers(stream, block)

    def _start(self, call: _Call, work: Awaitable[None]) -> None:
        server = self.server
        coroutine = work if server.tracer is None else server.traced(call, work)
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coroutine)  # type: ignore[arg-type]
        call.task = task
        server.tasks.add(task)
        task.add_done_callback(server.tasks.discard)

    def _end(self, call: _Call, code: grpc.StatusCode, details: str, trailing: Metadata) -> None:
        call.code = code
        stream = call.stream
        block = _status_block(code, details, trailing)
        if not stream.sending:
            block = _HEAD + block
        self.connection.send_trailers(stream, block)

    def _failed(self, call: _Call, error: BaseException) -> None:
        """The handler ended by ``error`` (its status), or was cancelled."""
        if isinstance(error, Abort):
            self._end(call, error.code, error.details, call.context.trailing)
        elif isinstance(error, asyncio.CancelledError):
            if call.expired:
                self._end(call, grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded", ())
            else:  # the client went, or the server stops
                call.code = grpc.StatusCode.CANCELLED
                self.connection.reset(call.stream)
        else:
            log.error("gRPC %s failed", call.method.path, exc_info=error)
            self._end(call, grpc.StatusCode.UNKNOWN, "Exception calling application", ())

    async def _unary(self, call: _Call, payload: bytes) -> None:
        method = call.method
        context = call.context
        try:
            response = await method.behavior(method.decode(payload), context)
            data = _framed(method.encode(response))
        except (Exception, asyncio.CancelledError) as error:  # each answered with its status
            self._failed(call, error)
            return
        finally:
            if call.timer is not None:
                call.timer.cancel()
        trailers = _OK + _metadata_block(context.trailing) if context.trailing else _OK
        stream = call.stream
        connection = self.connection
        if not connection.try_respond(stream, _HEAD, data, trailers):
            connection.send_headers(stream, _HEAD)
            try:
                await connection.send_data(stream, data)
            except asyncio.CancelledError:
                connection.reset(stream)
                return
            connection.send_trailers(stream, trailers)

    async def _server_streaming(self, call: _Call, payload: bytes) -> None:
        method = call.method
        await self._stream_out(call, method.behavior(method.decode(payload), call.context))

    async def _bidi(self, call: _Call) -> None:
        await self._stream_out(call, call.method.behavior(_requests(call), call.context))

    async def _stream_out(self, call: _Call, responses: AsyncIterator[Any]) -> None:
        """Each item of ``responses`` as a message, as the peer's window
        lets it go; then the status."""
        stream = call.stream
        connection = self.connection
        encode = call.method.encode
        try:
            async for item in responses:
                if not stream.sending:
                    connection.send_headers(stream, _HEAD)
                await connection.send_data(stream, _framed(encode(item)))
                if stream.closed:
                    return
        except (Exception, asyncio.CancelledError) as error:  # each answered with its status
            self._failed(call, error)
            return
        finally:
            if call.timer is not None:
                call.timer.cancel()
            aclose = getattr(responses, "aclose", None)
            if aclose is not None:
                await aclose()
        self._end(call, grpc.StatusCode.OK, "", call.context.trailing)


def _is_grpc(content_type: bytes) -> bool:
    return content_type == b"application/grpc" or content_type.startswith(
        (b"application/grpc+", b"application/grpc;")
    )


def _expire(call: _Call) -> None:
    call.timer = None
    if call.task is not None and not call.task.done():
        call.expired = True
        call.task.cancel()
    elif call.task is None and not call.stream.closed:
        # The request is still arriving at its deadline.
        call.expired = True
        call.stream.call = None
        block = _HEAD + _status_block(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded", ())
        call.stream.connection.send_trailers(call.stream, block)


async def _requests(call: _Call) -> AsyncIterator[Any]:
    """A streaming request's messages as they arrive."""
    queue = call.queue
    assert queue is not None
    while True:
        item = await queue.get()
        if item is _END:
            return
        if isinstance(item, Abort):
            raise item
        message, size = item
        call.stream.connection.release(call.stream, size)
        yield message


class GrpcServer:
    """gRPC on one port (:meth:`bind`), its calls run on the loop it starts
    on; the limits are ``settings``' (each seen to take effect by
    tests/test_limits_server.py)."""

    def __init__(
        self, settings: Settings, tracer_provider: trace.TracerProvider | None = None
    ) -> None:
        self.settings = settings
        self.methods: dict[bytes, Method] = {}
        #: A request message's largest size, compressed or not.
        self.max_message = settings.max_body_bytes
        self.limits = http2.Limits(
            max_connections=settings.grpc_max_connections,
            max_streams=call_streams(settings),
            max_header_list=settings.max_header_bytes,
            window=max(1 << 20, settings.max_body_bytes + 5),
            handshake_timeout=settings.header_timeout,
            idle_timeout=settings.grpc_idle_timeout,
        )
        self.wire = http2.Server(self.limits, lambda connection: _Calls(self, connection))
        self.tracer = (
            tracer_provider.get_tracer("railyard.grpc") if tracer_provider is not None else None
        )
        #: The calls' tasks.
        self.tasks: set[asyncio.Task[None]] = set()
        self._socket: socket.socket | None = None

    def add_method(self, method: Method) -> None:
        self.methods[method.path.encode()] = method

    def bind(self, host: str, port: int) -> int:
        """Listen on ``host:port`` (0: any free port); the port bound.
        The port is shared only by ``serve --workers N``'s workers
        (SO_REUSEPORT): a second server on a taken port fails."""
        try:
            sock = bound_socket(host, port, reuse_port=shares_ports(self.settings))
        except OSError as exc:
            raise OSError(f"could not bind gRPC to {host}:{port}: {exc}") from exc
        # Listening from here, not from start(): the port is ours at once
        # (two sockets bound with SO_REUSEADDR may share a port until one listens).
        sock.listen(1024)
        self._socket = sock
        bound: int = sock.getsockname()[1]
        return bound

    async def start(self) -> None:
        assert self._socket is not None, "bind() first"
        await self.wire.serve(self._socket)

    async def stop(self, grace: float | None) -> None:
        """Refuse new calls (GOAWAY) and let those in flight finish for
        ``grace`` seconds, then cancel them (None: at once)."""
        self.wire.drain()
        if grace and self.tasks:
            await asyncio.wait(set(self.tasks), timeout=grace)
        for task in self.tasks:
            task.cancel()
        if self.tasks:
            await asyncio.wait(set(self.tasks), timeout=2)
        self.wire.close()

    async def traced(self, call: _Call, work: Awaitable[None]) -> None:
        """``work`` inside a server span named for the method, in the trace
        its ``traceparent`` metadata names."""
        assert self.tracer is not None
        method = call.method
        carrier = {k: v for k, v in call.context.invocation_metadata() if isinstance(v, str)}
        attributes = {
            "rpc.system": "grpc",
            "rpc.service": method.service,
            "rpc.method": method.name,
            "net.peer.ip": grpc_peer_host(call.context.peer()),
        }
        with self.tracer.start_as_current_span(
            method.path,
            context=propagate.extract(carrier),
            kind=SpanKind.SERVER,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            await work
            span.set_attribute("rpc.grpc.status_code", call.code.value[0])
            if call.code in _SERVER_FAILURES:
                span.set_status(Status(StatusCode.ERROR, call.code.name))


def _serving(name: str, behavior: Callable[..., Any], count: _Count | None) -> Callable[..., Any]:
    """``behavior``, with a request that did not decode (an
    :class:`_Undecodable`) answered with its INVALID_ARGUMENT (and counted
    by ``count``) before it runs."""

    def refused(request: _Undecodable, context: CallContext) -> NoReturn:
        if count is not None:
            count(name, request.error.code.name, 0.0)
        tracing.note_error(request.error)
        _abort(context, request.error)

    if inspect.isasyncgenfunction(behavior):

        async def stream(request: Any, context: CallContext) -> AsyncIterator[Any]:
            if isinstance(request, _Undecodable):
                refused(request, context)
            async for item in behavior(request, context):
                yield item

        return stream

    async def unary(request: Any, context: CallContext) -> Any:
        if isinstance(request, _Undecodable):
            refused(request, context)
        return await behavior(request, context)

    return unary


def add_servicer(
    server: GrpcServer,
    servicer: object,
    service: ServiceDescriptor,
    count: _Count | None = None,
) -> None:
    """Serve ``servicer``'s methods of ``service`` on ``server`` (its
    coroutine and async generator functions; a method it does not define is
    not served: UNIMPLEMENTED), with a request that
    does not decode answered INVALID_ARGUMENT with the house ErrorInfo (and
    counted by ``count``). Built from the descriptor, so the generated code
    stays as generated."""
    for method in service.methods:
        if method.client_streaming:
            raise ValueError(f"{method.full_name}: client streaming is not served here")
        behavior = getattr(servicer, method.name, None)
        if not (inspect.iscoroutinefunction(behavior) or inspect.isasyncgenfunction(behavior)):
            continue  # not implemented here (grpc.health.v1's List, say): UNIMPLEMENTED
        request = message_factory.GetMessageClass(method.input_type)
        response = message_factory.GetMessageClass(method.output_type)
        server.add_method(
            Method(
                path=f"/{service.full_name}/{method.name}",
                kind=SERVER_STREAMING if method.server_streaming else UNARY,
                behavior=_serving(method.name, behavior, count),
                decode=_decoder(request),
                encode=response.SerializeToString,
            )
        )


class GameServicer:
    def __init__(self, app: GameApp, closing: asyncio.Event | None = None) -> None:
        self.app = app
        #: Set when a graceful shutdown begins: open watches end at once.
        self.closing = closing if closing is not None else asyncio.Event()

    def _caller(self, context: CallContext) -> Caller:
        return _caller(context, self.app.proxies)

    async def _run(
        self,
        method: str,
        context: CallContext,
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
        self, request: pb.CreateGameRequest, context: CallContext
    ) -> pb.CreateGameResponse:
        return await self._run(
            "CreateGame", context, lambda caller: self.app.create_game(request, caller)
        )

    async def GetGame(  # noqa: N802
        self, request: pb.GetGameRequest, context: CallContext
    ) -> pb.GameView:
        return await self._run(
            "GetGame", context, lambda caller: self.app.get_game(request.game_id, caller)
        )

    async def ListLegalMoves(  # noqa: N802
        self, request: pb.ListLegalMovesRequest, context: CallContext
    ) -> pb.ListLegalMovesResponse:
        return await self._run(
            "ListLegalMoves",
            context,
            lambda caller: self.app.list_legal_moves(request.game_id, caller),
        )

    async def ApplyMove(  # noqa: N802
        self, request: pb.ApplyMoveRequest, context: CallContext
    ) -> pb.ApplyMoveResponse:
        return await self._run(
            "ApplyMove", context, lambda caller: self.app.apply_move(request, caller)
        )

    async def WatchGame(  # noqa: N802
        self, request: pb.WatchGameRequest, context: CallContext
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
        self, request: pb.GetGameLogRequest, context: CallContext
    ) -> pb.GetGameLogResponse:
        return await self._run(
            "GetGameLog", context, lambda caller: self.app.get_game_log(request.game_id, caller)
        )

    async def ListRulesets(  # noqa: N802
        self, request: pb.ListRulesetsRequest, context: CallContext
    ) -> pb.ListRulesetsResponse:
        begun = time.perf_counter()
        answer = self.app.list_rulesets()
        self.app.metrics.grpc_call("ListRulesets", "OK", time.perf_counter() - begun)
        return answer


class StoreHealth:
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
        context: CallContext,
    ) -> health_pb2.HealthCheckResponse:
        if request.service not in self._KNOWN:
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown service {request.service!r}")
        return health_pb2.HealthCheckResponse(status=await self._status())

    async def Watch(  # noqa: N802
        self,
        request: health_pb2.HealthCheckRequest,
        context: CallContext,
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


def create_grpc_server(
    app: GameApp, host: str = "[::]", port: int = 0, closing: asyncio.Event | None = None
) -> tuple[GrpcServer, int]:
    """A gRPC server (not started) for ``app``, and the port it bound (0: any
    free port). Setting ``closing`` ends every open WatchGame stream with
    UNAVAILABLE (SERVER_SHUTTING_DOWN), between two versions: set it when a
    graceful shutdown begins, as ``GrpcServer.stop`` would otherwise wait out
    its grace period for them. The limits are ``app.settings``'; with tracing
    on (``app.tracer_provider``), a server span per call, joined to the
    caller's trace by its ``traceparent`` metadata."""
    server = GrpcServer(app.settings, app.tracer_provider)
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
    return server, server.bind(host, port)
