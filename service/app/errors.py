"""The one table from failures to API.md's error contract.

Every failure a request can meet becomes a :class:`ServiceError` carrying the
gRPC code, the ``ErrorInfo`` reason, a sentence for a person and metadata (the
rule id where a rule was broken). Both transports render it from here, so a
refusal looks the same over gRPC and HTTP, and nothing reaches the wire as a
500 or a traceback.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Final

import grpc

import engine
from service.store import OutcomeUnknownError, StoreFullError, StoreUnavailableError

log = logging.getLogger("railyard.store")

#: Every error is reported under this ErrorInfo domain.
DOMAIN: Final = "railyard.dev"

#: gRPC code -> HTTP status, as grpc-gateway maps them (API.md).
HTTP_STATUS: Final[dict[grpc.StatusCode, int]] = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.CANCELLED: 499,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.INTERNAL: 500,
    grpc.StatusCode.DATA_LOSS: 500,
}


@dataclass
class ServiceError(Exception):
    """A refusal: gRPC code, ErrorInfo reason, message and metadata."""

    code: grpc.StatusCode
    reason: str
    message: str
    metadata: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    @property
    def http_status(self) -> int:
        return HTTP_STATUS.get(self.code, 400)


def invalid(message: str, **metadata: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT", message, metadata)


def not_found(game_id: str) -> ServiceError:
    return ServiceError(
        grpc.StatusCode.NOT_FOUND, "GAME_NOT_FOUND", f"no game {game_id!r}", {"gameId": game_id}
    )


def unauthenticated() -> ServiceError:
    return ServiceError(
        grpc.StatusCode.UNAUTHENTICATED,
        "UNAUTHENTICATED",
        "this call needs a seat token: send 'authorization: Bearer <token>'",
    )


def malformed_authorization() -> ServiceError:
    """An ``authorization`` header that is there but is not one bearer token:
    refused rather than read as a spectator, so a client with a broken header
    learns it at once instead of seeing the public view."""
    return ServiceError(
        grpc.StatusCode.UNAUTHENTICATED,
        "UNAUTHENTICATED",
        "the authorization header must be 'Bearer <seat token>' (or absent, for a spectator)",
    )


def bad_token(game_id: str) -> ServiceError:
    return ServiceError(
        grpc.StatusCode.PERMISSION_DENIED,
        "BAD_SEAT_TOKEN",
        f"the token is not a seat token of game {game_id!r}",
        {"gameId": game_id},
    )


# ------------------------------------------------------------------ tables (issue 25)

_SPECTATOR_POLICY: Final = {2: "SPECTATORS_SEATED_ONLY", 3: "SPECTATORS_NONE"}


def spectators_not_allowed(game_id: str, policy: int) -> ServiceError:
    name = _SPECTATOR_POLICY.get(policy, str(policy))
    return ServiceError(
        grpc.StatusCode.PERMISSION_DENIED,
        "SPECTATORS_NOT_ALLOWED",
        f"game {game_id!r} admits no spectators ({name}): send a seat token"
        + (" or the table's host token" if policy == 2 else ""),
        {"gameId": game_id, "spectators": name},
    )


def not_started(game_id: str) -> ServiceError:
    return ServiceError(
        grpc.StatusCode.FAILED_PRECONDITION,
        "GAME_NOT_STARTED",
        f"game {game_id!r} waits for its open seats to be taken (JoinGame) or for its host "
        "to start it (StartGame)",
        {"gameId": game_id},
    )


def already_started(game_id: str) -> ServiceError:
    return ServiceError(
        grpc.StatusCode.FAILED_PRECONDITION,
        "GAME_STARTED",
        f"game {game_id!r} has started: its seats are no longer open",
        {"gameId": game_id},
    )


def seat_taken(game_id: str, seat: int) -> ServiceError:
    return ServiceError(
        grpc.StatusCode.FAILED_PRECONDITION,
        "SEAT_TAKEN",
        f"seat {seat} of game {game_id!r} is not open: another caller took it, or it was "
        "never open",
        {"gameId": game_id, "seat": str(seat)},
    )


def table_full(game_id: str) -> ServiceError:
    return ServiceError(
        grpc.StatusCode.FAILED_PRECONDITION,
        "TABLE_FULL",
        f"game {game_id!r} has no open seat",
        {"gameId": game_id},
    )


def bad_join_code(game_id: str) -> ServiceError:
    return ServiceError(
        grpc.StatusCode.PERMISSION_DENIED,
        "BAD_JOIN_CODE",
        f"game {game_id!r} is private: JoinGame needs its join code, and this is not it",
        {"gameId": game_id},
    )


def join_code_not_found() -> ServiceError:
    return ServiceError(
        grpc.StatusCode.NOT_FOUND,
        "JOIN_CODE_NOT_FOUND",
        "no table has this join code (or its game is over or expired)",
    )


def not_host(game_id: str) -> ServiceError:
    return ServiceError(
        grpc.StatusCode.PERMISSION_DENIED,
        "NOT_HOST",
        f"only the host of game {game_id!r} may start it: send the host token CreateGame returned",
        {"gameId": game_id},
    )


def not_over(game_id: str) -> ServiceError:
    return ServiceError(
        grpc.StatusCode.FAILED_PRECONDITION,
        "GAME_NOT_OVER",
        f"game {game_id!r} is not over: a rematch follows a finished game",
        {"gameId": game_id},
    )


def game_over(game_id: str) -> ServiceError:
    return ServiceError(
        grpc.StatusCode.FAILED_PRECONDITION,
        "GAME_OVER",
        f"game {game_id!r} is over",
        {"gameId": game_id},
    )


def kept_changing(what: str) -> ServiceError:
    """A change whose every commit attempt lost its race (COMMIT_ATTEMPTS):
    ``what`` kept changing under it."""
    return ServiceError(grpc.StatusCode.ABORTED, "VERSION_MISMATCH", f"{what}; retry")


def version_mismatch(expected: int, current: int) -> ServiceError:
    return ServiceError(
        grpc.StatusCode.ABORTED,
        "VERSION_MISMATCH",
        f"expectedVersion {expected} is not the game's version {current}",
        {"expectedVersion": str(expected), "currentVersion": str(current)},
    )


def rate_limited(retry_after: float) -> ServiceError:
    seconds = max(1, round(retry_after + 0.5))
    return ServiceError(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "RATE_LIMITED",
        f"too many requests: retry in {seconds} s",
        {"retryAfterSeconds": str(seconds)},
    )


def api_key_required() -> ServiceError:
    """A CreateGame without an API key where the operator configured keys:
    API.md's UNAUTHENTICATED reason, the message saying which credential."""
    return ServiceError(
        grpc.StatusCode.UNAUTHENTICATED,
        "UNAUTHENTICATED",
        "creating a game here needs an API key: send it as the 'x-api-key' header "
        "(gRPC: 'x-api-key' metadata)",
    )


def bad_api_key() -> ServiceError:
    """An API key that is none of the configured ones (its text is never echoed)."""
    return ServiceError(
        grpc.StatusCode.PERMISSION_DENIED,
        "BAD_API_KEY",
        "the x-api-key is not an API key of this service",
    )


def tenant_rate_limited(tenant: str, retry_after: float) -> ServiceError:
    """The tenant's CreateGame bucket is empty (Settings.tenant_create_rate)."""
    seconds = max(1, round(retry_after + 0.5))
    return ServiceError(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "RATE_LIMITED",
        f"too many games created with API key {tenant!r}: retry in {seconds} s",
        {"retryAfterSeconds": str(seconds), "tenant": tenant},
    )


#: Seconds a CreateGame refused for TOO_MANY_GAMES is told to wait: a slot
#: comes back when one of the tenant's games ends, which the service cannot
#: foresee; a short wait lets a client poll without hammering.
GAMES_RETRY_AFTER: Final = 10


def too_many_games(tenant: str, cap: int, retry_after: int = GAMES_RETRY_AFTER) -> ServiceError:
    """The tenant has ``cap`` games in progress (Settings.tenant_max_live_games)."""
    return ServiceError(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "TOO_MANY_GAMES",
        f"API key {tenant!r} has {cap} games in progress, its cap: finish one, or retry "
        f"in {retry_after} s",
        {"retryAfterSeconds": str(retry_after), "maxLiveGames": str(cap), "tenant": tenant},
    )


#: Seconds a watch refused for TOO_MANY_WATCHERS is told to wait: streams end
#: with their games or their clients, so room comes back within seconds, and
#: behind a load balancer the retry may reach a replica with room now.
WATCHERS_RETRY_AFTER: Final = 5


def too_many_watchers(limit: int, retry_after: int = WATCHERS_RETRY_AFTER) -> ServiceError:
    """A WatchGame refused before its stream starts: this process already
    serves ``limit`` watch streams (``Settings.max_watchers``)."""
    return ServiceError(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "TOO_MANY_WATCHERS",
        f"this server already has {limit} watch streams open: retry in {retry_after} s",
        {"retryAfterSeconds": str(retry_after), "maxWatchers": str(limit)},
    )


#: Seconds a history read refused for TOO_MANY_LOG_READS is told to wait: a
#: read holds its slot for one store round trip, so slots come back within
#: the second, and a finished game's retry is then answered from the kept log.
LOG_READS_RETRY_AFTER: Final = 1


def too_many_log_reads(limit: int, retry_after: int = LOG_READS_RETRY_AFTER) -> ServiceError:
    """A GetGameLog, or a WatchGame whose replay reads the store, refused
    before it reads: this process already runs ``limit`` whole-history reads
    (``Settings.max_log_reads``, service.app.history)."""
    return ServiceError(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "TOO_MANY_LOG_READS",
        f"this server is already reading {limit} game histories: retry in {retry_after} s",
        {"retryAfterSeconds": str(retry_after), "maxLogReads": str(limit)},
    )


def store_unavailable(
    message: str = "the game store is unavailable; retry shortly",
) -> ServiceError:
    """API.md: error bodies never carry store addresses or store error text;
    what failed goes to the log (:func:`from_store`)."""
    return ServiceError(grpc.StatusCode.UNAVAILABLE, "STORE_UNAVAILABLE", message)


def bots_busy() -> ServiceError:
    """Every bot worker of this replica is busy and enough CreateGames already
    wait for one (service.app.bots): try again shortly, or on another replica."""
    return ServiceError(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "BOTS_BUSY",
        "this replica's bot workers are all busy with other games of bots: retry in 1 s",
        {"retryAfterSeconds": "1"},
    )


def corrupt_state(game_id: str) -> ServiceError:
    """A stored game this service cannot read. Not transient (UNAVAILABLE
    would have clients retry for ever): DATA_LOSS, as grpc-gateway's 500."""
    return ServiceError(
        grpc.StatusCode.DATA_LOSS,
        "CORRUPT_STATE",
        f"game {game_id!r} is stored in a form this server cannot read; it cannot be "
        "played on (the operator has it in the log)",
        {"gameId": game_id},
    )


def shutting_down() -> ServiceError:
    """A WatchGame stream ended by its server's graceful shutdown (gRPC; SSE
    ends with a comment instead). Ended between two versions: watching again
    with ``afterVersion`` set to the last version seen resumes exactly."""
    return ServiceError(
        grpc.StatusCode.UNAVAILABLE,
        "SERVER_SHUTTING_DOWN",
        "this server is shutting down: watch again (afterVersion resumes exactly)",
    )


# The refusals of the HTTP connection layer (service/transports/http/limits.py): answered
# before any route runs, with HTTP statuses of their own (431, 408, 503).


def headers_too_large(message: str) -> ServiceError:
    """A request head over a limit of its size or field count (HTTP 431)."""
    return ServiceError(
        grpc.StatusCode.INVALID_ARGUMENT, "HEADERS_TOO_LARGE", message, {"field": "headers"}
    )


def request_timeout(part: str, seconds: float) -> ServiceError:
    """The request's ``part`` (headers or body) did not arrive in time (HTTP 408)."""
    return ServiceError(
        grpc.StatusCode.DEADLINE_EXCEEDED,
        "REQUEST_TIMEOUT",
        f"the request {part} did not arrive within {seconds:g} s",
        {"field": part},
    )


def too_many_connections(limit: int) -> ServiceError:
    """Every connection slot of this replica is taken (HTTP 503)."""
    return ServiceError(
        grpc.StatusCode.UNAVAILABLE,
        "TOO_MANY_CONNECTIONS",
        f"this server holds its maximum of {limit} connections; retry shortly",
        {"retryAfterSeconds": "1"},
    )


#: Engine error class -> (gRPC code, API reason). The engine's own finer reason
#: travels in metadata["detail"], the rule id in metadata["rule"].
_ENGINE: Final[list[tuple[type[engine.RailyardError], grpc.StatusCode, str]]] = [
    (engine.DealDoesNotFitError, grpc.StatusCode.INVALID_ARGUMENT, "DEAL_DOES_NOT_FIT"),
    (engine.RulesetError, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"),
    (engine.MalformedMoveError, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"),
    (engine.NotYourTurnError, grpc.StatusCode.FAILED_PRECONDITION, "NOT_YOUR_TURN"),
    (engine.GameOverError, grpc.StatusCode.FAILED_PRECONDITION, "GAME_OVER"),
    (engine.IllegalMoveError, grpc.StatusCode.FAILED_PRECONDITION, "ILLEGAL_MOVE"),
    (engine.CorruptStateError, grpc.StatusCode.DATA_LOSS, "CORRUPT_STATE"),
    (engine.RailyardError, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"),
]


def from_engine(err: engine.RailyardError) -> ServiceError:
    """The API error for an engine error (first matching class in the table)."""
    code, reason = next((c, r) for cls, c, r in _ENGINE if isinstance(err, cls))
    metadata = {"detail": err.reason}
    if err.rule:
        metadata["rule"] = err.rule
    return ServiceError(code, reason, err.message, metadata)


#: Seconds between two log lines of store failures: an outage fails every
#: call, and one line per call would flood the log.
_STORE_LOG_INTERVAL: Final = 5.0


class _StoreFailures:
    """The log of store failures: the first at once, then one line per
    interval with how many came meanwhile."""

    def __init__(self) -> None:
        self.last = -_STORE_LOG_INTERVAL
        self.unlogged = 0

    def record(self, err: StoreUnavailableError) -> None:
        now = time.monotonic()
        if now - self.last < _STORE_LOG_INTERVAL:
            self.unlogged += 1
            return
        more = f" (and {self.unlogged} more failures since the last line)" if self.unlogged else ""
        log.warning("store call failed: %s%s", err, more)
        self.last, self.unlogged = now, 0


_store_failures: Final = _StoreFailures()


def from_store(err: StoreUnavailableError) -> ServiceError:
    """The API error for a store failure: logged here with its detail (the
    store's address and error text), answered without it."""
    _store_failures.record(err)
    if isinstance(err, OutcomeUnknownError):
        return ServiceError(
            grpc.StatusCode.UNAVAILABLE,
            "OUTCOME_UNKNOWN",
            "the change was sent to the game store but its answer was lost: it may have "
            "been applied. Retry with the same requestId to get its real outcome (without "
            "one, read the game first)",
        )
    if isinstance(err, StoreFullError):
        return store_unavailable("the game store is full: nothing was written; retry later")
    return store_unavailable()
