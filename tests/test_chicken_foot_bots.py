"""Chicken Foot's bots at the engine level (CL-BOT-1), cheaply: every level
plays a legal move at every decision, from the seat's view alone (MT-VIS-3);
the expert's determinizations are Chicken Foot positions that match the
seat everywhere, so its search never falls back to the greedy bot; the
greedy bot beats the random one with the arena's intervals apart.

The expert plays with a tiny budget here: these tests check behaviour, not
strength (``railyard arena`` measures that).
"""

from __future__ import annotations

import random
import time

import pytest

import engine
from engine import DRAW, PASS, build_view
from engine.arena import ArenaConfig, run, summarize
from engine.bots import LEVELS, bot_key, choose
from engine.games.chicken_foot import ChickenFoot
from engine.games.mexican_train.determinize import Determinizer
from engine.registry import game_spec
from tests.chicken_foot_scenario import position
from tests.test_properties import _hide_and_reshuffle

#: Playout moves per expert decision in these tests.
TINY = 40


def one_round(players: int, seed: str, **options: object) -> ChickenFoot:
    game = engine.new_game(engine.ruleset(game="chicken_foot", rounds=1, **options), players, seed)
    assert isinstance(game, ChickenFoot)
    return game


def decide(level: str, game: ChickenFoot) -> engine.Move:
    view = build_view(game, game.current_seat)
    return choose(level, view, game.legal_moves(), bot_key(view), budget=TINY)


@pytest.mark.parametrize(("players", "lines"), [(2, 6), (4, 4), (8, 6)])
def test_cl_bot_1_every_level_plays_legal_moves_in_chicken_foot(players: int, lines: int) -> None:
    game = one_round(players, f"levels-{players}", center_lines=lines)
    decisions = 0
    while not game.over:
        legal = game.legal_moves()
        for level in LEVELS:
            move = decide(level, game)
            assert move in legal, f"{level} chose {move} at v{game.version}"
            assert decide(level, game) == move  # the same view and key: the same move
        decisions += len(legal) > 1
        game.apply(decide(LEVELS[game.version % 3], game), seat=game.current_seat)
    assert decisions >= 5


def test_cl_bot_1_bots_decide_from_the_view_alone() -> None:
    """MT-VIS-3: other hands and the boneyard dealt differently give a seat
    the same view, the same legal moves and every level the same choice."""
    game = one_round(4, "hidden")
    rnd = random.Random(4)
    differing = 0
    while not game.over:
        if game.version % 5 == 0:
            seat = game.current_seat
            other = _hide_and_reshuffle(game, seat, rnd)
            differing += any(game.hand(s) != other.hand(s) for s in range(4) if s != seat)
            view = build_view(game, seat)
            assert build_view(other, seat) == view
            assert other.legal_moves() == game.legal_moves()
            for level in LEVELS:
                key = bot_key(view)
                mine = choose(level, view, game.legal_moves(), key, budget=TINY)
                theirs = choose(
                    level, build_view(other, seat), other.legal_moves(), key, budget=TINY
                )
                assert mine == theirs, f"{level} at v{game.version}"
        game.push(rnd.choice(game.legal_moves()))
    assert differing >= 3, "the hidden tiles never differed: the test proved nothing"


@pytest.mark.parametrize(("players", "lines"), [(2, 4), (5, 6), (8, 4)])
def test_cl_bot_1_expert_worlds_are_chicken_foot_positions_that_match_the_seat(
    players: int, lines: int
) -> None:
    game = one_round(players, f"worlds-{players}", center_lines=lines)
    rnd = random.Random(players)
    worlds = game_spec("chicken_foot").bots.worlds
    while not game.over:
        seat, legal = game.current_seat, game.legal_moves()
        view = build_view(game, seat)
        det = worlds(view, legal)
        assert isinstance(det, Determinizer)
        sample = det.position(rnd)
        assert isinstance(sample, ChickenFoot)
        assert sample.hand(seat) == game.hand(seat)
        assert set(sample.legal_moves()) == set(legal)
        assert build_view(sample, seat).turn == view.turn
        assert build_view(sample, seat).trains == view.trains
        assert [sample.hand_count(s) for s in range(players)] == [
            game.hand_count(s) for s in range(players)
        ]
        hidden = sorted(
            [t for s in range(players) if s != seat for t in game.hand(s)] + game.boneyard_tiles()
        )
        sampled = sorted(
            [t for s in range(players) if s != seat for t in sample.hand(s)]
            + sample.boneyard_tiles()
        )
        assert sampled == hidden
        game.push(rnd.choice(legal))


def test_cl_bot_1_a_bot_without_a_play_draws_or_passes() -> None:
    lines = {0: "9-1", 1: "9-2", 2: "9-3", 3: "9-5"}
    drawing = position(hands=["4-6", "2-7", "3-8", "0-6"], boneyard="7-8", lines=lines)
    passing = position(hands=["4-6", "2-7", "3-8", "0-6"], lines=lines)
    assert [decide(level, drawing) for level in LEVELS] == [DRAW] * 3
    assert [decide(level, passing) for level in LEVELS] == [PASS] * 3


def test_cl_bot_1_bots_only_games_finish_and_replay() -> None:
    rules = engine.ruleset(game="chicken_foot", rounds=2, center_lines=4)
    config = ArenaConfig(("expert", "greedy", "random"), rules, 3, seed="cf-bots", budget=TINY)
    records = run(config, clock=time.perf_counter)
    assert [r.levels for r in records] == [
        ("expert", "greedy", "random"),
        ("greedy", "random", "expert"),
        ("random", "expert", "greedy"),
    ]
    assert all(len(r.round_scores) == 2 for r in records)
    # Bots are deterministic: the same game again, and its replay, are equal.
    games = []
    for _ in range(2):
        game = engine.new_game(rules, 3, "cf-bots-replay")
        while not game.over:
            view = build_view(game, game.current_seat)
            level = LEVELS[game.current_seat]
            game.apply(choose(level, view, game.legal_moves(), bot_key(view), budget=TINY))
        games.append(game)
    assert games[0].history == games[1].history
    assert engine.replay(rules, 3, "cf-bots-replay", games[0].history) == games[0]


def test_cl_bot_1_greedy_beats_random_in_chicken_foot() -> None:
    # Measured: greedy wins about 80% of 2-player one-round games, keeping 2
    # pips to random's 29; 60 games put the intervals far apart.
    rules = engine.ruleset(game="chicken_foot", rounds=1)
    config = ArenaConfig(("greedy", "random"), rules, 60, seed="cf-strength")
    stats = {s.level: s for s in summarize(run(config, clock=lambda: 0.0))}
    greedy, rand = stats["greedy"], stats["random"]
    assert greedy.won_low > rand.won_high, (greedy, rand)
    assert greedy.mean_score + greedy.score_half < rand.mean_score - rand.score_half


def test_the_arena_describes_chicken_foot_rules() -> None:
    describe = game_spec("chicken_foot").describe
    rules = engine.ruleset(game="chicken_foot", center_lines=4, double_blank_value=25)
    assert describe(rules.resolve(5)) == (
        "double-9, 10 tiles, 4 lines, 10 round(s) a game, 0-0 counts 25"
    )
