"""The game repository: a game as this service stores it, loaded and committed.

A game is its engine state, its :class:`Seats` (the service's metadata) and
its events, all in the store. :class:`Games` loads one for a request (its id
judged, a missing or unreadable one answered) and commits a change with the
store's compare-and-set on the version, the game's due work scheduled first
(service.app.background plays it).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import logging
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson
from google.protobuf.timestamp_pb2 import Timestamp

import engine
from railyard_api import convert
from railyard_api import game_service_pb2 as pb
from railyard_api.fields import build
from service.app import errors as err
from service.app.errors import ServiceError
from service.ops.telemetry import Metrics
from service.settings import Settings
from service.store import Commit, GameRecord, Store, StoredEvent, StoreUnavailableError, now_ms

log = logging.getLogger("railyard")

_GAME_ID_CHARS: Final = frozenset("0123456789abcdef")
#: A game id's length: that many lowercase hex digits.
GAME_ID_LEN: Final = 20
#: A move whose commit lost a race is retried from a fresh load this many
#: times when the client gave no expectedVersion (with one, it is ABORTED at
#: once); background play goes again as often.
COMMIT_ATTEMPTS: Final = 8


@dataclass(frozen=True, slots=True)
class Table:
    """How a table seats people and spectators (CreateGame's TableSettings),
    and what JoinGame, StartGame and ListGames need to know of it."""

    visibility: int = pb.VISIBILITY_PRIVATE
    #: Plays open seats at StartGame, and seats given up during play.
    bot_level: int = pb.BOT_LEVEL_GREEDY
    spectators: int = pb.SPECTATORS_ALLOWED
    #: Versions a spectator's view is behind the game's (none once over).
    spectator_delay: int = 0
    #: Turn timeouts in a row that give a person's seat to the bot (0: never).
    max_timeouts: int = 0
    #: A private table's join code ("" for a public one).
    code: str = ""
    #: The SHA-256 of the host token (StartGame); "" when there is none.
    host_hash: str = ""
    #: CreateGame's time (ms since the epoch): ListGames' order.
    created_ms: int = 0

    def to_json(self) -> dict[str, object]:
        return {
            "visibility": self.visibility,
            "bot": self.bot_level,
            "spectators": self.spectators,
            "delay": self.spectator_delay,
            "maxTimeouts": self.max_timeouts,
            "code": self.code,
            "host": self.host_hash,
            "created": self.created_ms,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Table:
        return cls(
            int(raw["visibility"]),
            int(raw["bot"]),
            int(raw["spectators"]),
            int(raw["delay"]),
            int(raw["maxTimeouts"]),
            str(raw["code"]),
            str(raw["host"]),
            int(raw["created"]),
        )

    def settings_fields(self) -> dict[str, Any]:
        """GameView.table (the join code is never shown there)."""
        return {
            "visibility": self.visibility,
            "bot_level": self.bot_level,
            "spectators": self.spectators,
            "spectator_delay": self.spectator_delay,
            "max_timeouts": self.max_timeouts,
        }


#: A game created before tables: every seat taken, spectators allowed.
NO_TABLE: Final = Table(visibility=pb.VISIBILITY_PRIVATE)


@dataclass(frozen=True, slots=True)
class Seats:
    """The service's metadata of a game: names, bot levels, token hashes, and
    its table (open seats, whether it started, its settings)."""

    names: tuple[str, ...]
    bots: tuple[int, ...]
    token_hashes: tuple[str, ...]
    #: The seed came from CreateGame's caller (GameView.seedFromCaller).
    seed_from_caller: bool = False
    #: The tenant whose API key created the game (service.app.tenants), so that
    #: whatever path finishes it releases its place under the tenant's cap.
    tenant: str | None = None

    #: Seconds a person has for each move (0: no timer).
    turn_timeout: int = 0
    #: Per seat: open for someone to join (empty: none is).
    open: tuple[bool, ...] = ()
    #: False while the table waits for people (GAME_STATUS_WAITING).
    started: bool = True
    table: Table = NO_TABLE
    #: Per seat: the person's turn timeouts in a row (empty: none).
    timeouts: tuple[int, ...] = ()
    #: A finished game's rematch (its id), once asked for.
    rematch: str = ""
    #: A rematch's seats: per seat, the hash of the token of the finished
    #: game that claims this seat's new token ("" once claimed, or none).
    claims: tuple[str, ...] = ()

    def to_bytes(self) -> bytes:
        fields: dict[str, object] = {
            "names": self.names,
            "bots": self.bots,
            "tokens": self.token_hashes,
        }
        if self.seed_from_caller:
            fields["callerSeed"] = True
        if self.tenant is not None:
            fields["tenant"] = self.tenant

        if self.turn_timeout:
            fields["turnTimeout"] = self.turn_timeout
        if any(self.open):
            fields["open"] = self.open
        if not self.started:
            fields["waiting"] = True
        if self.table is not NO_TABLE:
            fields["table"] = self.table.to_json()
        if any(self.timeouts):
            fields["timeouts"] = self.timeouts
        if self.rematch:
            fields["rematch"] = self.rematch
        if any(self.claims):
            fields["claims"] = self.claims
        return json.dumps(fields, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Seats:
        return _seats_of(data)

    def seat_of(self, token: str) -> int | None:
        """The seat whose token this is; every hash is compared, in constant time.

        A bot seat's stored hash is "": a SHA-256 hex digest is never "", so
        no token is ever a bot seat's (nor an open seat's, nor a seat given up)."""
        digest = hash_token(token)
        found = None
        for seat, stored in enumerate(self.token_hashes):
            if hmac.compare_digest(digest, stored):
                found = seat
        return found

    def is_host(self, token: str) -> bool:
        """Whether ``token`` is the table's host token."""
        host = self.table.host_hash
        return bool(host) and hmac.compare_digest(hash_token(token), host)

    def is_open(self, seat: int) -> bool:
        return bool(self.open) and self.open[seat]

    def open_seats(self) -> list[int]:
        return [seat for seat, is_open in enumerate(self.open) if is_open]


@functools.lru_cache(maxsize=4096)
def _seats_of(data: bytes) -> Seats:
    # Parsed once per distinct metadata (it changes only when a seat does).
    raw = json.loads(data)
    table = raw.get("table")
    return Seats(
        tuple(raw["names"]),
        tuple(raw["bots"]),
        tuple(raw["tokens"]),
        bool(raw.get("callerSeed", False)),  # absent in games stored before it
        raw.get("tenant"),
        int(raw.get("turnTimeout", 0)),
        tuple(bool(o) for o in raw.get("open", ())),
        not raw.get("waiting", False),
        NO_TABLE if table is None else Table.from_json(table),
        tuple(int(t) for t in raw.get("timeouts", ())),
        str(raw.get("rematch", "")),
        tuple(str(c) for c in raw.get("claims", ())),
    )


def hash_token(token: str) -> str:
    """How a seat's token is kept at rest: its SHA-256 hex digest."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_seat_token() -> str:
    """A seat's token: 192 random bits, base64url, never starting with "-",
    which a command line would read as an option (``railyard-bot --token
    -x...`` failed once in a test)."""
    while True:
        token = secrets.token_urlsafe(24)
        if token[0] != "-":
            return token


class Loaded:
    """A game as loaded for one request."""

    __slots__ = ("deadline_ms", "game", "record", "seats")

    def __init__(self, record: GameRecord) -> None:
        """Raises :class:`engine.CorruptStateError` for a record this service
        did not write (Games.load answers it)."""
        self.record = record
        #: The turn's deadline as the view shows it: the record's, until a
        #: move sets the next one.
        self.deadline_ms = record.deadline_ms
        try:
            self.seats = Seats.from_bytes(record.meta)
            self.game = engine.load_dict(orjson.loads(record.state))
        except (ValueError, KeyError, TypeError) as exc:  # orjson's and json's errors included
            if isinstance(exc, engine.CorruptStateError):
                raise
            raise engine.CorruptStateError(f"{type(exc).__name__}: {exc}") from exc

    @classmethod
    def new(cls, game_id: str, game: engine.GameState, seats: Seats, deadline_ms: int) -> Loaded:
        """A game not stored yet (CreateGame's answer is viewed from it)."""
        loaded = cls.__new__(cls)
        loaded.record = GameRecord(game_id, game.version, b"", b"", deadline_ms)
        loaded.deadline_ms = deadline_ms
        loaded.seats = seats
        loaded.game = game
        return loaded

    def view_fields(self, seat: int | None, *, delay: int = 0) -> dict[str, Any]:
        """The game as ``seat`` sees it (None: a spectator), the turn's timer
        included: a GameView's fields (railyard_api.fields), which each
        transport writes out. ``delay``: a spectator's view as it was that
        many versions ago (TableSettings.spectator_delay)."""
        seats = self.seats
        game = self.game
        shown = min(delay, game.version) if delay and not game.over else 0
        if shown:
            game = _replayed(self.record.game_id, game, game.version - shown)
        # A waiting table hides every hand: its deal is made, and a seat
        # taken and given up again must not show one hand after another.
        view = engine.build_view(game, seat if seats.started else None)
        fields = convert.view_fields(
            view, self.record.game_id, seats.names, seats.bots, seats.seed_from_caller
        )
        if seats.turn_timeout:
            fields["turn_timeout_seconds"] = seats.turn_timeout
            if self.deadline_ms and not game.over and seats.started and not shown:
                deadline = Timestamp()
                deadline.FromMilliseconds(self.deadline_ms)
                fields["turn_deadline"] = deadline
        if seats.table is not NO_TABLE:
            fields["table"] = seats.table.settings_fields()
        if any(seats.open):
            for player in fields["players"]:
                player["open"] = seats.open[player["seat"]]
        if not seats.started:
            fields["status"] = pb.GAME_STATUS_WAITING
            fields["current_seat"] = None
            fields["turn"] = None
            fields["viewer_seat"] = seat
        if seats.rematch:
            fields["rematch_game_id"] = seats.rematch
        if shown:
            fields["delayed_by"] = shown
        return fields

    def view(self, seat: int | None) -> pb.GameView:
        """:meth:`view_fields` as a message."""
        return build(pb.GameView(), self.view_fields(seat))


#: Games replayed to an earlier version for delayed spectators, by (game id,
#: version): every spectator of a table sees the same few versions, and a
#: replay costs a move per version.
_REPLAYED: OrderedDict[tuple[str, int], engine.GameState] = OrderedDict()
_REPLAYED_SIZE: Final = 256


def _replayed(game_id: str, game: engine.GameState, version: int) -> engine.GameState:
    """``game`` as it was at ``version`` (never changed by its caller)."""
    key = (game_id, version)
    found = _REPLAYED.get(key)
    if found is None or found.seed != game.seed:
        found = engine.replay(game.rules, game.players, game.seed, game.history[:version])
        _REPLAYED[key] = found
        if len(_REPLAYED) > _REPLAYED_SIZE:
            _REPLAYED.popitem(last=False)
    else:
        _REPLAYED.move_to_end(key)
    return found


def state_bytes(game: engine.GameState) -> bytes:
    """A game's state as stored."""
    # The engine's own JSON, written by orjson: far cheaper than json.
    return orjson.dumps(game.to_dict())


def next_seq(out: Sequence[StoredEvent], version: int) -> int:
    """How many events of ``version`` ``out`` ends with (versions only grow
    along it): the next one is numbered one more (events of a version
    count from 1)."""
    seq = 0
    while seq < len(out) and out[-1 - seq].version == version:
        seq += 1
    return seq


def append_events(
    out: list[StoredEvent],
    events: Sequence[engine.Event],
    version: int,
    messages: list[pb.GameEvent] | None = None,
) -> None:
    """Number the events of one version from 1 (after any already there);
    ``messages`` also receives each event's (unfiltered) message."""
    seq = next_seq(out, version)
    for event in events:
        seq += 1
        message = convert.event_to_proto(event, version)
        out.append(StoredEvent(version, seq, message.SerializeToString()))
        if messages is not None:
            messages.append(message)


class Games:
    """The stored games: load, commit with a version check, read events."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        metrics: Metrics,
        committed: Callable[[str, Seats, engine.GameState, Sequence[StoredEvent]], Awaitable[None]],
    ) -> None:
        """``committed``: called after every commit that succeeded, with the
        game and the events it appended (GameApp.committed: a finished game's
        count and tenant place, webhooks)."""
        self.store = store
        self.settings = settings
        self.metrics = metrics
        self._committed = committed

    def store_failed(self, exc: StoreUnavailableError) -> ServiceError:
        """The API error for a store failure, counted."""
        self.metrics.store_unavailable.inc()
        return err.from_store(exc)

    async def load(self, game_id: str) -> Loaded:
        """The game, or GAME_NOT_FOUND (an id of another shape included),
        UNAVAILABLE, or an unreadable state (counted and logged)."""
        if len(game_id) != GAME_ID_LEN or not set(game_id) <= _GAME_ID_CHARS:
            raise err.not_found(game_id)
        try:
            record = await self.store.load(game_id)
        except StoreUnavailableError as exc:
            raise self.store_failed(exc) from exc
        if record is None:
            raise err.not_found(game_id)
        try:
            return Loaded(record)
        except engine.CorruptStateError as exc:
            # Not transient: a retry would fail the same way. The operator
            # must look, so it is logged with the game and counted.
            log.error("game %s: the stored state cannot be read: %s", game_id, exc)
            self.metrics.corrupt_states.inc()
            raise err.corrupt_state(game_id) from exc

    async def read_events(self, game_id: str, after_version: int) -> list[StoredEvent]:
        try:
            return await self.store.read_events(game_id, after_version)
        except StoreUnavailableError as exc:
            raise self.store_failed(exc) from exc

    def plays_in_background(self, seats: Seats) -> bool:
        """A game of bots only that the service plays in the background
        (``bots_only = "background"``), not in the request."""
        return all(seats.bots) and self.settings.bots_only == "background"

    @staticmethod
    def deadline(game: engine.GameState, seats: Seats) -> int:
        """The deadline (ms since the epoch) of the move ``game`` waits for,
        from now: each person's move has the whole timeout; 0 without a timer,
        on a bot's turn and once over."""
        if (
            not seats.turn_timeout
            or game.over
            or not seats.started
            or seats.bots[game.current_seat]
        ):
            return 0
        return now_ms() + seats.turn_timeout * 1000

    def due(self, game: engine.GameState, seats: Seats, deadline_ms: int) -> int | None:
        """When the service next has a move to play in ``game`` (ms since the
        epoch): now for a game of bots only played in the background, the
        deadline of a timed person's move, else never (``None``)."""
        if game.over or not seats.started:
            return None
        if self.plays_in_background(seats):
            return now_ms()
        return deadline_ms or None

    async def commit(
        self,
        game_id: str,
        base: int,
        game: engine.GameState,
        seats: Seats,
        events: Sequence[StoredEvent],
        request_key: str | None = None,
        response: bytes | None = None,
        *,
        deadline: int | None = None,
        schedule: bool = True,
        rev: int = 0,
        new_seats: Seats | None = None,
    ) -> Commit:
        """Every change to a stored game goes through here (a person's move,
        background play, a timed-out turn): the store's compare-and-set on
        ``base``, the next turn's deadline written with it, and its due work
        scheduled first (``schedule``; a background claimant that holds the
        game's entry reschedules it itself). Scheduled before the commit, so
        that no crash between the two loses it: an entry whose commit then
        failed only makes a replica look at the game once for nothing.
        ``deadline``: the one an answer already shows (else from now).
        ``rev``: the revision of the seats the change was made from; with
        ``new_seats``, the seats change too (service.app.tables)."""
        if new_seats is not None:
            seats = new_seats
        if deadline is None:
            deadline = self.deadline(game, seats)
        due = self.due(game, seats, deadline)
        if schedule and due is not None:
            await self.store.schedule(game_id, due)
        result = await self.store.commit(
            game_id,
            base,
            game.version,
            state_bytes(game),
            events,
            request_key,
            response,
            deadline,
            rev=rev,
            meta=None if new_seats is None else new_seats.to_bytes(),
        )
        if result is Commit.OK:
            await self._committed(game_id, seats, game, events)
        return result
