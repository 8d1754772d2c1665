"""Computer players. A bot decides from a seat's view and legal moves only:
it is never handed the full state, so it cannot see another hand.

Until the bots issue lands every level plays uniformly at random; choices are
seeded from the game's seed and version so a game with bots replays exactly.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from engine.moves import Move
from engine.view import GameView


def random_move(view: GameView, legal: Sequence[Move], key: str) -> Move:
    """A uniformly random legal move, the same one for the same ``key``."""
    if not legal:
        raise ValueError("no legal move to choose from")
    del view  # the random bot needs nothing else; the signature is every bot's
    return legal[random.Random(key).randrange(len(legal))]
