"""HTTP/2 over cleartext TCP (h2c, prior knowledge), what a gRPC server needs
of it and no more: the connection's frames, HPACK, flow control both ways,
and the limits a public server must hold. :mod:`service.grpc_server` serves
gRPC calls on the streams it gives.

Why our own: grpc's servers spend 0.18-0.54 ms of CPU a call more than this
one on their Python layers and thread hand-offs (``bench/grpc_transports.py``
serves one canned call from grpc's threaded server handing it to the event
loop, from grpc.aio and from this one, side by side; grpclib and a server on
h2's state machine, measured once the same way, cost as much as grpc's:
README, "gRPC served on the event loop"), and a call served on the event
loop that runs the store needs no hand-off at all. Header blocks are decoded
by ``hpack`` (python-hyper's library: HPACK's dynamic table and Huffman
code); the blocks we send are literals without indexing, so no encoder
state is kept.

What it refuses, and how (RFC 9113 section numbers):

* a connection past ``max_connections``: closed at once, unanswered;
* no preface and SETTINGS within ``handshake_timeout`` of the accept: closed;
* a header block past ``max_header_block`` compressed bytes, or decoding past
  ``4 x max_header_list`` bytes (an HPACK bomb): GOAWAY ENHANCE_YOUR_CALM;
  one decoding past ``max_header_list`` bytes goes to the application
  (:meth:`Handler.request`), which refuses that stream;
* more streams open than ``max_streams``: RST_STREAM REFUSED_STREAM (5.1.2);
* request bytes the application has not taken past ``2 x window`` on one
  connection (bodies sent and never finished): the stream that goes over is
  reset, ENHANCE_YOUR_CALM, its bytes freed;
* windows: each stream and the connection get ``window`` bytes, given back
  as they arrive (what a connection may hold unread is bounded by the item
  above, not by the windows); a WINDOW_UPDATE past 2^31-1:
  FLOW_CONTROL_ERROR (6.9.1);
* resets, pings and settings faster than ``max_control_frames`` in a second
  (the rapid-reset and flood attacks): GOAWAY ENHANCE_YOUR_CALM;
* a peer that leaves our answers unread past the transport's high-water
  mark (64 KiB): nothing more is read from it until it catches up;
* any other protocol error: GOAWAY PROTOCOL_ERROR (or the code 6.x names).

A connection with no stream open for ``idle_timeout`` is sent a GOAWAY and
closed; one silent for ``keepalive_time`` is pinged, and closed if the ping
is not answered within ``keepalive_timeout``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol

import hpack
from hpack import HPACKError, OversizedHeaderListError

log = logging.getLogger("railyard.http2")

PREFACE: Final = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

# Frame types (RFC 9113 section 6).
DATA: Final = 0x0
HEADERS: Final = 0x1
PRIORITY: Final = 0x2
RST_STREAM: Final = 0x3
SETTINGS: Final = 0x4
PUSH_PROMISE: Final = 0x5
PING: Final = 0x6
GOAWAY: Final = 0x7
WINDOW_UPDATE: Final = 0x8
CONTINUATION: Final = 0x9

# Flags.
END_STREAM: Final = 0x1
ACK: Final = 0x1
END_HEADERS: Final = 0x4
PADDED: Final = 0x8
PRIORITY_FLAG: Final = 0x20

# Settings (6.5.2).
SETTINGS_HEADER_TABLE_SIZE: Final = 0x1
SETTINGS_ENABLE_PUSH: Final = 0x2
SETTINGS_MAX_CONCURRENT_STREAMS: Final = 0x3
SETTINGS_INITIAL_WINDOW_SIZE: Final = 0x4
SETTINGS_MAX_FRAME_SIZE: Final = 0x5
SETTINGS_MAX_HEADER_LIST_SIZE: Final = 0x6

# Error codes (7).
NO_ERROR: Final = 0x0
PROTOCOL_ERROR: Final = 0x1
INTERNAL_ERROR: Final = 0x2
FLOW_CONTROL_ERROR: Final = 0x3
STREAM_CLOSED: Final = 0x5
FRAME_SIZE_ERROR: Final = 0x6
REFUSED_STREAM: Final = 0x7
CANCEL: Final = 0x8
COMPRESSION_ERROR: Final = 0x9
ENHANCE_YOUR_CALM: Final = 0xB

DEFAULT_WINDOW: Final = 65_535
DEFAULT_FRAME_SIZE: Final = 16_384
MAX_WINDOW: Final = 2**31 - 1

#: A frame's head: its length and type in one word, flags, stream id.
_HEAD: Final = struct.Struct(">IBI")
_WORD: Final = struct.Struct(">I")
_SETTING: Final = struct.Struct(">HI")
_GOAWAY: Final = struct.Struct(">II")


def frame(kind: int, flags: int, stream_id: int, payload: bytes = b"") -> bytes:
    """One frame, head and payload.

    >>> frame(PING, ACK, 0, bytes(8)).hex()
    '0000080601000000000000000000000000'
    """
    return _HEAD.pack(len(payload) << 8 | kind, flags, stream_id) + payload


def _integer(value: int, prefix_bits: int, first: int = 0) -> bytes:
    """HPACK's integer with a ``prefix_bits`` prefix (RFC 7541 5.1).

    >>> _integer(10, 5).hex(), _integer(1337, 5).hex()
    ('0a', '1f9a0a')
    """
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes((first | value,))
    out = bytearray((first | limit,))
    value -= limit
    while value >= 128:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def literal(name: bytes, value: bytes) -> bytes:
    """A header field as a literal without indexing, new name, no Huffman
    code (RFC 7541 6.2.2): it leaves the peer's dynamic table alone, so we
    keep no encoder state.

    >>> hpack.Decoder().decode(literal(b"grpc-status", b"0"))
    [('grpc-status', '0')]
    """
    return b"\x00" + _integer(len(name), 7) + name + _integer(len(value), 7) + value


def header_list_size(headers: list[tuple[bytes, bytes]]) -> int:
    """A header list's size as SETTINGS_MAX_HEADER_LIST_SIZE counts it (6.5.2)."""
    return sum(len(name) + len(value) + 32 for name, value in headers)


@dataclass(frozen=True)
class Limits:
    """What one connection may hold and how long it may wait."""

    max_connections: int = 1000
    max_streams: int = 100
    #: Decoded bytes of a request's header list (SETTINGS_MAX_HEADER_LIST_SIZE).
    max_header_list: int = 16 * 1024
    #: The window we give each stream and the connection: a stream's request
    #: body may run this far ahead of the application.
    window: int = 1 << 20
    handshake_timeout: float = 10.0
    idle_timeout: float = 60.0
    keepalive_time: float = 30.0
    keepalive_timeout: float = 20.0
    #: RST_STREAM, PING and SETTINGS frames from the peer in one second.
    max_control_frames: int = 1000

    def __post_init__(self) -> None:
        if not DEFAULT_WINDOW <= self.window <= MAX_WINDOW:
            raise ValueError(f"window {self.window}: from 65535 (HTTP/2's default) to 2^31-1")

    @property
    def max_held(self) -> int:
        """Request bytes one connection may have sent that the application
        has not taken yet (bodies still arriving): the memory it can hold."""
        return 2 * self.window

    @property
    def max_header_block(self) -> int:
        """Compressed bytes of one header block (HEADERS and CONTINUATIONs)."""
        return 4 * self.max_header_list + DEFAULT_FRAME_SIZE


class Handler(Protocol):
    """The application on a connection's streams (:mod:`service.grpc_server`)."""

    def request(self, stream: Stream) -> None:
        """``stream.headers`` arrived (its DATA follows)."""

    def data(self, stream: Stream) -> None:
        """``stream.body`` grew, or ``stream.remote_closed`` became true."""

    def reset(self, stream: Stream) -> None:
        """The stream is over before it was answered: the peer reset it, or
        the connection closed. Called once, and never after it answered."""


class Stream:
    """One request: its headers, the body as it arrives, and what the
    application keeps on it (``task``, ``call``)."""

    __slots__ = (
        "body",
        "call",
        "closed",
        "connection",
        "headers",
        "held",
        "id",
        "remote_closed",
        "send_window",
        "sending",
        "task",
        "unacked",
        "window_waiter",
    )

    def __init__(self, connection: Connection, stream_id: int, send_window: int) -> None:
        self.connection = connection
        self.id = stream_id
        self.headers: list[tuple[bytes, bytes]] = []
        self.body = bytearray()
        #: Bytes of ``body`` the application has not taken (:meth:`Connection.release`).
        self.held = 0
        self.remote_closed = False
        #: Answered or reset: nothing more is sent on it.
        self.closed = False
        self.send_window = send_window
        #: Whether the response's HEADERS went.
        self.sending = False
        #: DATA bytes received and not yet given back by WINDOW_UPDATE.
        self.unacked = 0
        self.window_waiter: asyncio.Future[None] | None = None
        self.task: asyncio.Task[None] | None = None
        self.call: object = None


class ProtocolError(Exception):
    """The peer broke the protocol: the connection ends with ``code``."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code


class Server:
    """The connections of one listening socket, with their shared limits."""

    def __init__(self, limits: Limits, handler: Callable[[Connection], Handler]) -> None:
        self.limits = limits
        self.make_handler = handler
        self.connections: set[Connection] = set()
        self.draining = False
        self._listener: asyncio.AbstractServer | None = None
        #: Sockets accepted past the cap since the last log line (one a minute).
        self._refused = 0
        self._refused_logged = 0.0

    async def serve(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        self._listener = await loop.create_server(self._connection, sock=sock, backlog=1024)

    def _connection(self) -> Connection:
        return Connection(self)

    def drain(self) -> None:
        """Stop accepting; every connection is sent a GOAWAY naming the
        last stream it will serve (new streams are refused)."""
        self.draining = True
        if self._listener is not None:
            self._listener.close()
        for connection in list(self.connections):
            connection.goaway(NO_ERROR, close_when_done=True)

    def close(self) -> None:
        """Reset what is left and close every connection."""
        for connection in list(self.connections):
            connection.close()

    def refused(self) -> None:
        self._refused += 1
        now = time.monotonic()
        if now - self._refused_logged >= 60:
            log.warning(
                "gRPC connections refused past max connections %d: %d",
                self.limits.max_connections,
                self._refused,
            )
            self._refused_logged = now
            self._refused = 0


class Connection(asyncio.Protocol):
    """One HTTP/2 connection (server side)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.limits = server.limits
        self.transport: asyncio.Transport | None = None
        self.peer = ""
        self.streams: dict[int, Stream] = {}
        self.handler: Handler | None = None
        self._buffer = b""
        self._preface = False  # the client preface and its SETTINGS arrived
        self._settings_seen = False
        self._decoder = hpack.Decoder(max_header_list_size=4 * self.limits.max_header_list)
        self._last_stream = 0
        #: A header block being collected: its stream, flags and bytes.
        self._block: tuple[int, int, bytearray] | None = None
        self._send_window = DEFAULT_WINDOW
        self._peer_window = DEFAULT_WINDOW  # the peer's SETTINGS_INITIAL_WINDOW_SIZE
        self._peer_frame = DEFAULT_FRAME_SIZE
        self._recv_unacked = 0
        #: Request bytes received and not yet taken by the application.
        self._held = 0
        #: The last streams we reset (or answered before their request
        #: ended): frames the peer sent on them before it heard are ignored.
        self._reset_ids: collections.deque[int] = collections.deque(maxlen=64)
        self._goaway_sent = False
        self._close_when_done = False
        self._closed = False
        self._control = 0
        self._control_since = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._ping_out = False
        self._ping_deadline = 0.0
        self._next_keepalive = 0.0
        #: When the last stream closed (None: a stream is open).
        self._idle_since: float | None = None
        self._heard = True  # something arrived since the last keepalive tick
        self._window_waiters: list[Stream] = []

    # ----------------------------------------------------------- life cycle

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        server = self.server
        if len(server.connections) >= self.limits.max_connections or server.draining:
            server.refused()
            transport.abort()
            self._closed = True
            return
        server.connections.add(self)
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.peer = _peer(transport.get_extra_info("peername"))
        self.handler = server.make_handler(self)
        limits = self.limits
        settings = b"".join(
            _SETTING.pack(key, value)
            for key, value in (
                (SETTINGS_MAX_CONCURRENT_STREAMS, limits.max_streams),
                (SETTINGS_INITIAL_WINDOW_SIZE, limits.window),
                (SETTINGS_MAX_HEADER_LIST_SIZE, limits.max_header_list),
                (SETTINGS_ENABLE_PUSH, 0),
            )
        )
        greeting = frame(SETTINGS, 0, 0, settings)
        if limits.window > DEFAULT_WINDOW:  # the connection's window from 65,535 to ours
            greeting += frame(WINDOW_UPDATE, 0, 0, _WORD.pack(limits.window - DEFAULT_WINDOW))
        transport.write(greeting)
        self._arm(limits.handshake_timeout, self._handshake_expired)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self.server.connections.discard(self)
        if self._timer is not None:
            self._timer.cancel()
        for stream in list(self.streams.values()):
            self._drop(stream)
        for stream in self._window_waiters:
            _wake(stream)

    def pause_writing(self) -> None:
        """The peer reads slower than we answer: read no more from it until
        it catches up, so that what it sends (calls, pings) cannot grow what
        we hold for it without bound."""
        if self.transport is not None and not self._closed:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.transport is not None and not self._closed:
            self.transport.resume_reading()

    def close(self) -> None:
        if self.transport is not None and not self._closed:
            self._closed = True
            self.transport.close()

    def _arm(self, delay: float, then: Callable[[], None]) -> None:
        if self._timer is not None:
            self._timer.cancel()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_at(loop.time() + delay, then)

    def _handshake_expired(self) -> None:
        self._timer = None
        self.close()

    def _tick(self) -> None:
        """The connection's one timer past the handshake: closes it when a
        keepalive ping went unanswered, sends it away idle, pings it when
        nothing was heard for ``keepalive_time``, and comes back at the
        next of those moments."""
        self._timer = None
        if self._closed:
            return
        limits = self.limits
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._ping_out and now >= self._ping_deadline:
            self.close()
            return
        if self._idle_since is not None and now - self._idle_since >= limits.idle_timeout:
            self.goaway(NO_ERROR, close_when_done=True)
            return
        if now >= self._next_keepalive:
            if not self._heard and not self._ping_out and self.transport is not None:
                self._ping_out = True
                self._ping_deadline = now + limits.keepalive_timeout
                self.transport.write(frame(PING, 0, 0, b"keepaliv"))
            self._heard = False
            self._next_keepalive = now + limits.keepalive_time
        due = self._next_keepalive
        if self._ping_out:
            due = min(due, self._ping_deadline)
        if self._idle_since is not None:
            due = min(due, self._idle_since + limits.idle_timeout)
        self._timer = loop.call_at(due, self._tick)

    def _idle_from_now(self) -> None:
        """No stream is open: the idle clock starts (the timer brought
        forward if it would come later than the idle deadline)."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        self._idle_since = now
        deadline = now + self.limits.idle_timeout
        if self._timer is None or self._timer.when() > deadline:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = loop.call_at(deadline, self._tick)

    def goaway(self, code: int, close_when_done: bool = False, reason: str = "") -> None:
        """Tell the peer the last stream served; closed now on an error, or
        when the open streams are done."""
        if self._closed or self.transport is None:
            return
        if not self._goaway_sent:
            self._goaway_sent = True
            self.transport.write(
                frame(GOAWAY, 0, 0, _GOAWAY.pack(self._last_stream, code) + reason.encode())
            )
        if code != NO_ERROR:
            self.close()
        elif close_when_done:
            self._close_when_done = True
            if not self.streams:
                self.close()

    # ----------------------------------------------------------- receiving

    def data_received(self, data: bytes) -> None:
        self._heard = True
        buffer = self._buffer + data if self._buffer else data
        try:
            if not self._preface:
                if len(buffer) < len(PREFACE):
                    if not PREFACE.startswith(buffer):
                        raise ProtocolError(PROTOCOL_ERROR, "not an HTTP/2 preface")
                    self._buffer = buffer
                    return
                if not buffer.startswith(PREFACE):
                    raise ProtocolError(PROTOCOL_ERROR, "not an HTTP/2 preface")
                buffer = buffer[len(PREFACE) :]
                self._preface = True
            self._buffer = self._frames(buffer)
        except ProtocolError as error:
            self._buffer = b""
            self.goaway(error.code, reason=str(error))

    def _frames(self, buffer: bytes) -> bytes:
        """Handles the whole frames of ``buffer``; the rest."""
        pos = 0
        size = len(buffer)
        unpack = _HEAD.unpack_from
        while size - pos >= 9 and not self._closed:
            word, flags, stream_id = unpack(buffer, pos)
            length = word >> 8
            if length > DEFAULT_FRAME_SIZE:  # we never raise SETTINGS_MAX_FRAME_SIZE
                raise ProtocolError(FRAME_SIZE_ERROR, "a frame over 16384 bytes")
            end = pos + 9 + length
            if end > size:
                break
            kind = word & 0xFF
            stream_id &= 0x7FFFFFFF
            payload = buffer[pos + 9 : end]
            pos = end
            if not self._settings_seen:
                if kind != SETTINGS or flags & ACK:
                    raise ProtocolError(PROTOCOL_ERROR, "the preface's SETTINGS first")
                self._settings_seen = True
                # The handshake's timer gives way to the first keepalive tick
                # (brought forward to the idle deadline where that is sooner).
                now = asyncio.get_running_loop().time()
                self._next_keepalive = now + self.limits.keepalive_time
                self._arm(self.limits.keepalive_time, self._tick)
                self._idle_from_now()
            if self._block is not None and kind != CONTINUATION:
                raise ProtocolError(PROTOCOL_ERROR, "a header block cut by another frame")
            if kind == DATA:
                self._data(flags, stream_id, payload)
            elif kind == HEADERS:
                self._headers(flags, stream_id, payload)
            elif kind == CONTINUATION:
                self._continuation(flags, stream_id, payload)
            elif kind == WINDOW_UPDATE:
                self._window_update(stream_id, payload)
            elif kind == SETTINGS:
                self._settings(flags, stream_id, payload)
            elif kind == PING:
                self._ping(flags, stream_id, payload)
            elif kind == RST_STREAM:
                self._rst_stream(stream_id, payload)
            elif kind == GOAWAY:
                if stream_id:
                    raise ProtocolError(PROTOCOL_ERROR, "GOAWAY on a stream")
                self._close_when_done = True
                if not self.streams:
                    self.close()
            elif kind == PRIORITY:
                if stream_id == 0 or length != 5:
                    raise ProtocolError(PROTOCOL_ERROR, "a malformed PRIORITY")
            elif kind == PUSH_PROMISE:
                raise ProtocolError(PROTOCOL_ERROR, "PUSH_PROMISE from a client")
            # Unknown frame types are ignored (5.5).
        return buffer[pos:]

    def _controlled(self) -> None:
        """Counts a control frame; too many in a second is a flood."""
        now = time.monotonic()
        if now - self._control_since >= 1.0:
            self._control_since = now
            self._control = 0
        self._control += 1
        if self._control > self.limits.max_control_frames:
            raise ProtocolError(ENHANCE_YOUR_CALM, "too many control frames")

    def _settings(self, flags: int, stream_id: int, payload: bytes) -> None:
        if stream_id:
            raise ProtocolError(PROTOCOL_ERROR, "SETTINGS on a stream")
        if flags & ACK:
            if payload:
                raise ProtocolError(FRAME_SIZE_ERROR, "a SETTINGS ack with a payload")
            return
        self._controlled()
        if len(payload) % 6:
            raise ProtocolError(FRAME_SIZE_ERROR, "SETTINGS not a multiple of 6")
        for offset in range(0, len(payload), 6):
            key, value = _SETTING.unpack_from(payload, offset)
            if key == SETTINGS_INITIAL_WINDOW_SIZE:
                if value > MAX_WINDOW:
                    raise ProtocolError(FLOW_CONTROL_ERROR, "a window over 2^31-1")
                delta = value - self._peer_window
                self._peer_window = value
                for stream in self.streams.values():
                    stream.send_window += delta
                if delta > 0:
                    self._wake_senders()
            elif key == SETTINGS_MAX_FRAME_SIZE:
                if not DEFAULT_FRAME_SIZE <= value <= 16_777_215:
                    raise ProtocolError(PROTOCOL_ERROR, "a max frame size out of range")
                self._peer_frame = value
            elif key == SETTINGS_ENABLE_PUSH and value > 1:
                raise ProtocolError(PROTOCOL_ERROR, "ENABLE_PUSH not 0 or 1")
            # HEADER_TABLE_SIZE: our blocks never index, so any size serves;
            # MAX_CONCURRENT_STREAMS: a server opens none.
        assert self.transport is not None
        self.transport.write(frame(SETTINGS, ACK, 0))

    def _ping(self, flags: int, stream_id: int, payload: bytes) -> None:
        if stream_id:
            raise ProtocolError(PROTOCOL_ERROR, "PING on a stream")
        if len(payload) != 8:
            raise ProtocolError(FRAME_SIZE_ERROR, "a PING not of 8 bytes")
        if flags & ACK:
            self._ping_out = False
            return
        self._controlled()
        assert self.transport is not None
        self.transport.write(frame(PING, ACK, 0, payload))

    def _window_update(self, stream_id: int, payload: bytes) -> None:
        if len(payload) != 4:
            raise ProtocolError(FRAME_SIZE_ERROR, "a WINDOW_UPDATE not of 4 bytes")
        increment = _WORD.unpack(payload)[0] & 0x7FFFFFFF
        if stream_id == 0:
            if increment == 0:
                raise ProtocolError(PROTOCOL_ERROR, "a zero WINDOW_UPDATE")
            self._send_window += increment
            if self._send_window > MAX_WINDOW:
                raise ProtocolError(FLOW_CONTROL_ERROR, "the window past 2^31-1")
            self._wake_senders()
            return
        stream = self.streams.get(stream_id)
        if stream is None:
            return  # a stream we closed (5.1)
        if increment == 0:
            self._reset(stream, PROTOCOL_ERROR)
            return
        stream.send_window += increment
        if stream.send_window > MAX_WINDOW:
            self._reset(stream, FLOW_CONTROL_ERROR)
            return
        _wake(stream)

    def _rst_stream(self, stream_id: int, payload: bytes) -> None:
        if stream_id == 0:
            raise ProtocolError(PROTOCOL_ERROR, "RST_STREAM on the connection")
        if len(payload) != 4:
            raise ProtocolError(FRAME_SIZE_ERROR, "a RST_STREAM not of 4 bytes")
        if stream_id > self._last_stream:
            raise ProtocolError(PROTOCOL_ERROR, "RST_STREAM on an idle stream")
        self._controlled()
        stream = self.streams.get(stream_id)
        if stream is not None:
            self._drop(stream)

    def _headers(self, flags: int, stream_id: int, payload: bytes) -> None:
        if stream_id == 0 or stream_id % 2 == 0:
            raise ProtocolError(PROTOCOL_ERROR, "HEADERS on stream 0 or an even one")
        start = 0
        end = len(payload)
        if flags & PADDED:
            if not payload:
                raise ProtocolError(PROTOCOL_ERROR, "padding without its length")
            start = 1
            end -= payload[0]
        if flags & PRIORITY_FLAG:
            start += 5
        if start > end:
            raise ProtocolError(PROTOCOL_ERROR, "padding past the frame")
        block = payload[start:end]
        if flags & END_HEADERS:
            self._header_block(stream_id, flags, block)
        else:
            self._block = (stream_id, flags, bytearray(block))

    def _continuation(self, flags: int, stream_id: int, payload: bytes) -> None:
        if self._block is None or self._block[0] != stream_id:
            raise ProtocolError(PROTOCOL_ERROR, "a CONTINUATION out of place")
        block = self._block[2]
        block += payload
        if len(block) > self.limits.max_header_block:
            raise ProtocolError(ENHANCE_YOUR_CALM, "a header block past its limit")
        if flags & END_HEADERS:
            first_flags = self._block[1]
            self._block = None
            self._header_block(stream_id, first_flags, bytes(block))

    def _header_block(self, stream_id: int, flags: int, block: bytes) -> None:
        if len(block) > self.limits.max_header_block:
            raise ProtocolError(ENHANCE_YOUR_CALM, "a header block past its limit")
        try:
            # Decoded even for a stream refused below: the dynamic table
            # must stay in step with the peer's.
            headers = self._decoder.decode(block, raw=True)
        except OversizedHeaderListError as exc:
            raise ProtocolError(ENHANCE_YOUR_CALM, "a header list past 4x its limit") from exc
        except HPACKError as exc:
            raise ProtocolError(COMPRESSION_ERROR, f"HPACK: {exc}") from exc
        stream = self.streams.get(stream_id)
        if stream is not None:
            # Trailers (a gRPC client sends none): they end the request.
            if not flags & END_STREAM or stream.remote_closed:
                raise ProtocolError(PROTOCOL_ERROR, "HEADERS on an open stream")
            stream.remote_closed = True
            self._handler().data(stream)
            return
        if stream_id <= self._last_stream:
            if stream_id in self._reset_ids:
                # A stream we answered or reset while its request was still
                # coming: what the peer sent before it heard is ignored
                # (5.1), decoded above so that the dynamic table stays in step.
                return
            raise ProtocolError(STREAM_CLOSED, "HEADERS on a closed stream")
        self._last_stream = stream_id
        assert self.transport is not None
        if self._goaway_sent or self._close_when_done:
            self.transport.write(frame(RST_STREAM, 0, stream_id, _WORD.pack(REFUSED_STREAM)))
            self._reset_ids.append(stream_id)
            return
        if len(self.streams) >= self.limits.max_streams:
            self.transport.write(frame(RST_STREAM, 0, stream_id, _WORD.pack(REFUSED_STREAM)))
            self._reset_ids.append(stream_id)
            return
        stream = Stream(self, stream_id, self._peer_window)
        stream.headers = headers  # type: ignore[assignment]  # raw=True: bytes pairs
        if flags & END_STREAM:
            stream.remote_closed = True
        self._idle_since = None
        self.streams[stream_id] = stream
        handler = self._handler()
        handler.request(stream)
        if stream.remote_closed and not stream.closed:
            handler.data(stream)

    def _data(self, flags: int, stream_id: int, payload: bytes) -> None:
        if stream_id == 0:
            raise ProtocolError(PROTOCOL_ERROR, "DATA on the connection")
        length = len(payload)  # all of it counts against the windows, padding too
        self._recv_unacked += length
        if self._recv_unacked > self.limits.window:
            raise ProtocolError(FLOW_CONTROL_ERROR, "DATA past the connection's window")
        updates = b""
        if self._recv_unacked >= self.limits.window // 2:
            updates = frame(WINDOW_UPDATE, 0, 0, _WORD.pack(self._recv_unacked))
            self._recv_unacked = 0
        if flags & PADDED:
            if not payload or payload[0] >= length:
                raise ProtocolError(PROTOCOL_ERROR, "padding past the frame")
            payload = payload[1 : length - payload[0]]
        stream = self.streams.get(stream_id)
        assert self.transport is not None
        if stream is None or stream.remote_closed:
            if stream_id > self._last_stream:
                raise ProtocolError(PROTOCOL_ERROR, "DATA on an idle stream")
            # A stream we closed (answered, refused, reset): dropped (5.1).
            if updates:
                self.transport.write(updates)
            return
        stream.unacked += length
        if stream.unacked > self.limits.window:
            raise ProtocolError(FLOW_CONTROL_ERROR, "DATA past the stream's window")
        if flags & END_STREAM:
            stream.remote_closed = True
        elif stream.unacked >= self.limits.window // 2:
            updates += frame(WINDOW_UPDATE, 0, stream_id, _WORD.pack(stream.unacked))
            stream.unacked = 0
        if updates:
            self.transport.write(updates)
        if payload:
            stream.body += payload
            stream.held += len(payload)
            self._held += len(payload)
            if self._held > self.limits.max_held:
                # Requests this connection sent and the application has not
                # taken: past the bound, the stream that went over is reset
                # (its bytes freed) rather than buffered.
                self._reset(stream, ENHANCE_YOUR_CALM)
                return
        if payload or stream.remote_closed:
            self._handler().data(stream)

    def _handler(self) -> Handler:
        assert self.handler is not None
        return self.handler

    # -------------------------------------------------------------- sending

    def header_frames(self, stream_id: int, block: bytes, end_stream: bool) -> bytes:
        """A header block as HEADERS (and CONTINUATION frames past the
        peer's frame size)."""
        flags = END_STREAM if end_stream else 0
        size = self._peer_frame
        if len(block) <= size:
            return frame(HEADERS, flags | END_HEADERS, stream_id, block)
        parts = [block[i : i + size] for i in range(0, len(block), size)]
        out = [frame(HEADERS, flags, stream_id, parts[0])]
        for part in parts[1:-1]:
            out.append(frame(CONTINUATION, 0, stream_id, part))
        out.append(frame(CONTINUATION, END_HEADERS, stream_id, parts[-1]))
        return b"".join(out)

    def send_headers(self, stream: Stream, block: bytes) -> None:
        """The response's HEADERS (not the end of the stream)."""
        if stream.closed or self.transport is None or self._closed:
            return
        stream.sending = True
        self.transport.write(self.header_frames(stream.id, block, False))

    async def send_data(self, stream: Stream, data: bytes) -> None:
        """``data`` as DATA frames, waiting for window where the peer has
        given too little (a stream reset meanwhile: the rest is dropped)."""
        view = memoryview(data)
        while view and not stream.closed and not self._closed:
            room = min(self._send_window, stream.send_window)
            if room <= 0:
                await self._wait_window(stream)
                continue
            chunk = view[: min(room, self._peer_frame)]
            self._send_window -= len(chunk)
            stream.send_window -= len(chunk)
            assert self.transport is not None
            self.transport.write(frame(DATA, 0, stream.id, bytes(chunk)))
            view = view[len(chunk) :]

    def try_respond(self, stream: Stream, head: bytes, data: bytes, trailers: bytes) -> bool:
        """A whole response (HEADERS, one DATA, trailing HEADERS) in one
        write, if the windows take it now; False (nothing sent) if not."""
        size = len(data)
        if (
            size > self._send_window
            or size > stream.send_window
            or size > self._peer_frame
            or stream.closed
        ):
            return False
        self._send_window -= size
        stream.send_window -= size
        stream.sending = True
        if not self._closed and self.transport is not None:
            self.transport.write(
                self.header_frames(stream.id, head, False)
                + _HEAD.pack(size << 8 | DATA, 0, stream.id)
                + data
                + self.header_frames(stream.id, trailers, True)
            )
        self.finish(stream)
        return True

    def send_trailers(self, stream: Stream, block: bytes) -> None:
        """The last HEADERS: the stream is over (``finish``)."""
        if not stream.closed and not self._closed and self.transport is not None:
            self.transport.write(self.header_frames(stream.id, block, True))
        self.finish(stream)

    def release(self, stream: Stream, size: int | None = None) -> None:
        """The application took ``size`` bytes of ``stream.body`` (None: all
        it holds): they no longer count against :attr:`Limits.max_held`."""
        taken = stream.held if size is None else min(size, stream.held)
        stream.held -= taken
        self._held -= taken

    def finish(self, stream: Stream) -> None:
        """The stream answered: forgotten, and reset when the request is
        still coming (RFC 9113 8.1: NO_ERROR, the rest is not needed)."""
        if stream.closed:
            return
        stream.closed = True
        self.release(stream)
        if self.streams.pop(stream.id, None) is None:
            return
        if not stream.remote_closed and not self._closed and self.transport is not None:
            self.transport.write(frame(RST_STREAM, 0, stream.id, _WORD.pack(NO_ERROR)))
            self._reset_ids.append(stream.id)
        self._stream_gone()

    def _reset(self, stream: Stream, code: int) -> None:
        """Resets ``stream`` (the application is told)."""
        if not self._closed and self.transport is not None and not stream.closed:
            self.transport.write(frame(RST_STREAM, 0, stream.id, _WORD.pack(code)))
            self._reset_ids.append(stream.id)
        self._drop(stream)

    def reset(self, stream: Stream, code: int = CANCEL) -> None:
        """The application ends ``stream`` unanswered."""
        if stream.closed:
            return
        stream.closed = True
        self.release(stream)
        self.streams.pop(stream.id, None)
        if not self._closed and self.transport is not None:
            self.transport.write(frame(RST_STREAM, 0, stream.id, _WORD.pack(code)))
            self._reset_ids.append(stream.id)
        _wake(stream)
        self._stream_gone()

    def _drop(self, stream: Stream) -> None:
        if stream.closed:
            return
        stream.closed = True
        self.release(stream)
        self.streams.pop(stream.id, None)
        _wake(stream)
        if self.handler is not None:
            self.handler.reset(stream)
        self._stream_gone()

    def _stream_gone(self) -> None:
        if self.streams or self._closed:
            return
        if self._close_when_done:
            self.close()
        elif self._settings_seen:
            self._idle_from_now()

    async def _wait_window(self, stream: Stream) -> None:
        waiter = asyncio.get_running_loop().create_future()
        stream.window_waiter = waiter
        self._window_waiters.append(stream)
        try:
            await waiter
        finally:
            stream.window_waiter = None
            with contextlib.suppress(ValueError):
                self._window_waiters.remove(stream)

    def _wake_senders(self) -> None:
        for stream in list(self._window_waiters):
            _wake(stream)


def _wake(stream: Stream) -> None:
    waiter = stream.window_waiter
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


def _peer(address: object) -> str:
    """A socket's peer as gRPC names it (``ipv4:1.2.3.4:5``, ``ipv6:[::1]:5``).

    >>> _peer(("127.0.0.1", 5)), _peer(("::1", 6, 0, 0)), _peer(("::ffff:10.0.0.1", 7, 0, 0))
    ('ipv4:127.0.0.1:5', 'ipv6:[::1]:6', 'ipv4:10.0.0.1:7')
    """
    if isinstance(address, tuple) and len(address) >= 2:
        host, port = str(address[0]), address[1]
        if ":" not in host:
            return f"ipv4:{host}:{port}"
        if host.startswith("::ffff:") and "." in host:
            return f"ipv4:{host[7:]}:{port}"
        return f"ipv6:[{host}]:{port}"
    return f"unix:{address}" if address else ""
