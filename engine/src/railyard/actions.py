"""The fixed action space of a game: every move as one index of a ``Discrete(n)``.

A learning agent needs the same index to mean the same move in every
position, so the layout is derived from the resolved rules and the player
count alone, never from a position:

* ``0`` draw (MT-DR-1, CL-DRAW-1), ``1`` pass (MT-DR-2, CL-BLOCK-1), ``2``
  end a chain first turn (MT-FT-1): in every game, masked out where the
  game has no such move;
* then one index per (tile, target, variant): tiles in the set's canonical
  order (``0-0, 0-1, ..., N-N``, T-2), for each tile every target in
  :attr:`ActionLayout.targets` order, for each target the tile's variants.

Targets: Mexican Train, each seat's train then each Mexican train, each
with every end a chicken foot can open (MT-DBL-7: 1 + 3N ends on a
double-N set, else 1); Chicken Foot, each line with as many ends
(CL-CF-1); the line games, the left and the right end (CL-LINE-1).
Variants: the knock announcement where ``knock_rule`` is ``penalty``
(MT-KNOCK-1: a plain and an announced play), and the number a two-way
matador leaves open in Matador (CL-MAT-1: none, the low half, the high
half); otherwise one.

>>> import engine
>>> layout = action_layout(engine.ruleset("block"), players=2)
>>> layout.size, [str(layout.decode(i)) for i in (0, 1, 2, 3, 4, 5)]
(59, ['draw', 'pass', 'end', '0-0@l0', '0-0@l1', '0-1@l0'])
>>> layout.encode(engine.Move.parse("6-6@l1"))
58
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Iterable
from typing import Final, NamedTuple, SupportsIndex

import numpy as np
import numpy.typing as npt

from engine import DRAW, END_TURN, PASS, DoubleAnswer, KnockRule, Move, Ruleset, Tile, TrainRef
from engine.game import Rules
from engine.games.chicken_foot.rules import ChickenFootRules
from engine.games.line.rules import LineRules, Matching
from engine.moves import TrainKind

#: The moves that carry no tile, at indices 0, 1 and 2 in every game.
SPECIAL_MOVES: Final = (DRAW, PASS, END_TURN)

#: CL-MAT-1: the matadors that may face either way (0-0 leaves 0 whichever way).
TWO_WAY_MATADORS: Final = (Tile(1, 6), Tile(2, 5), Tile(3, 4))

#: A play's variant: its knock announcement (MT-KNOCK-1) and the number it
#: leaves open (CL-MAT-1), as :class:`~engine.Move` carries them.
Variant = tuple[bool, int | None]

_PLAIN: Final[tuple[Variant, ...]] = ((False, None),)
_KNOCK: Final[tuple[Variant, ...]] = ((False, None), (True, None))


def branch_ends(set_max: int) -> int:
    """MT-DBL-7: the most ends one train can have on a double-``set_max`` set.

    Each chicken-foot double opens three branches (numbered in order of
    creation, 0 being the trunk), and a round has ``set_max`` doubles that
    can be played (the round's engine is in the station): 1 + 3N ends.

    >>> branch_ends(12), branch_ends(9)
    (37, 28)
    """
    return 1 + 3 * set_max


class ActionLayout:
    """Every move of one game (rules resolved for a player count) as an index.

    :meth:`encode` and :meth:`decode` are inverse over every index: a move
    maps to exactly one index and back. :meth:`mask` marks a position's
    legal moves.
    """

    __slots__ = (
        "_decoded",
        "_encoded",
        "_offsets",
        "_target_index",
        "_tile_index",
        "_variant_index",
        "game",
        "players",
        "set_max",
        "size",
        "targets",
        "tiles",
        "variants",
    )

    def __init__(
        self,
        game: str,
        players: int,
        set_max: int,
        targets: tuple[TrainRef, ...],
        variants: tuple[tuple[Variant, ...], ...],
    ) -> None:
        #: The registry name of the game.
        self.game: Final = game
        self.players: Final = players
        self.set_max: Final = set_max
        #: The set's tiles in canonical order (T-2).
        self.tiles: Final = tuple(
            Tile(a, b) for a in range(set_max + 1) for b in range(a, set_max + 1)
        )
        if len(variants) != len(self.tiles):
            raise ValueError(f"{len(variants)} variant lists for {len(self.tiles)} tiles")
        #: Every place a tile may go, in index order.
        self.targets: Final = targets
        #: Each tile's variants, in index order.
        self.variants: Final = variants
        offsets = []
        start = len(SPECIAL_MOVES)
        for kinds in variants:
            offsets.append(start)
            start += len(targets) * len(kinds)
        self._offsets: Final = tuple(offsets)
        #: ``n`` of the ``Discrete(n)``.
        self.size: Final = start
        self._tile_index: Final = {tile: i for i, tile in enumerate(self.tiles)}
        self._target_index: Final = {ref: i for i, ref in enumerate(targets)}
        self._variant_index: Final = [{v: k for k, v in enumerate(kinds)} for kinds in variants]
        # Filled as met: a game's legal moves repeat, and a move is a hashable value.
        self._encoded: dict[Move, int] = {m: i for i, m in enumerate(SPECIAL_MOVES)}
        self._decoded: dict[int, Move] = dict(enumerate(SPECIAL_MOVES))

    def __repr__(self) -> str:
        return (
            f"<ActionLayout {self.game} {self.players}p double-{self.set_max}: "
            f"{self.size} actions, {len(self.targets)} targets>"
        )

    def encode(self, move: Move) -> int:
        """The index of ``move``; :class:`ValueError` when this layout has none
        (a tile outside the set, a target or variant the rules never offer)."""
        index = self._encoded.get(move)
        if index is not None:
            return index
        tile, train = move.tile, move.train
        tile_index = None if tile is None else self._tile_index.get(tile)
        target_index = None if train is None else self._target_index.get(train)
        if tile_index is None or target_index is None:
            raise ValueError(f"{move} is not a move of {self!r}")
        variant_index = self._variant_index[tile_index].get((move.announce, move.exposed))
        if variant_index is None:
            raise ValueError(f"{move} is not a move of {self!r}: no such variant of {tile}")
        count = len(self.variants[tile_index])
        index = self._offsets[tile_index] + target_index * count + variant_index
        self._encoded[move] = index
        return index

    def decode(self, action: SupportsIndex) -> Move:
        """The move at index ``action`` (any integer type, numpy's included);
        :class:`ValueError` outside ``0 .. size - 1``."""
        index = operator.index(action)
        move = self._decoded.get(index)
        if move is not None:
            return move
        if not 0 <= index < self.size:
            raise ValueError(f"action {index} is outside 0..{self.size - 1} of {self!r}")
        tile_index = bisect.bisect_right(self._offsets, index) - 1
        kinds = self.variants[tile_index]
        target_index, variant_index = divmod(index - self._offsets[tile_index], len(kinds))
        announce, exposed = kinds[variant_index]
        move = Move.play(self.tiles[tile_index], self.targets[target_index], announce, exposed)
        self._decoded[index] = move
        return move

    def mask(self, legal: Iterable[Move]) -> npt.NDArray[np.int8]:
        """1 at the index of each move of ``legal``, 0 elsewhere (a new array)."""
        mask = np.zeros(self.size, dtype=np.int8)
        encode = self.encode
        for move in legal:
            mask[encode(move)] = 1
        return mask


class TrainShape(NamedTuple):
    """Where tiles go in Mexican Train and Chicken Foot: the trains, in slot
    order (the seats' own, then the Mexican trains or lines), and the ends
    each may have."""

    #: Trains that belong to a seat (MT-TR-1; none in Chicken Foot, CL-CF-1).
    personal: int
    #: Every train: the seats' own, then the Mexican trains (MT-TR-2) or lines.
    trains: int
    #: Ends per train: 1, or 1 + 3N where doubles are chicken feet (MT-DBL-7).
    ends: int

    def refs(self) -> list[TrainRef]:
        """Every (train, end) as the engine addresses it, slot by slot."""
        ends = range(self.ends)
        seats = [TrainRef.seat(seat, end) for seat in range(self.personal) for end in ends]
        shared = range(self.trains - self.personal)
        return seats + [TrainRef.mexican(number, end) for number in shared for end in ends]


def train_shape(rules: Rules, players: int) -> TrainShape | None:
    """The trains of resolved Mexican Train or Chicken Foot rules; ``None``
    for a line game (its one line has two ends, CL-LINE-1)."""
    set_max = rules.set_max
    assert set_max is not None, "resolved rules"
    if isinstance(rules, ChickenFootRules):
        # CL-CF-1: no personal trains; the lines are addressed as Mexican
        # trains, every double a chicken foot.
        return TrainShape(0, rules.center_lines, branch_ends(set_max))
    if isinstance(rules, Ruleset):
        # MT-DBL-7: branches only where doubles are chicken feet.
        chicken = rules.double_answer is DoubleAnswer.CHICKEN_FOOT
        return TrainShape(
            players, players + rules.mexican_trains, branch_ends(set_max) if chicken else 1
        )
    if isinstance(rules, LineRules):
        return None
    raise TypeError(f"no action layout for {type(rules).__name__} ({rules.game})")


def action_layout(rules: Rules, players: int) -> ActionLayout:
    """The layout of ``rules`` (a preset's or any ruleset) for ``players``.

    The rules are resolved first (the set of ``by_set`` follows the player
    count, MT-SET-1); what they refuse is refused here.
    """
    resolved = rules.resolve(players)
    set_max = resolved.set_max
    assert set_max is not None, "resolve() fills the set"
    tiles = [Tile(a, b) for a in range(set_max + 1) for b in range(a, set_max + 1)]
    shape = train_shape(resolved, players)
    variants: tuple[tuple[Variant, ...], ...]
    if shape is None:
        assert isinstance(resolved, LineRules)
        # CL-LINE-1: end 0 (left) and end 1 (right).
        targets = [TrainRef(TrainKind.LINE, 0, end) for end in (0, 1)]
        two_way = resolved.facts.matching is Matching.SEVENS
        variants = tuple(
            # CL-MAT-1: one play per number the matador leaves open; none on the opening.
            ((False, None), (False, tile.a), (False, tile.b))
            if two_way and tile in TWO_WAY_MATADORS
            else _PLAIN
            for tile in tiles
        )
    else:
        targets = shape.refs()
        # MT-KNOCK-1: the play that leaves one tile comes plain and announced
        # (Chicken Foot has no knock rule).
        knock = isinstance(resolved, Ruleset) and resolved.knock_rule is KnockRule.PENALTY
        variants = (_KNOCK if knock else _PLAIN,) * len(tiles)
    return ActionLayout(resolved.game, players, set_max, tuple(targets), variants)
