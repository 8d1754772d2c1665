"""Golden transcripts: one whole recorded game per preset of API.md, of every game.

Each preset's game is played to its end and written as text: the ruleset,
the seed, each round's (hand's) deal, every move in its text form with the
events it caused, and the final totals and winners. The test plays the game
afresh and compares with ``tests/golden/<preset>.txt`` line for line, so any
change in the deal, the legal moves, their order, the events, the scoring or
the bots' choices shows up as a diff.

Mexican Train's presets: 4 players (3 for ``by_set``, which then plays
double-9), every move chosen by ``random.Random(<preset name>)`` among the
legal moves. The classic games' presets (RULES.md section 3): 2 to 4
players, seat 1 played by the engine's greedy bot from its own view
(``engine.choose``, CL-BOT-1) and every other seat by that chooser; a
block game's boneyard lines list its sleeping tiles (CL-DEAL-1), which only
this record, never a payload, shows. Chicken Foot's preset (RULES.md
CL-CF-1, in section 3 but on Mexican Train's engine) is recorded as the
classic games' are, at 4 players with seat 1 played by the greedy bot, and
checked as Mexican Train's are (every round of the set played).

After a deliberate change of behaviour, regenerate the files and review the
diff::

    UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_transcripts.py
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Final

import pytest

import engine
from engine import (
    DoubleSatisfied,
    Event,
    GameEnded,
    GameState,
    MarkerPlaced,
    MarkerRemoved,
    MexicanTrain,
    Move,
    Passed,
    PointsScored,
    RoundEnded,
    RoundStarted,
    TileDrawn,
    TilePlayed,
    TurnStarted,
)
from tests.presets import CHICKEN_FOOT_PRESETS, LINE_PRESETS, MEXICAN_TRAIN_PRESETS

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
MAX_BYTES = 300_000


#: Every preset of every game (API.md ListRulesets).
RECORDED: Final = sorted(engine.PRESETS)

#: The classic games' player counts: each 2-player or 3-player game has a
#: boneyard (to draw from, or sleeping); the teams presets seat 4.
LINE_PLAYERS: Final = {"block": 2, "draw": 3, "all_fives": 2, "bergen": 3, "matador": 2}

#: The seats the engine's bots play in a classic preset's game, by level.
LINE_BOTS: Final = {1: "greedy"}


def players_for(name: str) -> int:
    """Mexican Train: 4 players, but 3 for ``by_set`` (MT-SET-1: 2-3 players
    play double-9); a classic preset: :data:`LINE_PLAYERS` (4 for teams);
    Chicken Foot: 4 (12 tiles each, CL-CF-1)."""
    if name in LINE_PRESETS:
        return 4 if engine.preset(name).teams else LINE_PLAYERS[name]  # type: ignore[attr-defined]
    return 3 if name == "by_set" else 4


def bots_for(name: str) -> dict[int, str]:
    """The seats played by the engine's bots (none in Mexican Train's records;
    Chicken Foot's: as the classic games')."""
    return LINE_BOTS if name in LINE_PRESETS or name in CHICKEN_FOOT_PRESETS else {}


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
        if event.engine is None:  # a classic game's hand
            return f"round {event.round} starter s{event.starter}"
        return f"round {event.round} engine {event.engine} starter s{event.starter}"
    if type(event) is RoundEnded:
        scores = " ".join(map(str, event.scores))
        won = "" if event.winner is None else f" winner s{event.winner}"
        return f"round {event.round} ended {event.reason.value} scores {scores}{won}"
    if type(event) is PointsScored:
        team = "" if event.team is None else f" (team {event.team})"
        return f"s{event.seat}{team} scores {event.points} {event.reason.value}"
    if type(event) is GameEnded:
        totals = " ".join(map(str, event.totals))
        winners = " ".join(f"s{s}" for s in event.winners)
        return f"game ended totals {totals} winners {winners} seed {event.seed}"
    raise AssertionError(f"unknown event {event!r}")


def _deal_lines(game: GameState, events: list[Event]) -> list[str]:
    """The hands and boneyard right after a deal (a RoundStarted among ``events``)."""
    if not any(type(e) is RoundStarted for e in events):
        return []
    lines = [
        f"  deal s{seat}: {' '.join(map(str, game.hand(seat)))}" for seat in range(game.players)
    ]
    lines.append(f"  boneyard: {' '.join(map(str, game.boneyard_tiles()))}")  # type: ignore[attr-defined]
    return lines


def record(name: str) -> tuple[str, GameState]:
    """Play preset ``name``'s golden game and return its transcript and final state."""
    players = players_for(name)
    seed = seed_for(name)
    bots = bots_for(name)
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
        *(
            [f"bots: {' '.join(f's{s} {level}' for s, level in sorted(bots.items()))}"]
            if bots
            else []
        ),
        "opening: " + "; ".join(describe(e) for e in game.opening_events),
        *_deal_lines(game, game.opening_events),
    ]
    while not game.over:
        seat = game.current_seat
        legal = game.legal_moves()
        if seat in bots:  # CL-BOT-1: from the seat's view alone
            view = engine.build_view(game, seat)
            move = engine.choose(bots[seat], view, legal, engine.bot_key(view))
        else:
            move = chooser.choice(legal)
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


@pytest.mark.parametrize("name", RECORDED)
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


@pytest.mark.parametrize("name", RECORDED)
def test_golden_moves_replay_to_recorded_result(name: str) -> None:
    """The moves written in the golden file, parsed back from text, replay to the
    recorded totals and winners, and to the same state as the live game."""
    path = GOLDEN / f"{name}.txt"
    assert path.exists(), f"no golden file {path}"
    lines = path.read_text(encoding="utf-8").splitlines()
    players = int(_field(lines, "players"))
    seed = _field(lines, "seed")
    rules_type = type(engine.preset(name))  # the game's own rules type
    rules = rules_type.from_dict(json.loads(_field(lines, "ruleset")))  # type: ignore[attr-defined]
    assert rules.preset == name
    moves = [Move.parse(line.split(" ", 3)[2]) for line in lines if line.startswith("v")]
    versions = [int(line.split(" ", 1)[0][1:]) for line in lines if line.startswith("v")]
    assert versions == list(range(1, len(moves) + 1))
    game = engine.replay(rules, players, seed, moves)
    assert game.over
    assert _field(lines, "totals") == " ".join(map(str, game.totals))
    assert _field(lines, "winners") == " ".join(f"s{s}" for s in game.winners)
    if isinstance(game, MexicanTrain):
        assert game.rounds_total == game.set_max + 1  # MT-RND-1: every round was played
    else:  # CL-SC-2: to the target score; a team's is its seats' sum (CL-TEAM-1)
        totals = game.team_scores() or game.totals  # type: ignore[attr-defined]
        side = [w % len(totals) for w in game.winners]
        assert all(totals[s] >= rules.target_score for s in side)
        assert _field(lines, "bots") == "s1 greedy"
    _, live = record(name)
    assert game == live


def test_every_preset_has_a_golden_file() -> None:
    """No preset of any game without a transcript, no transcript without a preset."""
    files = {p.stem for p in GOLDEN.glob("*.txt")}
    assert files == set(engine.PRESETS)
    assert set(MEXICAN_TRAIN_PRESETS) | set(LINE_PRESETS) | set(CHICKEN_FOOT_PRESETS) == files
