"""RULES.md sections 1 and 2.1-2.5: tiles, set and deal, rounds and the engine,
trains, the first turn, a normal turn (draw, pass, markers).

Every test names the rule id it checks and starts from an exact position:
a seed whose shuffle the test recomputes (API.md "Deal shuffle"), or a
position spelled out with ``tests.scenario.position``. Legal-move lists are
compared as sorted lists: the exact set of moves, duplicates included, with
no claim on the engine's order (RULES.md fixes none).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

import engine
from engine import (
    DoubleSatisfied,
    Event,
    MarkerPlaced,
    MarkerRemoved,
    MexicanTrain,
    Passed,
    RoundEnded,
    RoundEndReason,
    RoundStarted,
    Ruleset,
    Tile,
    TileDrawn,
    TilePlayed,
    TrainRef,
    TurnStarted,
)
from engine.shuffle import shuffle
from engine.tiles import canonical_ids
from engine.view import TurnView
from tests.scenario import notations, play, position

P0, P1, P2, P3 = (TrainRef.seat(s) for s in range(4))
M0 = TrainRef.mexican(0)


# --------------------------------------------------------------------- helpers


def rules(name: str = "standard", **options: object) -> Ruleset:
    return engine.preset(name).with_options(**options)


def t(text: str) -> Tile:
    return Tile.parse(text)


def tiles(text: str) -> list[Tile]:
    return [Tile.parse(x) for x in text.split()]


def oriented(text: str) -> list[Tile]:
    """Train tiles as API.md orients them: ``touching-open`` (``12-5`` stays 12, 5)."""
    return [Tile(*map(int, x.split("-"))) for x in text.split()]


def legal(game: MexicanTrain) -> list[str]:
    """The legal moves as text, sorted: the exact set (RULES.md fixes no order)."""
    return sorted(notations(game))


def full_set(n: int) -> list[Tile]:
    """T-1 written out: every a-b with 0 <= a <= b <= n, canonical order."""
    return [Tile(a, b) for a in range(n + 1) for b in range(a, n + 1)]


def shuffled(seed: str, label: str, set_max: int, leave_out: Tile | None) -> list[Tile]:
    """API.md steps 3-4: the canonical set (minus ``leave_out``) shuffled for ``label``."""
    items = [Tile(tid >> 5, tid & 31) for tid in canonical_ids(set_max)]
    items = [x for x in items if x != leave_out]
    return list(shuffle(seed, label, items))


def illegal(game: MexicanTrain, move: str) -> engine.IllegalMoveError:
    """Apply ``move``, expect it refused, and check that nothing changed."""
    before = game.to_bytes()
    with pytest.raises(engine.IllegalMoveError) as info:
        play(game, move)
    assert game.to_bytes() == before
    assert info.value.reason in engine.ILLEGAL_REASONS
    return info.value


def play_out_round(game: MexicanTrain) -> list[Event]:
    """Play the current round to its end with the first legal move each time;
    return the events of the move that ended it (they include the next deal)."""
    rnd = game.round
    for _ in range(2000):
        events = game.apply(game.legal_moves()[0])
        if game.round != rnd or game.over:
            return events
    raise AssertionError("the round did not end")


def first_player_draws(seed: str, players: int, set_max: int) -> list[list[tuple[int, Tile]]]:
    """MT-ENG-1 ``draw`` recomputed from API.md: each draw k as (seat, tile) pairs;
    contender j (in seat order) takes shuffled tile j; ties draw again."""
    engine_tile = Tile(set_max, set_max)
    contenders = list(range(players))
    history = []
    for k in range(1, 50):
        deck = shuffled(seed, f"round:1:first-player:{k}", set_max, engine_tile)
        drawn = [(seat, deck[j]) for j, seat in enumerate(contenders)]
        history.append(drawn)
        best = max(tile.pips for _, tile in drawn)
        contenders = [seat for seat, tile in drawn if tile.pips == best]
        if len(contenders) == 1:
            return history
    raise AssertionError("no first player after 49 draws")


def hands_of(game: MexicanTrain) -> list[list[Tile]]:
    return [game.hand(s) for s in range(game.players)]


def dealt(order: Sequence[Tile], players: int, hand: int) -> list[list[Tile]]:
    """API.md step 5: seat s takes tiles s*h .. s*h+h-1, as a canonical-order hand."""
    return [sorted(order[s * hand : (s + 1) * hand]) for s in range(players)]


def seat_to_move_in_view(game: MexicanTrain) -> int | None:
    return engine.build_view(game, None).current_seat


def words(message: str) -> set[str]:
    return set(re.findall(r"\d+", message))


# ------------------------------------------------------------------- 1. Tiles


@pytest.mark.parametrize(("n", "size"), [(6, 28), (9, 55), (12, 91), (15, 136), (18, 190)])
def test_t_1_set_sizes(n: int, size: int) -> None:
    assert len(full_set(n)) == size == (n + 1) * (n + 2) // 2
    # The engine's set: hands + boneyard + the engine in the station.
    game = engine.new_game(rules(set_max=n, hand_size=1, engine_placement="holder_plays"), 2, "t1")
    on_table = [game.engine]
    held = game.hand(0) + game.hand(1)
    assert sorted(held + game.boneyard_tiles() + on_table) == full_set(n)


@pytest.mark.parametrize("n", range(6, 19))
def test_t_1_every_set_from_6_to_18_is_accepted(n: int) -> None:
    game = engine.new_game(rules(set_max=n, hand_size=3), 2, "t1-any")
    assert game.set_max == n
    assert game.engine == Tile(n, n)
    # set_aside: the engine is not dealt, so 2 hands + boneyard = every other tile.
    everything = game.hand(0) + game.hand(1) + game.boneyard_tiles()
    assert sorted(everything) == [x for x in full_set(n) if x != Tile(n, n)]


@pytest.mark.parametrize("n", [0, 5, 19])
def test_t_1_sets_outside_6_to_18_are_refused(n: int) -> None:
    with pytest.raises(engine.RulesetError) as info:
        engine.new_game(rules(set_max=n), 2, "t1-bad")
    assert info.value.reason == "INVALID_ARGUMENT"
    assert info.value.rule == "T-1"


def test_t_2_tile_is_written_low_high_with_its_pips() -> None:
    assert Tile.parse("12-5") == Tile.parse("5-12") == Tile.of(12, 5) == Tile(5, 12)
    assert str(Tile.parse("12-5")) == "5-12"
    assert Tile(5, 12).pips == 17
    assert Tile(0, 0).pips == 0
    assert Tile(6, 6).is_double
    assert not Tile(5, 6).is_double


def test_t_2_a_move_may_name_a_tile_in_either_order() -> None:
    game = position(hands=["3-12 4-5", "1-1", "2-2", "3-3"], boneyard="0-1")
    assert str(engine.parse_move("12-3@p0")) == "3-12@p0"
    events = play(game, "12-3@p0")
    assert events == [TilePlayed(0, Tile(3, 12), P0), TurnStarted(1)]
    assert game.hand(0) == [Tile(4, 5)]


@pytest.mark.parametrize(("blank", "score"), [(0, 7), (25, 32), (50, 57)])
def test_t_3_double_blank_value_counts_in_the_hand(blank: int, score: int) -> None:
    game = position(
        rules(double_blank_value=blank, first_player="seat0"),
        2,
        hands=["3-12", "0-0 3-4"],
        boneyard="1-2 2-3",
    )
    events = play(game, "12-3@p0")
    assert events == [
        TilePlayed(0, Tile(3, 12), P0),
        RoundEnded(1, RoundEndReason.DOMINO, (0, score)),
        RoundStarted(2, Tile(11, 11), 1),
        TurnStarted(1),
    ]
    assert game.round_scores == [[0], [score]]
    assert game.totals == [0, score]


@pytest.mark.parametrize("blank", [1, 10, 100, -25])
def test_t_3_other_double_blank_values_are_refused(blank: int) -> None:
    with pytest.raises(engine.RulesetError) as info:
        rules(double_blank_value=blank)
    assert info.value.reason == "INVALID_ARGUMENT"
    assert info.value.rule == "T-3"


# ------------------------------------------------------- 2.1 Set, players, deal

AUTO_SET = {2: 9, 3: 9, 4: 12, 5: 12, 6: 12, 7: 12, 8: 12}
AUTO_SET.update({9: 15, 10: 15, 11: 15, 12: 15, 13: 18, 14: 18})


@pytest.mark.parametrize("players", range(2, 15))
def test_mt_set_1_auto_set_follows_player_count(players: int) -> None:
    n = AUTO_SET[players]
    resolved = engine.preset("by_set").resolve(players)
    assert resolved.set_max == n
    game = engine.new_game("by_set", players, "auto")
    assert game.set_max == n
    assert game.engine == Tile(n, n)
    assert game.rounds_total == n + 1


def test_mt_set_1_standard_is_double_12_for_2_to_8_players() -> None:
    for players in range(2, 9):
        game = engine.new_game("standard", players, "std")
        assert (game.set_max, game.engine, game.rounds_total) == (12, Tile(12, 12), 13)


@pytest.mark.parametrize("n", [6, 9, 15, 18])
def test_mt_set_1_explicit_set_overrides_auto(n: int) -> None:
    # by_set would pick double-12 for 4 players; an explicit set wins.
    game = engine.new_game(rules("by_set", set_max=n, hand_size=5), 4, "explicit")
    assert (game.set_max, game.engine) == (n, Tile(n, n))
    assert [game.hand_count(s) for s in range(4)] == [5, 5, 5, 5]


@pytest.mark.parametrize("players", range(2, 15))
def test_mt_set_2_player_counts_2_to_14_are_accepted(players: int) -> None:
    game = engine.new_game("by_set", players, "counts")
    n = AUTO_SET[players]
    hand = {9: 8, 15: 11, 18: 11}.get(n) or (12 if players <= 6 else 10)
    assert game.players == players
    assert [game.hand_count(s) for s in range(players)] == [hand] * players
    assert len(game.boneyard_tiles()) == (n + 1) * (n + 2) // 2 - 1 - players * hand


@pytest.mark.parametrize("players", [0, 1, 15, 16])
def test_mt_set_2_other_player_counts_are_refused(players: int) -> None:
    with pytest.raises(engine.RulesetError) as info:
        engine.new_game(rules(hand_size=1), players, "counts")
    assert info.value.reason == "INVALID_ARGUMENT"
    assert info.value.rule == "MT-SET-2"


def test_mt_set_2_fourteen_players_with_double_12_when_the_hand_fits() -> None:
    # Ambiguity: MT-SET-1 says "2 to 8 with double-12"; MT-SET-2 accepts 2..14
    # whenever set and hand size fit. Read as: 2-8 is what the tables cover,
    # an explicit hand size that fits is accepted (14 x 6 = 84 <= 90).
    game = engine.new_game(rules(hand_size=6), 14, "crowd")
    assert [game.hand_count(s) for s in range(14)] == [6] * 14
    assert len(game.boneyard_tiles()) == 6


STANDARD_TABLE = {2: 15, 3: 15, 4: 15, 5: 12, 6: 12, 7: 10, 8: 10}


@pytest.mark.parametrize(("players", "hand"), sorted(STANDARD_TABLE.items()))
def test_mt_deal_1_standard_table(players: int, hand: int) -> None:
    game = engine.new_game("standard", players, "table")
    assert [game.hand_count(s) for s in range(players)] == [hand] * players
    assert len(game.boneyard_tiles()) == 90 - players * hand
    order = shuffled("table", "round:1:deal", 12, Tile(12, 12))
    assert hands_of(game) == dealt(order, players, hand)
    assert game.boneyard_tiles() == order[players * hand :]


@pytest.mark.parametrize(("set_max", "players", "hand"), [(15, 5, 12), (18, 8, 10), (9, 3, 15)])
def test_mt_deal_1_standard_table_is_keyed_by_player_count_whatever_the_set(
    set_max: int, players: int, hand: int
) -> None:
    game = engine.new_game(rules(set_max=set_max), players, "keyed")
    assert [game.hand_count(s) for s in range(players)] == [hand] * players


@pytest.mark.parametrize("players", [9, 10, 14])
def test_mt_deal_1_standard_table_has_no_entry_beyond_8_players(players: int) -> None:
    with pytest.raises(engine.DealDoesNotFitError) as info:
        engine.new_game(rules(set_max=18), players, "nine")
    assert info.value.reason == "DEAL_DOES_NOT_FIT"
    assert info.value.rule == "MT-DEAL-1"
    assert {str(players), "18"} <= words(info.value.message)


BY_SET_CASES = [
    (9, 2, 8),
    (9, 3, 8),
    (9, 6, 8),
    (12, 4, 12),
    (12, 5, 12),
    (12, 6, 12),
    (12, 7, 10),
    (12, 8, 10),
    (15, 4, 11),
    (15, 12, 11),
    (18, 2, 11),
    (18, 14, 11),
]


@pytest.mark.parametrize(("set_max", "players", "hand"), BY_SET_CASES)
def test_mt_deal_1_by_set_table(set_max: int, players: int, hand: int) -> None:
    game = engine.new_game(rules("by_set", set_max=set_max), players, "by-set")
    assert [game.hand_count(s) for s in range(players)] == [hand] * players
    size = (set_max + 1) * (set_max + 2) // 2
    assert len(game.boneyard_tiles()) == size - 1 - players * hand


@pytest.mark.parametrize(("set_max", "players"), [(12, 2), (12, 3), (12, 9), (6, 2), (10, 2)])
def test_mt_deal_1_by_set_refuses_what_it_does_not_name(set_max: int, players: int) -> None:
    with pytest.raises(engine.DealDoesNotFitError) as info:
        engine.new_game(rules("by_set", set_max=set_max), players, "by-set")
    assert info.value.reason == "DEAL_DOES_NOT_FIT"
    assert info.value.rule == "MT-DEAL-1"
    assert {str(players), str(set_max)} <= words(info.value.message)


@pytest.mark.parametrize(("set_max", "players", "hand"), [(9, 2, 15), (9, 3, 13), (9, 4, 10)])
def test_mt_deal_1_puremco_double9_table(set_max: int, players: int, hand: int) -> None:
    ruleset = rules(set_max=set_max, hand_size_table="puremco_double9")
    game = engine.new_game(ruleset, players, "puremco")
    assert [game.hand_count(s) for s in range(players)] == [hand] * players
    assert len(game.boneyard_tiles()) == 54 - players * hand
    # keyed by player count alone: the same with double-12
    other = engine.new_game(ruleset.with_options(set_max=12), players, "puremco")
    assert other.hand_count(0) == hand
    with pytest.raises(engine.DealDoesNotFitError):
        engine.new_game(ruleset, 5, "puremco")


@pytest.mark.parametrize("players", [2, 3])
def test_mt_deal_1_double6_table(players: int) -> None:
    ruleset = rules(set_max=6, hand_size_table="double6")
    game = engine.new_game(ruleset, players, "d6")
    assert [game.hand_count(s) for s in range(players)] == [5] * players
    assert len(game.boneyard_tiles()) == 27 - 5 * players
    assert engine.new_game(ruleset.with_options(set_max=12), players, "d6").hand_count(0) == 5
    with pytest.raises(engine.DealDoesNotFitError) as info:
        engine.new_game(ruleset, 4, "d6")
    assert info.value.rule == "MT-DEAL-1"


def test_mt_deal_1_explicit_hand_size_overrides_any_table() -> None:
    game = engine.new_game(rules(hand_size=7), 4, "explicit")
    assert [game.hand_count(s) for s in range(4)] == [7, 7, 7, 7]
    assert len(game.boneyard_tiles()) == 90 - 28
    # by_set has no entry for 2 players with double-12; a hand size does.
    game = engine.new_game(rules("by_set", set_max=12, hand_size=9), 2, "explicit")
    assert [game.hand_count(s) for s in range(2)] == [9, 9]
    # standard has none for 9 players.
    game = engine.new_game(rules(hand_size=10), 9, "explicit")
    assert [game.hand_count(s) for s in range(9)] == [10] * 9
    assert game.boneyard_tiles() == []


@pytest.mark.parametrize("option", ["hand_size", "rounds", "set_max"])
def test_mt_deal_1_zero_hand_size_rounds_or_set_is_refused(option: str) -> None:
    with pytest.raises(engine.RulesetError) as info:
        engine.new_game(engine.preset("standard").with_options(**{option: 0}), 4, "zero")
    assert info.value.reason == "INVALID_ARGUMENT"
    assert (
        info.value.rule
        == {"hand_size": "MT-DEAL-1", "rounds": "MT-RND-1", "set_max": "T-1"}[option]
    )


def test_mt_deal_2_set_aside_fits_up_to_all_tiles_but_the_engine() -> None:
    game = engine.new_game(rules(set_max=6, hand_size=9), 3, "fit")
    assert [game.hand_count(s) for s in range(3)] == [9, 9, 9]
    assert game.boneyard_tiles() == []
    with pytest.raises(engine.DealDoesNotFitError) as info:
        engine.new_game(rules(set_max=6, hand_size=7), 4, "fit")
    assert info.value.reason == "DEAL_DOES_NOT_FIT"
    assert info.value.rule == "MT-DEAL-2"
    # names the numbers: 4 players, 7 tiles, 28 wanted, 27 dealable
    assert {"4", "7", "28", "27"} <= words(info.value.message)


def test_mt_deal_2_holder_plays_fits_up_to_every_tile() -> None:
    holder = rules(set_max=6, hand_size=7, engine_placement="holder_plays")
    game = engine.new_game(holder, 4, "fit")
    assert game.boneyard_tiles() == []
    counts = [game.hand_count(s) for s in range(4)]
    # the holder placed the engine from their 7 tiles
    assert counts == [6 if s == game.current_seat else 7 for s in range(4)]
    assert Tile(6, 6) not in [x for s in range(4) for x in game.hand(s)]
    # double-9: 5 x 11 = 55 = every tile; set_aside would deal only 54
    engine.new_game(rules(set_max=9, hand_size=11, engine_placement="holder_plays"), 5, "fit")
    with pytest.raises(engine.DealDoesNotFitError) as info:
        engine.new_game(rules(set_max=9, hand_size=11), 5, "fit")
    assert {"5", "11", "55", "54"} <= words(info.value.message)
    with pytest.raises(engine.DealDoesNotFitError) as info:
        engine.new_game(rules(set_max=9, hand_size=8, engine_placement="holder_plays"), 7, "fit")
    assert info.value.rule == "MT-DEAL-2"
    assert {"7", "8", "56", "55"} <= words(info.value.message)


def test_mt_deal_2_refusal_also_comes_from_resolve() -> None:
    with pytest.raises(engine.DealDoesNotFitError) as info:
        rules(set_max=6, hand_size=14).resolve(2)
    assert {"2", "14", "28", "27"} <= words(info.value.message)
    assert rules(set_max=6, hand_size=13).resolve(2).hand_size == 13


def test_mt_deal_3_hands_private_rest_is_the_shuffled_boneyard() -> None:
    game = engine.new_game("standard", 4, "deal3")
    order = shuffled("deal3", "round:1:deal", 12, Tile(12, 12))
    assert hands_of(game) == dealt(order, 4, 15)
    assert game.boneyard_tiles() == order[60:]
    for seat in range(4):
        view = engine.build_view(game, seat)
        assert view.hand == tuple(game.hand(seat))
        assert view.boneyard_count == 30
        assert [p.hand_count for p in view.players] == [15, 15, 15, 15]
    spectator = engine.build_view(game, None)
    assert spectator.hand is None
    assert spectator.boneyard_count == 30
    assert not hasattr(spectator, "boneyard")


def test_mt_deal_3_holder_plays_deals_from_the_whole_set() -> None:
    # seed "holds-1": the engine is shuffled to index 39, in seat 2's hand.
    game = engine.new_game(rules(engine_placement="holder_plays"), 4, "holds-1")
    order = shuffled("holds-1", "round:1:deal", 12, None)
    assert order.index(Tile(12, 12)) == 39
    expected = dealt(order, 4, 15)
    expected[2].remove(Tile(12, 12))
    assert hands_of(game) == expected
    assert game.boneyard_tiles() == order[60:]


# ------------------------------------------------------ 2.2 Rounds and the engine


@pytest.mark.parametrize("n", [6, 9, 12, 15, 18])
def test_mt_rnd_1_a_game_has_n_plus_1_rounds(n: int) -> None:
    game = engine.new_game(rules(set_max=n, hand_size=2), 2, "rounds")
    assert game.rounds_total == n + 1
    assert game.round == 1
    assert game.engine == Tile(n, n)


def test_mt_rnd_1_engines_go_down_to_0_0_over_a_whole_game() -> None:
    game = engine.new_game(rules(set_max=6, hand_size_table="double6"), 2, "whole")
    started = [e for e in game.opening_events if isinstance(e, RoundStarted)]
    while not game.over:
        started += [e for e in play_out_round(game) if isinstance(e, RoundStarted)]
    assert [(e.round, e.engine) for e in started] == [(r, Tile(7 - r, 7 - r)) for r in range(1, 8)]
    assert [len(rs) for rs in game.round_scores] == [7, 7]
    assert game.legal_moves() == []
    with pytest.raises(engine.GameOverError):
        game.apply(engine.DRAW)


def test_mt_rnd_1_first_engine_starts_lower() -> None:
    game = engine.new_game(rules(first_engine=5), 4, "lower")
    assert (game.rounds_total, game.engine) == (6, Tile(5, 5))
    # set_aside leaves out 5-5, not 12-12
    held = [x for s in range(4) for x in game.hand(s)] + game.boneyard_tiles()
    assert sorted(held) == [x for x in full_set(12) if x != Tile(5, 5)]
    assert rules(first_engine=5).resolve(4).rounds == 6
    assert rules(first_engine=0).resolve(4).rounds == 1


def test_mt_rnd_1_rounds_plays_only_the_first_k() -> None:
    game = engine.new_game(rules(set_max=6, hand_size_table="double6", rounds=2), 2, "short")
    assert game.rounds_total == 2
    starter = game.current_seat
    events = play_out_round(game)
    assert [e for e in events if isinstance(e, RoundStarted)] == [
        RoundStarted(2, Tile(5, 5), 1 - starter)
    ]
    events = play_out_round(game)
    assert game.over
    assert isinstance(events[-1], engine.GameEnded)
    assert not any(isinstance(e, RoundStarted) for e in events)
    assert [len(rs) for rs in game.round_scores] == [2, 2]


@pytest.mark.parametrize(
    ("options", "numbers"),
    [
        ({"first_engine": 13}, {"13", "12"}),
        ({"rounds": 14}, {"14", "13"}),
        ({"first_engine": 4, "rounds": 6}, {"6", "5"}),
        ({"set_max": 9, "first_engine": 10}, {"10", "9"}),
    ],
)
def test_mt_rnd_1_first_engine_above_set_or_too_many_rounds_refused(
    options: dict[str, int], numbers: set[str]
) -> None:
    with pytest.raises(engine.RulesetError) as info:
        engine.new_game(engine.preset("standard").with_options(**options), 4, "refused")
    assert info.value.reason == "INVALID_ARGUMENT"
    assert info.value.rule == "MT-RND-1"
    assert numbers <= words(info.value.message)


def test_mt_rnd_1_most_rounds_allowed_is_first_engine_plus_1() -> None:
    game = engine.new_game(rules(first_engine=4, rounds=5), 4, "edge")
    assert (game.rounds_total, game.engine) == (5, Tile(4, 4))


def test_mt_rnd_1_last_round_engine_is_0_0_and_ends_the_game() -> None:
    game = position(
        rules(first_player="seat0"),
        2,
        hands=["0-4", "5-6"],
        boneyard="1-2",
        round=13,
        round_scores=[[0] * 12, [1] * 12],
    )
    assert game.engine == Tile(0, 0)
    assert legal(game) == ["0-4@m0", "0-4@p0"]
    events = play(game, "0-4@p0")
    assert events == [
        TilePlayed(0, Tile(0, 4), P0),
        RoundEnded(13, RoundEndReason.DOMINO, (0, 11)),
        engine.GameEnded((0, 23), (0,), "scenario"),
    ]
    assert game.over


def test_mt_rnd_2_next_round_is_reshuffled_and_dealt_the_same_hand_size() -> None:
    game = engine.new_game(rules(first_player="seat0"), 4, "round2")
    events = play_out_round(game)
    assert events[-2:] == [RoundStarted(2, Tile(11, 11), 1), TurnStarted(1)]
    order = shuffled("round2", "round:2:deal", 12, Tile(11, 11))
    assert hands_of(game) == dealt(order, 4, 15)
    assert game.boneyard_tiles() == order[60:]
    assert [game.hand_count(s) for s in range(4)] == [15, 15, 15, 15]
    # a fresh table: empty trains open on 11, no marker, no double, first turns due
    assert game.open_ends == [[11]] * 5
    assert [game.train_tiles_of(slot) for slot in range(5)] == [[]] * 5
    assert game.markers == [False] * 4
    assert game.open_doubles() == []
    assert game.first_turn_pending == [True] * 4
    assert [len(rs) for rs in game.round_scores] == [1, 1, 1, 1]


def test_mt_eng_1_set_aside_engine_is_not_dealt() -> None:
    game = engine.new_game("standard", 4, "aside")
    assert game.engine == Tile(12, 12)
    assert game.open_ends == [[12]] * 5
    held = [x for s in range(4) for x in game.hand(s)] + game.boneyard_tiles()
    assert Tile(12, 12) not in held
    assert sorted(held) == [x for x in full_set(12) if x != Tile(12, 12)]


def test_mt_eng_1_first_player_draw_highest_pips_starts() -> None:
    # seed "draw-3": seats draw 2-6 (8), 0-2 (2), 2-12 (14), 1-5 (6): seat 2.
    assert first_player_draws("draw-3", 4, 12) == [
        [(0, t("2-6")), (1, t("0-2")), (2, t("2-12")), (3, t("1-5"))]
    ]
    game = engine.new_game("standard", 4, "draw-3")
    assert game.current_seat == 2
    assert game.opening_events == [RoundStarted(1, Tile(12, 12), 2), TurnStarted(2)]
    assert game.version == 0
    assert seat_to_move_in_view(game) == 2


def test_mt_eng_1_first_player_tie_redraws_among_the_tied() -> None:
    # seed "tie-200": seats 1 and 3 tie on 17; in the re-draw contender 0
    # (seat 1) takes shuffled tile 0 = 0-9 and contender 1 (seat 3) tile 1 = 8-9.
    # Reading "seat s takes tile s" would have made seat 1 start instead.
    assert first_player_draws("tie-200", 4, 12) == [
        [(0, t("5-6")), (1, t("5-12")), (2, t("3-8")), (3, t("7-10"))],
        [(1, t("0-9")), (3, t("8-9"))],
    ]
    game = engine.new_game("standard", 4, "tie-200")
    assert game.opening_events == [RoundStarted(1, Tile(12, 12), 3), TurnStarted(3)]
    assert game.current_seat == 3


def test_mt_eng_1_first_player_ties_twice() -> None:
    # seed "tie-268": 6-9 and 4-11 tie on 15, then 3-4 and 0-7 on 7, then 2-4 / 2-7.
    assert first_player_draws("tie-268", 4, 12) == [
        [(0, t("6-9")), (1, t("4-11")), (2, t("3-3")), (3, t("4-7"))],
        [(0, t("3-4")), (1, t("0-7"))],
        [(0, t("2-4")), (1, t("2-7"))],
    ]
    assert engine.new_game("standard", 4, "tie-268").current_seat == 1


def test_mt_eng_1_first_player_draw_ignores_double_blank_value() -> None:
    # seed "blank-12", 3 players: 0-0, 3-4, 4-5. 0-0 counts 0 here (T-3 does not apply).
    assert first_player_draws("blank-12", 3, 12) == [[(0, t("0-0")), (1, t("3-4")), (2, t("4-5"))]]
    for blank in (0, 25, 50):
        game = engine.new_game(rules(double_blank_value=blank), 3, "blank-12")
        assert game.current_seat == 2


def test_mt_eng_1_first_player_draw_does_not_change_the_deal() -> None:
    # The drawn tiles go back and the set is reshuffled: the deal is round:1:deal
    # whoever starts.
    by_draw = engine.new_game("standard", 4, "tie-200")
    by_seat0 = engine.new_game(rules(first_player="seat0"), 4, "tie-200")
    order = shuffled("tie-200", "round:1:deal", 12, Tile(12, 12))
    assert hands_of(by_draw) == hands_of(by_seat0) == dealt(order, 4, 15)
    assert by_draw.boneyard_tiles() == by_seat0.boneyard_tiles() == order[60:]
    assert (by_draw.current_seat, by_seat0.current_seat) == (3, 0)


def test_mt_eng_1_seat0_starts_round_1() -> None:
    game = engine.new_game(rules(first_player="seat0"), 4, "draw-3")
    assert game.opening_events == [RoundStarted(1, Tile(12, 12), 0), TurnStarted(0)]


def test_mt_eng_1_later_rounds_start_with_the_seat_after_the_last_starter() -> None:
    # seed "tie-108": seat 3 wins the draw; round 2 wraps to seat 0, round 3 seat 1.
    # Only round 1 is drawn for: rounds 2 and 3 ignore first-player draws.
    game = engine.new_game(rules(rounds=3), 4, "tie-108")
    assert game.current_seat == 3
    events = play_out_round(game)
    assert events[-2:] == [RoundStarted(2, Tile(11, 11), 0), TurnStarted(0)]
    events = play_out_round(game)
    assert events[-2:] == [RoundStarted(3, Tile(10, 10), 1), TurnStarted(1)]


def test_mt_eng_1_holder_plays_holder_places_engine_and_starts() -> None:
    # seed "holds-1": 12-12 is dealt to seat 2.
    for first_player in ("draw", "seat0"):  # first_player does not apply
        ruleset = rules(engine_placement="holder_plays", first_player=first_player)
        game = engine.new_game(ruleset, 4, "holds-1")
        assert game.opening_events == [RoundStarted(1, Tile(12, 12), 2), TurnStarted(2)]
        assert game.current_seat == 2
        assert game.version == 0
        assert [game.hand_count(s) for s in range(4)] == [15, 15, 14, 15]
        assert Tile(12, 12) not in game.hand(2)
        assert len(game.boneyard_tiles()) == 31
        assert game.open_ends == [[12]] * 5


def test_mt_eng_1_holder_plays_search_draws_until_the_engine_appears() -> None:
    # seed "holder-274": nobody holds 12-12; it is the 5th boneyard tile. Seats
    # draw from seat 0 in turn: 0, 1, 2, 3, then seat 0 draws it.
    order = shuffled("holder-274", "round:1:deal", 12, None)
    assert order[60:65] == tiles("8-10 7-7 2-3 5-9 12-12")
    game = engine.new_game(rules(engine_placement="holder_plays"), 4, "holder-274")
    assert game.opening_events == [
        TileDrawn(0, t("8-10"), "engine_search"),
        TileDrawn(1, t("7-7"), "engine_search"),
        TileDrawn(2, t("2-3"), "engine_search"),
        TileDrawn(3, t("5-9"), "engine_search"),
        TileDrawn(0, t("12-12"), "engine_search"),
        RoundStarted(1, Tile(12, 12), 0),
        TurnStarted(0),
    ]
    assert game.version == 0  # the search is part of the deal, not moves
    assert game.history == []
    assert [game.hand_count(s) for s in range(4)] == [16, 16, 16, 16]
    expected = dealt(order, 4, 15)
    for seat, drawn in enumerate(["8-10", "7-7", "2-3", "5-9"]):
        expected[seat] = sorted([*expected[seat], t(drawn)])
    assert hands_of(game) == expected  # the drawn tiles stay in the hands
    assert game.boneyard_tiles() == order[65:]
    # the search draws are private like any draw (MT-DR-3)
    assert engine.for_seat(game.opening_events[1], 0) == TileDrawn(1, None, "engine_search")


def test_mt_eng_1_holder_plays_search_starts_after_the_previous_starter() -> None:
    # seed "holder-2": round 1, 12-12 is the 26th boneyard tile: seats 0,1,2,3,...
    # draw; the 26th draw is seat 1's (25 mod 4), so seat 1 starts round 1.
    # Round 2: 11-11 is the 17th boneyard tile; the search starts at seat 2
    # (after round 1's starter), so the 17th draw is seat 2's (2 + 16 mod 4).
    ruleset = rules(engine_placement="holder_plays", rounds=2)
    game = engine.new_game(ruleset, 4, "holder-2")
    assert shuffled("holder-2", "round:1:deal", 12, None).index(Tile(12, 12)) == 60 + 25
    assert game.opening_events[-2:] == [RoundStarted(1, Tile(12, 12), 1), TurnStarted(1)]
    searched = [e.seat for e in game.opening_events if isinstance(e, TileDrawn)]
    assert searched == [s % 4 for s in range(26)]
    order2 = shuffled("holder-2", "round:2:deal", 12, None)
    assert order2.index(Tile(11, 11)) == 60 + 16
    events = play_out_round(game)
    search = [e for e in events if isinstance(e, TileDrawn) and e.why == "engine_search"]
    assert search == [TileDrawn((2 + i) % 4, order2[60 + i], "engine_search") for i in range(17)]
    assert events[-2:] == [RoundStarted(2, Tile(11, 11), 2), TurnStarted(2)]
    assert [game.hand_count(s) for s in range(4)] == [19, 19, 19, 19]


def test_mt_eng_2_play_goes_clockwise() -> None:
    game = position(hands=["12-1 1-9", "12-2 2-9", "12-3 3-9", "12-4 4-9"], boneyard="0-5")
    assert play(game, "12-1@p0") == [TilePlayed(0, t("1-12"), P0), TurnStarted(1)]
    assert play(game, "12-2@p1") == [TilePlayed(1, t("2-12"), P1), TurnStarted(2)]
    assert play(game, "12-3@p2") == [TilePlayed(2, t("3-12"), P2), TurnStarted(3)]
    assert play(game, "12-4@p3") == [TilePlayed(3, t("4-12"), P3), TurnStarted(0)]
    assert game.current_seat == 0
    assert game.version == 4


def test_mt_eng_2_only_the_seat_to_move_may_move() -> None:
    game = position(hands=["12-1 0-0", "12-2 0-1", "12-3 0-2", "12-4 0-3"], boneyard="0-5", seat=1)
    with pytest.raises(engine.NotYourTurnError) as info:
        game.apply(engine.parse_move("12-3@p2"), seat=2)
    assert info.value.reason == "NOT_YOUR_TURN"
    assert game.version == 0
    assert game.apply(engine.parse_move("12-2@p1"), seat=1) == [
        TilePlayed(1, t("2-12"), P1),
        TurnStarted(2),
    ]


# ------------------------------------------------------------------ 2.3 Trains


def test_mt_tr_1_personal_train_starts_with_the_engine_number() -> None:
    game = position(hands=["5-6 3-12 4-4", "1-2", "1-3", "1-4"], boneyard="0-5")
    assert legal(game) == ["3-12@m0", "3-12@p0"]
    assert illegal(game, "5-6@p0").reason == "TILE_DOES_NOT_MATCH"
    assert illegal(game, "4-4@p0").reason == "TILE_DOES_NOT_MATCH"
    play(game, "3-12@p0")
    assert game.train_tiles_of(0) == [Tile(12, 3)]


def test_mt_tr_2_mexican_train_is_open_to_everyone_any_turn() -> None:
    # nobody has a marker; seat 2 extends the Mexican train seat 0 started
    game = position(
        hands=["1-2", "1-3", "7-9 8-8", "1-4"],
        boneyard="0-5",
        trains={"p0": "12-1", "p1": "12-2", "p2": "12-6", "m0": "12-7"},
        seat=2,
    )
    assert legal(game) == ["7-9@m0"]
    assert play(game, "9-7@m0") == [TilePlayed(2, t("7-9"), M0), TurnStarted(3)]
    assert game.train_tiles_of(4) == [Tile(12, 7), Tile(7, 9)]
    assert game.markers == [False] * 4


def test_mt_tr_2_mexican_train_first_tile_carries_the_engine_number() -> None:
    game = position(hands=["5-6 3-12", "1-2", "1-3", "1-4"], boneyard="0-5", trains={"p0": "12-5"})
    assert legal(game) == ["3-12@m0", "5-6@p0"]
    assert illegal(game, "5-6@m0").reason == "TILE_DOES_NOT_MATCH"


def test_mt_tr_2_several_mexican_trains() -> None:
    ruleset = rules(mexican_trains=2)
    game = position(ruleset, hands=["3-12 1-7", "1-2", "1-3", "1-4"], boneyard="0-5")
    assert legal(game) == ["3-12@m0", "3-12@m1", "3-12@p0"]
    assert play(game, "3-12@m1") == [
        TilePlayed(0, t("3-12"), TrainRef.mexican(1)),
        TurnStarted(1),
    ]
    assert game.open_ends == [[12], [12], [12], [12], [12], [3]]
    assert len(engine.build_view(game, None).trains) == 6
    assert illegal(game, "1-2@m2").reason == "NO_SUCH_TRAIN"


@pytest.mark.parametrize("count", [0, -1])
def test_mt_tr_2_zero_mexican_trains_refused(count: int) -> None:
    with pytest.raises(engine.RulesetError) as info:
        rules(mexican_trains=count)
    assert info.value.rule == "MT-TR-2"


def test_mt_tr_3_available_trains_are_own_mexican_and_marked() -> None:
    # seat 0 holds a 5 (own), a 6 (seat 1, marked), a 7 (seat 2, no marker),
    # an 8 (seat 3, marked) and a 9 (Mexican train).
    game = position(
        hands=["5-0 6-0 7-1 8-1 9-2", "1-1", "2-2", "3-3"],
        boneyard="4-4",
        trains={"p0": "12-5", "p1": "12-6", "p2": "12-7", "p3": "12-8", "m0": "12-9"},
        markers=[1, 3],
    )
    assert legal(game) == ["0-5@p0", "0-6@p1", "1-8@p3", "2-9@m0"]
    error = illegal(game, "1-7@p2")
    assert (error.reason, error.rule) == ("TRAIN_NOT_AVAILABLE", "MT-TR-3")


def test_mt_tr_4_marker_goes_on_after_an_unplayable_draw() -> None:
    game = position(
        hands=["1-2", "12-3", "12-4", "12-5"], boneyard="6-7 0-0", trains={"p0": "12-9"}
    )
    assert legal(game) == ["draw"]
    events = play(game, "draw")
    assert events == [TileDrawn(0, t("6-7")), MarkerPlaced(0), TurnStarted(1)]
    assert game.markers == [True, False, False, False]
    # public: every view shows it
    view = engine.build_view(game, None)
    assert [p.marker for p in view.players] == [True, False, False, False]
    assert [tr.marker for tr in view.trains] == [True, False, False, False, False]


def test_mt_tr_4_no_marker_when_the_drawn_tile_is_played() -> None:
    game = position(
        hands=["1-2", "12-3", "12-4", "12-5"],
        boneyard="9-4 0-0",
        trains={"p0": "12-9", "m0": "12-4"},
    )
    play(game, "draw")
    assert play(game, "4-9@m0") == [TilePlayed(0, t("4-9"), M0), TurnStarted(1)]
    assert game.markers == [False, False, False, False]


def test_mt_tr_4_marker_goes_on_after_a_pass() -> None:
    game = position(hands=["1-2", "12-3", "12-4", "12-5"], trains={"p0": "12-9"})
    assert legal(game) == ["pass"]
    assert play(game, "pass") == [Passed(0), MarkerPlaced(0), TurnStarted(1)]
    assert game.markers == [True, False, False, False]


def test_mt_tr_4_marker_comes_off_when_playing_on_own_train() -> None:
    game = position(
        hands=["9-1 2-5", "12-3", "12-4", "12-5"],
        boneyard="0-0",
        trains={"p0": "12-9", "p1": "12-2"},
        markers=[0, 1],
    )
    assert play(game, "9-1@p0") == [
        TilePlayed(0, t("1-9"), P0),
        MarkerRemoved(0),
        TurnStarted(1),
    ]
    assert game.markers == [False, True, False, False]


def test_mt_tr_4_marker_stays_when_playing_elsewhere() -> None:
    game = position(
        hands=["12-1 2-5", "12-3", "12-4", "12-5"],
        boneyard="0-0",
        trains={"p0": "12-9", "p1": "12-2"},
        markers=[0, 1],
    )
    assert legal(game) == ["1-12@m0", "2-5@p1"]
    assert play(game, "2-5@p1") == [TilePlayed(0, t("2-5"), P1), TurnStarted(1)]
    assert game.markers == [True, True, False, False]
    # a marker already on is not placed twice
    game = position(
        hands=["1-2", "12-3", "12-4", "12-5"],
        boneyard="6-7",
        trains={"p0": "12-9"},
        markers=[0],
    )
    assert play(game, "draw") == [TileDrawn(0, t("6-7")), TurnStarted(1)]
    assert game.markers == [True, False, False, False]


def test_mt_tr_5_tile_is_stored_with_its_matching_number_facing_the_train() -> None:
    game = position(hands=["5-12 3-5 1-1", "12-3 0-1", "2-2", "3-3"], boneyard="4-4 6-6")
    play(game, "5-12@p0")
    assert game.train_tiles_of(0) == [Tile(12, 5)]  # touching 12, open 5
    assert game.open_ends[0] == [5]
    play(game, "3-12@p1", "draw", "draw")  # seats 2 and 3 cannot play
    play(game, "3-5@p0")
    assert game.train_tiles_of(0) == [Tile(12, 5), Tile(5, 3)]
    assert game.open_ends[0] == [3]
    view = engine.build_view(game, 1)
    assert view.trains[0].tiles == (Tile(12, 5), Tile(5, 3))
    assert view.trains[0].open_ends == (3,)


def test_mt_tr_5_tile_must_match_the_open_end() -> None:
    game = position(hands=["4-6 5-7", "1-1", "2-2", "3-3"], boneyard="4-4", trains={"p0": "12-5"})
    assert legal(game) == ["5-7@p0"]
    error = illegal(game, "4-6@p0")
    assert (error.reason, error.rule) == ("TILE_DOES_NOT_MATCH", "MT-TR-5")


# -------------------------------------------------------------- 2.4 First turn


def test_mt_ft_1_single_first_turn_is_one_tile() -> None:
    game = position(
        hands=["12-5 5-3 3-1", "1-2", "1-3", "1-4"], boneyard="0-0", first_turns_done=False
    )
    # single: the Mexican train is open on the first turn too
    assert legal(game) == ["5-12@m0", "5-12@p0"]
    assert play(game, "12-5@p0") == [TilePlayed(0, t("5-12"), P0), TurnStarted(1)]
    assert game.first_turn_pending == [False, True, True, True]
    assert engine.build_view(game, None).turn == TurnView(False, False, True)


def test_mt_ft_1_end_turn_is_not_a_move_under_single() -> None:
    game = position(hands=["12-5 5-3", "1-2", "1-3", "1-4"], boneyard="0-0", first_turns_done=False)
    error = illegal(game, "end")
    assert (error.reason, error.rule) == ("CANNOT_END_TURN", "MT-FT-1")


def chain_game() -> MexicanTrain:
    """pagat (chain first turn), 3 players, everyone's first turn still due."""
    return position(
        "pagat",
        3,
        hands=["12-5 5-3 3-1 12-7 9-9", "1-2 4-4", "6-6 0-2"],
        boneyard="0-0 0-1",
        first_turns_done=False,
    )


def test_mt_ft_1_chain_goes_on_along_the_own_train() -> None:
    game = chain_game()
    assert legal(game) == ["5-12@p0", "7-12@p0"]
    assert play(game, "12-5@p0") == [TilePlayed(0, t("5-12"), P0)]
    assert game.current_seat == 0
    assert legal(game) == ["3-5@p0", "end"]
    assert play(game, "5-3@p0") == [TilePlayed(0, t("3-5"), P0)]
    assert legal(game) == ["1-3@p0", "end"]
    assert play(game, "3-1@p0") == [TilePlayed(0, t("1-3"), P0)]
    assert game.train_tiles_of(0) == oriented("12-5 5-3 3-1")
    assert game.version == 3


def test_mt_ft_1_end_turn_needs_at_least_one_tile() -> None:
    game = chain_game()
    assert "end" not in legal(game)
    error = illegal(game, "end")
    assert (error.reason, error.rule) == ("CANNOT_END_TURN", "MT-FT-1")
    play(game, "12-5@p0")
    assert play(game, "end") == [TurnStarted(1)]
    assert game.first_turn_pending == [False, True, True]
    assert game.hand(0) == tiles("1-3 3-5 7-12 9-9")


def test_mt_ft_1_end_is_the_only_move_when_the_chain_cannot_go_on() -> None:
    game = chain_game()
    play(game, "12-7@p0")
    assert legal(game) == ["end"]
    assert illegal(game, "draw").reason == "CANNOT_DRAW"
    assert illegal(game, "pass").reason == "CANNOT_PASS"
    assert play(game, "end") == [TurnStarted(1)]
    assert game.markers == [False, False, False]
    assert len(game.boneyard_tiles()) == 2


def test_mt_ft_1_double_inside_a_chain_is_covered_by_the_next_tile() -> None:
    game = position(
        "pagat",
        3,
        hands=["12-5 5-5 5-3 5-1 12-7", "1-2", "0-2"],
        boneyard="0-0 0-1",
        first_turns_done=False,
    )
    play(game, "12-5@p0")
    assert play(game, "5-5@p0") == [TilePlayed(0, t("5-5"), P0)]
    # owing a tile: only tiles that cover 5-5, no END_TURN
    assert legal(game) == ["1-5@p0", "3-5@p0"]
    assert game.owes
    assert play(game, "5-3@p0") == [
        TilePlayed(0, t("3-5"), P0),
        DoubleSatisfied(P0, 5),
    ]
    assert game.open_doubles() == []
    assert legal(game) == ["end"]
    assert game.train_tiles_of(0) == oriented("12-5 5-5 5-3")


def test_mt_ft_2_chain_may_not_start_mexican_train() -> None:
    game = chain_game()
    error = illegal(game, "12-7@m0")
    assert (error.reason, error.rule) == ("FIRST_TURN_OWN_TRAIN", "MT-FT-2")
    play(game, "12-5@p0")
    error = illegal(game, "12-7@m0")
    assert (error.reason, error.rule) == ("FIRST_TURN_OWN_TRAIN", "MT-FT-2")


def test_mt_ft_2_chain_may_not_extend_mexican_train() -> None:
    game = position(
        "pagat",
        3,
        hands=["12-5 7-1", "1-2", "0-2"],
        boneyard="0-0 0-1",
        trains={"m0": "12-7"},
        first_turns_done=False,
    )
    assert legal(game) == ["5-12@p0"]
    error = illegal(game, "7-1@m0")
    assert (error.reason, error.rule) == ("FIRST_TURN_OWN_TRAIN", "MT-FT-2")


def test_mt_ft_2_chain_may_not_play_on_a_marked_train() -> None:
    game = position(
        "pagat",
        3,
        hands=["12-3 3-8 9-12", "4-5 6-7", "12-7 3-9"],
        boneyard="4-4 1-1 0-0",
        first_turns_done=False,
    )
    play(game, "12-3@p0", "end")
    # seat 1 cannot play on their own train: draw 4-4, unplayable, marker on
    assert legal(game) == ["draw"]
    assert play(game, "draw") == [TileDrawn(1, t("4-4")), MarkerPlaced(1), TurnStarted(2)]
    # seat 2's first turn: 12-7 fits p1 (marked) and m0 too, but only p2 is open
    assert legal(game) == ["7-12@p2"]
    error = illegal(game, "12-7@p1")
    assert (error.reason, error.rule) == ("FIRST_TURN_OWN_TRAIN", "MT-FT-2")
    play(game, "12-7@p2")
    assert legal(game) == ["end"]
    play(game, "end")
    # seat 0's second turn is a normal one: own, marked seat 1, Mexican
    assert legal(game) == ["3-8@p0", "9-12@m0", "9-12@p1"]


def test_mt_ft_2_first_turn_comes_again_each_round() -> None:
    game = position(
        rules("pagat", first_player="seat0"),
        2,
        hands=["3-12", "0-1 3-4"],
        boneyard="1-2 2-3",
        seed="r2-1",
    )
    events = play(game, "12-3@p0")
    assert events[-2:] == [RoundStarted(2, Tile(11, 11), 1), TurnStarted(1)]
    assert game.first_turn_pending == [True, True]
    assert engine.build_view(game, 1).turn == TurnView(False, False, True)
    # round 2's deal gives seat 1 2-11 and 8-11: a chain on p1 again, no Mexican train
    assert [t("2-11"), t("8-11")] == [x for x in game.hand(1) if 11 in x]
    assert legal(game) == ["2-11@p1", "8-11@p1"]
    error = illegal(game, "8-11@m0")
    assert (error.reason, error.rule) == ("FIRST_TURN_OWN_TRAIN", "MT-FT-2")
    assert play(game, "11-2@p1") == [TilePlayed(1, t("2-11"), P1)]
    assert legal(game) == ["2-12@p1", "2-2@p1", "end"]


def test_mt_ft_2_blocking_double_wins_over_the_chain() -> None:
    game = position(
        "pagat",
        3,
        hands=["12-6 6-6 1-2", "12-5 1-6 5-9", "12-7 0-4"],
        boneyard="3-4 8-9 0-0",
        first_turns_done=False,
    )
    play(game, "12-6@p0", "6-6@p0")
    # seat 0 owes, cannot pay from the hand, draws 3-4: unplayable, marker on
    assert legal(game) == ["draw"]
    assert play(game, "draw") == [TileDrawn(0, t("3-4")), MarkerPlaced(0), TurnStarted(1)]
    assert game.open_doubles() == [(P0, 6, 0)]
    # seat 1's first turn starts with 6-6 blocking: covering it is the whole turn
    assert legal(game) == ["1-6@p0"]
    assert illegal(game, "12-5@p1").reason == "MUST_COVER_DOUBLE"
    assert play(game, "6-1@p0") == [
        TilePlayed(1, t("1-6"), P0),
        DoubleSatisfied(P0, 6),
        TurnStarted(2),
    ]
    assert game.first_turn_pending == [False, False, True]
    # seat 2's first turn is a chain again (nothing blocks)
    assert legal(game) == ["7-12@p2"]


def test_mt_ft_2_blocking_double_on_first_turn_draw_counts_as_the_turn() -> None:
    game = position(
        "pagat",
        3,
        hands=["12-6 6-6 1-2", "12-5 5-9", "12-7 0-4"],
        boneyard="3-4 2-6 0-0",
        first_turns_done=False,
    )
    play(game, "12-6@p0", "6-6@p0", "draw")
    assert legal(game) == ["draw"]
    assert play(game, "draw") == [TileDrawn(1, t("2-6"))]
    assert legal(game) == ["2-6@p0"]
    assert play(game, "6-2@p0") == [
        TilePlayed(1, t("2-6"), P0),
        DoubleSatisfied(P0, 6),
        TurnStarted(2),
    ]
    assert game.first_turn_pending == [False, False, True]
    assert game.markers == [True, False, False]


def test_mt_ft_2_non_blocking_double_leaves_the_chain_on_the_own_train() -> None:
    # university_games: chain first turn, open doubles do not block
    game = position(
        "university_games",
        3,
        hands=["12-6 6-6 1-2", "12-5 1-6 5-9", "12-7 0-4"],
        boneyard="3-4 8-9 0-0",
        first_turns_done=False,
    )
    play(game, "12-6@p0", "6-6@p0", "draw")
    assert game.open_doubles() == [(P0, 6, 0)]
    assert legal(game) == ["5-12@p1"]
    play(game, "12-5@p1")
    assert legal(game) == ["5-9@p1", "end"]


def test_mt_ft_3_no_play_on_first_turn_draws_and_a_played_draw_ends_it() -> None:
    game = position(
        "pagat",
        3,
        hands=["4-5 3-6", "1-2", "0-2"],
        boneyard="3-12 1-1",
        first_turns_done=False,
    )
    assert legal(game) == ["draw"]
    assert play(game, "draw") == [TileDrawn(0, t("3-12"))]
    # still the first turn: the drawn tile goes on the own train only
    assert legal(game) == ["3-12@p0"]
    error = illegal(game, "3-12@m0")
    assert (error.reason, error.rule) == ("FIRST_TURN_OWN_TRAIN", "MT-FT-2")
    # 3-6 could follow it, but a drawn tile that is played ends the turn
    assert play(game, "12-3@p0") == [TilePlayed(0, t("3-12"), P0), TurnStarted(1)]
    assert game.first_turn_pending == [False, True, True]
    assert game.markers == [False, False, False]


def test_mt_ft_3_unplayable_draw_on_first_turn_places_the_marker() -> None:
    game = position(
        "pagat", 3, hands=["4-5 3-6", "1-2", "0-2"], boneyard="1-1 3-12", first_turns_done=False
    )
    assert play(game, "draw") == [TileDrawn(0, t("1-1")), MarkerPlaced(0), TurnStarted(1)]
    assert game.markers == [True, False, False]
    assert game.first_turn_pending == [False, True, True]


def test_mt_ft_3_chain_cannot_end_while_owing_a_tile() -> None:
    game = position(
        "pagat",
        3,
        hands=["12-5 5-5 3-4", "1-2", "0-2"],
        boneyard="1-1 5-8 0-0",
        first_turns_done=False,
    )
    play(game, "12-5@p0", "5-5@p0")
    assert legal(game) == ["draw"]
    error = illegal(game, "end")
    assert (error.reason, error.rule) == ("MUST_PAY_DOUBLE", "MT-FT-3")
    # the drawn 1-1 does not cover 5-5: the turn ends, marker on, double open
    assert play(game, "draw") == [TileDrawn(0, t("1-1")), MarkerPlaced(0), TurnStarted(1)]
    assert game.open_doubles() == [(P0, 5, 0)]


def test_mt_ft_3_drawn_tile_covering_the_chain_double_ends_the_turn() -> None:
    game = position(
        "pagat",
        3,
        hands=["12-5 5-5 8-1", "1-2", "0-2"],
        boneyard="5-8 0-0 0-1",
        first_turns_done=False,
    )
    play(game, "12-5@p0", "5-5@p0")
    assert play(game, "draw") == [TileDrawn(0, t("5-8"))]
    assert legal(game) == ["5-8@p0"]
    # 1-8 could follow, but a drawn tile that is played ends the turn
    assert play(game, "5-8@p0") == [
        TilePlayed(0, t("5-8"), P0),
        DoubleSatisfied(P0, 5),
        TurnStarted(1),
    ]
    assert game.markers == [False, False, False]
    assert game.hand(0) == [t("1-8")]


# ------------------------------------------------------------ 2.5 A normal turn


def test_mt_turn_1_one_tile_on_an_available_train_ends_the_turn() -> None:
    game = position(
        hands=["5-3 3-4 12-9", "1-2", "1-3", "1-4"],
        boneyard="0-0",
        trains={"p0": "12-5", "m0": "12-8"},
    )
    assert legal(game) == ["3-5@p0"]
    assert play(game, "5-3@p0") == [TilePlayed(0, t("3-5"), P0), TurnStarted(1)]
    assert game.hand(0) == tiles("3-4 9-12")
    assert game.current_seat == 1
    assert game.version == 1


def test_mt_turn_1_tile_not_in_hand_is_refused() -> None:
    game = position(hands=["12-3", "12-4", "1-3", "1-4"], boneyard="0-0")
    error = illegal(game, "12-4@p0")
    assert (error.reason, error.rule) == ("TILE_NOT_IN_HAND", "MT-TURN-1")


def test_mt_turn_2_holding_a_playable_tile_one_must_play() -> None:
    game = position(hands=["12-3 0-1", "1-2", "1-3", "1-4"], boneyard="0-0", trains={"p0": "12-9"})
    assert legal(game) == ["3-12@m0"]
    for move in ("draw", "pass"):
        error = illegal(game, move)
        assert (error.reason, error.rule) == ("MUST_PLAY", "MT-TURN-2")
    # with an empty boneyard too
    game = position(hands=["12-3 0-1", "1-2", "1-3", "1-4"], trains={"p0": "12-9"})
    assert legal(game) == ["3-12@m0"]
    assert illegal(game, "pass").reason == "MUST_PLAY"


def test_mt_dr_1_draw_only_without_a_legal_play() -> None:
    game = position(
        hands=["1-2 4-5", "12-3", "12-4", "12-5"],
        boneyard="3-12 0-0",
        trains={"p0": "12-9", "p1": "12-8"},
    )
    # 8 would fit seat 1's train, but it has no marker
    assert legal(game) == ["draw"]
    assert illegal(game, "pass").reason == "CANNOT_PASS"
    assert play(game, "draw") == [TileDrawn(0, t("3-12"))]
    assert game.hand(0) == tiles("1-2 3-12 4-5")
    assert game.boneyard_tiles() == [Tile(0, 0)]
    assert game.version == 1
    assert game.current_seat == 0


def test_mt_dr_1_playable_drawn_tile_must_be_played_and_only_it() -> None:
    game = position(
        hands=["1-2 5-6", "12-3", "12-4", "12-5"],
        boneyard="9-4 0-0",
        trains={"p0": "12-9", "m0": "12-4"},
        markers=[0],
    )
    assert legal(game) == ["draw"]
    play(game, "draw")
    # 4-9 fits p0 and m0: only the drawn tile may go
    assert legal(game) == ["4-9@m0", "4-9@p0"]
    error = illegal(game, "1-2@m0")
    assert (error.reason, error.rule) == ("MUST_PLAY_DRAWN_TILE", "MT-DR-1")
    error = illegal(game, "draw")
    assert (error.reason, error.rule) == ("MUST_PLAY", "MT-TURN-2")
    assert illegal(game, "pass").reason == "MUST_PLAY"
    assert play(game, "9-4@p0") == [
        TilePlayed(0, t("4-9"), P0),
        MarkerRemoved(0),
        TurnStarted(1),
    ]
    assert game.hand(0) == tiles("1-2 5-6")


def test_mt_dr_1_unplayable_draw_ends_the_turn_without_a_pass() -> None:
    game = position(
        hands=["1-2 4-5", "12-3", "12-4", "12-5"],
        boneyard="6-7 0-0",
        trains={"p0": "12-9", "m0": "12-8"},
    )
    assert play(game, "draw") == [TileDrawn(0, t("6-7")), MarkerPlaced(0), TurnStarted(1)]
    assert game.version == 1
    assert game.current_seat == 1
    assert game.hand(0) == tiles("1-2 4-5 6-7")
    assert game.history == [engine.DRAW]


def test_mt_dr_2_empty_boneyard_pass_and_marker() -> None:
    game = position(hands=["1-2 4-5", "12-3", "12-4", "12-5"], trains={"p0": "12-9", "m0": "12-8"})
    assert legal(game) == ["pass"]
    error = illegal(game, "draw")
    assert (error.reason, error.rule) == ("CANNOT_DRAW", "MT-DR-2")
    assert play(game, "pass") == [Passed(0), MarkerPlaced(0), TurnStarted(1)]
    assert game.markers == [True, False, False, False]
    assert game.hand(0) == tiles("1-2 4-5")


def test_mt_dr_2_no_pass_while_the_boneyard_has_tiles() -> None:
    game = position(
        hands=["1-2 4-5", "12-3", "12-4", "12-5"], boneyard="0-0", trains={"p0": "12-9"}
    )
    error = illegal(game, "pass")
    assert (error.reason, error.rule) == ("CANNOT_PASS", "MT-DR-2")


def test_mt_dr_3_drawn_tile_is_private_to_the_drawer() -> None:
    game = position(
        hands=["1-2", "12-3", "12-4", "12-5"], boneyard="6-7 0-0", trains={"p0": "12-9"}
    )
    events = game.apply(engine.DRAW)
    drawn = events[0]
    assert drawn == TileDrawn(0, t("6-7"))
    assert engine.for_seat(drawn, 0) == TileDrawn(0, t("6-7"))
    for other in (1, 2, 3, None):
        assert engine.for_seat(drawn, other) == TileDrawn(0, None)
    # the other events are public as they are
    assert [engine.for_seat(e, 1) for e in events[1:]] == [MarkerPlaced(0), TurnStarted(1)]
    assert engine.build_view(game, 0).hand == tuple(tiles("1-2 6-7"))
    for other in (1, 2, 3):
        view = engine.build_view(game, other)
        assert view.hand == tuple(game.hand(other))
        assert Tile(6, 7) not in view.hand
        assert [p.hand_count for p in view.players] == [2, 1, 1, 1]
        assert view.boneyard_count == 1
    assert engine.build_view(game, None).hand is None
