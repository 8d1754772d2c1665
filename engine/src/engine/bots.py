"""Computer players at three levels, for every game: ``random``, ``greedy``
and ``expert`` (CL-BOT-1). Each game gives its heuristics as
:class:`~engine.game.BotHooks` (``GameSpec.bots``); the levels are written
once here and in :mod:`engine.expert`.

A bot decides from what one seat may see: the seat's :class:`GameView`
(MT-VIS-1/2: public facts and its own hand) and its legal moves. It is never
handed the state, so it cannot read another hand or the boneyard (MT-VIS-3).

Bots are deterministic: the same view, legal moves and ``key`` give the same
move, so a game with bots replays exactly. The key must be public too, or the
choice would depend on hidden data: :func:`bot_key` derives it from the
seed's public commitment (MT-FAIR-1), the version and the seat, never from
the seed itself.

>>> import engine
>>> game = engine.new_game(engine.preset("standard").with_options(rounds=1), 4, "bots")
>>> while not game.over:
...     view = engine.build_view(game, game.current_seat)
...     _ = game.apply(choose("greedy", view, game.legal_moves(), bot_key(view)))
>>> game.over, len(game.round_scores[0])
(True, 1)
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Final

from engine.game import BotHooks
from engine.moves import Move
from engine.view import GameView

#: The bot levels, weakest first (the service's BOT_LEVEL_RANDOM, _GREEDY, _EXPERT).
LEVELS: Final = ("random", "greedy", "expert")


def bot_key(view: GameView) -> str:
    """The public seeding key of a decision: the seed's SHA-256 (MT-FAIR-1), the
    version and the seat. Another seat could compute it too, which is fine:
    it says nothing about the hidden tiles."""
    return f"{view.seed_sha256}:{view.version}:{view.viewer_seat}"


def choose(
    level: str,
    view: GameView,
    legal: Sequence[Move],
    key: str | None = None,
    *,
    budget: int | None = None,
) -> Move:
    """The move the bot ``level`` makes, one of ``legal``, from ``view`` alone.

    ``key`` seeds its choices (default :func:`bot_key`); ``budget`` is the
    expert's search budget in playout moves (default
    :data:`engine.expert.DEFAULT_BUDGET`); the other levels ignore it.
    Raises :class:`ValueError` for an unknown level or an empty ``legal``.
    """
    if not legal:
        raise ValueError("no legal move to choose from")
    if key is None:
        key = bot_key(view)
    if level == "random":
        return random_move(view, legal, key)
    if level == "greedy":
        return greedy_move(view, legal, key)
    if level == "expert":
        from engine.expert import expert_move

        return expert_move(view, legal, key, budget=budget)
    raise ValueError(f"unknown bot level {level!r}; known: {', '.join(LEVELS)}")


# ------------------------------------------------------------------ random


def random_move(view: GameView, legal: Sequence[Move], key: str) -> Move:
    """A uniformly random legal move, the same one for the same ``key``."""
    if not legal:
        raise ValueError("no legal move to choose from")
    del view  # the random bot needs nothing else; the signature is every bot's
    return legal[random.Random(key).randrange(len(legal))]


# ------------------------------------------------------------------ greedy


def hooks(view: GameView) -> BotHooks:
    """The bot hooks of the game ``view`` shows."""
    from engine.registry import game_spec  # the registry imports every game's bots

    return game_spec(view.ruleset.game).bots


def greedy_move(view: GameView, legal: Sequence[Move], key: str) -> Move:
    """The greedy bot: the sensible legal move with the best score of the
    game's heuristic (``BotHooks.scores``); ties broken at random by ``key``."""
    game = hooks(view)
    options = game.sensible(legal)
    if len(options) == 1:
        return options[0]
    scores = game.scores(view, options)
    best = max(scores)
    top = [m for m, s in zip(options, scores, strict=True) if s == best]
    return top[0] if len(top) == 1 else top[random.Random(key).randrange(len(top))]
