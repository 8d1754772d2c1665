"""RULES.md 3.1-3.3: the line games (Block, Draw, All Fives, Bergen, Matador,
teams).

Every test names the rule id it checks and starts from an exact position:
a seed whose shuffle the test recomputes (API.md "Deal shuffle"), or a
position spelled out with ``tests.line_scenario.position``. A refused move
must raise the documented error with its CL- rule id and change nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from engine.errors import (
    ILLEGAL_REASONS,
    CorruptStateError,
    DealDoesNotFitError,
    GameOverError,
    IllegalMoveError,
    MoveError,
    NotYourTurnError,
    RulesetError,
)
from engine.events import (
    GameEnded,
    Passed,
    PointsReason,
    PointsScored,
    RoundEnded,
    RoundEndReason,
    RoundStarted,
    TileDrawn,
    TilePlayed,
    TurnStarted,
    for_seat,
)
from engine.game import GameStatus
from engine.games.line import PRESETS, SPECS, LineGame, LineRules, line_rules
from engine.games.line.rules import GAMES, BlockedScoring, Opening
from engine.moves import Move, TrainKind, TrainRef
from engine.shuffle import shuffle
from engine.tiles import TILES, Tile, canonical_ids
from engine.view import GameView, LineView, TeamView
from tests.line_scenario import line_text, notations, play, position, rules

L0 = TrainRef(TrainKind.LINE, 0, 0)
L1 = TrainRef(TrainKind.LINE, 0, 1)
DOMINO, BLOCKED = RoundEndReason.DOMINO, RoundEndReason.BLOCKED


def t(text: str) -> Tile:
    return Tile.parse(text)


def refuse(
    game: LineGame,
    text: str,
    reason: str | None,
    rule: str,
    error: type[MoveError] = IllegalMoveError,
    seat: int | None = None,
) -> MoveError:
    """``text`` is refused with ``error`` naming ``reason`` and ``rule``, and
    the game is exactly as before."""
    before = game.to_dict()
    legal = list(game.legal_moves())
    with pytest.raises(error) as info:
        game.apply(Move.parse(text), seat)
    assert info.value.rule == rule, str(info.value)
    if reason is not None:
        assert info.value.reason == reason, str(info.value)
        assert reason in ILLEGAL_REASONS
    assert game.to_dict() == before, "a refused move changed the state"
    assert game.legal_moves() == legal
    return info.value


def dealt(seed: str, hand_no: int, players: int, hand_size: int = 7, set_max: int = 6):
    """API.md's deal, recomputed: each seat's hand and the boneyard (first drawn first)."""
    order = [TILES[i] for i in shuffle(seed, f"round:{hand_no}:deal", list(canonical_ids(set_max)))]
    hands = [order[s * hand_size : (s + 1) * hand_size] for s in range(players)]
    return hands, order[players * hand_size :]


def first_hand_opener(hands: list[list[Tile]]) -> tuple[int, Tile]:
    """CL-START-1 written again from the rule: the highest double, else the
    heaviest tile (a + b, then the higher number)."""
    doubles = [(tile.a, seat, tile) for seat, h in enumerate(hands) for tile in h if tile.is_double]
    if doubles:
        _, seat, tile = max(doubles)
        return seat, tile
    _, _, seat, tile = max((x.a + x.b, x.b, s, x) for s, h in enumerate(hands) for x in h)
    return seat, tile


def tiles_in(value: object) -> Iterator[Tile]:
    """Every tile anywhere inside a view (dataclasses, tuples, dicts)."""
    if isinstance(value, Tile):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from tiles_in(getattr(value, f.name))
    elif isinstance(value, tuple | list):
        for item in value:
            yield from tiles_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from tiles_in(item)


# --------------------------------------------------------------------- CL-SET-1


MT_ONLY = ("rounds", "first_player", "double_blank_value", "mexican_trains", "first_engine")


@pytest.mark.parametrize("game", list(GAMES))
@pytest.mark.parametrize("option", MT_ONLY)
def test_cl_set_1_mexican_train_options_are_refused_by_name(game: str, option: str) -> None:
    base = PRESETS[game]
    for build in (
        lambda: base.with_options(**{option: 1}),
        lambda: LineRules.from_dict({**base.to_dict(), option: 1}),
    ):
        with pytest.raises(RulesetError) as info:
            build()
        assert info.value.rule == "CL-SET-1"
        assert f"'{option}' is not an option of {game}" in info.value.message


@pytest.mark.parametrize(
    ("game", "option", "value"),
    [
        ("bergen", "teams", False),
        ("bergen", "teams", True),
        ("bergen", "blocked_scoring", "difference"),
        ("bergen", "boneyard_reserve", 0),
        ("block", "boneyard_reserve", 2),
        ("matador", "teams", True),
    ],
)
def test_cl_set_1_an_option_the_game_lacks_is_refused_even_at_its_default(
    game: str, option: str, value: object
) -> None:
    for build in (
        lambda: PRESETS[game].with_options(**{option: value}),
        lambda: LineRules.from_dict({"game": game, option: value}),
        lambda: LineRules(game=game, **{option: value}),  # type: ignore[arg-type]
    ):
        with pytest.raises(RulesetError) as info:
            build()
        assert info.value.rule == "CL-SET-1"
        assert option in info.value.message
        assert game in info.value.message


@pytest.mark.parametrize("option", ["hand_size", "target_score"])
def test_cl_set_1_zero_hand_size_or_target_score_is_refused(option: str) -> None:
    with pytest.raises(RulesetError) as info:
        PRESETS["draw"].with_options(**{option: 0})
    assert info.value.rule == "CL-SET-1"
    assert option in info.value.message


def test_cl_set_1_set_max_from_6_to_12() -> None:
    assert PRESETS["block"].with_options(set_max=12).set_max == 12
    for bad in (5, 13, 18):
        with pytest.raises(RulesetError) as info:
            PRESETS["block"].with_options(set_max=bad)
        assert info.value.rule == "CL-SET-1"


def test_cl_set_1_players_2_to_4_with_double_six_more_with_a_larger_set() -> None:
    for n in (2, 3, 4):
        assert PRESETS["block"].resolve(n) == PRESETS["block"]
    for n in (1, 5):
        with pytest.raises(RulesetError) as info:
            PRESETS["block"].resolve(n)
        assert info.value.rule == "CL-SET-1"
    nine = PRESETS["draw"].with_options(set_max=9)
    assert nine.resolve(7) == nine  # 7 x 7 = 49 <= 55
    with pytest.raises(DealDoesNotFitError) as deal:
        nine.resolve(8)  # 56 > 55
    assert deal.value.rule == "CL-DEAL-1"


def test_cl_set_1_each_game_has_only_its_options() -> None:
    expected = {
        "block": {"set_max", "hand_size", "opening", "blocked_scoring", "target_score", "teams"},
        "draw": {
            "set_max",
            "hand_size",
            "opening",
            "boneyard_reserve",
            "blocked_scoring",
            "target_score",
            "teams",
        },
        "bergen": {"set_max", "hand_size", "opening", "target_score"},
        "matador": {
            "set_max",
            "hand_size",
            "opening",
            "boneyard_reserve",
            "blocked_scoring",
            "target_score",
        },
    }
    expected["all_fives"] = expected["draw"]
    for game, options in expected.items():
        assert set(SPECS[game].options) == options
        assert set(PRESETS[game].to_dict()) == options | {"preset", "game"}


@pytest.mark.parametrize("name", list(PRESETS))
def test_cl_set_1_presets_round_trip_through_to_dict(name: str) -> None:
    r = PRESETS[name]
    data = r.to_dict()
    assert all(isinstance(v, str | int | bool) for v in data.values())
    assert LineRules.from_dict(data) == r
    assert hash(LineRules.from_dict(data)) == hash(r)


def test_cl_set_1_defaults_of_each_game() -> None:
    assert {g: PRESETS[g].target_score for g in GAMES} == {
        "block": 100,
        "draw": 100,
        "all_fives": 250,
        "bergen": 15,
        "matador": 100,
    }
    draw = PRESETS["draw"]
    assert (draw.set_max, draw.hand_size, draw.opening, draw.boneyard_reserve) == (
        6,
        7,
        Opening.HIGHEST_DOUBLE,
        0,
    )
    assert draw.blocked_scoring is BlockedScoring.DIFFERENCE
    assert draw.teams is False
    assert PRESETS["draw_teams"].teams is True
    assert PRESETS["bergen"].teams is None
    assert PRESETS["bergen"].blocked_scoring is None


def test_cl_set_1_game_alone_plays_its_preset_and_another_games_preset_is_refused() -> None:
    assert line_rules("all_fives") == PRESETS["all_fives"]
    assert line_rules("draw", "draw_teams", target_score=150).target_score == 150
    with pytest.raises(RulesetError) as info:
        line_rules("block", "bergen")
    assert info.value.rule == "CL-SET-1"
    with pytest.raises(RulesetError):
        line_rules("block", "standard")
    with pytest.raises(RulesetError):
        PRESETS["block"].with_options(game="draw")
    with pytest.raises(RulesetError):
        line_rules("mexican_train")


def test_cl_set_1_bad_values_are_refused() -> None:
    for option, value in (
        ("opening", "seat1"),
        ("blocked_scoring", "half"),
        ("boneyard_reserve", 1),
        ("teams", "yes"),
        ("hand_size", "7"),
        ("target_score", True),
    ):
        with pytest.raises(RulesetError):
            PRESETS["draw"].with_options(**{option: value})


# --------------------------------------------------------------------- CL-DEAL-1


@pytest.mark.parametrize(("players", "boneyard"), [(2, 14), (3, 7), (4, 0)])
def test_cl_deal_1_deal_follows_the_shuffle(players: int, boneyard: int) -> None:
    game = LineGame(PRESETS["draw"], players, "railyard")
    hands, rest = dealt("railyard", 1, players)
    assert [game.hand(s) for s in range(players)] == [sorted(h) for h in hands]
    assert game.boneyard_tiles() == rest
    assert len(rest) == boneyard
    assert game.view(None).boneyard_count == boneyard
    assert game.opening_events[0] == RoundStarted(1, None, game.current_seat)


def test_cl_deal_1_the_boneyard_is_drawn_from_the_front() -> None:
    game = position("draw", hands=["6-6 5-5", "0-0"], line="3-4", boneyard="1-1 2-2 3-5", seed="x")
    assert game.apply(Move.parse("draw")) == [TileDrawn(0, t("1-1"))]


def test_cl_deal_1_each_hand_is_dealt_from_its_own_label() -> None:
    game = position("block", hands=["2-3", "6-6"], line="1-2", seed="railyard")
    play(game, "2-3@l1")  # domino: hand 2 is dealt
    hands, rest = dealt("railyard", 2, 2)
    assert game.round == 2
    assert [game.hand(s) for s in range(2)] == [sorted(h) for h in hands]
    assert game.boneyard_tiles() == rest


def test_cl_deal_1_a_deal_that_does_not_fit_is_refused() -> None:
    with pytest.raises(DealDoesNotFitError) as info:
        LineGame(PRESETS["block"].with_options(hand_size=8), 4, "x")
    err = info.value
    assert (err.reason, err.rule) == ("DEAL_DOES_NOT_FIT", "CL-DEAL-1")
    assert "32" in err.message
    assert "28" in err.message


def test_cl_deal_1_sleeping_tiles_count_in_the_boneyard() -> None:
    game = LineGame(PRESETS["block"], 2, "sleep")
    view = game.view(0)
    assert view.boneyard_count == 14
    assert not set(tiles_in(view)) & set(game.boneyard_tiles())


# --------------------------------------------------------------------- CL-VIS-1


def test_cl_vis_1_a_view_shows_its_own_hand_and_the_line_only() -> None:
    game = LineGame(PRESETS["draw"], 3, "vis")
    while game.version < 6:
        game.push(game.legal_moves()[0])
    line = set(game.line_tiles())
    for seat in (None, 0, 1, 2):
        view = game.view(seat)
        own = set() if seat is None else set(game.hand(seat))
        assert set(tiles_in(view)) <= line | own
        assert view.hand == (None if seat is None else tuple(game.hand(seat)))
        assert [p.hand_count for p in view.players] == [game.hand_count(s) for s in range(3)]
        assert view.seed is None
        assert view.seed_sha256 == game.seed_sha256


def test_cl_vis_1_a_draw_shows_that_a_tile_was_drawn_never_which() -> None:
    game = position("draw", hands=["6-6 5-5", "0-0"], line="3-4", boneyard="1-1 2-2 3-5")
    (drawn,) = game.apply(Move.parse("draw"))
    assert drawn == TileDrawn(0, t("1-1"))
    assert for_seat(drawn, 0) == drawn
    assert for_seat(drawn, 1) == TileDrawn(0, None)
    assert for_seat(drawn, None) == TileDrawn(0, None)


def test_cl_vis_1_sleeping_tiles_are_never_shown_not_even_after_the_hand() -> None:
    game = position("block", hands=["2-3", "6-6"], line="1-2", boneyard="0-0 4-4 1-1")
    events = play(game, "2-3@l1")
    sleeping = {t("0-0"), t("4-4"), t("1-1")}
    assert not sleeping & set(tiles_in(events))
    assert not sleeping & set(tiles_in(game.view(None)))


def test_cl_vis_1_the_seed_is_shown_once_the_game_is_over() -> None:
    game = position(
        "block", hands=["2-3", "6-6"], line="1-2", round=2, round_scores=[[95], [0]], seed="s"
    )
    assert game.view(0).seed is None
    play(game, "2-3@l1")
    assert game.view(None).seed == "s"


# --------------------------------------------------------------------- CL-LINE-1


def test_cl_line_1_the_opening_lays_its_low_half_left() -> None:
    game = position("block", hands=["3-6 1-2", "0-0 3-4"])
    assert notations(game) == ["1-2@l0", "3-6@l0"]
    events = play(game, "6-3@l0")
    assert events == [TilePlayed(0, t("3-6"), L0), TurnStarted(1)]
    assert game.view(0).line == LineView((Tile(3, 6),), (3, 6))


def test_cl_line_1_a_tile_fitting_both_ends_gives_two_moves() -> None:
    game = position("block", hands=["3-5 6-6", "0-5 0-3"], line="3-4 4-5")
    assert notations(game) == ["3-5@l0", "3-5@l1"]
    left = game.copy()
    play(left, "3-5@l0")
    assert (line_text(left), left.open_ends) == ("5-3 3-4 4-5", (5, 5))
    play(game, "3-5@l1")
    assert (line_text(game), game.open_ends) == ("3-4 4-5 5-3", (3, 3))


def test_cl_line_1_both_ends_showing_the_same_number_still_give_two_moves() -> None:
    game = position("block", hands=["1-4 2-3", "0-1"], line="4-4")
    assert notations(game) == ["1-4@l0", "1-4@l1"]
    events = play(game, "1-4@l1")
    assert events[0] == TilePlayed(0, t("1-4"), L1)
    assert (line_text(game), game.open_ends) == ("4-4 4-1", (4, 1))


def test_cl_line_1_a_double_lies_across_and_its_end_shows_its_number() -> None:
    game = position("block", hands=["5-5 0-0", "1-2"], line="2-5")
    play(game, "5-5@l1")
    assert (line_text(game), game.open_ends) == ("2-5 5-5", (2, 5))
    assert game.view(1).line == LineView((Tile(2, 5), Tile(5, 5)), (2, 5))


def test_cl_line_1_a_tile_joins_only_an_end_showing_one_of_its_numbers() -> None:
    game = position("block", hands=["3-3 1-2", "0-1"], line="2-5")
    refuse(game, "3-3@l0", "TILE_DOES_NOT_MATCH", "CL-LINE-1")
    refuse(game, "1-2@l1", "TILE_DOES_NOT_MATCH", "CL-LINE-1")
    refuse(game, "1-2@p0", "NO_SUCH_TRAIN", "CL-LINE-1")
    refuse(game, "1-2@m0", "NO_SUCH_TRAIN", "CL-LINE-1")
    refuse(game, "1-2@l2", "NO_SUCH_TRAIN", "CL-LINE-1")
    refuse(game, "4-4@l0", "TILE_NOT_IN_HAND", "CL-TURN-1")
    refuse(game, "1-2@l0:2", "EXPOSED_NUMBER", "CL-LINE-1")
    play(game, "2-1@l0")  # either order of the halves is the same tile
    assert game.open_ends == (1, 5)


def test_cl_line_1_the_opening_is_written_at_l0() -> None:
    game = position("block", hands=["3-6 1-2", "0-0"])
    refuse(game, "3-6@l1", "NO_SUCH_TRAIN", "CL-LINE-1")
    assert game.view(0).line == LineView((), ())


# --------------------------------------------------------------------- CL-START-1


@pytest.mark.parametrize("players", [2, 3, 4])
def test_cl_start_1_the_highest_double_opens_the_first_hand(players: int) -> None:
    for k in range(40):
        seed = f"open-{players}-{k}"
        game = LineGame(PRESETS["draw"], players, seed)
        seat, tile = first_hand_opener(dealt(seed, 1, players)[0])
        assert game.current_seat == seat
        assert game.legal_moves() == [Move.play(tile, L0)]
        assert game.opening_events == [RoundStarted(1, None, seat), TurnStarted(seat)]


def test_cl_start_1_without_a_double_the_heaviest_tile_opens() -> None:
    r = PRESETS["block"].with_options(hand_size=3)
    found = 0
    for k in range(60):
        seed = f"nodouble-{k}"
        hands = dealt(seed, 1, 2, hand_size=3)[0]
        if any(x.is_double for h in hands for x in h):
            continue
        found += 1
        game = LineGame(r, 2, seed)
        seat, tile = first_hand_opener(hands)
        assert (game.current_seat, game.legal_moves()) == (seat, [Move.play(tile, L0)])
    assert found >= 3


def test_cl_start_1_the_first_tile_must_be_the_one_the_rule_names() -> None:
    game = LineGame(PRESETS["block"], 2, "railyard")
    (only,) = game.legal_moves()
    other = next(x for x in game.hand(game.current_seat) if x != only.tile)
    err = refuse(game, f"{other}@l0", "MUST_OPEN_WITH", "CL-START-1")
    assert str(only.tile) in err.message


def test_cl_start_1_the_winner_opens_the_next_hand_with_any_tile() -> None:
    game = position("block", hands=["6-6 5-5", "2-3"], line="1-2", seat=1)
    events = play(game, "2-3@l1")
    assert events[-2:] == [RoundStarted(2, None, 1), TurnStarted(1)]
    assert game.current_seat == 1
    assert notations(game) == sorted(f"{x}@l0" for x in game.hand(1))
    assert len(game.legal_moves()) == 7


def test_cl_start_1_a_hand_won_for_0_points_still_gives_the_opening() -> None:
    game = position("block", hands=["2-3", "0-0"], line="1-2")
    events = play(game, "2-3@l1")
    assert RoundEnded(1, DOMINO, (0, 0), 0) in events
    assert (game.round, game.current_seat, len(game.legal_moves())) == (2, 0, 7)


def test_cl_start_1_after_a_hand_nobody_won_the_first_hands_rule_again() -> None:
    # After 2-3 the ends are 1 and 3; 6-6 and 4-4 + 0-4 both count 12.
    game = position("block", hands=["2-3 6-6", "4-4 0-4"], line="1-2", seed="tie")
    events = play(game, "2-3@l1")
    assert RoundEnded(1, BLOCKED, (0, 0), None) in events
    seat, tile = first_hand_opener(dealt("tie", 2, 2)[0])
    assert (game.current_seat, game.legal_moves()) == (seat, [Move.play(tile, L0)])


def test_cl_start_1_after_a_blocked_team_hand_the_lower_partner_opens() -> None:
    game = position("block_teams", 4, hands=["2-3 6-6", "5-5", "0-0", "4-4"], line="1-2")
    events = play(game, "2-3@l1")
    # Team 0: 12 + 0, team 1: 10 + 8; seat 2 holds less than seat 0.
    assert RoundEnded(1, BLOCKED, (0, 0, 6, 0), 2) in events
    assert (game.current_seat, len(game.legal_moves())) == (2, 7)


def test_cl_start_1_partners_with_equal_totals_the_lower_seat_opens() -> None:
    game = position("block_teams", 4, hands=["2-3 0-6", "5-5", "0-0 2-4", "4-4 6-6"], line="1-2")
    events = play(game, "2-3@l1")
    # Team 0: 6 + 6 = 12 against 10 + 20: seats 0 and 2 tie, seat 0 opens.
    assert RoundEnded(1, BLOCKED, (18, 0, 0, 0), 0) in events
    assert game.current_seat == 0


def test_cl_start_1_seat0_any_opens_every_hand_from_seat_0() -> None:
    r = rules("block", opening="seat0_any")
    fresh = LineGame(r, 2, "zero")
    assert fresh.current_seat == 0
    assert notations(fresh) == sorted(f"{x}@l0" for x in fresh.hand(0))
    game = position(r, hands=["6-6", "2-3"], line="1-2", seat=1)
    events = play(game, "2-3@l1")
    assert RoundEnded(1, DOMINO, (0, 12), 1) in events
    assert (game.current_seat, len(game.legal_moves())) == (0, 7)


# --------------------------------------------------------------------- CL-TURN-1


@pytest.mark.parametrize("game_name", ["block", "draw"])
def test_cl_turn_1_a_player_who_can_place_must_place(game_name: str) -> None:
    game = position(game_name, hands=["2-3 6-6", "1-4"], line="1-2", boneyard="0-0 0-1")
    assert notations(game) == ["2-3@l1"]
    refuse(game, "pass", "MUST_PLAY", "CL-TURN-1")
    refuse(game, "draw", "MUST_PLAY", "CL-TURN-1")
    refuse(game, "end", "CANNOT_END_TURN", "CL-TURN-1")


def test_cl_turn_1_play_goes_clockwise_from_the_opener() -> None:
    game = position("block", 3, hands=["2-3 6-6 4-6", "3-4 5-5", "1-1 0-0"], line="1-2")
    assert play(game, "2-3@l1")[-1] == TurnStarted(1)
    assert play(game, "3-4@l1")[-1] == TurnStarted(2)
    assert play(game, "1-1@l0")[-1] == TurnStarted(0)


def test_cl_turn_1_only_the_seat_to_move_moves() -> None:
    game = position("block", hands=["2-3 6-6", "1-4"], line="1-2")
    refuse(game, "1-4@l0", None, "CL-TURN-1", NotYourTurnError, seat=1)
    assert game.apply(Move.parse("2-3@l1"), seat=0)[0] == TilePlayed(0, t("2-3"), L1)


# --------------------------------------------------------------------- CL-BLOCK-1


@pytest.mark.parametrize("game_name", ["block", "bergen"])
def test_cl_block_1_a_player_who_cannot_place_passes(game_name: str) -> None:
    game = position(game_name, hands=["5-5 6-6", "2-3 1-4"], line="1-2", boneyard="0-0 0-3")
    assert notations(game) == ["pass"]
    refuse(game, "draw", "CANNOT_DRAW", "CL-BLOCK-1")
    assert game.view(0).boneyard_count == 2
    assert game.apply(Move.parse("pass")) == [Passed(0), TurnStarted(1)]
    assert game.view(1).boneyard_count == 2  # the sleeping tiles stay out of play
    assert notations(game) == ["1-4@l0", "2-3@l1"]


# --------------------------------------------------------------------- CL-DRAW-1


def test_cl_draw_1_draw_one_at_a_time_until_a_tile_fits_then_place_it() -> None:
    game = position("draw", hands=["6-6 5-5", "0-0"], line="3-4", boneyard="1-1 2-2 3-5 0-1")
    assert notations(game) == ["draw"]
    refuse(game, "pass", "CANNOT_PASS", "CL-DRAW-1")
    assert game.view(0).turn is not None
    assert game.view(0).turn.drew_this_turn is False
    assert play(game, "draw") == [TileDrawn(0, t("1-1"))]
    assert (game.current_seat, notations(game)) == (0, ["draw"])
    assert game.view(0).turn.drew_this_turn is True  # type: ignore[union-attr]
    assert play(game, "draw") == [TileDrawn(0, t("2-2"))]
    assert play(game, "draw") == [TileDrawn(0, t("3-5"))]
    assert notations(game) == ["3-5@l0"]  # the drawn tile, any placement of it
    refuse(game, "6-6@l0", "TILE_DOES_NOT_MATCH", "CL-LINE-1")
    refuse(game, "draw", "MUST_PLAY", "CL-TURN-1")
    assert play(game, "3-5@l0") == [TilePlayed(0, t("3-5"), L0), TurnStarted(1)]
    assert game.view(1).turn.drew_this_turn is False  # type: ignore[union-attr]
    assert game.view(1).boneyard_count == 1


def test_cl_draw_1_an_empty_boneyard_means_pass() -> None:
    game = position("draw", hands=["6-6 5-5", "0-0"], line="5-4", boneyard="0-1", seat=1)
    play(game, "draw")
    assert notations(game) == ["pass"]  # 5-5 fits: not blocked
    refuse(game, "draw", "CANNOT_DRAW", "CL-DRAW-1")
    assert play(game, "pass") == [Passed(1), TurnStarted(0)]


@pytest.mark.parametrize("game_name", ["draw", "all_fives", "matador"])
def test_cl_draw_1_the_reserve_is_never_drawn_nor_shown(game_name: str) -> None:
    r = rules(game_name, boneyard_reserve=2)
    if game_name == "matador":
        game = position(r, hands=["6-6", "1-5 0-4"], line="6-0", boneyard="5-5 3-3 2-2")
    else:
        game = position(r, hands=["6-6", "5-5 0-4"], line="2-4", boneyard="1-1 3-3 0-0")
    assert notations(game) == ["draw"]
    play(game, "draw")  # 1-1 fits nowhere; two tiles are left, the reserve
    assert notations(game) == ["pass"]
    refuse(game, "draw", "CANNOT_DRAW", "CL-DRAW-1")
    view = game.view(0)
    assert view.boneyard_count == 2
    reserve = set(game.boneyard_tiles())
    assert not reserve & set(tiles_in(view))


# --------------------------------------------------------------------- CL-END-1


def test_cl_end_1_a_domino_ends_the_hand_at_once() -> None:
    game = position("block", hands=["2-3", "6-6 1-4"], line="1-2")
    events = play(game, "2-3@l1")
    assert events == [
        TilePlayed(0, t("2-3"), L1),
        RoundEnded(1, DOMINO, (17, 0), 0),
        RoundStarted(2, None, 0),
        TurnStarted(0),
    ]


def test_cl_end_1_a_block_ends_the_hand_at_once_with_no_passes() -> None:
    game = position("block", 3, hands=["2-3 6-6", "5-5", "4-4 0-0"], line="1-2")
    events = play(game, "2-3@l1")
    assert [type(e) for e in events] == [TilePlayed, RoundEnded, RoundStarted, TurnStarted]
    assert events[1] == RoundEnded(1, BLOCKED, (0, 0, 14), 2)


def test_cl_end_1_a_drawing_game_is_not_blocked_while_tiles_can_be_drawn() -> None:
    game = position("draw", hands=["2-3 6-6", "5-5"], line="1-2", boneyard="0-0 4-4")
    play(game, "2-3@l1")  # nobody fits 1 or 3, but the boneyard is drawable
    assert (game.round, game.current_seat, notations(game)) == (1, 1, ["draw"])
    assert play(game, "draw") == [TileDrawn(1, t("0-0"))]
    events = play(game, "draw")  # the last drawable tile fits nowhere either
    assert events[:2] == [TileDrawn(1, t("4-4")), RoundEnded(1, BLOCKED, (6, 0), 0)]


def test_cl_end_1_the_reserve_does_not_keep_a_hand_going() -> None:
    r = rules("draw", boneyard_reserve=2)
    game = position(r, hands=["2-3 6-6", "5-5"], line="1-2", boneyard="0-0 4-4")
    events = play(game, "2-3@l1")
    assert RoundEnded(1, BLOCKED, (0, 2), 1) in events  # 10 against 12


# --------------------------------------------------------------------- CL-SC-1


def test_cl_sc_1_a_domino_scores_every_opponents_hand() -> None:
    game = position("draw", 3, hands=["2-3", "5-6 0-0", "4-4 1-3"], line="1-2")
    events = play(game, "2-3@l1")
    assert RoundEnded(1, DOMINO, (23, 0, 0), 0) in events
    assert game.round_scores == [[23], [0], [0]]
    assert [p.score for p in game.view(None).players] == [23, 0, 0]


@pytest.mark.parametrize(("scoring", "points"), [("difference", 14), ("opponents_total", 22)])
def test_cl_sc_1_after_a_block_the_lowest_hand_scores(scoring: str, points: int) -> None:
    r = rules("block", blocked_scoring=scoring)
    game = position(r, 3, hands=["2-3 6-6", "5-5", "4-4 0-0"], line="1-2")
    events = play(game, "2-3@l1")
    assert RoundEnded(1, BLOCKED, (0, 0, points), 2) in events


def test_cl_sc_1_a_tie_for_the_lowest_total_scores_nothing() -> None:
    game = position("block", 3, hands=["2-3 6-6", "4-4", "0-0 2-6"], line="1-2")
    events = play(game, "2-3@l1")
    assert RoundEnded(1, BLOCKED, (0, 0, 0), None) in events
    assert game.totals == [0, 0, 0]


def test_cl_sc_1_matador_scores_pips_and_0_0_counts_0() -> None:
    game = position("matador", hands=["2-3", "0-0 5-6"], line="1-4")
    events = play(game, "2-3@l1")  # 3 next to 4
    assert RoundEnded(1, DOMINO, (11, 0), 0) in events


# --------------------------------------------------------------------- CL-SC-2


def test_cl_sc_2_the_game_ends_when_the_target_is_reached() -> None:
    game = position(
        "block", hands=["2-3", "4-4"], line="1-2", round=2, round_scores=[[95], [0]], seed="s"
    )
    events = play(game, "2-3@l1")
    assert events == [
        TilePlayed(0, t("2-3"), L1),
        RoundEnded(2, DOMINO, (8, 0), 0),
        GameEnded((103, 0), (0,), "s"),
    ]
    assert (game.over, game.winners, game.status) == (True, (0,), GameStatus.FINISHED)
    view = game.view(1)
    assert (view.over, view.current_seat, view.turn, view.winners) == (True, None, None, (0,))
    assert game.legal_moves() == []
    refuse(game, "pass", None, "CL-SC-2", GameOverError)


def test_cl_sc_2_below_the_target_the_next_hand_is_dealt() -> None:
    game = position("block", hands=["2-3", "4-4"], line="1-2", round=2, round_scores=[[91], [0]])
    events = play(game, "2-3@l1")
    assert RoundStarted(3, None, 0) in events
    assert (game.over, game.totals) == (False, [99, 0])


def test_cl_sc_2_points_during_play_end_the_game_mid_hand() -> None:
    game = position(
        "all_fives",
        hands=["2-4 6-6", "1-1"],
        line="3-4",
        boneyard="0-0 0-1",
        round=2,
        round_scores=[[240], [0]],
        hand_points=[5, 0],
        seed="s",
    )
    events = play(game, "2-4@l1")  # ends 3 and 2: 5 points, 250 in all
    assert events == [
        TilePlayed(0, t("2-4"), L1),
        PointsScored(0, 5, PointsReason.FIVES, None),
        GameEnded((250, 0), (0,), "s"),
    ]
    assert game.round_scores == [[240, 10], [0, 0]]
    assert game.over
    refuse(game, "draw", None, "CL-SC-2", GameOverError)


def test_cl_sc_2_when_the_last_tile_reaches_the_target_no_end_of_hand_points() -> None:
    game = position(
        "all_fives",
        hands=["2-4", "6-6 5-6"],
        line="3-4",
        round=2,
        round_scores=[[240], [0]],
        hand_points=[5, 0],
    )
    events = play(game, "2-4@l1")
    assert events[1:] == [
        PointsScored(0, 5, PointsReason.FIVES, None),
        RoundEnded(2, DOMINO, (10, 0), 0),
        GameEnded((250, 0), (0,), "scenario"),
    ]


def test_cl_sc_2_otherwise_end_of_hand_points_are_added_then_the_target_checked() -> None:
    game = position(
        "all_fives", hands=["2-4", "6-6 5-6"], line="3-4", round=2, round_scores=[[240], [0]]
    )
    events = play(game, "2-4@l1")  # 5 in play (245), then 23 rounded to 25
    assert events[1:] == [
        PointsScored(0, 5, PointsReason.FIVES, None),
        RoundEnded(2, DOMINO, (30, 0), 0),
        GameEnded((270, 0), (0,), "scenario"),
    ]


def test_cl_sc_2_any_target_from_1() -> None:
    game = position(rules("bergen", target_score=1), hands=["4-4 1-2", "0-0"])
    events = play(game, "4-4@l0")
    assert events[-1] == GameEnded((2, 0), (0,), "scenario")
    assert game.view(0).target_score == 1


# --------------------------------------------------------------------- CL-TEAM-1


def test_cl_team_1_a_domino_scores_the_other_teams_hands_not_the_partners() -> None:
    game = position("block_teams", 4, hands=["2-3", "5-5", "6-6", "4-4 0-1"], line="1-2")
    events = play(game, "2-3@l1")
    assert RoundEnded(1, DOMINO, (19, 0, 0, 0), 0) in events
    view = game.view(None)
    assert view.teams == (TeamView((0, 2), 19), TeamView((1, 3), 0))
    assert [p.score for p in view.players] == [19, 0, 0, 0]


def test_cl_team_1_the_team_reaches_the_target_and_both_seats_win() -> None:
    game = position(
        "draw_teams",
        4,
        hands=["2-3", "5-5", "6-6", "4-4 0-1"],
        line="1-2",
        round=3,
        round_scores=[[50, 0], [0, 0], [0, 40], [0, 0]],
    )
    events = play(game, "2-3@l1")
    assert events[-1] == GameEnded((69, 0, 40, 0), (0, 2), "scenario")
    assert game.team_scores() == [109, 0]
    assert game.view(3).winners == (0, 2)


@pytest.mark.parametrize(("scoring", "points"), [("difference", 6), ("opponents_total", 18)])
def test_cl_team_1_a_block_compares_combined_totals(scoring: str, points: int) -> None:
    r = rules("block_teams", blocked_scoring=scoring)
    game = position(r, 4, hands=["2-3 6-6", "5-5", "0-0", "4-4"], line="1-2")
    events = play(game, "2-3@l1")
    assert RoundEnded(1, BLOCKED, (0, 0, points, 0), 2) in events


def test_cl_team_1_equal_combined_totals_score_nothing() -> None:
    game = position("block_teams", 4, hands=["2-3 6-6", "5-5", "0-0", "0-2"], line="1-2")
    events = play(game, "2-3@l1")  # 12 + 0 against 10 + 2
    assert RoundEnded(1, BLOCKED, (0, 0, 0, 0), None) in events


def test_cl_team_1_teams_need_exactly_four_players() -> None:
    for n in (2, 3):
        with pytest.raises(RulesetError) as info:
            LineGame(PRESETS["block_teams"], n, "x")
        assert info.value.rule == "CL-TEAM-1"
    assert LineGame(PRESETS["all_fives_teams"], 4, "x").view(0).teams == (
        TeamView((0, 2), 0),
        TeamView((1, 3), 0),
    )
    assert LineGame(PRESETS["all_fives"], 4, "x").view(0).teams == ()


def test_cl_team_1_points_in_play_name_the_team() -> None:
    game = position(
        "all_fives_teams", 4, hands=["0-1", "3-4 6-6", "0-0", "1-1"], line="1-3", seat=1
    )
    events = play(game, "4-3@l1")  # ends 1 and 4
    assert events[1] == PointsScored(1, 5, PointsReason.FIVES, 1)


# --------------------------------------------------------------------- CL-A5-1


@pytest.mark.parametrize(("opening", "points"), [("5-5", 10), ("2-3", 5), ("0-5", 5)])
def test_cl_a5_1_the_opening_tile_scores_its_two_numbers(opening: str, points: int) -> None:
    game = position("all_fives", hands=[f"{opening} 1-2", "0-0 2-5"])
    events = play(game, f"{opening}@l0")
    assert events[1] == PointsScored(0, points, PointsReason.FIVES, None)
    assert game.totals == [points, 0]
    assert game.view(0).players[0].score == points


def test_cl_a5_1_opening_double_scores_both_halves_once() -> None:
    game = position("all_fives", hands=["5-5 1-2", "0-0"])
    assert play(game, "5-5@l0")[1] == PointsScored(0, 10, PointsReason.FIVES, None)


def test_cl_a5_1_a_double_at_an_end_counts_both_halves() -> None:
    game = position("all_fives", hands=["0-5 6-6", "1-1"], line="5-5")
    assert play(game, "5-0@l1")[1] == PointsScored(0, 10, PointsReason.FIVES, None)  # 10 + 0
    game = position("all_fives", hands=["5-5 6-6", "0-0"], line="5-3 3-1 1-5")
    assert play(game, "5-5@l1")[1] == PointsScored(0, 15, PointsReason.FIVES, None)  # 5 + 10


@pytest.mark.parametrize(("line", "move"), [("3-4", "4-6@l1"), ("5-5", "5-6@l0")])
def test_cl_a5_1_no_points_unless_a_positive_multiple_of_5(line: str, move: str) -> None:
    game = position("all_fives", hands=["4-6 5-6 6-6", "0-0"], line=line)
    events = play(game, move)
    assert [type(e) for e in events] == [TilePlayed, TurnStarted]
    game = position("all_fives", hands=["0-0 1-2", "3-3 0-3"])
    assert [type(e) for e in play(game, "0-0@l0")] == [TilePlayed, TurnStarted]


@pytest.mark.parametrize(("hand", "points"), [("6-6", 10), ("6-6 0-1", 15), ("0-2", 0)])
def test_cl_a5_1_the_hands_end_rounds_to_the_nearest_5(hand: str, points: int) -> None:
    game = position("all_fives", hands=["2-3", hand], line="1-2")
    events = play(game, "2-3@l1")  # ends 1 and 3: nothing in play
    assert RoundEnded(1, DOMINO, (points, 0), 0) in events


@pytest.mark.parametrize(("scoring", "points"), [("difference", 5), ("opponents_total", 20)])
def test_cl_a5_1_a_blocked_hand_rounds_the_same_way(scoring: str, points: int) -> None:
    r = rules("all_fives", blocked_scoring=scoring)
    game = position(r, hands=["2-3 6-6", "4-4 5-6 0-0"], line="1-2")
    events = play(game, "2-3@l1")  # 12 against 19: 7 -> 5, or 19 -> 20
    assert RoundEnded(1, BLOCKED, (points, 0), 0) in events


def test_cl_a5_1_teams_round_the_combined_amount() -> None:
    game = position("all_fives_teams", 4, hands=["2-3", "5-5", "6-6", "4-4 0-1"], line="1-2")
    events = play(game, "2-3@l1")  # 10 + 9 = 19 -> 20
    assert RoundEnded(1, DOMINO, (20, 0, 0, 0), 0) in events


# --------------------------------------------------------------------- CL-BERGEN-1


def test_cl_bergen_1_a_lone_opening_double_is_a_double_header() -> None:
    game = position("bergen", hands=["4-4 1-2", "0-0 0-4"])
    events = play(game, "4-4@l0")
    assert events[1:] == [PointsScored(0, 2, PointsReason.DOUBLE_HEADER, None), TurnStarted(1)]


def test_cl_bergen_1_both_ends_the_same_number_is_a_double_header() -> None:
    game = position("bergen", hands=["3-4 6-6", "0-0 0-3"], line="3-1 1-4")
    assert play(game, "4-3@l1")[1] == PointsScored(0, 2, PointsReason.DOUBLE_HEADER, None)


def test_cl_bergen_1_a_double_at_one_end_and_its_number_at_the_other_is_a_triple() -> None:
    game = position("bergen", hands=["3-4 6-6", "0-0 0-3"], line="3-3 3-1 1-4")
    events = play(game, "4-3@l1")
    assert events[1:] == [PointsScored(0, 3, PointsReason.TRIPLE_HEADER, None), TurnStarted(1)]
    game = position("bergen", hands=["3-3 6-6", "0-0 0-3"], line="3-1 1-4 4-3")
    events = play(game, "3-3@l0")  # the double played makes the triple
    assert events[1] == PointsScored(0, 3, PointsReason.TRIPLE_HEADER, None)


def test_cl_bergen_1_no_header_no_points() -> None:
    game = position("bergen", hands=["4-5 6-6", "0-0 0-5"], line="3-4")
    assert [type(e) for e in play(game, "4-5@l1")] == [TilePlayed, TurnStarted]


def test_cl_bergen_1_the_hands_winner_scores_2() -> None:
    game = position("bergen", hands=["2-3", "6-6 5-5"], line="1-2")
    events = play(game, "2-3@l1")
    assert events[1:3] == [
        PointsScored(0, 2, PointsReason.HAND_WON, None),
        RoundEnded(1, DOMINO, (2, 0), 0),
    ]
    game = position("bergen", hands=["2-3 6-6", "5-5"], line="1-2")  # blocked: 10 < 12
    assert RoundEnded(1, BLOCKED, (0, 2), 1) in play(game, "2-3@l1")
    game = position("bergen", hands=["2-3 6-6", "4-4 0-4"], line="1-2")  # a tie
    events = play(game, "2-3@l1")
    assert RoundEnded(1, BLOCKED, (0, 0), None) in events
    assert PointsScored not in {type(e) for e in events}


# --------------------------------------------------------------------- CL-MAT-1


def test_cl_mat_1_a_tile_joins_where_the_numbers_add_up_to_7() -> None:
    game = position("matador", hands=["4-5 2-6 6-6 0-1", "0-0"], line="1-3")
    assert notations(game) == ["2-6@l0", "4-5@l1", "6-6@l0"]
    refuse(game, "0-1@l0", "TILE_DOES_NOT_MATCH", "CL-MAT-1")
    play(game, "2-6@l0")
    assert (line_text(game), game.open_ends) == ("2-6 1-3", (2, 3))


def test_cl_mat_1_a_double_joins_like_any_tile() -> None:
    game = position("matador", hands=["4-4 0-2", "0-1 3-5"], line="3-1")
    assert notations(game) == ["4-4@l0"]
    play(game, "4-4@l0")
    assert (line_text(game), game.open_ends) == ("4-4 3-1", (4, 1))


def test_cl_mat_1_a_two_way_matador_gives_one_move_per_number_it_leaves_open() -> None:
    game = position("matador", hands=["1-6 5-5", "0-0"], line="1-3")
    assert notations(game) == ["1-6@l0:1", "1-6@l0:6", "1-6@l1:1", "1-6@l1:6"]
    assert {m.exposed for m in game.legal_moves()} == {1, 6}
    events = play(game, "6-1@l0:6")
    assert events[0] == TilePlayed(0, t("1-6"), L0)
    assert (line_text(game), game.open_ends) == ("6-1 1-3", (6, 3))


def test_cl_mat_1_a_matador_that_also_adds_up_to_7_still_faces_either_way() -> None:
    game = position("matador", hands=["3-4 5-5", "0-0"], line="3-6")
    assert notations(game) == ["3-4@l0:3", "3-4@l0:4", "3-4@l1:3", "3-4@l1:4"]
    play(game, "3-4@l0:3")
    assert game.open_ends == (3, 6)


def test_cl_mat_1_0_0_joins_any_end_and_leaves_0() -> None:
    game = position("matador", hands=["0-0 6-6", "1-1 4-5"], line="3-5")
    assert notations(game) == ["0-0@l0", "0-0@l1"]
    play(game, "0-0@l1")
    assert (line_text(game), game.open_ends) == ("3-5 0-0", (3, 0))


def test_cl_mat_1_as_the_opening_a_matador_is_one_move() -> None:
    game = position("matador", hands=["2-5 0-0", "1-1"])
    assert notations(game) == ["0-0@l0", "2-5@l0"]
    refuse(game, "2-5@l0:5", "EXPOSED_NUMBER", "CL-MAT-1")
    play(game, "5-2@l0")
    assert game.open_ends == (2, 5)


def test_cl_mat_1_an_end_showing_0_takes_only_a_matador() -> None:
    game = position("matador", hands=["3-4 0-5 1-1", "2-2"], line="0-0")
    assert notations(game) == ["3-4@l0:3", "3-4@l0:4", "3-4@l1:3", "3-4@l1:4"]
    refuse(game, "0-5@l0", "TILE_DOES_NOT_MATCH", "CL-MAT-1")


def test_cl_mat_1_larger_sets_7_takes_a_tile_by_its_0_above_7_only_a_matador() -> None:
    r = rules("matador", set_max=9)
    game = position(r, hands=["0-9 1-8 2-5 0-7", "3-3"], line="7-8")
    assert notations(game) == ["0-7@l0", "0-9@l0", "2-5@l0:2", "2-5@l0:5", "2-5@l1:2", "2-5@l1:5"]
    refuse(game, "1-8@l1", "TILE_DOES_NOT_MATCH", "CL-MAT-1")
    zero = position(r, hands=["0-7 9-9", "3-3"], line="0-0")
    refuse(zero, "0-7@l0", "TILE_DOES_NOT_MATCH", "CL-MAT-1")  # 0 takes only a matador
    assert notations(zero) == ["pass"]


def test_cl_mat_1_the_exposed_number_is_named_exactly_where_needed() -> None:
    game = position("matador", hands=["1-6 4-4", "0-0"], line="3-2")
    err = refuse(game, "1-6@l0", "EXPOSED_NUMBER", "CL-MAT-1")
    assert ":1" in err.message
    refuse(game, "1-6@l0:3", "EXPOSED_NUMBER", "CL-MAT-1")
    refuse(game, "4-4@l0:4", "EXPOSED_NUMBER", "CL-MAT-1")


# --------------------------------------------------------------------- state


def test_state_round_trips_exactly_and_refuses_what_it_did_not_write() -> None:
    game = position("draw", hands=["6-6 5-5", "0-0"], line="3-4", boneyard="1-1 2-2 3-5 0-1")
    play(game, "draw", "draw")
    data = game.to_dict()
    again = LineGame.from_dict(data)
    assert again == game
    assert again.to_bytes() == game.to_bytes()
    assert again.history == game.history == [Move.parse("draw")] * 2
    assert SPECS["draw"].load(data) == game
    bad_cases = [
        {**data, "format": 99},
        {**data, "game": "block"},
        {**data, "hands": [[t("6-6").id, t("6-6").id], []]},
        {**data, "hands": [[t("6-6").id]]},
        {**data, "line": [3 << 5 | 4, 5 << 5 | 1]},
        {**data, "turn": [5, False]},
        {**data, "history": "draw"},
        {**data, "rules": {**data["rules"], "rounds": 3}},
        {k: v for k, v in data.items() if k != "boneyard"},
    ]
    for bad in bad_cases:
        with pytest.raises(CorruptStateError):
            LineGame.from_dict(bad)
    with pytest.raises(CorruptStateError):
        LineGame.from_bytes(b"not json")


def test_state_copy_is_independent() -> None:
    game = position("draw", hands=["6-6 5-5", "0-0"], line="3-4", boneyard="1-1 2-2 3-5 0-1")
    twin = game.copy()
    play(twin, "draw")
    assert twin != game
    assert game.boneyard_tiles() == [t("1-1"), t("2-2"), t("3-5"), t("0-1")]
    assert game.version == 0


def test_view_is_an_engine_game_view() -> None:
    game = LineGame(PRESETS["all_fives"], 3, "v")
    view = game.view(1)
    assert isinstance(view, GameView)
    assert (view.trains, view.open_doubles, view.engine, view.rounds_total) == ((), (), None, 0)
    assert (view.round, view.target_score, view.ruleset) == (1, 250, PRESETS["all_fives"])
    assert view.turn is not None
    assert view.turn.owes_tile is False
    assert view.turn.first_turn is True
    assert view.status is GameStatus.IN_PROGRESS
    with pytest.raises(ValueError, match="seat"):
        game.view(3)


def test_cl_end_1_a_blocked_position_ends_at_the_next_pass() -> None:
    # Never reached by a game's own moves (the play before ends the hand), but
    # a search deals hidden tiles anew: nobody can place, and nothing to draw.
    game = position("block", hands=["5-5 6-6", "0-0 4-4"], line="1-2")
    assert notations(game) == ["pass"]
    events = play(game, "pass")
    assert events[:2] == [Passed(0), RoundEnded(1, BLOCKED, (0, 14), 1)]
