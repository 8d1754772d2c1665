"""Moves and train references, with the text form of API.md.

>>> m = Move.parse("12-5@p0")
>>> m.tile, m.train, str(m)
(Tile(a=5, b=12), TrainRef(kind=<TrainKind.SEAT: 'seat'>, number=0, end=0), '5-12@p0')
>>> str(Move.parse("3-4@p1.2")), str(Move.parse("draw")), str(Move.parse("5-12@m0!"))
('3-4@p1.2', 'draw', '5-12@m0!')
>>> Move.parse("6-1@l0:6").exposed, str(Move.parse("3-5@l1"))
(6, '3-5@l1')
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Final, NamedTuple

from engine.errors import MalformedMoveError
from engine.tiles import Tile


class TrainKind(StrEnum):
    SEAT = "seat"  # a player's own train (MT-TR-1)
    MEXICAN = "mexican"  # a Mexican train (MT-TR-2)
    LINE = "line"  # the single line of play of the classic games


class MoveKind(StrEnum):
    PLAY = "play"
    DRAW = "draw"  # MT-DR-1
    PASS = "pass"  # MT-DR-2
    END_TURN = "end"  # MT-FT-1, chain first turn only


_TRAIN_PREFIX: Final = {TrainKind.SEAT: "p", TrainKind.MEXICAN: "m", TrainKind.LINE: "l"}


class TrainRef(NamedTuple):
    """Where a tile goes: a seat's train, a Mexican train, or the classic line.

    ``end`` picks one open end when the target has several (the branches of a
    chicken foot, MT-DBL-7, numbered in order of creation, 0 being the trunk).
    """

    kind: TrainKind
    number: int
    end: int = 0

    @classmethod
    def seat(cls, seat: int, end: int = 0) -> TrainRef:
        return cls(TrainKind.SEAT, seat, end)

    @classmethod
    def mexican(cls, number: int = 0, end: int = 0) -> TrainRef:
        return cls(TrainKind.MEXICAN, number, end)

    def __str__(self) -> str:
        if self.kind is TrainKind.LINE:
            return f"l{self.end}"
        base = f"{_TRAIN_PREFIX[self.kind]}{self.number}"
        return f"{base}.{self.end}" if self.end else base


class Move(NamedTuple):
    """One move: play a tile on a train, draw, pass, or end a chain first turn.

    ``announce`` is the knock flag of MT-KNOCK-1 (written ``!`` after a play);
    it is ignored on any play that does not leave one tile. ``exposed`` is the
    number a two-way Matador matador leaves open (CL-MAT-1, written ``:n``
    after the end: ``1-6@l0:6``); ``None`` wherever a placement allows one way.
    """

    kind: MoveKind
    tile: Tile | None = None
    train: TrainRef | None = None
    announce: bool = False
    exposed: int | None = None

    @classmethod
    def play(
        cls, tile: Tile, train: TrainRef, announce: bool = False, exposed: int | None = None
    ) -> Move:
        return cls(MoveKind.PLAY, tile, train, announce, exposed)

    @classmethod
    def parse(cls, text: str) -> Move:
        """Parse the text form; raise :class:`MalformedMoveError` naming what is wrong."""
        if not isinstance(text, str):
            raise MalformedMoveError(f"a move is text, not {type(text).__name__}", rule="T-2")
        cached = _PARSED.get(text)
        if cached is not None:
            return cached
        move = _parse(text)
        if len(_PARSED) < 100_000:
            _PARSED[text] = move
        return move

    @property
    def notation(self) -> str:
        return str(self)

    def __str__(self) -> str:
        if self.kind is MoveKind.PLAY:
            if self.exposed is not None:
                return f"{self.tile}@{self.train}:{self.exposed}{'!' if self.announce else ''}"
            return f"{self.tile}@{self.train}{'!' if self.announce else ''}"
        return self.kind.value


DRAW: Final = Move(MoveKind.DRAW)
PASS: Final = Move(MoveKind.PASS)
END_TURN: Final = Move(MoveKind.END_TURN)

_SIMPLE: Final = {"draw": DRAW, "pass": PASS, "end": END_TURN}
_PLAY_RE: Final = re.compile(
    r"(\d{1,2}-\d{1,2})@(?:([pm])(\d{1,2})(?:\.(\d{1,3}))?|l(\d))(?::(\d{1,2}))?(!?)"
)
_PARSED: dict[str, Move] = {}


def _parse(text: str) -> Move:
    word = text.strip()
    simple = _SIMPLE.get(word.lower())
    if simple is not None:
        return simple
    m = _PLAY_RE.fullmatch(word.replace(" ", ""))
    if m is None:
        raise MalformedMoveError(
            f"{text!r} is not a move: write a-b@p<seat>, a-b@m<n>, a-b@p<seat>.<end>, "
            "draw, pass or end",
            rule="T-2",
        )
    tile = Tile.parse(m.group(1))
    if m.group(5) is not None:
        train = TrainRef(TrainKind.LINE, 0, int(m.group(5)))
    else:
        kind = TrainKind.SEAT if m.group(2) == "p" else TrainKind.MEXICAN
        train = TrainRef(kind, int(m.group(3)), int(m.group(4) or 0))
    exposed = None if m.group(6) is None else int(m.group(6))
    return Move(MoveKind.PLAY, tile, train, m.group(7) == "!", exposed)


def parse_move(text: str) -> Move:
    """Same as :meth:`Move.parse`."""
    return Move.parse(text)


def format_move(move: Move) -> str:
    """Same as ``str(move)``."""
    return str(move)
