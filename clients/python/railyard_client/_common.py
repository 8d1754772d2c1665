"""What both transports and both clients share: requests, retries, resuming."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

import grpc
from railyard_api import game_service_pb2 as pb

from railyard_client.errors import RailyardError

#: The methods of GameService that take a game id, and what they answer.
RESPONSES: Final[dict[str, type[object]]] = {
    "CreateGame": pb.CreateGameResponse,
    "GetGame": pb.GameView,
    "ListLegalMoves": pb.ListLegalMovesResponse,
    "ApplyMove": pb.ApplyMoveResponse,
    "GetGameLog": pb.GetGameLogResponse,
    "ListRulesets": pb.ListRulesetsResponse,
    "JoinGame": pb.JoinGameResponse,
    "StartGame": pb.StartGameResponse,
    "ListGames": pb.ListGamesResponse,
    "LeaveGame": pb.LeaveGameResponse,
    "Rematch": pb.RematchResponse,
}

MoveLike = pb.Move | pb.LegalMove
#: A seat of CreateGame: a Player, a person's name, or None for an open seat
#: (``pb.Player(open=True)``, taken later with JoinGame).
PlayerLike = pb.Player | str | None


def new_request_id() -> str:
    """An idempotency key (API.md: up to 64 characters)."""
    return uuid.uuid4().hex


def as_move(move: MoveLike) -> pb.Move:
    """A Move from a Move or a LegalMove entry of ListLegalMoves."""
    return move.move if isinstance(move, pb.LegalMove) else move


def as_player(player: PlayerLike) -> pb.Player:
    """A CreateGame seat from a Player, a person's name, or None (an open seat).

    >>> as_player(None).open, as_player("Ann").display_name
    (True, 'Ann')
    """
    if player is None:
        return pb.Player(open=True)
    return pb.Player(display_name=player) if isinstance(player, str) else player


def create_request(
    players: Sequence[PlayerLike],
    ruleset: pb.Ruleset | str | None,
    seed: str,
    request_id: str,
    *,
    table: pb.TableSettings | None = None,
    turn_timeout_seconds: int = 0,
) -> pb.CreateGameRequest:
    if isinstance(ruleset, str):
        ruleset = pb.Ruleset(preset=ruleset)
    return pb.CreateGameRequest(
        ruleset=ruleset,
        players=[as_player(p) for p in players],
        seed=seed,
        request_id=request_id,
        table=table,
        turn_timeout_seconds=turn_timeout_seconds,
    )


def join_request(
    game_id: str | None, join_code: str | None, seat: int | None, display_name: str
) -> pb.JoinGameRequest:
    """JoinGame's request: a public table by its id, a private one by its code
    (alone, or with its id)."""
    if not game_id and not join_code:
        raise ValueError("join_game needs a game_id or a join_code")
    request = pb.JoinGameRequest(
        game_id=game_id or "", join_code=join_code or "", display_name=display_name
    )
    if seat is not None:
        request.seat = seat
    return request


def apply_request(
    game_id: str, move: MoveLike, expected_version: int | None, request_id: str
) -> pb.ApplyMoveRequest:
    request = pb.ApplyMoveRequest(game_id=game_id, move=as_move(move), request_id=request_id)
    if expected_version is not None:
        request.expected_version = expected_version
    return request


@dataclass(frozen=True)
class RetryPolicy:
    """How often a call is repeated after a transient refusal.

    Reads are always safe to repeat; CreateGame and ApplyMove are repeated
    only with the same ``requestId`` (the clients always send one), which the
    service answers with the first outcome instead of applying it again. The
    table calls, which have no ``requestId``, are repeated only after a
    refusal that did nothing (:func:`is_unapplied`).
    """

    attempts: int = 4
    first_delay: float = 0.1
    max_delay: float = 2.0

    def delay(self, failures: int, error: RailyardError) -> float:
        if error.retry_after is not None:
            return min(float(error.retry_after), self.max_delay * 4)
        return min(self.first_delay * 2.0 ** (failures - 1), self.max_delay)


#: Transient refusals in which the service says it did nothing (a store it
#: could not reach, no connection slot, a rate limit): unlike OUTCOME_UNKNOWN
#: or a dropped connection, after which a change may have been made.
_NOTHING_DONE: Final = frozenset({"STORE_UNAVAILABLE", "TOO_MANY_CONNECTIONS", "RATE_LIMITED"})


def is_transient(error: RailyardError) -> bool:
    """Refusals a repeat may cure: the store or the replica was away (including
    OUTCOME_UNKNOWN, which a repeat with the same requestId resolves), or a
    rate limit. TOO_MANY_WATCHERS is transient too, for a watch, and so is
    TOO_MANY_LOG_READS, for a game's log or a watch that resumes."""
    return error.code is grpc.StatusCode.UNAVAILABLE or (
        error.code is grpc.StatusCode.RESOURCE_EXHAUSTED
        and error.reason in ("RATE_LIMITED", "TOO_MANY_WATCHERS", "TOO_MANY_LOG_READS")
    )


def is_unapplied(error: RailyardError) -> bool:
    """Transient refusals after which the call surely did nothing: the only
    ones repeated for the table calls, which carry no ``requestId``
    (JoinGame, StartGame, LeaveGame, Rematch). A JoinGame whose answer was
    lost may have taken a seat whose token only that answer held: repeated,
    it would take a second seat; a lost Rematch answer held the seat's only
    new token. Those surface as the error instead."""
    return is_transient(error) and (error.is_unsent or error.reason in _NOTHING_DONE)


@dataclass
class WatchCursor:
    """Where a watch stands, so a new connection resumes exactly after it.

    Several events share one version (a move and the turn it starts carry
    the version after the move), so a reconnect asks for the events after
    the version *before* the last one seen, and skips the events of that
    version already yielded. Only the first connection's snapshot is
    yielded; a reconnect's is the caller's view again, not news.
    """

    first_after: int | None
    snapshot_version: int | None = None
    last_version: int | None = None
    yielded_at_last: int = 0
    _skip: int = field(default=0, repr=False)
    finished_snapshot: bool = False

    def resume_after(self) -> int | None:
        """The afterVersion of the next connection (None: after its snapshot)."""
        self._skip = 0
        if self.last_version is not None:
            self._skip = self.yielded_at_last
            return self.last_version - 1
        if self.snapshot_version is not None and self.first_after is None:
            return self.snapshot_version
        return self.first_after

    @property
    def reconnecting(self) -> bool:
        return self.snapshot_version is not None

    def accept(self, event: pb.GameEvent) -> bool:
        """Whether ``event`` is news to the caller (and records it if so)."""
        if event.HasField("snapshot"):
            self.finished_snapshot = event.snapshot.status == pb.GAME_STATUS_FINISHED
            if self.snapshot_version is not None:
                return False
            self.snapshot_version = event.version
            return True
        if self._skip > 0 and event.version == self.last_version:
            self._skip -= 1
            return False
        self._skip = 0
        if event.version == self.last_version:
            self.yielded_at_last += 1
        else:
            self.last_version = event.version
            self.yielded_at_last = 1
        return True


def ended_early(game_id: str) -> RailyardError:
    return RailyardError(
        grpc.StatusCode.UNAVAILABLE,
        f"the watch of {game_id} ended before gameEnded",
        "STREAM_ENDED",
    )
