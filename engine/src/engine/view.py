"""What one seat (or a spectator) sees of a game: MT-VIS-1/2/3, CL-VIS-1.

One view type for every game (API.md's one GameView message). Each game
builds its views in one function of its own (``GameState.view``); every
field it copies is public, except ``hand``, which only the seat's own view
carries. Nothing about another hand or the boneyard's order is in a view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, NamedTuple, final

from engine.game import GameStatus
from engine.moves import TrainRef
from engine.tiles import Tile

if TYPE_CHECKING:
    from engine.game import GameState, Rules

# The view types are built for every answer the service gives (a move's
# view has one PlayerView a seat and one TrainView a train), so each has an
# ``__init__`` of its own: compiled (mypyc) it is a C function, where a
# frozen dataclass's generated one stays interpreted and sets each field
# through ``object.__setattr__``, which made the views a large share of a
# move's instructions. The dataclass decorator still writes
# ``__eq__``, ``__hash__`` and ``__repr__``; the fields are ``Final``, which
# mypy enforces, and the compiled build refuses at run time too.


@final
@dataclass(init=False, eq=True, unsafe_hash=True)
class PlayerView:
    seat: Final[int]
    hand_count: Final[int]
    marker: Final[bool]
    score: Final[int]
    round_scores: Final[tuple[int, ...]]

    def __init__(
        self, seat: int, hand_count: int, marker: bool, score: int, round_scores: tuple[int, ...]
    ) -> None:
        self.seat = seat
        self.hand_count = hand_count
        self.marker = marker
        self.score = score
        self.round_scores = round_scores


@final
@dataclass(init=False, eq=True, unsafe_hash=True)
class BranchView:
    """A branch of a chicken-footed train (MT-DBL-7); ``open_end`` is ``None`` once closed."""

    end: Final[int]
    parent_end: Final[int | None]
    tiles: Final[tuple[Tile, ...]]
    open_end: Final[int | None]

    def __init__(
        self, end: int, parent_end: int | None, tiles: tuple[Tile, ...], open_end: int | None
    ) -> None:
        self.end = end
        self.parent_end = parent_end
        self.tiles = tiles
        self.open_end = open_end


@final
@dataclass(init=False, eq=True, unsafe_hash=True)
class TrainView:
    """A train; ``tiles`` oriented ``{touching, open}`` in play order (API.md)."""

    ref: Final[TrainRef]
    tiles: Final[tuple[Tile, ...]]
    open_ends: Final[tuple[int, ...]]
    marker: Final[bool]
    branches: Final[tuple[BranchView, ...]]

    def __init__(
        self,
        ref: TrainRef,
        tiles: tuple[Tile, ...],
        open_ends: tuple[int, ...],
        marker: bool,
        branches: tuple[BranchView, ...] = (),
    ) -> None:
        self.ref = ref
        self.tiles = tiles
        self.open_ends = open_ends
        self.marker = marker
        self.branches = branches


class OpenDoubleView(NamedTuple):
    """A double still owed its answers (MT-DBL-1): where it is, its number,
    and the tiles played on it so far (a chicken foot wants three, MT-DBL-7).
    A named tuple: ``MexicanTrain.open_doubles`` lists these, and scenario
    tests write them as ``(train, value, answers)``."""

    train: TrainRef
    value: int
    answers: int


@final
@dataclass(init=False, eq=True, unsafe_hash=True)
class TurnView:
    owes_tile: Final[bool]
    drew_this_turn: Final[bool]
    first_turn: Final[bool]

    def __init__(self, owes_tile: bool, drew_this_turn: bool, first_turn: bool) -> None:
        self.owes_tile = owes_tile
        self.drew_this_turn = drew_this_turn
        self.first_turn = first_turn


@final
@dataclass(init=False, eq=True, unsafe_hash=True)
class LineView:
    """The single line of play of a classic game (CL-LINE-1): ``tiles`` from
    the left end to the right, each ``{a: left half, b: right half}``, and
    ``open_ends`` ``(left, right)`` (empty before the opening)."""

    tiles: Final[tuple[Tile, ...]]
    open_ends: Final[tuple[int, ...]]

    def __init__(self, tiles: tuple[Tile, ...], open_ends: tuple[int, ...]) -> None:
        self.tiles = tiles
        self.open_ends = open_ends


@final
@dataclass(init=False, eq=True, unsafe_hash=True)
class TeamView:
    """A team of CL-TEAM-1: its seats and its score (the sum of theirs)."""

    seats: Final[tuple[int, ...]]
    score: Final[int]

    def __init__(self, seats: tuple[int, ...], score: int) -> None:
        self.seats = seats
        self.score = score


@final
@dataclass(init=False, eq=True, unsafe_hash=True)
class GameView:
    version: Final[int]
    status: Final[GameStatus]
    over: Final[bool]
    #: The game's resolved options (its own rules type).
    ruleset: Final[Rules]
    round: Final[int]
    rounds_total: Final[int]
    #: The round's engine (Mexican Train); None in the line games.
    engine: Final[Tile | None]
    current_seat: Final[int | None]
    boneyard_count: Final[int]
    players: Final[tuple[PlayerView, ...]]
    trains: Final[tuple[TrainView, ...]]
    open_doubles: Final[tuple[OpenDoubleView, ...]]
    turn: Final[TurnView | None]
    hand: Final[tuple[Tile, ...] | None]
    viewer_seat: Final[int | None]
    seed_sha256: Final[str]
    seed: Final[str | None]
    winners: Final[tuple[int, ...]]
    #: The classic games (API.md): the line (``trains`` is then empty), the
    #: teams, and the score that ends the game (0: a fixed number of rounds).
    line: Final[LineView | None]
    teams: Final[tuple[TeamView, ...]]
    target_score: Final[int]

    def __init__(
        self,
        version: int,
        status: GameStatus,
        over: bool,
        ruleset: Rules,
        round: int,
        rounds_total: int,
        engine: Tile | None,
        current_seat: int | None,
        boneyard_count: int,
        players: tuple[PlayerView, ...],
        trains: tuple[TrainView, ...],
        open_doubles: tuple[OpenDoubleView, ...],
        turn: TurnView | None,
        hand: tuple[Tile, ...] | None,
        viewer_seat: int | None,
        seed_sha256: str,
        seed: str | None,
        winners: tuple[int, ...],
        line: LineView | None = None,
        teams: tuple[TeamView, ...] = (),
        target_score: int = 0,
    ) -> None:
        self.version = version
        self.status = status
        self.over = over
        self.ruleset = ruleset
        self.round = round
        self.rounds_total = rounds_total
        self.engine = engine
        self.current_seat = current_seat
        self.boneyard_count = boneyard_count
        self.players = players
        self.trains = trains
        self.open_doubles = open_doubles
        self.turn = turn
        self.hand = hand
        self.viewer_seat = viewer_seat
        self.seed_sha256 = seed_sha256
        self.seed = seed
        self.winners = winners
        self.line = line
        self.teams = teams
        self.target_score = target_score


def build_view(game: GameState, seat: int | None = None) -> GameView:
    """The view of ``game`` for ``seat`` (``None``: a spectator, public only)."""
    return game.view(seat)
