"""One Redis pub/sub connection per process, shared by every waiter.

Why: a watcher used to wait in a blocking ``XREAD`` on a Redis connection of
its own, so a process held one connection per open stream, and a few busy
replicas reached Redis's client limit. Here a process holds ONE subscriber
connection, whatever the number of waiters: it SUBSCRIBEs to a channel when
the first waiter of that channel arrives and UNSUBSCRIBEs when the last one
has left (refcounted; ``linger`` seconds later, since a watcher lets go
between two waits and comes right back), and a message on a channel wakes
that channel's waiters only. Reading what the message announces is the waiter's business, over the
ordinary pipelined connections (:mod:`service.store.resp`).

A waiter holds a :class:`Subscription` and loops::

    with subscriber.subscribe(channel) as sub:
        while True:
            await sub.ready(timeout)  # subscribed now, on a live connection
            ...check for what it waits for; done if there...
            if not await sub.wait(remaining):  # a message, a resubscription, a loss
                ...timed out...

Why nothing is missed: :meth:`Subscription.ready` returns only once Redis
has confirmed the channel's SUBSCRIBE on the current connection, so what was
published before is there to be seen by the check that follows, and what is
published after reaches this connection and wakes :meth:`Subscription.wait`
(a wake between the check and the wait is kept, not lost). A lost connection
wakes every waiter: each then waits in ``ready`` for the resubscription
(made on the next connection, which also wakes them) and checks again. A
waiter's own timeout bounds everything, so it re-checks even if a message
went astray.

Where it connects is asked of a ``locate`` callable each time: the server,
the master the sentinels name (and again when they announce a new one:
:meth:`Subscriber.reconnect`), or any node of a cluster, because a plain
PUBLISH reaches every node of a Redis Cluster (the first address that
accepts wins). Pub/sub is not scoped to a database number, so the channel
names carry the same prefix and hash tags as the keys.

Failures: a connection attempt that fails fails every waiter in ``ready``
with :class:`ConnectionError` at once (a store that is down answers
UNAVAILABLE quickly); a server that stops answering (a SUBSCRIBE or a PING
unanswered for ``timeout`` seconds) has its connection dropped; the next
attempt follows at once when a waiter asks, else after a pause that doubles
up to a second (and starts again from 50 ms once a connection has worked).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import ssl
from collections.abc import Awaitable, Callable, Sequence
from typing import Final

import hiredis

from service.store.resp import Address, encode

log = logging.getLogger("railyard.redis")

#: A quiet connection is PINGed after this many seconds (a dead peer or a
#: frozen server is noticed within this plus the timeout).
PING_AFTER: Final = 5.0
#: Seconds a channel nobody holds stays subscribed: a watcher lets go of its
#: game's channel between two waits (to send what it read, or a keep-alive),
#: and takes it again without a round trip to Redis.
LINGER: Final = 2.0
#: Channels named per SUBSCRIBE command when subscribing again after a reconnect.
_CHUNK: Final = 1000
#: Pauses between connection attempts nobody waits for: doubling, capped.
_RETRY_MIN: Final = 0.05
_RETRY_MAX: Final = 1.0


class _Channel:
    __slots__ = ("confirming", "expiry", "holders", "name", "stamp", "subscribed")

    def __init__(self, name: bytes, stamp: int) -> None:
        self.name = name
        #: Changes with every message, subscription and loss (see Subscription.stamp).
        self.stamp = stamp
        self.holders: set[Subscription] = set()
        #: While nobody holds it: when it is unsubscribed.
        self.expiry: asyncio.TimerHandle | None = None
        #: Confirmed on the current connection (and nothing sent since for it).
        self.subscribed = False
        #: The futures of waiters in :meth:`Subscription.ready`.
        self.confirming: set[asyncio.Future[None]] = set()


class Subscription:
    """One waiter's hold on one channel; a context manager that lets go."""

    __slots__ = ("_channel", "_subscriber", "_waiter", "_woken")

    def __init__(self, subscriber: Subscriber, channel: _Channel) -> None:
        self._subscriber = subscriber
        self._channel = channel
        self._woken = False
        self._waiter: asyncio.Future[None] | None = None

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._subscriber._release(self)

    @property
    def subscribed(self) -> bool:
        return self._channel.subscribed

    @property
    def stamp(self) -> int:
        """A number unique to the channel's state since its last message,
        (re)subscription or loss, in this subscriber. Two holders that see
        the same stamp, both subscribed, have heard the same messages since:
        a read one of them started then can answer the other too (a message
        after it wakes them both)."""
        return self._channel.stamp

    async def ready(self, timeout: float) -> None:
        """Until the channel is subscribed on a live connection (at once when
        it is); from then on, every message on it wakes :meth:`wait`. Raises
        :class:`ConnectionError` when the subscriber cannot connect, and
        :class:`TimeoutError` after ``timeout`` seconds without a confirmation."""
        if not self._channel.subscribed:
            await self._subscriber._until_subscribed(self._channel, timeout)
        self._woken = False

    async def wait(self, timeout: float) -> bool:
        """Until a message on the channel, a resubscription or the loss of the
        connection since :meth:`ready` (True), or ``timeout`` seconds (False)."""
        if self._woken:
            return True
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(timeout):
                await waiter
        except TimeoutError:
            return self._woken
        finally:
            self._waiter = None
        return True

    def _wake(self) -> None:
        self._woken = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class Subscriber:
    """The process's subscriber connection: see the module docstring."""

    def __init__(
        self,
        locate: Callable[[], Awaitable[Sequence[Address]]],
        *,
        connect_timeout: float = 1.0,
        timeout: float = 2.0,
        ping_after: float = PING_AFTER,
        linger: float = LINGER,
        client_name: str = "railyard-watch",
    ) -> None:
        self._locate = locate
        self._linger = linger
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self._ping_after = ping_after
        self._client_name = client_name
        self._channels: dict[bytes, _Channel] = {}
        # Per channel: SUBSCRIBE / UNSUBSCRIBE commands sent on this
        # connection and not confirmed yet. Replies come in order, so a
        # channel is subscribed when the last of them confirms a SUBSCRIBE.
        self._inflight: dict[bytes, int] = {}
        # When each reply still owed was asked for, oldest first.
        self._owed: collections.deque[float] = collections.deque()
        self._writer: asyncio.StreamWriter | None = None
        self._out: list[bytes] = []
        self._answered = False
        self._task: asyncio.Task[None] | None = None
        self._wanted = asyncio.Event()  # there are channels to subscribe to
        self._retry = asyncio.Event()  # a waiter asks for a connection now
        self._closed = False
        self._moves = 0  # calls of reconnect()
        self._stamps = 0  # the last stamp given to a channel
        #: How many connections were made (tests, metrics).
        self.connections = 0

    @property
    def channels(self) -> int:
        """How many channels are subscribed or about to be (held, or let go
        of less than ``linger`` seconds ago)."""
        return len(self._channels)

    @property
    def connected(self) -> bool:
        return self._writer is not None

    def subscribe(self, channel: str | bytes) -> Subscription:
        """Hold ``channel``: subscribed to (with its first holder), until every
        holder has let go (:meth:`Subscription.close`)."""
        if self._closed:
            raise ConnectionError("subscriber closed")
        name = channel.encode() if isinstance(channel, str) else channel
        held = self._channels.get(name)
        if held is None:
            self._stamps += 1
            held = self._channels[name] = _Channel(name, self._stamps)
            if self._writer is not None:
                self._send(b"SUBSCRIBE", [name])
        elif held.expiry is not None:
            held.expiry.cancel()
            held.expiry = None
        subscription = Subscription(self, held)
        held.holders.add(subscription)
        self._wanted.set()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        return subscription

    def reconnect(self) -> None:
        """Drop the connection now (say, the master moved); the next one
        subscribes to every held channel again, wherever ``locate`` says.
        Nothing counts as subscribed from here until then."""
        self._moves += 1  # a connection being made now goes to the old place
        writer, self._writer = self._writer, None
        if writer is None:
            return
        writer.transport.abort()
        for held in self._channels.values():
            held.subscribed = False
            self._notice(held)

    async def close(self) -> None:
        self._closed = True
        for held in self._channels.values():
            if held.expiry is not None:
                held.expiry.cancel()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._lost(ConnectionError("subscriber closed"), failed=True)

    # -- holders ----------------------------------------------------------

    def _release(self, subscription: Subscription) -> None:
        held = subscription._channel
        held.holders.discard(subscription)
        if held.holders or self._channels.get(held.name) is not held:
            return
        if self._linger > 0 and not self._closed:
            if held.expiry is None:
                held.expiry = asyncio.get_running_loop().call_later(
                    self._linger, self._expire, held
                )
        else:
            self._expire(held)

    def _expire(self, held: _Channel) -> None:
        """Unsubscribe from a channel nobody holds any more."""
        held.expiry = None
        if held.holders or self._channels.get(held.name) is not held:
            return
        del self._channels[held.name]
        if self._writer is not None:
            self._send(b"UNSUBSCRIBE", [held.name])

    async def _until_subscribed(self, held: _Channel, timeout: float) -> None:
        if self._closed:
            raise ConnectionError("subscriber closed")
        confirmed = asyncio.get_running_loop().create_future()
        held.confirming.add(confirmed)
        self._retry.set()  # no pause before the next attempt: someone waits
        try:
            async with asyncio.timeout(timeout):
                await confirmed
        except TimeoutError:
            raise TimeoutError(
                f"Redis did not confirm a subscription within {timeout:g} s"
            ) from None
        finally:
            held.confirming.discard(confirmed)

    # -- the connection ---------------------------------------------------

    async def _run(self) -> None:
        pause = _RETRY_MIN
        while not self._closed:
            if not self._channels:
                self._wanted.clear()
                await self._wanted.wait()
                continue
            self._answered = False
            moves = self._moves
            failure: BaseException
            try:
                await self._session()
                failure = ConnectionError("subscription ended")
            except (OSError, hiredis.ProtocolError) as exc:
                failure = exc
                log.debug("redis subscriber: %s: %s", type(exc).__name__, exc)
            except Exception as exc:  # never let it die: every waiter relies on it
                failure = exc
                log.exception("redis subscriber failed")
            # Moved by reconnect(): not a failure of the server's, whatever it answered.
            answered = self._answered or self._moves != moves
            # Cleared before the waiters wake: those that then ask for a
            # connection cut the pause short.
            self._retry.clear()
            self._lost(failure, failed=not answered)
            if answered:
                pause = _RETRY_MIN  # it worked until now: a fresh failure
            try:
                async with asyncio.timeout(pause):
                    await self._retry.wait()
            except TimeoutError:
                pass
            pause = min(pause * 2, _RETRY_MAX)

    async def _session(self) -> None:
        """Connect, subscribe to every held channel, and dispatch what comes,
        until the connection fails (raises)."""
        while True:
            moves = self._moves
            address, reader, writer = await self._connect(await self._locate())
            if moves == self._moves:
                break
            writer.transport.abort()  # it moved meanwhile: go where it is now
        for held in [c for c in self._channels.values() if not c.holders]:
            self._expire(held)  # nobody to subscribe it again for
        self._writer = writer
        self.connections += 1
        try:
            hello: list[tuple[bytes | str, ...]] = []
            if address.password is not None:
                user = (address.username,) if address.username else ()
                hello.append(("AUTH", *user, address.password))
            hello.append(("CLIENT", "SETNAME", self._client_name))
            for command in hello:
                self._owed.append(asyncio.get_running_loop().time())
                self._write(encode(command))
            names = list(self._channels)
            for at in range(0, len(names), _CHUNK):
                self._send(b"SUBSCRIBE", names[at : at + _CHUNK])
            await self._dispatch(reader, writer)
        finally:
            self._writer = None
            writer.transport.abort()

    async def _connect(
        self, addresses: Sequence[Address]
    ) -> tuple[Address, asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to the first of ``addresses`` that accepts one."""
        failure: BaseException = ConnectionError("nowhere to subscribe")
        for address in addresses:
            try:
                async with asyncio.timeout(self.connect_timeout):
                    if address.path is not None:
                        reader, writer = await asyncio.open_unix_connection(address.path)
                    else:
                        context = ssl.create_default_context() if address.tls else None
                        reader, writer = await asyncio.open_connection(
                            address.host, address.port, ssl=context
                        )
                return address, reader, writer
            except OSError as exc:
                failure = exc
        raise failure

    async def _dispatch(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        parser = hiredis.Reader()
        heard = loop.time()
        while True:
            owed = self._owed
            deadline = owed[0] + self.timeout if owed else heard + self._ping_after
            try:
                async with asyncio.timeout_at(deadline):
                    data = await reader.read(65536)
            except TimeoutError:
                if self._owed:
                    raise TimeoutError(
                        f"Redis did not answer the subscriber within {self.timeout:g} s"
                    ) from None
                self._owed.append(loop.time())
                self._write(encode(("PING",)))
                continue
            if not data:
                raise ConnectionError("Redis closed the subscriber's connection")
            if self._writer is not writer:  # dropped by reconnect(): what it read is stale
                raise ConnectionError("the subscriber moves")
            heard = loop.time()
            parser.feed(data)
            while (reply := parser.gets()) is not False:
                self._handle(reply)

    def _handle(self, reply: object) -> None:
        if isinstance(reply, hiredis.ReplyError):
            raise ConnectionError(f"Redis refused the subscriber: {reply}")
        if isinstance(reply, list) and len(reply) == 3 and reply[0] == b"message":
            held = self._channels.get(reply[1])
            if held is not None:
                self._notice(held)
            return
        # Anything else answers a command: AUTH, SETNAME, (UN)SUBSCRIBE, PING.
        if self._owed:
            self._owed.popleft()
        self._answered = True
        if isinstance(reply, list) and len(reply) == 3 and isinstance(reply[1], bytes):
            if reply[0] == b"subscribe":
                self._confirmed(reply[1], subscribed=True)
            elif reply[0] == b"unsubscribe":
                self._confirmed(reply[1], subscribed=False)

    def _confirmed(self, name: bytes, subscribed: bool) -> None:
        left = self._inflight.get(name, 0) - 1
        if left > 0:
            self._inflight[name] = left
        else:
            self._inflight.pop(name, None)
        held = self._channels.get(name)
        if held is None:
            return
        if not subscribed or left > 0:
            if held.subscribed:
                held.subscribed = False  # another command for it is on its way
                self._notice(held)
            return
        held.subscribed = True
        for confirmed in held.confirming:
            if not confirmed.done():
                confirmed.set_result(None)
        held.confirming.clear()
        # A (re)subscription: whatever was published before it, its holders
        # may have missed; they check again.
        self._notice(held)

    def _notice(self, held: _Channel) -> None:
        """Something happened on the channel: a new stamp, its holders woken."""
        self._stamps += 1
        held.stamp = self._stamps
        for subscription in held.holders:
            subscription._wake()

    def _lost(self, failure: BaseException, failed: bool) -> None:
        """The connection is gone: nothing is subscribed; every holder wakes
        (and waits in ``ready`` for the next connection); if this attempt
        never got an answer, the waiters in ``ready`` fail now."""
        self._writer = None
        self._out = []
        self._inflight.clear()
        self._owed.clear()
        detail = f"no subscription to Redis: {type(failure).__name__}: {failure}"
        for held in self._channels.values():
            held.subscribed = False
            if failed:
                for confirmed in held.confirming:
                    if not confirmed.done():
                        confirmed.set_exception(ConnectionError(detail))
                held.confirming.clear()
            self._notice(held)

    # -- writing ----------------------------------------------------------

    def _send(self, command: bytes, names: list[bytes]) -> None:
        now = asyncio.get_running_loop().time()
        for name in names:
            self._inflight[name] = self._inflight.get(name, 0) + 1
            self._owed.append(now)
        self._write(encode((command, *names)))

    def _write(self, payload: bytes) -> None:
        # Corked: the subscriptions of every watch opened in one turn of the
        # event loop leave in one write.
        if not self._out:
            asyncio.get_running_loop().call_soon(self._flush)
        self._out.append(payload)

    def _flush(self) -> None:
        out, self._out = self._out, []
        if out and self._writer is not None and not self._writer.is_closing():
            self._writer.write(b"".join(out))
