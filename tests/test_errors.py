"""Bad input: every refusal raises its own documented error class (engine/errors.py)
with the exact ``reason`` and RULES.md ``rule``, a message naming what was
refused, and leaves the game exactly as it was (API.md: "Nothing changes in a
game on any error")."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

import engine
from engine import (
    DRAW,
    END_TURN,
    PASS,
    CorruptStateError,
    DealDoesNotFitError,
    GameOverError,
    IllegalMoveError,
    MalformedMoveError,
    MexicanTrain,
    Move,
    MoveKind,
    NotYourTurnError,
    RailyardError,
    RulesetError,
    Tile,
    TrainRef,
)
from tests.scenario import position

# ----------------------------------------------------------------- positions
# Standard double-12, 4 players, round 1: every train's open end is 12.


def plain() -> MexicanTrain:
    """Seat 0 to move, holding 5-12 (playable on p0 and m0) and 3-4."""
    return position(hands=["12-5 3-4", "1-1 2-2", "3-3 4-4", "6-7 6-6"], boneyard="0-1 0-2 0-3")


def stuck() -> MexicanTrain:
    """Seat 0 to move with nothing playable and tiles left to draw."""
    return position(hands=["3-4 5-6", "1-1 2-2", "3-3 4-4", "6-7 6-6"], boneyard="0-1 0-2")


def stuck_empty_boneyard() -> MexicanTrain:
    """Seat 0 to move with nothing playable and an empty boneyard."""
    return position(hands=["3-4 5-6", "1-1 2-2", "12-3 4-4", "6-7 6-6"], boneyard="")


def chain_first_turn() -> MexicanTrain:
    """pagat (chain first turn), seat 0's first turn, holding 5-12 5-5 3-4."""
    return position(
        "pagat",
        hands=["12-5 5-5 3-4", "1-1 2-2", "3-3 4-4", "6-7 6-6"],
        boneyard="0-1 0-2",
        first_turns_done=False,
    )


def chain_owing() -> MexicanTrain:
    """seat 0 in a chain first turn, owing a tile for the double 5-5 just played."""
    game = chain_first_turn()
    game.apply(Move.parse("5-12@p0"))
    game.apply(Move.parse("5-5@p0"))
    return game


def chain_stuck() -> MexicanTrain:
    """pagat, seat 0's chain first turn after 5-12@p0: nothing more fits (open end 5),
    so END_TURN is the only legal move."""
    game = position(
        "pagat",
        hands=["12-5 3-4", "1-1 2-2", "3-3 4-4", "6-7 6-6"],
        boneyard="0-1 0-2",
        first_turns_done=False,
    )
    game.apply(Move.parse("5-12@p0"))
    assert game.legal_moves() == [END_TURN]
    return game


def finished() -> MexicanTrain:
    """A one-round game that seat 0 has just won by playing its last tile."""
    rules = engine.preset("standard").with_options(rounds=1)
    game = position(rules, hands=["12-5", "1-1 2-2", "3-3 4-4", "6-7 6-6"], boneyard="0-1")
    game.apply(Move.parse("5-12@p0"))
    assert game.over
    return game


def blocking_double() -> MexicanTrain:
    """Seat 1 to move; the double 5-5 on seat 0's train is open and blocks."""
    return position(
        hands=["1-2", "5-1 12-3", "3-3 4-4", "6-7 6-6"],
        trains={"p0": "12-5 5-5"},
        boneyard="0-1",
        seat=1,
    )


def drew_playable() -> MexicanTrain:
    """Seat 0 drew 0-12 (playable) and still holds 3-4."""
    game = position(hands=["3-4 5-6", "1-1 2-2", "3-3 4-4", "6-7 6-6"], boneyard="0-12 0-2")
    game.apply(DRAW)
    assert game.current_seat == 0
    return game


# ----------------------------------------------------------------- move refusals


@dataclass(frozen=True)
class Refusal:
    """A move refused in a position: the class, reason and rule it must raise,
    and what its message must name."""

    build: Callable[[], MexicanTrain]
    move: Any
    error: type[RailyardError]
    reason: str
    rule: str
    names: tuple[str, ...] = ()
    seat: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _p(text: str) -> Move:
    return Move.parse(text)


REFUSALS: dict[str, Refusal] = {
    # Malformed moves: values that are not a move at all (T-1, T-2).
    "tile-outside-the-set": Refusal(
        plain,
        Move.play(Tile(5, 13), TrainRef.seat(0)),
        MalformedMoveError,
        "MALFORMED_MOVE",
        "T-1",
        ("5-13", "double-12"),
    ),
    "tile-outside-the-set-text": Refusal(
        plain, _p("13-13@m0"), MalformedMoveError, "MALFORMED_MOVE", "T-1", ("13-13",)
    ),
    "negative-tile-value": Refusal(
        plain,
        Move.play(Tile(-1, 3), TrainRef.seat(0)),
        MalformedMoveError,
        "MALFORMED_MOVE",
        "T-1",
        ("-1",),
    ),
    "tile-value-not-a-number": Refusal(
        plain,
        Move(MoveKind.PLAY, Tile("a", 3), TrainRef.seat(0)),  # type: ignore[arg-type]
        MalformedMoveError,
        "MALFORMED_MOVE",
        "T-2",
        ("'a'",),
    ),
    "play-without-tile-or-train": Refusal(
        plain, Move(MoveKind.PLAY), MalformedMoveError, "MALFORMED_MOVE", "T-2", ("play",)
    ),
    "draw-with-a-tile": Refusal(
        plain,
        Move(MoveKind.DRAW, Tile(1, 2)),
        MalformedMoveError,
        "MALFORMED_MOVE",
        "T-2",
        ("draw",),
    ),
    "text-instead-of-move": Refusal(
        plain, "5-12@p0", MalformedMoveError, "MALFORMED_MOVE", "T-2", ("5-12@p0",)
    ),
    "none-instead-of-move": Refusal(
        plain, None, MalformedMoveError, "MALFORMED_MOVE", "T-2", ("None",)
    ),
    # Well-formed moves the rules forbid now.
    "tile-not-in-hand": Refusal(
        plain, _p("0-12@p0"), IllegalMoveError, "TILE_NOT_IN_HAND", "MT-TURN-1", ("0-12",)
    ),
    "other-seats-unmarked-train": Refusal(
        plain, _p("5-12@p1"), IllegalMoveError, "TRAIN_NOT_AVAILABLE", "MT-TR-3", ("seat 1",)
    ),
    "no-such-seat-train": Refusal(
        plain, _p("5-12@p7"), IllegalMoveError, "NO_SUCH_TRAIN", "MT-TR-3", ("p7",)
    ),
    "no-such-mexican-train": Refusal(
        plain, _p("5-12@m1"), IllegalMoveError, "NO_SUCH_TRAIN", "MT-TR-3", ("m1",)
    ),
    "no-such-branch": Refusal(
        plain, _p("5-12@p0.2"), IllegalMoveError, "NO_SUCH_TRAIN", "MT-DBL-7", ("p0.2",)
    ),
    "tile-does-not-match": Refusal(
        plain, _p("3-4@p0"), IllegalMoveError, "TILE_DOES_NOT_MATCH", "MT-TR-5", ("3-4", "12")
    ),
    "draw-holding-a-playable-tile": Refusal(
        plain, DRAW, IllegalMoveError, "MUST_PLAY", "MT-TURN-2", ("draw",)
    ),
    "pass-holding-a-playable-tile": Refusal(
        plain, PASS, IllegalMoveError, "MUST_PLAY", "MT-TURN-2", ("pass",)
    ),
    "pass-with-a-non-empty-boneyard": Refusal(
        stuck, PASS, IllegalMoveError, "CANNOT_PASS", "MT-DR-2", ("pass",)
    ),
    "draw-from-an-empty-boneyard": Refusal(
        stuck_empty_boneyard, DRAW, IllegalMoveError, "CANNOT_DRAW", "MT-DR-2", ("draw",)
    ),
    "end-outside-a-chain-turn": Refusal(
        plain, END_TURN, IllegalMoveError, "CANNOT_END_TURN", "MT-FT-1", ("end",)
    ),
    "end-before-any-chain-tile": Refusal(
        chain_first_turn, END_TURN, IllegalMoveError, "CANNOT_END_TURN", "MT-FT-1", ("end",)
    ),
    "end-while-owing-for-a-double": Refusal(
        chain_owing, END_TURN, IllegalMoveError, "MUST_PAY_DOUBLE", "MT-FT-3", ("end",)
    ),
    "chain-first-turn-on-mexican-train": Refusal(
        chain_first_turn,
        _p("5-12@m0"),
        IllegalMoveError,
        "FIRST_TURN_OWN_TRAIN",
        "MT-FT-2",
        ("5-12",),
    ),
    "draw-when-the-chain-cannot-go-on": Refusal(
        chain_stuck, DRAW, IllegalMoveError, "CANNOT_DRAW", "MT-FT-1", ("draw",)
    ),
    "ignore-a-blocking-double": Refusal(
        blocking_double,
        _p("3-12@m0"),
        IllegalMoveError,
        "MUST_COVER_DOUBLE",
        "MT-DBL-3",
        ("3-12", "5-5"),
    ),
    "another-tile-than-the-drawn-one": Refusal(
        drew_playable,
        _p("3-4@p0"),
        IllegalMoveError,
        "MUST_PLAY_DRAWN_TILE",
        "MT-DR-1",
        ("0-12",),
    ),
    "pass-when-the-chain-cannot-go-on": Refusal(
        chain_stuck, PASS, IllegalMoveError, "CANNOT_PASS", "MT-FT-1", ("pass",)
    ),
    "draw-again-after-a-playable-draw": Refusal(
        drew_playable, DRAW, IllegalMoveError, "MUST_PLAY", "MT-TURN-2", ("draw",)
    ),
    "out-of-turn": Refusal(
        plain, _p("5-12@p0"), NotYourTurnError, "NOT_YOUR_TURN", "MT-ENG-2", ("seat 2",), seat=2
    ),
    "out-of-turn-with-an-illegal-move": Refusal(
        plain, _p("3-4@p0"), NotYourTurnError, "NOT_YOUR_TURN", "MT-ENG-2", ("seat 1",), seat=1
    ),
    "move-after-the-game-ended": Refusal(
        finished, _p("1-1@p1"), GameOverError, "GAME_OVER", "MT-RND-1", ("1-1@p1",)
    ),
    "draw-after-the-game-ended": Refusal(
        finished, DRAW, GameOverError, "GAME_OVER", "MT-RND-1", ("draw",)
    ),
}


def _refuse(case: Refusal) -> RailyardError:
    """Apply the refused move (by apply, then by push); check the state is unchanged."""
    game = case.build()
    before = game.to_bytes()
    legal = list(game.legal_moves())
    errors = []
    for method in (game.apply, game.push):
        with pytest.raises(RailyardError) as info:
            method(case.move, seat=case.seat)
        errors.append(info.value)
        assert game.to_bytes() == before, "the refused move changed the state"
        assert game.legal_moves() == legal
    first, second = errors
    assert type(first) is type(second)
    assert (first.reason, first.rule, first.message) == (second.reason, second.rule, second.message)
    return first


@pytest.mark.parametrize("name", REFUSALS)
def test_refused_move_raises_its_class_reason_and_rule(name: str) -> None:
    case = REFUSALS[name]
    err = _refuse(case)
    assert type(err) is case.error, f"{type(err).__name__}: {err}"
    assert err.reason == case.reason, str(err)
    assert err.rule == case.rule, str(err)
    assert isinstance(err.message, str)
    assert err.message
    if case.error is IllegalMoveError:
        assert err.reason in engine.ILLEGAL_REASONS
        rule_in_doc = re.search(r"\((MT-[A-Z]+-\d+)", engine.ILLEGAL_REASONS[err.reason])
        assert rule_in_doc is not None


@pytest.mark.parametrize("name", REFUSALS)
def test_refused_move_message_names_the_input(name: str) -> None:
    """The message names what was refused: the tile, the train, the seat, or the
    move's text form (API.md: the text form is used in error messages)."""
    case = REFUSALS[name]
    err = _refuse(case)
    for word in case.names:
        assert re.search(rf"(?<![\w-]){re.escape(word)}(?![\w])", err.message), (
            f"{err.message!r} does not name {word!r}"
        )


def test_legal_alternative_still_applies_after_refusals() -> None:
    """After a run of refused moves the game still takes a legal one, as if none
    had been tried."""
    game = plain()
    fresh = plain()
    for case in REFUSALS.values():
        if case.build is plain:
            with pytest.raises(RailyardError):
                game.apply(case.move, seat=case.seat)
    move = _p("12-5@p0")
    assert game.apply(move) == fresh.apply(move)
    assert game == fresh


@pytest.mark.parametrize(
    "text",
    ["5-12@x0", "hello", "", "5-12", "5-12@", "@p0", "5_12@p0", "5-12@p0.", "5-12@m", "12-5-3@p0"],
)
def test_malformed_text(text: str) -> None:
    """Text that is not a move (T-2): MalformedMoveError naming the text."""
    with pytest.raises(MalformedMoveError) as info:
        Move.parse(text)
    err = info.value
    assert type(err) is MalformedMoveError
    assert err.reason == "MALFORMED_MOVE"
    assert err.rule == "T-2"
    assert repr(text) in err.message


@pytest.mark.parametrize("text", ["5-19@p0", "19-19@m0", "99-1@p0"])
def test_text_tile_beyond_every_set(text: str) -> None:
    """A tile half above 18 is no tile of any set (T-1)."""
    with pytest.raises(MalformedMoveError) as info:
        engine.parse_move(text)
    err = info.value
    assert err.reason == "MALFORMED_MOVE"
    assert err.rule == "T-1"
    assert text.split("@")[0] in err.message


def test_game_over_refuses_every_move_and_lists_none() -> None:
    game = finished()
    before = game.to_bytes()
    assert game.legal_moves() == []
    for move in (DRAW, PASS, END_TURN, _p("1-1@p1"), _p("0-1@m0")):
        with pytest.raises(GameOverError) as info:
            game.apply(move)
        assert info.value.reason == "GAME_OVER"
        assert info.value.rule == "MT-RND-1"
    assert game.to_bytes() == before


# ----------------------------------------------------------------- corrupt state


def _state() -> dict[str, Any]:
    game = plain()
    game.apply(_p("5-12@p0"))
    state: dict[str, Any] = json.loads(game.to_bytes())
    return state


def _with(key: str, value: Any) -> bytes:
    data = _state()
    data[key] = value
    return json.dumps(data).encode()


CORRUPT: dict[str, Callable[[], bytes]] = {
    "empty": lambda: b"",
    "not-json": lambda: b"garbage",
    "not-utf8": lambda: b"\xff\xfe\x00",
    "json-list": lambda: b"[]",
    "json-number": lambda: b"42",
    "empty-object": lambda: b"{}",
    "truncated": lambda: json.dumps(_state()).encode()[:-7],
    "unknown-game": lambda: _with("game", "chess"),
    "future-format": lambda: _with("format", 99),
    "history-does-not-match-version": lambda: _with("version", 7),
    "tile-outside-the-set-in-a-hand": lambda: _with("hands", [[13 << 5 | 13], [], [], []]),
    "turn-missing-a-field": lambda: _with(
        "turn", {k: v for k, v in _state()["turn"].items() if k != "forced"}
    ),
    "turn-a-list-in-format-2": lambda: _with("turn", list(_state()["turn"].values())),
    "format-1-turn-too-short": lambda: json.dumps({**_state(), "format": 1, "turn": [0]}).encode(),
    "double-missing-a-field": lambda: _with("doubles", [{"slot": 0, "end": 0, "value": 5}]),
    "format-1-double-too-short": lambda: json.dumps(
        {**_state(), "format": 1, "turn": list(_state()["turn"].values()), "doubles": [[0, 0]]}
    ).encode(),
    "players-not-a-number": lambda: _with("players", "four"),
    "missing-trains": lambda: json.dumps(
        {k: v for k, v in _state().items() if k != "trains"}
    ).encode(),
    "bad-history-text": lambda: _with("history", "5-12@p0 nonsense"),
    "unknown-ruleset-option": lambda: _with("rules", {**_state()["rules"], "colour": "red"}),
    "bad-ruleset-value": lambda: _with("rules", {**_state()["rules"], "first_turn": "triple"}),
}


@pytest.mark.parametrize("name", CORRUPT)
def test_corrupt_bytes_raise_corrupt_state(name: str) -> None:
    """Bytes that are not a state this engine wrote: CorruptStateError, always."""
    data = CORRUPT[name]()
    with pytest.raises(RailyardError) as info:
        engine.load(data)
    err = info.value
    assert type(err) is CorruptStateError, f"{type(err).__name__}: {err}"
    assert err.reason == "CORRUPT_STATE"
    assert err.rule is None
    assert err.message


def test_valid_bytes_still_load() -> None:
    """The corruptions above start from a state that loads."""
    data = json.dumps(_state()).encode()
    game = engine.load(data)
    assert json.loads(game.to_bytes()) == json.loads(data)


# ----------------------------------------------------------------- rulesets


@dataclass(frozen=True)
class BadRuleset:
    make: Callable[[], object]
    error: type[RailyardError]
    reason: str
    rule: str | None
    names: tuple[str, ...]


def _std(**opts: Any) -> engine.Ruleset:
    return engine.preset("standard").with_options(**opts)


BAD_RULESETS: dict[str, BadRuleset] = {
    "unknown-preset": BadRuleset(
        lambda: engine.preset("tournament"), RulesetError, "INVALID_ARGUMENT", None, ("tournament",)
    ),
    "unknown-preset-at-creation": BadRuleset(
        lambda: engine.new_game("tournament", 4, "s"),
        RulesetError,
        "INVALID_ARGUMENT",
        None,
        ("tournament",),
    ),
    "unknown-option": BadRuleset(
        lambda: _std(colour="red"), RulesetError, "INVALID_ARGUMENT", None, ("colour",)
    ),
    # API.md: an option the game does not have is refused naming both.
    "classic-option": BadRuleset(
        lambda: _std(opening="seat0_any"),
        RulesetError,
        "INVALID_ARGUMENT",
        None,
        ("opening", "mexican_train"),
    ),
    "classic-option-from-dict": BadRuleset(
        lambda: engine.Ruleset.from_dict({**_std().to_dict(), "target_score": 100}),
        RulesetError,
        "INVALID_ARGUMENT",
        None,
        ("target_score", "mexican_train"),
    ),
    "chicken-foot-option": BadRuleset(
        lambda: engine.ruleset(game="mexican_train", center_lines=4),
        RulesetError,
        "INVALID_ARGUMENT",
        None,
        ("center_lines", "mexican_train"),
    ),
    "bad-enum-value": BadRuleset(
        lambda: _std(first_turn="triple"),
        RulesetError,
        "INVALID_ARGUMENT",
        None,
        ("first_turn", "triple"),
    ),
    "bad-enum-value-engine-placement": BadRuleset(
        lambda: _std(engine_placement="on_the_roof"),
        RulesetError,
        "INVALID_ARGUMENT",
        None,
        ("engine_placement", "on_the_roof"),
    ),
    "bool-not-bool": BadRuleset(
        lambda: _std(open_doubles_block="yes"),
        RulesetError,
        "INVALID_ARGUMENT",
        None,
        ("open_doubles_block",),
    ),
    "hand-size-zero": BadRuleset(
        lambda: _std(hand_size=0), RulesetError, "INVALID_ARGUMENT", "MT-DEAL-1", ("hand_size",)
    ),
    "rounds-zero": BadRuleset(
        lambda: _std(rounds=0), RulesetError, "INVALID_ARGUMENT", "MT-RND-1", ("rounds",)
    ),
    "set-max-zero": BadRuleset(
        lambda: _std(set_max=0), RulesetError, "INVALID_ARGUMENT", "T-1", ("set_max",)
    ),
    "set-max-19": BadRuleset(
        lambda: _std(set_max=19), RulesetError, "INVALID_ARGUMENT", "T-1", ("set_max", "19")
    ),
    "mexican-trains-zero": BadRuleset(
        lambda: _std(mexican_trains=0),
        RulesetError,
        "INVALID_ARGUMENT",
        "MT-TR-2",
        ("mexican_trains",),
    ),
    "double-blank-value-10": BadRuleset(
        lambda: _std(double_blank_value=10),
        RulesetError,
        "INVALID_ARGUMENT",
        "T-3",
        ("double_blank_value", "10"),
    ),
    "max-doubles-2": BadRuleset(
        lambda: _std(max_doubles_per_turn=2),
        RulesetError,
        "INVALID_ARGUMENT",
        "MT-DBL-4",
        ("max_doubles_per_turn", "2"),
    ),
    "first-engine-above-the-set": BadRuleset(
        lambda: engine.new_game(_std(first_engine=13), 4, "s"),
        RulesetError,
        "INVALID_ARGUMENT",
        "MT-RND-1",
        ("13", "12"),
    ),
    "more-rounds-than-engines": BadRuleset(
        lambda: engine.new_game(_std(rounds=14), 4, "s"),
        RulesetError,
        "INVALID_ARGUMENT",
        "MT-RND-1",
        ("14", "13"),
    ),
    "one-player": BadRuleset(
        lambda: engine.new_game("standard", 1, "s"),
        RulesetError,
        "INVALID_ARGUMENT",
        "MT-SET-2",
        ("1",),
    ),
    "fifteen-players": BadRuleset(
        lambda: engine.new_game(_std(set_max=18, hand_size=5), 15, "s"),
        RulesetError,
        "INVALID_ARGUMENT",
        "MT-SET-2",
        ("15",),
    ),
    "deal-does-not-fit": BadRuleset(
        lambda: engine.new_game(_std(hand_size=12), 8, "s"),
        DealDoesNotFitError,
        "DEAL_DOES_NOT_FIT",
        "MT-DEAL-2",
        ("8", "12", "96", "90"),
    ),
    "deal-does-not-fit-by-one-set-aside": BadRuleset(
        lambda: engine.new_game(_std(hand_size=13), 7, "s"),
        DealDoesNotFitError,
        "DEAL_DOES_NOT_FIT",
        "MT-DEAL-2",
        ("7", "13", "91", "90"),
    ),
    "deal-does-not-fit-holder-plays": BadRuleset(
        lambda: engine.new_game(
            _std(hand_size=10, engine_placement="holder_plays", set_max=6), 3, "s"
        ),
        DealDoesNotFitError,
        "DEAL_DOES_NOT_FIT",
        "MT-DEAL-2",
        ("3", "10", "30", "28"),
    ),
    "standard-table-has-no-9-players": BadRuleset(
        lambda: engine.new_game(_std(set_max=15), 9, "s"),
        DealDoesNotFitError,
        "DEAL_DOES_NOT_FIT",
        "MT-DEAL-1",
        ("9",),
    ),
    "by-set-table-has-no-double-6": BadRuleset(
        lambda: engine.new_game(engine.preset("by_set").with_options(set_max=6), 3, "s"),
        DealDoesNotFitError,
        "DEAL_DOES_NOT_FIT",
        "MT-DEAL-1",
        ("3", "double-6"),
    ),
    "by-set-double-12-has-no-3-players": BadRuleset(
        lambda: engine.new_game(engine.preset("by_set").with_options(set_max=12), 3, "s"),
        DealDoesNotFitError,
        "DEAL_DOES_NOT_FIT",
        "MT-DEAL-1",
        ("3", "double-12"),
    ),
    "puremco-table-has-no-5-players": BadRuleset(
        lambda: engine.new_game(_std(hand_size_table="puremco_double9", set_max=9), 5, "s"),
        DealDoesNotFitError,
        "DEAL_DOES_NOT_FIT",
        "MT-DEAL-1",
        ("5",),
    ),
}


@pytest.mark.parametrize("name", BAD_RULESETS)
def test_bad_ruleset_refused(name: str) -> None:
    case = BAD_RULESETS[name]
    with pytest.raises(RailyardError) as info:
        case.make()
    err = info.value
    assert type(err) is case.error, f"{type(err).__name__}: {err}"
    assert err.reason == case.reason
    assert err.rule == case.rule
    for word in case.names:
        assert re.search(rf"(?<![\w-]){re.escape(word)}(?![\w])", err.message), (
            f"{err.message!r} does not name {word!r}"
        )


@pytest.mark.parametrize(
    ("players", "hand", "placement"),
    [(7, 13, "holder_plays"), (2, 45, "set_aside"), (9, 10, "set_aside"), (14, 6, "set_aside")],
)
def test_deal_that_just_fits_is_accepted(players: int, hand: int, placement: str) -> None:
    """MT-DEAL-2 boundary on double-12 (91 tiles): players x hand up to 91 under
    holder_plays, up to 90 under set_aside."""
    game = engine.new_game(_std(hand_size=hand, engine_placement=placement), players, "fits")
    dealt = sum(game.hand_count(s) for s in range(players)) + len(game.boneyard_tiles())
    assert dealt == 90  # every tile but the engine, which is at the station
    if placement == "set_aside":
        assert all(game.hand_count(s) == hand for s in range(players))
