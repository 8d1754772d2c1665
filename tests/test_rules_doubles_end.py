"""RULES.md sections 2.6-2.9: doubles, the end of a round, scoring, visibility
and fairness.

Every test names the rule id it checks and starts from an exact position spelled
out with ``tests.scenario.position`` (or a seed whose deal it recomputes). Legal
moves are compared as sorted lists (RULES.md fixes no order); events are
compared with their types, since two event tuples of different kinds can hold
the same values (``MarkerPlaced(1) == TurnStarted(1)`` as plain tuples).

Unless a test says otherwise: 4 players, double-12, round 1 (engine 12-12),
seat 0 to move, every first turn over, and seat 0 starts round 1
(``first_player: seat0``) so the next round's starter is known.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

import engine
from engine import (
    DoubleSatisfied,
    GameEnded,
    MarkerPlaced,
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
    build_view,
    for_seat,
)
from engine.shuffle import shuffle
from engine.tiles import canonical_ids
from engine.view import BranchView, OpenDoubleView, PlayerView, TrainView, TurnView
from tests.scenario import notations, play, position

P0, P1, P2, P3 = (TrainRef.seat(s) for s in range(4))
M0 = TrainRef.mexican(0)
DOMINO = RoundEndReason.DOMINO
BLOCKED = RoundEndReason.BLOCKED
SEED = "scenario"  # tests.scenario.position's default seed

# --------------------------------------------------------------------- helpers


def rules(**options: object) -> Ruleset:
    """The standard preset, seat 0 starting round 1, with ``options``."""
    return engine.preset("standard").with_options(first_player="seat0", **options)


STD = rules()
ONE_ROUND = rules(rounds=1)
CHICKEN = rules(double_answer="chicken_foot")
KNOCK = rules(knock_rule="penalty")
# A double-six set, so that every tile carrying a number fits on the table.
SIX = rules(set_max=6, hand_size=3)


def t(text: str) -> Tile:
    return Tile.parse(text)


def tiles(text: str) -> list[Tile]:
    return [Tile.parse(x) for x in text.split()]


def pos(
    ruleset: Ruleset = STD,
    players: int = 4,
    *,
    hands: Sequence[str],
    boneyard: str = "",
    trains: dict[str, str] | None = None,
    **kwargs: Any,
) -> MexicanTrain:
    """``tests.scenario.position``, refusing a position that uses a tile twice
    or uses the round's engine (a typo in a test, not an engine fault)."""
    texts = [*hands, boneyard, *(trains or {}).values()]
    used = [x for text in texts for x in tiles(text)]
    assert len(set(used)) == len(used), f"a tile is used twice: {sorted(used)}"
    first_engine = ruleset.resolve(players).first_engine
    assert first_engine is not None
    e = first_engine - (kwargs.get("round", 1) - 1)
    assert Tile(e, e) not in used, "the engine is in the station, not in play"
    return position(ruleset, players, hands=hands, boneyard=boneyard, trains=trains, **kwargs)


def legal(game: MexicanTrain) -> list[str]:
    """The legal moves as text, sorted: the exact set (RULES.md fixes no order)."""
    return sorted(notations(game))


def typed(events: Iterable[Any]) -> list[tuple[Any, ...]]:
    """Events as (kind, fields...), so that kinds are compared too."""
    return [(type(e).__name__, *e) for e in events]


def hand(game: MexicanTrain, seat: int) -> str:
    return " ".join(map(str, game.hand(seat)))


def illegal(game: MexicanTrain, move: str, reason: str, rule: str) -> None:
    """``move`` is refused with ``reason`` and ``rule``, and nothing changes."""
    before = game.to_bytes()
    with pytest.raises(engine.IllegalMoveError) as info:
        play(game, move)
    assert (info.value.reason, info.value.rule) == (reason, rule)
    assert game.to_bytes() == before


def deal_order(seed: str, rnd: int, engine_value: int, set_max: int = 12) -> list[Tile]:
    """API.md "Deal shuffle": round ``rnd``'s shuffled set, engine set aside."""
    items = [Tile(i >> 5, i & 31) for i in canonical_ids(set_max)]
    items = [x for x in items if x != Tile(engine_value, engine_value)]
    return list(shuffle(seed, f"round:{rnd}:deal", items))


def play_out(game: MexicanTrain) -> list[Any]:
    """Play the first legal move until the game is over; every event, in order."""
    events: list[Any] = list(game.opening_events)
    while not game.over:
        events.extend(game.apply(game.legal_moves()[0]))
    return events


# ====================================================================== 2.6 doubles
# ---------------------------------------------------------------- MT-DBL-1


def test_mt_dbl_1_double_owes_one_more_tile_in_the_same_turn() -> None:
    g = pos(
        hands=["5-5 5-9 2-3", "0-1", "0-2", "0-3"],
        boneyard="1-1 1-2",
        trains={"p0": "12-5", "m0": "12-7"},
    )
    assert legal(g) == ["5-5@p0", "5-9@p0"]
    assert typed(play(g, "5-5@p0")) == typed([TilePlayed(0, t("5-5"), P0)])
    # Placed across the train like any tile; the turn goes on, a tile is owed.
    assert g.train_tiles_of(0) == [Tile(12, 5), Tile(5, 5)]
    assert (g.current_seat, g.owes, g.version) == (0, True, 1)
    assert build_view(g).turn == TurnView(True, False, False)
    assert g.open_doubles() == [(P0, 5, 0)]
    assert legal(g) == ["5-9@p0"]
    assert typed(play(g, "5-9@p0")) == typed(
        [TilePlayed(0, t("5-9"), P0), DoubleSatisfied(P0, 5, False), TurnStarted(1)]
    )
    assert hand(g, 0) == "2-3"
    assert g.open_doubles() == []
    assert g.train_tiles_of(0) == [Tile(12, 5), Tile(5, 5), Tile(5, 9)]


def test_mt_dbl_1_owed_tile_held_so_no_draw_or_pass() -> None:
    g = pos(
        hands=["5-5 5-9", "0-1", "0-2", "0-3"],
        boneyard="1-1 1-2",
        trains={"p0": "12-5"},
    )
    play(g, "5-5@p0")
    illegal(g, "draw", "MUST_PLAY", "MT-TURN-2")
    illegal(g, "pass", "MUST_PLAY", "MT-TURN-2")


# ---------------------------------------------------------------- MT-DBL-2


def test_mt_dbl_2_any_train_owed_tile_may_go_on_another_train() -> None:
    g = pos(
        hands=["5-5 5-9 7-8", "5-6 6-12", "0-2", "0-3"],
        boneyard="1-1 1-2",
        trains={"p0": "12-5", "m0": "12-7"},
    )
    play(g, "5-5@p0")
    assert legal(g) == ["5-9@p0", "7-8@m0"]
    assert typed(play(g, "7-8@m0")) == typed([TilePlayed(0, t("7-8"), M0), TurnStarted(1)])
    assert g.open_doubles() == [(P0, 5, 0)]
    # MT-DBL-3: from the end of seat 0's turn the double blocks seat 1.
    assert legal(g) == ["5-6@p0"]


def test_mt_dbl_2_cover_own_owed_tile_must_cover_the_double() -> None:
    g = pos(
        rules(double_followup="cover_own"),
        hands=["5-5 5-9 7-8", "0-1", "0-2", "0-3"],
        boneyard="1-1 1-2",
        trains={"p0": "12-5", "m0": "12-7"},
    )
    play(g, "5-5@p0")
    assert legal(g) == ["5-9@p0"]
    illegal(g, "7-8@m0", "MUST_COVER_OWN_DOUBLE", "MT-DBL-2")
    assert typed(play(g, "5-9@p0")) == typed(
        [TilePlayed(0, t("5-9"), P0), DoubleSatisfied(P0, 5, False), TurnStarted(1)]
    )


def test_mt_dbl_2_cover_own_double_on_the_mexican_train() -> None:
    g = pos(
        rules(double_followup="cover_own"),
        hands=["7-7 7-9 5-6", "0-1", "0-2", "0-3"],
        boneyard="1-1 1-2",
        trains={"p0": "12-5", "m0": "12-7"},
    )
    play(g, "7-7@m0")
    assert legal(g) == ["7-9@m0"]
    illegal(g, "5-6@p0", "MUST_COVER_OWN_DOUBLE", "MT-DBL-2")


# ---------------------------------------------------------------- MT-DBL-3


def test_mt_dbl_3_open_double_blocks_everyone() -> None:
    # Seat 0's train carries no marker: seat 1 covers the double on it anyway.
    g = pos(
        hands=["0-1", "5-6 6-12 7-8", "0-2", "0-3"],
        boneyard="1-1 1-2",
        trains={"p0": "12-5 5-5", "m0": "12-7"},
        seat=1,
    )
    assert legal(g) == ["5-6@p0"]
    illegal(g, "6-12@p1", "MUST_COVER_DOUBLE", "MT-DBL-3")
    illegal(g, "7-8@m0", "MUST_COVER_DOUBLE", "MT-DBL-3")
    assert typed(play(g, "5-6@p0")) == typed(
        [TilePlayed(1, t("5-6"), P0), DoubleSatisfied(P0, 5, False), TurnStarted(2)]
    )
    assert g.markers == [False, False, False, False]
    assert g.open_doubles() == []


def test_mt_dbl_3_cannot_cover_draws_and_plays_the_drawn_tile_on_the_double() -> None:
    g = pos(
        hands=["0-1", "6-12 1-2", "0-2", "0-3"],
        boneyard="5-8 3-3",
        trains={"p0": "12-5 5-5", "m0": "12-7"},
        seat=1,
    )
    assert legal(g) == ["draw"]
    assert typed(play(g, "draw")) == typed([TileDrawn(1, t("5-8"), "move")])
    assert legal(g) == ["5-8@p0"]
    assert typed(play(g, "5-8@p0")) == typed(
        [TilePlayed(1, t("5-8"), P0), DoubleSatisfied(P0, 5, False), TurnStarted(2)]
    )
    assert hand(g, 1) == "1-2 6-12"


def test_mt_dbl_3_drawn_tile_not_fitting_the_double_places_the_marker() -> None:
    # 8-12 would fit seat 1's own (empty) train, but the double blocks.
    g = pos(
        hands=["0-1", "6-12 1-2", "0-2", "0-3"],
        boneyard="8-12 3-3",
        trains={"p0": "12-5 5-5", "m0": "12-7"},
        seat=1,
    )
    assert typed(play(g, "draw")) == typed(
        [TileDrawn(1, t("8-12"), "move"), MarkerPlaced(1), TurnStarted(2)]
    )
    assert g.markers == [False, True, False, False]
    assert hand(g, 1) == "1-2 6-12 8-12"
    assert g.open_doubles() == [(P0, 5, 0)]
    assert legal(g) == ["draw"]  # seat 2 holds 0-2: blocked as well


def test_mt_dbl_3_cannot_cover_with_empty_boneyard_passes_with_marker() -> None:
    # Seat 3 holds 5-9, so the round is not blocked (MT-END-3).
    g = pos(
        hands=["0-1", "6-12", "0-2", "5-9"],
        trains={"p0": "12-5 5-5", "m0": "12-7"},
        seat=1,
    )
    assert legal(g) == ["pass"]
    assert typed(play(g, "pass")) == typed([Passed(1), MarkerPlaced(1), TurnStarted(2)])
    assert g.markers == [False, True, False, False]


def test_mt_dbl_3_non_blocking_double_is_not_the_only_place() -> None:
    loose = rules(open_doubles_block=False)
    kwargs: dict[str, Any] = {
        "hands": ["0-1", "5-6 6-12", "0-2", "0-3"],
        "boneyard": "1-1 1-2",
        "trains": {"p0": "12-5 5-5"},
        "seat": 1,
    }
    g = pos(loose, **kwargs)
    # RULES.md reading: without blocking, "anyone may cover ... marker or not"
    # does not apply; an open double is covered only from an available train
    # (MT-TR-3). Here seat 0's train carries no marker.
    assert legal(g) == ["6-12@m0", "6-12@p1"]
    assert typed(play(g, "6-12@p1")) == typed([TilePlayed(1, t("6-12"), P1), TurnStarted(2)])
    assert g.open_doubles() == [(P0, 5, 0)]
    g = pos(loose, markers=[0], **kwargs)
    assert legal(g) == ["5-6@p0", "6-12@m0", "6-12@p1"]


# ---------------------------------------------------------------- MT-DBL-4


def chained(ruleset: Ruleset = STD) -> MexicanTrain:
    """Seat 0 has played 5-5 on its train and 7-7 on the Mexican train this turn."""
    g = pos(
        ruleset,
        hands=["5-5 7-7 5-9 7-10 3-4", "5-6 7-8", "7-11 1-2", "0-3"],
        boneyard="1-1 0-1",
        trains={"p0": "12-5", "m0": "12-7", "p2": "12-3"},
        markers=[2],
    )
    assert legal(g) == ["3-4@p2", "5-5@p0", "5-9@p0", "7-10@m0", "7-7@m0"]
    play(g, "5-5@p0")
    assert legal(g) == ["3-4@p2", "5-9@p0", "7-10@m0", "7-7@m0"]
    assert typed(play(g, "7-7@m0")) == typed([TilePlayed(0, t("7-7"), M0)])
    return g


def test_mt_dbl_4_chained_double_owes_one_more_tile() -> None:
    g = chained()
    assert (g.current_seat, g.owes) == (0, True)
    assert g.open_doubles() == [(P0, 5, 0), (M0, 7, 0)]
    # Blocking on: anywhere available but the train ending in the newer double.
    assert legal(g) == ["3-4@p2", "5-9@p0"]
    illegal(g, "7-10@m0", "OLDEST_DOUBLE_FIRST", "MT-DBL-4")


def test_mt_dbl_4_doubles_are_satisfied_oldest_first() -> None:
    g = chained()
    assert typed(play(g, "3-4@p2")) == typed([TilePlayed(0, t("3-4"), P2), TurnStarted(1)])
    assert legal(g) == ["5-6@p0"]
    illegal(g, "7-8@m0", "OLDEST_DOUBLE_FIRST", "MT-DBL-4")
    assert typed(play(g, "5-6@p0")) == typed(
        [TilePlayed(1, t("5-6"), P0), DoubleSatisfied(P0, 5, False), TurnStarted(2)]
    )
    assert legal(g) == ["7-11@m0"]
    assert typed(play(g, "7-11@m0")) == typed(
        [TilePlayed(2, t("7-11"), M0), DoubleSatisfied(M0, 7, False), TurnStarted(3)]
    )
    assert g.open_doubles() == []


def test_mt_dbl_4_owed_tile_may_cover_the_oldest_double_of_the_turn() -> None:
    g = chained()
    assert typed(play(g, "5-9@p0")) == typed(
        [TilePlayed(0, t("5-9"), P0), DoubleSatisfied(P0, 5, False), TurnStarted(1)]
    )
    assert g.open_doubles() == [(M0, 7, 0)]
    assert legal(g) == ["7-8@m0"]


def test_mt_dbl_4_three_doubles_only_the_oldest_is_open_to_the_owed_tile() -> None:
    g = pos(
        hands=["5-5 7-7 3-3 5-9 7-10 3-4 1-11", "0-1", "0-2", "0-4"],
        boneyard="1-1 1-2",
        trains={"p0": "12-5", "m0": "12-7", "p2": "12-3", "p3": "12-11"},
        markers=[2, 3],
    )
    play(g, "5-5@p0", "7-7@m0", "3-3@p2")
    assert g.open_doubles() == [(P0, 5, 0), (M0, 7, 0), (P2, 3, 0)]
    assert legal(g) == ["1-11@p3", "5-9@p0"]
    illegal(g, "3-4@p2", "OLDEST_DOUBLE_FIRST", "MT-DBL-4")
    illegal(g, "7-10@m0", "OLDEST_DOUBLE_FIRST", "MT-DBL-4")


def test_mt_dbl_4_non_blocking_owed_tile_may_cover_any_double() -> None:
    g = chained(rules(open_doubles_block=False))
    assert legal(g) == ["3-4@p2", "5-9@p0", "7-10@m0"]
    assert typed(play(g, "7-10@m0")) == typed(
        [TilePlayed(0, t("7-10"), M0), DoubleSatisfied(M0, 7, False), TurnStarted(1)]
    )
    assert g.open_doubles() == [(P0, 5, 0)]


def test_mt_dbl_4_one_double_per_turn() -> None:
    g = pos(
        rules(max_doubles_per_turn=1),
        hands=["5-5 7-7 5-9", "0-1", "0-2", "0-3"],
        boneyard="1-1 1-2",
        trains={"p0": "12-5", "m0": "12-7"},
    )
    assert legal(g) == ["5-5@p0", "5-9@p0", "7-7@m0"]
    play(g, "5-5@p0")
    assert legal(g) == ["5-9@p0"]
    illegal(g, "7-7@m0", "ONE_DOUBLE_PER_TURN", "MT-DBL-4")


def test_mt_dbl_4_one_double_per_turn_drawn_double_is_unplayable() -> None:
    g = pos(
        rules(max_doubles_per_turn=1),
        hands=["5-5 7-7 1-2", "0-1", "0-2", "0-3"],
        boneyard="9-9 3-4",
        trains={"p0": "12-5", "m0": "12-9"},
    )
    play(g, "5-5@p0")
    assert legal(g) == ["draw"]  # 7-7 is a second double, and fits nowhere anyway
    assert typed(play(g, "draw")) == typed(
        [TileDrawn(0, t("9-9"), "move"), MarkerPlaced(0), TurnStarted(1)]
    )
    assert hand(g, 0) == "1-2 7-7 9-9"
    assert g.open_doubles() == [(P0, 5, 0)]
    assert g.markers == [True, False, False, False]


@pytest.mark.parametrize("most", [0, 1])
def test_mt_dbl_4_drawn_double_after_a_drawn_double(most: int) -> None:
    # A plain turn: draw 7-7 and play it (the turn's first double), owe, draw 5-5.
    g = pos(
        rules(max_doubles_per_turn=most),
        hands=["1-2", "0-1", "0-2", "0-3"],
        boneyard="7-7 5-5 3-3",
        trains={"p0": "12-5", "m0": "12-7"},
    )
    play(g, "draw", "7-7@m0")
    assert legal(g) == ["draw"]
    events = play(g, "draw")
    if most == 0:  # unlimited: the second double must be played, owing again
        assert typed(events) == typed([TileDrawn(0, t("5-5"), "move")])
        assert legal(g) == ["5-5@p0"]
    else:  # one per turn: the drawn double is unplayable
        assert typed(events) == typed(
            [TileDrawn(0, t("5-5"), "move"), MarkerPlaced(0), TurnStarted(1)]
        )
        assert g.open_doubles() == [(M0, 7, 0)]


def test_mt_dbl_4_one_double_per_turn_held_double_is_no_payment() -> None:
    g = pos(
        rules(max_doubles_per_turn=1),
        hands=["5-5 9-9 1-2", "0-1", "0-2", "0-3"],
        boneyard="3-4 1-1",
        trains={"p0": "12-5", "m0": "12-9"},
    )
    play(g, "5-5@p0")
    assert legal(g) == ["draw"]
    illegal(g, "9-9@m0", "ONE_DOUBLE_PER_TURN", "MT-DBL-4")


def test_mt_dbl_4_one_double_per_turn_counts_in_a_chain_first_turn() -> None:
    g = pos(
        engine.preset("pagat").with_options(first_player="seat0", max_doubles_per_turn=1),
        hands=["5-12 5-5 5-7 7-7 7-9", "0-1", "0-2", "0-3"],
        boneyard="1-1 1-2",
        first_turns_done=False,
    )
    play(g, "5-12@p0", "5-5@p0", "5-7@p0")
    assert legal(g) == ["7-9@p0", "end"]
    illegal(g, "7-7@p0", "ONE_DOUBLE_PER_TURN", "MT-DBL-4")


# ---------------------------------------------------------------- MT-DBL-5
# Double-six set, engine 6-6. The tiles carrying a 5: 0-5 1-5 2-5 3-5 4-5 5-5 5-6.
# ("or the engine" cannot decide a case: the only double carrying the engine's
# number is the engine itself, so the engine counts only toward its own number.)
ALL_FIVES_BUT_5_5 = {"p0": "6-5 5-0 0-1 1-5 5-2 2-3 3-5", "m0": "6-4 4-5", "p2": "6-1"}


def test_mt_dbl_5_dead_double_frees_the_owed_tile_even_under_cover_own() -> None:
    g = pos(
        SIX.with_options(double_followup="cover_own"),
        hands=["5-5 1-4 0-0", "2-4", "0-3", "3-4"],
        boneyard="2-2 3-3",
        trains=ALL_FIVES_BUT_5_5,
        markers=[2],
    )
    assert typed(play(g, "5-5@p0")) == typed(
        [TilePlayed(0, t("5-5"), P0), DoubleSatisfied(P0, 5, True)]
    )
    assert g.open_doubles() == []
    assert (g.current_seat, g.owes) == (0, True)  # still owes a tile (MT-DBL-1)
    assert legal(g) == ["1-4@p2"]
    assert typed(play(g, "1-4@p2")) == typed([TilePlayed(0, t("1-4"), P2), TurnStarted(1)])
    # Nothing blocks seat 1.
    assert legal(g) == ["2-4@p2"]


def test_mt_dbl_5_dead_double_still_owes_a_tile() -> None:
    g = pos(
        SIX,
        hands=["5-5 0-0", "2-4", "0-3", "3-4"],
        boneyard="2-2 3-3",
        trains=ALL_FIVES_BUT_5_5,
    )
    play(g, "5-5@p0")
    assert g.open_doubles() == []
    assert legal(g) == ["draw"]
    assert typed(play(g, "draw")) == typed(
        [TileDrawn(0, t("2-2"), "move"), MarkerPlaced(0), TurnStarted(1)]
    )


def test_mt_dbl_5_double_with_a_tile_still_in_a_hand_is_not_dead() -> None:
    g = pos(
        SIX.with_options(double_followup="cover_own"),
        hands=["5-5 1-4 0-0", "2-4", "0-3", "4-5"],
        boneyard="2-2 3-3",
        trains={"p0": "6-5 5-0 0-1 1-5 5-2 2-3 3-5", "m0": "6-4", "p2": "6-1"},
        markers=[2],
    )
    assert typed(play(g, "5-5@p0")) == typed([TilePlayed(0, t("5-5"), P0)])
    assert g.open_doubles() == [(P0, 5, 0)]
    assert legal(g) == ["draw"]


def test_mt_dbl_5_owed_tile_placed_elsewhere_kills_the_double() -> None:
    g = pos(
        SIX,
        hands=["5-5 4-5 0-0", "2-4", "0-3", "3-4"],
        boneyard="2-2 3-3",
        trains={"p0": "6-5 5-0 0-1 1-5 5-2 2-3 3-5", "m0": "6-4"},
    )
    play(g, "5-5@p0")
    assert legal(g) == ["4-5@m0", "4-5@p0"]
    assert typed(play(g, "4-5@m0")) == typed(
        [TilePlayed(0, t("4-5"), M0), DoubleSatisfied(P0, 5, True), TurnStarted(1)]
    )
    assert g.open_doubles() == []


def test_mt_dbl_5_open_double_dies_when_the_last_tile_is_played_elsewhere() -> None:
    g = pos(
        SIX.with_options(open_doubles_block=False),
        hands=["0-0", "4-5 2-4", "0-3", "3-4"],
        boneyard="2-2 3-3",
        trains={"p0": "6-5 5-0 0-1 1-5 5-2 2-3 3-5 5-5", "m0": "6-4"},
        seat=1,
    )
    assert g.open_doubles() == [(P0, 5, 0)]
    assert legal(g) == ["2-4@m0", "4-5@m0"]
    assert typed(play(g, "4-5@m0")) == typed(
        [TilePlayed(1, t("4-5"), M0), DoubleSatisfied(P0, 5, True), TurnStarted(2)]
    )
    assert g.open_doubles() == []


# ---------------------------------------------------------------- MT-DBL-6


def owing(ruleset: Ruleset = STD, boneyard: str = "", seat3: str = "0-3") -> MexicanTrain:
    """Seat 0 has just played 5-5 on its train and holds nothing that pays."""
    g = pos(
        ruleset,
        hands=["5-5 1-2", "0-1", "0-2", seat3],
        boneyard=boneyard,
        trains={"p0": "12-5", "m0": "12-7"},
    )
    play(g, "5-5@p0")
    return g


def test_mt_dbl_6_owing_and_cannot_pay_draws_and_plays_where_allowed() -> None:
    g = owing(boneyard="7-9 3-3")
    assert legal(g) == ["draw"]
    assert typed(play(g, "draw")) == typed([TileDrawn(0, t("7-9"), "move")])
    assert legal(g) == ["7-9@m0"]  # any_train: it need not cover the double
    assert typed(play(g, "7-9@m0")) == typed([TilePlayed(0, t("7-9"), M0), TurnStarted(1)])
    assert g.open_doubles() == [(P0, 5, 0)]
    assert g.markers == [False, False, False, False]


def test_mt_dbl_6_drawn_tile_unplaceable_marker_and_double_stays_open() -> None:
    g = owing(boneyard="3-3 7-9")
    assert typed(play(g, "draw")) == typed(
        [TileDrawn(0, t("3-3"), "move"), MarkerPlaced(0), TurnStarted(1)]
    )
    assert hand(g, 0) == "1-2 3-3"
    assert g.markers == [True, False, False, False]
    assert g.open_doubles() == [(P0, 5, 0)]
    assert [str(x) for x in g.boneyard_tiles()] == ["7-9"]


def test_mt_dbl_6_cover_own_drawn_tile_must_cover_the_double() -> None:
    g = owing(rules(double_followup="cover_own"), boneyard="7-9 3-3")
    assert typed(play(g, "draw")) == typed(
        [TileDrawn(0, t("7-9"), "move"), MarkerPlaced(0), TurnStarted(1)]
    )
    assert g.open_doubles() == [(P0, 5, 0)]


def test_mt_dbl_6_drawn_double_played_owes_again_with_one_more_draw() -> None:
    g = owing(boneyard="7-7 5-8 3-3")
    assert typed(play(g, "draw")) == typed([TileDrawn(0, t("7-7"), "move")])
    assert legal(g) == ["7-7@m0"]
    assert typed(play(g, "7-7@m0")) == typed([TilePlayed(0, t("7-7"), M0)])
    assert (g.current_seat, g.owes) == (0, True)
    assert legal(g) == ["draw"]
    assert typed(play(g, "draw")) == typed([TileDrawn(0, t("5-8"), "move")])
    assert legal(g) == ["5-8@p0"]
    assert typed(play(g, "5-8@p0")) == typed(
        [TilePlayed(0, t("5-8"), P0), DoubleSatisfied(P0, 5, False), TurnStarted(1)]
    )
    assert g.open_doubles() == [(M0, 7, 0)]
    assert hand(g, 0) == "1-2"


def test_mt_dbl_6_drawn_double_on_a_plain_turn_owes_with_one_more_draw() -> None:
    # MT-DR-1 draw, then MT-DBL-6: the drawn double owes a tile, one more draw.
    g = pos(
        hands=["1-2", "0-1", "0-2", "0-3"],
        boneyard="7-7 7-9 3-3",
        trains={"p0": "12-5", "m0": "12-7"},
    )
    assert legal(g) == ["draw"]
    assert typed(play(g, "draw")) == typed([TileDrawn(0, t("7-7"), "move")])
    assert legal(g) == ["7-7@m0"]
    assert typed(play(g, "7-7@m0")) == typed([TilePlayed(0, t("7-7"), M0)])
    assert build_view(g).turn == TurnView(True, True, False)
    assert legal(g) == ["draw"]
    assert typed(play(g, "draw")) == typed([TileDrawn(0, t("7-9"), "move")])
    assert build_view(g).turn == TurnView(True, True, False)
    assert legal(g) == ["7-9@m0"]
    assert typed(play(g, "7-9@m0")) == typed(
        [TilePlayed(0, t("7-9"), M0), DoubleSatisfied(M0, 7, False), TurnStarted(1)]
    )
    assert [str(x) for x in g.boneyard_tiles()] == ["3-3"]


def drew_this_turn(game: MexicanTrain) -> bool:
    """API.md ``turn.drewThisTurn`` as the seat to move, a spectator and the
    state's reload all see it."""
    seat = game.current_seat
    turn = build_view(game, seat).turn
    assert turn is not None
    assert build_view(game).turn == turn
    assert build_view(engine.load(game.to_bytes()), seat).turn == turn
    return turn.drew_this_turn


def test_mt_dbl_6_drew_this_turn_stays_true_after_a_drawn_double_owes_again() -> None:
    # API.md: drewThisTurn is true once the seat has drawn during this turn, and
    # still true after a drawn double created a new debt that permits another
    # draw (MT-DBL-6). It used to turn false when the drawn double was played.
    g = pos(
        hands=["1-2", "0-1", "0-2", "0-3"],
        boneyard="7-7 7-9 3-3",
        trains={"p0": "12-5", "m0": "12-7"},
    )
    assert not drew_this_turn(g)
    play(g, "draw")
    assert drew_this_turn(g)
    play(g, "7-7@m0")
    assert (g.current_seat, g.owes, legal(g)) == (0, True, ["draw"])
    assert drew_this_turn(g)
    play(g, "draw")
    assert (g.current_seat, legal(g)) == (0, ["7-9@m0"])
    assert drew_this_turn(g)
    play(g, "7-9@m0")
    assert g.current_seat == 1
    assert not drew_this_turn(g)


def test_mt_dbl_6_drew_this_turn_after_a_drawn_double_paid_for_a_held_double() -> None:
    # Owing for 5-5, seat 0 draws 7-7 and plays it (a new debt), draws again and
    # cannot place 7-9 (MT-DBL-4: not on the newer double): marker on, turn over.
    g = owing(boneyard="7-7 7-9 3-3")
    assert not drew_this_turn(g)
    play(g, "draw", "7-7@m0")
    assert (g.current_seat, legal(g)) == (0, ["draw"])
    assert drew_this_turn(g)
    play(g, "draw")
    assert (g.current_seat, g.markers[0]) == (1, True)
    assert not drew_this_turn(g)


def test_mt_dbl_6_drawn_double_owing_with_empty_boneyard_passes() -> None:
    # The new debt with nothing left to draw: a pass (MT-DR-2), and a draw is
    # refused for the empty boneyard, not as a second draw.
    g = owing(boneyard="7-7", seat3="5-6")
    play(g, "draw", "7-7@m0")
    assert (g.current_seat, legal(g)) == (0, ["pass"])
    assert drew_this_turn(g)
    illegal(g, "draw", "CANNOT_DRAW", "MT-DR-2")
    assert typed(play(g, "pass")) == typed([Passed(0), MarkerPlaced(0), TurnStarted(1)])
    assert not drew_this_turn(g)


def test_mt_dbl_6_second_draw_may_not_cover_the_newer_double() -> None:
    # MT-DBL-4 with blocking on: 7-10 fits only the newer double on m0.
    g = owing(boneyard="7-7 7-10 3-3")
    play(g, "draw", "7-7@m0")
    assert typed(play(g, "draw")) == typed(
        [TileDrawn(0, t("7-10"), "move"), MarkerPlaced(0), TurnStarted(1)]
    )
    assert g.open_doubles() == [(P0, 5, 0), (M0, 7, 0)]
    assert hand(g, 0) == "1-2 7-10"


def test_mt_dbl_6_owing_with_empty_boneyard_passes() -> None:
    g = owing(seat3="5-6")  # seat 3 can cover: the round is not blocked
    assert legal(g) == ["pass"]
    assert typed(play(g, "pass")) == typed([Passed(0), MarkerPlaced(0), TurnStarted(1)])
    assert g.open_doubles() == [(P0, 5, 0)]


# ---------------------------------------------------------------- MT-DBL-7


def chicken_foot_answered() -> MexicanTrain:
    """5-5 on seat 0's train answered three times: by seat 0 (its owed tile),
    seat 1 and seat 2."""
    g = pos(
        CHICKEN,
        hands=["5-5 5-9 9-11 6-8 3-7", "5-6 6-12 9-10", "5-7 3-4", "12-1 2-2"],
        boneyard="0-1 0-2",
        trains={"p0": "12-5", "m0": "12-7"},
    )
    play(g, "5-5@p0")
    assert legal(g) == ["3-7@m0", "5-9@p0"]
    assert typed(play(g, "5-9@p0")) == typed([TilePlayed(0, t("5-9"), P0), TurnStarted(1)])
    assert g.open_doubles() == [(P0, 5, 1)]
    assert g.open_ends[0] == [5, 9]
    # One answer is not enough: the double still blocks, its branch too.
    assert legal(g) == ["5-6@p0"]
    illegal(g, "9-10@p0.1", "MUST_COVER_DOUBLE", "MT-DBL-3")
    illegal(g, "6-12@p1", "MUST_COVER_DOUBLE", "MT-DBL-3")
    assert typed(play(g, "5-6@p0")) == typed([TilePlayed(1, t("5-6"), P0), TurnStarted(2)])
    assert g.open_doubles() == [(P0, 5, 2)]
    assert legal(g) == ["5-7@p0"]
    assert typed(play(g, "5-7@p0")) == typed(
        [TilePlayed(2, t("5-7"), P0), DoubleSatisfied(P0, 5, False), TurnStarted(3)]
    )
    return g


def test_mt_dbl_7_chicken_foot_double_needs_three_answers() -> None:
    g = chicken_foot_answered()
    assert g.open_doubles() == []
    # The trunk ends at the double; the three answers start branches 1, 2, 3.
    assert g.open_ends[0] == [-1, 9, 6, 7]
    assert g.train_tiles_of(0, 0) == [Tile(12, 5), Tile(5, 5)]
    assert g.train_tiles_of(0, 1) == [Tile(5, 9)]
    assert g.train_tiles_of(0, 2) == [Tile(5, 6)]
    assert g.train_tiles_of(0, 3) == [Tile(5, 7)]


def test_mt_dbl_7_branches_are_addressed_by_end_and_the_trunk_is_closed() -> None:
    g = chicken_foot_answered()
    play(g, "1-12@p3")
    assert legal(g) == ["3-7@m0", "3-7@p0.3", "6-8@p0.2", "9-11@p0.1"]
    illegal(g, "9-11@p0", "NO_SUCH_TRAIN", "MT-DBL-7")
    illegal(g, "9-11@p0.4", "NO_SUCH_TRAIN", "MT-DBL-7")
    assert typed(play(g, "6-8@p0.2")) == typed(
        [TilePlayed(0, t("6-8"), TrainRef.seat(0, 2)), TurnStarted(1)]
    )
    assert g.open_ends[0] == [-1, 9, 8, 7]
    view = build_view(g)
    assert view.trains[0].open_ends == (9, 8, 7)
    assert view.trains[0].branches == (
        BranchView(0, None, (Tile(12, 5), Tile(5, 5)), None),
        BranchView(1, 0, (Tile(5, 9),), 9),
        BranchView(2, 0, (Tile(5, 6), Tile(6, 8)), 8),
        BranchView(3, 0, (Tile(5, 7),), 7),
    )


def test_mt_dbl_7_double_on_a_branch_grows_a_new_foot() -> None:
    # Branches keep their creation order: a foot on branch 2 adds 4, 5, 6.
    g = pos(
        CHICKEN,
        hands=["5-5 5-9 6-6 6-10 1-3", "5-6 6-11 0-1", "5-7 6-8 0-2", "12-1 6-9 0-3"],
        boneyard="2-2 3-3",
        trains={"p0": "12-5", "m0": "12-7"},
    )
    play(g, "5-5@p0", "5-9@p0", "5-6@p0", "5-7@p0", "1-12@p3")
    assert legal(g) == ["6-10@p0.2", "6-6@p0.2"]
    assert typed(play(g, "6-6@p0.2")) == typed([TilePlayed(0, t("6-6"), TrainRef.seat(0, 2))])
    assert legal(g) == ["6-10@p0.2"]
    play(g, "6-10@p0.2", "6-11@p0.2")
    assert g.open_doubles() == [(TrainRef.seat(0, 2), 6, 2)]
    assert g.open_ends[0] == [-1, 9, 6, 7, 10, 11]
    assert typed(play(g, "6-8@p0.2")) == typed(
        [
            TilePlayed(2, t("6-8"), TrainRef.seat(0, 2)),
            DoubleSatisfied(TrainRef.seat(0, 2), 6, False),
            TurnStarted(3),
        ]
    )
    view = build_view(g).trains[0]
    assert view.open_ends == (9, 7, 10, 11, 8)
    assert view.branches == (
        BranchView(0, None, (Tile(12, 5), Tile(5, 5)), None),
        BranchView(1, 0, (Tile(5, 9),), 9),
        BranchView(2, 0, (Tile(5, 6), Tile(6, 6)), None),
        BranchView(3, 0, (Tile(5, 7),), 7),
        BranchView(4, 2, (Tile(6, 10),), 10),
        BranchView(5, 2, (Tile(6, 11),), 11),
        BranchView(6, 2, (Tile(6, 8),), 8),
    )
    # Seat 3's 6-9 fits branch 1, but seat 0's train carries no marker (MT-TR-3).
    assert legal(g) == ["draw"]


def test_mt_dbl_7_chicken_foot_cover_own_first_answer_is_the_owed_tile() -> None:
    g = pos(
        CHICKEN.with_options(double_followup="cover_own"),
        hands=["5-5 5-9 3-7", "0-1", "0-2", "0-3"],
        boneyard="1-1 1-2",
        trains={"p0": "12-5", "m0": "12-7"},
    )
    play(g, "5-5@p0")
    assert legal(g) == ["5-9@p0"]
    assert typed(play(g, "5-9@p0")) == typed([TilePlayed(0, t("5-9"), P0), TurnStarted(1)])
    assert g.open_doubles() == [(P0, 5, 1)]


def test_mt_dbl_7_chicken_foot_player_who_cannot_answer_draws() -> None:
    g = pos(
        CHICKEN,
        hands=["0-1", "6-12", "0-2", "0-3"],
        boneyard="9-12 5-8",
        trains={"p0": "12-5 5-5"},
        seat=1,
    )
    assert legal(g) == ["draw"]
    assert typed(play(g, "draw")) == typed(
        [TileDrawn(1, t("9-12"), "move"), MarkerPlaced(1), TurnStarted(2)]
    )
    assert g.open_doubles() == [(P0, 5, 0)]


# ====================================================================== 2.7 end of a round
# ---------------------------------------------------------------- MT-END-1


def test_mt_end_1_last_tile_ends_the_round_and_scores() -> None:
    g = pos(
        hands=["5-9", "1-2 3-4", "0-0 6-6", "11-12"],
        boneyard="2-2",
        trains={"p0": "12-5"},
    )
    assert typed(play(g, "5-9@p0")) == typed(
        [
            TilePlayed(0, t("5-9"), P0),
            RoundEnded(1, DOMINO, (0, 10, 12, 23)),
            RoundStarted(2, Tile(11, 11), 1),
            TurnStarted(1),
        ]
    )
    assert g.round_scores == [[0], [10], [12], [23]]
    assert g.totals == [0, 10, 12, 23]
    assert (g.round, g.current_seat, g.over) == (2, 1, False)
    assert [g.hand_count(s) for s in range(4)] == [15, 15, 15, 15]
    assert g.markers == [False, False, False, False]
    assert g.open_doubles() == []
    assert g.open_ends == [[11]] * 5


# ---------------------------------------------------------------- MT-END-2


def test_mt_end_2_last_double_ends_the_round_owing_nothing() -> None:
    g = pos(
        hands=["5-5", "1-2", "0-3", "4-4"],
        boneyard="2-2",
        trains={"p0": "12-5"},
    )
    assert typed(play(g, "5-5@p0")) == typed(
        [
            TilePlayed(0, t("5-5"), P0),
            RoundEnded(1, DOMINO, (0, 3, 3, 8)),
            RoundStarted(2, Tile(11, 11), 1),
            TurnStarted(1),
        ]
    )


def test_mt_end_2_off_last_double_owes_a_tile_drawn_and_played() -> None:
    g = pos(
        rules(end_on_double=False),
        hands=["5-5", "1-2", "0-3", "4-4"],
        boneyard="5-8 2-2",
        trains={"p0": "12-5"},
    )
    assert typed(play(g, "5-5@p0")) == typed([TilePlayed(0, t("5-5"), P0)])
    assert (g.round, g.current_seat, g.owes, g.hand_count(0)) == (1, 0, True, 0)
    assert legal(g) == ["draw"]
    assert typed(play(g, "draw")) == typed([TileDrawn(0, t("5-8"), "move")])
    assert legal(g) == ["5-8@p0"]
    assert typed(play(g, "5-8@p0")) == typed(
        [
            TilePlayed(0, t("5-8"), P0),
            DoubleSatisfied(P0, 5, False),
            RoundEnded(1, DOMINO, (0, 3, 3, 8)),
            RoundStarted(2, Tile(11, 11), 1),
            TurnStarted(1),
        ]
    )


def test_mt_end_2_off_drawn_tile_unplayable_round_goes_on() -> None:
    g = pos(
        rules(end_on_double=False),
        hands=["5-5", "1-2", "0-3", "4-4"],
        boneyard="1-3 2-2",
        trains={"p0": "12-5"},
    )
    play(g, "5-5@p0")
    assert typed(play(g, "draw")) == typed(
        [TileDrawn(0, t("1-3"), "move"), MarkerPlaced(0), TurnStarted(1)]
    )
    assert (g.round, hand(g, 0)) == (1, "1-3")
    assert g.open_doubles() == [(P0, 5, 0)]


def test_mt_end_2_off_last_double_with_empty_boneyard_passes() -> None:
    g = pos(
        rules(end_on_double=False),
        hands=["5-5", "5-6", "0-3", "4-4"],
        trains={"p0": "12-5"},
    )
    play(g, "5-5@p0")
    assert legal(g) == ["pass"]
    assert typed(play(g, "pass")) == typed([Passed(0), MarkerPlaced(0), TurnStarted(1)])
    assert (g.round, g.hand_count(0)) == (1, 0)
    assert legal(g) == ["5-6@p0"]


def test_mt_end_2_off_last_double_nobody_covers_blocked_round_scores_zero() -> None:
    # Seat 0 has no tile left but did not go out; the round blocks and seat 0
    # scores its (empty) hand, 0, like every player scores theirs (MT-END-3).
    g = pos(
        rules(rounds=1, end_on_double=False),
        hands=["5-5", "1-2", "0-3", "4-4"],
        trains={"p0": "12-5", "p1": "12-7", "p2": "12-8", "p3": "12-9", "m0": "12-10"},
    )
    play(g, "5-5@p0")
    assert typed(play(g, "pass")) == typed(
        [
            Passed(0),
            MarkerPlaced(0),
            RoundEnded(1, BLOCKED, (0, 3, 3, 8)),
            GameEnded((0, 3, 3, 8), (0,), SEED),
        ]
    )


# ---------------------------------------------------------------- MT-END-3
# Every train started, no open end matching any hand: 5, 7, 8, 9 and 10.
SHUT = {"p0": "12-5", "p1": "12-7", "p2": "12-8", "p3": "12-9", "m0": "12-10"}


def test_mt_end_3_blocked_round_every_player_scores_their_hand() -> None:
    g = pos(ONE_ROUND, hands=["1-2 3-4", "0-0 1-1", "2-2", "6-6"], trains=SHUT)
    assert legal(g) == ["pass"]
    # Seat 2, one tile from going out, scores its hand like everyone.
    assert typed(play(g, "pass")) == typed(
        [
            Passed(0),
            MarkerPlaced(0),
            RoundEnded(1, BLOCKED, (10, 2, 4, 12)),
            GameEnded((10, 2, 4, 12), (1,), SEED),
        ]
    )
    assert g.over


def test_mt_end_3_blocked_round_mid_game_deals_the_next_round() -> None:
    g = pos(hands=["1-2 3-4", "0-0 1-1", "2-2", "6-6"], trains=SHUT)
    assert typed(play(g, "pass")) == typed(
        [
            Passed(0),
            MarkerPlaced(0),
            RoundEnded(1, BLOCKED, (10, 2, 4, 12)),
            RoundStarted(2, Tile(11, 11), 1),
            TurnStarted(1),
        ]
    )


def test_mt_end_3_not_blocked_while_a_tile_fits_an_unmarked_train() -> None:
    # Seat 1's 8-11 fits seat 2's train once seat 2's marker is on.
    g = pos(ONE_ROUND, hands=["1-2", "8-11 1-3", "1-1", "0-0"], trains=SHUT)
    assert typed(play(g, "pass")) == typed([Passed(0), MarkerPlaced(0), TurnStarted(1)])
    assert legal(g) == ["pass"]
    assert typed(play(g, "pass")) == typed([Passed(1), MarkerPlaced(1), TurnStarted(2)])
    assert typed(play(g, "pass")) == typed([Passed(2), MarkerPlaced(2), TurnStarted(3)])
    assert typed(play(g, "pass")) == typed([Passed(3), MarkerPlaced(3), TurnStarted(0)])
    assert typed(play(g, "pass")) == typed([Passed(0), TurnStarted(1)])
    assert legal(g) == ["8-11@p2"]
    # Now nothing fits anywhere: blocked at the end of this turn.
    assert typed(play(g, "8-11@p2")) == typed(
        [
            TilePlayed(1, t("8-11"), P2),
            RoundEnded(1, BLOCKED, (3, 4, 2, 0)),
            GameEnded((3, 4, 2, 0), (3,), SEED),
        ]
    )


def test_mt_end_3_not_blocked_while_a_first_turn_holds_a_tile_back() -> None:
    # Chain first turns (pagat): seat 1's 10-11 fits only the Mexican train,
    # which its first turn may not use; it counts as placeable all the same.
    g = pos(
        engine.preset("pagat").with_options(first_player="seat0", rounds=1),
        hands=["1-2", "10-11 1-3", "1-1", "0-0"],
        trains=SHUT,
        first_turns_done=False,
    )
    assert typed(play(g, "pass")) == typed([Passed(0), MarkerPlaced(0), TurnStarted(1)])
    assert legal(g) == ["pass"]
    play(g, "pass", "pass", "pass", "pass")
    assert g.current_seat == 1
    assert legal(g) == ["10-11@m0"]
    assert typed(play(g, "10-11@m0"))[-2:] == typed(
        [RoundEnded(1, BLOCKED, (3, 4, 2, 0)), GameEnded((3, 4, 2, 0), (3,), SEED)]
    )


def test_mt_end_3_blocking_double_is_the_only_target() -> None:
    trains = {**SHUT, "p1": "12-7 7-7"}
    hands = ["10-11 1-2", "0-1", "0-2", "0-3"]
    g = pos(ONE_ROUND, hands=hands, trains=trains)
    assert legal(g) == ["pass"]  # 10-11 fits the Mexican train, but 7-7 blocks
    assert typed(play(g, "pass")) == typed(
        [
            Passed(0),
            MarkerPlaced(0),
            RoundEnded(1, BLOCKED, (24, 1, 2, 3)),
            GameEnded((24, 1, 2, 3), (1,), SEED),
        ]
    )
    g = pos(rules(rounds=1, open_doubles_block=False), hands=hands, trains=trains)
    assert legal(g) == ["10-11@m0"]


def test_mt_end_3_checked_after_the_knock_penalty_draws() -> None:
    # RULES.md reading: MT-KNOCK-1's "nothing if the round ended in that turn"
    # is a round ended by a domino during the turn; MT-END-3 puts the blocked
    # check after the penalty draws, so the penalty is drawn, then scored.
    trains = {"p0": "12-5", "p1": "12-7", "p2": "12-8", "p3": "12-10", "m0": "12-11"}
    g = pos(
        KNOCK.with_options(rounds=1),
        hands=["5-9 1-2", "0-1", "0-2", "0-3"],
        boneyard="3-4 6-6",
        trains=trains,
    )
    assert typed(play(g, "5-9@p0")) == typed(
        [
            TilePlayed(0, t("5-9"), P0),
            TileDrawn(0, t("3-4"), "penalty"),
            TileDrawn(0, t("6-6"), "penalty"),
            RoundEnded(1, BLOCKED, (22, 1, 2, 3)),
            GameEnded((22, 1, 2, 3), (1,), SEED),
        ]
    )


# ---------------------------------------------------------------- MT-KNOCK-1


def knock(ruleset: Ruleset = KNOCK, mine: str = "5-9 1-2", boneyard: str = "") -> MexicanTrain:
    return pos(
        ruleset,
        hands=[mine, "12-1", "0-2", "0-3"],
        boneyard=boneyard,
        trains={"p0": "12-5"},
    )


def test_mt_knock_1_unannounced_play_leaving_one_tile_draws_the_penalty() -> None:
    g = knock(boneyard="3-4 6-7 8-8")
    assert legal(g) == ["5-9@p0", "5-9@p0!"]
    assert typed(play(g, "5-9@p0")) == typed(
        [
            TilePlayed(0, t("5-9"), P0),
            TileDrawn(0, t("3-4"), "penalty"),
            TileDrawn(0, t("6-7"), "penalty"),
            TurnStarted(1),
        ]
    )
    assert hand(g, 0) == "1-2 3-4 6-7"
    assert g.markers == [False, False, False, False]  # a penalty places no marker
    assert [str(x) for x in g.boneyard_tiles()] == ["8-8"]
    assert g.version == 1  # penalty draws are not moves


def test_mt_knock_1_announced_play_has_no_penalty() -> None:
    g = knock(boneyard="3-4 6-7 8-8")
    assert typed(play(g, "5-9@p0!")) == typed([TilePlayed(0, t("5-9"), P0), TurnStarted(1)])
    assert hand(g, 0) == "1-2"
    assert len(g.boneyard_tiles()) == 3


def test_mt_knock_1_penalty_is_as_many_tiles_as_the_boneyard_holds() -> None:
    g = knock(KNOCK.with_options(knock_penalty=3), boneyard="3-4 6-7")
    assert typed(play(g, "5-9@p0")) == typed(
        [
            TilePlayed(0, t("5-9"), P0),
            TileDrawn(0, t("3-4"), "penalty"),
            TileDrawn(0, t("6-7"), "penalty"),
            TurnStarted(1),
        ]
    )
    assert g.boneyard_tiles() == []


def test_mt_knock_1_no_penalty_when_the_round_ends_that_turn() -> None:
    g = knock(KNOCK.with_options(rounds=1), mine="5-5 5-9", boneyard="3-4 6-7")
    assert legal(g) == ["5-5@p0", "5-5@p0!", "5-9@p0", "5-9@p0!"]
    play(g, "5-5@p0")  # unannounced, one tile left
    assert typed(play(g, "5-9@p0")) == typed(
        [
            TilePlayed(0, t("5-9"), P0),
            DoubleSatisfied(P0, 5, False),
            RoundEnded(1, DOMINO, (0, 13, 2, 3)),
            GameEnded((0, 13, 2, 3), (0,), SEED),
        ]
    )


def test_mt_knock_1_each_unannounced_play_adds_a_penalty() -> None:
    g = knock(mine="5-5 1-2", boneyard="5-8 0-4 0-5 0-6 0-7 0-8")
    play(g, "5-5@p0")  # unannounced, leaves 1-2: one penalty
    assert typed(play(g, "draw")) == typed([TileDrawn(0, t("5-8"), "move")])
    assert legal(g) == ["5-8@p0", "5-8@p0!"]
    assert typed(play(g, "5-8@p0")) == typed(
        [
            TilePlayed(0, t("5-8"), P0),
            DoubleSatisfied(P0, 5, False),
            *(TileDrawn(0, t(x), "penalty") for x in ("0-4", "0-5", "0-6", "0-7")),
            TurnStarted(1),
        ]
    )
    assert hand(g, 0) == "0-4 0-5 0-6 0-7 1-2"


def test_mt_knock_1_penalty_comes_after_a_drawn_tile_and_its_marker() -> None:
    # The drawn tile brings the hand back to two, but the unannounced play that
    # left one tile still costs its penalty at the end of the turn.
    g = knock(mine="5-5 1-2", boneyard="3-3 0-4 0-5 0-6")
    play(g, "5-5@p0")  # unannounced, leaves one tile
    assert typed(play(g, "draw")) == typed(
        [
            TileDrawn(0, t("3-3"), "move"),
            MarkerPlaced(0),
            TileDrawn(0, t("0-4"), "penalty"),
            TileDrawn(0, t("0-5"), "penalty"),
            TurnStarted(1),
        ]
    )
    assert hand(g, 0) == "0-4 0-5 1-2 3-3"


def test_mt_knock_1_flag_on_any_other_play_is_ignored() -> None:
    g = knock(mine="5-9 1-2 3-4", boneyard="0-4 0-5")
    assert legal(g) == ["5-9@p0"]
    assert typed(play(g, "5-9@p0!")) == typed([TilePlayed(0, t("5-9"), P0), TurnStarted(1)])
    assert hand(g, 0) == "1-2 3-4"


def test_mt_knock_1_rule_none_never_penalises() -> None:
    g = knock(STD, boneyard="3-4 6-7")
    assert legal(g) == ["5-9@p0"]
    assert typed(play(g, "5-9@p0")) == typed([TilePlayed(0, t("5-9"), P0), TurnStarted(1)])
    assert hand(g, 0) == "1-2"


# ====================================================================== 2.8 scoring
# ---------------------------------------------------------------- MT-SC-1


@pytest.mark.parametrize("blank", [0, 25, 50])
def test_mt_sc_1_hands_score_their_pips_and_0_0_per_double_blank_value(blank: int) -> None:
    g = pos(
        rules(rounds=1, double_blank_value=blank),
        hands=["5-9", "0-0 1-2", "3-4", "0-1"],
        boneyard="2-2",
        trains={"p0": "12-5"},
    )
    scores = (0, 3 + blank, 7, 1)
    assert typed(play(g, "5-9@p0")) == typed(
        [
            TilePlayed(0, t("5-9"), P0),
            RoundEnded(1, DOMINO, scores),
            GameEnded(scores, (0,), SEED),
        ]
    )


def test_mt_sc_1_blocked_round_scores_0_0_too() -> None:
    g = pos(
        rules(rounds=1, double_blank_value=50),
        hands=["1-2", "0-0", "2-2", "0-1"],
        trains=SHUT,
    )
    assert typed(play(g, "pass"))[-2:] == typed(
        [RoundEnded(1, BLOCKED, (3, 50, 4, 1)), GameEnded((3, 50, 4, 1), (3,), SEED)]
    )


# ---------------------------------------------------------------- MT-SC-2


def test_mt_sc_2_scores_add_up_and_the_lowest_total_wins() -> None:
    g = pos(
        rules(rounds=3),
        hands=["5-9", "1-2", "0-1", "6-8"],
        boneyard="2-2",
        trains={"p0": "10-5"},
        round=3,
        round_scores=[[10, 20], [0, 5], [30, 0], [7, 7]],
    )
    assert typed(play(g, "5-9@p0")) == typed(
        [
            TilePlayed(0, t("5-9"), P0),
            RoundEnded(3, DOMINO, (0, 3, 1, 14)),
            GameEnded((30, 8, 31, 28), (1,), SEED),
        ]
    )
    assert g.round_scores == [[10, 20, 0], [0, 5, 3], [30, 0, 1], [7, 7, 14]]
    assert g.totals == [30, 8, 31, 28]
    assert (g.over, g.winners) == (True, (1,))
    assert g.legal_moves() == []
    with pytest.raises(engine.GameOverError):
        play(g, "draw")
    view = build_view(g)
    assert (view.over, view.winners, view.current_seat, view.turn) == (True, (1,), None, None)
    assert [pl.score for pl in view.players] == [30, 8, 31, 28]


@pytest.mark.parametrize(("first_player", "rounds"), [("seat0", 3), ("draw", 5)])
def test_mt_sc_2_shortened_game_plays_k_rounds_with_rotating_starters(
    first_player: str, rounds: int
) -> None:
    g = engine.new_game(
        engine.preset("standard").with_options(first_player=first_player, rounds=rounds),
        4,
        "shortened",
    )
    assert g.rounds_total == rounds
    assert build_view(g).rounds_total == rounds
    events = play_out(g)
    started = [e for e in events if type(e) is RoundStarted]
    first = started[0].starter
    if first_player == "seat0":
        assert first == 0
    # Each round's engine is one lower; each starter is the seat after the last one.
    assert started == [
        RoundStarted(r, Tile(13 - r, 13 - r), (first + r - 1) % 4) for r in range(1, rounds + 1)
    ]
    ended = [e for e in events if type(e) is RoundEnded]
    assert [e.round for e in ended] == list(range(1, rounds + 1))
    assert [list(x) for x in zip(*(e.scores for e in ended), strict=True)] == g.round_scores
    assert [type(e) for e in events].count(GameEnded) == 1
    assert typed(events[-1:]) == typed([GameEnded(tuple(g.totals), g.winners, "shortened")])
    assert g.round == rounds


# ---------------------------------------------------------------- MT-SC-3


def last_round(round_scores: list[list[int]], hands: list[str], seat: int) -> MexicanTrain:
    """Round 3 of 3 (engine 10-10); the seat to move goes out with 5-9 on its train."""
    return pos(
        rules(rounds=3),
        hands=hands,
        boneyard="2-2",
        trains={f"p{seat}": "10-5"},
        seat=seat,
        round=3,
        round_scores=round_scores,
    )


def test_mt_sc_3_tie_on_total_most_rounds_won_wins() -> None:
    g = last_round([[0, 0], [15, 10], [50, 50], [40, 40]], ["11-12 0-2", "5-9", "1-2", "1-3"], 1)
    events = play(g, "5-9@p1")
    assert g.totals == [25, 25, 103, 84]
    assert typed(events[-1:]) == typed([GameEnded((25, 25, 103, 84), (0,), SEED)])


def test_mt_sc_3_then_the_lowest_single_non_zero_round_wins() -> None:
    g = last_round([[0, 20], [0, 22], [50, 50], [40, 40]], ["1-4", "1-2", "5-9", "0-3"], 2)
    events = play(g, "5-9@p2")
    assert g.totals == [25, 25, 100, 83]
    assert typed(events[-1:]) == typed([GameEnded((25, 25, 100, 83), (1,), SEED)])


def test_mt_sc_3_still_tied_every_tied_player_wins() -> None:
    g = last_round([[0, 20], [0, 20], [50, 50], [40, 40]], ["1-4", "2-3", "5-9", "0-3"], 2)
    events = play(g, "5-9@p2")
    assert g.totals == [25, 25, 100, 83]
    assert typed(events[-1:]) == typed([GameEnded((25, 25, 100, 83), (0, 1), SEED)])
    assert g.winners == (0, 1)


def test_mt_sc_3_a_zero_from_a_blocked_round_counts_as_a_round_won() -> None:
    # Seat 1 holds only 0-0 (worth 0) when the last round blocks: 2 rounds at 0.
    g = pos(
        rules(rounds=3),
        hands=["1-4", "0-0", "2-3", "1-3"],
        trains={"p0": "10-5", "p1": "10-6", "p2": "10-7", "p3": "10-8", "m0": "10-9"},
        round=3,
        round_scores=[[0, 20], [0, 25], [50, 50], [40, 40]],
    )
    assert typed(play(g, "pass")) == typed(
        [
            Passed(0),
            MarkerPlaced(0),
            RoundEnded(3, BLOCKED, (5, 0, 5, 4)),
            GameEnded((25, 25, 105, 84), (1,), SEED),
        ]
    )


# ====================================================================== 2.9 visibility
# ---------------------------------------------------------------- MT-VIS-1


def public_position() -> MexicanTrain:
    return pos(
        hands=["5-9 1-2", "6-12 7-8 3-4", "0-2", "0-3 0-4"],
        boneyard="8-9 1-1 2-2",
        trains={"p0": "12-5 5-5", "m0": "12-7"},
        markers=[3],
        seat=1,
        round_scores=[[], [], [], []],
    )


def test_mt_vis_1_everything_public_is_in_every_view() -> None:
    g = public_position()
    play(g, "draw")  # seat 1 draws 8-9: it fits nowhere, marker on
    view = build_view(g)
    assert (view.version, view.over, view.round, view.rounds_total) == (1, False, 1, 13)
    assert (view.engine, view.current_seat, view.boneyard_count) == (Tile(12, 12), 2, 2)
    assert view.players == (
        PlayerView(0, 2, False, 0, ()),
        PlayerView(1, 4, True, 0, ()),
        PlayerView(2, 1, False, 0, ()),
        PlayerView(3, 2, True, 0, ()),
    )
    assert view.trains == (
        TrainView(P0, (Tile(12, 5), Tile(5, 5)), (5,), False),
        TrainView(P1, (), (12,), True),
        TrainView(P2, (), (12,), False),
        TrainView(P3, (), (12,), True),
        TrainView(M0, (Tile(12, 7),), (7,), False),
    )
    assert view.open_doubles == (OpenDoubleView(P0, 5, 0),)
    assert view.turn == TurnView(False, False, False)
    assert (view.hand, view.viewer_seat, view.winners) == (None, None, ())
    # A seat's view holds the same public data, plus its own hand.
    for seat in range(4):
        mine = build_view(g, seat)
        assert dataclasses.replace(mine, hand=None, viewer_seat=None) == view


def test_mt_vis_1_move_log_shows_plays_with_tiles_and_draws_without() -> None:
    g = public_position()
    drawn: list[Any] = play(g, "draw")
    g2 = pos(
        hands=["0-1", "5-6 6-12", "0-2", "0-3"],
        boneyard="1-1",
        trains={"p0": "12-5 5-5"},
        seat=1,
    )
    played: list[Any] = play(g2, "5-6@p0")
    assert typed(for_seat(e, None) for e in drawn) == typed(
        [TileDrawn(1, None, "move"), MarkerPlaced(1), TurnStarted(2)]
    )
    assert typed(for_seat(e, None) for e in played) == typed(
        [TilePlayed(1, t("5-6"), P0), DoubleSatisfied(P0, 5, False), TurnStarted(2)]
    )


# ---------------------------------------------------------------- MT-VIS-2


def test_mt_vis_2_a_seat_view_has_its_own_hand_and_no_other() -> None:
    g = public_position()
    for seat in range(4):
        view = build_view(g, seat)
        assert view.viewer_seat == seat
        assert view.hand == tuple(g.hand(seat))
    assert build_view(g, 1).hand == tuple(tiles("3-4 6-12 7-8"))
    assert build_view(g).hand is None


def test_mt_vis_2_a_drawn_tile_is_seen_by_the_drawer_only() -> None:
    g = public_position()
    (drawn, *_rest) = play(g, "draw")
    assert drawn == TileDrawn(1, t("8-9"), "move")
    assert for_seat(drawn, 1) == TileDrawn(1, t("8-9"), "move")
    for other in (0, 2, 3, None):
        assert for_seat(drawn, other) == TileDrawn(1, None, "move")
    penalty = TileDrawn(0, t("3-4"), "penalty")
    assert for_seat(penalty, 0) == penalty
    assert for_seat(penalty, 2) == TileDrawn(0, None, "penalty")


# ---------------------------------------------------------------- MT-VIS-3


def test_mt_vis_3_no_trace_of_other_hands_or_the_boneyard_order() -> None:
    # Same public position; seat 0's tiles and the boneyard order differ.
    common: dict[str, Any] = {"trains": {"p0": "12-5"}, "markers": [2], "seat": 1}
    a = pos(hands=["5-9 1-2", "6-12", "0-2", "0-3"], boneyard="3-4 6-7 8-8", **common)
    b = pos(hands=["3-4 6-7", "6-12", "0-2", "0-3"], boneyard="8-8 1-2 5-9", **common)
    for seat in (1, 2, 3, None):
        va, vb = build_view(a, seat), build_view(b, seat)
        assert va == vb
        assert repr(va) == repr(vb)
    assert build_view(a, 0) != build_view(b, 0)


# ---------------------------------------------------------------- MT-FAIR-1


def test_mt_fair_1_seed_sha256_always_seed_only_once_over() -> None:
    g = pos(ONE_ROUND, hands=["5-9", "1-2", "0-3", "4-4"], boneyard="2-2", trains={"p0": "12-5"})
    sha = hashlib.sha256(SEED.encode()).hexdigest()
    for seat in (0, 1, 2, 3, None):
        view = build_view(g, seat)
        assert (view.seed_sha256, view.seed) == (sha, None)
    events = play(g, "5-9@p0")
    assert typed(events[-1:]) == typed([GameEnded((0, 3, 3, 8), (0,), SEED)])
    for seat in (0, 1, 2, 3, None):
        view = build_view(g, seat)
        assert (view.seed_sha256, view.seed) == (sha, SEED)


def test_mt_fair_1_new_game_commits_to_its_seed() -> None:
    g = engine.new_game("standard", 4, "naïve seed")
    view = build_view(g, 0)
    assert view.seed_sha256 == hashlib.sha256("naïve seed".encode()).hexdigest()
    assert view.seed is None


def test_mt_fair_1_every_deal_is_reproducible_from_the_seed() -> None:
    a = engine.new_game(STD, 4, "fair")
    b = engine.new_game(STD, 4, "fair")
    assert a == b
    order = deal_order("fair", 1, 12)
    for seat in range(4):
        assert a.hand(seat) == sorted(order[seat * 15 : seat * 15 + 15])
    assert a.boneyard_tiles() == order[60:]
    # The next round is dealt from the same seed, label round:2:deal.
    g = pos(hands=["5-9", "1-2", "0-3", "4-4"], boneyard="2-2", trains={"p0": "12-5"})
    play(g, "5-9@p0")
    order = deal_order(SEED, 2, 11)
    for seat in range(4):
        assert g.hand(seat) == sorted(order[seat * 15 : seat * 15 + 15])
    assert g.boneyard_tiles() == order[60:]
