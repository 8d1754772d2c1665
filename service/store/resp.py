"""A lean, pipelined Redis client for the store's request path.

Why not redis-py for every call: its asyncio client checks a connection out
of a pool, wraps each command in timeout context managers and parses through
several layers; the benchmark profile showed it as the largest single cost of
an ApplyMove. Here every command of the
process shares a few long-lived connections: a call encodes its command,
queues it and waits on a future; the commands queued during one turn of the
event loop leave in one write, replies come back in order (RESP guarantees
it per connection) and hiredis parses them. Concurrent requests are thereby
pipelined for free, in both directions.

Nothing here blocks a connection: a watcher waits for a game's pub/sub
notification on the process's one subscriber connection
(:mod:`service.store.pubsub`, placed by :meth:`RespClient.subscriber_addresses`),
then reads with an ordinary call.

Redis Cluster: a call names the key it is ``route``d by. A standalone server
ignores that. A cluster node that does not own the key's slot answers
``MOVED``; the client then learns the slot map (``CLUSTER SLOTS``), sends
each call straight to the node owning its key's slot from then on, and
follows ``MOVED`` (a slot moved for good) and ``ASK`` (a slot being
migrated) redirections, so that resharding and failovers need no restart. A
script whose keys a migration has split between two nodes is refused with
``TRYAGAIN``: it is sent again a few times, then the error stands.
Every key of a game shares one hash tag, so one call never spans nodes.

Redis Sentinel: with a ``redis+sentinel://`` URL (:class:`SentinelConfig`)
the client asks the sentinels where the named master is, checks with
``ROLE`` that it is one, and sends every call there. A connection failure or
a ``READONLY`` reply (the master was demoted) makes the next call ask again,
so a failover needs no restart: calls fail fast (``ConnectionError``) until
the sentinels have promoted a replica, then go to it.

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
from collections.abc import Callable, Sequence
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
#: A quiet sentinel subscription is PINGed after this many seconds.
_SWITCH_PING: Final = 5.0
#: Pauses between rounds of (re)subscribing to the sentinels: doubling, capped.
_SWITCH_RETRY_MIN: Final = 0.1
_SWITCH_RETRY_MAX: Final = 2.0


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


#: The port of a sentinel named in a URL without one.
SENTINEL_PORT: Final = 26379


@dataclass(frozen=True, slots=True)
class SentinelConfig:
    """A master found through Redis Sentinel, from a URL of the form
    ``redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/<master>[/<db>]``
    (``rediss+sentinel://`` for TLS to the sentinels and the master).

    The user and password are the master's, as in a ``redis://`` URL; the
    sentinels' own, if they need any, go in the query:
    ``?sentinel_username=...&sentinel_password=...``. A sentinel named
    without a port listens on 26379.
    """

    sentinels: tuple[Address, ...]
    master_name: str
    master: Address  # credentials, db and TLS; host and port come from the sentinels

    @staticmethod
    def applies(url: str) -> bool:
        return url.split("://", 1)[0] in ("redis+sentinel", "rediss+sentinel")

    @classmethod
    def parse(cls, url: str) -> SentinelConfig:
        scheme, _, rest = url.partition("://")
        if scheme not in ("redis+sentinel", "rediss+sentinel"):
            raise ValueError(f"not a sentinel URL: scheme {scheme!r}")
        tls = scheme == "rediss+sentinel"
        # urlsplit cannot read a netloc holding several hosts: split it by hand.
        netloc, _, tail = rest.partition("/")
        path, _, query_text = tail.partition("?")
        userinfo, at, hosts = netloc.rpartition("@")
        if not at:
            userinfo, hosts = "", netloc
        username, colon, password = userinfo.partition(":")
        query = parse_qs(query_text)
        names = [part for part in path.split("/") if part]
        if not names or len(names) > 2:
            raise ValueError(
                "a sentinel URL names the master: redis+sentinel://host:26379/<master>"
            )
        try:
            db = int(names[1]) if len(names) == 2 else 0
        except ValueError:
            raise ValueError(f"bad Redis database number {names[1]!r}") from None
        sentinel_user = next(iter(query.get("sentinel_username", [])), None)
        sentinel_password = next(iter(query.get("sentinel_password", [])), None)
        sentinels = []
        for host_port in hosts.split(","):
            parts = urlsplit(f"//{host_port}")
            try:
                port = parts.port or SENTINEL_PORT
            except ValueError:
                raise ValueError(f"bad sentinel address {host_port!r}") from None
            if not parts.hostname:
                raise ValueError(f"bad sentinel address {host_port!r}")
            sentinels.append(
                Address(parts.hostname, port, None, tls, sentinel_user, sentinel_password, 0)
            )
        master = Address(
            host=None,
            port=0,
            path=None,
            tls=tls,
            username=unquote(username) if username else None,
            password=unquote(password) if colon else None,
            db=db,
        )
        return cls(tuple(sentinels), unquote(names[0]), master)


def redact_url(url: str) -> str:
    """The URL without its passwords (the userinfo's, and a sentinel's in the
    query), for logs and messages. Split by hand: a sentinel URL names
    several hosts, which urlsplit cannot read."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    netloc, slash, tail = rest.partition("/")
    userinfo, at, hosts = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = f"{userinfo.partition(':')[0]}:***@{hosts}"
    path, question, query = tail.partition("?")
    if question:
        pairs = [pair.partition("=") for pair in query.split("&")]
        query = "&".join(
            f"{name}{eq}{'***' if 'password' in name.lower() and value else value}"
            for name, eq, value in pairs
        )
    return f"{scheme}://{netloc}{slash}{path}{question}{query}"


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


class ReplyLostError(ConnectionError):
    """The command was written to Redis, and the connection failed (or Redis
    stopped answering) before its reply came: it may have run. A write's
    outcome is then unknown, not "nothing changed" (API.md OUTCOME_UNKNOWN)."""


class ReplyTimedOutError(ReplyLostError, TimeoutError):
    """:class:`ReplyLostError` because Redis stopped answering (a frozen or
    swamped server): a TimeoutError too, as every timed-out call."""


class _Connection(asyncio.Protocol):
    """One connection; replies are matched to calls in order."""

    def __init__(self, timeout: float) -> None:
        # Made on the loop it serves (RespClient opens it there); kept, as
        # asyncio.get_running_loop() checks the process id, a system call, at
        # every call.
        self._loop = asyncio.get_running_loop()
        self._reader = hiredis.Reader()
        self._pending: collections.deque[tuple[asyncio.Future[Any], float]] = collections.deque()
        self._timeout = timeout
        self._transport: asyncio.Transport | None = None
        self._watchdog: asyncio.TimerHandle | None = None
        self._out: list[bytes] = []
        #: The calls at the end of _pending not written yet (corked in _out).
        self._unsent = 0
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

    def send(self, payload: bytes, count: int) -> list[asyncio.Future[Any]]:
        """Write ``payload`` (``count`` encoded commands); their futures, in order."""
        if self.closed or self._transport is None or self._transport.is_closing():
            raise ConnectionError("connection to Redis is closed")
        loop = self._loop
        deadline = time.monotonic() + self._timeout
        futures = [loop.create_future() for _ in range(count)]
        for future in futures:
            self._pending.append((future, deadline))
        # Corked: the commands of every request handled in this turn of the
        # event loop leave in one write (a send system call costs more than
        # encoding a command here).
        if not self._out:
            loop.call_soon(self._flush)
        self._out.append(payload)
        self._unsent += count
        if self._watchdog is None:
            self._watchdog = loop.call_later(self._timeout / 4, self._check)
        return futures

    def _flush(self) -> None:
        out, self._out = self._out, []
        if not self.closed and self._transport is not None:
            self._transport.write(out[0] if len(out) == 1 else b"".join(out))
            self._unsent = 0

    def _check(self) -> None:
        """Drop the connection when its oldest call has waited past the timeout:
        a frozen server must fail the calls, not hang them."""
        self._watchdog = None
        if self.closed or not self._pending:
            return
        if self._pending[0][1] <= time.monotonic():
            self._fail(TimeoutError(f"Redis did not answer within {self._timeout:g} s"))
            return
        self._watchdog = self._loop.call_later(self._timeout / 4, self._check)

    def _fail(self, exc: BaseException) -> None:
        self.closed = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        pending, self._pending = self._pending, collections.deque()
        # Replies come in order, so the calls still pending were all written
        # but the last _unsent: those never left, the others may have run.
        written = len(pending) - self._unsent
        self._unsent = 0
        kind = ReplyTimedOutError if isinstance(exc, TimeoutError) else ReplyLostError
        lost = kind(f"sent, but no reply: {exc}")
        for i, (future, _) in enumerate(pending):
            if not future.done():
                future.set_exception(lost if i < written else exc)
        if self._transport is not None:
            self._transport.abort()

    def close(self) -> None:
        self._fail(ConnectionError("client closed"))


class _Node:
    """One server: ``connections`` shared, pipelined connections."""

    def __init__(self, address: Address, client: RespClient) -> None:
        self.address = address
        self._client = client
        self._shared: list[_Connection | None] = [None] * client.connections
        self._connecting: list[asyncio.Future[_Connection] | None] = [None] * client.connections
        self._next = 0
        self._closed = False

    def __repr__(self) -> str:
        return f"<redis node {self.address.host}:{self.address.port}>"

    async def _reopen(self, slot: int) -> _Connection:
        """Shared connection ``slot``, opened (again); calls arriving
        meanwhile wait for the same attempt."""
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
        # The next shared connection round-robin; awaited only when it must
        # be (re)opened (a coroutine a call costs more than the choice).
        slot = self._next
        self._next = (slot + 1) % len(self._shared)
        connection = self._shared[slot]
        if connection is None or connection.closed:
            connection = await self._reopen(slot)
        futures = connection.send(payload, count)
        if count == 1:
            try:
                return [await futures[0]]
            except ReplyError as exc:
                return [exc]
        return _settled(await asyncio.gather(*futures, return_exceptions=True))

    def close(self) -> None:
        self._closed = True
        for connection in self._shared:
            if connection is not None:
                connection.close()
        self._shared = [None] * len(self._shared)

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
    ) -> None:
        if connections < 1:
            raise ValueError("at least one connection")
        self.connections = connections
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self.client_name = client_name
        self._sentinel = SentinelConfig.parse(url) if SentinelConfig.applies(url) else None
        self._address = Address.parse(url) if self._sentinel is None else self._sentinel.master
        # The URL's server; under Sentinel a stand-in until the master is found.
        self._seed = _Node(self._address, self)
        self._nodes: dict[tuple[str | None, int], _Node] = {}
        if self._sentinel is None:
            self._nodes[self._address.host, self._address.port] = self._seed
        # Sentinel mode: whether _seed is the master the sentinels last named.
        self._master_known = self._sentinel is None
        self._finding: asyncio.Future[None] | None = None
        self._switches: asyncio.Task[None] | None = None
        self._sentinel_nodes = [
            _Node(a, self) for a in (self._sentinel.sentinels if self._sentinel else ())
        ]
        # Cluster mode: the node of every slot; None until a node says MOVED.
        self._map: list[_Node] | None = None
        self._refresh: asyncio.Task[None] | None = None
        self._closed = False
        #: Called when the sentinels name a new master (a subscriber moves to it).
        self._on_master_switch: list[Callable[[], None]] = []

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
        (reply,) = await self._run(encode(args), 1, route)
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
        replies = await self._run(payload, len(commands), route)
        for reply in replies:
            if isinstance(reply, ReplyError):
                raise reply
        return replies

    async def subscriber_addresses(self) -> list[Address]:
        """Where a pub/sub subscription hears every PUBLISH of the store: the
        server; under Sentinel, the master (found first if need be); on a
        cluster any node, as a plain PUBLISH reaches them all: the URL's node
        first, then the others known from the slot map."""
        if self._closed:
            raise ConnectionError("client closed")
        if not self._master_known:
            await self._find_master()
        if self._sentinel is not None:
            return [self._seed.address]
        others = (n.address for n in self._nodes.values() if n is not self._seed)
        return [self._seed.address, *others]

    def on_master_switch(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` whenever the sentinels announce a new master, or
        the master found differs from the one used so far."""
        self._on_master_switch.append(callback)

    def _master_switched(self) -> None:
        for callback in self._on_master_switch:
            callback()

    async def close(self) -> None:
        self._closed = True
        if self._refresh is not None:
            self._refresh.cancel()
        for node in (*self._nodes.values(), *self._sentinel_nodes):
            node.close()
        if self._finding is not None:
            self._finding.cancel()
        if self._switches is not None:
            # Awaited: its subscription's socket closes before the loop does.
            self._switches.cancel()
            await asyncio.gather(self._switches, return_exceptions=True)

    # -- routing ------------------------------------------------------------

    async def _run(self, payload: bytes, count: int, route: str | None) -> list[Any]:
        if self._closed:
            raise ConnectionError("client closed")
        if not self._master_known:
            await self._find_master()
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
                replies = await node.send(wire, sent)
            except (ConnectionError, TimeoutError):
                if self._map is not None:
                    self._schedule_refresh()  # a failover may have moved the slot
                if self._sentinel is not None:
                    self._master_known = False  # ask the sentinels again
                raise
            if asking:
                replies = replies[1::2]
            refused = None
            for reply in replies:  # (a loop: no generator on every call's path)
                if isinstance(reply, ReplyError) and _redirection(reply) is not None:
                    refused = reply
                    break
            if refused is None:
                if self._sentinel is not None and any(_demoted(r) for r in replies):
                    self._master_known = False  # a failover made it a replica
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
        if self._sentinel is not None:
            sentinels = ",".join(f"{a.host}:{a.port}" for a in self._sentinel.sentinels)
            return f"sentinel master {self._sentinel.master_name!r} ({sentinels})"
        return f"{self._address.host}:{self._address.port}"

    # -- Sentinel -------------------------------------------------------------

    async def _find_master(self) -> None:
        """Learn the master's address; calls arriving meanwhile share the search."""
        if self._switches is None:
            self._switches = asyncio.get_running_loop().create_task(self._follow_switches())
        if self._finding is None or self._finding.done():
            self._finding = asyncio.ensure_future(self._ask_sentinels())
        await asyncio.shield(self._finding)

    async def _ask_sentinels(self) -> None:
        """The first sentinel that names a master that says it is one wins;
        it is asked first next time."""
        config = self._sentinel
        assert config is not None
        failures = []
        for index, sentinel in enumerate(self._sentinel_nodes):
            where = f"sentinel {sentinel.address.host}:{sentinel.address.port}"
            ask = ("SENTINEL", "GET-MASTER-ADDR-BY-NAME", config.master_name)
            try:
                (reply,) = await sentinel.send(encode(ask), 1)
            except (ConnectionError, TimeoutError, OSError) as exc:
                failures.append(f"{where}: {type(exc).__name__}: {exc}")
                continue
            if isinstance(reply, ReplyError) or not reply:
                failures.append(f"{where}: {reply or 'no master of that name'}")
                continue
            host, port = reply[0].decode(), int(reply[1])
            master = self._node_at(host, port)
            try:
                (role,) = await master.send(encode(("ROLE",)), 1)
            except (ConnectionError, TimeoutError, OSError) as exc:
                failures.append(f"{where} names {host}:{port}: {type(exc).__name__}: {exc}")
                continue
            if isinstance(role, ReplyError) or not role or role[0] != b"master":
                # Mid-failover: this sentinel has not heard of the promotion yet.
                failures.append(f"{where} names {host}:{port}, which is not a master")
                continue
            if master is not self._seed:
                log.info("redis master %r is at %s:%d", config.master_name, host, port)
                self._drop(self._seed)
                self._seed = master
                self._master_known = True
                self._master_switched()
            self._master_known = True
            self._sentinel_nodes.insert(0, self._sentinel_nodes.pop(index))
            return
        raise ConnectionError(
            f"no live master named {config.master_name!r}: " + "; ".join(failures)
        )

    async def _follow_switches(self) -> None:
        """Listen to a sentinel's ``+switch-master`` announcements, so a new
        master is used as soon as it is promoted. Without them a failover
        ordered by hand would go unnoticed while the old master still runs:
        it takes writes (lost when it becomes a replica) until the sentinels
        demote it, seconds later."""
        config = self._sentinel
        assert config is not None
        pause = _SWITCH_RETRY_MIN
        while not self._closed:
            for sentinel in list(self._sentinel_nodes):
                begun = time.monotonic()
                try:
                    await self._listen(sentinel.address, config.master_name)
                except (OSError, TimeoutError, hiredis.ProtocolError) as exc:
                    log.debug("sentinel %r: %s", sentinel, exc)
                except Exception:  # never let the follower die: calls rely on it
                    log.exception("following sentinel %r failed", sentinel)
                if time.monotonic() - begun > _SWITCH_PING:
                    pause = _SWITCH_RETRY_MIN  # it was listening: a fresh failure
            await asyncio.sleep(pause)
            pause = min(pause * 2, _SWITCH_RETRY_MAX)

    async def _listen(self, address: Address, name: str) -> None:
        async with asyncio.timeout(self.connect_timeout):
            context = ssl.create_default_context() if address.tls else None
            reader, writer = await asyncio.open_connection(address.host, address.port, ssl=context)
        try:
            hello: list[tuple[Arg, ...]] = []
            if address.password is not None:
                user = (address.username,) if address.username else ()
                hello.append(("AUTH", *user, address.password))
            hello.append(("SUBSCRIBE", "+switch-master"))
            writer.write(b"".join(encode(c) for c in hello))
            parser = hiredis.Reader()
            # Subscribed from here: whatever switch happened before went unseen.
            self._master_known = False
            quiet = 0
            while not self._closed:
                try:
                    data = await asyncio.wait_for(reader.read(65536), _SWITCH_PING)
                except TimeoutError:
                    quiet += 1
                    if quiet > 1:  # a PING went unanswered: the sentinel is gone
                        raise TimeoutError("no answer to PING") from None
                    writer.write(encode(("PING",)))
                    continue
                if not data:
                    raise ConnectionError("the sentinel closed the connection")
                quiet = 0
                parser.feed(data)
                while (reply := parser.gets()) is not False:
                    if isinstance(reply, hiredis.ReplyError):
                        raise ConnectionError(f"sentinel refused: {reply}")
                    if _switched(reply, name):
                        log.info("redis sentinel: master %r switched: %s", name, reply[2].decode())
                        self._master_known = False
                        self._master_switched()
        finally:
            writer.close()

    def _drop(self, node: _Node) -> None:
        """Forget a server that is no longer the master (closing its connections)."""
        key = (node.address.host, node.address.port)
        if self._nodes.get(key) is node:
            del self._nodes[key]
        node.close()

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


def _switched(reply: object, name: str) -> bool:
    """Whether a pub/sub reply announces a new master for ``name``
    (``+switch-master <name> <old ip> <old port> <new ip> <new port>``)."""
    return (
        isinstance(reply, list)
        and len(reply) == 3
        and reply[0] == b"message"
        and reply[1] == b"+switch-master"
        and reply[2].split(b" ", 1)[0].decode() == name
    )


def _demoted(reply: object) -> bool:
    """A write refused because the server is a replica now."""
    return isinstance(reply, ReplyError) and str(reply).startswith("READONLY")


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
