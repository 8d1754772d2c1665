"""Limits on HTTP connections and request heads, in uvicorn's httptools protocol.

uvicorn with httptools bounds nothing before a request reaches the app: a
connection may stay open sending nothing, or a byte a minute, for ever, and a
head of any size is buffered (httptools joins a header's fragments in memory;
only h11 has a size limit). :func:`limited_protocol` makes the protocol class
:func:`service.ops.serve.serve` hands uvicorn. Per process, it adds:

* a cap on open connections: one more is answered 503 and closed as soon as
  it is accepted, so it holds no descriptor;
* a cap on the bytes of a request head (request line and header fields) and
  on its number of fields: over either, 431 with a Status body, reading no
  further than the limit;
* deadlines: a request's head must be complete within ``header_timeout`` of
  the connection's start or of the previous response's end, and its body
  within ``body_timeout`` of the head; on expiry the connection is closed,
  after a 408 with a Status body when the client sent part of a request and
  no response has started.

A refusal is written, the sending side shut, and what the client still sends
read and dropped for up to :data:`LINGER` seconds: closing a socket with
unread data makes the kernel reset the connection, and the reset can destroy
the answer before the client reads it.

Once a head is complete, bodies and responses pass as uvicorn handles them:
the work added is a few attribute checks per read and per request (one
timer per connection serves all its deadlines). One thing more: the
connection's writes go through :class:`CorkedTransport`, so that a
response's head and body leave in one system call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Final

import httptools
import orjson
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.server import ServerState

from service.app import errors
from service.app.errors import ServiceError
from service.ops.telemetry import LogTally
from service.settings import Settings
from service.transports.http.server import status_body

log = logging.getLogger("railyard.http")

#: Seconds a refused connection keeps reading, and dropping, what its client
#: still sends after the answer (see the module's docstring).
LINGER: Final = 2.0


class _TooManyHeadersError(Exception):
    """Raised from the parser's ``on_headers_complete``: the parse stops there."""


def _refusal(error: ServiceError, *headers: bytes) -> bytes:
    """The header fields and Status body of a refusal, after its status line
    and uvicorn's default fields (date, server)."""
    body = orjson.dumps(status_body(error.code, error.reason, error.message, error.metadata))
    return b"".join(
        [
            b"content-type: application/json\r\n",
            b"content-length: %d\r\n" % len(body),
            *headers,
            b"connection: close\r\n\r\n",
            body,
        ]
    )


class CorkedTransport(asyncio.Transport):
    """A connection's transport whose writes of one turn of the event loop
    leave in one system call. uvicorn writes a response's head and its body
    apart, two ``send`` calls a request where one does, and a send over
    loopback TCP is a visible part of a move's CPU (the receiving side's
    kernel work is charged to the sender). What is written is
    sent when the loop runs its next callbacks, in order with anything
    written after; closing (or ending the sending side) sends it first."""

    __slots__ = ("_loop", "_pending", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes | bytearray | memoryview] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(data)

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        for data in list_of_data:
            self.write(data)

    def flush(self) -> None:
        """Send what is pending now."""
        pending = self._pending
        if not pending:
            return
        self._pending = []
        if not self._transport.is_closing():
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._pending = []
        self._transport.abort()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(map(len, self._pending))

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol within the limits of the module's
    docstring; :func:`limited_protocol` makes a subclass holding them."""

    max_connections: ClassVar[int]
    max_header_bytes: ClassVar[int]
    max_headers: ClassVar[int]
    header_timeout: ClassVar[float]
    body_timeout: ClassVar[float]
    #: The refusals: header fields and body after the status line.
    busy: ClassVar[bytes]
    head_too_large: ClassVar[bytes]
    too_many_headers: ClassVar[bytes]
    head_late: ClassVar[bytes]
    body_late: ClassVar[bytes]
    #: Log lines: refusals come in floods, so each kind is tallied.
    busy_log: ClassVar[LogTally]
    head_refused_log: ClassVar[LogTally]
    timeout_log: ClassVar[LogTally]

    @classmethod
    def configure(cls, settings: Settings) -> None:
        cls.max_connections = settings.max_connections
        cls.max_header_bytes = settings.max_header_bytes
        cls.max_headers = settings.max_headers
        cls.header_timeout = settings.header_timeout
        cls.body_timeout = settings.body_timeout
        cls.busy = _refusal(errors.too_many_connections(cls.max_connections), b"retry-after: 1\r\n")
        cls.head_too_large = _refusal(
            errors.headers_too_large(
                f"the request head is larger than {cls.max_header_bytes} bytes"
            )
        )
        cls.too_many_headers = _refusal(
            errors.headers_too_large(f"the request has more than {cls.max_headers} header fields")
        )
        cls.head_late = _refusal(errors.request_timeout("headers", cls.header_timeout))
        cls.body_late = _refusal(errors.request_timeout("body", cls.body_timeout))
        cls.busy_log = LogTally(
            log, f"HTTP connection refused: all {cls.max_connections} taken (max_connections)"
        )
        cls.head_refused_log = LogTally(log, "HTTP request head refused (431)", level=logging.INFO)
        cls.timeout_log = LogTally(log, "HTTP request too slow, closed", level=logging.INFO)

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        #: Over the cap: answered and closed in connection_made, nothing else.
        self._refused = False
        #: A refusal was written: what still arrives is dropped until the close.
        self._answered = False
        #: Reading a request head (from the previous request's end, or the start).
        self._in_head = True
        #: Bytes the head being read may still take.
        self._head_room = self.max_header_bytes
        #: Heads completed on this connection (tells a head that ended from one
        #: that began in the same read).
        self._heads = 0
        #: The head is in, the body is not all in.
        self._in_body = False
        #: What to do when the pending deadline falls due (the head's, the
        #: body's, the linger's end), and when (loop time); None: none pending.
        self._on_due: Callable[[], None] | None = None
        self._due = 0.0
        #: The one timer: set for the earliest deadline, it may fire after that
        #: deadline was met or replaced by a later one (then it goes, or is set
        #: again), so a request costs no timer of its own.
        self._timer: asyncio.TimerHandle | None = None

    # ---------------------------------------------------------------- the connection

    def connection_made(  # type: ignore[override]
        self, transport: asyncio.Transport
    ) -> None:
        if len(self.connections) >= self.max_connections:
            self._refused = True
            transport.write(self._with_status_line(503, self.busy))
            transport.close()
            self.busy_log.add(self.loop, f"from {transport.get_extra_info('peername')}")
            return
        super().connection_made(CorkedTransport(transport, self.loop))
        self._expect(self.header_timeout, self._head_expired)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused:
            return
        self._stop_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._answered:
            return
        self._unset_keepalive_if_required()
        rest: bytes | memoryview = data
        if self._in_head and len(data) > self._head_room:
            after_head = self._feed_head(data)
            if after_head is None:
                return
            rest = after_head
        if self._in_head:
            self._head_room -= len(rest)
        if self._feed(rest) and self._in_body and self._on_due is None and not self.pipeline:
            self._expect(self.body_timeout, self._body_expired)

    def _feed_head(self, data: bytes) -> memoryview | None:
        """Parse the head that ``data`` continues only up to its room: it must
        end there (else 431, and None). What follows it, to parse as usual.

        A head that begins in the same read, after a body (pipelining), is
        charged from the next read on: at most one read (256 KiB) more."""
        rest = memoryview(data)
        while self._in_head and len(rest) > self._head_room:
            room, heads = self._head_room, self._heads
            self._head_room = 0
            if not self._feed(rest[:room]):
                return None
            if self._heads == heads:
                self.head_refused_log.add(self.loop, f"over {self.max_header_bytes} bytes")
                self._refuse_head(self.head_too_large)
                return None
            rest = rest[room:]
        return rest

    def _feed(self, data: bytes | memoryview) -> bool:
        """Parse ``data``; False when this protocol is done with the connection."""
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            if isinstance(exc.__context__, _TooManyHeadersError):
                self.head_refused_log.add(self.loop, f"over {self.max_headers} header fields")
                self._refuse_head(self.too_many_headers)
            else:  # as uvicorn answers it
                message = "Invalid HTTP request received."
                self.logger.warning(message)
                self.send_400_response(message)
            return False
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return False
        return True

    def handle_websocket_upgrade(self) -> None:
        # The connection goes to another protocol: none of its deadlines are ours.
        self._stop_timer()
        super().handle_websocket_upgrade()

    # ---------------------------------------------------------------- parser callbacks

    def on_headers_complete(self) -> None:
        # Counted once the head is in, not per field: the byte limit already
        # bounds what a head can hold.
        if len(self.headers) > self.max_headers:
            raise _TooManyHeadersError
        self._in_head = False
        self._in_body = True
        self._heads += 1
        self._on_due = None  # the head's deadline is met
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._in_body = False
        self._in_head = True
        self._head_room = self.max_header_bytes
        self._on_due = None  # the body's deadline is met
        super().on_message_complete()
        cycle = self.cycle  # None after a WebSocket upgrade's head
        if cycle is not None and cycle.response_complete and not self.transport.is_closing():
            # Answered before its body ended: the next head's time starts now.
            self._expect(self.header_timeout, self._head_expired)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._on_due is not None or self._answered or self.transport.is_closing():
            return
        if self._in_head:
            self._expect(self.header_timeout, self._head_expired)
        elif not self.pipeline:
            # A pipelined request just started: its body's time starts now.
            self._expect(self.body_timeout, self._body_expired)

    # ---------------------------------------------------------------- deadlines and refusals

    def _expect(self, seconds: float, on_due: Callable[[], None]) -> None:
        """Call ``on_due`` in ``seconds`` unless ``_on_due`` is cleared (met) first."""
        due = self.loop.time() + seconds
        self._on_due, self._due = on_due, due
        timer = self._timer
        if timer is None or timer.when() > due:
            if timer is not None:
                timer.cancel()
            self._timer = self.loop.call_at(due, self._tick)

    def _tick(self) -> None:
        self._timer = None
        on_due = self._on_due
        if on_due is None:
            return  # met: the next deadline sets a timer of its own
        if self._due - self.loop.time() > 0.001:  # replaced by a later one
            self._timer = self.loop.call_at(self._due, self._tick)
            return
        self._on_due = None
        on_due()

    def _stop_timer(self) -> None:
        self._on_due = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _head_expired(self) -> None:
        if self.transport.is_closing():
            return
        if self._head_room == self.max_header_bytes:
            # Nothing sent (an idle or preconnected client): no one waits for an answer.
            self.transport.close()
            return
        self.timeout_log.add(self.loop, f"head not in within {self.header_timeout:g} s")
        self._refuse_head(self.head_late)

    def _body_expired(self) -> None:
        if self.transport.is_closing():
            return
        self.timeout_log.add(self.loop, f"body not in within {self.body_timeout:g} s")
        cycle = self.cycle
        if cycle.response_started:
            self.transport.close()  # answered already; the rest of the body is not wanted
            return
        # The app waiting for the body hears the client is gone, and answers nothing.
        cycle.disconnected = True
        cycle.waiting_for_100_continue = False
        cycle.message_event.set()
        self._answer_and_close(self._with_status_line(408, self.body_late))

    def _refuse_head(self, refusal: bytes) -> None:
        """Refuse the head being read: 431 or 408 (in ``refusal``), and close."""
        if self.cycle is not None and not self.cycle.response_complete:
            # An earlier request's answer is under way: one cannot follow it out of order.
            self._on_due = None
            self._answered = True
            self.transport.close()
            return
        status = 408 if refusal is self.head_late else 431
        self._answer_and_close(self._with_status_line(status, refusal))

    def _answer_and_close(self, answer: bytes) -> None:
        self._answered = True
        self.transport.write(answer)
        self.flow.resume_reading()  # to drop what still comes (see LINGER)
        self.transport.write_eof()
        self._expect(LINGER, self.transport.close)

    def _with_status_line(self, status: int, refusal: bytes) -> bytes:
        parts = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            parts += [name, b": ", value, b"\r\n"]
        parts.append(refusal)
        return b"".join(parts)


def limited_protocol(settings: Settings) -> type[LimitedHttpToolsProtocol]:
    """A protocol class for ``uvicorn.Config(http=...)`` that holds the
    connections of one server to ``settings``' limits."""

    class Limited(LimitedHttpToolsProtocol):
        pass

    Limited.configure(settings)
    return Limited
