"""Bots (engine/bots.py, engine/expert.py, engine/games/mexican_train/bots.py and
determinize.py) and the arena
(engine/arena.py, ``railyard arena``).

What is checked:

- MT-VIS-3: a bot's whole input is a seat's view, its legal moves and a
  public key; two states that differ only in hidden tiles (other hands, the
  boneyard and its order) give the same input and the same choice, at every
  level;
- determinism: the same input gives the same move, and a game of bots
  replays to the same history;
- every preset, and random rulesets (hypothesis), finish with bots only;
  the expert's determinizations match the seat's legal moves everywhere;
- the greedy bot's documented heuristics on exact positions, and its
  strength against the random bot on a fixed sample;
- the arena's statistics (Wilson interval, normal interval, percentiles,
  ties) and ``railyard arena``.

The expert plays with a tiny budget here: these tests check behaviour, not
strength or time (docs/bots.md has the measured figures).
"""

from __future__ import annotations

import hashlib
import inspect
import random
import time

import hypothesis.strategies as st
import pytest
from hypothesis import given, note, settings

import engine
from engine import DRAW, END_TURN, MexicanTrain, Move, MoveKind, TrainRef, build_view
from engine.arena import (
    ArenaConfig,
    GameRecord,
    mean_interval,
    percentile,
    play_game,
    report,
    run,
    seating,
    summarize,
    wilson,
)
from engine.bots import LEVELS, bot_key, choose, greedy_move, random_move
from engine.games.mexican_train import bots as mt_bots
from engine.games.mexican_train.bots import round_wins
from engine.games.mexican_train.determinize import Determinizer, NoDeterminizationError
from engine.registry import game_spec
from service.cli import main
from tests.presets import MEXICAN_TRAIN_PRESETS
from tests.scenario import position
from tests.test_properties import Setup, _hide_and_reshuffle, _move_cap, setups

#: Playout moves per expert decision in these tests (MIN_WORLDS worlds at least).
TINY: int = 40

P0 = TrainRef.seat(0)
M0 = TrainRef.mexican(0)


def decide(level: str, game: MexicanTrain, budget: int = TINY) -> Move:
    """What ``level`` plays for the seat to move, from that seat's view alone."""
    view = build_view(game, game.current_seat)
    return choose(level, view, game.legal_moves(), bot_key(view), budget=budget)


def play_out(game: MexicanTrain, levels: list[str], budget: int = TINY) -> MexicanTrain:
    """Play ``game`` to its end with ``levels[seat]`` at each seat; fail past the
    move bound of the property tests."""
    for _ in range(_move_cap(game)):
        if game.over:
            return game
        game.apply(decide(levels[game.current_seat], game, budget), seat=game.current_seat)
    raise AssertionError(f"a game of bots did not end: {game!r}")


def positions(game: MexicanTrain, rnd: random.Random, every: int = 1) -> list[MexicanTrain]:
    """Copies of ``game``'s positions as random moves play it to its end."""
    seen = []
    while not game.over:
        if game.version % every == 0:
            seen.append(engine.load(game.to_bytes()))
        game.push(rnd.choice(game.legal_moves()))
    return seen


# --------------------------------------------------------------------- input


def test_choose_plays_a_legal_move_at_every_level() -> None:
    game = engine.new_game("standard", 4, "legal")
    for level in LEVELS:
        assert decide(level, game) in game.legal_moves()


def test_choose_refuses_an_unknown_level_and_an_empty_list() -> None:
    game = engine.new_game("standard", 4, "refuse")
    view = build_view(game, game.current_seat)
    with pytest.raises(ValueError, match="unknown bot level 'genius'"):
        choose("genius", view, game.legal_moves())
    with pytest.raises(ValueError, match="no legal move"):
        choose("greedy", view, [])


def test_choose_is_handed_no_state() -> None:
    """MT-VIS-3: a bot's parameters are a view, the legal moves, a key, a budget."""
    assert list(inspect.signature(choose).parameters) == ["level", "view", "legal", "key", "budget"]
    assert "MexicanTrain" not in str(inspect.signature(choose))


def test_bot_key_is_public() -> None:
    """The key comes from the seed's commitment (MT-FAIR-1), never the seed."""
    game = engine.new_game("standard", 4, "a secret seed")
    game.push(game.legal_moves()[0])
    view = build_view(game, game.current_seat)
    sha = hashlib.sha256(b"a secret seed").hexdigest()
    assert bot_key(view) == f"{sha}:1:{game.current_seat}"
    assert "secret" not in bot_key(view)
    assert choose("random", view, game.legal_moves()) == random_move(
        view, game.legal_moves(), bot_key(view)
    )


@pytest.mark.parametrize("name", sorted(MEXICAN_TRAIN_PRESETS))
def test_mt_vis_3_states_differing_in_hidden_tiles_give_bots_the_same_input(name: str) -> None:
    """Two states that differ only in other hands and the boneyard order give a
    seat the same view and legal moves, and every level the same choice."""
    rules = engine.preset(name).with_options(rounds=1)
    rnd = random.Random(name)
    differing = 0
    for game in positions(engine.new_game(rules, 4, f"hidden-{name}"), rnd, every=7):
        seat = game.current_seat
        other = _hide_and_reshuffle(game, seat, rnd)
        differing += any(game.hand(s) != other.hand(s) for s in range(4) if s != seat) or (
            game.boneyard_tiles() != other.boneyard_tiles()
        )
        view = build_view(game, seat)
        assert build_view(other, seat) == view
        assert other.legal_moves() == game.legal_moves()
        for level in LEVELS:
            key = bot_key(view)
            mine = choose(level, view, game.legal_moves(), key, budget=TINY)
            theirs = choose(level, build_view(other, seat), other.legal_moves(), key, budget=TINY)
            assert mine == theirs, f"{level} at v{game.version}"
    assert differing >= 3, "the hidden tiles never differed: the test proved nothing"


# --------------------------------------------------------------------- determinism


def test_bots_choose_the_same_move_for_the_same_input() -> None:
    rnd = random.Random(3)
    for game in positions(engine.new_game("standard", 4, "same"), rnd, every=9):
        view = build_view(game, game.current_seat)
        legal = list(game.legal_moves())
        for level in LEVELS:
            first = choose(level, view, legal, "k", budget=TINY)
            assert choose(level, view, legal, "k", budget=TINY) == first


def test_a_game_of_bots_replays_exactly() -> None:
    rules = engine.preset("standard").with_options(rounds=2)
    levels = ["expert", "greedy", "random", "greedy"]
    first = play_out(engine.new_game(rules, 4, "replay"), levels)
    second = play_out(engine.new_game(rules, 4, "replay"), levels)
    assert first.history == second.history
    assert engine.replay(rules, 4, "replay", first.history) == first


# --------------------------------------------------------------------- every ruleset


@pytest.mark.parametrize("name", sorted(MEXICAN_TRAIN_PRESETS))
def test_bots_only_games_finish_under_every_preset(name: str) -> None:
    rules = engine.preset(name).with_options(rounds=2)
    game = play_out(
        engine.new_game(rules, 4, f"finish-{name}"), ["expert", "greedy", "random", "greedy"]
    )
    assert game.over
    assert all(len(scores) == 2 for scores in game.round_scores)


@settings(max_examples=25)
@given(setups(max_rounds=1), st.data())
def test_bots_only_games_finish_under_random_rulesets(setup: Setup, data: st.DataObject) -> None:
    note(setup.describe())
    game = setup.new()
    levels = [data.draw(st.sampled_from(["random", "greedy"])) for _ in range(game.players)]
    # One expert seat at most: its playouts cost whole rounds of a big table.
    levels[data.draw(st.integers(0, game.players - 1))] = data.draw(st.sampled_from(LEVELS))
    note(f"levels={levels}")
    assert play_out(game, levels, budget=1).over


@settings(max_examples=40)
@given(setups(max_rounds=1))
def test_determinizations_match_the_seat_everywhere(setup: Setup) -> None:
    """Every position of random games: the expert's sampled positions give the
    seat its own hand, its legal moves and the public counts, and hold the
    whole set once (T-1); so the expert never falls back to the greedy bot."""
    note(setup.describe())
    game = setup.new()
    rnd = random.Random(setup.moves_seed)
    for _ in range(400):  # positions per example: a 14-seat double-18 round has more
        if game.over:
            break
        seat = game.current_seat
        det = Determinizer(build_view(game, seat), game.legal_moves())
        sample = det.position(rnd)
        assert sample.hand(seat) == game.hand(seat)
        assert set(sample.legal_moves()) == set(game.legal_moves())
        assert [sample.hand_count(s) for s in range(game.players)] == [
            game.hand_count(s) for s in range(game.players)
        ]
        assert len(sample.boneyard) == len(game.boneyard)
        hidden = sorted(
            [t for s in range(game.players) if s != seat for t in game.hand(s)]
            + game.boneyard_tiles()
        )
        sampled = sorted(
            [t for s in range(game.players) if s != seat for t in sample.hand(s)]
            + sample.boneyard_tiles()
        )
        assert sampled == hidden
        game.push(rnd.choice(game.legal_moves()))


def kinds(moves: list[Move]) -> set[MoveKind]:
    return {m.kind for m in moves}


def test_determinizer_keeps_drew_this_turn_after_a_drawn_double() -> None:
    """MT-DBL-6: a drawn double, once played, owes a tile that may be drawn for
    again; the view still says the seat drew (API.md ``turn.drewThisTurn``), and
    the expert's determinization reads the same turn and the same legal moves
    (a drawn double matches the end it went on, so the seat holds no play)."""
    found = 0
    for name in ("standard", "pagat", "house", "cover_own"):
        game = engine.new_game(engine.preset(name).with_options(rounds=4), 4, f"drawn-{name}")
        rnd = random.Random(name)
        while not game.over:
            seat, legal = game.current_seat, game.legal_moves()
            view = build_view(game, seat)
            assert view.turn is not None
            turn = view.turn
            if turn.drew_this_turn and turn.owes_tile and MoveKind.PLAY not in kinds(legal):
                found += 1
                sample = Determinizer(view, legal).position(rnd)
                assert build_view(sample, seat).turn == turn
                assert sample.legal_moves() == legal
                assert decide("expert", game) in legal
            game.push(rnd.choice(legal))
    assert found >= 5, found


def test_determinizer_refuses_a_seat_not_to_move() -> None:
    game = engine.new_game("standard", 4, "not-you")
    other = (game.current_seat + 1) % 4
    with pytest.raises(NoDeterminizationError, match="not the seat to move"):
        Determinizer(build_view(game, other), game.legal_moves())
    with pytest.raises(NoDeterminizationError):
        Determinizer(build_view(game, None), game.legal_moves())


# --------------------------------------------------------------------- greedy heuristics


def test_greedy_keeps_the_chain_for_its_own_train() -> None:
    """MT-TR-3: 12-10 leads a chain (10-3) for the own train, which only this
    seat may play on; the heavier-than-the-rest 12-8 goes on the Mexican train."""
    game = position(hands=["12-10 10-3 12-8", "1-2", "1-3", "1-4"], boneyard="0-0")
    assert greedy_move(build_view(game, 0), game.legal_moves(), "k") == Move.play(
        engine.Tile(8, 12), M0
    )


def test_greedy_sheds_a_double_it_can_follow() -> None:
    """MT-DBL-1: 5-5 with 5-2 to follow sheds two tiles this turn; it beats the
    heavier 10-11."""
    game = position(
        hands=["5-5 5-2 10-11", "1-2", "1-3", "1-4"],
        trains={"p0": "12-5", "m0": "12-11"},
        boneyard="0-0",
    )
    assert greedy_move(build_view(game, 0), game.legal_moves(), "k") == Move.play(
        engine.Tile(5, 5), P0
    )


def test_the_expert_weighs_the_heuristics_above_the_pips() -> None:
    """The expert's own weights (``EXPERT``): on the Mexican train, 5-1 leaves
    a 1 the hand follows twice (1-2, 1-3); the greedy bot plays the heavier
    5-12 instead, the expert the one that keeps it playing. In the playouts
    the searching seat plays by the expert's weights, the others by the
    greedy bot's."""
    game = position(
        hands=["5-1 1-2 1-3 5-12", "1-4", "1-5", "1-6"],
        trains={"p0": "12-0", "m0": "12-5"},
        boneyard="0-0",
    )
    view, legal = build_view(game, 0), game.legal_moves()
    heavy, light = Move.play(engine.Tile(5, 12), M0), Move.play(engine.Tile(1, 5), M0)
    assert set(legal) == {heavy, light}
    assert greedy_move(view, legal, "k") == heavy
    greedy, expert = mt_bots.greedy_scores(view, legal), mt_bots.expert_scores(view, legal)
    assert legal[greedy.index(max(greedy))] == heavy
    assert legal[expert.index(max(expert))] == light
    assert mt_bots.playout_policy(game, 0)(legal) == light
    assert mt_bots.playout_policy(game, 1)(legal) == heavy


def test_the_expert_budget_shrinks_with_the_players() -> None:
    """A Mexican Train move costs more with more trains; the game's own
    budget (``BotHooks.budget``) is what a decision spends by default."""
    budgets = [mt_bots.expert_budget(n) for n in range(2, 9)]
    assert budgets == sorted(budgets, reverse=True)
    assert game_spec("mexican_train").bots.budget is mt_bots.expert_budget
    # Chicken Foot keeps the default budget and the greedy heuristics (its own
    # expert is measured with them).
    assert game_spec("chicken_foot").bots.budget is None
    assert game_spec("chicken_foot").bots.expert_scores is None


def test_greedy_takes_its_marker_off() -> None:
    """MT-TR-4: with its marker on, the own train comes first."""
    game = position(hands=["12-3 12-4", "1-2", "1-3", "1-4"], markers=[0], boneyard="0-0")
    assert greedy_move(build_view(game, 0), game.legal_moves(), "k") == Move.play(
        engine.Tile(4, 12), P0
    )


def test_greedy_announces_its_last_but_one_tile() -> None:
    """MT-KNOCK-1 penalty: of a play and its announced twin, the announced one."""
    game = position("house", hands=["12-3 12-4", "1-2", "1-3", "1-4"], boneyard="0-0 0-1")
    assert any(not m.announce for m in game.legal_moves())
    for level in ("greedy", "expert"):
        move = decide(level, game)
        assert move.kind is MoveKind.PLAY
        assert move.announce


def test_greedy_goes_on_with_a_chain_first_turn() -> None:
    """MT-FT-1 chain: END_TURN only once nothing more can be played."""
    game = position(
        "pagat", hands=["12-5 5-3 3-9", "1-2", "1-3", "1-4"], boneyard="0-0", first_turns_done=False
    )
    game.apply(Move.parse("5-12@p0"))
    assert END_TURN in game.legal_moves()
    assert decide("greedy", game).kind is MoveKind.PLAY


def test_a_bot_with_no_play_draws() -> None:
    game = position(hands=["1-1", "1-2", "1-3", "1-4"], boneyard="0-0")
    assert [decide(level, game) for level in LEVELS] == [DRAW] * 3


# --------------------------------------------------------------------- strength


def test_greedy_beats_random_with_intervals_apart() -> None:
    """A fixed sample (deterministic): 1 greedy vs 3 random, 48 one-round games."""
    rules = engine.preset("standard").with_options(rounds=1)
    config = ArenaConfig(("greedy", "random", "random", "random"), rules, 48, "strength")
    greedy, rand = sorted(summarize(run(config, clock=lambda: 0.0)), key=lambda s: s.level)
    assert (greedy.level, rand.level) == ("greedy", "random")
    assert greedy.won_low > rand.won_high
    assert greedy.mean_score + greedy.score_half < rand.mean_score - rand.score_half


# --------------------------------------------------------------------- arena


def test_wilson_interval_known_values() -> None:
    assert [round(x, 4) for x in wilson(50, 100)] == [0.4038, 0.5962]
    assert [round(x, 4) for x in wilson(0, 10)] == [0.0, 0.2775]
    assert [round(x, 4) for x in wilson(10, 10)] == [0.7225, 1.0]
    assert [round(x, 4) for x in wilson(1.5, 4)] == [0.0919, 0.7806]  # split wins count
    assert wilson(0, 0) == (0.0, 1.0)


def test_mean_interval_and_percentiles() -> None:
    mean, half = mean_interval([2.0, 4.0, 6.0, 8.0])
    assert mean == 5.0
    assert half == pytest.approx(1.959963984540054 * (20 / 3) ** 0.5 / 2)
    assert mean_interval([3.0]) == (3.0, 0.0)
    values = [float(v) for v in range(1, 201)]
    assert (percentile(values, 50), percentile(values, 99), percentile(values, 100)) == (
        100.0,
        198.0,
        200.0,
    )


def test_round_wins_split_ties() -> None:
    assert round_wins([0, 5, 9, 3]) == [1.0, 0.0, 0.0, 0.0]
    assert round_wins([7, 7, 9]) == [0.5, 0.5, 0.0]  # a blocked round's tie (MT-END-3)


def test_seats_rotate_every_game() -> None:
    bots = ("expert", "greedy", "greedy", "random")
    assert [seating(bots, g)[0] for g in range(4)] == ["expert", "greedy", "greedy", "random"]
    assert seating(bots, 1) == ("greedy", "greedy", "random", "expert")


def test_summarize_pools_the_seats_of_a_level() -> None:
    records = [
        GameRecord(
            0,
            ("random", "greedy", "greedy"),
            ((0, 10, 20), (6, 6, 0)),
            ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
            ((0.001,), (0.002, 0.004), ()),
        ),
        GameRecord(
            1,
            ("greedy", "greedy", "random"),
            ((5, 0, 7),),
            ((0.0, 1.0, 0.0),),
            ((0.003,), (), (0.005, 0.006)),
        ),
    ]
    rand, greedy = summarize(records)  # in LEVELS order
    assert (rand.level, rand.seats, rand.seat_rounds, rand.wins) == ("random", 1, 3, 1.0)
    assert (greedy.level, greedy.seats, greedy.seat_rounds, greedy.wins) == ("greedy", 2, 6, 2.0)
    assert rand.won_share == pytest.approx(1 / 3)
    assert (rand.won_low, rand.won_high) == wilson(1, 3)
    # One sample per round: random scored 0, 6, 7; greedy's seats 15, 3 and 2.5.
    assert rand.mean_score == pytest.approx(13 / 3)
    assert greedy.mean_score == pytest.approx((15 + 3 + 2.5) / 3)
    assert rand.rounds == greedy.rounds == 3
    # Game totals: random 6 and 7; greedy (16 + 20) / 2 = 18 and (5 + 0) / 2 = 2.5.
    assert (rand.mean_total, greedy.mean_total) == (6.5, pytest.approx(10.25))
    assert (rand.decisions, rand.p50_ms, rand.max_ms) == (3, 5.0, 6.0)
    assert (greedy.decisions, greedy.p99_ms) == (3, 4.0)


def test_play_game_records_every_round_and_decision() -> None:
    rules = engine.preset("standard").with_options(rounds=2)
    config = ArenaConfig(("greedy", "random"), rules, 3, "record")
    ticks = iter(range(1_000_000))
    record = play_game(config, 1, clock=lambda: float(next(ticks)))
    assert record.levels == ("random", "greedy")  # game 1: rotated by one seat
    # The same game, replayed by hand: same scores, one decision per move.
    game = engine.new_game(rules, 2, "record:1")
    levels = record.levels
    while not game.over:
        game.push(decide(levels[game.current_seat], game))
    assert record.round_scores == tuple(zip(*game.round_scores, strict=True))
    assert sum(len(t) for t in record.decision_seconds) == game.version
    assert all(t == 1.0 for times in record.decision_seconds for t in times)


def test_arena_config_refuses_what_cannot_be_played() -> None:
    rules = engine.preset("standard")
    with pytest.raises(ValueError, match="unknown bot level 'smart'"):
        ArenaConfig(("smart", "greedy"), rules, 1)
    with pytest.raises(ValueError, match="games must be at least 1"):
        ArenaConfig(("greedy", "greedy"), rules, 0)
    with pytest.raises(engine.RulesetError):
        ArenaConfig(("greedy",), rules, 1)  # MT-SET-2: two players at least


def test_report_names_every_level_and_the_method() -> None:
    rules = engine.preset("standard").with_options(rounds=1)
    config = ArenaConfig(("greedy", "random", "random"), rules, 3, "report")
    text = report(config, run(config, clock=time.perf_counter))
    assert "Wilson" in text
    assert "ties split" in text
    lines = text.splitlines()
    assert any(line.startswith("greedy ") for line in lines)
    assert any(line.startswith("random ") for line in lines)


def test_railyard_arena_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["arena", "--bots", "expert,greedy,random", "--games", "3", "--rounds", "1"]
    assert main([*argv, "--budget", "20", "--option", "mexican_trains=2", "--seed", "cli"]) == 0
    out, err = capsys.readouterr()
    assert "3 players (expert, greedy, random)" in out
    rows = [
        line.split()[0]
        for line in out.splitlines()
        if line.split()[:1] in (["random"], ["greedy"], ["expert"])
    ]
    assert rows == ["random", "greedy", "expert"]
    assert "arena: 3/3 games" in err


def test_railyard_arena_with_two_jobs(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["arena", "--bots", "greedy,random", "--games", "4", "--rounds", "1", "--jobs", "2"]
    assert main([*argv, "--clock", "cpu"]) == 0
    out, _ = capsys.readouterr()
    assert "4 games, 4 rounds" in out
    assert "process CPU" in out


def test_railyard_arena_refuses_a_bad_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["arena", "--option", "mexican_trains"]) == 2
    assert main(["arena", "--bots", "greedy,genius"]) == 2
    assert "unknown bot level 'genius'" in capsys.readouterr().err
