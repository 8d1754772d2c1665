"""Reading a game's events: WatchGame's streams and GetGameLog.

Both read the events the commits appended; a whole-history read of the store
holds a read slot, and a finished game's log is kept in this process once
read (service.app.history).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable, Sequence

import engine
from railyard_api import convert
from railyard_api import game_service_pb2 as pb
from railyard_api.fields import build
from service.app import errors as err
from service.app.admission import Admission, Caller, admit_spectator
from service.app.games import COMMIT_ATTEMPTS, NO_TABLE, Games, Loaded
from service.app.history import FinishedLogs, ReadSlots
from service.ops import tracing
from service.store import StoredEvent, StoreUnavailableError

log = logging.getLogger("railyard")


def log_of(game: engine.GameState, stored: Sequence[StoredEvent]) -> pb.GetGameLogResponse:
    """GetGameLog's answer: every event in the public view (the same for
    every caller), the ruleset, the seed once over."""
    response = pb.GetGameLogResponse(
        events=[convert.redact(pb.GameEvent.FromString(e.payload), None) for e in stored],
        seed_sha256=game.seed_sha256,
        ruleset=convert.ruleset_to_proto(game.rules),
    )
    if game.over:
        response.seed = game.seed  # MT-FAIR-1: revealed once over
    return response


def _held_back(loaded: Loaded, stored: list[StoredEvent]) -> list[StoredEvent]:
    """A spectator's part of the log: none of the last spectator_delay
    versions while the game goes on."""
    delay = loaded.seats.table.spectator_delay
    if not delay or loaded.game.over:
        return stored
    cut = loaded.record.version - delay
    return [e for e in stored if e.version <= cut]


def build_view(loaded: Loaded, delay: int) -> pb.GameView:
    return build(pb.GameView(), loaded.view_fields(None, delay=delay))


class Watching:
    """WatchGame and GetGameLog, the open streams counted."""

    def __init__(self, games: Games, admission: Admission, clock: Callable[[], float]) -> None:
        """``clock``: what the kept logs of finished games age by (seconds)."""
        self.games = games
        self.admission = admission
        self.settings = games.settings
        self.metrics = games.metrics
        #: WatchGame streams open now, both transports (Settings.max_watchers).
        self.open = 0
        #: Finished games' logs, and the cap on whole-history reads of the
        #: store (Settings.max_log_reads): service.app.history.
        self.finished_logs = FinishedLogs(clock=clock)
        self.history_reads = ReadSlots(self.settings.max_log_reads)

    async def watch_game(
        self, game_id: str, after_version: int | None, caller: Caller
    ) -> AsyncGenerator[tuple[pb.GameEvent, ...] | None, None]:
        """GameApp.watch_game."""
        if self.open >= self.settings.max_watchers:
            raise err.too_many_watchers(self.settings.max_watchers)
        # Counted from here (no await since the check), released however it ends.
        self.open += 1
        try:
            loaded, seat = await self.admission.seated(game_id, caller, required=False)
            events = self._watch(game_id, loaded, seat, after_version)
            self.metrics.watches.inc()
            try:
                async for item in events:
                    yield item
            finally:
                self.metrics.watches.dec()
                await events.aclose()
        finally:
            self.open -= 1

    async def _watch(
        self, game_id: str, loaded: Loaded, seat: int | None, after_version: int | None
    ) -> AsyncGenerator[tuple[pb.GameEvent, ...] | None, None]:
        store = self.games.store
        version = loaded.record.version
        delay = loaded.seats.table.spectator_delay if seat is None else 0
        if delay and not loaded.game.over:
            async for item in self._delayed(game_id, loaded, delay, after_version):
                yield item
            return
        # Stream ids are <version>-<seq> with seq from 1, so (v + 1, 0) is just
        # after every event of version v.
        position = ((version if after_version is None else max(after_version, -1)) + 1, 0)
        if after_version is None and loaded.seats.table is not NO_TABLE:
            # A table's changes (seats taken and given up, its start) come at
            # the version they happen at: live from just after the snapshot's
            # last event, or a watcher of a waiting table never hears it start.
            loaded, position = await self._after_snapshot(game_id, loaded)
            version = loaded.record.version
        # The versions a resuming watcher missed, read before the snapshot is
        # given: a refused read (TOO_MANY_LOG_READS) or a store failure is
        # then the call's error, not a stream that opens and fails.
        replay = (
            await self._history(loaded, position[0] - 1)
            if after_version is not None and position[0] <= version
            else []
        )
        yield (pb.GameEvent(version=version, snapshot=loaded.view(seat)),)
        if loaded.game.over and (after_version is None or after_version >= version):
            return
        while True:
            if replay:
                batch, replay = replay, []
            else:
                try:
                    batch = await store.wait_events(game_id, position, self.settings.keepalive)
                except StoreUnavailableError as exc:
                    raise self.games.store_failed(exc) from exc
            if not batch:
                try:
                    if await store.load(game_id) is None:
                        return  # expired while watched
                except StoreUnavailableError as exc:
                    raise self.games.store_failed(exc) from exc
                yield None
                continue
            # A batch holds whole versions: each commit appends all of its
            # events in one atomic step, and the read takes every entry after
            # the position.
            group: list[pb.GameEvent] = []
            for stored in batch:
                if group and stored.version != group[-1].version:
                    yield tuple(group)
                    group = []
                event = pb.GameEvent.FromString(stored.payload)
                position = (stored.version, stored.seq)
                group.append(convert.redact(event, seat))
                if event.WhichOneof("kind") == "game_ended":
                    yield tuple(group)
                    return
            yield tuple(group)

    async def _after_snapshot(self, game_id: str, loaded: Loaded) -> tuple[Loaded, tuple[int, int]]:
        """The game and the stream position just after its last event, both
        of one moment: the events are read, then the game again, until
        nothing committed in between."""
        for _ in range(COMMIT_ATTEMPTS):
            version = loaded.record.version
            stored = await self.games.read_events(game_id, version - 1)
            again = await self.games.load(game_id)
            if (again.record.version, again.record.rev) == (version, loaded.record.rev):
                last = stored[-1] if stored else None
                if last is not None and last.version == version:
                    return again, (last.version, last.seq)
                return again, (version + 1, 0)
            loaded = again
        return loaded, (loaded.record.version + 1, 0)

    async def _delayed(
        self, game_id: str, loaded: Loaded, delay: int, after_version: int | None
    ) -> AsyncGenerator[tuple[pb.GameEvent, ...] | None, None]:
        """A spectator's stream held ``delay`` versions behind the game
        (TableSettings.spectator_delay): the snapshot as of then, then each
        version once the game is ``delay`` past it, everything at once when
        it ends. Polls the store's events (every keep-alive period at most)."""
        store = self.games.store
        latest = loaded.record.version
        shown = max(latest - delay, 0)
        yield (pb.GameEvent(version=shown, snapshot=build_view(loaded, delay)),)
        position = ((shown if after_version is None else min(after_version, shown)) + 1, 0)
        held: list[StoredEvent] = []
        with self.history_reads.hold():
            held = await self.games.read_events(game_id, position[0] - 1)
        while True:
            ended = any(
                pb.GameEvent.FromString(e.payload).WhichOneof("kind") == "game_ended"
                for e in held[-3:]
            )
            if held:
                latest = max(latest, held[-1].version)
            cut = latest + 1 if ended else latest - delay
            ready = [e for e in held if e.version <= cut]
            held = held[len(ready) :]
            group: list[pb.GameEvent] = []
            for stored in ready:
                if group and stored.version != group[-1].version:
                    yield tuple(group)
                    group = []
                group.append(convert.redact(pb.GameEvent.FromString(stored.payload), None))
                position = (stored.version, stored.seq)
            if group:
                yield tuple(group)
            if ended and not held:
                return
            last = held[-1] if held else None
            after = (last.version, last.seq) if last is not None else position
            try:
                batch = await store.wait_events(game_id, after, self.settings.keepalive)
            except StoreUnavailableError as exc:
                raise self.games.store_failed(exc) from exc
            if not batch:
                yield None
                continue
            held += batch

    async def get_game_log(self, game_id: str, caller: Caller) -> pb.GetGameLogResponse:
        """GameApp.get_game_log."""
        await self.admission.admit_address(caller)  # the public log: no seat is involved
        tracing.note({tracing.GAME_ID: game_id})
        kept = self.finished_logs.get(game_id)  # (only of games anyone may watch)
        log.debug("game %s: log %s", game_id, "kept" if kept else "read from the store")
        if kept is not None:
            return kept.response
        if caller.token:  # a seat, or the host: judged with the table's spectators
            return await self._restricted_log(game_id, caller)
        with self.history_reads.hold():
            loaded = await self.games.load(game_id)
            admit_spectator(loaded, caller)
            stored = await self.games.read_events(game_id, -1)
        response = log_of(loaded.game, _held_back(loaded, stored))
        if loaded.game.over and loaded.seats.table.spectators == pb.SPECTATORS_ALLOWED:
            # (loaded before the read: no event came after it). Kept only
            # where anyone may read it: a kept log is answered unjudged.
            self.finished_logs.put(game_id, stored, response)
        return response

    async def _restricted_log(self, game_id: str, caller: Caller) -> pb.GetGameLogResponse:
        """GetGameLog with a token: a seat's (the whole public log) or the
        host's (a spectator's)."""
        loaded, seat = await self.admission.seated(game_id, caller, required=False)
        with self.history_reads.hold():
            stored = await self.games.read_events(game_id, -1)
        return log_of(loaded.game, stored if seat is not None else _held_back(loaded, stored))

    async def _history(self, loaded: Loaded, after_version: int) -> list[StoredEvent]:
        """The events after ``after_version`` a resuming watcher missed: a
        finished game's from its kept log (read whole and kept on the first
        replay), else read within a history read slot."""
        game_id = loaded.record.game_id
        kept = self.finished_logs.get(game_id)
        if kept is None:
            over = loaded.game.over  # (loaded before the read: no event came after it)
            with self.history_reads.hold():
                stored = await self.games.read_events(game_id, -1 if over else after_version)
            if not over:
                return stored
            kept = self.finished_logs.put(game_id, stored, log_of(loaded.game, stored))
        return kept.after(after_version)
