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

Only request/response commands go through here. Blocking reads (``XREAD
BLOCK``) would hold up every call queued behind them on a shared connection,
so the store keeps redis-py's pool for those.

Failures: a connection that is refused, reset or closed fails every call
waiting on it with :class:`ConnectionError`; a server that stops answering
for ``timeout`` seconds fails them with :class:`TimeoutError` and the
connection is dropped. The next call connects again, so the client recovers
by itself when Redis is back. An error reply is raised as :class:`ReplyError`.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import ssl
import time
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import parse_qs, unquote, urlsplit

import hiredis

Arg = bytes | str | int


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

    def send(self, payload: bytes, count: int) -> list[asyncio.Future[Any]]:
        """Write ``payload`` (``count`` encoded commands); their futures, in order."""
        if self.closed or self._transport is None or self._transport.is_closing():
            raise ConnectionError("connection to Redis is closed")
        loop = asyncio.get_running_loop()
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


class RespClient:
    """Commands over ``connections`` shared, pipelined connections."""

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
        self._address = Address.parse(url)
        self._slots: list[_Connection | None] = [None] * connections
        self._connecting: list[asyncio.Future[_Connection] | None] = [None] * connections
        self._next = 0
        self._connect_timeout = connect_timeout
        self._timeout = timeout
        self._client_name = client_name
        self._closed = False

    async def call(self, *args: Arg) -> Any:
        """One command's reply."""
        slot, connection = self._pick()
        if connection is None:
            connection = await self._connect(slot)
        (future,) = connection.send(encode(args), 1)
        return await future

    async def pipeline(self, *commands: tuple[Arg, ...]) -> list[Any]:
        """Several commands written together (not a transaction); every reply,
        in order. The first error reply is raised."""
        slot, connection = self._pick()
        if connection is None:
            connection = await self._connect(slot)
        futures = connection.send(b"".join(encode(c) for c in commands), len(commands))
        return list(await asyncio.gather(*futures))

    async def close(self) -> None:
        self._closed = True
        for connection in self._slots:
            if connection is not None:
                connection.close()
        self._slots = [None] * len(self._slots)

    # -- connections ------------------------------------------------------

    def _pick(self) -> tuple[int, _Connection | None]:
        """The next slot round-robin, with its connection unless it must be (re)made."""
        slot = self._next
        self._next = (slot + 1) % len(self._slots)
        connection = self._slots[slot]
        if connection is not None and not connection.closed:
            return slot, connection
        return slot, None

    async def _connect(self, slot: int) -> _Connection:
        if self._closed:
            raise ConnectionError("client closed")
        pending = self._connecting[slot]
        if pending is None:
            pending = asyncio.ensure_future(self._open())
            self._connecting[slot] = pending
            try:
                connection = await asyncio.shield(pending)
            finally:
                self._connecting[slot] = None
            self._slots[slot] = connection
            return connection
        return await asyncio.shield(pending)

    async def _open(self) -> _Connection:
        address = self._address
        loop = asyncio.get_running_loop()
        connection = _Connection(self._timeout)
        try:
            async with asyncio.timeout(self._connect_timeout):
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
                hello.append(("CLIENT", "SETNAME", self._client_name))
                futures = connection.send(b"".join(encode(c) for c in hello), len(hello))
                await asyncio.gather(*futures)
        except BaseException:
            connection.close()
            raise
        return connection


class Script:
    """A Lua script run by EVALSHA, loaded on first use and again after a
    Redis restart (``NOSCRIPT``)."""

    def __init__(self, client: RespClient, source: str) -> None:
        self._client = client
        self._source = source
        self.sha: Final = hashlib.sha1(source.encode()).hexdigest()

    async def __call__(self, keys: list[str], args: list[Arg]) -> Any:
        try:
            return await self._client.call("EVALSHA", self.sha, len(keys), *keys, *args)
        except ReplyError as exc:
            if not str(exc).startswith("NOSCRIPT"):
                raise
        return await self._client.call("EVAL", self._source, len(keys), *keys, *args)
