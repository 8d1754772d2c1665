"""What one seat (or a spectator) sees of a game: MT-VIS-1/2/3.

:func:`build_view` is the one function that turns a state into a view; every
field it copies is public, except ``hand``, which only the seat's own view
carries. Nothing about another hand or the boneyard's order is in a view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.mexican_train import GameStatus, MexicanTrain
from engine.moves import TrainRef
from engine.tiles import TILES, Tile

if TYPE_CHECKING:
    from engine.game import Rules


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


@dataclass(frozen=True, slots=True)
class OpenDoubleView:
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


def build_view(game: MexicanTrain, seat: int | None = None) -> GameView:
    """The view of ``game`` for ``seat`` (``None``: a spectator, public only)."""
    if seat is not None and not 0 <= seat < game.players:
        raise ValueError(f"no seat {seat} in a {game.players}-player game")
    counts, markers, scores = game.counts, game.markers, game.round_scores
    players = tuple(
        [
            PlayerView(s, counts[s], markers[s], sum(scores[s]), tuple(scores[s]))  # MT-SC-2
            for s in range(game.players)
        ]
    )
    trains = []
    tile_of = TILES.__getitem__
    codes = game.train_tiles
    for slot in range(game.slot_count):
        values = game.trains[slot]
        branches: tuple[BranchView, ...] = ()
        if len(values) == 1:  # no chicken foot (most trains): the quick way
            trains.append(
                TrainView(
                    game.train_ref(slot),
                    tuple(map(tile_of, codes[slot][0])),  # a C loop, tile by tile
                    (values[0],) if values[0] >= 0 else (),
                    slot < game.players and game.markers[slot],
                )
            )
            continue
        if len(values) > 1:
            branches = tuple(
                BranchView(
                    end,
                    None if parent < 0 else parent,
                    tuple(game.train_tiles_of(slot, end)),
                    None if value < 0 else value,
                )
                for end, (parent, value) in enumerate(
                    zip(game.branch_parent[slot], values, strict=True)
                )
            )
        trains.append(
            TrainView(
                game.train_ref(slot),
                tuple(game.train_tiles_of(slot, 0)),
                tuple(v for v in values if v >= 0),
                slot < game.players and game.markers[slot],
                branches,
            )
        )
    over = game.is_over()
    return GameView(
        version=game.version,
        status=game.status,
        over=over,
        ruleset=game.rules,
        round=game.round,
        rounds_total=game.rounds_total,
        engine=game.engine,
        current_seat=None if over else game.current_seat,
        boneyard_count=len(game.boneyard),
        players=players,
        trains=tuple(trains),
        open_doubles=tuple(OpenDoubleView(*d) for d in game.open_doubles()),
        turn=None
        if over
        else TurnView(game.owes, game.drew, game.first_turn_pending[game.current_seat]),
        hand=None if seat is None else tuple(game.hand(seat)),
        viewer_seat=seat,
        seed_sha256=game.seed_sha256,
        seed=game.seed if over else None,  # MT-FAIR-1: revealed once over
        winners=game.winners,
    )
