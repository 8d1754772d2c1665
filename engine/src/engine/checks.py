"""What a caller passed as a move, checked for its shape (T-1, T-2).

Every game's ``apply`` takes whatever it is given and, when that is not one
of its legal moves, first asks :func:`well_formed` what it is. This module is
left interpreted when the engine is compiled (``setup.py``): a compiled
function refuses an argument of another type before its body runs, with a
``TypeError`` naming the type, while these checks say exactly what was wrong
with the input, the same in both builds.

>>> from engine.moves import Move
>>> str(well_formed(Move.parse("12-5@p0"), 12))
'5-12@p0'
>>> well_formed("5-12@p0", 12)
Traceback (most recent call last):
...
engine.errors.MalformedMoveError: '5-12@p0' is not a move [T-2]
"""

from __future__ import annotations

from typing import Any

from engine.errors import MalformedMoveError
from engine.moves import Move, MoveKind, TrainKind, TrainRef
from engine.tiles import TILES


def _number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def well_formed(move: Any, set_max: int) -> Move:
    """``move`` as a :class:`Move` the rules can judge, or a
    :class:`MalformedMoveError` saying what it is not: a play names a tile of
    the double-``set_max`` set (written low half first, as the legal moves
    are) and a train, with a number or nothing as ``exposed``; a draw, a pass
    or an end names none of them. Whether it is legal is the game's to say."""
    if not isinstance(move, Move) or not isinstance(move.kind, MoveKind):
        raise MalformedMoveError(f"{move!r} is not a move", rule="T-2")
    tile, train, exposed = move.tile, move.train, move.exposed
    if move.kind is not MoveKind.PLAY:
        if tile is not None or train is not None or exposed is not None:
            raise MalformedMoveError(f"{move.kind.value} takes no tile or train", rule="T-2")
        return move
    if not isinstance(tile, tuple) or not isinstance(train, TrainRef):
        raise MalformedMoveError("a play names a tile and a train", rule="T-2")
    if len(tile) != 2 or not all(map(_number, tile)):
        raise MalformedMoveError(f"{tile!r} is not a tile", rule="T-2")
    if not isinstance(train.kind, TrainKind) or not (_number(train.number) and _number(train.end)):
        raise MalformedMoveError(f"{train!r} is not a train", rule="T-2")
    a, b = min(tile), max(tile)
    if a < 0 or b > set_max:
        raise MalformedMoveError(f"{a}-{b} is not a tile of the double-{set_max} set", rule="T-1")
    if exposed is not None and not _number(exposed):
        raise MalformedMoveError(f"{exposed!r} is not a number", rule="T-2")
    return Move(MoveKind.PLAY, TILES[a << 5 | b], train, bool(move.announce), exposed)
