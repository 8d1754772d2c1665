"""What an applied move caused, in the event kinds of API.md.

Events are full records; :func:`for_seat` hides what a seat may not see
(MT-DR-3: another seat's drawn tile) before an event leaves the engine.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

from engine.moves import TrainRef
from engine.tiles import Tile


class RoundEndReason(StrEnum):
    DOMINO = "domino"  # MT-END-1, CL-END-1
    BLOCKED = "blocked"  # MT-END-3, CL-END-1


class PointsReason(StrEnum):
    """Why points were scored during play (the classic games)."""

    FIVES = "fives"  # CL-A5-1: the ends add up to a multiple of 5
    DOUBLE_HEADER = "double_header"  # CL-BERGEN-1
    TRIPLE_HEADER = "triple_header"  # CL-BERGEN-1
    HAND_WON = "hand_won"  # CL-BERGEN-1: the hand's winner scores 2


class TilePlayed(NamedTuple):
    seat: int
    tile: Tile
    train: TrainRef


class TileDrawn(NamedTuple):
    """A draw; ``tile`` is ``None`` in every stream but the drawer's (MT-DR-3).

    ``why`` says what made the draw: ``move`` (MT-DR-1), ``penalty``
    (MT-KNOCK-1) or ``engine_search`` (MT-ENG-1 ``holder_plays``).
    """

    seat: int
    tile: Tile | None
    why: str = "move"


class Passed(NamedTuple):
    seat: int


class MarkerPlaced(NamedTuple):
    seat: int


class MarkerRemoved(NamedTuple):
    seat: int


class DoubleSatisfied(NamedTuple):
    """A double stopped being open: covered (answered three times under
    MT-DBL-7), or ``dead`` (MT-DBL-5)."""

    train: TrainRef
    value: int
    dead: bool = False


class TurnStarted(NamedTuple):
    seat: int


class RoundStarted(NamedTuple):
    """A round (a hand) was dealt; ``engine`` is Mexican Train's, ``None`` in
    the line games; ``starter`` the seat that moves first."""

    round: int
    engine: Tile | None
    starter: int


class RoundEnded(NamedTuple):
    """A round (a hand, in the classic games) ended; ``scores`` per seat.
    ``winner`` is the seat that won a classic game's hand (``None`` on a tie,
    and in Mexican Train, where every seat scores its own hand)."""

    round: int
    reason: RoundEndReason
    scores: tuple[int, ...]
    winner: int | None = None


class PointsScored(NamedTuple):
    """Points scored during play (CL-A5-1, CL-BERGEN-1), credited to ``seat``
    (and, when teams play, to its ``team``)."""

    seat: int
    points: int
    reason: PointsReason
    team: int | None = None


class GameEnded(NamedTuple):
    totals: tuple[int, ...]
    winners: tuple[int, ...]
    seed: str


Event = (
    TilePlayed
    | TileDrawn
    | Passed
    | MarkerPlaced
    | MarkerRemoved
    | DoubleSatisfied
    | TurnStarted
    | RoundStarted
    | RoundEnded
    | GameEnded
    | PointsScored
)


def for_seat(event: Event, seat: int | None) -> Event:
    """``event`` as ``seat`` may see it (``None``: a spectator)."""
    if type(event) is TileDrawn and event.seat != seat and event.tile is not None:
        return event._replace(tile=None)
    return event
