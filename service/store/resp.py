"""A lean, pipelined Redis client for the store's request path.

Why not redis-py for every call: its asyncio client checks a connection out
of a pool, wraps each command in timeout context managers and parses through
several layers; the benchmark profile showed it as the largest single cost of
an ApplyMove (about 0.2 ms of CPU per command). Here every command of the
process shares a few long-lived connections: a call encodes its command,
queues it and waits on a future; the commands queued during one turn of the
event loop leave in one write, replies come back in order (RESP guarantees
it per connection) and hiredis parses them. Concurrent requests are thereby
pipelined for free, in both directions.

Blocking reads (``XREAD BLOCK``) would hold up every call queued behind
them on a shared connection: :meth:`RespClient.blocking_call` gives each one
a connection of its own, kept for reuse once it has answered.

Redis Cluster: a call names the key it is ``route``d by. A standalone server
ignores that. A cluster node that does not own the key's slot answers
``MOVED``; the client then learns the slot map (``CLUSTER SLOTS``), sends
each call straight to the node owning its key's slot from then on, and
follows ``MOVED`` (a slot moved for good) and ``ASK`` (a slot being
migrated) redirections, so that resharding and failovers need no restart. A
script whose keys a migration has split between two nodes is refused with
``TRYAGAIN``: it is sent again a few times, then the error stands.
Every key of a game shares one hash tag, so one call never spans nodes.

Failures: a connection that is refused, reset or closed fails every call
waiting on it with :class:`ConnectionError`; a server that stops answering
for ``timeout`` seconds fails them with :class:`TimeoutError` and the
connection is dropped. The next call connects again, so the client recovers
by itself when Redis is back. An error reply is raised as :class:`ReplyError`.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import functools
import hashlib
import logging
import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import parse_qs, unquote, urlsplit

import hiredis

Arg = bytes | str | int

log = logging.getLogger("railyard.redis")

#: Redis Cluster's key space: CRC16(key or its hash tag) mod 16384.
SLOTS: Final = 16384
#: Redirections followed for one call before giving up (a cluster in flux).
_MAX_REDIRECTS: Final = 5
#: The first pause before a call refused with TRYAGAIN is sent again; it
#: doubles each time (a few tenths of a second in all, then the error stands).
_TRYAGAIN_PAUSE: Final = 0.02
#: Idle connections kept per node for blocking calls.
_MAX_IDLE_BLOCKING: Final = 32


def _crc16_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021 if crc & 0x8000 else crc << 1) & 0xFFFF
        table.append(crc)
    return tuple(table)


_CRC16: Final = _crc16_table()


@functools.lru_cache(maxsize=65536)
def key_slot(key: str | bytes) -> int:
    """The cluster slot of ``key``: CRC16-XMODEM of its hash tag (the text
    between the first ``{`` and the next ``}``, when not empty) or of the whole
    key, mod 16384, as CLUSTER KEYSLOT computes it."""
    data = key.encode() if isinstance(key, str) else key
    start = data.find(b"{")
    if start >= 0:
        end = data.find(b"}", start + 1)
        if end > start + 1:
            data = data[start + 1 : end]
    crc = 0
    table = _CRC16
    for byte in data:
        crc = ((crc << 8) & 0xFFFF) ^ table[(crc >> 8) ^ byte]
    return crc % SLOTS


class ReplyError(Exception):
    """Redis answered with an error (``-ERR ...``, ``-NOSCRIPT ...``)."""


@dataclass(frozen=True, slots=True)
class Address:
    """Where and how to connect, from a ``redis://``, ``rediss://`` or ``unix://`` URL."""

    host: str | None
    port: int
    path: str | None
    tls: bool
    username: str | None
    password: str | None
    db: int

    @classmethod
    def parse(cls, url: str) -> Address:
        parts = urlsplit(url)
        query = parse_qs(parts.query)
        db_text = (query.get("db") or [""])[0]
        if parts.scheme in ("redis", "rediss"):
            path_db = parts.path.lstrip("/")
            db_text = path_db or db_text
        elif parts.scheme != "unix":
            raise ValueError(f"unsupported Redis URL scheme {parts.scheme!r}")
        try:
            db = int(db_text) if db_text else 0
        except ValueError:
            raise ValueError(f"bad Redis database number {db_text!r}") from None
        return cls(
            host=(parts.hostname or "localhost") if parts.scheme != "unix" else None,
            port=parts.port or 6379,
            path=parts.path if parts.scheme == "unix" else None,
            tls=parts.scheme == "rediss",
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password is not None else None,
            db=db,
        )


def encode(args: tuple[Arg, ...]) -> bytes:
    """One command in RESP: an array of bulk strings."""
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, bytes):
            data = arg
        elif isinstance(arg, str):
            data = arg.encode()
        elif isinstance(arg, int) and not isinstance(arg, bool):
            data = b"%d" % arg
        else:
            raise TypeError(f"a Redis argument must be bytes, str or int, not {type(arg).__name__}")
        out.append(b"$%d\r\n" % len(data))
        out.append(data)
        out.append(b"\r\n")
    return b"".join(out)


class _Connection(asyncio.Protocol):
    """One connection; replies are matched to calls in order."""

    def __init__(self, timeout: float) -> None:
        self._reader = hiredis.Reader()
        self._pending: collections.deque[tuple[asyncio.Future[Any], float]] = collections.deque()
        self._timeout = timeout
        self._transport: asyncio.Transport | None = None
        self._watchdog: asyncio.TimerHandle | None = None
        self._out: list[bytes] = []
        self.closed = False

    # -- asyncio.Protocol ---------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        reader = self._reader
        reader.feed(data)
        pending = self._pending
        try:
            while (reply := reader.gets()) is not False:
                future, _ = pending.popleft()
                if future.done():  # its caller gave up (cancelled); the reply is dropped
                    continue
                if isinstance(reply, hiredis.ReplyError):
                    future.set_exception(ReplyError(str(reply)))
                else:
                    future.set_result(reply)
        except (hiredis.ProtocolError, IndexError) as exc:
            # A reply we cannot parse, or one nobody asked for: the stream
            # can no longer be trusted.
            self._fail(ConnectionError(f"garbled reply from Redis: {exc!r}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(ConnectionError(f"connection to Redis lost: {exc or 'closed by the server'}"))

    # -- calls ----------------------------------------------------------------

    def send(
        self, payload: bytes, count: int, timeout: float | None = None
    ) -> list[asyncio.Future[Any]]:
        """Write ``payload`` (``count`` encoded commands); their futures, in
        order. ``timeout`` replaces the connection's for these (a blocking call)."""
        if self.closed or self._transport is None or self._transport.is_closing():
            raise ConnectionError("connection to Redis is closed")
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + (self._timeout if timeout is None else timeout)
        futures = [loop.create_future() for _ in range(count)]
        for future in futures:
            self._pending.append((future, deadline))
        # Corked: the commands of every request handled in this turn of the
        # event loop leave in one write (a send system call costs more than
        # encoding a command here).
        if not self._out:
            loop.call_soon(self._flush)
        self._out.append(payload)
        if self._watchdog is None:
            self._watchdog = loop.call_later(self._timeout / 4, self._check)
        return futures

    def _flush(self) -> None:
        out, self._out = self._out, []
        if not self.closed and self._transport is not None:
            self._transport.write(out[0] if len(out) == 1 else b"".join(out))

    def _check(self) -> None:
        """Drop the connection when its oldest call has waited past the timeout:
        a frozen server must fail the calls, not hang them."""
        self._watchdog = None
        if self.closed or not self._pending:
            return
        if self._pending[0][1] <= time.monotonic():
            self._fail(TimeoutError(f"Redis did not answer within {self._timeout:g} s"))
            return
        self._watchdog = asyncio.get_running_loop().call_later(self._timeout / 4, self._check)

    def _fail(self, exc: BaseException) -> None:
        self.closed = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        pending, self._pending = self._pending, collections.deque()
        for future, _ in pending:
            if not future.done():
                future.set_exception(exc)
        if self._transport is not None:
            self._transport.abort()

    def close(self) -> None:
        self._fail(ConnectionError("client closed"))


class _Node:
    """One server: ``connections`` shared, pipelined connections for ordinary
    calls, and dedicated ones for blocking calls."""

    def __init__(self, address: Address, client: RespClient) -> None:
        self.address = address
        self._client = client
        self._shared: list[_Connection | None] = [None] * client.connections
        self._connecting: list[asyncio.Future[_Connection] | None] = [None] * client.connections
        self._next = 0
        self._idle: list[_Connection] = []
        self._blocking = 0
        self._closed = False

    def __repr__(self) -> str:
        return f"<redis node {self.address.host}:{self.address.port}>"

    async def _shared_connection(self) -> _Connection:
        """The next shared connection round-robin, (re)opened when needed;
        calls arriving meanwhile wait for the same attempt."""
        slot = self._next
        self._next = (slot + 1) % len(self._shared)
        connection = self._shared[slot]
        if connection is not None and not connection.closed:
            return connection
        if self._closed:
            raise ConnectionError("client closed")
        pending = self._connecting[slot]
        if pending is None:
            pending = asyncio.ensure_future(self._open(self._client.client_name))
            self._connecting[slot] = pending
            try:
                connection = await asyncio.shield(pending)
            finally:
                self._connecting[slot] = None
            self._shared[slot] = connection
            return connection
        return await asyncio.shield(pending)

    async def send(self, payload: bytes, count: int) -> list[Any]:
        """``count`` encoded commands on a shared connection; every reply
        (error replies as :class:`ReplyError` objects, not raised)."""
        connection = await self._shared_connection()
        futures = connection.send(payload, count)
        if count == 1:
            try:
                return [await futures[0]]
            except ReplyError as exc:
                return [exc]
        return _settled(await asyncio.gather(*futures, return_exceptions=True))

    async def blocking(self, payload: bytes, count: int, timeout: float) -> list[Any]:
        """Like :meth:`send`, on a connection no other call shares, with its
        own ``timeout``."""
        if self._closed:
            raise ConnectionError("client closed")
        if self._blocking >= self._client.max_blocking:
            raise ConnectionError(
                f"{self._blocking} blocking calls already wait on {self!r}: no more connections"
            )
        self._blocking += 1
        connection: _Connection | None = None
        try:
            while self._idle and connection is None:
                candidate = self._idle.pop()
                if not candidate.closed:
                    connection = candidate
            if connection is None:
                connection = await self._open(f"{self._client.client_name}-blocking")
            futures = connection.send(payload, count, timeout=timeout)
            replies = _settled(await asyncio.gather(*futures, return_exceptions=True))
            # Answered in full: the connection is clean and can serve another.
            if not self._closed and len(self._idle) < _MAX_IDLE_BLOCKING:
                self._idle.append(connection)
                connection = None
            return replies
        finally:
            self._blocking -= 1
            if connection is not None:  # cancelled or failed mid-call: never reuse it
                connection.close()

    def close(self) -> None:
        self._closed = True
        for connection in (*self._shared, *self._idle):
            if connection is not None:
                connection.close()
        self._shared = [None] * len(self._shared)
        self._idle = []

    async def _open(self, name: str) -> _Connection:
        address = self.address
        loop = asyncio.get_running_loop()
        connection = _Connection(self._client.timeout)
        try:
            async with asyncio.timeout(self._client.connect_timeout):
                if address.path is not None:
                    await loop.create_unix_connection(lambda: connection, address.path)
                elif address.host is not None:
                    context = ssl.create_default_context() if address.tls else None
                    await loop.create_connection(
                        lambda: connection, address.host, address.port, ssl=context
                    )
                else:
                    raise ValueError("a Redis URL needs a host or a socket path")
                hello: list[tuple[Arg, ...]] = []
                if address.password is not None:
                    if address.username:
                        hello.append(("AUTH", address.username, address.password))
                    else:
                        hello.append(("AUTH", address.password))
                if address.db:
                    hello.append(("SELECT", address.db))
                hello.append(("CLIENT", "SETNAME", name))
                futures = connection.send(b"".join(encode(c) for c in hello), len(hello))
                await asyncio.gather(*futures)
        except BaseException:
            connection.close()
            raise
        return connection


def _settled(replies: Sequence[Any]) -> list[Any]:
    """Replies with error replies kept in place; a failure of the connection
    (or a cancellation) is raised."""
    for reply in replies:
        if isinstance(reply, BaseException) and not isinstance(reply, ReplyError):
            raise reply
    return list(replies)


def _redirection(reply: object) -> tuple[str, int, str, int] | None:
    """``(kind, slot, host, port)`` of a ``MOVED`` / ``ASK`` error reply;
    ``("TRYAGAIN", -1, "", 0)`` for a multi-key call a migration splits."""
    if not isinstance(reply, ReplyError):
        return None
    text = str(reply)
    if text.startswith("TRYAGAIN"):
        return "TRYAGAIN", -1, "", 0
    parts = text.split()
    if len(parts) != 3 or parts[0] not in ("MOVED", "ASK"):
        return None
    host, _, port = parts[2].rpartition(":")
    try:
        return parts[0], int(parts[1]), host, int(port)
    except ValueError:
        return None


_ASKING: Final = encode(("ASKING",))


class RespClient:
    """Commands over ``connections`` shared, pipelined connections per server;
    on Redis Cluster, to the node owning each call's ``route`` key."""

    def __init__(
        self,
        url: str,
        *,
        connections: int = 2,
        connect_timeout: float = 1.0,
        timeout: float = 2.0,
        client_name: str = "railyard",
        max_blocking: int = 4096,
    ) -> None:
        if connections < 1:
            raise ValueError("at least one connection")
        self.connections = connections
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self.client_name = client_name
        self.max_blocking = max_blocking
        self._address = Address.parse(url)
        self._seed = _Node(self._address, self)
        self._nodes: dict[tuple[str | None, int], _Node] = {
            (self._address.host, self._address.port): self._seed
        }
        # Cluster mode: the node of every slot; None until a node says MOVED.
        self._map: list[_Node] | None = None
        self._refresh: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def cluster(self) -> bool:
        """Whether the server turned out to be a Redis Cluster."""
        return self._map is not None

    async def call(self, *args: Arg, route: str | None = None) -> Any:
        """One command's reply; ``route``: the key whose node must run it.
        On a cluster a call with no route (PING) is answered by the first
        node that can, the URL's first: it may be the one that is down."""
        if route is None and self._map is not None:
            return await self._any_node(encode(args))
        (reply,) = await self._run(encode(args), 1, route, blocking=None)
        if isinstance(reply, ReplyError):
            raise reply
        return reply

    async def _any_node(self, payload: bytes) -> Any:
        nodes = [self._seed, *(n for n in self._nodes.values() if n is not self._seed)]
        failure: BaseException | None = None
        for node in nodes:
            try:
                (reply,) = await node.send(payload, 1)
            except (ConnectionError, TimeoutError) as exc:
                failure = exc
                continue
            if isinstance(reply, ReplyError):
                raise reply
            return reply
        self._schedule_refresh()
        assert failure is not None
        raise failure

    async def pipeline(self, *commands: tuple[Arg, ...], route: str | None = None) -> list[Any]:
        """Several commands written together (not a transaction); every reply,
        in order. The first error reply is raised. On a cluster every command
        must touch ``route``'s slot only."""
        payload = b"".join(encode(c) for c in commands)
        replies = await self._run(payload, len(commands), route, blocking=None)
        for reply in replies:
            if isinstance(reply, ReplyError):
                raise reply
        return replies

    async def blocking_call(self, *args: Arg, route: str | None, timeout: float) -> Any:
        """One blocking command (``XREAD BLOCK``) on a connection of its own,
        failed with :class:`TimeoutError` after ``timeout`` seconds."""
        (reply,) = await self._run(encode(args), 1, route, blocking=timeout)
        if isinstance(reply, ReplyError):
            raise reply
        return reply

    async def close(self) -> None:
        self._closed = True
        if self._refresh is not None:
            self._refresh.cancel()
        for node in self._nodes.values():
            node.close()

    # -- routing ------------------------------------------------------------

    async def _run(
        self, payload: bytes, count: int, route: str | None, blocking: float | None
    ) -> list[Any]:
        if self._closed:
            raise ConnectionError("client closed")
        table = self._map
        node = self._seed if table is None or route is None else table[key_slot(route)]
        asking = False
        for attempt in range(_MAX_REDIRECTS):
            if asking:  # ASK: only this once, and each command right after an ASKING
                wire = b"".join(_ASKING + command for command in _split(payload, count))
                sent = 2 * count
            else:
                wire, sent = payload, count
            try:
                if blocking is None:
                    replies = await node.send(wire, sent)
                else:
                    replies = await node.blocking(wire, sent, blocking)
            except (ConnectionError, TimeoutError):
                if self._map is not None:
                    self._schedule_refresh()  # a failover may have moved the slot
                raise
            if asking:
                replies = replies[1::2]
            refused = next((r for r in replies if _redirection(r) is not None), None)
            if refused is None:
                return replies
            redirect = _redirection(refused)
            assert redirect is not None
            kind, slot, host, port = redirect
            if kind == "TRYAGAIN":  # keys split by a migration under way: not run
                if attempt + 1 < _MAX_REDIRECTS:
                    await asyncio.sleep(_TRYAGAIN_PAUSE * 2**attempt)
                continue
            target = self._node_at(host or node.address.host, port)
            if kind == "MOVED":
                if self._map is None:
                    log.info("redis at %s is a cluster: routing by key slot", self._where())
                    self._map = [self._seed] * SLOTS
                self._map[slot] = target
                self._schedule_refresh()
            asking = kind == "ASK"
            node = target
        raise ReplyError(f"{refused} (still, after {_MAX_REDIRECTS} attempts)")

    def _where(self) -> str:
        return f"{self._address.host}:{self._address.port}"

    def _node_at(self, host: str | None, port: int) -> _Node:
        node = self._nodes.get((host, port))
        if node is None:
            # Every node of a cluster takes the seed's credentials and TLS.
            address = dataclasses.replace(self._address, host=host, port=port, path=None, db=0)
            node = self._nodes[host, port] = _Node(address, self)
        return node

    def _schedule_refresh(self) -> None:
        if self._closed or (self._refresh is not None and not self._refresh.done()):
            return
        self._refresh = asyncio.get_running_loop().create_task(self._refresh_map())

    async def _refresh_map(self) -> None:
        """Learn the whole slot map from the first node that gives it."""
        for node in [self._seed, *(n for n in self._nodes.values() if n is not self._seed)]:
            try:
                (reply,) = await node.send(encode(("CLUSTER", "SLOTS")), 1)
            except (ConnectionError, TimeoutError, OSError):
                continue
            if isinstance(reply, ReplyError) or not reply:
                continue
            table = list(self._map or [self._seed] * SLOTS)
            for start, end, master, *_replicas in reply:
                host = master[0].decode() if master[0] else node.address.host
                target = self._node_at(host, int(master[1]))
                table[int(start) : int(end) + 1] = [target] * (int(end) - int(start) + 1)
            self._map = table
            return
        log.warning("no node of the redis cluster at %s gave its slot map", self._where())


def _split(payload: bytes, count: int) -> list[bytes]:
    """The ``count`` encoded commands of ``payload`` (RESP arrays of bulk strings)."""
    if count == 1:
        return [payload]
    out = []
    at = 0
    for _ in range(count):
        start = at
        end = payload.index(b"\r\n", at)
        items = int(payload[at + 1 : end])
        at = end + 2
        for _ in range(items):
            end = payload.index(b"\r\n", at)
            at = end + 2 + int(payload[at + 1 : end]) + 2
        out.append(payload[start:at])
    return out


class Script:
    """A Lua script run by EVALSHA, loaded on first use and again after a
    Redis restart (``NOSCRIPT``); on a cluster, on the node of its first key."""

    def __init__(self, client: RespClient, source: str) -> None:
        self._client = client
        self._source = source
        self.sha: Final = hashlib.sha1(source.encode()).hexdigest()

    async def __call__(self, keys: Sequence[str], args: Sequence[Arg]) -> Any:
        route = keys[0] if keys else None
        try:
            return await self._client.call(
                "EVALSHA", self.sha, len(keys), *keys, *args, route=route
            )
        except ReplyError as exc:
            if not str(exc).startswith("NOSCRIPT"):
                raise
        return await self._client.call("EVAL", self._source, len(keys), *keys, *args, route=route)
