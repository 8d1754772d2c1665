"""``module:function`` bots for the arena's and the ladder's tests, written to
railyard-bot's ``--module`` contract: ``choose(view, legal)`` of a
``pb.GameView`` and ``pb.LegalMove`` list."""

from __future__ import annotations

from collections.abc import Sequence

from railyard_api import game_service_pb2 as pb


def _pips(entry: pb.LegalMove) -> int:
    if not entry.move.HasField("play"):
        return 1000  # draw, pass or end: only when nothing is played
    tile = entry.move.play.tile
    return tile.a + tile.b


def lightest(view: pb.GameView, legal: Sequence[pb.LegalMove]) -> str:
    """Deliberately weak: sheds the lightest tile and keeps the heavy ones
    (MT-SC-1 counts what is held); answers with a notation."""
    del view
    return min(legal, key=_pips).notation


def first_move(view: pb.GameView, legal: Sequence[pb.LegalMove]) -> pb.Move:
    """The first legal move, answered as a bare ``pb.Move``."""
    del view
    return legal[0].move


def illegal(view: pb.GameView, legal: Sequence[pb.LegalMove]) -> str:
    """Chooses a move that is never legal."""
    del view, legal
    return "13-13@p9"


def broken(view: pb.GameView, legal: Sequence[pb.LegalMove]) -> pb.LegalMove:
    """Raises, as a bot with a bug would."""
    raise ZeroDivisionError("a bug in the bot")


NOT_A_FUNCTION = 3
