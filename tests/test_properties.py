"""Property tests over random rulesets, player counts, seeds and move choices.

Each example draws a ruleset (a preset with any of its options overridden), a
player count from 2 to 14, a seed and a move-choosing seed, then plays a short
game (1 or 2 rounds) by picking uniformly among the legal moves. Every state on
the way is checked against RULES.md:

- T-1 / MT-TR-5: tiles are conserved (hands + boneyard + trains + engine are
  the whole set, each tile once) and every train is a well-formed chain;
- MT-TURN-2 / MT-DR-1 / MT-DR-2: the seat to move always has a legal move, and
  the list has the shape the rules give it; every listed play uses a hand tile
  on an open end it matches; any legal move applies without raising;
- MT-TURN-1 / MT-TR-3 / MT-DBL-3 / MT-FT-2: at each turn's start the legal plays
  are exactly the ones computed here from RULES.md; MT-DBL-1, MT-FT-1, MT-TR-4,
  MT-ENG-2, MT-KNOCK-1: who moves next, markers, penalty draws;
- MT-END-1/3: a round ends by a domino or when nobody can play, and only then;
- MT-VIS-2/3, MT-DR-3: views and seat-filtered events hide other seats' tiles;
- MT-SC-1/2/3, T-3: round scores, totals and winners;
- MT-FAIR-1: serialization and replay rebuild equal states;
- termination: a game ends within a bound on its moves, or the test fails.

``HYPOTHESIS_PROFILE=thorough`` runs 1000 examples per test (tests/conftest.py).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import hypothesis.strategies as st
from hypothesis import given, note

import engine
from engine import (
    DRAW,
    END_TURN,
    PASS,
    DealDoesNotFitError,
    Event,
    GameEnded,
    MexicanTrain,
    Move,
    MoveKind,
    RoundEnded,
    RoundEndReason,
    RoundStarted,
    Ruleset,
    TileDrawn,
    TilePlayed,
    TrainKind,
    TurnStarted,
)
from engine.tiles import hand_ids as _hand_ids
from tests.presets import MEXICAN_TRAIN_PRESETS

Pair = tuple[int, int]


# --------------------------------------------------------------------- setups


def _auto_set(players: int) -> int:
    """MT-SET-1, written from RULES.md (not from the engine)."""
    if players <= 3:
        return 9
    if players <= 8:
        return 12
    if players <= 12:
        return 15
    return 18


def _set_size(n: int) -> int:
    return (n + 1) * (n + 2) // 2


@dataclass(frozen=True)
class Setup:
    """What a game is created from (the ruleset as given, before resolution)."""

    rules: Ruleset
    players: int
    seed: str
    moves_seed: int

    def new(self) -> MexicanTrain:
        return engine.new_game(self.rules, self.players, self.seed)

    def describe(self) -> str:
        overrides = {
            k: v
            for k, v in self.rules.to_dict().items()
            if v != MEXICAN_TRAIN_PRESETS[self.rules.preset].to_dict().get(k)
        }
        return (
            f"preset={self.rules.preset!r} options={overrides} players={self.players} "
            f"seed={self.seed!r} moves_seed={self.moves_seed}"
        )


def _maybe(draw: st.DrawFn, strategy: st.SearchStrategy[Any]) -> Any:
    """``None`` (keep the preset's value) or a drawn override."""
    return draw(st.none() | strategy)


@st.composite
def setups(draw: st.DrawFn, max_rounds: int = 2) -> Setup:
    """A playable (ruleset, players, seed): every RULES.md option may vary."""
    base = engine.preset(draw(st.sampled_from(sorted(MEXICAN_TRAIN_PRESETS))))
    players = draw(st.integers(2, 8) | st.integers(2, 14))
    opts: dict[str, Any] = {}
    choices: dict[str, st.SearchStrategy[Any]] = {
        "engine_placement": st.sampled_from(list(engine.EnginePlacement)),
        "first_player": st.sampled_from(list(engine.FirstPlayer)),
        "first_turn": st.sampled_from(list(engine.FirstTurn)),
        "mexican_trains": st.integers(1, 3),
        "double_followup": st.sampled_from(list(engine.DoubleFollowup)),
        "open_doubles_block": st.booleans(),
        "max_doubles_per_turn": st.sampled_from([0, 1]),
        "double_answer": st.sampled_from(list(engine.DoubleAnswer)),
        "end_on_double": st.booleans(),
        "knock_rule": st.sampled_from(list(engine.KnockRule)),
        "knock_penalty": st.integers(0, 4),
        "double_blank_value": st.sampled_from([0, 25, 50]),
        "hand_size_table": st.sampled_from(list(engine.HandSizeTable)),
    }
    for name, strategy in choices.items():
        value = _maybe(draw, strategy)
        if value is not None:
            opts[name] = value
    # set_max: 6..18, or None for "auto" (MT-SET-1, as under by_set).
    set_choice = draw(st.sampled_from(["preset", "auto", "explicit"]))
    if set_choice == "auto":
        opts["set_max"] = None
    elif set_choice == "explicit":
        opts["set_max"] = draw(st.integers(6, 18))
    rules = base.with_options(**opts)
    set_max = rules.set_max if rules.set_max is not None else _auto_set(players)
    first_engine = _maybe(draw, st.integers(0, set_max))
    top = set_max if first_engine is None else first_engine
    rules = rules.with_options(
        first_engine=first_engine, rounds=draw(st.integers(1, min(max_rounds, top + 1)))
    )
    holder = rules.engine_placement is engine.EnginePlacement.HOLDER_PLAYS
    dealable = _set_size(set_max) - (0 if holder else 1)
    explicit = _maybe(draw, st.integers(1, min(20, dealable // players)))
    if explicit is not None:
        rules = rules.with_options(hand_size=explicit)
    else:
        try:
            rules.resolve(players)
        except DealDoesNotFitError:
            # The table has no entry (or it does not fit): deal a size that fits.
            rules = rules.with_options(hand_size=draw(st.integers(1, min(20, dealable // players))))
    seed = draw(st.text(max_size=8))
    return Setup(rules, players, seed, draw(st.integers(0, 2**32 - 1)))


# --------------------------------------------------------------------- helpers


def _move_cap(game: MexicanTrain) -> int:
    """A bound on a game's moves: per round at most T plays, T draws, the chain
    ends, and n passes between two plays (after n passes every marker is on,
    so someone plays or MT-END-3 ends the round)."""
    tiles = _set_size(game.set_max)
    n = game.players
    return game.rounds_total * (tiles * (n + 3) + 3 * n + 10)


def walk(
    game: MexicanTrain, rnd: random.Random, *, use_seat: bool = True
) -> Iterator[tuple[Move, list[Event]]]:
    """Play ``game`` to its end by random legal moves, yielding each move and
    its events; fail if the game runs past :func:`_move_cap`."""
    cap = _move_cap(game)
    for _ in range(cap):
        if game.over:
            return
        moves = game.legal_moves()
        assert moves, f"seat {game.current_seat} has no legal move at v{game.version}"
        move = rnd.choice(moves)
        seat = game.current_seat if use_seat and rnd.random() < 0.5 else None
        events = game.apply(move, seat=seat)
        yield move, events
    raise AssertionError(
        f"the game did not end within {cap} moves: {' '.join(map(str, game.history))}"
    )


def _norm(a: int, b: int) -> Pair:
    return (a, b) if a <= b else (b, a)


def _whole_set(n: int) -> Counter[Pair]:
    return Counter((a, b) for a in range(n + 1) for b in range(a, n + 1))


def _hand(game: MexicanTrain, seat: int) -> list[Pair]:
    return [_norm(t.a, t.b) for t in game.hand(seat)]


def _slot(game: MexicanTrain, move: Move) -> int:
    assert move.train is not None
    if move.train.kind is TrainKind.SEAT:
        return move.train.number
    return game.players + move.train.number


def check_tiles_conserved(game: MexicanTrain) -> None:
    """T-1: hands + boneyard + every train branch + the engine = the set, once each;
    MT-TR-1/5: every branch is a chain from the engine (or its double)."""
    seen: Counter[Pair] = Counter()
    for seat in range(game.players):
        hand = _hand(game, seat)
        assert len(hand) == game.hand_count(seat)
        seen.update(hand)
    seen.update(_norm(t.a, t.b) for t in game.boneyard_tiles())
    seen[_norm(game.engine.a, game.engine.b)] += 1
    for slot in range(game.slot_count):
        ends = game.open_ends[slot]
        assert ends, f"train {slot} has no branch"
        for end, open_end in enumerate(ends):
            tiles = game.train_tiles_of(slot, end)
            seen.update(_norm(t.a, t.b) for t in tiles)
            if end == 0:
                start = game.engine.a
            else:
                parent = game.parent_ends[slot][end]
                parent_tiles = game.train_tiles_of(slot, parent)
                assert parent_tiles, f"branch {slot}.{end} grows from an empty branch"
                start = parent_tiles[-1].b
                assert parent_tiles[-1].a == start, "a branch grows from a double"
            value = start
            for t in tiles:
                assert t.a == value, f"train {slot}.{end}: {t} does not follow {value}"
                value = t.b
            if open_end >= 0:
                assert open_end == value, f"train {slot}.{end}: open end {open_end} != {value}"
    dupes = {t: c for t, c in seen.items() if c > 1}
    assert not dupes, f"tiles in two places: {dupes}"
    whole = _whole_set(game.set_max)
    assert seen == whole, f"missing {whole - seen}, extra {seen - whole}"


def check_legal_list(game: MexicanTrain) -> None:
    """MT-TURN-2, MT-DR-1, MT-DR-2, MT-FT-1: the shape of the legal move list."""
    moves = game.legal_moves()
    if game.over:
        assert moves == []
        return
    assert moves, "the seat to move has no legal move"
    plays = [m for m in moves if m.kind is MoveKind.PLAY]
    others = [m for m in moves if m.kind is not MoveKind.PLAY]
    assert len(set(moves)) == len(moves), "a legal move is listed twice"
    if plays:
        assert DRAW not in moves, "draw offered beside a play (MT-TURN-2)"
        assert PASS not in moves, "pass offered beside a play (MT-TURN-2)"
    if DRAW in moves:
        assert game.boneyard_tiles(), "draw offered from an empty boneyard"
        assert others == [DRAW]
    if PASS in moves:
        assert not game.boneyard_tiles(), "pass offered with tiles to draw (MT-DR-2)"
        assert others == [PASS]
    if END_TURN in moves:
        assert game.rules.first_turn is engine.FirstTurn.CHAIN
        assert not game.owes, "END_TURN offered while a tile is owed (MT-FT-3)"
        assert others == [END_TURN]


def check_plays_from_hand(game: MexicanTrain) -> None:
    """Every legal play uses a tile of the mover's hand on an open end it matches,
    on a train the mover may use (MT-TR-3, MT-TR-5, MT-DBL-3)."""
    if game.over:
        return
    seat = game.current_seat
    hand = set(_hand(game, seat))
    doubles = {(ref, value) for ref, value, _ in game.open_doubles()}
    double_places = {(ref.kind, ref.number, ref.end) for ref, _ in doubles}
    for move in game.legal_moves():
        if move.kind is not MoveKind.PLAY:
            continue
        tile, train = move.tile, move.train
        assert tile is not None
        assert train is not None
        assert tile.a <= tile.b, f"{move}: tile not written a <= b (T-2)"
        assert (tile.a, tile.b) in hand, f"{move}: {tile} is not in seat {seat}'s hand"
        slot = _slot(game, move)
        assert 0 <= slot < game.slot_count, f"{move}: no such train"
        ends = game.open_ends[slot]
        assert 0 <= train.end < len(ends), f"{move}: no such end"
        value = ends[train.end]
        assert value >= 0, f"{move}: the branch is closed"
        assert value in (tile.a, tile.b), f"{move}: {tile} does not match open end {value}"
        if train.kind is TrainKind.SEAT and train.number != seat:
            assert game.markers[train.number] or (
                (train.kind, train.number, train.end) in double_places
            ), f"{move}: seat {train.number}'s train is neither marked nor an open double"


def expected_turn_start_plays(game: MexicanTrain) -> set[tuple[Pair, engine.TrainRef]]:
    """MT-TURN-1, MT-TR-3, MT-DBL-3, MT-FT-2 written from RULES.md: at the start of
    a turn, every (tile, train end) the seat to move may play."""
    seat = game.current_seat
    hand = _hand(game, seat)
    doubles = game.open_doubles()
    if game.rules.open_doubles_block and doubles:
        ref, value, _ = doubles[0]  # the oldest blocking double is the only target
        places = [(ref, value)]
    else:
        view = engine.build_view(game, seat)
        assert view.turn is not None
        chain = game.rules.first_turn is engine.FirstTurn.CHAIN and view.turn.first_turn
        n = game.players
        slots = (
            [seat]
            if chain
            else [s for s in range(game.slot_count) if s == seat or s >= n or game.markers[s]]
        )
        places = [
            (game.train_ref(slot, end), value)
            for slot in slots
            for end, value in enumerate(game.open_ends[slot])
            if value >= 0
        ]
    return {(tile, ref) for ref, value in places for tile in hand if value in tile}


def check_turn_start(game: MexicanTrain) -> None:
    """At the start of a turn the legal plays are exactly the expected ones; with
    none, the only move is DRAW (boneyard left) or PASS (MT-DR-1, MT-DR-2)."""
    moves = game.legal_moves()
    plays = {
        (_norm(m.tile.a, m.tile.b), m.train)
        for m in moves
        if m.kind is MoveKind.PLAY and m.tile is not None and m.train is not None
    }
    expected = expected_turn_start_plays(game)
    assert plays == expected, (
        f"seat {game.current_seat} at v{game.version}: missing "
        f"{sorted(expected - plays)}, extra {sorted(plays - expected)}"
    )
    if not expected:
        assert moves == ([DRAW] if game.boneyard_tiles() else [PASS])


def blocked_by_rules(
    hands: list[list[Pair]], trains: list[list[int]], oldest_double: int | None, block: bool
) -> bool:
    """MT-END-3 written from RULES.md: no hand tile fits any open end (every marker
    on, every first turn over), or only the oldest blocking double when doubles
    block."""
    if block and oldest_double is not None:
        targets = {oldest_double}
    else:
        targets = {v for ends in trains for v in ends if v >= 0}
    return not any(a in targets or b in targets for hand in hands for a, b in hand)


def _public_block_state(game: MexicanTrain) -> tuple[list[list[Pair]], list[list[int]], int | None]:
    doubles = game.open_doubles()
    return (
        [_hand(game, s) for s in range(game.players)],
        [list(ends) for ends in game.open_ends],
        doubles[0][1] if doubles else None,
    )


class RoundEndProbe(MexicanTrain):
    """A game that records, for each round end, the reason, the winner and the
    position at that moment (the next deal replaces it within the same move)."""

    def __init__(self, ruleset: Ruleset, players: int, seed: str) -> None:
        self.round_ends: list[tuple[Any, int, int, Any]] = []
        super().__init__(ruleset, players, seed)

    def _end_round(self, winner: int, reason: RoundEndReason, ev: Any) -> None:
        bone = len(self.boneyard_tiles())
        self.round_ends.append((reason, winner, bone, _public_block_state(self)))
        super()._end_round(winner, reason, ev)


def check_views(game: MexicanTrain) -> None:
    """MT-VIS-2/3: a seat's view holds its own hand only; a spectator's none."""
    hands = [set(_hand(game, s)) for s in range(game.players)]
    spectator = engine.build_view(game, None)
    assert spectator.hand is None
    assert spectator.viewer_seat is None
    for seat in range(game.players):
        view = engine.build_view(game, seat)
        assert view.hand is not None
        mine = {_norm(t.a, t.b) for t in view.hand}
        assert mine == hands[seat]
        for other in range(game.players):
            if other != seat:
                assert not (mine & hands[other]), f"seat {seat} sees seat {other}'s tiles"
        assert [p.hand_count for p in view.players] == [len(h) for h in hands]
        assert view.boneyard_count == len(game.boneyard_tiles())


def check_events_filtered(game: MexicanTrain, events: list[Event]) -> None:
    """MT-DR-3: a drawn tile reaches the drawer's stream only."""
    for event in events:
        for seat in [None, *range(game.players)]:
            seen = engine.for_seat(event, seat)
            if type(event) is TileDrawn:
                assert event.tile is not None, "the engine's own event lost the tile"
                if seat == event.seat:
                    assert seen == event
                else:
                    assert type(seen) is TileDrawn
                    assert seen.tile is None, f"seat {seat} sees seat {event.seat}'s draw"
                    assert seen.seat == event.seat
            else:
                assert seen == event


def _hide_and_reshuffle(game: MexicanTrain, seat: int, rnd: random.Random) -> MexicanTrain:
    """The same public position and the same hand for ``seat``, but every other
    hidden tile (other hands, the boneyard and its order) dealt differently."""
    data = json.loads(game.to_bytes())
    forced = data["turn"]["forced"]
    others = [s for s in range(game.players) if s != seat]
    pool = [t for s in others for t in data["hands"][s] if t != forced] + data["boneyard"]
    rnd.shuffle(pool)
    for s in others:
        keep = [t for t in data["hands"][s] if t == forced]
        size = len(data["hands"][s]) - len(keep)
        data["hands"][s] = sorted(keep + pool[:size])
        pool = pool[size:]
    data["boneyard"] = pool
    return engine.load(json.dumps(data).encode())


class ScoreKeeper:
    """MT-SC-1/2/3, T-3 written from RULES.md: the round scores from the hands
    at the round's end, the totals, the winners."""

    def __init__(self, game: MexicanTrain) -> None:
        self.blank = game.rules.double_blank_value
        self.rounds: list[list[int]] = [[] for _ in range(game.players)]

    def check_move(
        self, hands_before: list[list[Pair]], bone_before: int, events: list[Event]
    ) -> None:
        hands = [list(h) for h in hands_before]
        bone = bone_before
        for event in events:
            if type(event) is TilePlayed:
                hands[event.seat].remove(_norm(event.tile.a, event.tile.b))
            elif type(event) is TileDrawn:
                assert event.tile is not None
                hands[event.seat].append(_norm(event.tile.a, event.tile.b))
                bone -= 1
            elif type(event) is RoundEnded:
                expected = tuple(
                    sum(a + b for a, b in h) + (self.blank if (0, 0) in h else 0) for h in hands
                )
                assert event.scores == expected, f"round scores {event.scores} != {expected}"
                if event.reason is RoundEndReason.DOMINO:
                    assert any(not h for h in hands), "a domino round with no empty hand"
                else:
                    assert bone == 0, "a blocked round with tiles in the boneyard (MT-END-3)"
                for seat, score in enumerate(event.scores):
                    self.rounds[seat].append(score)
                return  # what follows belongs to the next round's deal

    def winners(self) -> tuple[int, ...]:
        totals = [sum(r) for r in self.rounds]
        tied = [s for s, t in enumerate(totals) if t == min(totals)]
        wins = {s: sum(1 for x in self.rounds[s] if x == 0) for s in tied}
        tied = [s for s in tied if wins[s] == max(wins.values())]
        low = {s: min((x for x in self.rounds[s] if x), default=None) for s in tied}
        lows = [v for v in low.values() if v is not None]
        if lows:
            tied = [s for s in tied if low[s] == min(lows)] or tied
        return tuple(tied)


def _note_game(setup: Setup, game: MexicanTrain) -> None:
    note(setup.describe())
    note(f"moves: {' '.join(map(str, game.history))}")


# --------------------------------------------------------------------- tests


@given(setups())
def test_game_terminates_and_conserves_tiles(setup: Setup) -> None:
    """Every game ends within the move cap; tiles are conserved in every state;
    the seat to move always has a legal move; scores and winners follow MT-SC."""
    game = setup.new()
    rnd = random.Random(setup.moves_seed)
    keeper = ScoreKeeper(game)
    check_tiles_conserved(game)
    check_legal_list(game)
    rounds_seen = 0
    hands = [_hand(game, s) for s in range(game.players)]
    bone = len(game.boneyard_tiles())
    try:
        for step, (_, events) in enumerate(walk(game, rnd), start=1):
            assert game.version == step
            assert len(game.history) == game.version
            keeper.check_move(hands, bone, events)
            rounds_seen += sum(1 for e in events if type(e) is RoundEnded)
            check_tiles_conserved(game)
            check_legal_list(game)
            hands = [_hand(game, s) for s in range(game.players)]
            bone = len(game.boneyard_tiles())
    finally:
        _note_game(setup, game)
    assert game.over
    assert rounds_seen == game.rounds_total
    assert game.totals == [sum(r) for r in keeper.rounds]
    assert game.winners == keeper.winners()


@given(setups())
def test_legal_plays_use_hand_tiles_on_matching_ends(setup: Setup) -> None:
    """Every legal play names a tile in the mover's hand and an open end it matches;
    a playable drawn tile is the only tile that may follow (MT-DR-1)."""
    game = setup.new()
    rnd = random.Random(setup.moves_seed)
    try:
        check_plays_from_hand(game)
        for move, events in walk(game, rnd):
            check_plays_from_hand(game)
            check_legal_list(game)
            if move == DRAW and not game.over and not any(type(e) is TurnStarted for e in events):
                drawn = [e.tile for e in events if type(e) is TileDrawn]
                assert len(drawn) == 1
                tiles = {m.tile for m in game.legal_moves()}
                assert tiles == {drawn[0]}, f"after drawing {drawn[0]}: {game.legal_moves()}"
    finally:
        _note_game(setup, game)


@given(setups())
def test_every_legal_move_applies(setup: Setup) -> None:
    """Applying any legal move (not just the one chosen) never raises."""
    game = setup.new()
    rnd = random.Random(setup.moves_seed)
    try:
        for _ in walk(game, rnd):
            if game.over or rnd.random() > 0.08:
                continue
            data = game.to_bytes()
            for move in game.legal_moves():
                twin = engine.load(data)
                twin.apply(move, seat=game.current_seat)
                assert twin.version == game.version + 1
                check_tiles_conserved(twin)
    finally:
        _note_game(setup, game)


@given(setups())
def test_views_and_events_hide_other_seats_tiles(setup: Setup) -> None:
    """A seat's view holds no tile of another hand, a spectator's holds no hand,
    seat-filtered events never show another seat's draw, and a view does not
    change when the tiles hidden from its seat are dealt differently."""
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
        _note_game(setup, game)


@given(setups())
def test_serialized_state_round_trips(setup: Setup) -> None:
    """load(to_bytes()) is an equal state with identical bytes and the same legal
    moves, and a loaded copy plays on exactly like the original."""
    game = setup.new()
    rnd = random.Random(setup.moves_seed)
    twin: MexicanTrain | None = None

    def check(state: MexicanTrain) -> None:
        data = state.to_bytes()
        # Saved hands are kept between saves: they must match the hands now.
        assert json.loads(data)["hands"] == [_hand_ids(h) for h in state.hands]
        loaded = engine.load(data)
        assert loaded == state
        # MT-DBL-5's counts: recounted from the table after a load, kept up
        # move by move in play; they must agree.
        assert loaded.on_table == state.on_table
        assert loaded.to_bytes() == data
        assert loaded.legal_moves() == state.legal_moves()
        assert engine.build_view(loaded, None) == engine.build_view(state, None)

    try:
        check(game)
        for move, events in walk(game, rnd):
            if twin is not None:
                assert twin.apply(move) == events
                if rnd.random() < 0.05:
                    assert twin == game
            if rnd.random() < 0.04 or (twin is not None and rnd.random() < 0.04):
                check(game)
                if twin is not None:
                    check(twin)
            if twin is None and rnd.random() < 0.05:
                twin = engine.load(game.to_bytes())
        check(game)
        if twin is not None:
            assert twin == game
    finally:
        _note_game(setup, game)


@given(setups())
def test_replay_rebuilds_the_state(setup: Setup) -> None:
    """replay(ruleset, players, seed, history) rebuilds an equal state, from moves
    or from their text form, at the end and at a random point on the way."""
    game = setup.new()
    rnd = random.Random(setup.moves_seed)
    snapshots: list[tuple[list[Move], bytes]] = []
    try:
        for _ in walk(game, rnd):
            if rnd.random() < 0.03:
                snapshots.append((list(game.history), game.to_bytes()))
    finally:
        _note_game(setup, game)
    rebuilt = engine.replay(setup.rules, setup.players, setup.seed, game.history)
    assert rebuilt == game
    assert rebuilt.to_bytes() == game.to_bytes()
    from_text = engine.replay(game.rules, setup.players, setup.seed, [str(m) for m in game.history])
    assert from_text == game
    for history, data in snapshots[:3]:
        assert engine.replay(setup.rules, setup.players, setup.seed, history).to_bytes() == data


def check_penalties(game: MexicanTrain, seat: int, move: Move, events: list[Event]) -> None:
    """MT-KNOCK-1: penalty draws only under the knock rule, for the mover, at the
    end of a turn played with a tile, never in a round that ended by a domino;
    a play or END_TURN never places a marker (MT-TR-4)."""
    before_end = events
    for i, event in enumerate(events):
        if type(event) is RoundEnded:
            before_end = events[:i]
            if event.reason is RoundEndReason.DOMINO:
                assert not any(type(e) is TileDrawn and e.why == "penalty" for e in before_end), (
                    "penalty draws in a round that ended by a domino"
                )
            break
    penalties = [e for e in before_end if type(e) is TileDrawn and e.why == "penalty"]
    if penalties:
        assert game.rules.knock_rule is engine.KnockRule.PENALTY
        assert all(e.seat == seat for e in penalties)
        assert move.kind is not MoveKind.PASS
    if move.kind in (MoveKind.PLAY, MoveKind.END_TURN):
        assert not any(type(e) is engine.MarkerPlaced for e in before_end), f"{move} set a marker"


@given(setups())
def test_turn_structure_follows_the_rules(setup: Setup) -> None:
    """Turn by turn: the legal plays at a turn's start are exactly those RULES.md
    allows; a double keeps the turn (MT-DBL-1); a plain play ends it unless a
    chain goes on (MT-FT-1); an unplayable draw or a pass ends it with the
    marker on (MT-DR-1, MT-DR-2, MT-TR-4); a play on the own train takes the
    marker off."""
    game = setup.new()
    rnd = random.Random(setup.moves_seed)
    try:
        check_turn_start(game)
        seat = game.current_seat
        for move, events in walk(game, rnd):
            kinds = {type(e) for e in events}
            check_penalties(game, seat, move, events)
            if game.over or RoundEnded in kinds:
                if not game.over:
                    check_turn_start(game)
                seat = game.current_seat
                continue
            turn_ended = TurnStarted in kinds
            if move.kind is MoveKind.PLAY:
                assert move.tile is not None
                assert move.train is not None
                if move.tile.a == move.tile.b:
                    assert not turn_ended, f"{move}: a double must be followed (MT-DBL-1)"
                elif not turn_ended:
                    assert game.rules.first_turn is engine.FirstTurn.CHAIN, f"{move} kept the turn"
                    assert END_TURN in game.legal_moves(), f"{move}: chain cannot be ended"
                if move.train.kind is TrainKind.SEAT and move.train.number == seat:
                    assert not game.markers[seat], f"{move}: marker still on (MT-TR-4)"
            elif move.kind is MoveKind.DRAW:
                if turn_ended:
                    assert game.markers[seat], "an unplayable draw leaves no marker (MT-TR-4)"
            elif move.kind is MoveKind.PASS:
                assert turn_ended
                assert game.markers[seat], "a pass leaves no marker (MT-DR-2)"
            else:
                assert turn_ended, "END_TURN did not end the turn"
            if turn_ended:
                assert game.current_seat == (seat + 1) % game.players, "not clockwise (MT-ENG-2)"
                check_turn_start(game)
            else:
                assert game.current_seat == seat
            seat = game.current_seat
    finally:
        _note_game(setup, game)


@given(setups())
def test_rounds_end_exactly_when_the_rules_say(setup: Setup) -> None:
    """MT-END-1/3: a round ends by a domino (the winner's hand empty) or blocked
    (boneyard empty, nobody able to play even with every marker on); and when a
    turn ends with an empty boneyard and the round goes on, somebody can still
    play."""
    game = RoundEndProbe(setup.rules, setup.players, setup.seed)
    rnd = random.Random(setup.moves_seed)
    block = game.rules.open_doubles_block
    try:
        for _, events in walk(game, rnd):
            kinds = {type(e) for e in events}
            turn_ended = TurnStarted in kinds and RoundEnded not in kinds
            if turn_ended and not game.boneyard_tiles():  # MT-END-3 is checked at a turn's end
                hands, trains, oldest = _public_block_state(game)
                assert not blocked_by_rules(hands, trains, oldest, block), (
                    f"v{game.version}: nobody can play, yet the round goes on (MT-END-3)"
                )
    finally:
        _note_game(setup, game)
    assert len(game.round_ends) == game.rounds_total
    for reason, winner, bone, (hands, trains, oldest) in game.round_ends:
        if reason is RoundEndReason.DOMINO:
            assert hands[winner] == [], "a domino with tiles left (MT-END-1)"
        else:
            assert bone == 0, "a blocked round with a boneyard (MT-END-3)"
            assert blocked_by_rules(hands, trains, oldest, block), (
                f"round blocked while someone could play: {hands} on {trains}"
            )


@given(setups(max_rounds=1))
def test_opening_state_is_sound(setup: Setup) -> None:
    """Right after the deal: hand sizes (MT-DEAL-1, plus engine-search draws under
    holder_plays), round 1 with engine first_engine (MT-RND-1), version 0."""
    game = setup.new()
    resolved = setup.rules.resolve(setup.players)
    assert resolved.hand_size is not None
    assert game.version == 0
    assert game.history == []
    assert game.round == 1
    assert game.rounds_total == resolved.rounds
    assert game.engine.a == game.engine.b == resolved.first_engine
    started = [e for e in game.opening_events if type(e) is RoundStarted]
    assert len(started) == 1
    assert started[0].starter == game.current_seat
    search = Counter(
        e.seat for e in game.opening_events if type(e) is TileDrawn and e.why == "engine_search"
    )
    holder = resolved.engine_placement is engine.EnginePlacement.HOLDER_PLAYS
    for seat in range(game.players):
        expected = resolved.hand_size + search[seat] - (seat == game.current_seat and holder)
        assert game.hand_count(seat) == expected
    if not holder:
        assert not search
        if resolved.first_player is engine.FirstPlayer.SEAT0:
            assert game.current_seat == 0
    check_tiles_conserved(game)
    check_legal_list(game)
    assert not any(type(e) is GameEnded for e in game.opening_events)
