"""GameApp: the one object both transports call.

It judges each request and composes the concerns of its sibling modules:
admission (rate limits, tenants), the game repository (load, commit),
requestId replays (idempotency), the service's own turns (turns), and the
event reads (watching).
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Final

from opentelemetry.sdk.metrics.export import MetricReader
from opentelemetry.trace import TracerProvider

import engine
from railyard_api import convert
from railyard_api import game_service_pb2 as pb
from railyard_api.fields import Fields, build
from service.app import errors as err
from service.app import idempotency
from service.app.admission import Admission, Caller, Place, seat_of
from service.app.bots import BotPlayer
from service.app.games import (
    COMMIT_ATTEMPTS,
    GAME_ID_LEN,
    NO_TABLE,
    Games,
    Loaded,
    Seats,
    append_events,
    hash_token,
    new_seat_token,
    state_bytes,
)
from service.app.history import FinishedLogs, ReadSlots
from service.app.identity import TrustedProxies
from service.app.tables import Tables, table_of
from service.app.tenants import ApiKeys, seat_token_of
from service.app.turns import Turns, without_timeouts
from service.app.watching import Watching
from service.app.webhooks import Webhooks
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
#: Milliseconds a new game's due entry, written before the game, waits before
#: any replica may claim it (GameApp._create): longer than a create takes.
CREATE_GRACE_MS: Final = 5000
#: CreateGame's turnTimeoutSeconds: at most a day (0: no timer).
MAX_TURN_TIMEOUT: Final = 86400


def _check_request_id(request_id: str) -> None:
    if len(request_id) > MAX_REQUEST_ID:
        raise err.invalid(f"requestId is longer than {MAX_REQUEST_ID} characters")


def _move_answer(loaded: Loaded, seat: int, messages: Sequence[pb.GameEvent]) -> Fields:
    """An ApplyMoveResponse's fields: the seat's view after the move, and the
    move's events as the seat may see them."""
    return {
        "game": loaded.view_fields(seat),
        "events": [convert.redact(m, seat) for m in messages],
    }


def _told(event: pb.GameEvent, seats: Seats) -> tuple[str, dict[str, object]] | None:
    """What a tenant's webhook hears of a committed event (its kind and
    data), or None (service.app.webhooks.KINDS)."""
    kind = event.WhichOneof("kind")
    if kind == "round_ended":
        ended = event.round_ended
        return "round.ended", {
            "round": ended.round,
            "reason": pb.RoundEndReason.Name(ended.reason),
            "scores": list(ended.scores),
            "version": event.version,
        }
    if kind == "seat_joined":
        joined = event.seat_joined
        return "seat.joined", {"seat": joined.seat, "displayName": joined.display_name}
    if kind == "seat_left":
        left = event.seat_left
        return "seat.left", {
            "seat": left.seat,
            "reason": pb.LeaveReason.Name(left.reason),
            "bot": pb.BotLevel.Name(left.bot),
            "displayName": seats.names[left.seat],
        }
    if kind == "game_started":
        return "game.started", {"botSeats": list(event.game_started.bot_seats)}
    return None


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
        #: Whose forwarding headers name the client (service.app.identity).
        self.proxies = TrustedProxies.parse(self.settings.trusted_proxies)
        self.bots = BotPlayer(self.settings.bot_processes, self.settings.bot_cpu_limit)
        self.metrics = Metrics(metric_readers, traced=self.tracer_provider is not None)
        self._games = Games(self.store, self.settings, self.metrics, self.committed)
        #: The operator's API keys: with any, CreateGame needs one (service.app.tenants).
        self._admission = Admission(self._games, self.settings.api_key_set())
        self._turns = Turns(self._games, self.bots)
        self._watching = Watching(self._games, self._admission, clock)
        #: Tenants' webhooks (service.app.webhooks).
        self.webhooks = Webhooks(self.store, self.settings, self.metrics)
        self._tables = Tables(self._games, self._admission, self._turns, self.tell)

    @property
    def api_keys(self) -> ApiKeys:
        """The operator's API keys: with any, CreateGame needs one (service.app.tenants)."""
        return self._admission.api_keys

    @api_keys.setter
    def api_keys(self, keys: ApiKeys) -> None:
        self._admission.api_keys = keys

    @property
    def watching(self) -> int:
        """WatchGame streams open now, both transports (Settings.max_watchers)."""
        return self._watching.open

    @watching.setter
    def watching(self, count: int) -> None:
        self._watching.open = count

    @property
    def finished_logs(self) -> FinishedLogs:
        """Finished games' logs (service.app.history)."""
        return self._watching.finished_logs

    @finished_logs.setter
    def finished_logs(self, logs: FinishedLogs) -> None:
        self._watching.finished_logs = logs

    @property
    def history_reads(self) -> ReadSlots:
        """The cap on whole-history reads of the store (Settings.max_log_reads)."""
        return self._watching.history_reads

    @history_reads.setter
    def history_reads(self, slots: ReadSlots) -> None:
        self._watching.history_reads = slots

    def close(self) -> None:
        """Stop the bots' worker processes and the metric readers (the store
        is closed by its owner)."""
        self.bots.close()
        self.metrics.close()

    async def committed(
        self,
        game_id: str,
        seats: Seats,
        game: engine.GameState,
        events: Sequence[StoredEvent],
    ) -> None:
        """A commit to a game succeeded (service.app.games.Games.commit): what
        it did told to the tenant's webhook (rounds ended, seats taken and
        given up, the start: whichever path committed it), and the game's end."""
        if self.webhooks.enabled(seats.tenant):
            for stored in events:
                event = pb.GameEvent.FromString(stored.payload)
                told = _told(event, seats)
                if told is not None:
                    await self.tell(seats.tenant, told[0], game_id, told[1])
        if game.over:
            await self.game_finished(game_id, seats, game)

    async def tell(
        self, tenant: str | None, kind: str, game_id: str, data: dict[str, object]
    ) -> None:
        """Queue a webhook event for ``tenant``. Called once what it tells is
        committed: a queue that cannot be written then loses the event
        (logged and counted) rather than fail a call whose change was made."""
        if not self.webhooks.enabled(tenant):
            return
        try:
            await self.webhooks.emit(tenant, kind, game_id, data)
        except StoreUnavailableError as exc:
            self.metrics.store_unavailable.inc()
            log.warning("game %s: webhook event %s lost: %s", game_id, kind, exc)

    async def game_finished(self, game_id: str, seats: Seats, game: engine.GameState) -> None:
        """A game's finishing commit is done: counted, its place under its
        tenant's live-game cap released, and its tenant's webhook told. Every
        path that commits a finished game calls this once, after the commit
        succeeded: a person's move and its bots (ApplyMove), a game of bots
        finished by CreateGame, and the service's own background play."""
        self.metrics.games_finished.inc()
        if seats.tenant is not None:
            await self._admission.release_live(seats.tenant, game_id)
            if self.webhooks.enabled(seats.tenant):
                await self.tell(
                    seats.tenant,
                    "game.finished",
                    game_id,
                    {
                        "totals": list(game.totals),
                        "winners": list(game.winners),
                        "names": list(seats.names),
                        "version": game.version,
                    },
                )

    # ------------------------------------------------------------ calls

    async def create_game(
        self, request: pb.CreateGameRequest, caller: Caller
    ) -> pb.CreateGameResponse:
        log.debug(
            "CreateGame from %s %s an API key",
            caller.address or "an unknown address",
            "with" if caller.api_key else "without",
        )
        admission = self._admission
        await admission.admit_address(caller)  # a new game has no seat yet: its creator's address
        tenant = await admission.tenant_of(caller)  # 401 / 403 before judging the body
        _check_request_id(request.request_id)
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
        table_of(request, len(players))  # judged before the deal (INVALID_ARGUMENT)
        try:
            ruleset = convert.ruleset_from_proto(request.ruleset)
            seed = request.seed or secrets.token_hex(16)
            game = engine.new_game(ruleset, len(players), seed)
        except engine.RailyardError as exc:
            raise err.from_engine(exc) from exc
        except convert.ConversionError as exc:
            raise err.invalid(exc.message, **exc.metadata) from exc
        key: str | None = None
        if request.request_id:
            game_id, key = idempotency.create_key(request, tenant)
            # A retry answered before its bots play again: a game of bots only
            # would otherwise be replayed whole (seconds of worker CPU) for
            # the answer the store already holds.
            try:
                remembered = await self.store.recall(game_id, key)
            except StoreUnavailableError as exc:
                raise self._games.store_failed(exc) from exc
            if remembered is not None:
                replay = await idempotency.replayed_for(
                    self._games, game_id, remembered, caller, tenant
                )
                return replay[0]
        else:
            game_id = secrets.token_hex(GAME_ID_LEN // 2)
        place = Place(tenant, await admission.reserve_live(tenant, game_id))
        try:
            return await self._create(request, caller, game, game_id, key, place)
        finally:
            # A place this request took and its game does not keep (refused,
            # nothing stored) is given back, however the request ended.
            if place.reservation is Reservation.ADDED and not place.counted:
                assert tenant is not None
                await admission.release_live(tenant, game_id)

    async def _create(
        self,
        request: pb.CreateGameRequest,
        caller: Caller,
        game: engine.GameState,
        game_id: str,
        key: str | None,
        place: Place,
    ) -> pb.CreateGameResponse:
        """CreateGame once the request is judged and the game dealt: seats,
        the bots' first turns, the store; ``place.counted`` set where the
        game keeps its place under the tenant's cap."""
        games = self._games
        players = request.players
        # A token for each person's seat only (192 random bits each): a bot
        # seat's token would show its creator that bot's hand. A bot seat's
        # stored hash is "", which Seats.seat_of never matches: it compares
        # SHA-256 hex digests, and a digest is never "".
        # Under an API key, derived from it (service.app.tenants): the same key's
        # replay gets them back, no other caller can compute them.
        api_key = caller.api_key if place.tenant is not None else None
        tokens = {
            i: new_seat_token() if api_key is None else seat_token_of(api_key, game_id, i)
            for i, p in enumerate(players)
            if not p.bot and not p.open
        }
        # A table (open seats, or settings): its host token, and a private
        # table's join code (service.app.tables).
        table = table_of(request, len(players)) or NO_TABLE
        host_token = code = ""
        if table is not NO_TABLE:
            host_token = new_seat_token()
            opens = any(p.open for p in players)
            if opens and table.visibility != pb.VISIBILITY_PUBLIC:
                code = await self._tables.reserve_code(game_id)
            table = dataclasses.replace(table, code=code, host_hash=hash_token(host_token))
        opened = tuple(p.open for p in players)
        seats = Seats(
            names=tuple(
                "" if p.open else p.display_name or f"Player {i + 1}" for i, p in enumerate(players)
            ),
            bots=tuple(int(p.bot) for p in players),
            token_hashes=tuple(
                hash_token(tokens[i]) if i in tokens else "" for i in range(len(players))
            ),
            seed_from_caller=bool(request.seed),
            tenant=place.tenant,
            turn_timeout=request.turn_timeout_seconds,  # (judged by create_game)
            open=opened if any(opened) else (),
            started=not any(opened),
            table=table,
        )
        events: list[StoredEvent] = []
        append_events(events, game.opening_events, 0)
        bot_moves = 0
        if seats.started and not games.plays_in_background(seats):
            # (Mixed games: the bots before the first person, as after a move.)
            game, bot_moves = await self._turns.play_bots(game, seats.bots, events, creating=True)
        deadline = games.deadline(game, seats)
        response = pb.CreateGameResponse(
            game=Loaded.new(game_id, game, seats, deadline).view(None),
            seats=[pb.SeatToken(seat=i, token=t) for i, t in tokens.items()],
            host_token=host_token,
            join_code=code,
        )
        record = GameRecord(game_id, game.version, state_bytes(game), seats.to_bytes(), deadline)
        # Remembered without its tokens: a request id is no secret (anyone
        # can send the same body and id), so a replay must not hand out
        # seats, and tokens are at rest only as hashes (in the seats). Under
        # an API key, only that key's replay derives them again.
        payload = pb.CreateGameResponse(game=response.game).SerializeToString()
        try:
            due = games.due(game, seats, deadline)
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
            raise games.store_failed(exc) from exc
        except StoreUnavailableError as exc:
            raise games.store_failed(exc) from exc
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
            replayed, place.counted = await idempotency.replayed_for(
                games, game_id, remembered, caller, place.tenant
            )
            return replayed
        place.counted = True
        await self._tables.created(game_id, seats)
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
        if self.webhooks.enabled(place.tenant):
            await self.tell(
                place.tenant,
                "game.created",
                game_id,
                {
                    "preset": game.rules.preset,
                    "players": [
                        {"seat": i, "displayName": n, "bot": b, "open": seats.is_open(i)}
                        for i, (n, b) in enumerate(zip(seats.names, seats.bots, strict=True))
                    ],
                    "waiting": not seats.started,
                },
            )
        if game.over:  # (a game of bots only, played here: bots_only = "request")
            await self.game_finished(game_id, seats, game)
        return response

    async def get_game(self, game_id: str, caller: Caller) -> Fields:
        """The caller's GameView, as its fields (railyard_api.fields)."""
        loaded, seat = await self._admission.seated(game_id, caller, required=False)
        if seat is None:  # a spectator: as the table's delay holds it back
            return loaded.view_fields(None, delay=loaded.seats.table.spectator_delay)
        return loaded.view_fields(seat)

    async def list_legal_moves(self, game_id: str, caller: Caller) -> pb.ListLegalMovesResponse:
        loaded, seat = await self._admission.seated(game_id, caller, required=True)
        game = loaded.game
        response = pb.ListLegalMovesResponse(version=game.version)
        if not game.over and loaded.seats.started and game.current_seat == seat:
            for move in game.legal_moves():
                response.moves.add(move=convert.move_to_proto(move), notation=str(move))
        return response

    async def apply_move(
        self, request: pb.ApplyMoveRequest, caller: Caller
    ) -> Fields | pb.ApplyMoveResponse:
        """The ApplyMoveResponse: its fields (railyard_api.fields), or, for a
        retry under a request id, the message remembered."""
        games = self._games
        if not caller.token:
            await self._admission.admit_address(caller)
            raise err.unauthenticated()  # before judging the body: 401 comes first
        _check_request_id(request.request_id)
        if not request.HasField("move"):
            raise err.invalid("move is missing")
        # play, draw, pass, end_turn: the oneof's field (a refusal's span says
        # what was tried, before the engine judges it).
        tracing.note({tracing.MOVE_KIND: request.move.WhichOneof("action") or ""})
        try:
            move = convert.move_from_proto(request.move)
        except convert.ConversionError as exc:
            raise err.invalid(exc.message, **exc.metadata) from exc
        expected = request.expected_version if request.HasField("expected_version") else None
        key: str | None = None
        fingerprint = idempotency.fingerprint(request) if request.request_id else b""
        for attempt in range(COMMIT_ATTEMPTS):
            if attempt == 0:  # charged to the seat once, not per commit attempt
                loaded, seat = await self._admission.seated(request.game_id, caller, required=True)
            else:
                loaded = await games.load(request.game_id)
                seat = seat_of(loaded, caller, required=True)
            assert seat is not None
            if request.request_id:
                key = f"move:{seat}:{request.request_id}"
                remembered = await idempotency.recall(games, request, key, fingerprint)
                if remembered is not None:
                    return remembered
            base = loaded.record.version
            if expected is not None and expected != base:
                raise err.version_mismatch(expected, base)
            seats = loaded.seats
            if not seats.started:
                raise err.not_started(request.game_id)
            # A person who moves has not timed out (TableSettings.maxTimeouts).
            new_seats = (
                dataclasses.replace(seats, timeouts=without_timeouts(seats.timeouts, seat))
                if seats.timeouts and seats.timeouts[seat]
                else None
            )
            game = loaded.game
            try:
                moved = game.apply(move, seat=seat)
            except engine.RailyardError as exc:
                raise err.from_engine(exc) from exc
            events: list[StoredEvent] = []
            messages: list[pb.GameEvent] = []
            append_events(events, moved, game.version, messages)
            game, bot_moves = await self._turns.play_bots(game, loaded.seats.bots, events, messages)
            loaded.game = game  # (the state a bot worker sent back, if one played)
            deadline = games.deadline(game, loaded.seats)
            loaded.deadline_ms = deadline  # (for the answer's view)
            # Under a request id the answer is remembered with the commit, as
            # the message (a retry's answer), and answered as it is. Without
            # one it is made once the commit is in: not held, with every
            # other call in flight, across the store's round trip.
            remembered_answer = (
                build(pb.ApplyMoveResponse(), _move_answer(loaded, seat, messages)) if key else None
            )
            try:
                result = await games.commit(
                    request.game_id,
                    base,
                    game,
                    loaded.seats,
                    events,
                    key,
                    # A retry must get these very bytes back: remember the
                    # message, after what the request asked for.
                    idempotency.REMEMBERED + fingerprint + remembered_answer.SerializeToString()
                    if remembered_answer is not None
                    else None,
                    deadline=deadline,
                    rev=loaded.record.rev,
                    new_seats=new_seats,
                )
            except StoreUnavailableError as exc:
                raise games.store_failed(exc) from exc
            if result is Commit.OK:
                self.metrics.person_moves.inc()
                self.metrics.bot_moves.inc(bot_moves)
                if remembered_answer is not None:
                    return remembered_answer
                return _move_answer(loaded, seat, messages)
            if result is Commit.NOT_FOUND:
                raise err.not_found(request.game_id)
            self.metrics.commit_conflicts.inc()
            # Lost the race for this version: a retry of the same request may
            # have won it; otherwise refuse (expectedVersion given) or go again.
            if key is not None:
                remembered = await idempotency.recall(games, request, key, fingerprint)
                if remembered is not None:
                    return remembered
            if expected is not None:
                current = await games.load(request.game_id)
                raise err.version_mismatch(expected, current.record.version)
        raise err.kept_changing("the game kept changing under this move")

    async def advance(self, game_id: str) -> int | None:
        """Play what is the service's to play in ``game_id`` now (background
        play, service.app.background): :meth:`service.app.turns.Turns.advance`."""
        return await self._turns.advance(game_id)

    def watch_game(
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
        every history read slot taken (TOO_MANY_LOG_READS, service.app.history).
        Nothing runs until the stream is first read (an async generator)."""
        return self._watching.watch_game(game_id, after_version, caller)

    async def get_game_log(self, game_id: str, caller: Caller) -> pb.GetGameLogResponse:
        """The game's public log. The answer of a finished game is kept and
        shared by every caller (service.app.history): it must not be changed."""
        return await self._watching.get_game_log(game_id, caller)

    # ------------------------------------------------------------ tables

    async def join_game(self, request: pb.JoinGameRequest, caller: Caller) -> pb.JoinGameResponse:
        """Take an open seat (service.app.tables)."""
        return await self._tables.join(request, caller)

    async def start_game(self, game_id: str, caller: Caller) -> Fields:
        """The host starts a waiting table: the public view's fields."""
        return await self._tables.start(game_id, caller)

    async def leave_game(self, game_id: str, caller: Caller) -> Fields:
        """Give up the caller's seat: the public view's fields."""
        return await self._tables.leave(game_id, caller)

    async def rematch(self, game_id: str, caller: Caller) -> pb.RematchResponse:
        return await self._tables.rematch(game_id, caller)

    async def list_games(
        self, request: pb.ListGamesRequest, caller: Caller
    ) -> pb.ListGamesResponse:
        """The joinable public tables of the caller's tenant (its API key's;
        none configured: every table)."""
        tenant = None
        keys = self._admission.api_keys
        if keys.required:
            if not caller.api_key:
                raise err.api_key_required()
            tenant = keys.tenant_of(caller.api_key)
            if tenant is None:
                raise err.bad_api_key()
        return await self._tables.list_games(request, caller, tenant)

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
