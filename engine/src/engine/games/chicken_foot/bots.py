"""Chicken Foot's bots (CL-BOT-1): Mexican Train's, on the same engine.

The greedy heuristics (:func:`engine.games.mexican_train.bots.play_scores`)
read a view with no own train: every line is shared, so the "keep a chain
for your own train" terms fall away and what stays is Chicken Foot's sense:
shed heavy tiles (every hand is scored, 0-0 at 50), prefer ends the hand can
follow, and play a double only with a tile of its number left to answer it.
The expert's search is the shared one (``engine/expert.py``) over
determinizations of Chicken Foot positions, with the greedy heuristics for
every seat and the default budget; its reward is the round's win less
:data:`PIP_WEIGHT` per pip left. Mexican Train's expert has weights, a
budget and a pip weight of its own, measured on Mexican Train: they are
not carried over untried.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Final

from engine.game import BotHooks, GameState
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


#: Reward per pip left beside the round's win (1): every hand is scored (CL-CF-1).
PIP_WEIGHT: Final = 0.1


def _playout_policy(state: GameState, searcher: int) -> Callable[[Sequence[Move]], Move]:
    del searcher  # every seat plays the greedy heuristics
    return mexican_train_bots.playout_policy(state, -1)


def _reward(state: GameState, seat: int) -> float:
    return mexican_train_bots.round_reward(state, seat, PIP_WEIGHT)


HOOKS: Final[BotHooks] = dataclasses.replace(
    mexican_train_bots.HOOKS,
    worlds=_worlds,
    playout_policy=_playout_policy,
    reward=_reward,
    expert_scores=None,
    budget=None,
)
results = mexican_train_bots.results
