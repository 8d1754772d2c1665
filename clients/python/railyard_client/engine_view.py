"""The engine's bots choosing a seat's move from what the service sent, for
:mod:`railyard_client.bot`'s ``--level``.

Imported only there, and only where the engine is installed
(``pip install 'railyard-client[bots]'``): the client itself never needs
it. The bot reads the seat's view (:func:`railyard_api.convert.view_from_proto`),
so it sees what the seat sees and nothing more (MT-VIS-3).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import engine.bots
from railyard_api import convert
from railyard_api import game_service_pb2 as pb


def chooser(
    level: str, budget: int | None = None
) -> Callable[[pb.GameView, Sequence[pb.LegalMove]], pb.LegalMove]:
    """``choose(view, legal)`` by the engine's bot ``level`` (random, greedy, expert)."""

    def choose(view: pb.GameView, legal: Sequence[pb.LegalMove]) -> pb.LegalMove:
        moves = [convert.move_from_proto(entry.move) for entry in legal]
        picked = engine.bots.choose(level, convert.view_from_proto(view), moves, budget=budget)
        return legal[moves.index(picked)]

    return choose
