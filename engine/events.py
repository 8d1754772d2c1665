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
    DOMINO = "domino"  # MT-END-1
    BLOCKED = "blocked"  # MT-END-3


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
    round: int
    engine: Tile
    starter: int


class RoundEnded(NamedTuple):
    round: int
    reason: RoundEndReason
    scores: tuple[int, ...]


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
)


def for_seat(event: Event, seat: int | None) -> Event:
    """``event`` as ``seat`` may see it (``None``: a spectator)."""
    if type(event) is TileDrawn and event.seat != seat and event.tile is not None:
        return event._replace(tile=None)
    return event
