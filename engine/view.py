"""What one seat (or a spectator) sees of a game: MT-VIS-1/2/3, CL-VIS-1.

One view type for every game (API.md's one GameView message). Each game
builds its views in one function of its own (``GameState.view``); every
field it copies is public, except ``hand``, which only the seat's own view
carries. Nothing about another hand or the boneyard's order is in a view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from engine.game import GameStatus
from engine.moves import TrainRef
from engine.tiles import Tile

if TYPE_CHECKING:
    from engine.game import GameState, Rules


@dataclass(frozen=True, slots=True)
class PlayerView:
    seat: int
    hand_count: int
    marker: bool
    score: int
    round_scores: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class BranchView:
    """A branch of a chicken-footed train (MT-DBL-7); ``open_end`` is ``None`` once closed."""

    end: int
    parent_end: int | None
    tiles: tuple[Tile, ...]
    open_end: int | None


@dataclass(frozen=True, slots=True)
class TrainView:
    """A train; ``tiles`` oriented ``{touching, open}`` in play order (API.md)."""

    ref: TrainRef
    tiles: tuple[Tile, ...]
    open_ends: tuple[int, ...]
    marker: bool
    branches: tuple[BranchView, ...] = ()


class OpenDoubleView(NamedTuple):
    """A double still owed its answers (MT-DBL-1): where it is, its number,
    and the tiles played on it so far (a chicken foot wants three, MT-DBL-7).
    A named tuple: ``MexicanTrain.open_doubles`` lists these, and scenario
    tests write them as ``(train, value, answers)``."""

    train: TrainRef
    value: int
    answers: int


@dataclass(frozen=True, slots=True)
class TurnView:
    owes_tile: bool
    drew_this_turn: bool
    first_turn: bool


@dataclass(frozen=True, slots=True)
class LineView:
    """The single line of play of a classic game (CL-LINE-1): ``tiles`` from
    the left end to the right, each ``{a: left half, b: right half}``, and
    ``open_ends`` ``(left, right)`` (empty before the opening)."""

    tiles: tuple[Tile, ...]
    open_ends: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TeamView:
    """A team of CL-TEAM-1: its seats and its score (the sum of theirs)."""

    seats: tuple[int, ...]
    score: int


@dataclass(frozen=True, slots=True)
class GameView:
    version: int
    status: GameStatus
    over: bool
    #: The game's resolved options (its own rules type).
    ruleset: Rules
    round: int
    rounds_total: int
    #: The round's engine (Mexican Train); None in the line games.
    engine: Tile | None
    current_seat: int | None
    boneyard_count: int
    players: tuple[PlayerView, ...]
    trains: tuple[TrainView, ...]
    open_doubles: tuple[OpenDoubleView, ...]
    turn: TurnView | None
    hand: tuple[Tile, ...] | None
    viewer_seat: int | None
    seed_sha256: str
    seed: str | None
    winners: tuple[int, ...]
    #: The classic games (API.md): the line (``trains`` is then empty), the
    #: teams, and the score that ends the game (0: a fixed number of rounds).
    line: LineView | None = None
    teams: tuple[TeamView, ...] = ()
    target_score: int = 0


def build_view(game: GameState, seat: int | None = None) -> GameView:
    """The view of ``game`` for ``seat`` (``None``: a spectator, public only)."""
    return game.view(seat)
