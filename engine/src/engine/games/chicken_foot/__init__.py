"""Chicken Foot (RULES.md CL-CF-1): its rules, its game on the Mexican Train
engine, its bots, and the :class:`~engine.game.GameSpec` the registry lists.

>>> from engine.games.chicken_foot import SPEC
>>> game = SPEC.new(SPEC.presets["chicken_foot_game"], 3, "cf")
>>> game.hand_count(0), len(game.view(0).trains)
(15, 6)
"""

from __future__ import annotations

from typing import Any, Final

from engine.game import GameSpec, GameState
from engine.games.chicken_foot.bots import HOOKS, describe, results
from engine.games.chicken_foot.game import ChickenFoot
from engine.games.chicken_foot.rules import (
    MAX_PLAYERS,
    MIN_PLAYERS,
    OPTIONS,
    PRESETS,
    ChickenFootRules,
)


def _new(rules: Any, players: int, seed: str) -> GameState:
    return ChickenFoot(rules, players, seed)


SPEC: Final = GameSpec(
    name=ChickenFoot.name,
    min_players=MIN_PLAYERS,
    max_players=MAX_PLAYERS,
    default_preset="chicken_foot_game",
    presets=dict(PRESETS),
    options=frozenset(OPTIONS),
    new=_new,
    load=ChickenFoot.from_dict,
    bots=HOOKS,
    results=results,
    low_score_wins=True,  # CL-CF-1: the lowest total wins
    describe=describe,
)

__all__ = ["HOOKS", "PRESETS", "SPEC", "ChickenFoot", "ChickenFootRules"]
