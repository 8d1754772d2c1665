"""Chicken Foot's invariants (CL-CF-1) over random options, seeds and play.

Each example draws the options (2 to 8 players, 6 or 4 lines, a set and a
hand size that fit, 1 to 3 rounds, what 0-0 counts, who starts), a seed and
a move-choosing seed, then plays the game to its end by random legal moves.
On the way, written from RULES.md rather than from the engine:

- every game ends within a bound on its moves;
- tiles are conserved: hands + boneyard + every line's branches + the
  station are the set, each tile once, and every branch is a chain;
- the seat to move always has a legal move, and the legal plays are exactly
  those CL-CF-1 allows: the oldest open foot alone, else only line starts
  while a line has not started, else every open end; no marker, ever;
- a double passes the turn (its player owes nothing);
- a round ends by a domino or blocked, exactly when the rules say, and its
  scores are the hands (0-0 at ``double_blank_value``); MT-SC-3's winners;
- a view holds no tile of another hand nor of the boneyard, and does not
  change when those are dealt differently;
- ``engine.load(game.to_bytes())`` and ``engine.replay`` rebuild equal states.

``HYPOTHESIS_PROFILE=thorough`` runs 1000 examples per test (tests/conftest.py).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import hypothesis.strategies as st
from hypothesis import given, note

import engine
from engine import (
    DRAW,
    PASS,
    DealDoesNotFitError,
    Event,
    MarkerPlaced,
    MarkerRemoved,
    Move,
    MoveKind,
    RoundEnded,
    RoundEndReason,
    RoundStarted,
    TrainKind,
    TurnStarted,
)
from engine.games.chicken_foot import ChickenFoot, ChickenFootRules
from engine.tiles import Tile
from tests.test_properties import (
    ScoreKeeper,
    _hide_and_reshuffle,
    check_events_filtered,
    check_tiles_conserved,
)

Pair = tuple[int, int]


def _set_size(n: int) -> int:
    return (n + 1) * (n + 2) // 2


@dataclass(frozen=True)
class Setup:
    rules: ChickenFootRules
    players: int
    seed: str
    moves_seed: int

    def new(self) -> ChickenFoot:
        game = engine.new_game(self.rules, self.players, self.seed)
        assert isinstance(game, ChickenFoot)
        return game


@st.composite
def setups(draw: st.DrawFn) -> Setup:
    """A playable Chicken Foot game: any of its options may vary."""
    players = draw(st.integers(2, 8))
    set_max = draw(st.sampled_from([9, 9, 6, 7, 12]) | st.integers(6, 18))
    options: dict[str, Any] = {
        "set_max": set_max,
        "center_lines": draw(st.sampled_from([6, 4])),
        "double_blank_value": draw(st.sampled_from([50, 25, 0])),
        "first_player": draw(st.sampled_from(["draw", "seat0"])),
        "rounds": draw(st.integers(1, 3)),
    }
    rules = ChickenFootRules().with_options(**options)
    dealable = _set_size(set_max) - 1  # the station is set aside (MT-DEAL-2)
    explicit = draw(st.booleans())
    if not explicit:
        try:
            rules.resolve(players)
        except DealDoesNotFitError:
            explicit = True  # the table's size does not fit this set: deal one that does
    if explicit:
        rules = rules.with_options(hand_size=draw(st.integers(1, min(20, dealable // players))))
    seed = draw(st.text(max_size=8))
    return Setup(rules, players, seed, draw(st.integers(0, 2**32 - 1)))


def _move_cap(game: ChickenFoot) -> int:
    """A bound on a game's moves: per round at most T plays and T draws, and
    n passes between two plays (after n passes with an empty boneyard and no
    play, MT-END-3 ends the round)."""
    tiles = _set_size(game.set_max)
    return game.rounds_total * (tiles * (game.players + 2) + 10)


def walk(game: ChickenFoot, rnd: random.Random) -> Iterator[tuple[Move, list[Event]]]:
    """Play ``game`` to its end by random legal moves, yielding each move and
    its events; fail past :func:`_move_cap`."""
    cap = _move_cap(game)
    for _ in range(cap):
        if game.over:
            return
        moves = game.legal_moves()
        assert moves, f"seat {game.current_seat} has no legal move at v{game.version}"
        move = rnd.choice(moves)
        yield move, game.apply(move, seat=game.current_seat)
    raise AssertionError(f"the game did not end in {cap} moves: {game.history}")


def _note(setup: Setup, game: ChickenFoot) -> None:
    note(f"{setup.rules.to_dict()} players={setup.players} seed={setup.seed!r}")
    note(f"moves: {' '.join(map(str, game.history))}")


def _norm(tile: Tile) -> Pair:
    return (tile.a, tile.b) if tile.a <= tile.b else (tile.b, tile.a)


def _unstarted(game: ChickenFoot) -> list[int]:
    return [k for k in range(game.slot_count) if not game.train_tiles_of(k, 0)]


def expected_plays(game: ChickenFoot) -> set[tuple[Pair, engine.TrainRef]]:
    """CL-CF-1 written from RULES.md: where the seat to move may place which
    hand tile (at the start of a turn: nothing drawn yet)."""
    hand = [_norm(x) for x in game.hand(game.current_seat)]
    doubles = game.open_doubles()
    if doubles:  # MT-DBL-3 / MT-DBL-7: the oldest open foot is the only target
        ref, value, _ = doubles[0]
        places = [(ref, value)]
    elif _unstarted(game):  # only plays that start a line, with the station's number
        station = game.engine.a
        places = [(engine.TrainRef.mexican(k), station) for k in _unstarted(game)]
    else:
        places = [
            (engine.TrainRef.mexican(k, end), value)
            for k in range(game.slot_count)
            for end, value in enumerate(game.open_ends[k])
            if value >= 0
        ]
    return {(tile, ref) for ref, value in places for tile in hand if value in tile}


def can_anyone_play(game: ChickenFoot) -> bool:
    """MT-END-3 as CL-CF-1 has it: could any hand tile be placed (every player in turn)?"""
    hands = [[_norm(x) for x in game.hand(s)] for s in range(game.players)]
    doubles = game.open_doubles()
    if doubles:
        targets = {doubles[0].value}
    elif _unstarted(game):
        targets = {game.engine.a}
    else:
        targets = {v for ends in game.open_ends for v in ends if v >= 0}
    return any(a in targets or b in targets for hand in hands for a, b in hand)


def check_legal(game: ChickenFoot, drew: bool) -> None:
    """The seat to move has a legal move; plays exclude draw and pass
    (MT-TURN-2); at a turn's start the plays are exactly CL-CF-1's."""
    moves = game.legal_moves()
    if game.over:
        assert moves == []
        return
    assert moves
    plays = {
        (_norm(m.tile), m.train)
        for m in moves
        if m.kind is MoveKind.PLAY and m.tile is not None and m.train is not None
    }
    assert all(m.train is None or m.train.kind is TrainKind.MEXICAN for m in moves)
    assert len(set(moves)) == len(moves)
    if drew:  # MT-DR-1: the drawn tile, and only it, wherever it fits
        assert plays
        assert len({tile for tile, _ in plays}) == 1
        assert plays <= expected_plays(game)
        return
    expected = expected_plays(game)
    assert plays == expected, f"missing {expected - plays}, extra {plays - expected}"
    if not plays:
        assert moves == ([DRAW] if game.boneyard_tiles() else [PASS])


def tiles_in(value: object) -> Iterator[Tile]:
    """Every tile anywhere in a view (its dataclasses, tuples and named tuples)."""
    if isinstance(value, Tile):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from tiles_in(getattr(value, f.name))
    elif isinstance(value, tuple | list):
        for item in value:
            yield from tiles_in(item)


def check_views(game: ChickenFoot) -> None:
    """MT-VIS-2/3: a view shows the lines, the station and its own hand, no
    other tile; the counts are public."""
    table = {
        _norm(x)
        for k in range(game.slot_count)
        for end in range(len(game.open_ends[k]))
        for x in game.train_tiles_of(k, end)
    }
    table.add(_norm(game.engine))
    for seat in (None, *range(game.players)):
        view = engine.build_view(game, seat)
        own = set() if seat is None else {_norm(x) for x in game.hand(seat)}
        shown = {_norm(x) for x in tiles_in(view)}
        assert shown <= table | own, f"seat {seat} sees {shown - table - own}"
        if seat is None:
            assert view.hand is None
        else:
            assert view.hand == tuple(game.hand(seat))
        assert view.boneyard_count == len(game.boneyard_tiles())
        assert [p.hand_count for p in view.players] == [
            game.hand_count(s) for s in range(game.players)
        ]
        assert not any(p.marker for p in view.players)
        assert [t.ref for t in view.trains] == [
            engine.TrainRef.mexican(k) for k in range(game.slot_count)
        ]
        assert (view.seed is not None) == game.over


# --------------------------------------------------------------------- tests


@given(setups())
def test_cl_cf_1_random_games_end_conserve_tiles_and_follow_the_rules(setup: Setup) -> None:
    game = setup.new()
    rnd = random.Random(setup.moves_seed)
    keeper = ScoreKeeper(game)
    n = game.players
    starts = [e for e in game.opening_events if type(e) is RoundStarted]
    check_tiles_conserved(game)
    check_legal(game, drew=False)
    hands = [[_norm(x) for x in game.hand(s)] for s in range(n)]
    bone = len(game.boneyard_tiles())
    seat = game.current_seat
    try:
        for move, events in walk(game, rnd):
            assert not any(type(e) in (MarkerPlaced, MarkerRemoved) for e in events)
            assert game.markers == [False] * n
            keeper.check_move(hands, bone, events)
            starts += [e for e in events if type(e) is RoundStarted]
            ended = any(type(e) is RoundEnded for e in events)
            turn_over = any(type(e) is TurnStarted for e in events)
            if move.kind is MoveKind.PLAY and not ended:
                # Every play ends the turn, a double's too (CL-CF-1: it owes nothing).
                assert turn_over
                assert game.current_seat == (seat + 1) % n
                assert not game.owes
            if move.kind is MoveKind.PASS:
                assert turn_over or ended
            check_tiles_conserved(game)
            check_legal(game, drew=move.kind is MoveKind.DRAW and not turn_over)
            hands = [[_norm(x) for x in game.hand(s)] for s in range(n)]
            bone = len(game.boneyard_tiles())
            seat = game.current_seat
    finally:
        _note(setup, game)
    assert game.over
    rounds = game.rounds_total
    assert rounds == setup.rules.rounds
    # MT-RND-1 / MT-ENG-1: round r's station is set_max - r + 1; each later
    # round starts with the seat after the previous round's starter.
    first = starts[0].starter
    assert [(e.round, e.engine, e.starter) for e in starts] == [
        (r, Tile(game.set_max - r + 1, game.set_max - r + 1), (first + r - 1) % n)
        for r in range(1, rounds + 1)
    ]
    if setup.rules.first_player.value == "seat0":
        assert first == 0
    assert [len(r) for r in keeper.rounds] == [rounds] * n
    assert game.totals == [sum(r) for r in keeper.rounds]
    assert game.winners == keeper.winners()


class RoundEndProbe(ChickenFoot):
    """Records, at each round's end, the reason, the winner, the boneyard's
    size and whether anyone could still play (the next deal follows at once)."""

    def __init__(self, rules: ChickenFootRules, players: int, seed: str) -> None:
        self.round_ends: list[tuple[RoundEndReason, int, int, bool, list[int]]] = []
        super().__init__(rules, players, seed)

    def _end_round(self, winner: int, reason: RoundEndReason, ev: Any) -> None:
        counts = [self.hand_count(s) for s in range(self.players)]
        self.round_ends.append((reason, winner, len(self.boneyard), can_anyone_play(self), counts))
        super()._end_round(winner, reason, ev)


@given(setups())
def test_cl_cf_1_rounds_end_exactly_when_the_rules_say(setup: Setup) -> None:
    game = RoundEndProbe(setup.rules, setup.players, setup.seed)
    rnd = random.Random(setup.moves_seed)
    try:
        for _, events in walk(game, rnd):
            kinds = {type(e) for e in events}
            if TurnStarted in kinds and RoundEnded not in kinds and not game.boneyard_tiles():
                assert can_anyone_play(game), "nobody can play, yet the round goes on"
    finally:
        _note(setup, game)
    assert len(game.round_ends) == game.rounds_total
    for reason, winner, bone, playable, counts in game.round_ends:
        if reason is RoundEndReason.DOMINO:
            assert counts[winner] == 0  # MT-END-1
        else:
            assert bone == 0  # MT-END-3: blocked only with an empty boneyard
            assert not playable, "blocked while someone could play"


@given(setups())
def test_cl_cf_1_views_hide_other_hands_and_the_boneyard(setup: Setup) -> None:
    game = setup.new()
    rnd = random.Random(setup.moves_seed)
    try:
        check_events_filtered(game, game.opening_events)
        check_views(game)
        for _, events in walk(game, rnd):
            check_events_filtered(game, events)
            if rnd.random() < 0.1:
                check_views(game)
            if rnd.random() < 0.05:
                seat = rnd.randrange(game.players)
                other = _hide_and_reshuffle(game, seat, rnd)
                assert engine.build_view(other, seat) == engine.build_view(game, seat)
                assert engine.build_view(other, None) == engine.build_view(game, None)
        check_views(game)
    finally:
        _note(setup, game)


@given(setups())
def test_cl_cf_1_saved_states_load_equal_and_replay_rebuilds_them(setup: Setup) -> None:
    game = setup.new()
    rnd = random.Random(setup.moves_seed)
    twin: ChickenFoot | None = None
    snapshots: list[tuple[list[Move], bytes]] = []

    def check(state: ChickenFoot) -> None:
        data = state.to_bytes()
        loaded = engine.load(data)
        assert isinstance(loaded, ChickenFoot)
        assert loaded == state
        assert loaded.to_bytes() == data
        assert loaded.legal_moves() == state.legal_moves()
        assert loaded.on_table == state.on_table  # MT-DBL-5, recounted on load
        for seat in (None, *range(state.players)):
            assert engine.build_view(loaded, seat) == engine.build_view(state, seat)

    try:
        check(game)
        for move, events in walk(game, rnd):
            if twin is not None:
                assert twin.apply(move) == events  # a loaded copy plays on identically
            if rnd.random() < 0.05:
                check(game)
            if twin is None and rnd.random() < 0.05:
                loaded = engine.load(game.to_bytes())
                assert isinstance(loaded, ChickenFoot)
                twin = loaded
            if rnd.random() < 0.03:
                snapshots.append((list(game.history), game.to_bytes()))
        check(game)
        if twin is not None:
            assert twin == game
    finally:
        _note(setup, game)
    rebuilt = engine.replay(setup.rules, setup.players, setup.seed, game.history)
    assert rebuilt == game
    assert rebuilt.to_bytes() == game.to_bytes()
    text = [str(m) for m in game.history]
    assert engine.replay(game.rules, setup.players, setup.seed, text) == game
    for history, data in snapshots[:3]:
        assert engine.replay(setup.rules, setup.players, setup.seed, history).to_bytes() == data
