"""The saved state (``MexicanTrain.to_dict``) is a value, never a window into the game.

The service encodes ``to_dict()`` on every move, the determinizer and
``tests/scenario.py`` edit what it returns before loading it: an edit of that
value must never reach the game it came from.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

import engine
from engine import MexicanTrain, preset


def _scribble(value: Any) -> None:
    """Change every list and dict inside ``value``, innermost first, in place."""
    if isinstance(value, dict):
        for item in value.values():
            _scribble(item)
        for key, item in value.items():
            if isinstance(item, (bool, int)):
                value[key] = -7
        value["scribbled"] = True
    elif isinstance(value, list):
        for item in value:
            _scribble(item)
        for i, item in enumerate(value):
            if isinstance(item, (bool, int)):
                value[i] = -7  # no tile id, seat, pip value or flag is -7
        value.append(-7)


def _positions(name: str, players: int, seed: str) -> list[tuple[MexicanTrain, random.Random]]:
    """Positions along one random 2-round game, each with the chooser to play on."""
    game = MexicanTrain(preset(name).with_options(rounds=2), players, seed)
    rng = random.Random(seed)
    out = []
    while not game.over:
        if rng.random() < 0.15 or (game.owes and rng.random() < 0.5):
            out.append((engine.load(game.to_bytes()), random.Random(rng.random())))
        game.push(rng.choice(game.legal_moves()))
    return out


@pytest.mark.parametrize(
    ("name", "players"), [("standard", 4), ("chicken_foot", 4), ("house", 3), ("pagat", 2)]
)
def test_to_dict_returns_an_independent_value(name: str, players: int) -> None:
    """Editing every list and dict of ``to_dict()``'s result leaves the game as it
    was: the same bytes, the same legal moves, and it plays on exactly like a
    copy taken before the edit. It used to hand out the game's own lists."""
    seen = {"open double": False, "branch": False, "round score": False, "owed": False}
    for game, rng in _positions(name, players, f"state-{name}"):
        game.to_dict()  # fills the saved-hand cache, which to_dict reads
        before, legal = game.to_bytes(), list(game.legal_moves())
        twin = engine.load(before)
        data = game.to_dict()
        seen["open double"] |= bool(data["doubles"])
        seen["branch"] |= any(len(train) > 1 for train in data["trains"])
        seen["round score"] |= any(data["round_scores"])
        seen["owed"] |= data["turn"][7] >= 0
        _scribble(data)
        assert game.to_bytes() == before
        assert game.legal_moves() == legal
        for _ in range(30):
            if game.over:
                break
            move = rng.choice(game.legal_moves())
            assert twin.apply(move) == game.apply(move)
            assert game.to_bytes() == twin.to_bytes()
    # The positions reach every nested part of the state (branches: MT-DBL-7 only).
    assert seen == {**dict.fromkeys(seen, True), "branch": name == "chicken_foot"}
