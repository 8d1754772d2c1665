"""Games found by name (as python-chess finds variants): every caller, the
service, the bots, the arena and replay included, reaches a game only
through the :class:`~engine.game.GameSpec` registered here.

>>> sorted(GAMES)
['all_fives', 'bergen', 'block', 'chicken_foot', 'draw', 'matador', 'mexican_train']
>>> ruleset(game="mexican_train").preset, ruleset("house").game
('standard', 'mexican_train')
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any, Final

from engine.errors import CorruptStateError, RulesetError
from engine.game import GameSpec, GameState, Rules
from engine.games.chicken_foot import SPEC as CHICKEN_FOOT
from engine.games.line import SPECS as LINE_GAMES
from engine.games.mexican_train import bots as mexican_train_bots
from engine.games.mexican_train import rules as mexican_train_rules
from engine.games.mexican_train.game import MexicanTrain
from engine.moves import Move

_MEXICAN_TRAIN: Final = GameSpec(
    name=MexicanTrain.name,
    min_players=mexican_train_rules.MIN_PLAYERS,
    max_players=mexican_train_rules.MAX_PLAYERS,
    default_preset="standard",
    presets=mexican_train_rules.PRESETS,
    options=frozenset(
        f.name
        for f in dataclasses.fields(mexican_train_rules.Ruleset)
        if f.name not in ("preset", "game")
    ),
    new=MexicanTrain,
    load=MexicanTrain.from_dict,
    bots=mexican_train_bots.HOOKS,
    results=mexican_train_bots.results,
    low_score_wins=True,
    describe=mexican_train_bots.describe,
)

#: Every game, by name.
GAMES: Final[dict[str, GameSpec]] = {
    spec.name: spec for spec in (_MEXICAN_TRAIN, *LINE_GAMES.values(), CHICKEN_FOOT)
}

#: The most players any game seats (a classic game on double-twelve, one
#: tile each: CL-SET-1, CL-DEAL-1); each game refuses more than its own.
MAX_PLAYERS: Final = max(spec.max_players for spec in GAMES.values())

#: Every preset of every game, by name (API.md ListRulesets); a preset's
#: ``game`` names its game.
PRESETS: Final[dict[str, Rules]] = {
    name: rules for spec in GAMES.values() for name, rules in spec.presets.items()
}


def game_spec(name: str) -> GameSpec:
    try:
        return GAMES[name]
    except KeyError:
        raise RulesetError(f"unknown game {name!r}; known: {', '.join(GAMES)}") from None


def preset(name: str) -> Rules:
    """The preset called ``name``, of whichever game; :class:`RulesetError`
    names the known ones."""
    try:
        return PRESETS[name]
    except KeyError:
        raise RulesetError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}") from None


def ruleset(preset_name: str | None = None, game: str | None = None, **options: Any) -> Rules:
    """A preset (or, given ``game`` alone, that game's own preset) with
    ``options`` over it. A preset of another game than ``game`` is refused,
    and so is an option the game does not have, by its rules type
    (CL-SET-1)."""
    if preset_name is None:
        spec = game_spec(game or MexicanTrain.name)
        base = spec.presets[spec.default_preset]
    else:
        base = preset(preset_name)
        if game is not None and base.game != game:
            game_spec(game)  # an unknown game is named as such
            raise RulesetError(
                f"preset {preset_name!r} is a preset of {base.game}, not of {game}",
                rule="CL-SET-1",
            )
    return base.with_options(**options) if options else base


def new_game(rules: Rules | str, players: int, seed: str) -> GameState:
    """A new game: its rules (or a preset's name), the player count, the seed."""
    resolved = preset(rules) if isinstance(rules, str) else rules
    return game_spec(resolved.game).new(resolved, players, seed)


def load(data: bytes) -> GameState:
    """The state ``GameState.to_bytes`` wrote, rebuilt exactly."""
    try:
        decoded = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptStateError(f"not a serialized state: {exc}") from exc
    return load_dict(decoded)


def load_dict(decoded: object) -> GameState:
    """The state ``GameState.to_dict`` gave, rebuilt exactly (for callers
    that decode the JSON themselves, with a faster codec)."""
    if not isinstance(decoded, dict) or not isinstance(decoded.get("game"), str):
        raise CorruptStateError("not a serialized state: no game name")
    try:
        spec = game_spec(decoded["game"])
    except RulesetError as exc:
        raise CorruptStateError(str(exc)) from exc
    return spec.load(decoded)


def replay(rules: Rules | str, players: int, seed: str, moves: Sequence[Move | str]) -> GameState:
    """A new game with ``moves`` (or their text forms) applied in order."""
    game = new_game(rules, players, seed)
    for move in moves:
        game.push(Move.parse(move) if isinstance(move, str) else move)
    return game
