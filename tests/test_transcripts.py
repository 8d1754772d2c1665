"""Golden transcripts: one whole recorded game per preset of API.md.

Each preset's game (4 players; 3 for ``by_set``, which then plays double-9) is
played to its end by a fixed chooser, ``random.Random(<preset name>)``
picking among the legal moves, and written as text: the ruleset, the seed,
each round's deal, every move in its text form with the events it caused,
and the final totals and winners. The test plays the game afresh and compares
with ``tests/golden/<preset>.txt`` line for line, so any change in the deal,
the legal moves, their order, the events or the scoring shows up as a diff.

After a deliberate change of behaviour, regenerate the files and review the
diff::

    UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_transcripts.py
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

import engine
from engine import (
    DoubleSatisfied,
    Event,
    GameEnded,
    MarkerPlaced,
    MarkerRemoved,
    MexicanTrain,
    Move,
    Passed,
    RoundEnded,
    RoundStarted,
    TileDrawn,
    TilePlayed,
    TurnStarted,
)
from tests.presets import MEXICAN_TRAIN_PRESETS

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
MAX_BYTES = 300_000


def players_for(name: str) -> int:
    """4 players, but 3 for ``by_set`` (MT-SET-1: 2-3 players play double-9)."""
    return 3 if name == "by_set" else 4


def seed_for(name: str) -> str:
    return f"golden-{name}"


def describe(event: Event) -> str:
    """A compact, readable text form of one (unfiltered) event."""
    if type(event) is TilePlayed:
        return f"s{event.seat} plays {event.tile}@{event.train}"
    if type(event) is TileDrawn:
        why = "" if event.why == "move" else f" ({event.why})"
        return f"s{event.seat} draws {event.tile}{why}"
    if type(event) is Passed:
        return f"s{event.seat} passes"
    if type(event) is MarkerPlaced:
        return f"marker on s{event.seat}"
    if type(event) is MarkerRemoved:
        return f"marker off s{event.seat}"
    if type(event) is DoubleSatisfied:
        how = "dead" if event.dead else "satisfied"
        return f"double {event.value}-{event.value}@{event.train} {how}"
    if type(event) is TurnStarted:
        return f"turn s{event.seat}"
    if type(event) is RoundStarted:
        return f"round {event.round} engine {event.engine} starter s{event.starter}"
    if type(event) is RoundEnded:
        scores = " ".join(map(str, event.scores))
        return f"round {event.round} ended {event.reason.value} scores {scores}"
    if type(event) is GameEnded:
        totals = " ".join(map(str, event.totals))
        winners = " ".join(f"s{s}" for s in event.winners)
        return f"game ended totals {totals} winners {winners} seed {event.seed}"
    raise AssertionError(f"unknown event {event!r}")


def _deal_lines(game: MexicanTrain, events: list[Event]) -> list[str]:
    """The hands and boneyard right after a deal (a RoundStarted among ``events``)."""
    if not any(type(e) is RoundStarted for e in events):
        return []
    lines = [
        f"  deal s{seat}: {' '.join(map(str, game.hand(seat)))}" for seat in range(game.players)
    ]
    lines.append(f"  boneyard: {' '.join(map(str, game.boneyard_tiles()))}")
    return lines


def record(name: str) -> tuple[str, MexicanTrain]:
    """Play preset ``name``'s golden game and return its transcript and final state."""
    players = players_for(name)
    seed = seed_for(name)
    game = engine.new_game(name, players, seed)
    chooser = random.Random(name)
    lines = [
        f"# Railyard golden transcript: preset {name}",
        "# Regenerate: UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_transcripts.py",
        f"preset: {name}",
        f"ruleset: {json.dumps(game.rules.to_dict(), sort_keys=True)}",
        f"players: {players}",
        f"seed: {seed}",
        f"chooser: random.Random({name!r}).choice(legal_moves())",
        "opening: " + "; ".join(describe(e) for e in game.opening_events),
        *_deal_lines(game, game.opening_events),
    ]
    while not game.over:
        seat = game.current_seat
        move = chooser.choice(game.legal_moves())
        events = game.apply(move, seat=seat)
        text = "; ".join(describe(e) for e in events)
        lines.append(f"v{game.version} s{seat} {move} | {text}")
        lines.extend(_deal_lines(game, events))
        assert game.version < 20_000, "the golden game does not end"
    lines.append(f"totals: {' '.join(map(str, game.totals))}")
    lines.append(f"winners: {' '.join(f's{s}' for s in game.winners)}")
    return "\n".join(lines) + "\n", game


def _field(lines: list[str], key: str) -> str:
    prefix = f"{key}: "
    found = [line[len(prefix) :] for line in lines if line.startswith(prefix)]
    assert len(found) == 1, f"{key!r} appears {len(found)} times"
    return found[0]


@pytest.mark.parametrize("name", sorted(MEXICAN_TRAIN_PRESETS))
def test_transcript_matches_golden(name: str) -> None:
    """A fresh game of preset ``name`` plays exactly as recorded."""
    text, _ = record(name)
    path = GOLDEN / f"{name}.txt"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no golden file {path}: run UPDATE_GOLDEN=1 pytest {__file__}"
    expected = path.read_text(encoding="utf-8").splitlines()
    actual = text.splitlines()
    for number, (want, got) in enumerate(zip(expected, actual, strict=False), start=1):
        assert got == want, f"{path.name} line {number} differs:\n  golden: {want}\n  now:    {got}"
    assert len(actual) == len(expected), f"{path.name}: {len(expected)} lines, now {len(actual)}"
    assert len(text.encode()) < MAX_BYTES


@pytest.mark.parametrize("name", sorted(MEXICAN_TRAIN_PRESETS))
def test_golden_moves_replay_to_recorded_result(name: str) -> None:
    """The moves written in the golden file, parsed back from text, replay to the
    recorded totals and winners, and to the same state as the live game."""
    path = GOLDEN / f"{name}.txt"
    assert path.exists(), f"no golden file {path}"
    lines = path.read_text(encoding="utf-8").splitlines()
    players = int(_field(lines, "players"))
    seed = _field(lines, "seed")
    rules = engine.Ruleset.from_dict(json.loads(_field(lines, "ruleset")))
    assert rules.preset == name
    moves = [Move.parse(line.split(" ", 3)[2]) for line in lines if line.startswith("v")]
    versions = [int(line.split(" ", 1)[0][1:]) for line in lines if line.startswith("v")]
    assert versions == list(range(1, len(moves) + 1))
    game = engine.replay(rules, players, seed, moves)
    assert game.over
    assert _field(lines, "totals") == " ".join(map(str, game.totals))
    assert _field(lines, "winners") == " ".join(f"s{s}" for s in game.winners)
    assert game.rounds_total == game.set_max + 1  # MT-RND-1: every round was played
    _, live = record(name)
    assert game == live


def test_every_preset_has_a_golden_file() -> None:
    """No preset without a transcript, no transcript without a preset."""
    files = {p.stem for p in GOLDEN.glob("*.txt")}
    assert files == set(MEXICAN_TRAIN_PRESETS)
