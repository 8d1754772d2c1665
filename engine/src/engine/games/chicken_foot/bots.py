"""Chicken Foot's bots (CL-BOT-1): Mexican Train's, on the same engine.

The greedy heuristics (:func:`engine.games.mexican_train.bots.play_scores`)
read a view with no own train: every line is shared, so the "keep a chain
for your own train" terms fall away and what stays is Chicken Foot's sense:
shed heavy tiles (every hand is scored, 0-0 at 50), prefer ends the hand can
follow, and play a double only with a tile of its number left to answer it.
The expert's search is the shared one (``engine/expert.py``) over
determinizations of Chicken Foot positions, with Mexican Train's reward (the
round's win less a weight per pip left).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Final

from engine.game import BotHooks
from engine.games.chicken_foot.game import ChickenFoot
from engine.games.chicken_foot.rules import ChickenFootRules
from engine.games.mexican_train import bots as mexican_train_bots
from engine.games.mexican_train.determinize import Determinizer
from engine.moves import Move
from engine.view import GameView


def _worlds(view: GameView, legal: Sequence[Move]) -> Determinizer:
    return Determinizer(view, legal, ChickenFoot)


def describe(rules: ChickenFootRules) -> str:
    """The arena's line for resolved Chicken Foot rules."""
    return (
        f"double-{rules.set_max}, {rules.hand_size} tiles, {rules.center_lines} lines, "
        f"{rules.rounds} round(s) a game, 0-0 counts {rules.double_blank_value}"
    )


HOOKS: Final[BotHooks] = dataclasses.replace(mexican_train_bots.HOOKS, worlds=_worlds)
results = mexican_train_bots.results
