"""Where games live between requests: one interface, two stores.

A game is a :class:`GameRecord` (the engine's serialized state, its version,
and the seats' metadata) plus its event log. Every change is one atomic
:meth:`Store.commit`: compare the version, write the new state, append the
move's events, remember the request's answer. Nothing is held in a replica's
memory between requests, so any replica serves any game.

* :class:`service.store.memory.MemoryStore`: in-process, the default of
  ``railyard serve`` with no Redis configured (one machine, for trying it out).
* :class:`service.store.redis.RedisStore`: production; one hash per game, a
  Redis Stream of its events, a Lua compare-and-set, one hash tag per game.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol


def now_ms() -> int:
    """Now, in the unit of due times and turn deadlines (ms since the epoch):
    wall-clock time, since a deadline is shown to people and compared by
    every replica."""
    return int(time.time() * 1000)


class StoreUnavailableError(Exception):
    """The store did not answer (UNAVAILABLE / 503, reason STORE_UNAVAILABLE).
    Its text names the store and what failed: for the log, never a client."""


class GameExistsError(Exception):
    """A create for a game id that is taken, with no answer remembered under
    its request key (a request id retried after ``request_ttl``, while the
    game it created lives on)."""


class OutcomeUnknownError(StoreUnavailableError):
    """A create or commit was sent and its answer lost (the store stalled, or
    the connection broke, after it left): it may have been applied. API.md
    OUTCOME_UNKNOWN: a retry with the same request id learns what happened."""


class StoreFullError(StoreUnavailableError):
    """The store refused to grow (Redis at ``maxmemory`` with ``noeviction``):
    a create wrote nothing."""


@dataclass(frozen=True, slots=True)
class GameRecord:
    """A game as stored: what ``engine.load`` needs, and who sits where."""

    game_id: str
    version: int
    state: bytes  # engine's to_bytes()
    meta: bytes  # service's seat metadata (JSON): names, bot levels, token hashes
    #: When the person to move runs out of time (ms since the epoch); 0: no timer.
    deadline_ms: int = 0
    #: The revision of ``meta``: +1 each time a commit changes it (a seat
    #: taken or given up), so that a commit made from an older one fails.
    rev: int = 0


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event of a game's log, unredacted (the app filters it per seat).

    ``version`` is the game's version after the move that caused it; ``seq``
    numbers the events of one version from 1, so ``(version, seq)`` is unique
    and ordered (the Redis Stream id ``<version>-<seq>``).
    """

    version: int
    seq: int
    payload: bytes  # a serialized railyard.v1.GameEvent


def listed_member(created_ms: int, game_id: str) -> str:
    """A listed table as the list keeps it: members sort by creation, then id."""
    return f"{created_ms:015d}:{game_id}"


class Commit(Enum):
    OK = "ok"
    VERSION_MISMATCH = "version_mismatch"
    NOT_FOUND = "not_found"


class Reservation(Enum):
    """What :meth:`Store.reserve_live` did with a game of a tenant."""

    ADDED = "added"  # counted now
    HELD = "held"  # counted already (a retry of the same create)
    FULL = "full"  # not counted: the tenant is at its cap


class Store(Protocol):
    """What the application layer needs from a store. All calls may raise
    :class:`StoreUnavailableError`; none leaves a game half-written."""

    name: str

    async def create(
        self,
        record: GameRecord,
        events: Sequence[StoredEvent],
        request_key: str | None,
        response: bytes | None,
    ) -> bytes | None:
        """Create the game with its first events, atomically.

        If ``request_key`` is already remembered for this game id, create
        nothing and return the remembered response; else store ``response``
        under it and return ``None``. A game id that exists with no such
        remembered request raises :class:`GameExistsError` (ids are random,
        or derived from the request: a request id retried after its answer
        expired).
        """
        ...

    async def load(self, game_id: str) -> GameRecord | None:
        """The game, or ``None`` when there is no such game (or it expired)."""
        ...

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
        """If the game is at ``expected_version`` and its meta at revision
        ``rev``: write ``state`` at ``version`` and its turn's ``deadline_ms``,
        ``meta`` when given (its revision then goes up one), append
        ``events``, remember ``response`` under ``request_key``, refresh every
        TTL, all in one atomic step. Else change nothing
        (VERSION_MISMATCH).

        The version check is what makes a request apply once: a commit whose
        answer was lost may still have been applied, so a caller retrying a
        request first checks :meth:`recall` for its key (GameApp does)."""
        ...

    async def recall(self, game_id: str, request_key: str) -> bytes | None:
        """The response remembered under ``request_key`` for this game, if any."""
        ...

    async def read_events(self, game_id: str, after_version: int) -> list[StoredEvent]:
        """Every event with a version above ``after_version``, in order."""
        ...

    async def wait_events(
        self, game_id: str, after: tuple[int, int], timeout: float
    ) -> list[StoredEvent]:
        """Events after the ``(version, seq)`` position ``after``; waits up to
        ``timeout`` seconds for the first one, returns ``[]`` on timeout."""
        ...

    async def take(self, key: str, rate: float, burst: int) -> float:
        """Take a token from the rate-limit bucket ``key`` (``burst`` tokens,
        refilled at ``rate`` per second), shared by every process using this
        store: 0.0, or the seconds until a token is there (nothing taken)."""
        ...

    async def reserve_live(self, tenant: str, game_id: str, cap: int) -> Reservation:
        """Count ``game_id`` among ``tenant``'s games in progress unless it
        already is, or the tenant has ``cap`` of them (0: no cap), in one
        atomic step shared by every process using this store. A game counts
        until :meth:`release_live` or for ``game_ttl`` from here, so that
        games left unfinished drop out."""
        ...

    async def release_live(self, tenant: str, game_id: str) -> None:
        """No longer count ``game_id`` among ``tenant``'s games (idempotent)."""

    # -- tables (service.app.tables): join codes, and the listed tables of
    # each tenant, oldest first. Neither is in a game's own keys (a Cluster
    # puts them in other slots), so each is only an index: ListGames and
    # JoinGame read the game itself to learn whether it is still joinable.

    async def put_code(self, code: str, game_id: str) -> bool:
        """Keep join code ``code`` for ``game_id`` for ``game_ttl``; False,
        and nothing written, when the code is taken."""
        ...

    async def code_game(self, code: str) -> str | None:
        """The game of a join code, or None."""
        ...

    async def list_add(self, tenant: str, member: str) -> None:
        """List a table (``member``: :func:`listed_member`) for ``tenant``."""
        ...

    async def list_remove(self, tenant: str, member: str) -> None:
        """No longer list it (idempotent)."""
        ...

    async def list_page(self, tenant: str, after: str, limit: int) -> list[str]:
        """Up to ``limit`` of ``tenant``'s listed members, in order, each
        after ``after`` ("": from the first)."""
        ...

    # -- due work: background play and turn timers, shared by every replica.
    # One entry per game, at the time (ms since the epoch) its next move is
    # the service's to play. Claiming an entry leases it: its time becomes the
    # lease's end, so a claimant that dies (and renews no more) leaves it due
    # again for another. An entry is only a reminder: the claimant reads the
    # game itself to learn what is due, so a stale or spurious one costs a
    # load, never a move (moves are applied by commit's version check).

    async def schedule(self, game_id: str, due_ms: int) -> None:
        """Make ``game_id`` due at ``due_ms`` (replacing its entry's time)."""
        ...

    async def claim_due(self, owner: str, lease: float, limit: int) -> list[str]:
        """Lease up to ``limit`` games due by now to ``owner`` for ``lease``
        seconds (the store's clock), and name them."""
        ...

    async def renew(self, game_id: str, owner: str, lease: float) -> bool:
        """Extend ``owner``'s lease of ``game_id``; False when it is no longer
        theirs (expired and claimed by another, or released)."""
        ...

    async def release(self, game_id: str, owner: str, due_ms: int | None) -> None:
        """End ``owner``'s lease: the game is due again at ``due_ms``, or has
        no entry any more (``None``). Nothing when the lease is another's."""
        ...

    async def ping(self) -> None:
        """Raise :class:`StoreUnavailableError` unless the store answers."""
        ...

    async def close(self) -> None: ...

    # ==== webhooks: each tenant's delivery queue (service.app.webhooks) =======
    # (A block of its own, kept at the end.) An entry is opaque bytes with an
    # id of the store's. Reading hands an entry to a consumer (one per
    # process) until that consumer settles it: done (delivered, or given up)
    # or moved among the tenant's retries, each due again at a time, when it
    # goes back into the queue as a new entry. An entry whose consumer stops
    # (dies) without settling it is reclaimed by another after an idle time.
    # Times are unix seconds from the caller's clock, except the idle time
    # (the store's: Redis's own for a stream's pending entries).

    async def webhook_push(self, tenant: str, entry: bytes) -> None:
        """Append ``entry`` to ``tenant``'s queue, durably where the store is
        (Redis: written before this returns)."""
        ...

    async def webhook_read(self, tenant: str, consumer: str, limit: int) -> list[tuple[str, bytes]]:
        """Up to ``limit`` of ``tenant``'s entries never handed out, oldest
        first, now ``consumer``'s: ``(entry id, entry)`` each."""
        ...

    async def webhook_reclaim(
        self, tenant: str, consumer: str, idle: float, limit: int
    ) -> list[tuple[str, bytes]]:
        """Up to ``limit`` of ``tenant``'s entries handed out at least
        ``idle`` seconds ago and not settled since, now ``consumer``'s."""
        ...

    async def webhook_done(self, tenant: str, entry_id: str) -> None:
        """Settle an entry for good: it leaves the queue (idempotent)."""
        ...

    async def webhook_retry(
        self, tenant: str, entry_id: str, consumer: str, entry: bytes, due: float
    ) -> bool:
        """Settle ``consumer``'s entry by putting ``entry`` (its next attempt)
        among ``tenant``'s retries, due at ``due``, in one atomic step; False,
        changing nothing, when the entry is not ``consumer``'s (any more)."""
        ...

    async def webhook_promote(self, tenant: str, now: float, limit: int) -> int:
        """Move up to ``limit`` of ``tenant``'s retries due by ``now`` back into
        its queue, each as a new entry, atomically; how many moved."""
        ...

    async def webhook_backlog(self, tenant: str) -> int:
        """``tenant``'s entries not settled for good: queued (handed out or
        not) and retries."""
        ...

    async def webhook_forget(self, tenant: str, idle: float) -> int:
        """Forget the consumers of ``tenant``'s queue that hold no entry and
        were last heard of ``idle`` seconds ago or more (processes gone for
        good: every run of a process is a consumer of its own); how many."""
        ...
