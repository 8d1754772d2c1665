"""Background play: the service's own moves, shared by every replica.

Games of bots only (``bots_only = "background"``) and persons' turn timers
leave due work in the store (:meth:`service.store.Store.schedule`), never only
in a process's memory. Each replica runs one :class:`BackgroundPlayer`, which

* claims due games with a lease (:meth:`~service.store.Store.claim_due`:
  the store's one atomic step, so two replicas never claim one entry at once),
* plays each with :meth:`GameApp.advance` (a few moves at a time, each
  commit the version compare-and-set of ApplyMove, so WatchGame shows them
  live), renewing the lease meanwhile,
* and releases it: due again at the time ``advance`` names, or gone.

A replica that dies renews nothing: its leases end, its games fall due
again, and another replica claims them and continues from the stored state.
If it died between a commit and its release, the next claimant loads the
committed game: nothing is played twice, since a move is only ever applied
by a commit on the version it was chosen from.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import secrets
import socket
from typing import Final

from service.app.errors import ServiceError
from service.app.facade import GameApp
from service.store import StoreUnavailableError, now_ms

log = logging.getLogger("railyard.background")

#: Seconds before a game whose step failed (store down, a bot over its CPU
#: limit) is tried again.
RETRY_AFTER: Final = 2.0


class BackgroundPlayer:
    """One replica's loop over the store's due work (see the module)."""

    def __init__(self, app: GameApp, owner: str | None = None) -> None:
        self.app = app
        settings = app.settings
        #: This replica's name in the leases: unique per process run.
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._lease = settings.background_lease
        self._poll = settings.background_poll
        self._slots = settings.background_games
        self._games: dict[str, asyncio.Task[None]] = {}
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="railyard-background")

    async def stop(self, grace: float = 5.0) -> None:
        """Stop claiming; let the games in hand finish their current step
        (``grace`` seconds at most) and hand them back due at once, so that
        another replica continues them without waiting for the lease."""
        self._stopping.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        games = list(self._games.values())
        if games:
            _, pending = await asyncio.wait(games, timeout=grace)
            for task in pending:
                task.cancel()
            await asyncio.gather(*games, return_exceptions=True)

    async def _run(self) -> None:
        while not self._stopping.is_set():
            free = self._slots - len(self._games)
            claimed: list[str] = []
            if free > 0:
                try:
                    claimed = await self.app.store.claim_due(self.owner, self._lease, free)
                except StoreUnavailableError as exc:
                    log.warning("background: cannot claim due games: %s", exc)
            for game_id in claimed:
                if game_id in self._games:  # (our own lease ran out while we play it)
                    continue
                task = asyncio.create_task(self._play(game_id), name=f"railyard-game-{game_id}")
                self._games[game_id] = task
                task.add_done_callback(functools.partial(self._done, game_id))
            if len(claimed) < free:  # nothing more due now: wait a little
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), self._poll)
            else:
                await asyncio.sleep(0)

    def _done(self, game_id: str, task: asyncio.Task[None]) -> None:
        self._games.pop(game_id, None)
        if not task.cancelled() and task.exception() is not None:
            # (Its lease ends by itself: the game falls due again.)
            log.error("background: game %s failed", game_id, exc_info=task.exception())

    async def _play(self, game_id: str) -> None:
        """Advance ``game_id`` while it has work due now, then release it."""
        store = self.app.store
        lost = asyncio.Event()
        renewer = asyncio.create_task(self._renew(game_id, lost))
        due: int | None = now_ms()
        try:
            while not self._stopping.is_set() and not lost.is_set():
                try:
                    due = await self.app.advance(game_id)
                except (StoreUnavailableError, ServiceError) as exc:
                    log.warning("background: game %s: %s; again in %g s", game_id, exc, RETRY_AFTER)
                    due = now_ms() + int(RETRY_AFTER * 1000)
                    break
                if due is None or due > now_ms():
                    break
        finally:
            renewer.cancel()
            await asyncio.gather(renewer, return_exceptions=True)
        if lost.is_set():
            return  # another replica holds it now: its release counts, not ours
        try:
            await store.release(game_id, self.owner, due)
        except StoreUnavailableError as exc:
            # The lease ends by itself: the game falls due again for anyone.
            log.warning("background: cannot release game %s: %s", game_id, exc)

    async def _renew(self, game_id: str, lost: asyncio.Event) -> None:
        """Keep the lease while the game is played (a third of it at a time)."""
        while True:
            await asyncio.sleep(self._lease / 3)
            try:
                if not await self.app.store.renew(game_id, self.owner, self._lease):
                    log.warning("background: game %s: lease lost to another replica", game_id)
                    lost.set()
                    return
            except StoreUnavailableError as exc:
                log.warning("background: cannot renew the lease of game %s: %s", game_id, exc)
