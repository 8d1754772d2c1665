"""HTTP/2 floods against the gRPC port of a real ``railyard serve``, while a
well-behaved grpcio client plays.

Each test starts one ``railyard serve`` process (one worker, Redis) and plays
a warm-up game through it with grpcio, then measures the process's idle
memory (VmRSS). An attacker then floods the gRPC port for a few seconds,
frame by frame with ``h2`` over plain sockets (``hyperframe`` for the frames
h2 will not send: invalid, unsolicited, unknown), while the same client goes
on playing, a few calls every 100 ms:

1. ``server_resets``: complete GetGame calls, each followed by a WINDOW_UPDATE
   of 0 on its stream, a protocol error the server answers by resetting the
   stream it has already started serving, or the connection
   ("MadeYouReset": resets the server sends are not the client's, which a
   rapid-reset counter counts);
2. ``settings_flood``: SETTINGS frames of 2,730 INITIAL_WINDOW_SIZE entries
   each, 10 a second, on a connection holding 2,000 streams open (a server
   that applies every entry to every stream does 5 million updates a frame);
3. ``window_trickle``: an initial window of 0, GetGame calls whose answers
   wait on it, and WINDOW_UPDATEs of +1 on their streams as fast as they go
   (one DATA frame of one byte for each);
4. ``half_open``: HEADERS without END_STREAM, 2,000 streams on each of 10
   connections (or as many as the server allows), held;
5. ``control_flood``: PRIORITY, empty DATA, frames of an unknown type, PING
   and unsolicited SETTINGS ACKs, as fast as possible;
6. ``rapid_reset``: on 10 connections, calls (HEADERS and the request's
   DATA) reset as soon as sent;
7. ``pipelined_calls``: valid GetGame calls pipelined on one connection
   whose answers are read slowly (a few KiB every 50 ms).

During each, the client's p99 latency stays under 100 ms, every one of its
calls succeeds, and the server's RSS stays under twice its idle value. A
connection the server closes (GOAWAY, reset, EOF) is the server defending
itself: the attacker counts it and reconnects, up to a bound. Each test
prints what it saw (``pytest -s``): latencies, memory, and the attacker's
tally of what it sent and how the server answered.

Written against the protocol (RFC 9113, gRPC over HTTP/2), not against one
server: nothing here knows how the server is built. Each test has a server
of its own (started in under a second), so that what one flood leaves
behind (memory the allocator keeps, connections still closing, a loop still
catching up) is not measured as the next one's: the idle RSS is measured per
test, after that test's warm-up game.

The attacker is a subprocess (``python -m tests.test_grpc_floods ATTACK
PORT GAME_ID SECONDS``, its tally as JSON on its last line): in the test's
own process it would take the GIL from the client it is measured against.
It runs at a lower CPU priority: on this 2-core machine it stands for a
client on another machine, whose CPU is not the server's or the client's.
Latency is real time (``time.perf_counter``), which is the point here; the
limit leaves room for a loaded machine, a flood whose p99 misses it is run
once more on a fresh server (the machine's own stalls are not the
server's), and the floods of this module run one at a time across xdist
workers (a file lock), not two on two cores;
``make unit`` runs them (marked ``flood``) alone, after the rest of the suite,
so no other test's load stands in the measured client's way.
"""

from __future__ import annotations

import abc
import contextlib
import fcntl
import json
import os
import select
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    Event,
    RemoteSettingsChanged,
    ResponseReceived,
    StreamEnded,
    StreamReset,
    TrailersReceived,
)
from h2.exceptions import H2Error
from h2.settings import SettingCodes
from hyperframe.frame import (
    ExtensionFrame,
    Frame,
    PriorityFrame,
    SettingsFrame,
    WindowUpdateFrame,
)

from railyard_api import game_service_pb2 as pb
from railyard_api import game_service_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parent.parent

#: The client's p99 latency while a flood runs: a flood must not make the
#: game feel slow to anyone else.
P99_LIMIT = 0.100
#: The server's RSS during a flood, against its idle RSS.
RSS_FACTOR = 2.0
#: Seconds between the starts of two of the client's calls: a few calls
#: every 100 ms, so that a stall of the server shows in the p99 however
#: short, without the client being a load of its own.
PACE = 0.030
#: A call of the client that takes longer has failed (it counts as such).
CALL_TIMEOUT = 10.0
#: Seconds each flood lasts (the half-open one sets up 20,000 streams first).
FLOOD_SECONDS = 6.0
#: Times each of an attack's connections may be opened again over its
#: whole run, and how soon after the last: the server closing one is its
#: defence, so reconnecting is bounded, but paced so that a server that
#: closes a flooding connection at once still meets the flood for the
#: whole attack (150 at 20 a second outlast it; the tally says when a
#: connection has used them up).
RECONNECTS = 150
RECONNECT_EVERY = 0.05
#: Bytes an attacker connection may have queued unsent before it makes no
#: more (a server that stops reading holds the attacker back, as TCP does).
BACKLOG = 256 * 1024

#: The client's games: one person (the client) against a greedy bot on
#: double-six, one round, so that games end and new ones start while
#: floods run (CreateGame is measured too).
RULESET = pb.Ruleset(set_max=6, hand_size=7, rounds=1)
PLAYERS = [pb.Player(display_name="Outside"), pb.Player(bot=pb.BOT_LEVEL_GREEDY)]

GET_GAME = "/railyard.v1.GameService/GetGame"
#: A SETTINGS payload that fits one frame of the default maximum size
#: (16,384 bytes): 2,730 entries, all INITIAL_WINDOW_SIZE, alternating
#: 65,534 and 65,535 and ending on 65,535 (windows stay where they were).
MANY_SETTINGS = b"".join(
    struct.pack(">HI", SettingCodes.INITIAL_WINDOW_SIZE, 65_534 + i % 2) for i in range(2_730)
)


# ------------------------------------------------------------------ the attacker


@dataclass
class Tally:
    """What an attack sent and what the server did about it."""

    attack: str = ""
    seconds: float = 0.0
    connections: int = 0
    #: Connections that got the server's SETTINGS (it spoke HTTP/2), and
    #: the SETTINGS_MAX_CONCURRENT_STREAMS it gave (0: none, no limit).
    handshakes: int = 0
    max_streams: int = 0
    #: Connections the server closed: GOAWAY, reset or EOF (and by which
    #: of the attack's connections).
    server_closes: int = 0
    closed: dict[str, int] = field(default_factory=dict)
    connect_errors: int = 0
    frames_sent: int = 0
    #: The frames that make this attack (the invalid WINDOW_UPDATEs, the
    #: big SETTINGS, the +1 updates, the control frames, the resets).
    flood_frames: int = 0
    streams_opened: int = 0
    goaways: dict[str, int] = field(default_factory=dict)
    #: RST_STREAM frames from the server, by error code.
    resets: dict[str, int] = field(default_factory=dict)
    #: Calls answered: by grpc-status.
    statuses: dict[str, int] = field(default_factory=dict)
    data_frames: int = 0
    #: Seconds into the attack when a connection closed by the server could
    #: not be opened again (its reconnection bound reached); 0: never.
    out_of_reconnects: float = 0.0
    #: What h2 found wrong in the server's frames (none expected).
    protocol_errors: list[str] = field(default_factory=list)

    def count(self, table: dict[str, int], key: str) -> None:
        table[key] = table.get(key, 0) + 1


def code_name(code: int) -> str:
    try:
        return ErrorCodes(code).name
    except ValueError:
        return str(code)


def _text(value: str | bytes) -> str:
    """A header as h2 gives it (text, with ``header_encoding``; typed as either)."""
    return value if isinstance(value, str) else value.decode("latin-1")


def raw(frame: Frame) -> bytes:
    """A frame's bytes as hyperframe serializes them. An ExtensionFrame is
    serialized with the length its parser would have set (it carries frames
    hyperframe has no class for, and SETTINGS with a repeated entry, which
    its SettingsFrame, a dict, cannot hold)."""
    if isinstance(frame, ExtensionFrame):
        frame.body_len = len(frame.body)
    return frame.serialize()


class Link:
    """One attacker connection: h2's client on a non-blocking socket.

    Everything the server sends is read into h2, so that h2 answers its
    SETTINGS and PINGs, keeps the flow-control windows and follows the
    streams, as a real client would; frames h2 refuses to send go out raw,
    in order with h2's."""

    def __init__(
        self, port: int, tally: Tally, slot: int, name: str, initial_window: int | None
    ) -> None:
        self.tally = tally
        #: Which of the attack's connections this is (a reconnection keeps
        #: it), and what the tally calls it.
        self.slot = slot
        self.name = name
        self.h2 = H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
        self.out = bytearray()
        #: Streams opened and not yet ended or reset.
        self.open: set[int] = set()
        self.opened = 0
        self.closed = False
        self.ready = False  # the server's SETTINGS arrived
        self.max_streams = 2**31 - 1
        #: Hand received DATA back to the server's windows (h2's
        #: acknowledge_received_data); off where the attack keeps them shut.
        self.ack_data = True
        #: Received bytes not yet a whole frame.
        self.inbox = bytearray()
        #: When this connection's paced attack sends next.
        self.due = 0.0
        self.headers = [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", GET_GAME),
            (":authority", f"127.0.0.1:{port}"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
        ]
        tally.connections += 1
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=2)
        self.sock.setblocking(False)
        self.h2.initiate_connection()
        if initial_window is not None:
            self.h2.update_settings({SettingCodes.INITIAL_WINDOW_SIZE: initial_window})
        tally.frames_sent += 1

    # ----------------------------------------------------------- sending

    def _take(self) -> None:
        self.out += self.h2.data_to_send()

    def send_raw(self, frame: Frame) -> None:
        """One of the attack's frames, past h2."""
        self._take()
        self.out += raw(frame)
        self.tally.frames_sent += 1
        self.tally.flood_frames += 1

    def sent_by_h2(self, *, flood: bool) -> None:
        """Counts a frame just queued through h2."""
        self.tally.frames_sent += 1
        self.tally.flood_frames += flood

    def open_stream(self, message: bytes | None) -> int | None:
        """A GetGame call: its HEADERS, and with ``message`` its DATA ending
        the stream; without, the stream stays half-open. None when the
        server's stream limit or flow-control window says wait."""
        if len(self.open) >= self.max_streams:
            return None
        if message is not None and self.h2.outbound_flow_control_window < len(message):
            return None
        stream_id = self.h2.get_next_available_stream_id()
        try:
            self.h2.send_headers(stream_id, self.headers, end_stream=False)
            if message is not None:
                self.h2.send_data(stream_id, message, end_stream=True)
        except H2Error:
            return None
        self.open.add(stream_id)
        self.opened += 1
        self.tally.streams_opened += 1
        self.tally.frames_sent += 1 if message is None else 2
        return stream_id

    def flush(self) -> None:
        self._take()
        while self.out and not self.closed:
            try:
                sent = self.sock.send(self.out)
            except BlockingIOError:
                return
            except OSError:
                self.server_closed()
                return
            del self.out[:sent]

    # ----------------------------------------------------------- receiving

    def pump(self, budget: int = 1 << 20) -> None:
        """Read what has arrived (up to ``budget`` bytes) into h2."""
        while budget > 0 and not self.closed:
            try:
                data = self.sock.recv(min(65_536, budget))
            except BlockingIOError:
                return
            except OSError:
                self.server_closed()
                return
            if not data:
                self.server_closed()
                return
            budget -= len(data)
            self.inbox += data
            self._frames()
            self._take()

    def _frames(self) -> None:
        """Whole frames into h2, one at a time: after a GOAWAY h2 takes no
        more frames, while the server may still finish streams it had begun
        (RFC 9113 6.8), so the GOAWAY must be seen before what follows it."""
        inbox = self.inbox
        while len(inbox) >= 9 and not self.closed:
            end = 9 + int.from_bytes(inbox[:3], "big")
            if len(inbox) < end:
                return
            frame = bytes(inbox[:end])
            del inbox[:end]
            try:
                events = self.h2.receive_data(frame)
            except H2Error as exc:
                self.tally.protocol_errors.append(repr(exc)[:200])
                self.server_closed()
                return
            for event in events:
                self._on(event)

    def _on(self, event: Event) -> None:
        tally = self.tally
        if isinstance(event, RemoteSettingsChanged):
            if not self.ready:
                tally.handshakes += 1
            self.ready = True
            changed = event.changed_settings.get(SettingCodes.MAX_CONCURRENT_STREAMS)
            if changed is not None:
                self.max_streams = tally.max_streams = changed.new_value
        elif isinstance(event, DataReceived):
            tally.data_frames += 1
            if self.ack_data and event.flow_controlled_length and event.stream_id:
                with contextlib.suppress(H2Error):
                    self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, ResponseReceived | TrailersReceived):
            # Trailers, or a trailers-only answer (an error, at once).
            for name, value in event.headers or []:
                if _text(name) == "grpc-status":
                    tally.count(tally.statuses, _text(value))
        elif isinstance(event, StreamEnded):
            self.open.discard(event.stream_id)
        elif isinstance(event, StreamReset):
            self.open.discard(event.stream_id)
            if event.remote_reset:
                tally.count(tally.resets, code_name(event.error_code or 0))
        elif isinstance(event, ConnectionTerminated):
            tally.count(tally.goaways, code_name(event.error_code or 0))
            self.server_closed()

    def server_closed(self) -> None:
        """The server closed the connection (or made it unusable)."""
        if not self.closed:
            self.closed = True
            self.tally.server_closes += 1
            self.tally.count(self.tally.closed, self.name)
            self.sock.close()

    def handshake(self, within: float) -> bool:
        """Until the server's SETTINGS arrive; False when it closed first
        (or said nothing ``within`` seconds)."""
        deadline = time.monotonic() + within
        while not self.ready and not self.closed and time.monotonic() < deadline:
            self.flush()
            select.select([self.sock], [], [], 0.05)
            self.pump()
        return self.ready

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.sock.close()


class Attack(abc.ABC):
    """One flood: how many connections, and what each sends per step."""

    connections = 1
    initial_window: int | None = None
    #: Bytes read from a connection per round, and how often (0: always).
    read_budget = 1 << 20
    read_every = 0.0

    def __init__(self, message: bytes) -> None:
        #: A GetGame call's one message: the 5-byte gRPC prefix and the request.
        self.message = message

    def name(self, slot: int) -> str:
        """What the tally calls connection ``slot``."""
        return f"connection {slot}"

    def prime(self, link: Link) -> None:  # noqa: B027 (a hook most attacks leave empty)
        """Once, on each new connection after the handshake."""

    @abc.abstractmethod
    def step(self, link: Link, now: float) -> bool:
        """Queue some frames on ``link``; False when it has nothing to send
        now (paced, or waiting on the server)."""


class ServerResets(Attack):
    connections = 2

    def step(self, link: Link, now: float) -> bool:
        for _ in range(20):
            stream_id = link.open_stream(self.message)
            if stream_id is None:
                return False
            # RFC 9113 6.9: an increment of 0 is a stream error PROTOCOL_ERROR.
            link.send_raw(WindowUpdateFrame(stream_id, window_increment=0))
        return True


class SettingsFlood(Attack):
    connections = 1
    streams = 2_000
    per_second = 10

    def step(self, link: Link, now: float) -> bool:
        if link.opened < min(self.streams, link.max_streams):
            # Half-open calls, for every entry to reach (at 100 a step).
            for _ in range(100):
                if link.open_stream(None) is None:
                    break
            return True
        if now < link.due:
            return False
        link.due = now + 1 / self.per_second
        # hyperframe's SettingsFrame is a dict: one entry per setting.
        link.send_raw(ExtensionFrame(type=0x4, stream_id=0, body=MANY_SETTINGS))
        return True


class WindowTrickle(Attack):
    connections = 2
    initial_window = 0
    streams = 100

    def prime(self, link: Link) -> None:
        # The connection's window wide open: only the streams' windows,
        # which start at 0, hold the answers back.
        link.ack_data = False
        link.h2.increment_flow_control_window(2**30)
        link.sent_by_h2(flood=False)

    def step(self, link: Link, now: float) -> bool:
        while len(link.open) < self.streams:
            if link.open_stream(self.message) is None:
                break
        for stream_id in list(link.open)[:200]:
            try:
                link.h2.increment_flow_control_window(1, stream_id=stream_id)
            except H2Error:
                link.open.discard(stream_id)  # ended meanwhile
                continue
            link.sent_by_h2(flood=True)
        return bool(link.open)


class HalfOpen(Attack):
    connections = 10
    streams = 2_000

    def step(self, link: Link, now: float) -> bool:
        # Streams the server refuses are opened again, once over at most.
        if len(link.open) >= self.streams or link.opened >= 2 * self.streams:
            return False
        return all(link.open_stream(None) is not None for _ in range(100))


class ControlFlood(Attack):
    #: One connection for each kind of frame: a server that closes a
    #: connection over one kind (an unsolicited SETTINGS ACK, say) does not
    #: spare the others.
    kinds = ("priority", "empty_data", "unknown_type", "ping", "settings_ack")
    connections = len(kinds)

    def name(self, slot: int) -> str:
        return self.kinds[slot]

    def step(self, link: Link, now: float) -> bool:
        kind = self.kinds[link.slot]
        stream_id = 0
        if kind in ("priority", "empty_data"):
            if not link.open and link.open_stream(None) is None:
                return False
            stream_id = min(link.open)  # a half-open call
        for i in range(100):
            if kind == "priority":
                # On the open stream, and on idle ones far above it (5.3.4:
                # a PRIORITY frame may name any stream; it opens none).
                target = stream_id if i % 2 else 2**20 + 2 * (i + link.opened) + 1
                link.send_raw(PriorityFrame(target, depends_on=0, stream_weight=15))
            elif kind == "empty_data":
                try:
                    link.h2.send_data(stream_id, b"")
                except H2Error:
                    return False  # the server reset the stream: another next step
                link.sent_by_h2(flood=True)
            elif kind == "unknown_type":
                link.send_raw(ExtensionFrame(type=0xFA, stream_id=0, body=b"floods!!"))
            elif kind == "ping":
                link.h2.ping(struct.pack(">Q", link.tally.frames_sent))
                link.sent_by_h2(flood=True)
            else:
                link.send_raw(SettingsFrame(0, flags=["ACK"]))
        return True


class RapidReset(Attack):
    connections = 10

    def step(self, link: Link, now: float) -> bool:
        for _ in range(20):
            stream_id = link.open_stream(self.message)
            if stream_id is None:
                return False
            # A whole call, so that the server has one to start and cancel.
            link.h2.reset_stream(stream_id, ErrorCodes.CANCEL)
            link.open.discard(stream_id)
            link.sent_by_h2(flood=True)
        return True


class PipelinedCalls(Attack):
    connections = 1
    read_budget = 4096
    read_every = 0.05

    def step(self, link: Link, now: float) -> bool:
        sent = False
        for _ in range(50):
            if link.open_stream(self.message) is None:
                break
            link.tally.flood_frames += 2
            sent = True
        return sent


ATTACKS: dict[str, type[Attack]] = {
    "server_resets": ServerResets,
    "settings_flood": SettingsFlood,
    "window_trickle": WindowTrickle,
    "half_open": HalfOpen,
    "control_flood": ControlFlood,
    "rapid_reset": RapidReset,
    "pipelined_calls": PipelinedCalls,
}


def grpc_message(game_id: str) -> bytes:
    request = pb.GetGameRequest(game_id=game_id).SerializeToString()
    return struct.pack(">BI", 0, len(request)) + request


def flood(name: str, port: int, game_id: str, seconds: float) -> Tally:
    """Run attack ``name`` against ``port`` for ``seconds``."""
    attack = ATTACKS[name](grpc_message(game_id))
    tally = Tally(attack=name)
    started = time.monotonic()
    deadline = started + seconds
    links: list[Link | None] = [None] * attack.connections
    read_due = [0.0] * attack.connections
    # The first connection of each slot, and the reconnections the bound allows.
    attempts = [1 + RECONNECTS] * attack.connections
    connect_due = [0.0] * attack.connections
    while time.monotonic() < deadline:
        busy = False
        for i, link in enumerate(links):
            if link is None or link.closed:
                if attempts[i] == 0:
                    tally.out_of_reconnects = tally.out_of_reconnects or round(
                        time.monotonic() - started, 2
                    )
                    continue
                if time.monotonic() < connect_due[i]:
                    continue
                attempts[i] -= 1
                connect_due[i] = time.monotonic() + RECONNECT_EVERY
                try:
                    link = Link(port, tally, i, attack.name(i), attack.initial_window)
                except OSError:
                    tally.connect_errors += 1
                    links[i] = None
                    continue
                links[i] = link
                if not link.handshake(min(2.0, max(0.0, deadline - time.monotonic()))):
                    link.server_closed()
                    continue
                attack.prime(link)
            now = time.monotonic()
            if len(link.out) < BACKLOG:
                busy |= attack.step(link, now)
            link.flush()
            if now >= read_due[i]:
                read_due[i] = now + attack.read_every
                link.pump(attack.read_budget)
        live = [link for link in links if link is not None and not link.closed]
        if not live:
            time.sleep(0.01)
            continue
        writers = [link.sock for link in live if link.out]
        select.select([link.sock for link in live], writers, [], 0 if busy else 0.005)
    for link in links:
        if link is not None:
            link.close()
    tally.seconds = round(time.monotonic() - started, 2)
    return tally


def main(argv: list[str]) -> None:
    name, port, game_id, seconds = argv
    # It stands for a client on another machine (module docstring).
    os.nice(10)
    print("ready", flush=True)
    tally = flood(name, int(port), game_id, float(seconds))
    print(json.dumps(asdict(tally)), flush=True)


# ------------------------------------------------------------------ the test side


@contextlib.contextmanager
def one_flood_at_a_time() -> Iterator[None]:
    """An exclusive lock across the xdist workers of this run: two floods
    on two cores would measure each other."""
    path = Path(tempfile.gettempdir()) / "railyard-grpc-floods.lock"
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


class RssPeak(threading.Thread):
    """The highest RSS of ``pid`` while it runs, sampled every 20 ms."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = rss_bytes(pid)
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(0.02):
            with contextlib.suppress(OSError):
                self.peak = max(self.peak, rss_bytes(self.pid))

    def stop(self) -> int:
        self._done.set()
        self.join()
        return self.peak


class OutsideClient:
    """A well-behaved grpcio client: creates a game against a bot, then
    ListLegalMoves, ApplyMove and GetGame for each of its turns, one call
    at a time; every call's latency and every failure recorded."""

    def __init__(self, stub: pb_grpc.GameServiceStub) -> None:
        self.stub = stub
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self.finished = 0
        self.game_id = ""

    def _call(self, method: Any, request: Any, token: str = "") -> Any:
        metadata = (("authorization", f"Bearer {token}"),) if token else ()
        # Real time: the latency a person would see is the measure.
        begun = time.perf_counter()
        try:
            return method(request, metadata=metadata, timeout=CALL_TIMEOUT)
        except grpc.RpcError as exc:
            self.failures.append(f"{type(request).__name__}: {exc.code()} {exc.details()}")
            return None
        finally:
            self.latencies.append(time.perf_counter() - begun)

    def calls(self) -> Iterator[None]:
        """Plays game after game, yielding after each call."""
        while True:
            created = self._call(
                self.stub.CreateGame, pb.CreateGameRequest(ruleset=RULESET, players=PLAYERS)
            )
            yield
            if created is None:
                continue
            game_id = self.game_id = created.game.game_id
            token = next(s.token for s in created.seats if s.seat == 0)
            while True:
                legal = self._call(
                    self.stub.ListLegalMoves, pb.ListLegalMovesRequest(game_id=game_id), token
                )
                yield
                if legal is None:
                    break
                if not legal.moves:  # over (the bot moves inside our ApplyMove)
                    self.finished += 1
                    break
                move = pb.ApplyMoveRequest(
                    game_id=game_id, move=legal.moves[0].move, expected_version=legal.version
                )
                applied = self._call(self.stub.ApplyMove, move, token)
                yield
                view = self._call(self.stub.GetGame, pb.GetGameRequest(game_id=game_id), token)
                yield
                if applied is None or view is None:
                    break
                if view.status == pb.GAME_STATUS_FINISHED:
                    self.finished += 1
                    break

    def play(self, keep_going: Callable[[], bool]) -> None:
        """Calls, one every PACE s at most, while ``keep_going()``."""
        next_at = time.perf_counter()
        for _ in self.calls():
            if not keep_going():
                return
            next_at = max(next_at + PACE, time.perf_counter())
            time.sleep(max(0.0, next_at - time.perf_counter()))


def p99(latencies: list[float]) -> float:
    ordered = sorted(latencies)
    return ordered[max(0, -(-99 * len(ordered) // 100) - 1)]


@dataclass
class Outcome:
    tally: Tally
    calls: int
    failures: list[str]
    p99: float
    baseline_p99: float
    idle_rss: int
    peak_rss: int
    after_rss: int

    def summary(self) -> str:
        mib = 1 << 20
        t = self.tally
        return (
            f"{t.attack}: p99 {self.p99 * 1000:.1f} ms over {self.calls} calls "
            f"(before the flood {self.baseline_p99 * 1000:.1f} ms), "
            f"RSS idle {self.idle_rss / mib:.0f} MiB, "
            f"peak {self.peak_rss / mib:.0f} MiB ({self.peak_rss / self.idle_rss:.2f}x), "
            f"after {self.after_rss / mib:.0f} MiB; attacker {t.seconds} s: "
            f"{t.connections} connections ({t.handshakes} handshakes, max streams "
            f"{t.max_streams or 'unlimited'}, {t.server_closes} closed "
            f"by the server {t.closed}, {t.connect_errors} refused), {t.frames_sent} frames "
            f"({t.flood_frames} of the flood), {t.streams_opened} streams, "
            f"GOAWAY {t.goaways}, RST_STREAM {t.resets}, "
            f"grpc-status {t.statuses}, {t.data_frames} DATA"
            + (f", out of reconnections at {t.out_of_reconnects} s" if t.out_of_reconnects else "")
            + (f", h2 errors {t.protocol_errors[:3]}" if t.protocol_errors else "")
        )


def attacked(tmp_path: Path, redis_url: str, attack: str) -> Outcome:
    """Serve, warm up, flood with ``attack`` while the client plays."""
    from tests.test_service_resilience import serve  # a Redis-backed `railyard serve`

    with (
        one_flood_at_a_time(),
        serve(tmp_path, redis_url, f"floods-{attack}") as server,
        grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel,
    ):
        client = OutsideClient(pb_grpc.GameServiceStub(channel))
        client.play(lambda: client.finished < 1)  # the warm-up game
        assert not client.failures, client.failures
        baseline = p99(client.latencies)
        time.sleep(0.3)  # what the warm-up started settles
        pid = server.proc.pid
        idle_rss = rss_bytes(pid)
        rss = RssPeak(pid)
        rss.start()
        attacker = subprocess.Popen(
            [
                *(sys.executable, "-m", "tests.test_grpc_floods", attack),
                *(str(server.grpc_port), client.game_id, str(FLOOD_SECONDS)),
            ],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            assert attacker.stdout is not None
            assert attacker.stdout.readline() == b"ready\n", attacker.communicate(timeout=5)
            client.latencies.clear()
            # The attacker is bounded in time; this loop is bounded by it.
            give_up = time.monotonic() + FLOOD_SECONDS + 20
            client.play(lambda: attacker.poll() is None and time.monotonic() < give_up)
            out, err = attacker.communicate(timeout=20)
        finally:
            peak = rss.stop()
            if attacker.poll() is None:
                attacker.kill()
                attacker.wait()
        assert attacker.returncode == 0, err.decode(errors="replace")[-3000:]
        tally = Tally(**json.loads(out.decode().splitlines()[-1]))
        assert server.proc.poll() is None, f"the server died:\n{server.log()[-3000:]}"
        time.sleep(0.5)
        outcome = Outcome(
            tally=tally,
            calls=len(client.latencies),
            failures=client.failures,
            p99=p99(client.latencies),
            baseline_p99=baseline,
            idle_rss=idle_rss,
            peak_rss=peak,
            after_rss=rss_bytes(pid),
        )
        print(outcome.summary())
        # Still serving once the flood is over.
        after = pb_grpc.GameServiceStub(channel).GetGame(
            pb.GetGameRequest(game_id=client.game_id), timeout=CALL_TIMEOUT
        )
        assert after.game_id == client.game_id
        return outcome


def took_effect(tally: Tally) -> bool:
    """Whether the attack reached the server and was answered as the
    protocol allows (a reset, an answer, or the connection closed): a
    flood that never got going proves nothing."""
    closed = tally.server_closes > 0 or bool(tally.goaways)
    if tally.attack == "server_resets":
        return tally.resets.get("PROTOCOL_ERROR", 0) > 0 or closed
    if tally.attack == "settings_flood":
        return tally.flood_frames >= 20 or closed
    if tally.attack == "window_trickle":
        return tally.data_frames > 100  # DATA let out byte by byte
    if tally.attack == "half_open":  # as many streams as allowed on each connection
        allowed = min(HalfOpen.streams, tally.max_streams or HalfOpen.streams)
        return tally.streams_opened >= HalfOpen.connections * allowed or closed
    if tally.attack == "control_flood":
        return tally.flood_frames >= 10_000
    if tally.attack == "rapid_reset":
        return tally.flood_frames >= 1_000
    return tally.statuses.get("0", 0) > 0  # pipelined_calls: valid calls answered


@pytest.mark.slow
@pytest.mark.flood
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_an_http2_flood_keeps_play_fast_and_memory_bounded(
    tmp_path: Path, redis_url: str, attack: str
) -> None:
    outcome = attacked(tmp_path, redis_url, attack)
    if outcome.p99 >= P99_LIMIT:
        # Once more, on a fresh server: the machine's own stalls are not the
        # server's (in a fresh clone's CI the client's p99 read 48 ms before
        # a flood began, and 103.5 ms during it). A server the flood hurts
        # fails both; both outcomes are printed.
        again = tmp_path / "again"
        again.mkdir()
        outcome = attacked(again, redis_url, attack)
    tally = outcome.tally
    assert tally.handshakes >= 1, outcome.summary()
    assert took_effect(tally), outcome.summary()
    assert not tally.protocol_errors, outcome.summary()
    assert not outcome.failures, (outcome.failures[:5], outcome.summary())
    assert outcome.p99 < P99_LIMIT, outcome.summary()
    assert outcome.calls >= 20, outcome.summary()  # enough for a p99
    assert outcome.peak_rss < RSS_FACTOR * outcome.idle_rss, outcome.summary()


if __name__ == "__main__":
    main(sys.argv[1:])
