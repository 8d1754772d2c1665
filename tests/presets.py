"""The presets tests iterate: Mexican Train's (for its own rule tests), and
every game's with a player count each can seat."""

from __future__ import annotations

from typing import Final

import engine

#: Mexican Train's presets (RULES.md section 2), by name.
MEXICAN_TRAIN_PRESETS: Final = engine.GAMES["mexican_train"].presets


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
    return engine.preset(preset).game != "mexican_train"
