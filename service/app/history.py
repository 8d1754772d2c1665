"""Reading a game's whole history, bounded per process.

GetGameLog, and a WatchGame that resumes from an early version (its replay),
read every event a game has had from the store at once: for a long game,
thousands of stream entries in one reply. Thousands of such reads at once,
from one client and with rate limits off, held Redis past its timeout and
failed every other call. Two bounds:

* :class:`FinishedLogs`: a finished game's events never change, so this
  process keeps them, with the log answer built from them, and reads a
  finished game's history from the store once per entry lifetime. An
  unfinished game is never kept: its next move would make the copy stale.
* :class:`ReadSlots`: at most ``Settings.max_log_reads`` whole-history reads
  of the store at once. One more is refused at once (RESOURCE_EXHAUSTED
  ``TOO_MANY_LOG_READS``, with the retry delay that becomes HTTP's
  Retry-After), not queued: a queue would hold each waiting caller's
  connection and memory, which is what the cap bounds.
"""

from __future__ import annotations

import bisect
import contextlib
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from railyard_api import game_service_pb2 as pb
from service.app import errors as err
from service.store import StoredEvent

#: Finished games whose logs one process keeps at most (least recently used
#: forgotten first).
KEPT_GAMES: Final = 64
#: Bytes of kept logs at most (stored events and built answers, as
#: serialized): a log larger than this is answered but not kept.
KEPT_BYTES: Final = 64 << 20
#: Seconds a kept log is used before the store is read again: a finished game
#: still expires from the store (game_ttl after its last move), and a replica
#: answers its log for at most this long after.
KEPT_SECONDS: Final = 300.0


@dataclass(frozen=True, slots=True)
class FinishedLog:
    """A finished game's stored events, in order, and its GetGameLog answer."""

    events: tuple[StoredEvent, ...]
    #: Shared by every caller: never changed once built.
    response: pb.GetGameLogResponse

    @property
    def size(self) -> int:
        """Its bytes, as :data:`KEPT_BYTES` counts them."""
        return sum(len(e.payload) for e in self.events) + self.response.ByteSize()

    def after(self, version: int) -> list[StoredEvent]:
        """The events of versions after ``version`` (as ``Store.read_events``)."""
        start = bisect.bisect_right(self.events, version, key=lambda e: e.version)
        return list(self.events[start:])


class FinishedLogs:
    """The logs of finished games kept by this process, by game id: at most
    ``max_games`` of them and ``max_bytes`` together, each for ``lifetime``
    seconds of ``clock``."""

    def __init__(
        self,
        max_games: int = KEPT_GAMES,
        max_bytes: int = KEPT_BYTES,
        lifetime: float = KEPT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_games = max_games
        self.max_bytes = max_bytes
        self.lifetime = lifetime
        self._clock = clock
        #: game id -> (when it stops being used, the log, its size)
        self._kept: OrderedDict[str, tuple[float, FinishedLog, int]] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, game_id: str) -> FinishedLog | None:
        found = self._kept.get(game_id)
        if found is None:
            return None
        if self._clock() >= found[0]:
            self._forget(game_id)
            return None
        self._kept.move_to_end(game_id)
        return found[1]

    def put(
        self, game_id: str, events: Sequence[StoredEvent], response: pb.GetGameLogResponse
    ) -> FinishedLog:
        """Keep a finished game's log (its events as the store gave them), and
        return it; one too large for ``max_bytes`` is returned, not kept."""
        log = FinishedLog(tuple(events), response)
        size = log.size
        if game_id in self._kept:
            self._forget(game_id)
        if size > self.max_bytes:
            return log
        while self._kept and (
            len(self._kept) >= self.max_games or self._bytes + size > self.max_bytes
        ):
            self._forget(next(iter(self._kept)))
        self._kept[game_id] = (self._clock() + self.lifetime, log, size)
        self._bytes += size
        return log

    def _forget(self, game_id: str) -> None:
        _, _, size = self._kept.pop(game_id)
        self._bytes -= size


class ReadSlots:
    """At most ``limit`` whole-history reads at once in this process."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        #: Reads running now.
        self.busy = 0

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """A slot for the read inside, or RESOURCE_EXHAUSTED TOO_MANY_LOG_READS
        when every slot is taken (nothing waits)."""
        if self.busy >= self.limit:
            raise err.too_many_log_reads(self.limit)
        self.busy += 1
        try:
            yield
        finally:
            self.busy -= 1
