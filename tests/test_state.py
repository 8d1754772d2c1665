"""The saved state (``MexicanTrain.to_dict``) is a value, never a window into the game.

The service encodes ``to_dict()`` on every move, the determinizer and
``tests/scenario.py`` edit what it returns before loading it: an edit of that
value must never reach the game it came from.

The service keeps games in Redis across upgrades: a state an older version
wrote (format 1, ``tests/fixtures/mexican_train_format_1.json``) still loads,
to the very game its history replays to.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

import engine
from engine import MexicanTrain, preset
from engine.games.mexican_train.game import STATE_FORMAT
from tests.presets import MEXICAN_TRAIN_PRESETS

FORMAT_1: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "fixtures" / "mexican_train_format_1.json").read_text()
)["states"]

#: Format 1's ``turn`` list and each ``doubles`` list, field by field.
TURN_1 = (
    "seat",
    "owes",
    "drew",
    "forced",
    "doubles_this_turn",
    "played_this_turn",
    "penalties",
    "last_double",
    "own_train_only",
    "chain_open",
)
DOUBLE_1 = ("slot", "end", "value", "answers", "played_this_turn")


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
        seen["owed"] |= data["turn"]["last_double"] >= 0
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


def _format_1_id(entry: dict[str, Any]) -> str:
    return f"{entry['preset']}-v{json.loads(entry['state'])['version']}"


@pytest.mark.parametrize("entry", FORMAT_1, ids=_format_1_id)
def test_a_format_1_state_loads_to_the_game_it_replays_to(entry: dict[str, Any]) -> None:
    """A state written by git 9ad9fff (format 1: the turn and the open doubles
    as positional lists) loads, as ``engine.load`` and as the service loads it,
    to a game equal to a replay of its history; it saves as format 2 with the
    same values under names, and plays on exactly like the replay."""
    data = entry["state"].encode()
    old = json.loads(data)
    assert old["format"] == 1
    game = engine.load(data)
    assert isinstance(game, MexicanTrain)
    rules = engine.Ruleset.from_dict(old["rules"])
    replayed = engine.replay(rules, old["players"], old["seed"], old["history"].split())
    assert game == replayed
    assert game.to_bytes() == replayed.to_bytes()
    assert game.legal_moves() == replayed.legal_moves()
    assert engine.load_dict(orjson.loads(data)) == replayed  # the service's way
    saved = game.to_dict()
    assert saved["format"] == STATE_FORMAT == 2
    assert [saved["turn"][key] for key in TURN_1] == old["turn"]
    assert [[d[key] for key in DOUBLE_1] for d in saved["doubles"]] == old["doubles"]
    assert {k: v for k, v in saved.items() if k not in ("format", "turn", "doubles")} == {
        k: v for k, v in old.items() if k not in ("format", "turn", "doubles")
    }
    rng = random.Random(entry["state"])
    for _ in range(40):
        if game.over:
            break
        move = rng.choice(game.legal_moves())
        assert game.apply(move) == replayed.apply(move)
        assert game.to_bytes() == replayed.to_bytes()


def test_the_format_1_states_cover_every_field() -> None:
    """The fixture reaches every field of the turn and of an open double with
    a value other than a fresh turn's."""
    states = [json.loads(e["state"]) for e in FORMAT_1]
    turns = [dict(zip(TURN_1, s["turn"], strict=True)) for s in states]
    fresh = dict(zip(TURN_1, [0, False, False, -1, 0, 0, 0, -1, False, False], strict=True))
    assert {k for t in turns for k in TURN_1 if k != "seat" and t[k] != fresh[k]} == set(TURN_1[1:])
    doubles = [dict(zip(DOUBLE_1, d, strict=True)) for s in states for d in s["doubles"]]
    assert any(d["answers"] for d in doubles)
    assert {d["played_this_turn"] for d in doubles} == {0, 1}
    assert any(len(train) > 1 for s in states for train in s["trains"])  # MT-DBL-7 branches
    assert {s["rules"]["preset"] for s in states} == set(MEXICAN_TRAIN_PRESETS)
