"""What the service plays itself: bot seats' turns, and due work.

Bot seats move after a person's move and at creation (API.md Bots), in
worker processes (service.app.bots); a game of bots only may instead be
played in the background, and a person whose turn timer ran out has the
greedy bot's turn played for them (:meth:`Turns.advance`, called by
service.app.background).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Sequence
from typing import Final, cast

import engine
from railyard_api import game_service_pb2 as pb
from service.app import errors as err
from service.app.bots import ALL_BOTS_BUDGET, BotPlayer, BotsBusyError, BotWorkExceededError
from service.app.errors import ServiceError
from service.app.games import COMMIT_ATTEMPTS, Games, Seats, append_events, next_seq
from service.store import Commit, StoredEvent, now_ms

log = logging.getLogger("railyard")

#: What the service plays for a person whose time ran out (docs/bots.md).
TIMED_OUT_LEVEL: Final = "greedy"
#: Bot decisions or moves handled between two turns of the event loop.
_SLICE: Final = 200


def play_timed_out(game: engine.GameState, seat: int, out: list[StoredEvent]) -> None:
    """Play ``seat``'s whole turn as the greedy bot would (docs/bots.md:
    what the service plays for a person out of time), after a
    ``turnTimedOut`` event at the version of its first move."""
    version = game.version + 1
    timed_out = pb.GameEvent(version=version, turn_timed_out=pb.TurnTimedOut(seat=seat))
    out.append(StoredEvent(version, 1, timed_out.SerializeToString()))
    while not game.over and game.current_seat == seat:
        view = engine.build_view(game, seat)
        move = engine.choose(TIMED_OUT_LEVEL, view, game.legal_moves(), engine.bot_key(view))
        append_events(out, game.apply(move, seat=seat), game.version)


def timed_out(seats: Seats, seat: int) -> Seats:
    """``seats`` after ``seat``'s timer ran out once more: counted, and the
    seat given to the table's bot at its ``max_timeouts``-th time in a row."""
    limit = seats.table.max_timeouts
    if not limit:
        return seats
    counts = list(seats.timeouts) or [0] * len(seats.names)
    counts[seat] += 1
    if counts[seat] >= limit:
        return dataclasses.replace(
            seats,
            bots=(*seats.bots[:seat], seats.table.bot_level, *seats.bots[seat + 1 :]),
            token_hashes=(*seats.token_hashes[:seat], "", *seats.token_hashes[seat + 1 :]),
            timeouts=without_timeouts(tuple(counts), seat),
        )
    return dataclasses.replace(seats, timeouts=tuple(counts))


def without_timeouts(counts: tuple[int, ...], seat: int) -> tuple[int, ...]:
    """The timeouts in a row per seat with ``seat``'s count back to none
    (empty when no seat has any)."""
    rest = tuple(0 if s == seat else c for s, c in enumerate(counts))
    return rest if any(rest) else ()


class Turns:
    """Bot seats' turns, and the service's due work in a game."""

    def __init__(self, games: Games, bots: BotPlayer) -> None:
        self.games = games
        self.bots = bots
        self.settings = games.settings
        self.metrics = games.metrics

    async def play_bots(
        self,
        game: engine.GameState,
        bots: Sequence[int],
        out: list[StoredEvent],
        messages: list[pb.GameEvent] | None = None,
        *,
        creating: bool = False,
        background: bool = False,
    ) -> tuple[engine.GameState, int]:
        """API.md Bots: play bot seats until a person is to move or the game
        ends, off the event loop but for a short slice (service.app.bots); the
        game after them and how many moves they made.
        With ``bots_only = "request"``, a game of bots only is played to its
        end here, by CreateGame: its experts search at ALL_BOTS_BUDGET so that
        the caller is answered in seconds, not minutes. ``background``: the
        next ``background_moves`` of such a game, at the bots' full strength
        (:meth:`advance`). Bot play past ``bot_cpu_limit`` seconds of CPU
        refuses the request (INVALID_ARGUMENT), and so do busy workers a
        CreateGame would wait for (RESOURCE_EXHAUSTED BOTS_BUSY): nothing is
        stored."""
        budget = ALL_BOTS_BUDGET if all(bots) and not background else None
        limit = self.settings.background_moves if background else None
        try:
            game, turns = await self.bots.play(
                game, bots, budget, creating=creating, background=background, limit=limit
            )
        except BotsBusyError as exc:
            raise err.bots_busy() from exc
        except BotWorkExceededError as exc:
            raise err.invalid(
                f"the bot seats' turns of this request take more than {exc.limit:g} s of CPU "
                f"(stopped after {exc.moves} moves; the operator's bot_cpu_limit): "
                "nothing was played. Give fewer bot seats, rounds or tiles",
                field="players",
                limit=f"{exc.limit:g}",
            ) from exc
        # A big game of bots hands back thousands of decisions and moves:
        # taken in slices, the loop serving other calls between them (one
        # game's duration records alone held it longer than a move takes).
        for n, (level, seconds) in enumerate(turns.decisions, 1):
            self.metrics.bot_decision(level, seconds)
            if n % _SLICE == 0:
                await asyncio.sleep(0)
        for n, move in enumerate(turns.moves, 1):
            seq = next_seq(out, move.version)
            out += [StoredEvent(move.version, seq + i, p) for i, p in enumerate(move.payloads, 1)]
            if messages is not None:
                messages += move.events()
            if n % _SLICE == 0:
                await asyncio.sleep(0)
        return game, len(turns.moves)

    async def advance(self, game_id: str) -> int | None:
        """Play what is the service's to play in ``game_id`` now (background
        play, service.app.background): the next ``background_moves`` bot moves of
        a game of bots only, or the turn of a person whose time ran out, with
        the bots after it. Returns when there is more to do (ms since the
        epoch; now or earlier: at once), or ``None``: never (the game is over,
        gone, or has no due work).

        Each step is loaded from the store and committed with its version
        check, so whichever replica plays it, every move is applied once: a
        stale claimant's commit is refused and it goes again from the stored
        state. Raises :class:`StoreUnavailableError` and ServiceError (a bot's
        CPU limit) for the caller to try again later."""
        games = self.games
        for _ in range(COMMIT_ATTEMPTS):
            try:
                loaded = await games.load(game_id)
            except ServiceError as exc:
                if exc.reason == "GAME_NOT_FOUND":
                    return None  # expired (or the entry of a create that failed)
                raise
            game, seats, record = loaded.game, loaded.seats, loaded.record
            if game.over:
                return None
            events: list[StoredEvent] = []
            bot_moves = 0
            if games.plays_in_background(seats):
                game, bot_moves = await self.play_bots(game, seats.bots, events, background=True)
            elif record.deadline_ms and not seats.bots[game.current_seat]:
                if now_ms() < record.deadline_ms:
                    return record.deadline_ms  # moved in time (a spurious entry, or early)
                seat = game.current_seat
                play_timed_out(game, seat, events)
                new_seats = timed_out(seats, seat)
                if new_seats.bots[seat]:  # TableSettings.maxTimeouts: replaced
                    left = pb.SeatLeft(
                        seat=seat,
                        reason=pb.LEAVE_REASON_TIMEOUTS,
                        bot=cast(pb.BotLevel.ValueType, new_seats.bots[seat]),
                    )
                    version = game.version
                    seq = next_seq(events, version)
                    event = pb.GameEvent(version=version, seat_left=left)
                    events.append(StoredEvent(version, seq + 1, event.SerializeToString()))
                    log.info("game %s: seat %d timed out too often; a bot plays it", game_id, seat)
                seats = new_seats
                game, bot_moves = await self.play_bots(game, seats.bots, events)
                log.info("game %s: seat %d timed out; played for it", game_id, seat)
            else:
                return None  # a person's turn without a timer: nothing is the service's
            deadline = games.deadline(game, seats)
            result = await games.commit(
                game_id,
                record.version,
                game,
                seats,
                events,
                deadline=deadline,
                schedule=False,
                rev=record.rev,
                new_seats=None if seats is loaded.seats else seats,
            )
            if result is Commit.OK:
                self.metrics.bot_moves.inc(bot_moves)
                return games.due(game, seats, deadline)
            if result is Commit.NOT_FOUND:
                return None
            self.metrics.commit_conflicts.inc()  # a move or another claimant won: again
        return now_ms()
