"""The bot levels of the line games through the arena (CL-BOT-1): greedy
beats random in every game and team preset, with the arena's 95%
intervals apart; the expert decides the same move for the same view and
key, and its search keeps Mexican Train's switch margin.

The expert against greedy is too slow for a unit test (docs/bots.md "Strength
and speed": minutes per game at the default budget); its figures are
measured with ``railyard arena``.
"""

from __future__ import annotations

import time

import pytest

from engine.arena import ArenaConfig, run, summarize
from engine.bots import bot_key, choose
from engine.expert import SWITCH_MARGIN, _pick
from engine.games.line import PRESETS, LineGame
from engine.registry import game_spec

#: 2 players, and a team preset with partners opposite (CL-TEAM-1).
SEATINGS = {name: ("greedy", "random") for name in PRESETS if not PRESETS[name].teams}
SEATINGS |= {
    name: ("greedy", "random", "greedy", "random") for name in PRESETS if PRESETS[name].teams
}


@pytest.mark.parametrize("name", sorted(SEATINGS))
def test_cl_bot_1_greedy_beats_random_with_the_intervals_apart(name: str) -> None:
    # Measured (400 games, docs/bots.md): greedy wins 61% to 68% of the 2-player
    # hands; 60 games are 250 (Bergen) to 1,000 (Block) hands, so the
    # intervals are about 0.06 to 0.12 wide and far apart.
    config = ArenaConfig(SEATINGS[name], PRESETS[name], 60, seed=f"test-{name}")
    stats = {s.level: s for s in summarize(run(config, clock=time.perf_counter))}
    greedy, random = stats["greedy"], stats["random"]
    assert greedy.won_low > random.won_high, (greedy, random)
    assert greedy.mean_score - greedy.score_half > random.mean_score + random.score_half


@pytest.mark.parametrize("name", ["block", "draw", "all_fives", "bergen", "matador", "draw_teams"])
def test_cl_bot_1_expert_decides_the_same_move_for_the_same_view_and_key(name: str) -> None:
    rules = PRESETS[name]
    game = LineGame(rules, 4 if rules.teams else 2, f"expert-{name}")
    spec = game_spec(rules.game)
    decisions = 0
    while not game.over and decisions < 6:
        seat = game.current_seat
        view = game.view(seat)
        legal = game.legal_moves()
        move = choose("expert", view, legal, bot_key(view), budget=150)
        assert move in legal
        if len(legal) > 1:
            decisions += 1
            # The same view and key, from a state loaded afresh: the same move.
            again = spec.load(game.to_dict())
            assert (
                choose("expert", again.view(seat), again.legal_moves(), bot_key(view), budget=150)
                == move
            )
        game.push(move)
    assert decisions


def test_the_line_games_switch_on_any_lead_and_mexican_train_keeps_its_margin() -> None:
    assert game_spec("block").bots.switch_margin == 0.0
    assert game_spec("mexican_train").bots.switch_margin is None  # SWITCH_MARGIN
    # Candidate 1 leads candidate 0 by less than one standard error: only a
    # margin of 0 switches to it.
    results = [[0.0, 1.0, 0.0, 1.0], [0.5, 1.0, 0.0, 1.0]]
    assert _pick(results, SWITCH_MARGIN) == 0
    assert _pick(results, 0.0) == 1
