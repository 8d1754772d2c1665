"""Games found by name, so the classic games of RULES.md section 3 can plug in
beside Mexican Train without changing it (as python-chess finds variants)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final

from engine.errors import CorruptStateError, RulesetError
from engine.mexican_train import MexicanTrain
from engine.rules import Ruleset, preset


class GameType:
    """The facts a game declares up front, and how to make or load one."""

    def __init__(
        self,
        name: str,
        min_players: int,
        max_players: int,
        new: Callable[[Ruleset, int, str], MexicanTrain],
        load: Callable[[dict[str, object]], MexicanTrain],
    ) -> None:
        self.name = name
        self.min_players = min_players
        self.max_players = max_players
        self.new = new
        self.load = load


GAMES: Final[dict[str, GameType]] = {
    "mexican_train": GameType("mexican_train", 2, 14, MexicanTrain, MexicanTrain.from_dict),
}


def game_type(name: str) -> GameType:
    try:
        return GAMES[name]
    except KeyError:
        raise RulesetError(f"unknown game {name!r}; known: {', '.join(GAMES)}") from None


def new_game(ruleset: Ruleset | str, players: int, seed: str) -> MexicanTrain:
    """A new game: the ruleset (or a preset's name), the player count, the seed."""
    rules = preset(ruleset) if isinstance(ruleset, str) else ruleset
    return game_type(rules.game).new(rules, players, seed)


def load(data: bytes) -> MexicanTrain:
    """The state :meth:`MexicanTrain.to_bytes` wrote, rebuilt exactly."""
    try:
        decoded = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptStateError(f"not a serialized state: {exc}") from exc
    return load_dict(decoded)


def load_dict(decoded: object) -> MexicanTrain:
    """The state :meth:`MexicanTrain.to_dict` gave, rebuilt exactly (for callers
    that decode the JSON themselves, with a faster codec)."""
    if not isinstance(decoded, dict) or not isinstance(decoded.get("game"), str):
        raise CorruptStateError("not a serialized state: no game name")
    try:
        kind = game_type(decoded["game"])
    except RulesetError as exc:
        raise CorruptStateError(str(exc)) from exc
    return kind.load(decoded)
