"""Bots (engine/bots.py, engine/expert.py, engine/determinize.py) and the arena
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
- the greedy bot's documented heuristics on exact positions.

The expert plays with a tiny budget here: these tests check behaviour, not
strength or time (README "Bots" has the measured figures).
"""

from __future__ import annotations

import hashlib
import inspect
import random

import hypothesis.strategies as st
import pytest
from hypothesis import given, note, settings

import engine
from engine import DRAW, END_TURN, MexicanTrain, Move, MoveKind, TrainRef, build_view
from engine.bots import LEVELS, bot_key, choose, greedy_move, random_move
from engine.determinize import Determinizer, NoDeterminizationError
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


@pytest.mark.parametrize("name", sorted(engine.PRESETS))
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


@pytest.mark.parametrize("name", sorted(engine.PRESETS))
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
    while not game.over:
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
