"""The application layer: the one implementation both transports call.

Each call loads the game from the store, asks the engine, and saves with one
atomic compare-and-set on the version; nothing about a game is kept in this
process between requests. gRPC handlers and HTTP routes only translate their
wire into these calls and :class:`~service.app.errors.ServiceError` back out.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import hmac
import json
import logging
import secrets
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

import grpc
import orjson
from opentelemetry.sdk.metrics.export import MetricReader
from opentelemetry.trace import TracerProvider

import engine
from service.api import game_service_pb2 as pb
from service.app import convert
from service.app import errors as err
from service.app.bots import ALL_BOTS_BUDGET, BotPlayer, BotsBusyError, BotWorkExceededError
from service.app.errors import ServiceError
from service.app.history import FinishedLogs, ReadSlots
from service.app.identity import TrustedProxies, rate_key
from service.app.ratelimit import TokenBuckets
from service.app.tenants import seat_token_of
from service.ops import tracing
from service.ops.telemetry import Metrics
from service.settings import Settings
from service.store import (
    Commit,
    GameExistsError,
    GameRecord,
    OutcomeUnknownError,
    Reservation,
    Store,
    StoredEvent,
    StoreUnavailableError,
    now_ms,
)

log = logging.getLogger("railyard")

MAX_REQUEST_ID: Final = 64
MAX_NAME: Final = 64
#: API.md: a caller's seed is at most 128 characters (a megabyte of seed was
#: stored with the game and sent in every view once it was over).
MAX_SEED: Final = 128
_GAME_ID_CHARS: Final = frozenset("0123456789abcdef")
_GAME_ID_LEN: Final = 20
# A move whose commit lost a race is retried from a fresh load this many times
# when the client gave no expectedVersion (with one, it is ABORTED at once).
_COMMIT_ATTEMPTS: Final = 8
#: Milliseconds a new game's due entry, written before the game, waits before
#: any replica may claim it (GameApp._create): longer than a create takes.
CREATE_GRACE_MS: Final = 5000
#: CreateGame's turnTimeoutSeconds: at most a day (0: no timer).
MAX_TURN_TIMEOUT: Final = 86400
#: What the service plays for a person whose time ran out (README "Bots").
TIMED_OUT_LEVEL: Final = "greedy"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: the bearer token (if any), the client's address
    (through trusted proxies only: service.app.identity), for rate limits, and
    the operator's API key it sent (``x-api-key``; service.app.tenants). Its
    repr leaves the credentials out: a caller is safe to log."""

    token: str | None = field(default=None, repr=False)
    address: str = ""
    api_key: str | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class Seats:
    """The service's metadata of a game: names, bot levels, token hashes."""

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
        return json.dumps(fields, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Seats:
        return _seats_of(data)

    def seat_of(self, token: str) -> int | None:
        """The seat whose token this is; every hash is compared, in constant time.

        A bot seat's stored hash is "": a SHA-256 hex digest is never "", so
        no token is ever a bot seat's."""
        digest = _hash_token(token)
        found = None
        for seat, stored in enumerate(self.token_hashes):
            if hmac.compare_digest(digest, stored):
                found = seat
        return found


@functools.lru_cache(maxsize=4096)
def _seats_of(data: bytes) -> Seats:
    # A game's seats never change after creation: parse each game's once.
    raw = json.loads(data)
    return Seats(
        tuple(raw["names"]),
        tuple(raw["bots"]),
        tuple(raw["tokens"]),
        bool(raw.get("callerSeed", False)),  # absent in games stored before it
        raw.get("tenant"),
        int(raw.get("turnTimeout", 0)),
    )


def _hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class _Loaded:
    """A game as loaded for one request."""

    __slots__ = ("deadline_ms", "game", "record", "seats")

    def __init__(self, record: GameRecord) -> None:
        """Raises :class:`engine.CorruptStateError` for a record this service
        did not write (GameApp._load answers it)."""
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


#: Bot decisions or moves handled between two turns of the event loop.
_SLICE: Final = 200

#: Marks a remembered ApplyMove answer that starts with its request's
#: fingerprint (32 bytes). A serialized ApplyMoveResponse never starts with a
#: zero byte (field number 0 does not exist), so older entries are told apart.
_REMEMBERED: Final = b"\x00"


def _fingerprint(request: pb.ApplyMoveRequest) -> bytes:
    """What a retry must repeat: the move and the expectedVersion (the same
    from either transport, whatever the JSON looked like)."""
    digest = hashlib.sha256(request.move.SerializeToString(deterministic=True))
    if request.HasField("expected_version"):
        digest.update(b"\0%d" % request.expected_version)
    return digest.digest()


class GameApp:
    """create, view, legal moves, apply, watch, log, rulesets."""

    def __init__(
        self,
        store: Store,
        settings: Settings | None = None,
        *,
        tracer_provider: TracerProvider | None = None,
        metric_readers: Sequence[MetricReader] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``clock``: what the kept logs of finished games age by (seconds)."""
        #: What traces this app's calls (service.ops.tracing): ``tracer_provider``,
        #: else the process's, else None (tracing off).
        self.tracer_provider = tracing.active_provider(tracer_provider)
        self.store = tracing.traced_store(store, self.tracer_provider)
        self.settings = settings or Settings()
        self._limiter = TokenBuckets()
        #: Whose forwarding headers name the client (service.app.identity).
        self.proxies = TrustedProxies.parse(self.settings.trusted_proxies)
        self.bots = BotPlayer(self.settings.bot_processes, self.settings.bot_cpu_limit)
        self.metrics = Metrics(metric_readers, traced=self.tracer_provider is not None)
        #: WatchGame streams open now, both transports (Settings.max_watchers).
        self.watching = 0
        #: Finished games' logs, and the cap on whole-history reads of the
        #: store (Settings.max_log_reads): service.app.history.
        self.finished_logs = FinishedLogs(clock=clock)
        self.history_reads = ReadSlots(self.settings.max_log_reads)
        #: The operator's API keys: with any, CreateGame needs one (service.app.tenants).
        self.api_keys = self.settings.api_key_set()

    def close(self) -> None:
        """Stop the bots' worker processes and the metric readers (the store
        is closed by its owner)."""
        self.bots.close()
        self.metrics.close()

    # ------------------------------------------------------------ helpers

    def _store_failed(self, exc: StoreUnavailableError) -> ServiceError:
        """The API error for a store failure, counted."""
        self.metrics.store_unavailable.inc()
        return err.from_store(exc)

    async def _admit(self, key: str) -> None:
        """RESOURCE_EXHAUSTED when the bucket ``key`` is over ``rate_limit``:
        in this replica, or, with ``rate_limit_scope = "store"``, across every
        replica sharing the store."""
        rate = self.settings.rate_limit
        if rate <= 0:
            return
        burst = self.settings.rate_burst
        if self.settings.rate_limit_scope == "store":
            try:
                wait = await self.store.take(key, rate, burst)
            except StoreUnavailableError:
                return  # admitted: the call's own use of the store answers 503
        else:
            wait = self._limiter.take(key, rate, burst)
        if wait > 0:
            raise err.rate_limited(wait)

    async def _admit_address(self, caller: Caller) -> None:
        """Charge a call that names no verified seat to the caller's address:
        an invented token costs nothing, an address does."""
        await self._admit(rate_key(caller.address))

    async def _tenant_of(self, caller: Caller) -> str | None:
        """The tenant of a CreateGame's API key, its bucket charged; None
        where no key is configured (the open embedded default). No key is
        UNAUTHENTICATED, a key of no tenant PERMISSION_DENIED BAD_API_KEY,
        an empty bucket RESOURCE_EXHAUSTED RATE_LIMITED."""
        if not self.api_keys.required:
            return None
        if not caller.api_key:
            raise err.api_key_required()
        tenant = self.api_keys.tenant_of(caller.api_key)
        if tenant is None:
            raise err.bad_api_key()
        rate = self.settings.tenant_create_rate
        if rate > 0:
            # In the store whatever rate_limit_scope says: a tenant's limit is
            # the operator's contract with it, not a replica's self-defence.
            try:
                wait = await self.store.take(
                    f"tenant:{tenant}", rate, self.settings.tenant_create_burst
                )
            except StoreUnavailableError:
                wait = 0.0  # admitted: the create's own use of the store answers 503
            if wait > 0:
                raise err.tenant_rate_limited(tenant, wait)
        return tenant

    async def _reserve_live(self, tenant: str | None, game_id: str) -> Reservation | None:
        """Count the game under its tenant's cap (None: no tenant), or refuse
        it: RESOURCE_EXHAUSTED TOO_MANY_GAMES."""
        if tenant is None:
            return None
        cap = self.settings.tenant_max_live_games
        try:
            reservation = await self.store.reserve_live(tenant, game_id, cap)
        except StoreUnavailableError as exc:
            raise self._store_failed(exc) from exc
        if reservation is Reservation.FULL:
            raise err.too_many_games(tenant, cap)
        return reservation

    async def _release_live(self, tenant: str, game_id: str) -> None:
        """No longer count the game under its tenant's cap. A store failure
        here fails nothing that was done: it is logged, and the game stops
        counting when its place expires (game_ttl after its creation)."""
        try:
            await self.store.release_live(tenant, game_id)
        except StoreUnavailableError as exc:
            self.metrics.store_unavailable.inc()
            log.warning(
                "game %s: its place under %s's cap was not released: %s", game_id, tenant, exc
            )

    async def game_finished(self, game_id: str, seats: Seats) -> None:
        """A game's finishing commit is done: counted, and its place under
        its tenant's live-game cap released. Every path that commits a
        finished game calls this once, after the commit succeeded: a person's
        move and its bots (ApplyMove), a game of bots finished by CreateGame,
        and the service's own background play."""
        self.metrics.games_finished.inc()
        if seats.tenant is not None:
            await self._release_live(seats.tenant, game_id)

    async def _replayed_for(
        self, game_id: str, remembered: bytes, caller: Caller, tenant: str | None
    ) -> tuple[pb.CreateGameResponse, bool]:
        """A repeated CreateGame's answer, and whether its game is in
        progress. With a tenant, the seat tokens are derived again from the
        caller's key (service.app.tenants.seat_token_of) and handed back only if
        they are the game's: a key that created the game recovers them, any
        other (a rotated key of the same tenant) gets none."""
        response = _replayed(remembered)
        if tenant is None or not caller.api_key:
            return response, True  # no token either way; the count is not ours to settle
        loaded = await self._load(game_id)
        tokens = {
            seat: seat_token_of(caller.api_key, game_id, seat)
            for seat, stored in enumerate(loaded.seats.token_hashes)
            if stored
        }
        if tokens and all(
            hmac.compare_digest(_hash_token(t), loaded.seats.token_hashes[s])
            for s, t in tokens.items()
        ):
            response.seats.extend(pb.SeatToken(seat=s, token=t) for s, t in tokens.items())
        return response, not loaded.game.over

    async def _seated(
        self, game_id: str, caller: Caller, required: bool
    ) -> tuple[_Loaded, int | None]:
        """The game and the caller's seat (None: a spectator), the call
        charged to that seat once its token is verified, else to the caller's
        address: a spectator, a call with no token where one is required
        (UNAUTHENTICATED), an unknown game, a token of no seat."""
        tracing.note({tracing.GAME_ID: game_id})
        log.debug(
            "game %s: a call from %s %s a seat token",
            game_id,
            caller.address or "an unknown address",
            "with" if caller.token else "without",
        )
        if not caller.token:
            await self._admit_address(caller)
            if required:
                raise err.unauthenticated()
            return await self._load(game_id), None
        try:
            loaded = await self._load(game_id)
            seat = self._seat(loaded, caller, required)
        except ServiceError as exc:
            if exc.reason in ("GAME_NOT_FOUND", "BAD_SEAT_TOKEN"):
                await self._admit_address(caller)  # a 429 instead, once it runs dry
            raise
        if seat is not None:
            tracing.note({tracing.SEAT: seat})
        await self._admit(f"seat:{game_id}:{seat}")
        return loaded, seat

    async def _load(self, game_id: str) -> _Loaded:
        if len(game_id) != _GAME_ID_LEN or not set(game_id) <= _GAME_ID_CHARS:
            raise err.not_found(game_id)
        try:
            record = await self.store.load(game_id)
        except StoreUnavailableError as exc:
            raise self._store_failed(exc) from exc
        if record is None:
            raise err.not_found(game_id)
        try:
            return _Loaded(record)
        except engine.CorruptStateError as exc:
            # Not transient: a retry would fail the same way. The operator
            # must look, so it is logged with the game and counted.
            log.error("game %s: the stored state cannot be read: %s", game_id, exc)
            self.metrics.corrupt_states.inc()
            raise err.corrupt_state(game_id) from exc

    @staticmethod
    def _seat(loaded: _Loaded, caller: Caller, required: bool) -> int | None:
        if caller.token is None or caller.token == "":
            if required:
                raise err.unauthenticated()
            return None
        seat = loaded.seats.seat_of(caller.token)
        if seat is None:
            raise err.bad_token(loaded.record.game_id)
        return seat

    @staticmethod
    def _view(loaded: _Loaded, seat: int | None, into: pb.GameView | None = None) -> pb.GameView:
        view = engine.build_view(loaded.game, seat)
        seats = loaded.seats
        message = convert.view_to_proto(
            view, loaded.record.game_id, seats.names, seats.bots, seats.seed_from_caller, into
        )
        if seats.turn_timeout:
            message.turn_timeout_seconds = seats.turn_timeout
            if loaded.deadline_ms and not loaded.game.over:
                message.turn_deadline.FromMilliseconds(loaded.deadline_ms)
        return message

    async def _play_bots(
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
        # game's 2,000 duration records alone held it for tens of ms).
        for n, (level, seconds) in enumerate(turns.decisions, 1):
            self.metrics.bot_decision(level, seconds)
            if n % _SLICE == 0:
                await asyncio.sleep(0)
        for n, move in enumerate(turns.moves, 1):
            seq = _next_seq(out, move.version)
            out += [StoredEvent(move.version, seq + i, p) for i, p in enumerate(move.payloads, 1)]
            if messages is not None:
                messages += move.events()
            if n % _SLICE == 0:
                await asyncio.sleep(0)
        return game, len(turns.moves)

    def _plays_in_background(self, seats: Seats) -> bool:
        return all(seats.bots) and self.settings.bots_only == "background"

    @staticmethod
    def _deadline(game: engine.GameState, seats: Seats) -> int:
        """The deadline (ms since the epoch) of the move ``game`` waits for,
        from now: each person's move has the whole timeout; 0 without a timer,
        on a bot's turn and once over."""
        if not seats.turn_timeout or game.over or seats.bots[game.current_seat]:
            return 0
        return now_ms() + seats.turn_timeout * 1000

    def _due(self, game: engine.GameState, seats: Seats, deadline_ms: int) -> int | None:
        """When the service next has a move to play in ``game`` (ms since the
        epoch): now for a game of bots only played in the background, the
        deadline of a timed person's move, else never (``None``)."""
        if game.over:
            return None
        if self._plays_in_background(seats):
            return now_ms()
        return deadline_ms or None

    async def _commit(
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
    ) -> Commit:
        """Every change to a stored game goes through here (a person's move,
        background play, a timed-out turn): the store's compare-and-set on
        ``base``, the next turn's deadline written with it, and its due work
        scheduled first (``schedule``; a background claimant that holds the
        game's entry reschedules it itself). Scheduled before the commit, so
        that no crash between the two loses it: an entry whose commit then
        failed only makes a replica look at the game once for nothing.
        ``deadline``: the one an answer already shows (else from now)."""
        if deadline is None:
            deadline = self._deadline(game, seats)
        due = self._due(game, seats, deadline)
        if schedule and due is not None:
            await self.store.schedule(game_id, due)
        result = await self.store.commit(
            game_id,
            base,
            game.version,
            _state_bytes(game),
            events,
            request_key,
            response,
            deadline,
        )
        if result is Commit.OK and game.over:
            await self.game_finished(game_id, seats)
        return result

    @staticmethod
    def _check_request_id(request_id: str) -> None:
        if len(request_id) > MAX_REQUEST_ID:
            raise err.invalid(f"requestId is longer than {MAX_REQUEST_ID} characters")

    # ------------------------------------------------------------ calls

    async def create_game(
        self, request: pb.CreateGameRequest, caller: Caller
    ) -> pb.CreateGameResponse:
        log.debug(
            "CreateGame from %s %s an API key",
            caller.address or "an unknown address",
            "with" if caller.api_key else "without",
        )
        await self._admit_address(caller)  # a new game has no seat yet: its creator's address
        tenant = await self._tenant_of(caller)  # 401 / 403 before judging the body
        self._check_request_id(request.request_id)
        players = request.players
        if not players:
            raise err.invalid("players is empty: give one entry per seat", rule="MT-SET-2")
        if len(players) > engine.MAX_PLAYERS:  # before any work per player
            # The most any game seats; each game's rules refuse more than its
            # own (MT-SET-2: 14; CL-SET-1: what the deal fits).
            raise err.invalid(
                f"players has {len(players)} entries: no game has more than "
                f"{engine.MAX_PLAYERS} players",
                field="players",
            )
        if request.seed and self.settings.caller_seeds == "deny":
            # API.md: an operator may refuse caller seeds, whose chooser can
            # compute every hand (MT-FAIR-1).
            raise err.invalid(
                "seed is refused here: this service deals every game from a seed of its own "
                "(--caller-seeds deny); leave seed out",
                field="seed",
            )
        if len(request.seed) > MAX_SEED:
            raise err.invalid(
                f"seed is {len(request.seed)} characters long: at most {MAX_SEED}", field="seed"
            )
        timeout = request.turn_timeout_seconds
        if timeout > MAX_TURN_TIMEOUT:
            raise err.invalid(
                f"turnTimeoutSeconds is {timeout}: at most {MAX_TURN_TIMEOUT} (a day); "
                "0 or absent: no timer",
                field="turnTimeoutSeconds",
            )
        for i, player in enumerate(players):
            if len(player.display_name) > MAX_NAME:
                raise err.invalid(f"players[{i}].displayName is longer than {MAX_NAME} characters")
            if player.bot not in pb.BotLevel.values():
                raise err.invalid(f"players[{i}].bot {player.bot} is not a bot level")
        try:
            ruleset = convert.ruleset_from_proto(request.ruleset)
            seed = request.seed or secrets.token_hex(16)
            game = engine.new_game(ruleset, len(players), seed)
        except engine.RailyardError as exc:
            raise err.from_engine(exc) from exc
        key: str | None = None
        if request.request_id:
            # A retry must land on the same game: its id follows from the
            # request, and from its tenant, so that another tenant's same
            # body and id make a game of their own.
            scope = b"create\0" if tenant is None else b"create\0tenant\0%s\0" % tenant.encode()
            digest = hashlib.sha256(scope + request.SerializeToString(deterministic=True))
            game_id = digest.hexdigest()[:_GAME_ID_LEN]
            key = f"create:{request.request_id}"
            if tenant is not None:
                key = f"create:{tenant}:{request.request_id}"
            # A retry answered before its bots play again: a game of bots only
            # would otherwise be replayed whole (seconds of worker CPU) for
            # the answer the store already holds.
            try:
                remembered = await self.store.recall(game_id, key)
            except StoreUnavailableError as exc:
                raise self._store_failed(exc) from exc
            if remembered is not None:
                return (await self._replayed_for(game_id, remembered, caller, tenant))[0]
        else:
            game_id = secrets.token_hex(_GAME_ID_LEN // 2)
        place = _Place(tenant, await self._reserve_live(tenant, game_id))
        try:
            return await self._create(request, caller, game, game_id, key, place)
        finally:
            # A place this request took and its game does not keep (refused,
            # nothing stored) is given back, however the request ended.
            if place.reservation is Reservation.ADDED and not place.counted:
                assert tenant is not None
                await self._release_live(tenant, game_id)

    async def _create(
        self,
        request: pb.CreateGameRequest,
        caller: Caller,
        game: engine.GameState,
        game_id: str,
        key: str | None,
        place: _Place,
    ) -> pb.CreateGameResponse:
        """CreateGame once the request is judged and the game dealt: seats,
        the bots' first turns, the store; ``place.counted`` set where the
        game keeps its place under the tenant's cap."""
        players = request.players
        # A token for each person's seat only (192 random bits each): a bot
        # seat's token would show its creator that bot's hand. A bot seat's
        # stored hash is "", which Seats.seat_of never matches: it compares
        # SHA-256 hex digests, and a digest is never "".
        # Under an API key, derived from it (service.app.tenants): the same key's
        # replay gets them back, no other caller can compute them.
        api_key = caller.api_key if place.tenant is not None else None
        tokens = {
            i: _seat_token() if api_key is None else seat_token_of(api_key, game_id, i)
            for i, p in enumerate(players)
            if not p.bot
        }
        seats = Seats(
            names=tuple(p.display_name or f"Player {i + 1}" for i, p in enumerate(players)),
            bots=tuple(int(p.bot) for p in players),
            token_hashes=tuple(
                _hash_token(tokens[i]) if i in tokens else "" for i in range(len(players))
            ),
            seed_from_caller=bool(request.seed),
            tenant=place.tenant,
            turn_timeout=request.turn_timeout_seconds,  # (judged by create_game)
        )
        events: list[StoredEvent] = []
        _append(events, game.opening_events, 0)
        bot_moves = 0
        if not self._plays_in_background(seats):
            # (Mixed games: the bots before the first person, as after a move.)
            game, bot_moves = await self._play_bots(game, seats.bots, events, creating=True)
        deadline = self._deadline(game, seats)
        loaded = _Loaded.__new__(_Loaded)
        loaded.record = GameRecord(game_id, game.version, b"", b"", deadline)
        loaded.deadline_ms = deadline
        loaded.seats = seats
        loaded.game = game
        response = pb.CreateGameResponse(
            game=self._view(loaded, None),
            seats=[pb.SeatToken(seat=i, token=t) for i, t in tokens.items()],
        )
        record = GameRecord(game_id, game.version, _state_bytes(game), seats.to_bytes(), deadline)
        # Remembered without its tokens: a request id is no secret (anyone
        # can send the same body and id), so a replay must not hand out
        # seats, and tokens are at rest only as hashes (in the seats). Under
        # an API key, only that key's replay derives them again.
        payload = pb.CreateGameResponse(game=response.game).SerializeToString()
        try:
            due = self._due(game, seats, deadline)
            if due is not None:
                # Before the game exists: a crash between the two leaves an
                # entry of no game (dropped when claimed), never a game that
                # nobody plays. Not due before CREATE_GRACE_MS, though: a
                # replica claiming it while the create is on its way would find
                # no game and drop the entry of a game about to exist (a game of
                # bots only was once never played so). Made due at its real
                # time once the game is stored, below.
                await self.store.schedule(game_id, max(due, now_ms() + CREATE_GRACE_MS))
            remembered = await self.store.create(record, events, key, payload)
        except OutcomeUnknownError as exc:
            place.counted = True  # it may have been created: its retry finds out
            raise self._store_failed(exc) from exc
        except StoreUnavailableError as exc:
            raise self._store_failed(exc) from exc
        except GameExistsError as exc:
            # The id follows from the request: this request created the game
            # more than request_ttl ago, and its answer (the seat tokens) is
            # no longer kept.
            raise err.invalid(
                f"requestId {request.request_id!r} created game {game_id} more than "
                f"{self.settings.request_ttl:g} s ago; that answer is no longer kept: "
                "give a new request a new id",
                field="requestId",
                gameId=game_id,
            ) from exc
        if remembered is not None:
            # A concurrent twin of this request created it first.
            replayed, place.counted = await self._replayed_for(
                game_id, remembered, caller, place.tenant
            )
            return replayed
        place.counted = True
        if due is not None and due < now_ms() + CREATE_GRACE_MS:
            try:
                await self.store.schedule(game_id, due)
            except StoreUnavailableError as exc:
                # Created: the grace entry plays it a few seconds late.
                log.warning("game %s: its due work waits for the grace entry: %s", game_id, exc)
        log.info(
            "game %s created: %d players, %s%s",
            game_id,
            len(players),
            game.rules.preset,
            "" if place.tenant is None else f", API key {place.tenant}",
        )
        self.metrics.games_created.inc()
        self.metrics.bot_moves.inc(bot_moves)
        if game.over:  # (a game of bots only, played here: bots_only = "request")
            await self.game_finished(game_id, seats)
        return response

    async def get_game(self, game_id: str, caller: Caller) -> pb.GameView:
        loaded, seat = await self._seated(game_id, caller, required=False)
        return self._view(loaded, seat)

    async def list_legal_moves(self, game_id: str, caller: Caller) -> pb.ListLegalMovesResponse:
        loaded, seat = await self._seated(game_id, caller, required=True)
        game = loaded.game
        response = pb.ListLegalMovesResponse(version=game.version)
        if not game.over and game.current_seat == seat:
            for move in game.legal_moves():
                response.moves.add(move=convert.move_to_proto(move), notation=str(move))
        return response

    async def apply_move(
        self, request: pb.ApplyMoveRequest, caller: Caller
    ) -> pb.ApplyMoveResponse:
        if not caller.token:
            await self._admit_address(caller)
            raise err.unauthenticated()  # before judging the body: 401 comes first
        self._check_request_id(request.request_id)
        if not request.HasField("move"):
            raise err.invalid("move is missing")
        # play, draw, pass, end_turn: the oneof's field (a refusal's span says
        # what was tried, before the engine judges it).
        tracing.note({tracing.MOVE_KIND: request.move.WhichOneof("action") or ""})
        move = convert.move_from_proto(request.move)
        expected = request.expected_version if request.HasField("expected_version") else None
        key: str | None = None
        fingerprint = _fingerprint(request) if request.request_id else b""
        for attempt in range(_COMMIT_ATTEMPTS):
            if attempt == 0:  # charged to the seat once, not per commit attempt
                loaded, seat = await self._seated(request.game_id, caller, required=True)
            else:
                loaded = await self._load(request.game_id)
                seat = self._seat(loaded, caller, required=True)
            assert seat is not None
            if request.request_id:
                key = f"move:{seat}:{request.request_id}"
                remembered = await self._recall(request, key, fingerprint)
                if remembered is not None:
                    return remembered
            base = loaded.record.version
            if expected is not None and expected != base:
                raise err.version_mismatch(expected, base)
            game = loaded.game
            try:
                moved = game.apply(move, seat=seat)
            except engine.RailyardError as exc:
                raise err.from_engine(exc) from exc
            events: list[StoredEvent] = []
            messages: list[pb.GameEvent] = []
            _append(events, moved, game.version, messages)
            game, bot_moves = await self._play_bots(game, loaded.seats.bots, events, messages)
            loaded.game = game  # (the state a bot worker sent back, if one played)
            deadline = self._deadline(game, loaded.seats)
            loaded.deadline_ms = deadline  # (for the answer's view)
            answer = pb.ApplyMoveResponse(events=[convert.redact(m, seat) for m in messages])
            self._view(loaded, seat, into=answer.game)
            try:
                result = await self._commit(
                    request.game_id,
                    base,
                    game,
                    loaded.seats,
                    events,
                    key,
                    # A retry must get these very bytes back: remember the
                    # message, after what the request asked for.
                    _REMEMBERED + fingerprint + answer.SerializeToString() if key else None,
                    deadline=deadline,
                )
            except StoreUnavailableError as exc:
                raise self._store_failed(exc) from exc
            if result is Commit.OK:
                self.metrics.person_moves.inc()
                self.metrics.bot_moves.inc(bot_moves)
                return answer
            if result is Commit.NOT_FOUND:
                raise err.not_found(request.game_id)
            self.metrics.commit_conflicts.inc()
            # Lost the race for this version: a retry of the same request may
            # have won it; otherwise refuse (expectedVersion given) or go again.
            if key is not None:
                remembered = await self._recall(request, key, fingerprint)
                if remembered is not None:
                    return remembered
            if expected is not None:
                current = await self._load(request.game_id)
                raise err.version_mismatch(expected, current.record.version)
        raise ServiceError(
            grpc.StatusCode.ABORTED,
            "VERSION_MISMATCH",
            "the game kept changing under this move; retry",
        )

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
        for _ in range(_COMMIT_ATTEMPTS):
            try:
                loaded = await self._load(game_id)
            except ServiceError as exc:
                if exc.reason == "GAME_NOT_FOUND":
                    return None  # expired (or the entry of a create that failed)
                raise
            game, seats, record = loaded.game, loaded.seats, loaded.record
            if game.over:
                return None
            events: list[StoredEvent] = []
            bot_moves = 0
            if self._plays_in_background(seats):
                game, bot_moves = await self._play_bots(game, seats.bots, events, background=True)
            elif record.deadline_ms and not seats.bots[game.current_seat]:
                if now_ms() < record.deadline_ms:
                    return record.deadline_ms  # moved in time (a spurious entry, or early)
                seat = game.current_seat
                self._play_timed_out(game, seat, events)
                game, bot_moves = await self._play_bots(game, seats.bots, events)
                log.info("game %s: seat %d timed out; played for it", game_id, seat)
            else:
                return None  # a person's turn without a timer: nothing is the service's
            deadline = self._deadline(game, seats)
            result = await self._commit(
                game_id, record.version, game, seats, events, deadline=deadline, schedule=False
            )
            if result is Commit.OK:
                self.metrics.bot_moves.inc(bot_moves)
                return self._due(game, seats, deadline)
            if result is Commit.NOT_FOUND:
                return None
            self.metrics.commit_conflicts.inc()  # a move or another claimant won: again
        return now_ms()

    @staticmethod
    def _play_timed_out(game: engine.GameState, seat: int, out: list[StoredEvent]) -> None:
        """Play ``seat``'s whole turn as the greedy bot would (README "Bots":
        what the service plays for a person out of time), after a
        ``turnTimedOut`` event at the version of its first move."""
        version = game.version + 1
        timed_out = pb.GameEvent(version=version, turn_timed_out=pb.TurnTimedOut(seat=seat))
        out.append(StoredEvent(version, 1, timed_out.SerializeToString()))
        while not game.over and game.current_seat == seat:
            view = engine.build_view(game, seat)
            move = engine.choose(TIMED_OUT_LEVEL, view, game.legal_moves(), engine.bot_key(view))
            _append(out, game.apply(move, seat=seat), game.version)

    async def _recall(
        self, request: pb.ApplyMoveRequest, key: str, fingerprint: bytes
    ) -> pb.ApplyMoveResponse | None:
        """The answer remembered for this request id, if any; refused when
        the id was first used for a different request (API.md: a *repeated*
        request gets the first answer; another move under a used id would
        otherwise get an answer that is not about it, and apply nothing)."""
        try:
            data = await self.store.recall(request.game_id, key)
        except StoreUnavailableError as exc:
            raise self._store_failed(exc) from exc
        if data is None:
            return None
        if data.startswith(_REMEMBERED):
            first, data = data[1:33], data[33:]
            if first != fingerprint:
                raise err.invalid(
                    f"requestId {request.request_id!r} was used for another move or "
                    "expectedVersion of this seat: give each new request a new id",
                    field="requestId",
                )
        # (Without the prefix: remembered by an older version, not checked.)
        # The remembered bytes are parsed: a retry's answer is then written by
        # the same code as the first one, so both transports repeat it exactly.
        return pb.ApplyMoveResponse.FromString(data)

    async def watch_game(
        self, game_id: str, after_version: int | None, caller: Caller
    ) -> AsyncGenerator[tuple[pb.GameEvent, ...] | None, None]:
        """A snapshot, the events after ``after_version``, then live events until
        the game ends. Yields the events of one version at a time (the snapshot
        alone first), and ``None`` after each quiet keep-alive period.

        Whole versions, because a client resumes by version (``afterVersion``,
        an SSE id is the version, API.md): a stream that stopped between two
        events of one version would make a resuming client miss the rest of
        it. A transport that ends a stream (a graceful shutdown) ends it
        between versions, and writes one version's events together.

        Refused with RESOURCE_EXHAUSTED (TOO_MANY_WATCHERS) before anything
        else when ``max_watchers`` streams are open already: before the
        snapshot, so HTTP answers a plain 429, not a stream that fails. So is
        a replay (``after_version`` below the game's version) that finds
        every history read slot taken (TOO_MANY_LOG_READS, service.app.history)."""
        if self.watching >= self.settings.max_watchers:
            raise err.too_many_watchers(self.settings.max_watchers)
        # Counted from here (no await since the check), released however it ends.
        self.watching += 1
        try:
            loaded, seat = await self._seated(game_id, caller, required=False)
            events = self._watch(game_id, loaded, seat, after_version)
            self.metrics.watches.inc()
            try:
                async for item in events:
                    yield item
            finally:
                self.metrics.watches.dec()
                await events.aclose()
        finally:
            self.watching -= 1

    async def _watch(
        self, game_id: str, loaded: _Loaded, seat: int | None, after_version: int | None
    ) -> AsyncGenerator[tuple[pb.GameEvent, ...] | None, None]:
        version = loaded.record.version
        # Stream ids are <version>-<seq> with seq from 1, so (v + 1, 0) is just
        # after every event of version v.
        position = ((version if after_version is None else max(after_version, -1)) + 1, 0)
        # The versions a resuming watcher missed, read before the snapshot is
        # given: a refused read (TOO_MANY_LOG_READS) or a store failure is
        # then the call's error, not a stream that opens and fails.
        replay = await self._history(loaded, position[0] - 1) if position[0] <= version else []
        yield (pb.GameEvent(version=version, snapshot=self._view(loaded, seat)),)
        if loaded.game.over and (after_version is None or after_version >= version):
            return
        while True:
            if replay:
                batch, replay = replay, []
            else:
                try:
                    batch = await self.store.wait_events(game_id, position, self.settings.keepalive)
                except StoreUnavailableError as exc:
                    raise self._store_failed(exc) from exc
            if not batch:
                try:
                    if await self.store.load(game_id) is None:
                        return  # expired while watched
                except StoreUnavailableError as exc:
                    raise self._store_failed(exc) from exc
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

    async def get_game_log(self, game_id: str, caller: Caller) -> pb.GetGameLogResponse:
        """The game's public log. The answer of a finished game is kept and
        shared by every caller (service.app.history): it must not be changed."""
        await self._admit_address(caller)  # the public log: no seat is involved
        tracing.note({tracing.GAME_ID: game_id})
        kept = self.finished_logs.get(game_id)
        log.debug("game %s: log %s", game_id, "kept" if kept else "read from the store")
        if kept is not None:
            return kept.response
        with self.history_reads.hold():
            loaded = await self._load(game_id)
            stored = await self._read_events(game_id, -1)
        response = self._log_of(loaded.game, stored)
        if loaded.game.over:  # (loaded before the read: no event came after it)
            self.finished_logs.put(game_id, stored, response)
        return response

    @staticmethod
    def _log_of(game: engine.GameState, stored: Sequence[StoredEvent]) -> pb.GetGameLogResponse:
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

    async def _read_events(self, game_id: str, after_version: int) -> list[StoredEvent]:
        try:
            return await self.store.read_events(game_id, after_version)
        except StoreUnavailableError as exc:
            raise self._store_failed(exc) from exc

    async def _history(self, loaded: _Loaded, after_version: int) -> list[StoredEvent]:
        """The events after ``after_version`` a resuming watcher missed: a
        finished game's from its kept log (read whole and kept on the first
        replay), else read within a history read slot."""
        game_id = loaded.record.game_id
        kept = self.finished_logs.get(game_id)
        if kept is None:
            over = loaded.game.over  # (loaded before the read: no event came after it)
            with self.history_reads.hold():
                stored = await self._read_events(game_id, -1 if over else after_version)
            if not over:
                return stored
            kept = self.finished_logs.put(game_id, stored, self._log_of(loaded.game, stored))
        return kept.after(after_version)

    def list_rulesets(self) -> pb.ListRulesetsResponse:
        return pb.ListRulesetsResponse(
            rulesets=[convert.ruleset_to_proto(r) for r in engine.PRESETS.values()]
        )

    async def ready(self) -> bool:
        """Whether the store answers (readiness, health SERVING)."""
        try:
            await self.store.ping()
        except StoreUnavailableError:
            return False
        return True


@dataclass(slots=True)
class _Place:
    """A new game's place under its tenant's live-game cap, as CreateGame holds it."""

    tenant: str | None
    reservation: Reservation | None
    #: The tenant's count keeps the game (created, or maybe created).
    counted: bool = False


def _replayed(remembered: bytes) -> pb.CreateGameResponse:
    """The answer to a repeated CreateGame: the game as first created, no tokens."""
    response = pb.CreateGameResponse.FromString(remembered)
    response.replayed = True
    return response


def _state_bytes(game: engine.GameState) -> bytes:
    # The engine's own JSON, written by orjson: a tenth of the cost of json.
    return orjson.dumps(game.to_dict())


def _next_seq(out: Sequence[StoredEvent], version: int) -> int:
    """How many events of ``version`` ``out`` ends with (versions only grow
    along it): the next one is numbered one more (events of a version
    count from 1)."""
    seq = 0
    while seq < len(out) and out[-1 - seq].version == version:
        seq += 1
    return seq


def _append(
    out: list[StoredEvent],
    events: Sequence[engine.Event],
    version: int,
    messages: list[pb.GameEvent] | None = None,
) -> None:
    """Number the events of one version from 1 (after any already there);
    ``messages`` also receives each event's (unfiltered) message."""
    seq = _next_seq(out, version)
    for event in events:
        seq += 1
        message = convert.event_to_proto(event, version)
        out.append(StoredEvent(version, seq, message.SerializeToString()))
        if messages is not None:
            messages.append(message)


def _seat_token() -> str:
    """A seat's token: 192 random bits, base64url, never starting with "-",
    which a command line would read as an option (``railyard-bot --token
    -x...`` failed once in a test)."""
    while True:
        token = secrets.token_urlsafe(24)
        if token[0] != "-":
            return token
