"""Tables: open seats people join, leaving, rematches, and the public list.

A game created with open seats (``Player.open``) waits (GAME_STATUS_WAITING)
until the last one is taken (JoinGame) or its host starts it (StartGame,
open seats then played by bots of the table's level). It is dealt at
creation, from the seed its view commits to (seed_sha256), so waiting
changes nothing anyone could know; but no hand is shown and nobody moves
until it starts, so a seat taken and given up again shows no hand.

Every change to a table (a seat taken or given up, the start, a rematch's
seat claimed) is one commit of the game with the store's compare-and-set
on both the version and the seats' revision (``GameRecord.rev``): of two
callers racing for one seat exactly one commits, and a move made from the
seats as they were before a seat was given up is refused and made again
from the new ones (its token then no longer works). Table changes do not
move the game's version, which counts moves (API.md); their events are
numbered after the events of the version they happen at.

The join codes and the list of public tables are indexes kept beside the
games (:class:`service.store.Store`): whatever they say, JoinGame and
ListGames judge the game itself.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import dataclasses
import hashlib
import hmac
import logging
import re
import secrets
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, cast

from google.protobuf.timestamp_pb2 import Timestamp

import engine
from railyard_api import convert
from railyard_api import game_service_pb2 as pb
from railyard_api.fields import Fields
from service.app import errors as err
from service.app.admission import Admission, Caller, seat_of
from service.app.errors import ServiceError
from service.app.games import (
    COMMIT_ATTEMPTS,
    GAME_ID_LEN,
    Games,
    Loaded,
    Seats,
    Table,
    append_events,
    hash_token,
    new_seat_token,
    next_seq,
    state_bytes,
)
from service.app.turns import Turns, without_timeouts
from service.store import (
    Commit,
    GameExistsError,
    GameRecord,
    StoredEvent,
    StoreUnavailableError,
    listed_member,
    now_ms,
)

log = logging.getLogger("railyard")

#: A join code's letters: no 0/O, 1/I/L, so that one read aloud or typed
#: from a screen is not mistaken. 10 of them: 50 bits.
CODE_ALPHABET: Final = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH: Final = 10
_CODE: Final = re.compile(f"[{CODE_ALPHABET}]{{{CODE_LENGTH}}}")
#: ListGames' page size when none is asked for, and the most it gives.
DEFAULT_PAGE: Final = 50
MAX_PAGE: Final = 100
#: TableSettings.spectator_delay and max_timeouts at most.
MAX_DELAY: Final = 1000
MAX_TIMEOUTS: Final = 100
_MEMBER: Final = re.compile(r"\d{15}:[0-9a-f]{20}")


#: Queues a webhook event: tenant, kind, game id, data (GameApp.tell).
Tell = Callable[[str | None, str, str, dict[str, object]], Awaitable[None]]


def new_join_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normal_code(code: str) -> str:
    """A join code as typed: any case, dashes and spaces ignored."""
    return code.upper().replace("-", "").replace(" ", "")


def table_of(request: pb.CreateGameRequest, players: int) -> Table | None:
    """CreateGame's table settings, judged (INVALID_ARGUMENT); None for a
    game with no open seat and no settings (stored as before tables)."""
    has_open = any(p.open for p in request.players)
    if not request.HasField("table") and not has_open:
        return None
    settings = request.table
    if settings.visibility not in pb.Visibility.values():
        raise err.invalid(f"table.visibility {settings.visibility} is not a visibility")
    if settings.spectators not in pb.Spectators.values():
        raise err.invalid(f"table.spectators {settings.spectators} is not a spectator policy")
    if settings.bot_level not in pb.BotLevel.values():
        raise err.invalid(f"table.botLevel {settings.bot_level} is not a bot level")
    if settings.spectator_delay > MAX_DELAY:
        raise err.invalid(
            f"table.spectatorDelay is {settings.spectator_delay}: at most {MAX_DELAY} versions",
            field="table.spectatorDelay",
        )
    if settings.max_timeouts > MAX_TIMEOUTS:
        raise err.invalid(
            f"table.maxTimeouts is {settings.max_timeouts}: at most {MAX_TIMEOUTS}",
            field="table.maxTimeouts",
        )
    if settings.max_timeouts and not request.turn_timeout_seconds:
        raise err.invalid(
            "table.maxTimeouts counts turn timeouts: it needs turnTimeoutSeconds",
            field="table.maxTimeouts",
        )
    for i, player in enumerate(request.players):
        if player.open and player.bot:
            raise err.invalid(
                f"players[{i}] is open and a bot: an open seat waits for a person",
                field=f"players[{i}]",
            )
    return Table(
        visibility=settings.visibility or pb.VISIBILITY_PRIVATE,
        bot_level=settings.bot_level or pb.BOT_LEVEL_GREEDY,
        spectators=settings.spectators or pb.SPECTATORS_ALLOWED,
        spectator_delay=settings.spectator_delay,
        max_timeouts=settings.max_timeouts,
        created_ms=now_ms(),
    )


def listed(seats: Seats) -> bool:
    """Whether ListGames shows the table: public, waiting, a seat open."""
    return seats.table.visibility == pb.VISIBILITY_PUBLIC and not seats.started and any(seats.open)


def _page_token(member: str) -> str:
    return base64.urlsafe_b64encode(member.encode()).decode().rstrip("=")


def _after(token: str) -> str:
    """The member a page token names; INVALID_ARGUMENT for one ListGames
    did not give."""
    if not token:
        return ""
    try:
        member = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        member = ""
    if not _MEMBER.fullmatch(member):
        raise err.invalid("pageToken is not one ListGames returned", field="pageToken")
    return member


def rematch_id(game_id: str) -> str:
    """The id of a game's rematch: one per game, whoever asks first."""
    return hashlib.sha256(f"rematch:{game_id}".encode()).hexdigest()[:GAME_ID_LEN]


class Tables:
    """JoinGame, StartGame, LeaveGame, Rematch, ListGames."""

    def __init__(self, games: Games, admission: Admission, turns: Turns, tell: Tell) -> None:
        """``tell``: queues a webhook event (GameApp.tell)."""
        self.games = games
        self.admission = admission
        self.turns = turns
        self.tell = tell
        self.store = games.store

    # ------------------------------------------------------------ helpers

    async def _last_seq(self, game_id: str, version: int) -> int:
        """How many events the stored game has at ``version``."""
        stored = await self.games.read_events(game_id, version - 1)
        return next_seq(stored, version)

    async def _commit(
        self,
        loaded: Loaded,
        game: engine.GameState,
        seats: Seats,
        table_events: Sequence[pb.GameEvent],
        *,
        play: bool = True,
    ) -> tuple[Commit, engine.GameState]:
        """Commit a change of ``loaded``'s seats to ``seats``: its events at
        the current version, then, once started, the bots' turns."""
        game_id = loaded.record.game_id
        base = loaded.record.version
        seq = await self._last_seq(game_id, base)
        events = [
            StoredEvent(base, seq + i, e.SerializeToString()) for i, e in enumerate(table_events, 1)
        ]
        bot_moves = 0
        if play and seats.started and not game.over and not self.games.plays_in_background(seats):
            game, bot_moves = await self.turns.play_bots(game, seats.bots, events)
        deadline = self.games.deadline(game, seats)
        try:
            result = await self.games.commit(
                game_id,
                base,
                game,
                loaded.seats,
                events,
                deadline=deadline,
                rev=loaded.record.rev,
                new_seats=seats,
            )
        except StoreUnavailableError as exc:
            raise self.games.store_failed(exc) from exc
        if result is Commit.NOT_FOUND:
            raise err.not_found(game_id)
        if result is Commit.OK:
            self.games.metrics.bot_moves.inc(bot_moves)
            loaded.deadline_ms = deadline
        return result, game

    async def _relist(self, loaded: Loaded, seats: Seats) -> None:
        """Keep the public list in step with a table's new seats (an index:
        a failure here is logged, and ListGames judges the game itself)."""
        tenant = seats.tenant or ""
        member = listed_member(seats.table.created_ms, loaded.record.game_id)
        try:
            if listed(seats):
                await self.store.list_add(tenant, member)
            elif listed(loaded.seats) or seats.table.visibility == pb.VISIBILITY_PUBLIC:
                await self.store.list_remove(tenant, member)
        except StoreUnavailableError as exc:
            log.warning("game %s: the table list was not updated: %s", loaded.record.game_id, exc)

    # ------------------------------------------------------------ create

    async def created(self, game_id: str, seats: Seats) -> None:
        """CreateGame stored a game: list it if it is a public table."""
        if listed(seats):
            try:
                await self.store.list_add(
                    seats.tenant or "", listed_member(seats.table.created_ms, game_id)
                )
            except StoreUnavailableError as exc:
                raise self.games.store_failed(exc) from exc

    async def reserve_code(self, game_id: str) -> str:
        """A new join code, kept for ``game_id``."""
        for _ in range(8):
            code = new_join_code()
            try:
                if await self.store.put_code(code, game_id):
                    return code
            except StoreUnavailableError as exc:
                raise self.games.store_failed(exc) from exc
        raise err.invalid("no join code was free; try again")  # (50 bits: never in practice)

    # ------------------------------------------------------------ JoinGame

    async def join(self, request: pb.JoinGameRequest, caller: Caller) -> pb.JoinGameResponse:
        await self.admission.admit_address(caller)  # no seat yet: the joiner's address
        if len(request.display_name) > 64:
            raise err.invalid("displayName is longer than 64 characters", field="displayName")
        code = normal_code(request.join_code)
        game_id = request.game_id
        if not game_id or game_id == "-":
            if not code:
                raise err.invalid("give gameId or joinCode", field="gameId")
            if not _CODE.fullmatch(code):
                raise err.join_code_not_found()
            try:
                found = await self.store.code_game(code)
            except StoreUnavailableError as exc:
                raise self.games.store_failed(exc) from exc
            if found is None:
                raise err.join_code_not_found()
            game_id = found
        wanted = request.seat if request.HasField("seat") else None
        for _ in range(COMMIT_ATTEMPTS):
            loaded = await self.games.load(game_id)
            seats = loaded.seats
            table = seats.table
            if table.visibility != pb.VISIBILITY_PUBLIC and not (
                table.code and hmac.compare_digest(code, table.code)
            ):
                raise err.bad_join_code(game_id)
            if loaded.game.over:
                raise err.game_over(game_id)
            if seats.started:
                raise err.already_started(game_id)
            if wanted is not None:
                if wanted >= len(seats.names):
                    raise err.invalid(
                        f"seat {wanted}: game {game_id!r} has seats 0 to {len(seats.names) - 1}",
                        field="seat",
                    )
                if not seats.is_open(wanted):
                    raise err.seat_taken(game_id, wanted)
                seat = wanted
            else:
                free = seats.open_seats()
                if not free:
                    raise err.table_full(game_id)
                seat = free[0]
            token = new_seat_token()
            name = request.display_name or f"Player {seat + 1}"
            opened = list(seats.open)
            opened[seat] = False
            new = dataclasses.replace(
                seats,
                names=_with(seats.names, seat, name),
                token_hashes=_with(seats.token_hashes, seat, hash_token(token)),
                open=tuple(opened) if any(opened) else (),
                started=not any(opened),
            )
            events = [pb.GameEvent(seat_joined=pb.SeatJoined(seat=seat, display_name=name))]
            if new.started:
                events.append(pb.GameEvent(game_started=pb.GameStarted()))
            for event in events:
                event.version = loaded.record.version
            result, game = await self._commit(loaded, loaded.game, new, events)
            if result is not Commit.OK:
                continue  # another change came first: judge the seat again
            loaded.game, loaded.seats = game, new
            await self._relist(loaded, new)
            log.info("game %s: seat %d taken%s", game_id, seat, "; started" if new.started else "")
            return pb.JoinGameResponse(
                game=loaded.view(seat), seat=pb.SeatToken(seat=seat, token=token)
            )
        raise err.kept_changing("the table kept changing")

    # ------------------------------------------------------------ StartGame

    async def start(self, game_id: str, caller: Caller) -> Fields:
        if not caller.token:
            await self.admission.admit_address(caller)
            raise err.unauthenticated()
        for _ in range(COMMIT_ATTEMPTS):
            loaded = await self.games.load(game_id)
            seats = loaded.seats
            if not seats.is_host(caller.token):
                await self.admission.admit_address(caller)
                raise err.not_host(game_id)
            if seats.started:
                raise err.already_started(game_id)
            filled = seats.open_seats()
            level = seats.table.bot_level
            new = dataclasses.replace(
                seats,
                bots=tuple(level if s in filled else b for s, b in enumerate(seats.bots)),
                names=tuple(
                    f"Bot {s + 1}" if s in filled else n for s, n in enumerate(seats.names)
                ),
                open=(),
                started=True,
            )
            event = pb.GameEvent(
                version=loaded.record.version, game_started=pb.GameStarted(bot_seats=filled)
            )
            result, game = await self._commit(loaded, loaded.game, new, [event])
            if result is not Commit.OK:
                continue
            loaded.game, loaded.seats = game, new
            await self._relist(loaded, new)
            log.info("game %s: started by its host, bots at seats %s", game_id, filled)
            return loaded.view_fields(None)
        raise err.kept_changing("the table kept changing")

    # ------------------------------------------------------------ LeaveGame

    async def leave(self, game_id: str, caller: Caller) -> Fields:
        first = True
        for _ in range(COMMIT_ATTEMPTS):
            if first:
                loaded, seat = await self.admission.seated(game_id, caller, required=True)
                first = False
            else:
                loaded = await self.games.load(game_id)
                seat = seat_of(loaded, caller, required=True)
            assert seat is not None
            seats = loaded.seats
            if loaded.game.over:
                raise err.game_over(game_id)
            if not seats.started:
                opened = list(seats.open) or [False] * len(seats.names)
                opened[seat] = True
                new = dataclasses.replace(
                    seats,
                    names=_with(seats.names, seat, ""),
                    token_hashes=_with(seats.token_hashes, seat, ""),
                    open=tuple(opened),
                )
                left = pb.SeatLeft(seat=seat, reason=pb.LEAVE_REASON_LEFT)
            else:
                new = replaced(seats, seat)
                left = pb.SeatLeft(
                    seat=seat,
                    reason=pb.LEAVE_REASON_LEFT,
                    bot=cast(pb.BotLevel.ValueType, new.bots[seat]),
                )
            event = pb.GameEvent(version=loaded.record.version, seat_left=left)
            result, game = await self._commit(loaded, loaded.game, new, [event])
            if result is not Commit.OK:
                continue
            loaded.game, loaded.seats = game, new
            await self._relist(loaded, new)
            log.info("game %s: seat %d left", game_id, seat)
            return loaded.view_fields(None)
        raise err.kept_changing("the table kept changing")

    # ------------------------------------------------------------ Rematch

    async def rematch(self, game_id: str, caller: Caller) -> pb.RematchResponse:
        loaded, seat = await self.admission.seated(game_id, caller, required=True)
        assert seat is not None
        assert caller.token is not None
        if not loaded.game.over:
            raise err.not_over(game_id)
        new_id = loaded.seats.rematch or rematch_id(game_id)
        if not loaded.seats.rematch:
            # A place under the tenant's live-game cap, as CreateGame takes
            # one (TOO_MANY_GAMES; the same id's place is held once).
            await self.admission.reserve_live(loaded.seats.tenant, new_id)
            if await create_rematch(self.games, self.turns, loaded, new_id):
                await self.tell(loaded.seats.tenant, "game.created", new_id, {"rematchOf": game_id})
            await self._point_to(game_id, new_id)
        old_hash = hash_token(caller.token)
        for _ in range(COMMIT_ATTEMPTS):
            target = await self.games.load(new_id)
            seats = target.seats
            claims = seats.claims
            if (
                seat >= len(claims)
                or not claims[seat]
                or not hmac.compare_digest(claims[seat], old_hash)
            ):
                # Claimed already (each old token gets its new one once).
                return pb.RematchResponse(game=target.view(None))
            token = new_seat_token()
            rest = _with(claims, seat, "")
            new = dataclasses.replace(
                seats,
                token_hashes=_with(seats.token_hashes, seat, hash_token(token)),
                claims=rest if any(rest) else (),
            )
            event = pb.GameEvent(
                version=target.record.version,
                seat_joined=pb.SeatJoined(seat=seat, display_name=seats.names[seat]),
            )
            result, _ = await self._commit(target, target.game, new, [event], play=False)
            if result is not Commit.OK:
                continue
            target.seats = new
            return pb.RematchResponse(
                game=target.view(seat), seat=pb.SeatToken(seat=seat, token=token)
            )
        raise err.kept_changing("the table kept changing")

    async def _point_to(self, game_id: str, new_id: str) -> None:
        """Write the finished game's pointer to its rematch (once)."""
        for _ in range(COMMIT_ATTEMPTS):
            loaded = await self.games.load(game_id)
            if loaded.seats.rematch:
                return
            new = dataclasses.replace(loaded.seats, rematch=new_id)
            try:
                result = await self.store.commit(
                    game_id,
                    loaded.record.version,
                    loaded.record.version,
                    loaded.record.state,
                    (),
                    None,
                    None,
                    loaded.record.deadline_ms,
                    rev=loaded.record.rev,
                    meta=new.to_bytes(),
                )
            except StoreUnavailableError as exc:
                raise self.games.store_failed(exc) from exc
            if result is not Commit.VERSION_MISMATCH:
                return

    # ------------------------------------------------------------ ListGames

    async def list_games(
        self, request: pb.ListGamesRequest, caller: Caller, tenant: str | None
    ) -> pb.ListGamesResponse:
        await self.admission.admit_address(caller)
        if request.page_size < 0:
            raise err.invalid("pageSize must not be negative", field="pageSize")
        size = min(request.page_size or DEFAULT_PAGE, MAX_PAGE)
        after = _after(request.page_token)
        response = pb.ListGamesResponse()
        while len(response.games) < size:
            try:
                members = await self.store.list_page(tenant or "", after, size)
            except StoreUnavailableError as exc:
                raise self.games.store_failed(exc) from exc
            records = await asyncio.gather(*(self._listed_game(tenant or "", m) for m in members))
            for member, summary in zip(members, records, strict=True):
                after = member
                if summary is not None:
                    response.games.append(summary)
                    if len(response.games) == size:
                        break
            if len(members) < size:
                after = ""  # the list's end: no next page
                break
        response.next_page_token = _page_token(after) if after else ""
        return response

    async def _listed_game(self, tenant: str, member: str) -> pb.GameSummary | None:
        """A listed table's summary; None (and unlisted) for one no longer
        joinable."""
        game_id = member.partition(":")[2]
        try:
            loaded = await self.games.load(game_id)
        except ServiceError as exc:
            if exc.reason != "GAME_NOT_FOUND":
                raise
            loaded = None
        if loaded is None or not listed(loaded.seats) or loaded.game.over:
            with contextlib.suppress(StoreUnavailableError):  # (again by the next list)
                await self.store.list_remove(tenant, member)
            return None
        seats = loaded.seats
        created = Timestamp()
        created.FromMilliseconds(seats.table.created_ms)
        return pb.GameSummary(
            game_id=game_id,
            ruleset=convert.ruleset_to_proto(loaded.game.rules),
            players=[
                pb.PlayerView(
                    seat=s,
                    display_name=name,
                    bot=cast(pb.BotLevel.ValueType, seats.bots[s]),
                    open=seats.is_open(s),
                )
                for s, name in enumerate(seats.names)
            ],
            open_seats=len(seats.open_seats()),
            create_time=created,
        )


def replaced(seats: Seats, seat: int) -> Seats:
    """``seats`` with ``seat`` played by the table's bot from now on; its
    token no longer works."""
    return dataclasses.replace(
        seats,
        bots=_with(seats.bots, seat, seats.table.bot_level),
        token_hashes=_with(seats.token_hashes, seat, ""),
        timeouts=without_timeouts(seats.timeouts, seat),
    )


def rematch_record(finished: Loaded, new_id: str) -> tuple[GameRecord, Seats, engine.GameState]:
    """The rematch of ``finished`` as a record to create: the same seats,
    players and rules, a new seed; each person's seat claimed by the hash of
    its token in the finished game."""
    old = finished.seats
    game = engine.new_game(finished.game.rules, len(old.names), secrets.token_hex(16))
    seats = dataclasses.replace(
        old,
        token_hashes=("",) * len(old.names),
        claims=old.token_hashes,
        seed_from_caller=False,
        open=(),
        started=True,
        timeouts=(),
        rematch="",
        table=dataclasses.replace(old.table, created_ms=now_ms())
        if old.table.created_ms
        else old.table,
    )
    record = GameRecord(new_id, game.version, state_bytes(game), seats.to_bytes())
    return record, seats, game


async def create_rematch(games: Games, turns: Turns, finished: Loaded, new_id: str) -> bool:
    """Store ``finished``'s rematch as ``new_id`` unless it exists (False)."""
    record, seats, game = rematch_record(finished, new_id)
    events: list[StoredEvent] = []
    append_events(events, game.opening_events, 0)
    if not games.plays_in_background(seats):
        game, _ = await turns.play_bots(game, seats.bots, events, creating=True)
    deadline = games.deadline(game, seats)
    record = GameRecord(new_id, game.version, state_bytes(game), seats.to_bytes(), deadline)
    try:
        due = games.due(game, seats, deadline)
        if due is not None:
            await games.store.schedule(new_id, due)
        await games.store.create(record, events, None, None)
    except GameExistsError:
        return False  # another seat asked first
    except StoreUnavailableError as exc:
        raise games.store_failed(exc) from exc
    log.info("game %s: rematch of %s created", new_id, finished.record.game_id)
    return True


def _with(values: tuple[Any, ...], index: int, value: Any) -> tuple[Any, ...]:
    return (*values[:index], value, *values[index + 1 :])
