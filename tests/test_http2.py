"""service.http2 and service.grpc_server on the wire: raw HTTP/2 frames over
a real TCP socket to a real server on a free loopback port (and a few calls
through grpcio's client), each test asserting the exact frames, codes and
statuses RFC 9113 and gRPC's PROTOCOL-HTTP2.md ask for.

Servers are of three kinds: the real service over the in-process store
(:func:`game_service`), a :class:`GrpcServer` serving methods of the test's
own (:func:`own_methods`), and a bare :class:`http2.Server` with a handler
that records what it is told (:func:`bare_server`), for the limits that
Settings does not reach. Every read is under a timeout: no test can hang.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import socket
import struct
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

import grpc
import hpack
import pytest

from service import http2
from service.api import game_service_pb2 as pb
from service.api import game_service_pb2_grpc as pb_grpc
from service.app import Caller, GameApp
from service.grpc_server import UNARY, CallContext, GrpcServer, Method, create_grpc_server
from service.settings import Settings
from service.sockets import bound_socket
from service.store.memory import MemoryStore

#: Seconds any one read may wait.
TIMEOUT = 5.0
#: Seconds a timed event may come late on a loaded 2-core machine.
SLACK = 1.5

LIST_RULESETS = "/railyard.v1.GameService/ListRulesets"
WATCH_GAME = "/railyard.v1.GameService/WatchGame"

Headers = list[tuple[str, str]]


# ------------------------------------------------------------------ the client


class Frame(NamedTuple):
    kind: int
    flags: int
    stream_id: int
    payload: bytes
    #: A HEADERS frame's block, decoded (in order, by the connection's decoder).
    headers: tuple[tuple[str, str], ...] = ()


def goaway_of(frame: Frame) -> tuple[int, int]:
    """A GOAWAY's last stream id and error code."""
    assert frame.kind == http2.GOAWAY, frame
    last, code = struct.unpack_from(">II", frame.payload)
    return last & 0x7FFFFFFF, code


def word(value: int) -> bytes:
    return value.to_bytes(4, "big")


def settings_payload(values: dict[int, int]) -> bytes:
    return b"".join(struct.pack(">HI", key, value) for key, value in values.items())


def grpc_message(message: bytes, compressed: bool = False) -> bytes:
    """One length-prefixed gRPC message."""
    return bytes((int(compressed),)) + len(message).to_bytes(4, "big") + message


def grpc_messages(data: bytes) -> list[bytes]:
    """The uncompressed gRPC messages of a response body, whole."""
    found = []
    while data:
        assert len(data) >= 5, data
        assert data[0] == 0, "the server answers uncompressed"
        size = int.from_bytes(data[1:5], "big")
        assert len(data) >= 5 + size, "a message cut short"
        found.append(data[5 : 5 + size])
        data = data[5 + size :]
    return found


class Peer:
    """One raw HTTP/2 client connection (h2c, prior knowledge)."""

    #: Those open: the servers' context managers close them (a test that
    #: fails half-way leaves none behind).
    opened: ClassVar[list[Peer]] = []

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        Peer.opened.append(self)
        self.encoder = hpack.Encoder()
        self.decoder = hpack.Decoder()
        #: The server's SETTINGS and its connection WINDOW_UPDATE (handshake).
        self.settings: dict[int, int] = {}
        self.window_update = 0

    @classmethod
    async def connect(cls, port: int) -> Peer:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), TIMEOUT)
        return cls(reader, writer)

    @property
    def local_port(self) -> int:
        port: int = self.writer.get_extra_info("sockname")[1]
        return port

    def send(self, *frames: bytes) -> None:
        self.writer.write(b"".join(frames))

    async def frame(self, timeout: float = TIMEOUT) -> Frame | None:
        """The next frame; None at the end of the connection."""
        partial = b""
        try:
            head = await asyncio.wait_for(self.reader.readexactly(9), timeout)
            length = int.from_bytes(head[:3], "big")
            payload = await asyncio.wait_for(self.reader.readexactly(length), timeout)
        except asyncio.IncompleteReadError as exc:
            partial = exc.partial
            head = b""
        except ConnectionResetError:
            head = b""
        if not head:
            assert not partial, f"the connection ended inside a frame: {partial!r}"
            return None
        kind, flags = head[3], head[4]
        stream_id = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
        headers: tuple[tuple[str, str], ...] = ()
        if kind == http2.HEADERS:
            assert flags & http2.END_HEADERS, "our blocks fit one frame"
            headers = tuple(
                (name.decode(), value.decode())
                for name, value in self.decoder.decode(payload, raw=True)
            )
        return Frame(kind, flags, stream_id, payload, headers)

    async def expect(self, timeout: float = TIMEOUT) -> Frame:
        found = await self.frame(timeout)
        assert found is not None, "the connection ended"
        return found

    async def until(
        self, wanted: Callable[[Frame], bool], timeout: float = TIMEOUT
    ) -> tuple[Frame, list[Frame]]:
        """Reads to the first frame ``wanted``: it, and the frames before it."""
        before: list[Frame] = []
        while True:
            found = await self.expect(timeout)
            if wanted(found):
                return found, before
            before.append(found)

    async def eof(self, timeout: float = TIMEOUT) -> list[Frame]:
        """Reads to the end of the connection (then closes our end): the
        frames on the way."""
        frames: list[Frame] = []
        while True:
            found = await self.frame(timeout)
            if found is None:
                await self.close()
                return frames
            frames.append(found)

    async def goaway(self) -> tuple[int, int]:
        """Reads to a GOAWAY, then to the end of the connection (it must
        close): the GOAWAY's last stream id and error code."""
        found, _ = await self.until(lambda f: f.kind == http2.GOAWAY)
        after = await self.eof()
        assert not after, after
        return goaway_of(found)

    async def handshake(self, settings: dict[int, int] | None = None, then: bytes = b"") -> None:
        """Our preface and SETTINGS (and ``then``, in the same write); the
        server's SETTINGS, connection WINDOW_UPDATE and ACK of ours; our ACK
        of its SETTINGS."""
        payload = settings_payload(settings or {})
        self.send(http2.PREFACE, http2.frame(http2.SETTINGS, 0, 0, payload), then)
        first = await self.expect()
        assert (first.kind, first.flags, first.stream_id) == (http2.SETTINGS, 0, 0), first
        self.settings = dict(struct.iter_unpack(">HI", first.payload))
        update = await self.expect()
        assert (update.kind, update.stream_id) == (http2.WINDOW_UPDATE, 0), update
        self.window_update = int.from_bytes(update.payload, "big")
        ack = await self.expect()
        assert (ack.kind, ack.flags, ack.payload) == (http2.SETTINGS, http2.ACK, b""), ack
        self.send(http2.frame(http2.SETTINGS, http2.ACK, 0))

    def block(
        self,
        path: str = LIST_RULESETS,
        content_type: str = "application/grpc",
        extra: list[tuple[str, str]] | None = None,
    ) -> bytes:
        """A gRPC request's header block."""
        return self.encoder.encode(
            [
                (":method", "POST"),
                (":scheme", "http"),
                (":path", path),
                (":authority", "x"),
                ("content-type", content_type),
                ("te", "trailers"),
                *(extra or []),
            ]
        )

    def call(
        self,
        stream_id: int,
        body: bytes = grpc_message(b""),
        path: str = LIST_RULESETS,
        content_type: str = "application/grpc",
        extra: list[tuple[str, str]] | None = None,
    ) -> None:
        """A whole request: HEADERS, then the body as one DATA frame ending the stream."""
        self.send(
            http2.frame(
                http2.HEADERS, http2.END_HEADERS, stream_id, self.block(path, content_type, extra)
            ),
            http2.frame(http2.DATA, http2.END_STREAM, stream_id, body),
        )

    async def quiet(self, seconds: float) -> None:
        """Nothing comes for ``seconds`` (the connection stays open)."""
        try:
            found = await self.frame(seconds)
        except TimeoutError:
            return
        raise AssertionError(f"{found} came")

    async def ping_pong(self, payload: bytes = b"pingpong") -> list[Frame]:
        """A PING and the frames that come before its ACK (all the server
        had sent by the time it read the PING)."""
        self.send(http2.frame(http2.PING, 0, 0, payload))
        _, before = await self.until(
            lambda f: f.kind == http2.PING and f.flags == http2.ACK and f.payload == payload
        )
        return before

    @classmethod
    async def close_all(cls) -> None:
        while cls.opened:
            await cls.opened.pop().close()

    async def close(self) -> None:
        self.writer.close()
        with suppress(ConnectionError, OSError):
            await asyncio.wait_for(self.writer.wait_closed(), TIMEOUT)


@dataclass
class Response:
    """One stream's answer as it came."""

    headers: Headers = field(default_factory=list)
    data: bytes = b""
    trailers: Headers = field(default_factory=list)
    reset: int | None = None
    #: Every frame read meanwhile, on every stream.
    frames: list[Frame] = field(default_factory=list)

    @property
    def status(self) -> str | None:
        return dict(self.trailers).get("grpc-status")

    @property
    def message(self) -> str | None:
        return dict(self.trailers).get("grpc-message")


async def response(
    peer: Peer, stream_id: int, headers: Headers | None = None, timeout: float = TIMEOUT
) -> Response:
    """Reads to the end of ``stream_id`` (HEADERS with END_STREAM, or
    RST_STREAM); ``headers``: its HEADERS were read already."""
    answer = Response(headers=headers or [])
    while True:
        found = await peer.expect(timeout)
        answer.frames.append(found)
        if found.stream_id != stream_id:
            continue
        if found.kind == http2.HEADERS:
            if found.flags & http2.END_STREAM:
                answer.trailers = list(found.headers)
                if not answer.headers:  # trailers-only
                    answer.headers = list(found.headers)
                return answer
            assert not answer.headers, "a second HEADERS without END_STREAM"
            answer.headers = list(found.headers)
        elif found.kind == http2.DATA:
            assert answer.headers, "DATA before HEADERS"
            assert not found.flags & http2.END_STREAM, "the trailers end a gRPC stream"
            answer.data += found.payload
        elif found.kind == http2.RST_STREAM:
            answer.reset = int.from_bytes(found.payload, "big")
            return answer


# ------------------------------------------------------------------ servers


@asynccontextmanager
async def game_service(**settings: Any) -> AsyncIterator[tuple[GrpcServer, int, GameApp]]:
    """The real service over the in-process store, on a free port."""
    store = MemoryStore()
    app = GameApp(store, Settings(rate_limit=0, bot_processes=0, **settings))
    server, port = create_grpc_server(app, "127.0.0.1", 0)
    await server.start()
    try:
        yield server, port, app
    finally:
        await Peer.close_all()
        await server.stop(None)
        await store.close()
        app.close()


def identity(raw: bytes) -> bytes:
    return raw


def own_method(name: str, behavior: Callable[[bytes, CallContext], Awaitable[bytes]]) -> Method:
    """A unary method of ours, its messages raw bytes."""
    return Method(f"/test.Own/{name}", UNARY, behavior, identity, identity)


@asynccontextmanager
async def own_methods(*methods: Method) -> AsyncIterator[tuple[GrpcServer, int]]:
    """A GrpcServer serving only ``methods``, on a free port."""
    server = GrpcServer(Settings(bot_processes=0))
    for method in methods:
        server.add_method(method)
    port = server.bind("127.0.0.1", 0)
    await server.start()
    try:
        yield server, port
    finally:
        await Peer.close_all()
        await server.stop(None)


class Recorder:
    """An http2.Handler that answers nothing and takes none of a body:
    it records what it is told."""

    def __init__(self) -> None:
        self.requests: list[int] = []
        self.resets: list[int] = []
        #: The most body bytes each stream held.
        self.held: dict[int, int] = {}

    def request(self, stream: http2.Stream) -> None:
        self.requests.append(stream.id)

    def data(self, stream: http2.Stream) -> None:
        self.held[stream.id] = max(self.held.get(stream.id, 0), len(stream.body))

    def reset(self, stream: http2.Stream) -> None:
        self.resets.append(stream.id)


def streams_open(server: http2.Server) -> int:
    """Streams open on all of ``server``'s connections."""
    return sum(len(connection.streams) for connection in server.connections)


@asynccontextmanager
async def bare_server(
    limits: http2.Limits, handler: Recorder
) -> AsyncIterator[tuple[http2.Server, int]]:
    """An http2.Server with ``handler`` on every connection, on a free port."""
    sock = bound_socket("127.0.0.1", 0, reuse_port=False)
    port: int = sock.getsockname()[1]
    server = http2.Server(limits, lambda connection: handler)
    await server.serve(sock)
    try:
        yield server, port
    finally:
        await Peer.close_all()
        server.drain()
        server.close()
        await asyncio.sleep(0.05)  # the transports' connection_lost


async def wait_for(condition: Callable[[], bool], timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not in time"
        await asyncio.sleep(0.01)


# ------------------------------------------------------------------ connection


def test_the_server_speaks_first_with_settings_and_acks_ours() -> None:
    """The server's first frame is its SETTINGS (the limits), then a
    connection WINDOW_UPDATE up to its window; it ACKs our SETTINGS once
    they come, not before."""

    async def go() -> None:
        async with game_service() as (server, port, _):
            peer = await Peer.connect(port)
            first = await peer.expect()
            assert (first.kind, first.flags, first.stream_id) == (http2.SETTINGS, 0, 0)
            values = dict(struct.iter_unpack(">HI", first.payload))
            limits = server.limits
            assert values == {
                http2.SETTINGS_MAX_CONCURRENT_STREAMS: limits.max_streams,
                http2.SETTINGS_INITIAL_WINDOW_SIZE: limits.window,
                http2.SETTINGS_MAX_HEADER_LIST_SIZE: limits.max_header_list,
                http2.SETTINGS_ENABLE_PUSH: 0,
            }
            update = await peer.expect()
            assert (update.kind, update.flags, update.stream_id) == (http2.WINDOW_UPDATE, 0, 0)
            assert int.from_bytes(update.payload, "big") == limits.window - 65_535
            peer.send(http2.PREFACE)
            await peer.quiet(0.3)  # no ACK before our SETTINGS
            peer.send(
                http2.frame(
                    http2.SETTINGS,
                    0,
                    0,
                    settings_payload({http2.SETTINGS_INITIAL_WINDOW_SIZE: 1000}),
                )
            )
            ack = await peer.expect()
            assert (ack.kind, ack.flags, ack.stream_id, ack.payload) == (
                http2.SETTINGS,
                http2.ACK,
                0,
                b"",
            )
            await peer.close()

    asyncio.run(go())


def test_the_preface_must_be_followed_by_settings() -> None:
    """A frame other than SETTINGS right after the preface is a connection
    error: GOAWAY PROTOCOL_ERROR, then the connection closes."""

    async def go() -> None:
        async with bare_server(http2.Limits(), Recorder()) as (_, port):
            peer = await Peer.connect(port)
            peer.send(http2.PREFACE, http2.frame(http2.PING, 0, 0, b"tooearly"))
            assert await peer.goaway() == (0, http2.PROTOCOL_ERROR)

    asyncio.run(go())


def test_a_ping_is_answered_with_its_bytes_and_a_ping_ack_is_ignored() -> None:
    """A PING gets a PING ACK carrying the same 8 bytes; a PING ACK from the
    client gets nothing: the next frame is the answer to the next PING."""

    async def go() -> None:
        async with game_service() as (_, port, _):
            peer = await Peer.connect(port)
            await peer.handshake()
            payload = bytes((0, 1, 2, 3, 0xFC, 0xFD, 0xFE, 0xFF))
            peer.send(http2.frame(http2.PING, 0, 0, payload))
            assert await peer.expect() == Frame(http2.PING, http2.ACK, 0, payload)
            peer.send(
                http2.frame(http2.PING, http2.ACK, 0, b"unasked!"),
                http2.frame(http2.PING, 0, 0, b"second.."),
            )
            assert await peer.expect() == Frame(http2.PING, http2.ACK, 0, b"second..")
            await peer.close()

    asyncio.run(go())


def test_not_a_preface_closes_the_connection_at_once() -> None:
    """An HTTP/1.1 request where the preface should be: the connection is
    closed at once (after a GOAWAY PROTOCOL_ERROR behind the SETTINGS the
    server sent on accepting it)."""

    async def go() -> None:
        async with game_service() as (_, port, _):
            peer = await Peer.connect(port)
            begun = time.monotonic()
            peer.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            frames = await peer.eof()
            assert time.monotonic() - begun < SLACK
            assert [f.kind for f in frames] == [http2.SETTINGS, http2.WINDOW_UPDATE, http2.GOAWAY]
            assert goaway_of(frames[-1]) == (0, http2.PROTOCOL_ERROR)

    asyncio.run(go())


def test_a_frame_over_16384_bytes_is_a_frame_size_error() -> None:
    """A frame head announcing 16385 bytes (we never raise
    SETTINGS_MAX_FRAME_SIZE): GOAWAY FRAME_SIZE_ERROR, then the close,
    without waiting for its payload."""

    async def go() -> None:
        async with game_service() as (_, port, _):
            peer = await Peer.connect(port)
            await peer.handshake()
            peer.send(struct.pack(">IBI", 16_385 << 8 | http2.HEADERS, http2.END_HEADERS, 1))
            assert await peer.goaway() == (0, http2.FRAME_SIZE_ERROR)

    asyncio.run(go())


def test_a_header_block_that_does_not_decode_is_a_compression_error() -> None:
    """An HPACK block indexing past both tables: GOAWAY COMPRESSION_ERROR."""

    async def go() -> None:
        async with game_service() as (_, port, _):
            peer = await Peer.connect(port)
            await peer.handshake()
            flags = http2.END_HEADERS | http2.END_STREAM
            peer.send(http2.frame(http2.HEADERS, flags, 1, b"\xff\xff\xff\x7f"))
            assert await peer.goaway() == (0, http2.COMPRESSION_ERROR)

    asyncio.run(go())


def test_a_header_block_past_its_limit_is_calm_enforced() -> None:
    """HEADERS without END_HEADERS and CONTINUATIONs past
    ``Limits.max_header_block`` compressed bytes: GOAWAY ENHANCE_YOUR_CALM
    as the block passes the limit, before any decoding."""

    async def go() -> None:
        async with game_service() as (server, port, _):
            peer = await Peer.connect(port)
            await peer.handshake()
            piece = bytes(16_384)
            count = server.limits.max_header_block // len(piece) + 1  # just past it
            peer.send(
                http2.frame(http2.HEADERS, 0, 1, piece),
                *(http2.frame(http2.CONTINUATION, 0, 1, piece) for _ in range(count - 1)),
            )
            assert await peer.goaway() == (0, http2.ENHANCE_YOUR_CALM)

    asyncio.run(go())


def test_a_header_block_cut_by_another_frame_is_a_protocol_error() -> None:
    """HEADERS without END_HEADERS followed by a frame other than its
    CONTINUATION: GOAWAY PROTOCOL_ERROR."""

    async def go() -> None:
        async with game_service() as (_, port, _):
            peer = await Peer.connect(port)
            await peer.handshake()
            block = peer.block()
            peer.send(
                http2.frame(http2.HEADERS, http2.END_STREAM, 1, block[:10]),
                http2.frame(http2.PING, 0, 0, b"cutting!"),
            )
            assert await peer.goaway() == (0, http2.PROTOCOL_ERROR)

    asyncio.run(go())


def test_a_ping_flood_is_calm_enforced() -> None:
    """``max_control_frames`` control frames in a second (the handshake's
    SETTINGS, then PINGs) are answered; the next PING is a flood: GOAWAY
    ENHANCE_YOUR_CALM, then the close."""

    async def go() -> None:
        async with bare_server(http2.Limits(max_control_frames=20), Recorder()) as (_, port):
            peer = await Peer.connect(port)
            await peer.handshake()  # one SETTINGS
            peer.send(*(http2.frame(http2.PING, 0, 0, b"%08d" % i) for i in range(20)))
            frames = await peer.eof()
            assert frames[:-1] == [Frame(http2.PING, http2.ACK, 0, b"%08d" % i) for i in range(19)]
            assert goaway_of(frames[-1]) == (0, http2.ENHANCE_YOUR_CALM)

    asyncio.run(go())


# ------------------------------------------------------------------ streams


def test_a_unary_call_over_raw_frames() -> None:
    """ListRulesets over raw frames: HEADERS (:status 200, application/grpc),
    one DATA holding one message (the presets), and trailers with
    grpc-status 0 that end the stream."""

    async def go() -> None:
        async with game_service() as (_, port, app):
            peer = await Peer.connect(port)
            await peer.handshake()
            peer.call(1, grpc_message(pb.ListRulesetsRequest().SerializeToString()))
            answer = await response(peer, 1)
            assert answer.headers == [
                (":status", "200"),
                ("content-type", "application/grpc"),
                ("grpc-accept-encoding", "identity,deflate,gzip"),
            ]
            (message,) = grpc_messages(answer.data)
            rulesets = pb.ListRulesetsResponse.FromString(message)
            assert rulesets == app.list_rulesets()
            assert len(rulesets.rulesets) > 1
            assert answer.trailers == [("grpc-status", "0")]
            kinds = [(f.kind, f.flags) for f in answer.frames if f.stream_id == 1]
            assert kinds == [
                (http2.HEADERS, http2.END_HEADERS),
                (http2.DATA, 0),
                (http2.HEADERS, http2.END_HEADERS | http2.END_STREAM),
            ]
            await peer.close()

    asyncio.run(go())


async def data_to(peer: Peer, stream_id: int, total: int) -> bytes:
    """Reads DATA of ``stream_id`` until ``total`` bytes came (its HEADERS
    first, if not yet read); nothing else on the stream may come meanwhile."""
    got = b""
    while len(got) < total:
        found = await peer.expect()
        if found.stream_id != stream_id:
            continue
        if found.kind == http2.HEADERS and not got and not found.flags & http2.END_STREAM:
            assert found.headers[0] == (":status", "200"), found
            continue
        assert found.kind == http2.DATA, found
        assert len(found.payload) <= http2.DEFAULT_FRAME_SIZE
        got += found.payload
    assert len(got) == total, "DATA past the window"
    return got


def test_the_response_waits_for_the_peers_stream_window() -> None:
    """With SETTINGS_INITIAL_WINDOW_SIZE 100 from the client, the response
    sends 100 bytes of DATA and waits; each stream WINDOW_UPDATE lets exactly
    that much more go; the message arrives whole, the trailers last."""

    async def go() -> None:
        async with game_service() as (_, port, app):
            peer = await Peer.connect(port)
            await peer.handshake({http2.SETTINGS_INITIAL_WINDOW_SIZE: 100})
            peer.call(1)
            body = await data_to(peer, 1, 100)
            assert not [f for f in await peer.ping_pong() if f.stream_id == 1]
            peer.send(http2.frame(http2.WINDOW_UPDATE, 0, 1, word(200)))
            body += await data_to(peer, 1, 200)
            assert not [f for f in await peer.ping_pong() if f.stream_id == 1]
            peer.send(
                http2.frame(http2.WINDOW_UPDATE, 0, 0, word(100_000)),
                http2.frame(http2.WINDOW_UPDATE, 0, 1, word(100_000)),
            )
            rest = await response(peer, 1, headers=[(":status", "200")])
            assert rest.trailers == [("grpc-status", "0")]
            (message,) = grpc_messages(body + rest.data)
            assert pb.ListRulesetsResponse.FromString(message) == app.list_rulesets()
            assert len(body + rest.data) > 300
            await peer.close()

    asyncio.run(go())


def test_the_response_waits_for_the_peers_connection_window() -> None:
    """A 100,000-byte message with a large stream window and the default
    connection window: 65,535 bytes of DATA (frames of at most 16,384), then
    nothing until a connection WINDOW_UPDATE; then the rest and the trailers."""

    async def big(request: bytes, context: CallContext) -> bytes:
        return bytes(range(256)) * 390 + bytes(160)

    async def go() -> None:
        async with own_methods(own_method("Big", big)) as (_, port):
            peer = await Peer.connect(port)
            await peer.handshake({http2.SETTINGS_INITIAL_WINDOW_SIZE: 1 << 20})
            peer.call(1, path="/test.Own/Big")
            body = await data_to(peer, 1, 65_535)
            assert not [f for f in await peer.ping_pong() if f.stream_id == 1]
            peer.send(http2.frame(http2.WINDOW_UPDATE, 0, 0, word(1 << 20)))
            rest = await response(peer, 1, headers=[(":status", "200")])
            assert rest.trailers == [("grpc-status", "0")]
            assert all(
                len(f.payload) <= http2.DEFAULT_FRAME_SIZE
                for f in rest.frames
                if f.kind == http2.DATA
            )
            (message,) = grpc_messages(body + rest.data)
            assert message == await big(b"", CallContext([], "", None))
            await peer.close()

    asyncio.run(go())


def test_the_receive_window_is_given_back_as_data_arrives() -> None:
    """Half a window of DATA on a stream: the server gives exactly that much
    back at once, on the connection and on the stream (WINDOW_UPDATEs);
    less than half, or DATA ending the stream, is not given back yet."""

    async def go() -> None:
        window = 1 << 17
        async with bare_server(http2.Limits(window=window), Recorder()) as (_, port):
            peer = await Peer.connect(port)
            await peer.handshake()
            assert peer.settings[http2.SETTINGS_INITIAL_WINDOW_SIZE] == window
            assert 65_535 + peer.window_update == window
            piece = bytes(http2.DEFAULT_FRAME_SIZE)
            half = window // 2 // len(piece)
            peer.send(
                http2.frame(http2.HEADERS, http2.END_HEADERS, 1, peer.block()),
                *(http2.frame(http2.DATA, 0, 1, piece) for _ in range(half)),
            )
            assert await peer.ping_pong() == [
                Frame(http2.WINDOW_UPDATE, 0, 0, word(window // 2)),
                Frame(http2.WINDOW_UPDATE, 0, 1, word(window // 2)),
            ]
            peer.send(
                http2.frame(http2.DATA, 0, 1, piece),
                http2.frame(http2.DATA, http2.END_STREAM, 1, piece),
            )
            assert await peer.ping_pong() == []
            await peer.close()

    asyncio.run(go())


def test_request_bytes_the_application_does_not_take_are_capped() -> None:
    """Request bytes the application has not taken, past ``2 x window`` on
    one connection (``Limits.max_held``): the stream that goes over is reset
    ENHANCE_YOUR_CALM (its handler told), the others and the connection go on."""

    async def go() -> None:
        recorder = Recorder()
        limits = http2.Limits(window=1 << 16)
        async with bare_server(limits, recorder) as (_, port):
            peer = await Peer.connect(port)
            await peer.handshake()
            piece = bytes(http2.DEFAULT_FRAME_SIZE)
            per_stream = limits.max_held // len(piece)  # 8 pieces: at the cap, not past it
            peer.send(
                http2.frame(http2.HEADERS, http2.END_HEADERS, 1, peer.block()),
                *(http2.frame(http2.DATA, 0, 1, piece) for _ in range(per_stream)),
            )
            assert not [f for f in await peer.ping_pong() if f.kind == http2.RST_STREAM]
            peer.send(http2.frame(http2.DATA, 0, 1, piece))
            resets = [f for f in await peer.ping_pong() if f.kind == http2.RST_STREAM]
            assert resets == [Frame(http2.RST_STREAM, 0, 1, word(http2.ENHANCE_YOUR_CALM))]
            assert (recorder.resets, recorder.held[1]) == ([1], limits.max_held)

            # Two streams together: the one whose DATA goes over is reset.
            half = per_stream // 2 + 1
            peer.send(
                http2.frame(http2.HEADERS, http2.END_HEADERS, 3, peer.block()),
                http2.frame(http2.HEADERS, http2.END_HEADERS, 5, peer.block()),
                *(http2.frame(http2.DATA, 0, 3, piece) for _ in range(half)),
                *(http2.frame(http2.DATA, 0, 5, piece) for _ in range(half)),
            )
            resets = [f for f in await peer.ping_pong() if f.kind == http2.RST_STREAM]
            assert resets == [Frame(http2.RST_STREAM, 0, 5, word(http2.ENHANCE_YOUR_CALM))]
            assert recorder.resets == [1, 5]
            assert recorder.held[3] == half * len(piece)
            await peer.close()

    asyncio.run(go())


def test_a_bidi_stream_holds_at_most_max_held_of_requests() -> None:
    """A reflection stream (BIDI_STREAMING) whose answers cannot go (the
    client's stream window is 0), sent requests past ``Limits.max_held``:
    the stream is reset ENHANCE_YOUR_CALM rather than queue them all."""

    async def go() -> None:
        async with game_service() as (server, port, _):
            peer = await Peer.connect(port)
            await peer.handshake({http2.SETTINGS_INITIAL_WINDOW_SIZE: 0})
            path = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
            request = grpc_message(b"\x3a\x00")  # list_services: ""
            piece = request * (http2.DEFAULT_FRAME_SIZE // len(request))
            pieces = server.limits.max_held // len(piece) + 8
            peer.send(
                http2.frame(http2.HEADERS, http2.END_HEADERS, 1, peer.block(path)),
                *(http2.frame(http2.DATA, 0, 1, piece) for _ in range(pieces)),
            )
            await asyncio.wait_for(peer.writer.drain(), TIMEOUT)
            await asyncio.sleep(0.2)
            resets = [f for f in await peer.ping_pong() if f.kind == http2.RST_STREAM]
            assert resets == [Frame(http2.RST_STREAM, 0, 1, word(http2.ENHANCE_YOUR_CALM))], (
                f"{pieces * len(piece)} bytes of requests taken, max_held {server.limits.max_held}"
            )

    asyncio.run(go())


def test_a_window_of_the_default_size_sends_no_zero_window_update() -> None:
    """With Limits.window at HTTP/2's default 65,535, the server's handshake
    holds no WINDOW_UPDATE of 0 (RFC 9113 6.9: a PROTOCOL_ERROR for the peer)."""

    async def go() -> None:
        async with bare_server(http2.Limits(window=65_535), Recorder()) as (_, port):
            peer = await Peer.connect(port)
            peer.send(http2.PREFACE, http2.frame(http2.SETTINGS, 0, 0))
            frames = await peer.ping_pong()
            updates = [f for f in frames if f.kind == http2.WINDOW_UPDATE]
            assert all(int.from_bytes(f.payload, "big") > 0 for f in updates), updates
            await peer.close()

    asyncio.run(go())


def test_more_streams_than_max_streams_are_refused() -> None:
    """With ``max_streams`` 2 (announced as SETTINGS_MAX_CONCURRENT_STREAMS),
    a third stream open at once gets RST_STREAM REFUSED_STREAM and never
    reaches the application; once one ends, a new one is taken."""

    async def go() -> None:
        recorder = Recorder()
        async with bare_server(http2.Limits(max_streams=2), recorder) as (server, port):
            peer = await Peer.connect(port)
            await peer.handshake()
            assert peer.settings[http2.SETTINGS_MAX_CONCURRENT_STREAMS] == 2
            peer.send(
                *(http2.frame(http2.HEADERS, http2.END_HEADERS, i, peer.block()) for i in (1, 3, 5))
            )
            refused = await peer.expect()
            assert refused == Frame(http2.RST_STREAM, 0, 5, word(http2.REFUSED_STREAM))
            assert recorder.requests == [1, 3]
            assert streams_open(server) == 2
            peer.send(
                http2.frame(http2.RST_STREAM, 0, 1, word(http2.CANCEL)),
                http2.frame(http2.HEADERS, http2.END_HEADERS, 7, peer.block()),
            )
            assert not await peer.ping_pong()
            assert recorder.requests == [1, 3, 7]
            assert recorder.resets == [1]
            await peer.close()

    asyncio.run(go())


def test_streams_on_even_ids_or_going_backwards_end_the_connection() -> None:
    """A client's stream on an even id: GOAWAY PROTOCOL_ERROR; a new stream
    on an id below the last one (a closed stream): GOAWAY STREAM_CLOSED
    naming the last stream taken."""

    async def go() -> None:
        recorder = Recorder()
        async with bare_server(http2.Limits(), recorder) as (_, port):
            peer = await Peer.connect(port)
            await peer.handshake()
            peer.send(http2.frame(http2.HEADERS, http2.END_HEADERS, 2, peer.block()))
            assert await peer.goaway() == (0, http2.PROTOCOL_ERROR)

            peer = await Peer.connect(port)
            await peer.handshake()
            peer.send(
                http2.frame(http2.HEADERS, http2.END_HEADERS, 5, peer.block()),
                http2.frame(http2.HEADERS, http2.END_HEADERS, 3, peer.block()),
            )
            assert await peer.goaway() == (5, http2.STREAM_CLOSED)
            assert recorder.requests == [5]
            await wait_for(lambda: recorder.resets == [5])  # the connection's end resets it

    asyncio.run(go())


def test_a_reset_stream_is_dropped_by_the_application() -> None:
    """RST_STREAM on a stream the application has not answered: its handler
    is told (``reset``) once, and nothing more is sent on the stream."""

    async def go() -> None:
        recorder = Recorder()
        async with bare_server(http2.Limits(), recorder) as (server, port):
            peer = await Peer.connect(port)
            await peer.handshake()
            peer.send(http2.frame(http2.HEADERS, http2.END_HEADERS, 1, peer.block()))
            assert not await peer.ping_pong()
            assert (recorder.requests, streams_open(server)) == ([1], 1)
            peer.send(http2.frame(http2.RST_STREAM, 0, 1, word(http2.CANCEL)))
            assert not await peer.ping_pong()
            assert (recorder.resets, streams_open(server)) == ([1], 0)
            await peer.close()

    asyncio.run(go())


def test_rapid_reset_is_calm_enforced() -> None:
    """Streams opened and reset at once, past ``max_control_frames`` control
    frames in a second (the handshake's SETTINGS and 9 resets; the rapid-reset
    attack): at the 10th reset, GOAWAY ENHANCE_YOUR_CALM naming its stream;
    every stream's handler is told it was reset."""

    async def go() -> None:
        recorder = Recorder()
        limits = http2.Limits(max_control_frames=10)
        async with bare_server(limits, recorder) as (_, port):
            peer = await Peer.connect(port)
            await peer.handshake()
            ids = list(range(1, 21, 2))  # 10 streams
            peer.send(
                *(
                    http2.frame(http2.HEADERS, http2.END_HEADERS, i, peer.block())
                    + http2.frame(http2.RST_STREAM, 0, i, word(http2.CANCEL))
                    for i in ids
                )
            )
            assert await peer.goaway() == (ids[-1], http2.ENHANCE_YOUR_CALM)
            await wait_for(lambda: sorted(recorder.resets) == ids)
            assert recorder.requests == ids

    asyncio.run(go())


async def new_game(app: GameApp) -> str:
    created = await app.create_game(
        pb.CreateGameRequest(players=[pb.Player(), pb.Player()]), Caller()
    )
    return created.game.game_id


def test_a_reset_watch_is_cancelled_on_the_loop() -> None:
    """A WatchGame of the real service reset by the client after its
    snapshot: its task is cancelled and the watch released (``app.watching``
    back to 0); the server sends nothing more on the stream."""

    async def go() -> None:
        async with game_service() as (server, port, app):
            game_id = await new_game(app)
            first = await snapshot(app, game_id)
            assert pb.GameEvent.FromString(first).WhichOneof("kind") == "snapshot"
            peer = await Peer.connect(port)
            await peer.handshake()
            request = pb.WatchGameRequest(game_id=game_id).SerializeToString()
            peer.call(1, grpc_message(request), path=WATCH_GAME)
            assert grpc_messages(await data_to(peer, 1, 5 + len(first))) == [first]
            assert (app.watching, len(server.tasks)) == (1, 1)
            peer.send(http2.frame(http2.RST_STREAM, 0, 1, word(http2.CANCEL)))
            await wait_for(lambda: app.watching == 0 and not server.tasks)
            assert not [f for f in await peer.ping_pong() if f.stream_id == 1]
            await peer.close()

    asyncio.run(go())


async def snapshot(app: GameApp, game_id: str) -> bytes:
    """The snapshot event a spectator's WatchGame starts with, serialized."""
    events = app.watch_game(game_id, None, Caller())
    try:
        first = await anext(events)
    finally:
        await events.aclose()
    assert first is not None
    (event,) = first
    return event.SerializeToString()


# ------------------------------------------------------------------ gRPC statuses


def test_an_unknown_method_is_unimplemented_trailers_only() -> None:
    """A path not served: one HEADERS ending the stream (trailers-only),
    :status 200 and grpc-status 12 UNIMPLEMENTED."""

    async def go() -> None:
        async with game_service() as (_, port, _):
            peer = await Peer.connect(port)
            await peer.handshake()
            peer.call(1, path="/railyard.v1.GameService/NoSuchMethod")
            answer = await response(peer, 1)
            assert answer.headers == answer.trailers
            assert answer.trailers == [
                (":status", "200"),
                ("content-type", "application/grpc"),
                ("grpc-accept-encoding", "identity,deflate,gzip"),
                ("grpc-status", "12"),
                ("grpc-message", "Method not found!"),
            ]
            assert [f.kind for f in answer.frames if f.stream_id == 1] == [http2.HEADERS]
            assert answer.data == b""
            await peer.close()

    asyncio.run(go())


def test_trailers_on_a_stream_answered_early_are_ignored() -> None:
    """A request answered on its HEADERS (an unknown method: trailers-only,
    then RST_STREAM NO_ERROR as its body is not needed) whose client had
    already sent its trailing HEADERS: they are ignored, the connection
    serves on."""

    async def go() -> None:
        async with game_service() as (_, port, _):
            peer = await Peer.connect(port)
            await peer.handshake()
            trailers = peer.encoder.encode([("x-trailer", "1")])
            peer.send(
                http2.frame(http2.HEADERS, http2.END_HEADERS, 1, peer.block("/x.Y/Z")),
                http2.frame(http2.HEADERS, http2.END_HEADERS | http2.END_STREAM, 1, trailers),
            )
            answer = await response(peer, 1)
            assert answer.status == "12"
            reset = await peer.expect()
            assert reset == Frame(http2.RST_STREAM, 0, 1, word(http2.NO_ERROR))
            peer.call(3)
            found, _ = await peer.until(lambda f: f.stream_id == 3 or f.kind == http2.GOAWAY)
            assert found.kind != http2.GOAWAY, f"GOAWAY {goaway_of(found)}"
            served = await response(peer, 3, headers=list(found.headers))
            assert served.status == "0"
            await peer.close()

    asyncio.run(go())


def test_a_content_type_not_grpc_is_415() -> None:
    """content-type text/plain: HTTP :status 415, trailers-only, no gRPC status."""

    async def go() -> None:
        async with game_service() as (_, port, _):
            peer = await Peer.connect(port)
            await peer.handshake()
            peer.call(1, content_type="text/plain")
            answer = await response(peer, 1)
            assert answer.trailers == [(":status", "415"), ("content-type", "text/plain")]
            assert answer.status is None
            await peer.close()

    asyncio.run(go())


def test_a_unary_call_takes_exactly_one_message() -> None:
    """A unary request whose body holds two messages, and one with no body
    at all (HEADERS ending the stream): grpc-status 13 INTERNAL each."""

    async def go() -> None:
        async with game_service() as (_, port, _):
            peer = await Peer.connect(port)
            await peer.handshake()
            peer.call(1, grpc_message(b"") * 2)
            two = await response(peer, 1)
            assert (two.status, two.message) == (
                "13",
                "a unary request takes one message, not more",
            )
            flags = http2.END_HEADERS | http2.END_STREAM
            peer.send(http2.frame(http2.HEADERS, flags, 3, peer.block()))
            none = await response(peer, 3)
            assert (none.status, none.message) == ("13", "the call has no request message")
            await peer.close()

    asyncio.run(go())


def test_grpc_timeout_ends_a_watch_deadline_exceeded() -> None:
    """A WatchGame on a game where nothing happens, with grpc-timeout 300m:
    the snapshot, then at the deadline the server's trailers with
    grpc-status 4 DEADLINE_EXCEEDED; the watch is released."""

    async def go() -> None:
        async with game_service() as (_, port, app):
            game_id = await new_game(app)
            peer = await Peer.connect(port)
            await peer.handshake()
            request = pb.WatchGameRequest(game_id=game_id).SerializeToString()
            begun = time.monotonic()
            peer.call(1, grpc_message(request), path=WATCH_GAME, extra=[("grpc-timeout", "300m")])
            answer = await response(peer, 1)
            took = time.monotonic() - begun
            assert 0.29 <= took < 0.3 + SLACK, took
            (message,) = grpc_messages(answer.data)
            assert pb.GameEvent.FromString(message).WhichOneof("kind") == "snapshot"
            assert (answer.status, answer.message) == ("4", "Deadline Exceeded")
            await wait_for(lambda: app.watching == 0)
            await peer.close()

    asyncio.run(go())


def test_a_gzip_request_through_grpcio_is_served() -> None:
    """grpcio's client compressing its request (gzip): the call succeeds."""

    async def go() -> None:
        async with (
            game_service() as (_, port, _),
            grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel,
        ):
            stub = pb_grpc.GameServiceStub(channel)
            names = ["Ann " * 15, "Bob " * 15]
            created = await stub.CreateGame(
                pb.CreateGameRequest(players=[pb.Player(display_name=n) for n in names]),
                compression=grpc.Compression.Gzip,
            )
            assert [p.display_name for p in created.game.players] == names

    asyncio.run(go())


@pytest.mark.parametrize(
    ("encoding", "compress"),
    [("gzip", gzip.compress), ("deflate", zlib.compress)],
)
def test_a_compressed_request_over_raw_frames_is_served(
    encoding: str, compress: Callable[[bytes], bytes]
) -> None:
    """A message with the compressed flag 1 and grpc-encoding gzip or
    deflate (zlib): decompressed and served, grpc-status 0."""

    async def go() -> None:
        async with game_service() as (_, port, _):
            peer = await Peer.connect(port)
            await peer.handshake()
            names = ["Ann " * 15, "Bob " * 15]
            request = pb.CreateGameRequest(players=[pb.Player(display_name=n) for n in names])
            peer.call(
                1,
                grpc_message(compress(request.SerializeToString()), compressed=True),
                path="/railyard.v1.GameService/CreateGame",
                extra=[("grpc-encoding", encoding)],
            )
            answer = await response(peer, 1)
            assert answer.status == "0", answer.trailers
            (message,) = grpc_messages(answer.data)
            created = pb.CreateGameResponse.FromString(message)
            assert [p.display_name for p in created.game.players] == names
            await peer.close()

    asyncio.run(go())


def test_compressed_messages_need_a_known_grpc_encoding() -> None:
    """The compressed flag 1 without grpc-encoding: grpc-status 13 INTERNAL;
    a grpc-encoding not served (br): grpc-status 12 UNIMPLEMENTED, the
    encodings served named in grpc-accept-encoding."""

    async def go() -> None:
        async with game_service() as (_, port, _):
            peer = await Peer.connect(port)
            await peer.handshake()
            peer.call(1, grpc_message(gzip.compress(b""), compressed=True))
            unnamed = await response(peer, 1)
            assert (unnamed.status, unnamed.message) == (
                "13",
                "a compressed message without a grpc-encoding to decompress it",
            )
            peer.call(3, extra=[("grpc-encoding", "br")])
            unknown = await response(peer, 3)
            assert unknown.status == "12"
            assert ("grpc-accept-encoding", "identity,deflate,gzip") in unknown.trailers
            await peer.close()

    asyncio.run(go())


# ------------------------------------------------------------------ keepalive

#: Seconds of keepalive_time and keepalive_timeout.
KEEPALIVE = 0.3


def test_a_silent_connection_is_pinged_at_keepalive_time() -> None:
    """With keepalive_time 0.3 s (idle_timeout left at 60 s), a client that
    says nothing more after its SETTINGS is sent a keepalive PING within
    two keepalive periods."""

    async def go() -> None:
        limits = http2.Limits(keepalive_time=KEEPALIVE, keepalive_timeout=KEEPALIVE)
        async with bare_server(limits, Recorder()) as (_, port):
            peer = await Peer.connect(port)
            await peer.handshake()
            ping = await peer.expect(timeout=2 * KEEPALIVE + SLACK)
            assert (ping.kind, ping.flags, len(ping.payload)) == (http2.PING, 0, 8)
            await peer.close()

    asyncio.run(go())


def keepalive_limits() -> http2.Limits:
    """Keepalive at 0.3 s, the idle timeout no longer."""
    return http2.Limits(
        keepalive_time=KEEPALIVE, keepalive_timeout=KEEPALIVE, idle_timeout=KEEPALIVE
    )


def test_an_unanswered_keepalive_ping_closes_the_connection() -> None:
    """A client silent with a call open is pinged after a keepalive period of
    silence; not answering, it is closed keepalive_timeout later (and not
    before keepalive_time + keepalive_timeout); the call is reset."""

    async def go() -> None:
        recorder = Recorder()
        async with bare_server(keepalive_limits(), recorder) as (_, port):
            peer = await Peer.connect(port)
            begun = time.monotonic()
            await peer.handshake(
                then=http2.frame(http2.HEADERS, http2.END_HEADERS, 1, peer.block())
            )
            ping = await peer.expect(timeout=2 * KEEPALIVE + SLACK)
            pinged = time.monotonic()
            assert (ping.kind, ping.flags, ping.stream_id, len(ping.payload)) == (
                http2.PING,
                0,
                0,
                8,
            )
            assert await peer.eof(timeout=KEEPALIVE + SLACK) == []
            closed = time.monotonic()
            assert closed - begun >= 2 * KEEPALIVE - 0.05
            assert closed - pinged >= KEEPALIVE - 0.05
            assert closed - begun < 3 * KEEPALIVE + SLACK
            await wait_for(lambda: recorder.resets == [1])

    asyncio.run(go())


def test_a_connection_that_answers_keepalive_pings_stays_open() -> None:
    """A client with a call open that answers every keepalive PING (and
    says nothing else) is pinged again and again and never closed."""

    async def go() -> None:
        recorder = Recorder()
        async with bare_server(keepalive_limits(), recorder) as (_, port):
            peer = await Peer.connect(port)
            await peer.handshake(
                then=http2.frame(http2.HEADERS, http2.END_HEADERS, 1, peer.block())
            )
            answered = 0
            deadline = time.monotonic() + 8 * KEEPALIVE
            while time.monotonic() < deadline:
                ping = await peer.expect(timeout=2 * KEEPALIVE + SLACK)
                assert (ping.kind, ping.flags) == (http2.PING, 0), ping
                peer.send(http2.frame(http2.PING, http2.ACK, 0, ping.payload))
                answered += 1
            assert answered >= 3
            assert not await peer.ping_pong()  # still open
            assert recorder.resets == []
            await peer.close()

    asyncio.run(go())


# ------------------------------------------------------------------ endings


def test_goaway_from_the_client_with_no_stream_open_closes_the_connection() -> None:
    """The client's GOAWAY with no stream open: the server closes at once,
    sending nothing more."""

    async def go() -> None:
        async with game_service() as (_, port, _):
            peer = await Peer.connect(port)
            await peer.handshake()
            peer.send(http2.frame(http2.GOAWAY, 0, 0, word(0) + word(http2.NO_ERROR)))
            begun = time.monotonic()
            assert await peer.eof() == []
            assert time.monotonic() - begun < SLACK

    asyncio.run(go())


def slow_method(started: asyncio.Event, cancelled: list[bool]) -> Method:
    """A unary method answering ``done:`` + its request after 0.3 s."""

    async def slow(request: bytes, context: CallContext) -> bytes:
        started.set()
        try:
            await asyncio.sleep(0.3)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return b"done:" + request

    return own_method("Slow", slow)


def test_goaway_from_the_client_lets_its_open_call_finish() -> None:
    """The client's GOAWAY with a call open: the call is answered in full
    (grpc-status 0), then the server closes the connection."""

    async def go() -> None:
        started = asyncio.Event()
        async with own_methods(slow_method(started, [])) as (_, port):
            peer = await Peer.connect(port)
            await peer.handshake()
            peer.call(1, grpc_message(b"x"), path="/test.Own/Slow")
            await asyncio.wait_for(started.wait(), TIMEOUT)
            peer.send(http2.frame(http2.GOAWAY, 0, 0, word(0) + word(http2.NO_ERROR)))
            answer = await response(peer, 1)
            assert answer.status == "0"
            assert grpc_messages(answer.data) == [b"done:x"]
            assert await peer.eof() == []

    asyncio.run(go())


def test_a_graceful_stop_finishes_calls_in_flight_and_refuses_new_ones() -> None:
    """``stop(grace=2)`` with a call in flight: GOAWAY NO_ERROR naming that
    stream; a new HEADERS after it gets RST_STREAM REFUSED_STREAM; the call
    in flight completes (grpc-status 0), then the connection closes and the
    stop returns without waiting out the grace."""

    async def go() -> None:
        started = asyncio.Event()
        cancelled: list[bool] = []
        async with own_methods(slow_method(started, cancelled)) as (server, port):
            peer = await Peer.connect(port)
            await peer.handshake()
            peer.call(1, grpc_message(b"x"), path="/test.Own/Slow")
            await asyncio.wait_for(started.wait(), TIMEOUT)
            begun = time.monotonic()
            stopping = asyncio.create_task(server.stop(grace=2))
            goaway, before = await peer.until(lambda f: f.kind == http2.GOAWAY)
            assert before == []
            assert goaway_of(goaway) == (1, http2.NO_ERROR)
            peer.call(3, path="/test.Own/Slow")
            frames = await peer.eof()
            assert [f for f in frames if f.stream_id == 3] == [
                Frame(http2.RST_STREAM, 0, 3, word(http2.REFUSED_STREAM))
            ]
            ours = [f for f in frames if f.stream_id == 1]
            assert [f.kind for f in ours] == [http2.HEADERS, http2.DATA, http2.HEADERS]
            assert ours[0].headers[0] == (":status", "200")
            assert grpc_messages(ours[1].payload) == [b"done:x"]
            assert ours[2].headers == (("grpc-status", "0"),)
            assert ours[2].flags & http2.END_STREAM
            await asyncio.wait_for(stopping, TIMEOUT)
            assert time.monotonic() - begun < 2
            assert cancelled == []

    asyncio.run(go())


def test_a_stop_without_grace_resets_calls_in_flight() -> None:
    """``stop(None)`` with a call in flight: GOAWAY NO_ERROR, then the call's
    task is cancelled and its stream reset (RST_STREAM CANCEL), then the
    connection closes."""

    async def go() -> None:
        started = asyncio.Event()
        cancelled: list[bool] = []
        async with own_methods(slow_method(started, cancelled)) as (server, port):
            peer = await Peer.connect(port)
            await peer.handshake()
            peer.call(1, grpc_message(b"x"), path="/test.Own/Slow")
            await asyncio.wait_for(started.wait(), TIMEOUT)
            await server.stop(None)
            frames = await peer.eof()
            assert [(f.kind, f.stream_id) for f in frames] == [
                (http2.GOAWAY, 0),
                (http2.RST_STREAM, 1),
            ]
            assert goaway_of(frames[0]) == (1, http2.NO_ERROR)
            assert frames[1].payload == word(http2.CANCEL)
            assert cancelled == [True]

    asyncio.run(go())


# ------------------------------------------------------------------ metadata

Recorded = list[tuple[tuple[tuple[str, str | bytes], ...], str]]


def recording_method(seen: Recorded) -> Method:
    async def record(request: bytes, context: CallContext) -> bytes:
        seen.append((context.invocation_metadata(), context.peer()))
        return b""

    return own_method("Record", record)


def test_metadata_reaches_the_handler_as_grpc_gives_it() -> None:
    """Over raw frames: text keys as str, ``-bin`` values decoded from base64
    (padded or not) to bytes, in order, a repeated key twice; pseudo-headers,
    content-type, te, grpc-timeout and grpc-accept-encoding left out;
    ``peer()`` is ``ipv4:127.0.0.1:<the client's port>``."""

    async def go() -> None:
        seen: Recorded = []
        async with own_methods(recording_method(seen)) as (_, port):
            peer = await Peer.connect(port)
            await peer.handshake()
            blob = b"\x00\xff\x10bin"
            peer.call(
                1,
                path="/test.Own/Record",
                extra=[
                    ("grpc-timeout", "5S"),
                    ("x-text", "hello"),
                    ("x-blob-bin", base64.b64encode(blob).decode().rstrip("=")),
                    ("grpc-accept-encoding", "gzip"),
                    ("x-padded-bin", "YQ=="),
                    ("x-text", "again"),
                ],
            )
            assert (await response(peer, 1)).status == "0"
            assert seen == [
                (
                    (
                        ("x-text", "hello"),
                        ("x-blob-bin", blob),
                        ("x-padded-bin", b"a"),
                        ("x-text", "again"),
                    ),
                    f"ipv4:127.0.0.1:{peer.local_port}",
                )
            ]
            await peer.close()

    asyncio.run(go())


def test_metadata_from_grpcio_reaches_the_handler() -> None:
    """Through grpcio's client (which base64-encodes a ``-bin`` value and
    sends grpc-timeout, te, user-agent...): the handler sees the bytes and
    the text as sent, none of the protocol's own headers."""

    async def go() -> None:
        seen: Recorded = []
        async with own_methods(recording_method(seen)) as (_, port):
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                call = channel.unary_unary(
                    "/test.Own/Record", request_serializer=None, response_deserializer=None
                )
                blob = bytes((0, 1, 0xFE, 0xFF))
                await call(b"", metadata=(("x-blob-bin", blob), ("x-text", "hi")), timeout=5)
            ((metadata, peer),) = seen
            assert ("x-blob-bin", blob) in metadata
            assert ("x-text", "hi") in metadata
            protocol = {"content-type", "te", "grpc-timeout", "grpc-accept-encoding"}
            assert not [k for k, _ in metadata if k.startswith(":") or k in protocol]
            host, _, client_port = peer.rpartition(":")
            assert host == "ipv4:127.0.0.1"
            assert client_port.isdigit()

    asyncio.run(go())


def test_doctests() -> None:
    """service.http2's and service.grpc_server's doctests (make unit collects
    none under service/)."""
    import doctest

    from service import grpc_server

    for module in (http2, grpc_server):
        failures, tried = doctest.testmod(module)
        assert tried, module.__name__
        assert not failures, module.__name__


def test_a_peer_that_does_not_read_is_not_read_from() -> None:
    """A client that sends call after call and reads none of the answers:
    once the answers it left unread fill the server's send buffer, the
    server stops reading from it (asyncio's pause_writing), so what it holds
    for that client stays bounded instead of growing with every call."""
    calls = 60_000

    async def go() -> None:
        async with own_methods() as (server, port):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", port))
            reader, writer = await asyncio.open_connection(sock=sock)
            peer = Peer(reader, writer)
            await peer.handshake()
            flags = http2.END_HEADERS | http2.END_STREAM
            first = http2.frame(http2.HEADERS, flags, 1, peer.block("/test.Own/Missing"))
            block = peer.block("/test.Own/Missing")  # all indexed now: the same every time
            peer.send(
                first,
                *(http2.frame(http2.HEADERS, flags, 2 * i + 3, block) for i in range(calls - 1)),
            )
            # Each answer is a trailers-only HEADERS of about 110 bytes: read
            # on, the server would hold about 6.6 MB for this peer.
            await asyncio.sleep(3)
            (connection,) = server.wire.connections
            assert connection.transport is not None
            held = connection.transport.get_write_buffer_size()
            assert held < 2_000_000, held
            assert connection._last_stream < 2 * calls - 1  # it stopped reading
            await peer.close()

    asyncio.run(go())
