"""The line games of RULES.md 3.1-3.3: Block, Draw, All Fives, Bergen and
Matador, with 2v2 teams for Block, Draw and All Fives.

One state (:class:`LineGame`) and one rules type (:class:`LineRules`) serve
them all; :data:`SPECS` declares each game for the registry.

>>> game = SPECS["all_fives"].new(PRESETS["all_fives_teams"], 4, "demo")
>>> while not game.is_over():
...     view = game.view(game.current_seat)
...     _ = game.apply(greedy(view, game.legal_moves()))
>>> max(game.team_scores()) >= 250, len(game.winners)
(True, 2)
"""

from __future__ import annotations

from typing import Any, Final

from engine.game import GameSpec, GameState
from engine.games.line.bots import HOOKS, LineWorlds, describe, greedy, results
from engine.games.line.game import LineGame, build_line_view, replay, round_to_five
from engine.games.line.rules import (
    GAMES,
    MAX_PLAYERS,
    MIN_PLAYERS,
    PRESETS,
    BlockedScoring,
    LineRules,
    Opening,
    line_rules,
)


def _new(rules: Any, players: int, seed: str) -> GameState:
    return LineGame(rules, players, seed)


def _load(data: dict[str, Any]) -> GameState:
    return LineGame.from_dict(data)


#: Each line game's spec, by game name.
SPECS: Final[dict[str, GameSpec]] = {
    name: GameSpec(
        name=name,
        min_players=MIN_PLAYERS,
        max_players=MAX_PLAYERS,
        default_preset=name,
        presets={p: r for p, r in PRESETS.items() if r.game == name},
        options=frozenset(facts.options),
        new=_new,
        load=_load,
        bots=HOOKS,
        results=results,
        low_score_wins=False,  # CL-SC-2: the first to the target wins
        describe=describe,
    )
    for name, facts in GAMES.items()
}

__all__ = [
    "GAMES",
    "HOOKS",
    "PRESETS",
    "SPECS",
    "BlockedScoring",
    "LineGame",
    "LineRules",
    "LineWorlds",
    "Opening",
    "build_line_view",
    "greedy",
    "line_rules",
    "replay",
    "round_to_five",
]
