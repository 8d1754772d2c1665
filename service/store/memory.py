"""The in-process store: the embedded default of ``railyard serve``.

It keeps the same contract as the Redis store (atomic commit, version check,
event log, remembered answers, TTLs) so the application layer cannot tell
them apart; it only lives as long as the process.

Expired games are freed, not only hidden: a heap holds each game's expiry
(one entry per game, pushed again when a move refreshed it), and every call
frees what has expired since, as does a sweep each second while nothing
calls. (Only hidden, expired games used to keep their memory for good.)
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import ctypes
import ctypes.util
import heapq
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from service.app.ratelimit import TokenBuckets
from service.store import (
    Commit,
    GameExistsError,
    GameRecord,
    Reservation,
    StoredEvent,
    now_ms,
)


@dataclass
class _Game:
    record: GameRecord
    events: list[StoredEvent]
    expires: float
    requests: dict[str, tuple[bytes, float]] = field(default_factory=dict)


#: Seconds between two sweeps for expired games while no call comes.
SWEEP_INTERVAL: Final = 1.0
#: Games freed past which the C heap is handed back to the system.
_TRIM_AFTER: Final = 1000


def _malloc_trim() -> None:
    """glibc keeps freed memory for reuse; after a large sweep, give it back
    (elsewhere, nothing)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(name).malloc_trim(0)


class MemoryStore:
    name = "memory"

    def __init__(
        self,
        game_ttl: float = 7 * 86400,
        request_ttl: float = 86400,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``clock``: seconds, what the TTLs, the tenants' live games and the
        rate buckets age by (tests pass one they move by hand)."""
        self._clock = clock
        self._games: dict[str, _Game] = {}
        # (expiry, game id) once per game; an entry past due whose game has
        # been refreshed meanwhile is pushed again with the new expiry.
        self._expiries: list[tuple[float, str]] = []
        self._game_ttl = game_ttl
        self._request_ttl = request_ttl
        # The waiters of each game: a change wakes only that game's.
        self._waiters: dict[str, set[asyncio.Future[None]]] = {}
        self._buckets = TokenBuckets(clock=clock)
        self._sweeper: asyncio.Task[None] | None = None
        self._freed = 0  # games freed since the C heap was last trimmed
        #: Each tenant's games in progress: game id -> when it stops counting.
        self._live_games: dict[str, dict[str, float]] = {}
        #: Join codes: code -> (game id, when it expires).
        self._codes: dict[str, tuple[str, float]] = {}
        #: Listed tables per tenant, sorted (service.store.listed_member).
        self._listed: dict[str, list[str]] = {}

        # Due work (Store.schedule): game id -> (due or lease end in ms, owner or "").
        self._due: dict[str, tuple[int, str]] = {}

    def __len__(self) -> int:
        """Games held (expired ones not yet freed included)."""
        return len(self._games)

    def _live(self, game_id: str) -> _Game | None:
        self._evict(self._clock())
        return self._games.get(game_id)

    def _evict(self, now: float) -> None:
        """Free every game expired by ``now``."""
        expiries = self._expiries
        freed = 0
        while expiries and expiries[0][0] <= now:
            _, game_id = heapq.heappop(expiries)
            game = self._games.get(game_id)
            if game is None:
                continue
            if game.expires <= now:
                del self._games[game_id]
                freed += 1
            else:
                heapq.heappush(expiries, (game.expires, game_id))
        self._freed += freed
        if self._freed >= _TRIM_AFTER:
            self._freed = 0
            _malloc_trim()
        if (self._sweeper is None or self._sweeper.done()) and self._games:
            # Started by the first call, on its loop: an idle store still frees.
            with contextlib.suppress(RuntimeError):
                self._sweeper = asyncio.get_running_loop().create_task(self._sweep())

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_INTERVAL)
            self._evict(self._clock())

    async def create(
        self,
        record: GameRecord,
        events: Sequence[StoredEvent],
        request_key: str | None,
        response: bytes | None,
    ) -> bytes | None:
        now = self._clock()
        game = self._live(record.game_id)
        if game is not None:
            if request_key is not None:
                remembered = self._recall(game, request_key, now)
                if remembered is not None:
                    return remembered
            raise GameExistsError(f"game {record.game_id} exists")
        game = _Game(record, list(events), now + self._game_ttl)
        if request_key is not None and response is not None:
            game.requests[request_key] = (response, now + self._request_ttl)
        self._games[record.game_id] = game
        heapq.heappush(self._expiries, (game.expires, record.game_id))
        self._notify(record.game_id)
        return None

    async def load(self, game_id: str) -> GameRecord | None:
        game = self._live(game_id)
        return None if game is None else game.record

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
        game = self._live(game_id)
        if game is None:
            return Commit.NOT_FOUND
        record = game.record
        if record.version != expected_version or record.rev != rev:
            return Commit.VERSION_MISMATCH
        now = self._clock()
        if meta is not None:
            record = GameRecord(game_id, version, state, meta, deadline_ms, rev + 1)
        else:
            record = GameRecord(game_id, version, state, record.meta, deadline_ms, rev)
        game.record = record
        game.events.extend(events)
        game.expires = now + self._game_ttl
        if request_key is not None and response is not None:
            game.requests[request_key] = (response, now + self._request_ttl)
        self._notify(game_id)
        return Commit.OK

    def _recall(self, game: _Game, request_key: str, now: float) -> bytes | None:
        entry = game.requests.get(request_key)
        if entry is None or entry[1] <= now:
            return None
        return entry[0]

    async def recall(self, game_id: str, request_key: str) -> bytes | None:
        game = self._live(game_id)
        return None if game is None else self._recall(game, request_key, self._clock())

    async def read_events(self, game_id: str, after_version: int) -> list[StoredEvent]:
        game = self._live(game_id)
        if game is None:
            return []
        return [e for e in game.events if e.version > after_version]

    async def wait_events(
        self, game_id: str, after: tuple[int, int], timeout: float
    ) -> list[StoredEvent]:
        def newer() -> list[StoredEvent]:
            game = self._live(game_id)
            if game is None:
                return []
            return [e for e in game.events if (e.version, e.seq) > after]

        found = newer()
        if found or timeout <= 0:
            return found
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            # Registered with no await since the check: no change slips between.
            woken = loop.create_future()
            waiters = self._waiters.setdefault(game_id, set())
            waiters.add(woken)
            try:
                async with asyncio.timeout_at(deadline):
                    await woken
            except TimeoutError:
                return []
            finally:
                waiters.discard(woken)
                if not waiters and self._waiters.get(game_id) is waiters:
                    del self._waiters[game_id]
            # (A commit of no events wakes the game's waiters too.)
            found = newer()
            if found:
                return found

    def _notify(self, game_id: str) -> None:
        """Wake the waiters of this game, and only them."""
        for woken in self._waiters.pop(game_id, ()):
            if not woken.done():
                woken.set_result(None)

    async def take(self, key: str, rate: float, burst: int) -> float:
        return self._buckets.take(key, rate, burst)  # one process: shared already

    async def reserve_live(self, tenant: str, game_id: str, cap: int) -> Reservation:
        now = self._clock()
        games = self._live_games.setdefault(tenant, {})
        for expired in [g for g, until in games.items() if until <= now]:
            del games[expired]
        if game_id in games:
            return Reservation.HELD
        if cap > 0 and len(games) >= cap:
            return Reservation.FULL
        games[game_id] = now + self._game_ttl
        return Reservation.ADDED

    async def release_live(self, tenant: str, game_id: str) -> None:
        games = self._live_games.get(tenant)
        if games is not None:
            games.pop(game_id, None)
            if not games:
                del self._live_games[tenant]

    # -- tables: join codes and the public tables' list (service.app.tables)

    async def put_code(self, code: str, game_id: str) -> bool:
        now = self._clock()
        found = self._codes.get(code)
        if found is not None and found[1] > now:
            return False
        self._codes[code] = (game_id, now + self._game_ttl)
        return True

    async def code_game(self, code: str) -> str | None:
        found = self._codes.get(code)
        return None if found is None or found[1] <= self._clock() else found[0]

    async def list_add(self, tenant: str, member: str) -> None:
        listed = self._listed.setdefault(tenant, [])
        at = bisect.bisect_left(listed, member)
        if at == len(listed) or listed[at] != member:
            listed.insert(at, member)

    async def list_remove(self, tenant: str, member: str) -> None:
        listed = self._listed.get(tenant, [])
        at = bisect.bisect_left(listed, member)
        if at < len(listed) and listed[at] == member:
            del listed[at]

    async def list_page(self, tenant: str, after: str, limit: int) -> list[str]:
        listed = self._listed.get(tenant, [])
        at = bisect.bisect_right(listed, after) if after else 0
        return listed[at : at + limit]

    async def schedule(self, game_id: str, due_ms: int) -> None:
        owner = self._due.get(game_id, (0, ""))[1]
        self._due[game_id] = (due_ms, owner)

    async def claim_due(self, owner: str, lease: float, limit: int) -> list[str]:
        now = now_ms()
        due = sorted((at, game_id) for game_id, (at, _) in self._due.items() if at <= now)
        claimed = [game_id for _, game_id in due[:limit]]
        for game_id in claimed:
            self._due[game_id] = (now + round(lease * 1000), owner)
        return claimed

    async def renew(self, game_id: str, owner: str, lease: float) -> bool:
        entry = self._due.get(game_id)
        if entry is None or entry[1] != owner:
            return False
        self._due[game_id] = (now_ms() + round(lease * 1000), owner)
        return True

    async def release(self, game_id: str, owner: str, due_ms: int | None) -> None:
        entry = self._due.get(game_id)
        if entry is None or entry[1] != owner:
            return
        if due_ms is None:
            del self._due[game_id]
        else:
            self._due[game_id] = (due_ms, "")

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
            self._sweeper = None
        self._games.clear()
        self._expiries.clear()
        self._due.clear()

    # ==== webhooks: each tenant's delivery queue (service.app.webhooks) =======
    # (A block of its own, kept at the end.) The same contract as Redis's
    # stream and consumer group, in this process: lost when it stops.

    _webhook_queues: dict[str, _WebhookQueue] | None = None

    def _webhook_queue(self, tenant: str) -> _WebhookQueue:
        if self._webhook_queues is None:
            self._webhook_queues = {}
        return self._webhook_queues.setdefault(tenant, _WebhookQueue())

    async def webhook_push(self, tenant: str, entry: bytes) -> None:
        self._webhook_queue(tenant).push(entry)

    async def webhook_read(self, tenant: str, consumer: str, limit: int) -> list[tuple[str, bytes]]:
        queue = self._webhook_queue(tenant)
        now = self._clock()
        taken: list[tuple[str, bytes]] = []
        for entry_id, entry in queue.entries.items():  # (oldest first: stops at ``limit``)
            if len(taken) >= limit:
                break
            if entry_id not in queue.handed:
                taken.append((entry_id, entry))
        for entry_id, _ in taken:
            queue.handed[entry_id] = (consumer, now)
        return taken

    async def webhook_reclaim(
        self, tenant: str, consumer: str, idle: float, limit: int
    ) -> list[tuple[str, bytes]]:
        queue = self._webhook_queue(tenant)
        now = self._clock()
        stale = [i for i, (_, since) in queue.handed.items() if since <= now - idle][:limit]
        for entry_id in stale:
            queue.handed[entry_id] = (consumer, now)
        return [(i, queue.entries[i]) for i in stale]

    async def webhook_done(self, tenant: str, entry_id: str) -> None:
        queue = self._webhook_queue(tenant)
        queue.entries.pop(entry_id, None)
        queue.handed.pop(entry_id, None)

    async def webhook_retry(
        self, tenant: str, entry_id: str, consumer: str, entry: bytes, due: float
    ) -> bool:
        queue = self._webhook_queue(tenant)
        held = queue.handed.get(entry_id)
        if held is None or held[0] != consumer:
            return False
        await self.webhook_done(tenant, entry_id)
        queue.seq += 1
        heapq.heappush(queue.retries, (due, queue.seq, entry))
        return True

    async def webhook_promote(self, tenant: str, now: float, limit: int) -> int:
        queue = self._webhook_queue(tenant)
        moved = 0
        while queue.retries and queue.retries[0][0] <= now and moved < limit:
            queue.push(heapq.heappop(queue.retries)[2])
            moved += 1
        return moved

    async def webhook_backlog(self, tenant: str) -> int:
        queue = self._webhook_queue(tenant)
        return len(queue.entries) + len(queue.retries)

    async def webhook_forget(self, tenant: str, idle: float) -> int:
        return 0  # (consumers are known only by the entries they hold)


@dataclass
class _WebhookQueue:
    """One tenant's webhook queue in process (MemoryStore's webhook block)."""

    #: Entries not settled, by id, oldest first (ids increase).
    entries: dict[str, bytes] = field(default_factory=dict)
    #: Entries handed out: id -> (consumer, when, by the store's clock).
    handed: dict[str, tuple[str, float]] = field(default_factory=dict)
    #: Retries: (due, sequence, entry), a heap.
    retries: list[tuple[float, int, bytes]] = field(default_factory=list)
    seq: int = 0

    def push(self, entry: bytes) -> None:
        self.seq += 1
        self.entries[f"{self.seq}-0"] = entry
