"""The production store: Redis, a single server, a master found through Sentinel, or a Cluster.

Every key of a game carries the game id as its hash tag, so they all live in
one cluster slot and one Lua script may touch them together:

* ``{prefix}:{<game_id>}:g``: a hash with fields ``state``, ``version``, ``meta``,
  ``deadline`` and ``rev`` (the meta's revision: +1 each time it changes);
* ``{prefix}:{<game_id>}:e``: a Redis Stream of the game's events, entry id
  ``<version>-<seq>``, field ``p`` = the event's payload;
* ``{prefix}:{<game_id>}:r:<request_key>``: a string, a remembered response;
* the pub/sub channel named like the stream, ``{prefix}:{<game_id>}:e``: the
  scripts PUBLISH the game's new version there after appending events.

Due work (background play, turn timers: :meth:`RedisStore.claim_due`) lives
apart from the games, under its own hash tag, so that one script sees all of
it: ``{prefix}:{due}:at``, a sorted set of game ids scored by when each is due
(ms since the epoch; while leased, when the lease ends), and
``{prefix}:{due}:owner``, a hash naming each leased game's claimant. On a
Cluster these two keys share one slot (one node), and a game's keys are in
the game's own: an entry is scheduled before its game's commit, never in the
same script, and is only a reminder (the claimant loads the game to learn
what is due), so a commit that fails after its entry was written leaves a
spurious entry, which costs one load.

:meth:`RedisStore.create` and :meth:`RedisStore.commit` are each one Lua script
(atomic on the server; every key it touches is passed in ``KEYS``). Reads are
plain commands. Everything goes through :mod:`service.store.resp`, a lean
client that pipelines every call of the process over a few shared
connections (redis-py's asyncio client cost several times its CPU per command).

Watchers hold no connection of their own: :meth:`RedisStore.wait_events`
subscribes to the game's channel on the process's one subscriber connection
(:mod:`service.store.pubsub`, refcounted per game), checks the stream with a
plain ``XREAD`` once subscribed, and waits for a notification (or its
timeout) before reading again. The watchers of one game, woken together,
share one read. A notification is a hint, never the data:
whatever a waiter reads comes from the stream, so one lost with a connection
costs a re-check, not an event. Plain PUBLISH reaches every node of a
cluster, so one subscription on any node hears every game.
On Redis Cluster every call goes to the node owning its game's slot (the
client follows ``MOVED`` and ``ASK``); with a ``redis+sentinel://`` URL, to
the master the sentinels name, followed through failovers (see
:mod:`service.store.resp`).

Any failure to talk to Redis (refused, reset, timed out, loading, read-only
replica, ...) surfaces as :class:`StoreUnavailableError`. Timeouts are short,
so a call fails fast when Redis is down, and connections are re-established
on the next call once it is back: the process never needs a restart.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from service.store import (
    Commit,
    GameExistsError,
    GameRecord,
    OutcomeUnknownError,
    Reservation,
    StoredEvent,
    StoreFullError,
    StoreUnavailableError,
)
from service.store.pubsub import Subscriber
from service.store.resp import Arg, ReplyError, ReplyLostError, RespClient, Script, redact_url

_T = TypeVar("_T")

# create: KEYS = game hash, event stream[, request key]
# ARGV = state, version, meta, game ttl ms, request ttl ms, has response (0/1),
#        response, turn deadline ms, then <stream id>, <payload> per event (ids
#        strictly increasing).
# Returns {"ok"} | {"remembered", response} | {"exists"}. Publishes the version
# on the channel named like the stream when it wrote events.
# The shebang (Redis 7 script flags, none given) makes Redis refuse the whole
# script up front when it is over maxmemory: without it Redis checks memory
# only at the first write command, and DEL is not one, so a full Redis used
# to create games while it refused every move.
_CREATE_LUA = """#!lua
local game, stream, request = KEYS[1], KEYS[2], KEYS[3]
if redis.call('EXISTS', game) == 1 then
  if request then
    local remembered = redis.call('GET', request)
    if remembered then return {'remembered', remembered} end
  end
  return {'exists'}
end
-- Leftovers of an expired game with the same id would clash with the new one.
redis.call('DEL', stream)
if request then redis.call('DEL', request) end
redis.call('HSET', game, 'state', ARGV[1], 'version', ARGV[2], 'meta', ARGV[3],
  'deadline', ARGV[8])
redis.call('PEXPIRE', game, ARGV[4])
for i = 9, #ARGV, 2 do
  redis.call('XADD', stream, ARGV[i], 'p', ARGV[i + 1])
end
if #ARGV >= 9 then redis.call('PEXPIRE', stream, ARGV[4]) end
if request and ARGV[6] == '1' then
  redis.call('SET', request, ARGV[7], 'PX', ARGV[5])
end
-- Last, once written: a woken watcher reads what this script wrote.
if #ARGV >= 9 then redis.call('PUBLISH', stream, ARGV[2]) end
return {'ok'}
"""

# commit: KEYS = game hash, event stream[, request key]
# ARGV = expected version, new version, state, game ttl ms, request ttl ms,
#        response, turn deadline ms, expected revision, new meta ("" keeps
#        it; else the revision goes up one), then <stream id>, <payload> per
#        event (ids strictly increasing).
# Returns "ok" | "not_found" | "version_mismatch" | "bad_event_id"; nothing
# is written (or published) unless it returns "ok". Refused up front at
# maxmemory, as create.
_COMMIT_LUA = """#!lua
local game, stream, request = KEYS[1], KEYS[2], KEYS[3]
local current = redis.call('HMGET', game, 'version', 'rev')
if not current[1] then return 'not_found' end
if current[1] ~= ARGV[1] or (current[2] or '0') ~= ARGV[8] then
  return 'version_mismatch'
end
if #ARGV >= 10 then
  -- XADD would fail half-way through an id at or below the stream's last one.
  local last = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)[1]
  if last then
    local lv, ls = string.match(last[1], '^(%d+)-(%d+)$')
    local nv, ns = string.match(ARGV[10], '^(%d+)-(%d+)$')
    lv, ls, nv, ns = tonumber(lv), tonumber(ls), tonumber(nv), tonumber(ns)
    if nv < lv or (nv == lv and ns <= ls) then return 'bad_event_id' end
  end
end
redis.call('HSET', game, 'state', ARGV[3], 'version', ARGV[2], 'deadline', ARGV[7])
if ARGV[9] ~= '' then
  redis.call('HSET', game, 'meta', ARGV[9], 'rev', tonumber(ARGV[8]) + 1)
end
for i = 10, #ARGV, 2 do
  redis.call('XADD', stream, ARGV[i], 'p', ARGV[i + 1])
end
redis.call('PEXPIRE', game, ARGV[4])
redis.call('PEXPIRE', stream, ARGV[4])
if request then redis.call('SET', request, ARGV[6], 'PX', ARGV[5]) end
-- Last, once written: a woken watcher reads what this script wrote.
if #ARGV >= 10 then redis.call('PUBLISH', stream, ARGV[2]) end
return 'ok'
"""

# Due work. KEYS = the due set, the owners hash (one hash tag: one slot).
# The store's clock decides what is due and when a lease ends, so replicas
# with skewed clocks agree on both.
_NOW_LUA = """
local now_s, now_us = unpack(redis.call('TIME'))
local now = now_s * 1000 + math.floor(now_us / 1000)
"""
# claim: ARGV = owner, lease ms, limit. Returns the claimed game ids.
_CLAIM_LUA = (
    _NOW_LUA
    + """
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(ids) do
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), id)
  redis.call('HSET', KEYS[2], id, ARGV[1])
end
return ids
"""
)
# renew: ARGV = game id, owner, lease ms. Returns 1, or 0 when not the owner's.
_RENEW_LUA = (
    _NOW_LUA
    + """
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
return 1
"""
)
# release: ARGV = game id, owner, due ms ("": no entry any more).
_RELEASE_LUA = """
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1])
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
end
return 1
"""


# take: KEYS = the caller's bucket (a hash: tokens, ms); ARGV = rate per second,
# burst. The server's clock, so that replicas with skewed clocks agree.
# Returns the seconds to wait as a string ("0": a token was taken).
_TAKE_LUA = """
local now_s, now_us = unpack(redis.call('TIME'))
local now = now_s * 1000 + math.floor(now_us / 1000)
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local held = redis.call('HMGET', KEYS[1], 'tokens', 'ms')
local tokens = tonumber(held[1]) or burst
local last = tonumber(held[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - last) * rate / 1000)
local wait = 0
if tokens < 1 then wait = (1 - tokens) / rate else tokens = tokens - 1 end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ms', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return tostring(wait)
"""


# reserve_live: KEYS = the tenant's sorted set of live games (member: game id,
# score: ms at which it stops counting); ARGV = game id, cap (0: none), game ttl
# ms. Drops the expired first; the server's clock, as take. Returns "added",
# "held" (counted already) or "full".
_RESERVE_LIVE_LUA = """
local now_s, now_us = unpack(redis.call('TIME'))
local now = now_s * 1000 + math.floor(now_us / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 'held' end
local cap = tonumber(ARGV[2])
if cap > 0 and redis.call('ZCARD', KEYS[1]) >= cap then return 'full' end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
-- The newest member counts longest: the set goes when its last one would.
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 'added'
"""


def _stream_id(version: int, seq: int) -> str:
    return f"{version}-{seq}"


def _event_args(events: Sequence[StoredEvent]) -> list[Arg]:
    """``<id>, <payload>`` per event, checking the ids are valid and increasing."""
    args: list[Arg] = []
    previous: tuple[int, int] | None = None
    for event in events:
        if event.version < 0 or event.seq < 1:
            raise ValueError(f"bad event position ({event.version}, {event.seq})")
        position = (event.version, event.seq)
        if previous is not None and position <= previous:
            raise ValueError(f"events out of order: {previous} then {position}")
        previous = position
        args += [_stream_id(*position), event.payload]
    return args


def _parse_entries(entries: Any) -> list[StoredEvent]:
    """Stream entries as stored events: ``[(b"<v>-<s>", {b"p": payload}), ...]``
    from redis-py, or ``[[b"<v>-<s>", [b"p", payload]], ...]`` as RESP has them."""
    out: list[StoredEvent] = []
    for entry_id, fields in entries or ():
        raw = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
        version, _, seq = raw.partition("-")
        if isinstance(fields, list):
            fields = dict(zip(fields[::2], fields[1::2], strict=True))
        payload = fields.get(b"p", fields.get("p", b"")) if fields else b""
        out.append(StoredEvent(int(version), int(seq), bytes(payload)))
    return out


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


class RedisStore:
    """The :class:`service.store.Store` on Redis; see the module docstring."""

    name = "redis"

    def __init__(
        self,
        url: str,
        game_ttl: float = 7 * 86400,
        request_ttl: float = 86400,
        prefix: str = "ry",
        *,
        connect_timeout: float = 1.0,
        timeout: float = 2.0,
        connections: int = 2,
    ) -> None:
        if game_ttl <= 0 or request_ttl <= 0:
            raise ValueError("TTLs must be positive")
        if not prefix or "{" in prefix or "}" in prefix:
            raise ValueError(f"bad key prefix {prefix!r}")
        self._where = redact_url(url)
        self._prefix = prefix
        self._game_ttl_ms = _ms(game_ttl)
        self._request_ttl_ms = _ms(request_ttl)
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        # Requests: a few shared connections, pipelined, short timeouts;
        # watchers: one subscriber connection, following the client's master.
        self._client = RespClient(
            url, connections=connections, connect_timeout=connect_timeout, timeout=timeout
        )
        self._subscriber = Subscriber(
            self._client.subscriber_addresses, connect_timeout=connect_timeout, timeout=timeout
        )
        self._client.on_master_switch(self._subscriber.reconnect)
        # Stream reads in flight, by (stream, start): the watchers of a game,
        # woken together, share one (see _read_shared).
        self._reads: dict[tuple[str, str], tuple[int, asyncio.Future[list[StoredEvent]]]] = {}
        self._create_script = Script(self._client, _CREATE_LUA)
        self._commit_script = Script(self._client, _COMMIT_LUA)
        self._take_script = Script(self._client, _TAKE_LUA)
        self._reserve_live_script = Script(self._client, _RESERVE_LIVE_LUA)

        self._claim_script = Script(self._client, _CLAIM_LUA)
        self._renew_script = Script(self._client, _RENEW_LUA)
        self._release_script = Script(self._client, _RELEASE_LUA)
        self._due_keys = [f"{prefix}:{{due}}:at", f"{prefix}:{{due}}:owner"]

    # -- keys -------------------------------------------------------------

    def _tag(self, game_id: str) -> str:
        if not game_id or "{" in game_id or "}" in game_id:
            raise ValueError(f"bad game id {game_id!r}")
        return f"{self._prefix}:{{{game_id}}}"

    def game_key(self, game_id: str) -> str:
        return f"{self._tag(game_id)}:g"

    def events_key(self, game_id: str) -> str:
        return f"{self._tag(game_id)}:e"

    def request_key(self, game_id: str, request_key: str) -> str:
        return f"{self._tag(game_id)}:r:{request_key}"

    # -- failures ---------------------------------------------------------

    def _failure(self, exc: Exception, what: str, writes: bool) -> StoreUnavailableError:
        """A Redis failure as the store's error: StoreUnavailableError; for a
        call that ``writes``, a reply lost after the call was sent as
        OutcomeUnknownError (it may have run)."""
        detail = str(exc) or "no answer"
        failure: type[StoreUnavailableError] = StoreUnavailableError
        if isinstance(exc, ReplyError) and detail.startswith("OOM"):
            # Over maxmemory under noeviction: a refused script wrote nothing.
            failure = StoreFullError
        elif writes and isinstance(exc, ReplyLostError):
            failure = OutcomeUnknownError
        return failure(
            f"redis store at {self._where}: {what} failed: {type(exc).__name__}: {detail}"
        )

    @asynccontextmanager
    async def _guard(self, what: str, *, writes: bool = False) -> AsyncIterator[None]:
        """Redis failures as :meth:`_failure` says. (Not on a move's path:
        :meth:`_read` and :meth:`commit` catch them themselves, a context
        manager's generator and its hooks cost more than the rest of a load.)"""
        try:
            yield
        # OSError covers ConnectionError and TimeoutError; ReplyError is Redis
        # refusing (LOADING, READONLY, OOM, CLUSTERDOWN, ...).
        except (ReplyError, OSError) as exc:
            raise self._failure(exc, what, writes) from exc

    async def _read(self, what: str, call: Callable[[], Awaitable[_T]]) -> _T:
        """An idempotent read, retried once on a dropped connection."""
        try:
            start = time.monotonic()
            try:
                return await call()
            except ConnectionError:
                if time.monotonic() - start > self._connect_timeout:
                    raise  # not a stale connection: Redis is down or swamped
                return await call()
        except (ReplyError, OSError) as exc:  # as in _guard
            raise self._failure(exc, what, False) from exc

    # -- the Store protocol -------------------------------------------------

    async def create(
        self,
        record: GameRecord,
        events: Sequence[StoredEvent],
        request_key: str | None,
        response: bytes | None,
    ) -> bytes | None:
        game_id = record.game_id
        keys = [self.game_key(game_id), self.events_key(game_id)]
        if request_key is not None:
            keys.append(self.request_key(game_id, request_key))
        args: list[Arg] = [
            record.state,
            record.version,
            record.meta,
            self._game_ttl_ms,
            self._request_ttl_ms,
            0 if response is None else 1,
            b"" if response is None else response,
            record.deadline_ms,
        ]
        args += _event_args(events)
        async with self._guard(f"create game {game_id}", writes=True):
            reply = await self._create_script(keys=keys, args=args)
        status = reply[0]
        if status == b"ok":
            return None
        if status == b"remembered":
            return bytes(reply[1])
        raise GameExistsError(f"game {game_id} exists")

    async def load(self, game_id: str) -> GameRecord | None:
        key = self.game_key(game_id)

        async def call() -> Any:
            return await self._client.call(
                "HMGET", key, "state", "version", "meta", "deadline", "rev", route=key
            )

        state, version, meta, deadline, rev = await self._read(f"load game {game_id}", call)
        if state is None or version is None:
            return None
        # (No deadline or rev field: a game stored before timers or tables.)
        return GameRecord(
            game_id,
            int(version),
            bytes(state),
            bytes(meta or b""),
            int(deadline or 0),
            int(rev or 0),
        )

    async def commit(
        self,
        game_id: str,
        expected_version: int,
        version: int,
        state: bytes,
        events: Sequence[StoredEvent],
        request_key: str | None,
        response: bytes | None,
        deadline_ms: int = 0,
        *,
        rev: int = 0,
        meta: bytes | None = None,
    ) -> Commit:
        keys = [self.game_key(game_id), self.events_key(game_id)]
        if request_key is not None and response is not None:
            keys.append(self.request_key(game_id, request_key))
        args: list[Arg] = [
            expected_version,
            version,
            state,
            self._game_ttl_ms,
            self._request_ttl_ms,
            b"" if response is None else response,
            deadline_ms,
            rev,
            b"" if meta is None else meta,
        ]
        args += _event_args(events)
        try:
            reply = await self._commit_script(keys=keys, args=args)
        except (ReplyError, OSError) as exc:  # as in _guard
            raise self._failure(exc, f"commit to game {game_id}", True) from exc
        if reply == b"ok":
            return Commit.OK
        if reply == b"version_mismatch":
            return Commit.VERSION_MISMATCH
        if reply == b"not_found":
            return Commit.NOT_FOUND
        raise ValueError(
            f"game {game_id}: events {events[0].version}-{events[0].seq}... do not follow "
            "the game's log"
        )

    async def recall(self, game_id: str, request_key: str) -> bytes | None:
        game, key = self.game_key(game_id), self.request_key(game_id, request_key)

        async def call() -> Any:
            # A response outlives its game in Redis only by TTL skew: hide it then,
            # as the memory store does.
            return await self._client.pipeline(("EXISTS", game), ("GET", key), route=game)

        exists, value = await self._read(f"recall in game {game_id}", call)
        return None if not exists or value is None else bytes(value)

    async def read_events(self, game_id: str, after_version: int) -> list[StoredEvent]:
        key = self.events_key(game_id)
        start = "-" if after_version < 0 else _stream_id(after_version + 1, 0)

        async def call() -> Any:
            return await self._client.call("XRANGE", key, start, "+", route=key)

        return _parse_entries(await self._read(f"read events of game {game_id}", call))

    async def wait_events(
        self, game_id: str, after: tuple[int, int], timeout: float
    ) -> list[StoredEvent]:
        key = self.events_key(game_id)
        version, seq = after
        start = "0-0" if version < 0 else _stream_id(version, max(seq, 0))
        what = f"wait for events of game {game_id}"

        async def read() -> list[StoredEvent]:
            reply = await self._read(
                what, lambda: self._client.call("XREAD", "STREAMS", key, start, route=key)
            )
            return self._stream_reply(reply)

        if timeout <= 0:
            return await read()
        deadline = time.monotonic() + timeout
        # The channel is named like the stream (the scripts publish there).
        async with self._guard(what):
            with self._subscriber.subscribe(key) as notices:
                while True:
                    # Subscribed before the read: a commit after it wakes the wait.
                    await notices.ready(self._timeout)
                    found = await self._read_shared(key, start, notices.stamp, read)
                    remaining = deadline - time.monotonic()
                    if found or remaining <= 0 or not await notices.wait(remaining):
                        return found

    async def _read_shared(
        self,
        key: str,
        start: str,
        stamp: int,
        read: Callable[[], Awaitable[list[StoredEvent]]],
    ) -> list[StoredEvent]:
        """``read()``, or the same read of ``key`` from ``start`` that another
        waiter began while the channel had this ``stamp`` (subscribed, nothing
        heard since): whatever that read misses was committed after it ran,
        so its notification is still to come and wakes this waiter too."""
        slot = (key, start)
        shared = self._reads.get(slot)
        if shared is None or shared[0] != stamp:
            task = asyncio.ensure_future(read())
            shared = self._reads[slot] = (stamp, task)
            task.add_done_callback(functools.partial(self._read_done, slot, shared))
        # Shielded: a waiter that goes away does not cancel the others' read.
        return list(await asyncio.shield(shared[1]))

    def _read_done(
        self,
        slot: tuple[str, str],
        shared: tuple[int, asyncio.Future[list[StoredEvent]]],
        task: asyncio.Future[list[StoredEvent]],
    ) -> None:
        if self._reads.get(slot) is shared:
            del self._reads[slot]
        if not task.cancelled():
            task.exception()  # raised to whoever waited; retrieved here for the rest

    @staticmethod
    def _stream_reply(reply: Any) -> list[StoredEvent]:
        if not reply:
            return []
        if isinstance(reply, dict):  # RESP3: {key: [entries]}
            streams = list(reply.values())
            return _parse_entries(streams[0][0] if streams and streams[0] else [])
        return _parse_entries(reply[0][1])

    async def take(self, key: str, rate: float, burst: int) -> float:
        # The caller's key hashed again: neither a token's hash nor an address
        # is kept in Redis as it came; its own hash tag puts it on any node.
        bucket = hashlib.sha256(key.encode()).hexdigest()[:32]
        async with self._guard("take a rate-limit token"):
            reply = await self._take_script([f"{self._prefix}:rl:{{{bucket}}}"], [str(rate), burst])
        return float(reply)

    def live_games_key(self, tenant: str) -> str:
        """A tenant's live games: its own hash tag (a tenant's games are on
        many nodes of a cluster, so the count cannot share a game's slot)."""
        if not tenant or "{" in tenant or "}" in tenant:
            raise ValueError(f"bad tenant {tenant!r}")
        return f"{self._prefix}:tenant:{{{tenant}}}:live"

    async def reserve_live(self, tenant: str, game_id: str, cap: int) -> Reservation:
        key = self.live_games_key(tenant)
        async with self._guard(f"count the live games of {tenant}", writes=True):
            reply = await self._reserve_live_script([key], [game_id, cap, self._game_ttl_ms])
        return Reservation(bytes(reply).decode())

    async def release_live(self, tenant: str, game_id: str) -> None:
        key = self.live_games_key(tenant)
        async with self._guard(f"release a live game of {tenant}", writes=True):
            await self._client.call("ZREM", key, game_id, route=key)

    # -- tables: join codes and the public tables' list (service.app.tables)

    def code_key(self, code: str) -> str:
        return f"{self._prefix}:{{code}}:{code}"

    def listed_key(self, tenant: str) -> str:
        """A tenant's listed tables: a sorted set whose members (all of score
        0) sort by creation, :func:`service.store.listed_member`."""
        return f"{self._prefix}:{{listed}}:{tenant or '-'}"

    async def put_code(self, code: str, game_id: str) -> bool:
        key = self.code_key(code)
        async with self._guard("store a join code", writes=True):
            reply = await self._client.call(
                "SET", key, game_id, "NX", "PX", self._game_ttl_ms, route=key
            )
        return reply is not None

    async def code_game(self, code: str) -> str | None:
        key = self.code_key(code)

        async def call() -> Any:
            return await self._client.call("GET", key, route=key)

        found = await self._read("read a join code", call)
        return None if found is None else bytes(found).decode()

    async def list_add(self, tenant: str, member: str) -> None:
        key = self.listed_key(tenant)
        async with self._guard("list a table", writes=True):
            await self._client.call("ZADD", key, 0, member, route=key)

    async def list_remove(self, tenant: str, member: str) -> None:
        key = self.listed_key(tenant)
        async with self._guard("unlist a table", writes=True):
            await self._client.call("ZREM", key, member, route=key)

    async def list_page(self, tenant: str, after: str, limit: int) -> list[str]:
        key = self.listed_key(tenant)
        start = f"({after}" if after else "-"

        async def call() -> Any:
            return await self._client.call(
                "ZRANGE", key, start, "+", "BYLEX", "LIMIT", 0, limit, route=key
            )

        reply = await self._read("list tables", call)
        return [bytes(member).decode() for member in reply or ()]

    async def schedule(self, game_id: str, due_ms: int) -> None:
        self._tag(game_id)  # (refuses an id that is no game's)
        async with self._guard(f"schedule game {game_id}"):
            due_set = self._due_keys[0]
            await self._client.call("ZADD", due_set, due_ms, game_id, route=due_set)

    async def claim_due(self, owner: str, lease: float, limit: int) -> list[str]:
        async with self._guard("claim due games"):
            reply = await self._claim_script(self._due_keys, [owner, _ms(lease), limit])
        return [bytes(game_id).decode() for game_id in reply or ()]

    async def renew(self, game_id: str, owner: str, lease: float) -> bool:
        async with self._guard(f"renew the lease of game {game_id}"):
            reply = await self._renew_script(self._due_keys, [game_id, owner, _ms(lease)])
        return bool(reply)

    async def release(self, game_id: str, owner: str, due_ms: int | None) -> None:
        async with self._guard(f"release game {game_id}"):
            await self._release_script(
                self._due_keys, [game_id, owner, "" if due_ms is None else due_ms]
            )

    async def ping(self) -> None:
        async def call() -> Any:
            return await self._client.call("PING")

        if not await self._read("ping", call):
            raise StoreUnavailableError(f"redis store at {self._where}: PING not answered")

    async def close(self) -> None:
        await self._subscriber.close()
        await self._client.close()

    # ==== webhooks: each tenant's delivery queue (service.app.webhooks) =======
    # (A block of its own, kept at the end; its scripts follow the class.)
    # Every key shares the hash tag {webhooks}, so a script sees a tenant's
    # queue and retries together (one Cluster slot):
    #   {prefix}:{webhooks}:<tenant>:q      a stream, field "e" = the entry,
    #                                       read by the consumer group "deliver"
    #                                       (one consumer per process); a
    #                                       settled entry is XACKed and XDELed,
    #                                       so XLEN is what is left to do;
    #   {prefix}:{webhooks}:<tenant>:retry  a sorted set of entries (their next
    #                                       attempt) by when each is due (ms).

    _webhook_scripts: dict[str, Script] | None = None

    def webhook_keys(self, tenant: str) -> tuple[str, str]:
        """``tenant``'s queue (a stream) and retries (a sorted set)."""
        if not tenant or "{" in tenant or "}" in tenant:
            raise ValueError(f"bad tenant {tenant!r}")
        base = f"{self._prefix}:{{webhooks}}:{tenant}"
        return f"{base}:q", f"{base}:retry"

    def _webhook_script(self, name: str) -> Script:
        if self._webhook_scripts is None:
            self._webhook_scripts = {
                script: Script(self._client, source) for script, source in _WEBHOOK_LUA.items()
            }
        return self._webhook_scripts[name]

    async def _webhook_group_call(self, stream: str, *args: Arg) -> Any:
        """A consumer group command on ``stream``; the group is made (from the
        stream's start, so nothing queued before it is missed) when Redis says
        there is none: first use, or the keys were lost with a flush."""
        try:
            return await self._client.call(*args, route=stream)
        except ReplyError as exc:
            if not str(exc).startswith("NOGROUP"):
                raise
        try:
            await self._client.call(
                "XGROUP", "CREATE", stream, _WEBHOOK_GROUP, "0", "MKSTREAM", route=stream
            )
        except ReplyError as exc:
            if not str(exc).startswith("BUSYGROUP"):  # (another process made it meanwhile)
                raise
        return await self._client.call(*args, route=stream)

    async def webhook_push(self, tenant: str, entry: bytes) -> None:
        stream, _ = self.webhook_keys(tenant)
        async with self._guard(f"queue a webhook of {tenant}", writes=True):
            await self._client.call("XADD", stream, "*", "e", entry, route=stream)

    async def webhook_read(self, tenant: str, consumer: str, limit: int) -> list[tuple[str, bytes]]:
        stream, _ = self.webhook_keys(tenant)
        async with self._guard(f"read the webhooks of {tenant}"):
            reply = await self._webhook_group_call(
                stream,
                "XREADGROUP", "GROUP", _WEBHOOK_GROUP, consumer,
                "COUNT", limit, "STREAMS", stream, ">",
            )  # fmt: skip
        if not reply:
            return []
        return _webhook_entries(reply[0][1])

    async def webhook_reclaim(
        self, tenant: str, consumer: str, idle: float, limit: int
    ) -> list[tuple[str, bytes]]:
        stream, _ = self.webhook_keys(tenant)
        async with self._guard(f"reclaim the webhooks of {tenant}"):
            reply = await self._webhook_group_call(
                stream,
                "XAUTOCLAIM", stream, _WEBHOOK_GROUP, consumer,
                _ms(idle), "0-0", "COUNT", limit,
            )  # fmt: skip
        # [next cursor, entries, ids deleted meanwhile (Redis 7)]
        return _webhook_entries(reply[1])

    async def webhook_done(self, tenant: str, entry_id: str) -> None:
        stream, _ = self.webhook_keys(tenant)
        async with self._guard(f"settle a webhook of {tenant}", writes=True):
            await self._client.pipeline(
                ("XACK", stream, _WEBHOOK_GROUP, entry_id), ("XDEL", stream, entry_id), route=stream
            )

    async def webhook_retry(
        self, tenant: str, entry_id: str, consumer: str, entry: bytes, due: float
    ) -> bool:
        keys = list(self.webhook_keys(tenant))
        args: list[Arg] = [_WEBHOOK_GROUP, entry_id, consumer, round(due * 1000), entry]
        async with self._guard(f"retry a webhook of {tenant}", writes=True):
            reply = await self._webhook_script("retry")(keys, args)
        return bool(reply)

    async def webhook_promote(self, tenant: str, now: float, limit: int) -> int:
        stream, retries = self.webhook_keys(tenant)
        async with self._guard(f"requeue the due webhooks of {tenant}", writes=True):
            reply = await self._webhook_script("promote")(
                [retries, stream], [round(now * 1000), limit]
            )
        return int(reply)

    async def webhook_backlog(self, tenant: str) -> int:
        stream, retries = self.webhook_keys(tenant)
        async with self._guard(f"count the webhooks of {tenant}"):
            queued, waiting = await self._client.pipeline(
                ("XLEN", stream), ("ZCARD", retries), route=stream
            )
        return int(queued) + int(waiting)

    async def webhook_forget(self, tenant: str, idle: float) -> int:
        stream, _ = self.webhook_keys(tenant)
        async with self._guard(f"forget the gone consumers of {tenant}'s webhooks"):
            reply = await self._webhook_script("forget")([stream], [_WEBHOOK_GROUP, _ms(idle)])
        return int(reply)


# ---- webhooks' scripts and replies (RedisStore's webhook block above) ----------

_WEBHOOK_GROUP = "deliver"

_WEBHOOK_LUA: dict[str, str] = {
    # KEYS = queue, retries; ARGV = group, entry id, consumer, due ms, entry.
    # Only the consumer holding the entry moves it (one that was reclaimed
    # from it, while it still tried, is another's now). 1 moved, 0 not.
    # The scripts start with a shebang: at maxmemory Redis refuses them
    # whole, rather than stop one after its XDEL and before its ZADD.
    "retry": """#!lua
local held = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1, ARGV[3])
if #held == 0 then return 0 end
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[5])
return 1
""",
    # KEYS = queue; ARGV = group, idle ms. Deletes the consumers holding no
    # entry and idle that long, in one step (no read can hand one an entry
    # between the look and the delete). How many.
    "forget": """#!lua
local found, consumers = pcall(redis.call, 'XINFO', 'CONSUMERS', KEYS[1], ARGV[1])
if not found then return 0 end  -- no queue, or no group yet
local gone = 0
for _, consumer in ipairs(consumers) do
  local fields = {}
  for i = 1, #consumer, 2 do fields[consumer[i]] = consumer[i + 1] end
  if fields['pending'] == 0 and fields['idle'] >= tonumber(ARGV[2]) then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], fields['name'])
    gone = gone + 1
  end
end
return gone
""",
    # KEYS = retries, queue; ARGV = now ms, limit. Each due entry goes back
    # into the queue (a new stream entry) and leaves the retries, together.
    "promote": """#!lua
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, entry in ipairs(due) do
  redis.call('XADD', KEYS[2], '*', 'e', entry)
  redis.call('ZREM', KEYS[1], entry)
end
return #due
""",
}


def _webhook_entries(entries: Any) -> list[tuple[str, bytes]]:
    """``(id, entry)`` of stream entries ``[[id, [b"e", entry]], ...]``;
    an entry deleted while pending (its fields nil) is skipped."""
    out: list[tuple[str, bytes]] = []
    for entry_id, fields in entries or ():
        if not fields:
            continue
        values = dict(zip(fields[::2], fields[1::2], strict=True))
        entry = values.get(b"e")
        if entry is not None:
            out.append((bytes(entry_id).decode(), bytes(entry)))
    return out
