"""The presets tests iterate: Mexican Train's (for its own rule tests), the
classic games' (RULES.md section 3), and every game's with a player count
each can seat."""

from __future__ import annotations

from typing import Final

import engine
from engine.games.line import GAMES as LINE_GAMES

#: Mexican Train's presets (RULES.md section 2), by name.
MEXICAN_TRAIN_PRESETS: Final = engine.GAMES["mexican_train"].presets

#: Chicken Foot's presets (RULES.md CL-CF-1), by name: a game of its own on
#: Mexican Train's engine.
CHICKEN_FOOT_PRESETS: Final = engine.GAMES["chicken_foot"].presets

#: The classic games' presets (block, block_teams, draw, ...), in ListRulesets' order.
LINE_PRESETS: Final = tuple(name for name, r in engine.PRESETS.items() if r.game in LINE_GAMES)


def players_for(preset: str, wanted: int) -> int:
    """``wanted`` players if ``preset`` can seat them, else the nearest count
    it can (a team game: 4; a double-six line game: at most 4)."""
    rules = engine.preset(preset)
    for count in sorted(range(2, 15), key=lambda n: (abs(n - wanted), n)):
        try:
            rules.resolve(count)
        except engine.RulesetError:
            continue
        return count
    raise AssertionError(f"preset {preset} seats nobody")


def is_line_game(preset: str) -> bool:
    """Whether ``preset`` is a classic game's (a line of play, to a target
    score); Chicken Foot (CL-CF-1) is not: it plays on Mexican trains."""
    return engine.preset(preset).game in LINE_GAMES


def draws(preset: str) -> bool:
    """Whether a player of ``preset``'s game who cannot place draws (Mexican
    Train, CL-DRAW-1) or passes (CL-BLOCK-1: Block, Bergen)."""
    game = engine.preset(preset).game
    return game not in LINE_GAMES or LINE_GAMES[game].draws
