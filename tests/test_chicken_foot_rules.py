"""Chicken Foot (RULES.md CL-CF-1), clause by clause, on scripted deals.

Each test names the clause it checks and the exact outcome: the legal moves,
the events of each move, the scores. Positions are built by
``tests/chicken_foot_scenario.py`` (four lines unless a test says six; tiles
a position does not name are out of the game); the deal itself is checked on
real games against API.md's shuffle.

Readings taken where CL-CF-1 leaves a choice (the same as
``engine/games/chicken_foot/rules.py``): the hand-size table is used for
every set, and a set it does not fit is refused (MT-DEAL-2); a double can
never start a line (the station's double is set aside), so doubles are
played only once every line has started.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

import engine
from engine import (
    DealDoesNotFitError,
    DoubleSatisfied,
    Event,
    GameEnded,
    IllegalMoveError,
    MarkerPlaced,
    MarkerRemoved,
    Passed,
    RoundEnded,
    RoundEndReason,
    RoundStarted,
    RulesetError,
    TileDrawn,
    TilePlayed,
    TrainRef,
    TurnStarted,
)
from engine.games.chicken_foot import ChickenFoot, ChickenFootRules
from engine.games.chicken_foot.rules import OPTIONS
from engine.shuffle import shuffle
from engine.tiles import Tile, canonical_ids
from engine.view import BranchView, TrainView
from tests.chicken_foot_scenario import legal, play, position, rules, typed

M0, M1, M2, M3 = (TrainRef.mexican(k) for k in range(4))

#: Every line started (CL-CF-1): open ends 1, 2, 3 and 5 on lines 0 to 3.
STARTED = {0: "9-1", 1: "9-2", 2: "9-3", 3: "9-5"}


def t(text: str) -> Tile:
    return Tile.parse(text)


def full_set(n: int) -> list[Tile]:
    return [Tile(tid >> 5, tid & 31) for tid in canonical_ids(n)]


def shuffled(seed: str, label: str, set_max: int, leave_out: Tile) -> list[Tile]:
    """API.md steps 3-4: the canonical set less ``leave_out``, shuffled for ``label``."""
    return list(shuffle(seed, label, [x for x in full_set(set_max) if x != leave_out]))


def hands_of(game: ChickenFoot) -> list[list[Tile]]:
    return [game.hand(s) for s in range(game.players)]


def illegal(game: ChickenFoot, move: str, reason: str, rule: str) -> IllegalMoveError:
    """Apply ``move``, expect it refused for ``reason`` naming ``rule``, and
    check that nothing changed."""
    before, moves = game.to_bytes(), list(game.legal_moves())
    with pytest.raises(IllegalMoveError) as info:
        play(game, move)
    assert (info.value.reason, info.value.rule) == (reason, rule), str(info.value)
    assert info.value.reason in engine.ILLEGAL_REASONS
    assert game.to_bytes() == before
    assert game.legal_moves() == moves
    return info.value


def no_markers(events: Sequence[Event]) -> bool:
    return not any(type(e) in (MarkerPlaced, MarkerRemoved) for e in events)


def play_out_round(game: ChickenFoot) -> list[Event]:
    """Play the round to its end with the first legal move each time; return
    the events of the move that ended it (the next deal's included)."""
    rnd = game.round
    for _ in range(5000):
        events = game.apply(game.legal_moves()[0])
        assert no_markers(events)
        if game.round != rnd or game.over:
            return events
    raise AssertionError("the round did not end")


def words(message: str) -> set[str]:
    return set(re.findall(r"\d+", message))


# ------------------------------------------------------------------ the deal


@pytest.mark.parametrize("players", range(2, 9))
def test_cl_cf_1_station_double_is_set_aside_before_the_deal(players: int) -> None:
    game = engine.new_game("chicken_foot_game", players, f"station-{players}")
    assert isinstance(game, ChickenFoot)
    assert game.engine == Tile(9, 9)  # double-nine by default
    # API.md: the set less the station is shuffled and dealt seat by seat.
    order = shuffled(f"station-{players}", "round:1:deal", 9, Tile(9, 9))
    hand = game.rules.hand_size  # type: ignore[attr-defined]
    assert hands_of(game) == [sorted(order[s * hand : (s + 1) * hand]) for s in range(players)]
    assert game.boneyard_tiles() == order[players * hand :]
    held = [x for h in hands_of(game) for x in h] + game.boneyard_tiles()
    assert Tile(9, 9) not in held
    assert sorted(held) == [x for x in full_set(9) if x != Tile(9, 9)]
    assert game.opening_events == [
        RoundStarted(1, Tile(9, 9), game.current_seat),
        TurnStarted(game.current_seat),
    ]


def test_cl_cf_1_each_round_sets_its_own_station_aside() -> None:
    game = engine.new_game(rules(rounds=3), 4, "next-station")
    for station in (8, 7):
        events = play_out_round(game)
        started = [e for e in events if type(e) is RoundStarted]
        assert [(e.round, e.engine) for e in started] == [(10 - station, Tile(station, station))]
        order = shuffled("next-station", f"round:{10 - station}:deal", 9, Tile(station, station))
        assert hands_of(game) == [sorted(order[s * 12 : (s + 1) * 12]) for s in range(4)]
        assert game.boneyard_tiles() == order[48:]
        # A fresh table: every line empty, open on the new station's number.
        assert game.open_ends == [[station]] * 6
        assert game.open_doubles() == []


@pytest.mark.parametrize(
    ("players", "hand"), [(2, 15), (3, 15), (4, 12), (5, 10), (6, 8), (7, 7), (8, 6)]
)
def test_cl_cf_1_hand_size_by_player_count(players: int, hand: int) -> None:
    game = engine.new_game("chicken_foot_game", players, "sizes")
    assert [game.hand_count(s) for s in range(players)] == [hand] * players
    assert len(game.boneyard_tiles()) == 54 - players * hand
    assert ChickenFootRules().resolve(players).hand_size == hand
    view = game.view(0)
    assert view.ruleset.hand_size == hand  # type: ignore[attr-defined]
    assert view.boneyard_count == 54 - players * hand


@pytest.mark.parametrize(
    ("options", "players", "hand", "boneyard"),
    [
        ({"hand_size": 5}, 4, 5, 34),
        ({"hand_size": 9}, 6, 9, 0),  # 6 x 9 = 54: every tile but the station
        ({"hand_size": 1}, 8, 1, 46),
        ({"set_max": 12}, 4, 12, 42),  # the table by player count, any set
        ({"set_max": 12, "hand_size": 20}, 3, 20, 30),
        ({"set_max": 6, "hand_size": 13}, 2, 13, 1),
    ],
)
def test_cl_cf_1_explicit_hand_size_and_other_sets(
    options: dict[str, int], players: int, hand: int, boneyard: int
) -> None:
    game = engine.new_game(rules(**options), players, "explicit")
    assert [game.hand_count(s) for s in range(players)] == [hand] * players
    assert len(game.boneyard_tiles()) == boneyard
    set_max = options.get("set_max", 9)
    assert game.engine == Tile(set_max, set_max)
    assert game.rounds_total == set_max + 1


@pytest.mark.parametrize(
    ("options", "players", "numbers"),
    [
        ({"set_max": 6}, 2, {"30", "27"}),  # the table's 15 each does not fit double-six
        ({"set_max": 6}, 3, {"45", "27"}),
        ({"hand_size": 14}, 4, {"56", "54"}),
        ({"hand_size": 10}, 6, {"60", "54"}),
        ({"hand_size": 8}, 7, {"56", "54"}),
        ({"set_max": 7}, 4, {"48", "35"}),
    ],
)
def test_cl_cf_1_a_deal_that_does_not_fit_is_refused(
    options: dict[str, int], players: int, numbers: set[str]
) -> None:
    # MT-DEAL-2 under set_aside: players x hand size <= tiles - 1.
    for make in (
        lambda: engine.new_game(rules(**options), players, "too-many"),
        lambda: rules(**options).resolve(players),
    ):
        with pytest.raises(DealDoesNotFitError) as info:
            make()
        assert info.value.reason == "DEAL_DOES_NOT_FIT"
        assert info.value.rule == "MT-DEAL-2"
        assert numbers <= words(info.value.message), info.value.message


@pytest.mark.parametrize("players", [0, 1, 9, 14])
def test_cl_cf_1_two_to_eight_players(players: int) -> None:
    with pytest.raises(RulesetError) as info:
        engine.new_game("chicken_foot_game", players, "count")
    assert info.value.rule == "CL-CF-1"
    assert {"2", "8", str(players)} <= words(info.value.message)


@pytest.mark.parametrize(
    ("option", "rule"), [("hand_size", "CL-CF-1"), ("rounds", "MT-RND-1"), ("set_max", "CL-CF-1")]
)
def test_cl_cf_1_zero_hand_size_rounds_or_set_refused(option: str, rule: str) -> None:
    with pytest.raises(RulesetError) as info:
        rules(**{option: 0})
    assert info.value.rule == rule


# ------------------------------------------------------------------ the lines


@pytest.mark.parametrize("lines", [6, 4])
def test_cl_cf_1_the_station_has_six_or_four_lines(lines: int) -> None:
    options = {} if lines == 6 else {"center_lines": lines}
    game = engine.new_game(rules(first_player="seat0", **options), 4, "lines")
    assert isinstance(game, ChickenFoot)
    assert game.slot_count == lines
    assert game.open_ends == [[9]] * lines
    # API.md: only the station's lines, as Mexican trains; no personal train.
    view = game.view(0)
    assert view.trains == tuple(
        TrainView(TrainRef.mexican(k), (), (9,), False) for k in range(lines)
    )
    assert all(not p.marker for p in view.players)
    # The first player may start any line with any tile carrying the station's 9.
    nines = [x for x in game.hand(0) if 9 in x]
    assert nines  # this seed deals seat 0 some
    assert sorted(legal(game)) == sorted(f"{x}@m{k}" for x in nines for k in range(lines))


@pytest.mark.parametrize("lines", [0, 1, 5, 7])
def test_cl_cf_1_center_lines_other_than_six_or_four_refused(lines: int) -> None:
    with pytest.raises(RulesetError) as info:
        rules(center_lines=lines)
    assert info.value.rule == "CL-CF-1"
    assert str(lines) in words(info.value.message)


def test_cl_cf_1_lines_must_all_start_first() -> None:
    game = position(hands=["1-5 9-2 9-3", "9-4", "0-0", "6-6"], boneyard="7-8", lines={0: "9-1"})
    # Only plays that start a new line, with a tile carrying the station's 9.
    assert sorted(legal(game)) == sorted(f"{x}-9@m{k}" for x in (2, 3) for k in (1, 2, 3))
    # 1-5 matches line 0's open end, but line 0 has started.
    error = illegal(game, "1-5@m0", "MUST_START_LINE", "CL-CF-1")
    assert "@m1, @m2, @m3" in error.message
    illegal(game, "2-9@m0", "MUST_START_LINE", "CL-CF-1")
    # A line starts with the station's number: 1-5 starts nothing.
    error = illegal(game, "1-5@m1", "TILE_DOES_NOT_MATCH", "MT-TR-5")
    assert "open end 9" in error.message
    assert typed(play(game, "2-9@m2")) == typed([TilePlayed(0, t("2-9"), M2), TurnStarted(1)])
    assert game.open_ends == [[1], [9], [2], [9]]
    # The next seat starts one of the two lines left.
    assert legal(game) == ["4-9@m1", "4-9@m3"]


def test_cl_cf_1_a_seat_without_the_station_number_draws_in_the_line_start_phase() -> None:
    game = position(hands=["1-5 2-4", "9-4", "0-0", "6-6"], boneyard="1-6 9-7", lines={0: "9-1"})
    assert legal(game) == ["draw"]  # 1-5 fits line 0's end, yet it is no play now
    illegal(game, "1-5@m0", "MUST_START_LINE", "CL-CF-1")
    # A drawn 1-6 does not start a line: the turn ends, and no marker goes on.
    assert typed(play(game, "draw")) == typed([TileDrawn(0, t("1-6")), TurnStarted(1)])
    assert game.hand(0) == [t("1-5"), t("1-6"), t("2-4")]
    assert game.markers == [False] * 4


def test_cl_cf_1_a_drawn_station_tile_starts_a_line() -> None:
    game = position(hands=["1-5", "9-4", "0-0", "6-6"], boneyard="9-7 1-6", lines={0: "9-1"})
    assert typed(play(game, "draw")) == typed([TileDrawn(0, t("7-9"))])
    assert legal(game) == ["7-9@m1", "7-9@m2", "7-9@m3"]
    illegal(game, "1-5@m0", "MUST_START_LINE", "CL-CF-1")
    assert typed(play(game, "7-9@m3")) == typed([TilePlayed(0, t("7-9"), M3), TurnStarted(1)])


def test_cl_cf_1_once_the_last_line_starts_every_line_is_open() -> None:
    game = position(
        hands=["9-4 1-5", "2-6 4-7 9-8", "0-0", "6-6"],
        boneyard="3-3",
        lines={0: "9-1", 1: "9-2", 2: "9-3"},
    )
    assert legal(game) == ["4-9@m3"]  # 1-5 must wait: line 3 has not started
    play(game, "4-9@m3")
    # Every line has started: the seat extends any line; 8-9 starts nothing now.
    assert sorted(legal(game)) == ["2-6@m1", "4-7@m3"]
    assert typed(play(game, "4-7@m3")) == typed([TilePlayed(1, t("4-7"), M3), TurnStarted(2)])


def test_cl_cf_1_six_lines_all_start_before_any_is_extended() -> None:
    game = position(
        rules(first_player="seat0"),
        2,
        hands=["9-5 5-6 9-6", "9-0 0-1 9-1 9-2 9-3"],
        boneyard="4-4",
        lines={0: "9-4"},
    )
    assert sorted(legal(game)) == sorted(f"{x}-9@m{k}" for x in (5, 6) for k in range(1, 6))
    play(game, "5-9@m1")
    assert sorted(legal(game)) == sorted(f"{x}-9@m{k}" for x in (0, 1, 2, 3) for k in range(2, 6))
    play(game, "0-9@m2")
    # 5-6 fits line 1's open 5, but three lines are still to start.
    assert legal(game) == ["6-9@m3", "6-9@m4", "6-9@m5"]
    play(game, "6-9@m3")
    assert sorted(legal(game)) == ["1-9@m4", "1-9@m5", "2-9@m4", "2-9@m5", "3-9@m4", "3-9@m5"]
    play(game, "1-9@m4")
    assert legal(game) == ["draw"]
    illegal(game, "5-6@m1", "MUST_START_LINE", "CL-CF-1")
    # A drawn 4-4 fits line 0's open 4, which is no play while line 5 waits.
    assert typed(play(game, "draw")) == typed([TileDrawn(0, t("4-4")), TurnStarted(1)])
    assert legal(game) == ["2-9@m5", "3-9@m5"]
    play(game, "2-9@m5")
    # Every line has started: open ends 4, 5, 0, 6, 1, 2.
    assert [ends[0] for ends in game.open_ends] == [4, 5, 0, 6, 1, 2]
    assert sorted(legal(game)) == ["4-4@m0", "5-6@m1", "5-6@m3"]


# ------------------------------------------------------------------ doubles


def foot() -> ChickenFoot:
    """Every line started; seat 0 holds 5-5 for line 3's open 5."""
    return position(
        hands=["5-5 1-6 7-9", "5-7 2-8", "3-4 4-6", "0-5 1-1"],
        boneyard="5-8 6-8",
        lines=STARTED,
    )


def test_cl_cf_1_a_double_is_answered_by_three_tiles_across_turns() -> None:
    game = foot()
    assert sorted(legal(game)) == ["1-6@m0", "5-5@m3"]
    # The player of the double owes nothing: the turn passes at once.
    assert typed(play(game, "5-5@m3")) == typed([TilePlayed(0, t("5-5"), M3), TurnStarted(1)])
    assert game.open_doubles() == [(M3, 5, 0)]
    view = game.view(1)
    assert view.turn is not None
    assert not view.turn.owes_tile
    # The foot blocks: seat 1's 2-8 fits line 1, but only the double takes a tile.
    assert legal(game) == ["5-7@m3"]
    illegal(game, "2-8@m1", "MUST_COVER_DOUBLE", "MT-DBL-3")
    assert typed(play(game, "5-7@m3")) == typed([TilePlayed(1, t("5-7"), M3), TurnStarted(2)])
    assert game.open_doubles() == [(M3, 5, 1)]
    assert game.open_ends[3] == [5, 7]  # the trunk still offers the double's 5
    # Seat 2 has no 5: it draws one tile, and the drawn 5-8 must answer the foot.
    assert legal(game) == ["draw"]
    assert typed(play(game, "draw")) == typed([TileDrawn(2, t("5-8"))])
    assert legal(game) == ["5-8@m3"]
    illegal(game, "3-4@m2", "MUST_PLAY_DRAWN_TILE", "MT-DR-1")
    assert typed(play(game, "5-8@m3")) == typed([TilePlayed(2, t("5-8"), M3), TurnStarted(3)])
    assert game.open_doubles() == [(M3, 5, 2)]
    assert legal(game) == ["0-5@m3"]
    illegal(game, "1-1@m0", "MUST_COVER_DOUBLE", "MT-DBL-3")
    # The third answer satisfies it; the trunk ends at the double.
    assert typed(play(game, "0-5@m3")) == typed(
        [TilePlayed(3, t("0-5"), M3), DoubleSatisfied(M3, 5), TurnStarted(0)]
    )
    assert game.open_doubles() == []
    assert game.open_ends[3] == [-1, 7, 8, 0]
    # MT-DBL-7 / API.md: branches numbered in order of creation, 0 the trunk.
    assert sorted(legal(game)) == ["1-6@m0", "7-9@m3.1"]
    illegal(game, "7-9@m3", "NO_SUCH_TRAIN", "MT-DBL-7")
    illegal(game, "7-9@m3.4", "NO_SUCH_TRAIN", "MT-DBL-7")
    assert typed(play(game, "7-9@m3.1")) == typed(
        [TilePlayed(0, t("7-9"), TrainRef.mexican(3, 1)), TurnStarted(1)]
    )
    line = game.view(None).trains[3]
    assert line.ref == M3
    assert line.open_ends == (9, 8, 0)
    assert line.branches == (
        BranchView(0, None, (Tile(9, 5), Tile(5, 5)), None),
        BranchView(1, 0, (Tile(5, 7), Tile(7, 9)), 9),
        BranchView(2, 0, (Tile(5, 8),), 8),
        BranchView(3, 0, (Tile(5, 0),), 0),
    )
    assert game.markers == [False] * 4


def test_cl_cf_1_the_player_of_a_double_owes_nothing_and_answers_in_turn() -> None:
    game = position(hands=["5-5 5-6 5-7 0-0", "2-8", "3-4", "1-6"], lines=STARTED)
    events = play(game, "5-5@m3")
    assert typed(events) == typed([TilePlayed(0, t("5-5"), M3), TurnStarted(1)])
    assert (game.current_seat, game.owes) == (1, False)
    # Nobody else can answer and the boneyard is empty: each passes, no marker;
    # the round is not blocked, since seat 0 holds 5-6 and 5-7.
    for seat in (1, 2, 3):
        assert legal(game) == ["pass"]
        assert typed(play(game, "pass")) == typed([Passed(seat), TurnStarted((seat + 1) % 4)])
    assert legal(game) == ["5-6@m3", "5-7@m3"]
    assert typed(play(game, "5-6@m3")) == typed([TilePlayed(0, t("5-6"), M3), TurnStarted(1)])
    assert game.open_doubles() == [(M3, 5, 1)]
    assert game.markers == [False] * 4
    # Once seat 0's last 5 answers it too, no hand holds a 5 to answer the foot
    # (the other 5s are out of this position) and nothing else may be played:
    # the round is blocked (MT-END-3).
    play(game, "pass", "pass", "pass")
    assert typed(play(game, "5-7@m3")) == typed(
        [
            TilePlayed(0, t("5-7"), M3),
            RoundEnded(1, RoundEndReason.BLOCKED, (50, 10, 7, 7)),
            RoundStarted(2, Tile(8, 8), 1),
            TurnStarted(1),
        ]
    )


def test_cl_cf_1_a_double_drawn_and_played() -> None:
    game = position(hands=["4-6", "2-7", "3-8", "0-6"], boneyard="2-2 7-8", lines=STARTED)
    assert legal(game) == ["draw"]
    assert typed(play(game, "draw")) == typed([TileDrawn(0, t("2-2"))])
    view = game.view(0)
    assert view.turn is not None
    assert view.turn.drew_this_turn
    assert legal(game) == ["2-2@m1"]
    illegal(game, "4-6@m1", "MUST_PLAY_DRAWN_TILE", "MT-DR-1")
    # Played, it owes nothing either: the turn ends, the foot blocks seat 1.
    assert typed(play(game, "2-2@m1")) == typed([TilePlayed(0, t("2-2"), M1), TurnStarted(1)])
    assert game.open_doubles() == [(M1, 2, 0)]
    assert legal(game) == ["2-7@m1"]
    view = game.view(1)
    assert view.turn is not None
    assert (view.turn.drew_this_turn, view.turn.owes_tile) == (False, False)


def test_cl_cf_1_a_second_foot_numbers_its_branches_on() -> None:
    game = position(
        hands=["5-7 7-7 3-3", "0-5 2-7 4-4", "5-8 4-7 6-6", "1-6 6-7 8-9"],
        lines={0: "9-1", 1: "9-2", 2: "9-3", 3: "9-5 5-5"},
    )
    assert game.open_doubles() == [(M3, 5, 0)]
    play(game, "5-7@m3", "0-5@m3", "5-8@m3")
    assert game.open_ends[3] == [-1, 7, 0, 8]
    assert sorted(legal(game)) == ["1-6@m0", "6-7@m3.1", "8-9@m3.3"]
    play(game, "1-6@m0")
    # A double on branch 1 is a new foot: it is answered on branch 1, and its
    # answers start branches 4, 5 and 6.
    on_branch = TrainRef.mexican(3, 1)
    assert sorted(legal(game)) == ["3-3@m2", "7-7@m3.1"]
    assert typed(play(game, "7-7@m3.1")) == typed(
        [TilePlayed(0, t("7-7"), on_branch), TurnStarted(1)]
    )
    assert game.open_doubles() == [(on_branch, 7, 0)]
    assert legal(game) == ["2-7@m3.1"]
    play(game, "2-7@m3.1")
    assert legal(game) == ["4-7@m3.1"]
    play(game, "4-7@m3.1")
    assert legal(game) == ["6-7@m3.1"]
    assert typed(play(game, "6-7@m3.1")) == typed(
        [TilePlayed(3, t("6-7"), on_branch), DoubleSatisfied(on_branch, 7), TurnStarted(0)]
    )
    assert game.open_ends[3] == [-1, -1, 0, 8, 2, 4, 6]
    assert game.parent_ends[3] == [-1, 0, 0, 0, 1, 1, 1]
    branches = game.view(None).trains[3].branches
    assert [(b.end, b.parent_end, b.open_end) for b in branches] == [
        (0, None, None),
        (1, 0, None),
        (2, 0, 0),
        (3, 0, 8),
        (4, 1, 2),
        (5, 1, 4),
        (6, 1, 6),
    ]
    assert branches[1].tiles == (Tile(5, 7), Tile(7, 7))
    assert legal(game) == ["3-3@m2"]


def test_cl_cf_1_a_dead_double_stops_blocking() -> None:
    # MT-DBL-5: every other 5 is on the table, so 5-5 can never be answered.
    lines = {0: "9-1 1-5 5-0 0-2 2-5 5-3 3-4 4-5 5-6 6-7 7-5 5-8", 1: "9-2", 2: "9-3", 3: "9-5"}
    game = position(hands=["5-5 8-8", "2-6", "3-7", "1-1"], lines=lines)
    assert sorted(legal(game)) == ["5-5@m3", "8-8@m0"]
    assert typed(play(game, "5-5@m3")) == typed(
        [TilePlayed(0, t("5-5"), M3), DoubleSatisfied(M3, 5, True), TurnStarted(1)]
    )
    assert game.open_doubles() == []
    assert legal(game) == ["2-6@m1"]


# ------------------------------------------------------------------ a turn


def test_cl_cf_1_a_drawn_tile_that_fits_must_be_played() -> None:
    game = position(hands=["4-6 0-7", "2-7", "3-8", "0-6"], boneyard="3-6 7-8", lines=STARTED)
    assert legal(game) == ["draw"]
    illegal(game, "pass", "CANNOT_PASS", "MT-DR-2")
    illegal(game, "4-6@m0", "TILE_DOES_NOT_MATCH", "MT-TR-5")
    assert typed(play(game, "draw")) == typed([TileDrawn(0, t("3-6"))])
    assert legal(game) == ["3-6@m2"]
    illegal(game, "draw", "MUST_PLAY", "MT-TURN-2")
    illegal(game, "pass", "MUST_PLAY", "MT-TURN-2")
    assert typed(play(game, "3-6@m2")) == typed([TilePlayed(0, t("3-6"), M2), TurnStarted(1)])
    assert game.hand(0) == [t("0-7"), t("4-6")]


def test_cl_cf_1_a_drawn_tile_that_does_not_fit_ends_the_turn_without_a_marker() -> None:
    game = position(hands=["4-6", "2-7", "3-8", "0-6"], boneyard="7-8 3-6", lines=STARTED)
    assert typed(play(game, "draw")) == typed([TileDrawn(0, t("7-8")), TurnStarted(1)])
    assert game.hand(0) == [t("4-6"), t("7-8")]
    assert game.boneyard_tiles() == [t("3-6")]
    assert game.markers == [False] * 4
    view = game.view(None)
    assert [p.marker for p in view.players] == [False] * 4
    assert [x.marker for x in view.trains] == [False] * 4
    # One draw a turn: the next seat plays.
    assert legal(game) == ["2-7@m1"]


def test_cl_cf_1_pass_with_an_empty_boneyard() -> None:
    game = position(hands=["4-6", "2-7", "3-8", "0-6"], lines=STARTED)
    assert legal(game) == ["pass"]
    illegal(game, "draw", "CANNOT_DRAW", "MT-DR-2")
    assert typed(play(game, "pass")) == typed([Passed(0), TurnStarted(1)])
    assert game.markers == [False] * 4
    assert legal(game) == ["2-7@m1"]


# ------------------------------------------------------------------ round end


def test_cl_cf_1_a_blocked_round_ends_and_every_hand_scores() -> None:
    game = position(hands=["0-0 4-4", "6-6 7-8", "0-4", "6-7 8-8"], lines=STARTED)
    assert legal(game) == ["pass"]
    # MT-END-3 at the end of the turn: the boneyard is empty, no tile fits 1, 2, 3, 5.
    assert typed(play(game, "pass")) == typed(
        [
            Passed(0),
            RoundEnded(1, RoundEndReason.BLOCKED, (58, 27, 4, 29)),  # 0-0 counts 50
            RoundStarted(2, Tile(8, 8), 1),
            TurnStarted(1),
        ]
    )
    assert game.round_scores == [[58], [27], [4], [29]]
    assert game.engine == Tile(8, 8)


def test_cl_cf_1_a_round_with_a_playable_tile_somewhere_is_not_blocked() -> None:
    game = position(hands=["0-0 4-4", "6-6 7-8", "0-4", "6-7 5-8"], lines=STARTED)
    for seat in (0, 1, 2):
        assert typed(play(game, "pass")) == typed([Passed(seat), TurnStarted(seat + 1)])
    assert legal(game) == ["5-8@m3"]


def test_cl_cf_1_blocked_in_the_line_start_phase_when_nobody_holds_the_station_number() -> None:
    # Tiles fit line 0's open 1, but no line can start without a 9: blocked.
    game = position(hands=["1-4", "1-6", "2-3", "4-5"], lines={0: "9-1"})
    assert legal(game) == ["pass"]
    assert typed(play(game, "pass")) == typed(
        [
            Passed(0),
            RoundEnded(1, RoundEndReason.BLOCKED, (5, 7, 5, 9)),
            RoundStarted(2, Tile(8, 8), 1),
            TurnStarted(1),
        ]
    )


def test_cl_cf_1_not_blocked_in_the_line_start_phase_while_a_station_tile_is_held() -> None:
    game = position(hands=["1-4", "1-6", "2-3", "4-9"], lines={0: "9-1"})
    for seat in (0, 1, 2):
        assert legal(game) == ["pass"]
        assert typed(play(game, "pass")) == typed([Passed(seat), TurnStarted(seat + 1)])
    assert legal(game) == ["4-9@m1", "4-9@m2", "4-9@m3"]


def test_cl_cf_1_domino_ends_the_round() -> None:
    game = position(hands=["1-6", "0-0 2-7", "3-8", "0-6 4-4"], boneyard="7-7", lines=STARTED)
    assert typed(play(game, "1-6@m0")) == typed(
        [
            TilePlayed(0, t("1-6"), M0),
            RoundEnded(1, RoundEndReason.DOMINO, (0, 59, 11, 14)),
            RoundStarted(2, Tile(8, 8), 1),
            TurnStarted(1),
        ]
    )
    assert game.round_scores == [[0], [59], [11], [14]]
    assert game.totals == [0, 59, 11, 14]


def test_cl_cf_1_a_double_as_the_last_tile_is_a_domino() -> None:
    game = position(hands=["1-1", "5-6", "3-8", "0-6"], boneyard="7-7", lines=STARTED)
    assert typed(play(game, "1-1@m0")) == typed(
        [
            TilePlayed(0, t("1-1"), M0),
            RoundEnded(1, RoundEndReason.DOMINO, (0, 11, 11, 6)),
            RoundStarted(2, Tile(8, 8), 1),
            TurnStarted(1),
        ]
    )
    assert game.open_doubles() == []


@pytest.mark.parametrize(("blank", "score"), [(None, 55), (50, 55), (25, 30), (0, 5)])
def test_cl_cf_1_every_hand_scores_and_0_0_counts_double_blank_value(
    blank: int | None, score: int
) -> None:
    options = {} if blank is None else {"double_blank_value": blank}
    game_rules = rules(center_lines=4, **options)
    assert game_rules.double_blank_value == (50 if blank is None else blank)
    game = position(game_rules, hands=["1-6", "0-0 2-3", "0-4", "4-4"], lines=STARTED)
    events = play(game, "1-6@m0")
    assert events[1] == RoundEnded(1, RoundEndReason.DOMINO, (0, score, 4, 8))


@pytest.mark.parametrize("blank", [1, 10, 100, -50])
def test_cl_cf_1_other_double_blank_values_refused(blank: int) -> None:
    with pytest.raises(RulesetError) as info:
        rules(double_blank_value=blank)
    assert info.value.rule == "T-3"


# ------------------------------------------------------------------ rounds


@pytest.mark.parametrize(("first_player", "players"), [("seat0", 4), ("draw", 3)])
def test_cl_cf_1_one_round_per_double_from_the_top(first_player: str, players: int) -> None:
    game = engine.new_game(
        rules(set_max=6, hand_size=5, first_player=first_player), players, "whole"
    )
    assert game.rounds_total == 7
    started = [e for e in game.opening_events if type(e) is RoundStarted]
    first = started[0].starter
    if first_player == "seat0":
        assert first == 0
    while not game.over:
        events = play_out_round(game)
        for e in events:
            if type(e) is RoundStarted:
                started.append(e)
                station = Tile(7 - e.round, 7 - e.round)
                held = [x for h in hands_of(game) for x in h] + game.boneyard_tiles()
                assert sorted(held) == [x for x in full_set(6) if x != station]
    # Round r's station is set_max - r + 1; each later round starts one seat on.
    assert [(e.round, e.engine, e.starter) for e in started] == [
        (r, Tile(7 - r, 7 - r), (first + r - 1) % players) for r in range(1, 8)
    ]
    assert [len(rs) for rs in game.round_scores] == [7] * players
    assert game.legal_moves() == []
    with pytest.raises(engine.GameOverError):
        game.apply(engine.DRAW)


def test_cl_cf_1_the_last_round_is_played_with_0_0() -> None:
    game = position(
        rules(center_lines=4, set_max=6, hand_size=5),
        2,
        hands=["0-4", "5-6"],
        boneyard="1-2",
        lines={0: "0-1", 1: "0-2", 2: "0-3"},
        round=7,
        round_scores=[[1] * 6, [2] * 6],
    )
    assert game.engine == Tile(0, 0)
    assert legal(game) == ["0-4@m3"]
    assert typed(play(game, "0-4@m3")) == typed(
        [
            TilePlayed(0, t("0-4"), M3),
            RoundEnded(7, RoundEndReason.DOMINO, (0, 11)),
            GameEnded((6, 23), (0,), "scenario"),
        ]
    )
    assert game.over
    assert game.winners == (0,)


@pytest.mark.parametrize("rounds", [1, 2])
def test_cl_cf_1_rounds_shortens_the_game_from_the_top(rounds: int) -> None:
    game = engine.new_game(rules(rounds=rounds, first_player="seat0"), 4, "short")
    assert (game.rounds_total, game.engine) == (rounds, Tile(9, 9))
    if rounds == 2:
        events = play_out_round(game)
        assert RoundStarted(2, Tile(8, 8), 1) in events
    events = play_out_round(game)
    assert game.over
    assert type(events[-1]) is GameEnded
    assert not any(type(e) is RoundStarted for e in events)
    assert [len(rs) for rs in game.round_scores] == [rounds] * 4


@pytest.mark.parametrize(
    ("options", "numbers"),
    [({"rounds": 11}, {"1", "10", "11"}), ({"set_max": 6, "rounds": 8}, {"7", "8"})],
)
def test_cl_cf_1_more_rounds_than_doubles_refused(
    options: dict[str, int], numbers: set[str]
) -> None:
    with pytest.raises(RulesetError) as info:
        rules(**options)
    assert info.value.rule == "MT-RND-1"
    assert numbers <= words(info.value.message)


def first_player_of(seed: str, players: int, set_max: int = 9) -> int:
    """MT-ENG-1 ``draw`` recomputed from API.md: contender j (in seat order)
    takes shuffled tile j of the set less the station; ties draw again."""
    contenders = list(range(players))
    for k in range(1, 50):
        deck = shuffled(seed, f"round:1:first-player:{k}", set_max, Tile(set_max, set_max))
        pips = [deck[j].pips for j in range(len(contenders))]
        contenders = [s for s, p in zip(contenders, pips, strict=True) if p == max(pips)]
        if len(contenders) == 1:
            return contenders[0]
    raise AssertionError("no first player after 49 draws")


@pytest.mark.parametrize("players", [2, 4, 8])
def test_cl_cf_1_round_1_first_player_is_drawn_for(players: int) -> None:
    starters = set()
    for k in range(12):
        seed = f"first-{k}"
        expected = first_player_of(seed, players)
        game = engine.new_game("chicken_foot_game", players, seed)
        assert game.current_seat == expected
        assert game.opening_events == [RoundStarted(1, Tile(9, 9), expected), TurnStarted(expected)]
        starters.add(expected)
        # first_player seat0: seat 0 starts round 1 whatever the draw.
        assert engine.new_game(rules(first_player="seat0"), players, seed).current_seat == 0
    assert len(starters) > 1  # the draw, not seat 0 every time


def test_cl_cf_1_later_rounds_start_with_the_next_seat() -> None:
    seed = next(f"next-{k}" for k in range(100) if first_player_of(f"next-{k}", 5) == 4)
    game = engine.new_game(rules(rounds=3), 5, seed)
    assert game.current_seat == 4
    events = play_out_round(game)
    assert events[-2:] == [RoundStarted(2, Tile(8, 8), 0), TurnStarted(0)]
    events = play_out_round(game)
    assert events[-2:] == [RoundStarted(3, Tile(7, 7), 1), TurnStarted(1)]


# ------------------------------------------------------------------ winners


#: Round 3 of 3 (station 7-7), every line started: seat 0 goes out with 1-4
#: and seat 1 keeps 0-3 (3 points); seats 2 and 3 are far behind.
LAST_LINES = {0: "7-1", 1: "7-2", 2: "7-3", 3: "7-5"}


@pytest.mark.parametrize(
    ("seat0", "seat1", "hand1", "winners"),
    [
        ([20, 20], [1, 1], "0-3", (1,)),  # the lowest total wins (MT-SC-2)
        ([0, 15], [0, 12], "0-3", (0,)),  # 15 each: seat 0 won two rounds, seat 1 one
        ([10, 5], [0, 12], "0-3", (1,)),  # 15 each, one round won each: seat 1's lowest is 3
        ([0, 10], [0, 0], "2-8", (0, 1)),  # 10 each, two won each, lowest 10 each: both win
    ],
)
def test_cl_cf_1_lowest_total_wins_with_mt_sc_3_ties(
    seat0: list[int], seat1: list[int], hand1: str, winners: tuple[int, ...]
) -> None:
    game = position(
        rules(center_lines=4, rounds=3),
        hands=["1-4", hand1, "4-6", "6-8"],
        lines=LAST_LINES,
        round=3,
        round_scores=[seat0, seat1, [30, 30], [40, 40]],
    )
    assert game.engine == Tile(7, 7)
    events = play(game, "1-4@m0")
    pips = t(hand1).pips
    totals = (sum(seat0), sum(seat1) + pips, 70, 94)
    assert typed(events) == typed(
        [
            TilePlayed(0, t("1-4"), M0),
            RoundEnded(3, RoundEndReason.DOMINO, (0, pips, 10, 14)),
            GameEnded(totals, winners, "scenario"),
        ]
    )
    assert game.over
    assert game.winners == winners
    view = game.view(None)
    assert (view.winners, view.seed, view.current_seat) == (winners, "scenario", None)


# ------------------------------------------------------------------ options


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("knock_rule", "penalty"),
        ("mexican_trains", 2),
        ("engine_placement", "holder_plays"),
        ("first_engine", 8),
        ("first_turn", "chain"),
        ("double_answer", "one"),
        ("hand_size_table", "standard"),
        ("opening", "seat0_any"),
        ("target_score", 100),
        ("teams", True),
        ("boneyard_reserve", 2),
        ("blocked_scoring", "difference"),
    ],
)
def test_cl_cf_1_options_chicken_foot_does_not_have_are_refused(option: str, value: object) -> None:
    # CL-SET-1: refused by name, naming the game, however the rules are asked for.
    for make in (
        lambda: ChickenFootRules().with_options(**{option: value}),
        lambda: engine.ruleset(game="chicken_foot", **{option: value}),
        lambda: engine.ruleset("chicken_foot_game", **{option: value}),
        lambda: ChickenFootRules.from_dict({**ChickenFootRules().to_dict(), option: value}),
    ):
        with pytest.raises(RulesetError) as info:
            make()
        assert info.value.rule == "CL-SET-1"
        assert f"'{option}'" in info.value.message
        assert "chicken_foot" in info.value.message


def test_cl_cf_1_its_own_options_and_preset() -> None:
    assert set(OPTIONS) == {
        "set_max",
        "hand_size",
        "rounds",
        "first_player",
        "double_blank_value",
        "center_lines",
    }
    assert engine.GAMES["chicken_foot"].options == frozenset(OPTIONS)
    assert engine.ruleset(game="chicken_foot") == ChickenFootRules()
    assert engine.preset("chicken_foot_game").to_dict() == {
        "preset": "chicken_foot_game",
        "game": "chicken_foot",
        "set_max": 9,
        "hand_size": None,
        "rounds": None,
        "first_player": "draw",
        "double_blank_value": 50,
        "center_lines": 6,
    }
    custom = engine.ruleset(
        game="chicken_foot",
        set_max=12,
        hand_size=9,
        rounds=4,
        first_player="seat0",
        double_blank_value=0,
        center_lines=4,
    )
    game = engine.new_game(custom, 5, "custom")
    assert (game.set_max, game.rounds_total, game.slot_count, game.current_seat) == (12, 4, 4, 0)
    assert game.view(0).ruleset == custom.resolve(5)
    # A preset of another game is not Chicken Foot's (CL-SET-1).
    with pytest.raises(RulesetError) as info:
        engine.ruleset("standard", game="chicken_foot")
    assert info.value.rule == "CL-SET-1"
    # center_lines is Chicken Foot's alone, even beside Mexican Train's chicken_foot preset.
    with pytest.raises(RulesetError) as info:
        engine.preset("chicken_foot").with_options(center_lines=4)
    assert "'center_lines'" in info.value.message


@pytest.mark.parametrize("move", ["2-9@p0", "2-9@p1", "2-9@p0.1", "2-9@l0", "2-9@l1"])
def test_cl_cf_1_no_personal_trains(move: str) -> None:
    """A target that is no line or branch names MT-TR-3 (CL-CF-1's last
    sentence: the rule of section 2 it builds on)."""
    game = position(hands=["9-2", "9-4", "0-0", "6-6"], boneyard="7-8")
    error = illegal(game, move, "NO_SUCH_TRAIN", "MT-TR-3")
    assert "@m0 to @m3" in error.message
    assert sorted(legal(game)) == ["2-9@m0", "2-9@m1", "2-9@m2", "2-9@m3"]


def test_cl_cf_1_a_line_that_does_not_exist_is_refused() -> None:
    game = position(hands=["9-2", "9-4", "0-0", "6-6"], boneyard="7-8")
    illegal(game, "2-9@m4", "NO_SUCH_TRAIN", "MT-TR-3")


def test_cl_cf_1_no_markers_in_a_whole_game() -> None:
    game = engine.new_game(rules(rounds=3), 3, "markers")
    draws = passes = 0
    while not game.over:
        move = game.legal_moves()[-1]
        events = game.apply(move)
        assert no_markers(events), events
        assert game.markers == [False] * 3
        draws += move == engine.DRAW
        passes += move == engine.PASS
    # The turns that would have put a marker on in Mexican Train.
    assert draws
    assert passes
