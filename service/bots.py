"""Bot seats (API.md "Bots"): the engine's bots, played for the service.

A bot is handed what its seat may see, the seat's view and legal moves
(engine.bots), with the public key of the decision (``engine.bot_key``), so a
game with bots replays exactly whichever replica plays it.

``random`` and ``greedy`` decide in microseconds and run inline. The expert
searches for tens of milliseconds: on the event loop that would stall every
other call of the process, so its decisions run in a pool of worker
processes. The pool starts on first use, from the ``forkserver`` context (a
fork of a process running gRPC's threads is not safe), and is rebuilt if a
worker dies.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import multiprocessing
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Final

import engine
from engine.bots import bot_key, choose
from service.api import game_service_pb2 as pb

log = logging.getLogger("railyard.bots")

#: The wire's bot levels and the engine's names for them.
LEVELS: Final[dict[int, str]] = {
    pb.BOT_LEVEL_RANDOM: "random",
    pb.BOT_LEVEL_GREEDY: "greedy",
    pb.BOT_LEVEL_EXPERT: "expert",
}
#: The expert's budget (playout moves per decision) in a game of bots only.
#: API.md has CreateGame play such a game to its end within the request: at
#: the default budget (~30 ms a decision, ~1,500 decisions in 13 rounds) the
#: caller would wait most of a minute. A twenty-fifth of it keeps the search
#: (and its determinism: the budget follows from the seats) at ~1 ms.
ALL_BOTS_BUDGET: Final = 100
#: The levels worth a trip to another process.
_SLOW: Final = frozenset({"expert"})


class BotPlayer:
    """Chooses the moves of bot seats; ``processes`` workers for slow levels
    (0: every level inline, on the caller's thread)."""

    def __init__(self, processes: int | None = None) -> None:
        self._processes = (os.cpu_count() or 1) if processes is None else processes
        self._pool: ProcessPoolExecutor | None = None

    async def choose(
        self,
        level: int,
        view: engine.GameView,
        legal: Sequence[engine.Move],
        budget: int | None = None,
    ) -> engine.Move:
        name = LEVELS[level]
        key = bot_key(view)
        if name not in _SLOW or self._processes == 0:
            return choose(name, view, legal, key, budget=budget)
        loop = asyncio.get_running_loop()
        task = functools.partial(choose, name, view, tuple(legal), key, budget=budget)
        try:
            return await loop.run_in_executor(self._executor(), task)
        except BrokenProcessPool:
            # A worker died (killed, out of memory): this decision is made here,
            # the next ones in a new pool.
            log.warning("bot worker pool broken; starting a new one")
            self._close_pool()
            return task()

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            context = multiprocessing.get_context("forkserver")
            self._pool = ProcessPoolExecutor(self._processes, mp_context=context)
        return self._pool

    def _close_pool(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        self._close_pool()
