"""The expert bot of every game: determinized Monte Carlo search from one
seat's view, written once on top of the game protocol (CL-BOT-1).

Each *world* is a deal of the tiles the seat has not seen, consistent with
its view (the game's ``BotHooks.worlds``; Mexican Train's:
:mod:`engine.games.mexican_train.determinize`). The candidates are the best
few moves by the expert's own heuristic (the game's ``expert_scores``, or
the greedy bot's ``scores`` where it has none). In every world each
candidate is played, then the round (a hand) is played out to its end, the
seat moving by that same heuristic and the others as the greedy bot would
(the game's ``playout_policy``, with a random move now and then), and the
outcome is scored by the seat's own objective (the game's ``reward``;
Mexican Train: its share of the round's win, MT-END-1/3, less a little per
pip left in its hand, MT-SC-1). Every candidate meets the same worlds with
the same playout randomness (common random numbers), so two candidates are
compared world by world, not through the luck of the deal.

The search overrules the heuristic's choice (the first candidate) only when
its best candidate leads by more than SWITCH_MARGIN standard errors of the
paired differences: measured against greedy opponents, switching on any
lead (margin 0) played worse than the greedy bot itself, as a few dozen
worlds cannot resolve small differences; margin 1 won 7 to 10 points more
rounds than greedy in the same seat of the same deals. A game may set its
own margin (``BotHooks.switch_margin``; the line games, whose short hands
give many more worlds per decision, switch on any lead).

The budget counts the moves the playouts make, not milliseconds, so a
decision depends only on the view, the legal moves and the key (a game
replays exactly on any machine), and its time follows the budget whether
the round is young (long playouts, few worlds) or nearly over (many short
ones). A game sizes its own budget to what its moves cost
(``BotHooks.budget``, by the number of players; :data:`DEFAULT_BUDGET`
otherwise), to keep a decision's p99 under the 100 ms target (measured in
docs/bots.md).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from statistics import fmean, stdev
from typing import Final

from engine.bots import hooks
from engine.game import GameState
from engine.moves import Move
from engine.registry import game_spec
from engine.view import GameView

#: Moves the playouts of one decision make in all, when neither the caller
#: nor the game gives a budget:
#: a decision's time is these moves with the policy, plus the setup and the
#: overshoot of the last world.
DEFAULT_BUDGET: Final = 2500
#: What loading a determinization costs, in playout moves (a playout that
#: ends at once must not make a decision run thousands of them).
PLAYOUT_SETUP: Final = 5
#: The playout policy's chance of a uniformly random move instead of its best.
EXPLORE: Final = 0.1
#: The greedy bot's best moves searched, at most (3 and 6 measured no better).
MAX_CANDIDATES: Final = 4
#: Worlds per decision, at least, whatever the budget.
MIN_WORLDS: Final = 2
#: How sure the search must be to overrule its heuristic's choice, in standard errors.
SWITCH_MARGIN: Final = 1.0
#: A playout longer than this is a bug: every move plays, draws or passes, and
#: passes end in a blocked round (MT-END-3).
MAX_PLAYOUT_MOVES: Final = 100_000


def expert_move(
    view: GameView, legal: Sequence[Move], key: str, *, budget: int | None = None
) -> Move:
    """The expert bot's move: the best candidate over as many worlds as
    ``budget`` playout moves allow (at least MIN_WORLDS; default: the
    game's). Falls back to its heuristic's choice if the view cannot be
    determinized (it always can for a view the engine built)."""
    game = hooks(view)
    options = game.sensible(legal)
    if len(options) == 1:
        return options[0]
    scores = (game.scores if game.expert_scores is None else game.expert_scores)(view, options)
    ranked = [m for _, m in sorted(zip(scores, options, strict=True), key=lambda p: -p[0])]
    candidates = ranked[:MAX_CANDIDATES]
    try:
        worlds = game.worlds(view, legal)
    except ValueError:
        return candidates[0]
    load = game_spec(view.ruleset.game).load
    seat = worlds.seat
    rng = random.Random(key)
    if budget is not None:
        limit = budget
    else:
        limit = DEFAULT_BUDGET if game.budget is None else game.budget(len(view.players))
    results: list[list[float]] = [[] for _ in candidates]
    spent = 0
    while spent < limit or len(results[0]) < MIN_WORLDS:
        data = worlds.sample(rng)
        playout_seed = rng.getrandbits(64)
        for move, outcomes in zip(candidates, results, strict=True):
            state = load(data)
            state.push(move)
            playout(state, random.Random(playout_seed), game.playout_policy(state, seat))
            outcomes.append(game.reward(state, seat))
            spent += state.version + PLAYOUT_SETUP  # a world starts at version 0
    margin = SWITCH_MARGIN if game.switch_margin is None else game.switch_margin
    return candidates[_pick(results, margin)]


def _pick(results: list[list[float]], margin: float = SWITCH_MARGIN) -> int:
    """The candidate to play: the best mean, if it beats the heuristic's choice
    (candidate 0) by ``margin`` standard errors of their paired
    differences, else the heuristic's choice."""
    means = [fmean(r) for r in results]
    best = max(range(len(results)), key=lambda i: (means[i], -i))
    if best == 0 or margin <= 0:
        return best
    diffs = [x - y for x, y in zip(results[best], results[0], strict=True)]
    if len(diffs) < 2:
        return best
    spread = stdev(diffs)
    if spread == 0 or fmean(diffs) > margin * spread / math.sqrt(len(diffs)):
        return best
    return 0


def playout(game: GameState, rng: random.Random, policy: Callable[[Sequence[Move]], Move]) -> None:
    """Play ``game`` to its end, every seat moving by ``policy``; one move in
    ``1/EXPLORE`` is uniformly random."""
    legal_moves = game.legal_moves
    push = game.push
    for _ in range(MAX_PLAYOUT_MOVES):
        if game.over:
            return
        legal = legal_moves()
        if len(legal) == 1:
            push(legal[0])
        elif rng.random() < EXPLORE:
            push(legal[rng.randrange(len(legal))])
        else:
            push(policy(legal))
    raise AssertionError(f"a playout did not end within {MAX_PLAYOUT_MOVES} moves")
