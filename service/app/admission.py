"""Who may call, how often, and how many live games a tenant may hold.

A call is charged to the seat whose token it verified, else to the caller's
address (service.app.identity); CreateGame also to its API key's tenant
(service.app.tenants), whose live games are capped in the store.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from railyard_api import game_service_pb2 as pb
from service.app import errors as err
from service.app.errors import ServiceError
from service.app.games import Games, Loaded
from service.app.identity import rate_key
from service.app.ratelimit import TokenBuckets
from service.app.tenants import ApiKeys
from service.ops import tracing
from service.store import Reservation, StoreUnavailableError

log = logging.getLogger("railyard")


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: the bearer token (if any), the client's address
    (through trusted proxies only: service.app.identity), for rate limits, and
    the operator's API key it sent (``x-api-key``; service.app.tenants). Its
    repr leaves the credentials out: a caller is safe to log."""

    token: str | None = field(default=None, repr=False)
    address: str = ""
    api_key: str | None = field(default=None, repr=False)


@dataclass(slots=True)
class Place:
    """A new game's place under its tenant's live-game cap, as CreateGame holds it."""

    tenant: str | None
    reservation: Reservation | None
    #: The tenant's count keeps the game (created, or maybe created).
    counted: bool = False


def seat_of(loaded: Loaded, caller: Caller, required: bool) -> int | None:
    """The caller's seat in the game (None: a spectator): UNAUTHENTICATED
    without a token where one is ``required``, BAD_SEAT_TOKEN for a token of
    no seat."""
    if caller.token is None or caller.token == "":
        if required:
            raise err.unauthenticated()
        return None
    seat = loaded.seats.seat_of(caller.token)
    if seat is None:
        if not required and loaded.seats.is_host(caller.token):
            return None  # the table's host watches as a spectator
        raise err.bad_token(loaded.record.game_id)
    return seat


def admit_spectator(loaded: Loaded, caller: Caller) -> None:
    """Refuse a spectator (a call with no seat) that the table's
    TableSettings.spectators keeps out: PERMISSION_DENIED
    SPECTATORS_NOT_ALLOWED. The host token passes SEATED_ONLY."""
    seats = loaded.seats
    policy = seats.table.spectators
    if policy == pb.SPECTATORS_NONE or (
        policy == pb.SPECTATORS_SEATED_ONLY and not (caller.token and seats.is_host(caller.token))
    ):
        raise err.spectators_not_allowed(loaded.record.game_id, policy)


class Admission:
    """Rate limits (per seat, per address, per tenant) and tenants' caps."""

    def __init__(self, games: Games, api_keys: ApiKeys) -> None:
        self.games = games
        self.settings = games.settings
        self.store = games.store
        #: The operator's API keys: with any, CreateGame needs one.
        self.api_keys = api_keys
        self._limiter = TokenBuckets()

    async def admit(self, key: str) -> None:
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

    async def admit_address(self, caller: Caller) -> None:
        """Charge a call that names no verified seat to the caller's address:
        an invented token costs nothing, an address does."""
        await self.admit(rate_key(caller.address))

    async def seated(
        self, game_id: str, caller: Caller, required: bool
    ) -> tuple[Loaded, int | None]:
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
            await self.admit_address(caller)
            if required:
                raise err.unauthenticated()
            loaded = await self.games.load(game_id)
            admit_spectator(loaded, caller)
            return loaded, None
        try:
            loaded = await self.games.load(game_id)
            seat = seat_of(loaded, caller, required)
            if seat is None:
                admit_spectator(loaded, caller)
        except ServiceError as exc:
            if exc.reason in ("GAME_NOT_FOUND", "BAD_SEAT_TOKEN"):
                await self.admit_address(caller)  # a 429 instead, once it runs dry
            raise
        if seat is not None:
            tracing.note({tracing.SEAT: seat})
        await self.admit(f"seat:{game_id}:{seat}")
        return loaded, seat

    async def tenant_of(self, caller: Caller) -> str | None:
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

    async def reserve_live(self, tenant: str | None, game_id: str) -> Reservation | None:
        """Count the game under its tenant's cap (None: no tenant), or refuse
        it: RESOURCE_EXHAUSTED TOO_MANY_GAMES."""
        if tenant is None:
            return None
        cap = self.settings.tenant_max_live_games
        try:
            reservation = await self.store.reserve_live(tenant, game_id, cap)
        except StoreUnavailableError as exc:
            raise self.games.store_failed(exc) from exc
        if reservation is Reservation.FULL:
            raise err.too_many_games(tenant, cap)
        return reservation

    async def release_live(self, tenant: str, game_id: str) -> None:
        """No longer count the game under its tenant's cap. A store failure
        here fails nothing that was done: it is logged, and the game stops
        counting when its place expires (game_ttl after its creation)."""
        try:
            await self.store.release_live(tenant, game_id)
        except StoreUnavailableError as exc:
            self.games.metrics.store_unavailable.inc()
            log.warning(
                "game %s: its place under %s's cap was not released: %s", game_id, tenant, exc
            )
