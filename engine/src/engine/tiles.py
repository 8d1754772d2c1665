"""Tiles (T-1, T-2): values, ids, the canonical order of a set.

Inside the engine a tile is a small int id, ``a << 5 | b`` with ``a <= b``,
so that hands can be bit masks and a tile's halves come back with one shift
and one mask. The public value is :class:`Tile`.
"""

from __future__ import annotations

import functools
import re
from typing import Final, NamedTuple

from engine.errors import MalformedMoveError

#: T-1: the largest set the engine plays (double-18).
MAX_SET: Final = 18
MIN_SET: Final = 6

_TILE_RE: Final = re.compile(r"\s*(\d{1,2})\s*-\s*(\d{1,2})\s*")


class Tile(NamedTuple):
    """A domino ``a-b`` with ``a <= b`` (T-2); ``Tile.of(12, 5)`` is ``5-12``.

    >>> Tile.parse("12-5")
    Tile(a=5, b=12)
    >>> str(Tile(5, 12)), Tile(5, 12).pips, Tile(6, 6).is_double
    ('5-12', 17, True)
    """

    a: int
    b: int

    @classmethod
    def of(cls, x: int, y: int) -> Tile:
        """The tile with halves ``x`` and ``y`` in either order."""
        return TILES[tile_id(x, y)]

    @classmethod
    def parse(cls, text: str) -> Tile:
        """Parse ``a-b`` (either order); raise :class:`MalformedMoveError` otherwise."""
        m = _TILE_RE.fullmatch(text)
        if m is None:
            raise MalformedMoveError(f"{text!r} is not a tile: write it a-b, e.g. 5-12", rule="T-2")
        x, y = int(m.group(1)), int(m.group(2))
        if x > MAX_SET or y > MAX_SET:
            raise MalformedMoveError(
                f"{text!r} is not a tile: halves go from 0 to {MAX_SET}", rule="T-1"
            )
        return cls.of(x, y)

    @property
    def pips(self) -> int:
        """The pip value ``a + b`` (T-2; T-3 applies only when a round is scored)."""
        return self.a + self.b

    @property
    def is_double(self) -> bool:
        return self.a == self.b

    @property
    def id(self) -> int:
        return self.a << 5 | self.b

    def __str__(self) -> str:
        return f"{self.a}-{self.b}"


def tile_id(x: int, y: int) -> int:
    """The id of the tile with halves ``x`` and ``y`` (either order)."""
    return x << 5 | y if x <= y else y << 5 | x


#: Every tile of the largest set, indexed by id (holes are ``None``-free: unused ids
#: map to a sentinel never handed out).
TILES: Final[list[Tile]] = [Tile(i >> 5, i & 31) for i in range((MAX_SET + 1) << 5)]


def set_size(n: int) -> int:
    """T-1: a double-N set holds (N+1)(N+2)/2 tiles."""
    return (n + 1) * (n + 2) // 2


@functools.cache
def canonical_ids(n: int) -> tuple[int, ...]:
    """The ids of the double-N set in canonical order (by ``a``, then ``b``)."""
    return tuple(a << 5 | b for a in range(n + 1) for b in range(a, n + 1))


# Hands as per-pip bit masks, the representation every game's state uses:
# ``hand[v]`` has bit ``x`` set when the hand holds the tile ``v-x`` (a
# tile is in the masks of both its numbers).

#: ``TILE_BITS[id]`` for a tile id ``a << 5 | b`` (any orientation): the mask
#: updates ``(a, 1 << b, b, 1 << a)`` that add it to or remove it from a hand.
TILE_BITS: Final = [(i >> 5, 1 << (i & 31), i & 31, 1 << (i >> 5)) for i in range(1024)]

#: ``TILE_OF_PAIR[v][x]``: the id of the tile ``v-x``.
TILE_OF_PAIR: Final = [[min(v, x) << 5 | max(v, x) for x in range(32)] for v in range(32)]


def hand_ids(hand: list[int]) -> list[int]:
    """The tile ids of a hand of per-pip masks, in canonical order.

    >>> hand_ids([0b10, 0b1, 0, 0b1000])  # 0-1 (in masks 0 and 1), 3-3
    [1, 99]
    """
    ids = []
    for a, mask in enumerate(hand):
        bits = mask >> a << a  # the tiles a-b with b >= a, each listed once
        while bits:
            low = bits & -bits
            ids.append(a << 5 | (low.bit_length() - 1))
            bits ^= low
    return ids
