"""Mexican Train (RULES.md section 2): the position, its moves, its rounds.

One mutable :class:`MexicanTrain` holds a whole game: every round is dealt
from the seed (MT-FAIR-1), so ``(ruleset, players, seed, moves)`` rebuilds
it exactly. Hot paths read plain ints and lists; each ruleset option is read
once, in ``__init__``, into a flag named after what it changes.

Inside, a tile is an id ``a << 5 | b`` (see :mod:`engine.tiles`); a hand is
one bit mask per pip value (``hand[v]`` has bit ``x`` set when the tile
``v-x`` is held), so the tiles that fit an open end ``v`` are ``hand[v]``.
Trains are numbered by *slot*: seat ``i``'s train is slot ``i``, Mexican
train ``k`` is slot ``players + k``. A train is a list of branches (one,
unless a chicken foot split it, MT-DBL-7), numbered by *end*; three lists
indexed ``[slot][end]`` describe them: ``open_ends`` (the number a tile must
match there, ``-1`` once closed), ``parent_ends`` (the end a branch grows
from, ``-1`` for the trunk) and ``tile_codes`` (the tiles laid, in play
order, each ``touching << 5 | open``). An unsatisfied double is an
:class:`OpenDouble`.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Final, TypedDict, cast

from engine.checks import well_formed
from engine.errors import (
    CorruptStateError,
    GameOverError,
    IllegalMoveError,
    MoveError,
    NotYourTurnError,
    RailyardError,
    RulesetError,
)
from engine.events import (
    DoubleSatisfied,
    Event,
    GameEnded,
    MarkerPlaced,
    MarkerRemoved,
    Passed,
    RoundEnded,
    RoundEndReason,
    RoundStarted,
    TileDrawn,
    TilePlayed,
    TurnStarted,
)
from engine.game import GameStatus, Rules, StateBase
from engine.games.mexican_train.rules import (
    DoubleAnswer,
    DoubleFollowup,
    EnginePlacement,
    FirstPlayer,
    FirstTurn,
    KnockRule,
    Ruleset,
)
from engine.games.mexican_train.view import mexican_train_view
from engine.moves import DRAW, END_TURN, PASS, Move, MoveKind, TrainKind, TrainRef
from engine.mypyc_compat import mypyc_attr
from engine.shuffle import shuffle
from engine.tiles import TILE_BITS as _TILE_BITS
from engine.tiles import TILE_OF_PAIR as _TID
from engine.tiles import TILES, Tile, canonical_ids
from engine.tiles import hand_ids as _hand_ids
from engine.view import GameView, OpenDoubleView

#: Version of :meth:`MexicanTrain.to_bytes`'s format. 2: the turn and the open
#: doubles as named fields (:class:`SavedTurn`, :class:`SavedDouble`); 1 wrote
#: them as positional lists (:data:`_TURN_FIELDS_1`, :class:`OpenDouble`'s field
#: order) and is still read.
STATE_FORMAT: Final = 2


# Enum members are looked up once: a class attribute access on every move
# costs more than a module constant.
_PLAY: Final = MoveKind.PLAY
_DRAW: Final = MoveKind.DRAW
_PASS: Final = MoveKind.PASS
_SEAT: Final = TrainKind.SEAT


@dataclass(slots=True, eq=False)
class OpenDouble:
    """A double on the table still owed its answers (MT-DBL-1), changed in place
    as they come. Compared by identity: the game's list holds each once."""

    slot: int  # the train it is on
    end: int  # the branch of that train
    value: int  # its number: what an answer must match
    answers: int = 0  # tiles played on it so far (MT-DBL-7 wants three)
    played_this_turn: bool = False  # MT-DBL-3: it blocks from the end of this turn


class SavedDouble(TypedDict):
    """An :class:`OpenDouble` in the saved state (format 2)."""

    slot: int
    end: int
    value: int
    answers: int
    played_this_turn: bool


class SavedTurn(TypedDict):
    """The turn in progress in the saved state (format 2): the
    :class:`MexicanTrain` attributes of the same names (``seat`` is
    ``current_seat``; ``last_double`` the index of
    :attr:`MexicanTrain.last_double` in ``doubles``, ``-1`` for none)."""

    seat: int
    owes: bool
    drew: bool
    forced: int
    doubles_this_turn: int
    played_this_turn: int
    penalties: int
    last_double: int
    own_train_only: bool
    chain_open: bool


#: Format 1's ``turn``: these fields, in this order, as a list (written out:
#: reordering :class:`SavedTurn` must not change how old states read).
_TURN_FIELDS_1: Final = (
    "seat",
    "owes",
    "drew",
    "forced",
    "doubles_this_turn",
    "played_this_turn",
    "penalties",
    "last_double",
    "own_train_only",
    "chain_open",
)

# Per tile id ``a << 5 | b`` (any orientation): the pips, and whether it is
# canonical (a <= b); its hand-mask updates are engine.tiles.TILE_BITS.
_PIPS: Final = [(i >> 5) + (i & 31) for i in range(1024)]
_CANONICAL: Final = [(i >> 5) <= (i & 31) for i in range(1024)]

# Interned moves and train references, per player count (slot numbering
# depends on it): legal-move lists hand out the same objects every time.
_MOVES: dict[int, dict[int, Move]] = {}
_ROWS: dict[tuple[int, int], list[list[Move | None]]] = {}  # end-0 moves by [slot][tile id]

_REFS: dict[int, dict[int, TrainRef]] = {}


def _ref(players: int, slot: int, end: int) -> TrainRef:
    refs = _REFS.setdefault(players, {})
    key = slot << 8 | end
    ref = refs.get(key)
    if ref is None:
        ref = (
            TrainRef(TrainKind.SEAT, slot, end)
            if slot < players
            else TrainRef(TrainKind.MEXICAN, slot - players, end)
        )
        refs[key] = ref
    return ref


# Subclassed by Chicken Foot, and by tests' probes in Python: a compiled class
# admits interpreted subclasses only when it says so.
@mypyc_attr(allow_interpreted_subclasses=True)
class MexicanTrain(StateBase):
    """A game of Mexican Train from a ruleset, a player count and a seed.

    >>> from engine.games.mexican_train.rules import preset
    >>> g = MexicanTrain(preset("standard"), 4, "railyard")
    >>> g.round, g.engine, g.current_seat, g.hand_count(0)
    (1, Tile(a=12, b=12), 0, 15)
    >>> move = g.legal_moves()[0]
    >>> [type(e).__name__ for e in g.apply(move)]
    ['TilePlayed', 'TurnStarted']
    """

    name: ClassVar[str] = "mexican_train"
    #: MT-TR-1: each player has a train of their own (Chicken Foot has none,
    #: CL-CF-1: its trains are the station's lines, numbered as Mexican trains).
    own_trains: ClassVar[bool] = True
    #: MT-DBL-1: the player of a double owes one more tile (not in Chicken Foot).
    double_owes: ClassVar[bool] = True

    def __init__(
        self,
        ruleset: Rules,
        players: int,
        seed: str,
        *,
        _loaded: tuple[Rules, Ruleset, dict[str, Any]] | None = None,
    ) -> None:
        # ``_loaded``: for from_dict only, the saved rules already resolved
        # (:meth:`_saved_rules`); it sets the round's state itself (a loaded
        # state deals nothing). A native class compiled by mypyc is made only
        # through its __init__: no ``cls.__new__(cls)``.
        if _loaded is None:
            if not isinstance(seed, str):
                raise RailyardError(
                    f"the seed is text, not {type(seed).__name__}", rule="MT-FAIR-1"
                )
            resolved = self._resolve(ruleset, players)
        else:
            resolved = _loaded
        #: The game's rules, as its views show them; the Mexican Train options
        #: the engine plays by (the same object here, not in Chicken Foot).
        self.rules, self.engine_rules, self._rules_saved = resolved
        self.players: Final = players
        self.seed: Final = seed
        self._setup()
        self.opening_events: list[Event] = []
        if _loaded is None:
            self._deal(1, self.opening_events)

    @classmethod
    def _resolve(cls, ruleset: Rules, players: int) -> tuple[Rules, Ruleset, dict[str, Any]]:
        """The rules of a new game: as views show them, as the engine plays
        them, and as saving writes them (each game's own rules type)."""
        if not isinstance(ruleset, Ruleset):
            raise RulesetError(
                f"Mexican Train is played from a Ruleset, not {type(ruleset).__name__}",
                rule="MT-SET-1",
            )
        rules = ruleset.resolve(players)
        return rules, rules, rules.to_dict()

    # ------------------------------------------------------------------ setup

    def _setup(self) -> None:
        """Static facts of the game, and every option read once."""
        rules = self.engine_rules
        n = self.players
        #: Slots below this are the players' own trains (MT-TR-1).
        self.personal_trains = n if self.own_trains else 0
        assert rules.set_max is not None
        assert rules.rounds is not None
        assert rules.hand_size is not None
        assert rules.first_engine is not None
        self.set_max = rules.set_max
        self.rounds_total = rules.rounds
        self._hand_size = rules.hand_size
        self._first_engine = rules.first_engine
        self._full = rules.set_max + 1  # tiles carrying any one number (MT-DBL-5)
        self._slots = self.personal_trains + rules.mexican_trains
        self._set_aside = rules.engine_placement is EnginePlacement.SET_ASIDE
        self._draw_first = rules.first_player is FirstPlayer.DRAW
        self._chain_rule = rules.first_turn is FirstTurn.CHAIN
        self._cover_own = rules.double_followup is DoubleFollowup.COVER_OWN
        self._block = rules.open_doubles_block
        self._one_double = rules.max_doubles_per_turn == 1
        self._answers_needed = 3 if rules.double_answer is DoubleAnswer.CHICKEN_FOOT else 1
        self._end_on_double = rules.end_on_double
        self._knock = rules.knock_penalty if rules.knock_rule is KnockRule.PENALTY else 0
        self._knock_rule = rules.knock_rule is KnockRule.PENALTY
        self._blank_value = rules.double_blank_value
        self._canon = canonical_ids(rules.set_max)
        # Keyed by the personal trains, which fix how slots map to TrainRefs.
        self._moves = _MOVES.setdefault(self.personal_trains, {})
        shape = (self.personal_trains, self._slots)
        rows = _ROWS.get(shape)
        if rows is None:  # once per shape: every state load comes through here
            rows = _ROWS[shape] = [[None] * 640 for _ in range(self._slots)]
        self._rows = rows
        self._legal: list[Move] | None = None
        self.version = 0
        # The moves so far: the text of those loaded with the state (parsed only
        # when asked for), then the moves applied since. Loading and saving a
        # long game then costs nothing per past move.
        self._history_text = ""
        self._history_moves: list[Move] | None = []
        self._history_tail: list[Move] = []
        self.round_scores: list[list[int]] = [[] for _ in range(n)]
        self.over = False
        self.winners: tuple[int, ...] = ()
        self.starter = 0

    # ------------------------------------------------------------------ deal

    def _deal(self, rnd: int, ev: list[Event] | None) -> None:
        """MT-RND-1/2, MT-ENG-1: shuffle and deal round ``rnd``, place its engine."""
        n = self.players
        h = self._hand_size
        engine = self._first_engine - (rnd - 1)
        engine_id = engine << 5 | engine
        label = f"round:{rnd}:deal"
        self.round = rnd
        self.engine_value = engine
        self.hands: list[list[int]] = [[0] * self._full for _ in range(n)]
        self._hand_lists: list[list[int] | None] = [None] * n
        self.counts = [0] * n
        self.pips = [0] * n
        if self._set_aside:
            order = shuffle(self.seed, label, [t for t in self._canon if t != engine_id])
            if rnd > 1:
                self.starter = (self.starter + 1) % n
            else:
                self.starter = self._draw_first_player(engine_id) if self._draw_first else 0
        else:
            order = shuffle(self.seed, label, list(self._canon))
        for seat in range(n):
            hand = self.hands[seat]
            pips = 0
            for tid in order[seat * h : (seat + 1) * h]:
                a, b = tid >> 5, tid & 31
                hand[a] |= 1 << b
                hand[b] |= 1 << a
                pips += a + b
            self.counts[seat] = h
            self.pips[seat] = pips
        # The boneyard is drawn from the front (API.md step 5): keep it reversed
        # so a draw is a pop from the end.
        self.boneyard = order[n * h :][::-1]
        if not self._set_aside:
            self.starter = self._find_engine_holder(rnd, engine_id, ev)
        self.open_ends: list[list[int]] = [[engine] for _ in range(self._slots)]
        self.tile_codes: list[list[list[int]]] = [[[]] for _ in range(self._slots)]
        self.parent_ends: list[list[int]] = [[-1] for _ in range(self._slots)]
        self.markers = [False] * n
        self._available: list[list[int] | None] = [None] * n
        self._branched = False  # a chicken foot split a train this round
        # MT-DBL-5: tiles carrying each number on the table, the engine's
        # included. None after a load until a dead double needs it.
        self._on_table: list[int] | None = [0] * self._full
        self._on_table[engine] = 1
        self.doubles: list[OpenDouble] = []  # oldest first
        self.first_turn_pending = [True] * n
        if ev is not None:
            ev.append(RoundStarted(rnd, TILES[engine_id], self.starter))
        self._start_turn(self.starter, ev)

    def _draw_first_player(self, engine_id: int) -> int:
        """MT-ENG-1 ``draw``: highest pip total starts; tied players draw again."""
        contenders = list(range(self.players))
        k = 1
        while True:
            drawn = shuffle(
                self.seed,
                f"round:1:first-player:{k}",
                [t for t in self._canon if t != engine_id],
            )
            totals = [(drawn[j] >> 5) + (drawn[j] & 31) for j in range(len(contenders))]
            best = max(totals)
            contenders = [c for c, t in zip(contenders, totals, strict=True) if t == best]
            if len(contenders) == 1:
                return contenders[0]
            k += 1

    def _find_engine_holder(self, rnd: int, engine_id: int, ev: list[Event] | None) -> int:
        """MT-ENG-1 ``holder_plays``: the holder places the engine; if nobody holds
        it, seats draw in turn until it appears (not moves: no version)."""
        e = engine_id & 31
        n = self.players
        holder = next((s for s in range(n) if self.hands[s][e] >> e & 1), -1)
        seat = 0 if rnd == 1 else (self.starter + 1) % n
        while holder < 0:
            tid = self.boneyard.pop()
            self._add(seat, tid)
            if ev is not None:
                ev.append(TileDrawn(seat, TILES[tid], "engine_search"))
            if tid == engine_id:
                holder = seat
            seat = (seat + 1) % n
        self._remove(holder, engine_id)
        return holder

    # ------------------------------------------------------------------ hands

    def _add(self, seat: int, tid: int) -> None:
        a, b = tid >> 5, tid & 31
        self._hand_lists[seat] = None
        hand = self.hands[seat]
        hand[a] |= 1 << b
        hand[b] |= 1 << a
        self.counts[seat] += 1
        self.pips[seat] += a + b

    def _remove(self, seat: int, tid: int) -> None:
        a, b = tid >> 5, tid & 31
        self._hand_lists[seat] = None
        hand = self.hands[seat]
        hand[a] &= ~(1 << b)
        hand[b] &= ~(1 << a)
        self.counts[seat] -= 1
        self.pips[seat] -= a + b

    def _holds(self, seat: int, tid: int) -> bool:
        return bool(self.hands[seat][tid >> 5] >> (tid & 31) & 1)

    # ------------------------------------------------------------------ turns

    def _start_turn(self, seat: int, ev: list[Event] | None) -> None:
        self.current_seat = seat
        self.owes = False  # MT-DBL-1: a tile is owed for a double
        # API.md turn.drewThisTurn: the seat has drawn during this turn (MT-DR-1,
        # MT-DBL-6). It only says so: "one draw per tile owed" needs no flag, since
        # a drawn tile that fits is forced (``forced``) and one that does not ends
        # the turn, so a seat with no play has not drawn for the tile it owes now.
        self.drew = False
        self.forced = -1  # MT-DR-1: a playable drawn tile must be played
        self.doubles_this_turn = 0
        self.played_this_turn = 0
        self.penalties = 0  # MT-KNOCK-1
        self.last_double: OpenDouble | None = None  # MT-DBL-2 cover_own target
        # MT-FT-1/2: a chain first turn is on the own train only; an open
        # blocking double at its start wins, and that is the whole turn.
        chain = self._chain_rule and self.first_turn_pending[seat]
        if chain and self._block and self.doubles:
            chain = False
        self.own_train_only = chain
        self.chain_open = chain
        if ev is not None:
            ev.append(TurnStarted(seat))

    def _end_turn(self, marker: bool, ev: list[Event] | None) -> None:
        seat = self.current_seat
        if marker and self.own_trains and not self.markers[seat]:
            # MT-TR-4: a draw that could not be played, or a pass.
            self.markers[seat] = True
            self._available = [None] * self.players
            if ev is not None:
                ev.append(MarkerPlaced(seat))
        if self.penalties:
            # MT-KNOCK-1: penalty draws come at the end of the turn, place no marker.
            for _ in range(min(self.penalties * self._knock, len(self.boneyard))):
                tid = self.boneyard.pop()
                self._add(seat, tid)
                if ev is not None:
                    ev.append(TileDrawn(seat, TILES[tid], "penalty"))
        self.first_turn_pending[seat] = False
        for double in self.doubles:
            double.played_this_turn = False  # MT-DBL-3: blocks from the end of this turn
        if not self.boneyard and self._is_blocked():
            self._end_round(-1, RoundEndReason.BLOCKED, ev)
            return
        self._start_turn((seat + 1) % self.players, ev)

    def _is_blocked(self) -> bool:
        """MT-END-3: with the boneyard empty, no hand tile fits anywhere, even with
        every marker on and every first turn over; a blocking double stays the
        only target."""
        if self._block and self.doubles:
            values = [self.doubles[0].value]
        else:
            values = [v for ends in self.open_ends for v in ends if v >= 0]
        return not any(hand[v] for hand in self.hands for v in values)

    def _end_round(self, winner: int, reason: RoundEndReason, ev: list[Event] | None) -> None:
        """MT-SC-1: the player who went out scores 0, the others their hand."""
        scores = []
        for seat in range(self.players):
            score = self.pips[seat]
            if self.hands[seat][0] & 1:
                score += self._blank_value  # T-3
            scores.append(score)
            self.round_scores[seat].append(score)
        if ev is not None:
            ev.append(RoundEnded(self.round, reason, tuple(scores)))
        self._legal = None
        if self.round >= self.rounds_total:
            self.over = True
            self.winners = self._compute_winners()
            if ev is not None:
                ev.append(GameEnded(tuple(self.totals), self.winners, self.seed))
            return
        self._deal(self.round + 1, ev)

    def _compute_winners(self) -> tuple[int, ...]:
        """MT-SC-2/3: lowest total; then most rounds won; then lowest non-zero round."""
        totals = self.totals
        tied = [s for s in range(self.players) if totals[s] == min(totals)]
        wins = [sum(1 for x in rs if x == 0) for rs in self.round_scores]
        tied = [s for s in tied if wins[s] == max(wins[t] for t in tied)]
        lowest = [min((x for x in rs if x > 0), default=1 << 30) for rs in self.round_scores]
        tied = [s for s in tied if lowest[s] == min(lowest[t] for t in tied)]
        return tuple(tied)

    # ------------------------------------------------------------------ targets

    def _targets(self) -> list[tuple[int, int, int]]:
        """Where the seat to move may place a tile now: ``(slot, end, value)``."""
        seat = self.current_seat
        doubles = self.doubles
        exclude: list[OpenDouble] = []
        if doubles:
            first = doubles[0]
            if self._block and not first.played_this_turn:
                # MT-DBL-3/4: the oldest blocking double is the only target,
                # whichever train it is on, marker or not.
                return [(first.slot, first.end, first.value)]
            if self.owes:
                last = self.last_double
                if self._cover_own and last is not None:
                    # MT-DBL-2 cover_own (a dead double frees it, MT-DBL-5).
                    return [(last.slot, last.end, last.value)]
                if self._block:
                    # MT-DBL-4: of this turn's doubles only the oldest may be covered.
                    mine = [d for d in doubles if d.played_this_turn]
                    exclude = mine[1:]
        open_ends = self.open_ends
        if self.own_train_only:
            slots: Iterable[int] = (seat,)
        else:
            available = self._available[seat]
            if available is None:
                available = self._available[seat] = self._available_slots(seat)
            slots = available
        targets = []
        for slot in slots:
            for end, value in enumerate(open_ends[slot]):
                if value >= 0:
                    targets.append((slot, end, value))
        if exclude:
            shut = {(d.slot, d.end) for d in exclude}
            targets = [t for t in targets if (t[0], t[1]) not in shut]
        return targets

    def _play_move(self, key: int) -> Move:
        """The interned play move for ``key = (tid << 12 | slot << 6 | end) << 1 | announce``."""
        move = self._moves.get(key)
        if move is None:
            tid = key >> 13
            slot, end = key >> 7 & 63, key >> 1 & 63
            ref = _ref(self.personal_trains, slot, end)
            move = Move(MoveKind.PLAY, TILES[tid], ref, bool(key & 1))
            self._moves[key] = move
            if not key & 127:
                self._rows[slot][tid] = move
        return move

    def _generate(self) -> list[Move]:
        if self.over:
            return []
        seat = self.current_seat
        hand = self.hands[seat]
        moves: list[Move] = []
        if (
            self.doubles
            or self.forced >= 0
            or self.own_train_only
            or self.doubles_this_turn
            or self._branched
        ):
            self._generate_constrained(hand, moves)
        else:
            # The common case, kept tight: no open double, no drawn tile, no
            # first-turn chain, no branches; the seat's own train, the Mexican
            # trains and the marked trains (MT-TR-3), one open end each.
            available = self._available[seat]
            if available is None:
                available = self._available[seat] = self._available_slots(seat)
            open_ends = self.open_ends
            rows = self._rows
            for slot in available:
                value = open_ends[slot][0]
                bits = hand[value]
                if bits:
                    tids = _TID[value]
                    row = rows[slot]
                    while bits:
                        low = bits & -bits
                        tid = tids[low.bit_length() - 1]
                        bits ^= low
                        moves.append(row[tid] or self._play_move((tid << 12 | slot << 6) << 1))
        if moves and self._knock_rule and self.counts[seat] == 2:
            # MT-KNOCK-1: the play that leaves one tile may carry the announcement.
            announced = [self._play_move(self._key(m) | 1) for m in moves]
            moves = [x for pair in zip(moves, announced, strict=True) for x in pair]
        if self.chain_open and self.played_this_turn and not self.owes:
            moves.append(END_TURN)  # MT-FT-1
        if not moves:
            # MT-DR-1/2, MT-DBL-6: no play, so no drawn tile is pending (it would
            # be forced): draw one for the tile owed now, if any is left.
            moves.append(DRAW if self.boneyard else PASS)
        return moves

    def _available_slots(self, seat: int) -> list[int]:
        """MT-TR-3: the seat's own train, every Mexican train, every marked train."""
        n = self.personal_trains
        markers = self.markers
        return [s for s in range(self._slots) if s == seat or s >= n or markers[s]]

    def _generate_constrained(self, hand: list[int], moves: list[Move]) -> None:
        forced = self.forced
        no_doubles = self._one_double and self.doubles_this_turn > 0  # MT-DBL-4
        for slot, end, value in self._targets():
            if forced >= 0:
                if forced >> 5 == value or forced & 31 == value:
                    moves.append(self._play_move((forced << 12 | slot << 6 | end) << 1))
                continue
            bits = hand[value]
            tids = _TID[value]
            while bits:
                low = bits & -bits
                other = low.bit_length() - 1
                bits ^= low
                if other == value and no_doubles:
                    continue
                moves.append(self._play_move((tids[other] << 12 | slot << 6 | end) << 1))

    def _key(self, move: Move) -> int:
        tile, train = move.tile, move.train
        assert tile is not None
        assert train is not None
        slot = train.number if train.kind is _SEAT else self.personal_trains + train.number
        return (tile.a << 5 | tile.b) << 13 | slot << 7 | train.end << 1 | move.announce

    # ------------------------------------------------------------------ moves

    # ``move: object``: whatever the caller passes is judged by the rules
    # (T-2 for what is not a move), compiled or not (engine.checks).
    def apply(self, move: object, seat: int | None = None) -> list[Event]:
        """Apply ``move`` for the seat to move (``seat``, when given, must be it).

        Returns the events it caused. Raises a :class:`MoveError` (the state is
        then unchanged): :class:`MalformedMoveError`, :class:`NotYourTurnError`,
        :class:`GameOverError` or :class:`IllegalMoveError` naming the reason
        and the rule id.
        """
        events: list[Event] = []
        self._apply(move, seat, events)
        return events

    def push(self, move: object, seat: int | None = None) -> None:
        """:meth:`apply` without building events: for playouts and search."""
        self._apply(move, seat, None)

    def _apply(self, given: object, seat: int | None, ev: list[Event] | None) -> None:
        if self.over:
            raise GameOverError(
                f"{_text(given)} is not legal: the game is over, all {self.rounds_total} "
                "rounds have been played",
                rule="MT-RND-1",
            )
        if seat is not None and seat != self.current_seat:
            raise NotYourTurnError(
                f"{_text(given)} is not legal: it is seat {self.current_seat}'s turn, "
                f"not seat {seat}'s",
                rule="MT-ENG-2",
            )
        legal = self._legal
        if legal is None:
            legal = self._legal = self._generate()
        move = given if given in legal else self._normalize(given, legal)
        kind = move.kind
        if kind is _PLAY:
            self._play(move, ev)
        elif kind is _DRAW:
            self._draw(ev)
        elif kind is _PASS:
            if ev is not None:
                ev.append(Passed(self.current_seat))
            self._end_turn(True, ev)  # MT-DR-2
        else:
            self._end_turn(False, ev)  # MT-FT-1 END_TURN
        self.version += 1
        self._history_tail.append(move)
        self._legal = None

    def _normalize(self, move: object, legal: list[Move]) -> Move:
        """The legal move ``move`` stands for, or the error that explains why none."""
        # MT-KNOCK-1: the flag is kept for the lookup; ``exposed`` means
        # nothing in this game (CL-MAT-1's) and is dropped.
        move = well_formed(move, self.set_max)._replace(exposed=None)
        if move in legal:
            return move
        if move.announce:
            plain = move._replace(announce=False)
            if plain in legal:
                return plain  # MT-KNOCK-1: the flag on any other play is ignored
        why = self._explain(move, legal)
        # The message names the move, so a log line or a client error stands alone.
        raise IllegalMoveError(
            f"{move} is not legal: {why.message}", rule=why.rule, reason=why.reason
        )

    def _explain(self, move: Move, legal: list[Move]) -> MoveError:
        """Why ``move`` (well-formed, not legal) is refused: the reason and rule."""
        seat = self.current_seat
        plays = [m for m in legal if m.kind is MoveKind.PLAY]
        if move.kind is MoveKind.DRAW:
            if plays:
                return _illegal("MUST_PLAY", "MT-TURN-2", "you hold a playable tile: play it")
            if END_TURN in legal:
                return _illegal("CANNOT_DRAW", "MT-FT-1", "your chain cannot go on: end the turn")
            return _illegal("CANNOT_DRAW", "MT-DR-2", "the boneyard is empty: pass")
        if move.kind is MoveKind.PASS:
            if plays:
                return _illegal("MUST_PLAY", "MT-TURN-2", "you hold a playable tile: play it")
            if END_TURN in legal:
                return _illegal("CANNOT_PASS", "MT-FT-1", "your chain cannot go on: end the turn")
            return _illegal("CANNOT_PASS", "MT-DR-2", "the boneyard is not empty: draw")
        if move.kind is MoveKind.END_TURN:
            if not self.chain_open:
                return _illegal(
                    "CANNOT_END_TURN", "MT-FT-1", "only a chain first turn is ended by hand"
                )
            if self.owes:
                return _illegal(
                    "MUST_PAY_DOUBLE", "MT-FT-3", "you owe a tile for your double: play or draw"
                )
            return _illegal("CANNOT_END_TURN", "MT-FT-1", "play at least one tile first")
        tile, train = move.tile, move.train
        assert tile is not None
        assert train is not None
        tid = tile.a << 5 | tile.b
        personal = self.personal_trains
        if train.kind is TrainKind.SEAT and 0 <= train.number < personal:
            slot = train.number
        elif train.kind is TrainKind.MEXICAN and 0 <= train.number < self._slots - personal:
            slot = personal + train.number
        else:
            return _illegal("NO_SUCH_TRAIN", "MT-TR-3", f"there is no train {train}")
        if not 0 <= train.end < len(self.open_ends[slot]) or self.open_ends[slot][train.end] < 0:
            return _illegal("NO_SUCH_TRAIN", "MT-DBL-7", f"train {train} has no open end there")
        if not self._holds(seat, tid):
            return _illegal("TILE_NOT_IN_HAND", "MT-TURN-1", f"{tile} is not in your hand")
        if self.forced >= 0 and tid != self.forced:
            drawn = TILES[self.forced]
            return _illegal(
                "MUST_PLAY_DRAWN_TILE", "MT-DR-1", f"you drew {drawn}: play it, and only it"
            )
        if tile.a == tile.b and self._one_double and self.doubles_this_turn:
            return _illegal("ONE_DOUBLE_PER_TURN", "MT-DBL-4", "one double per turn")
        place = (slot, train.end)
        doubles = self.doubles
        if doubles and self._block and not doubles[0].played_this_turn:
            first = doubles[0]
            if place != (first.slot, first.end):
                if any(place == (d.slot, d.end) for d in doubles):
                    return _illegal(
                        "OLDEST_DOUBLE_FIRST",
                        "MT-DBL-4",
                        f"cover the oldest open double first, on {self._ref(first)}",
                    )
                return _illegal(
                    "MUST_COVER_DOUBLE",
                    "MT-DBL-3",
                    f"the open double {first.value}-{first.value} on {self._ref(first)} "
                    "must be covered first",
                )
        elif self.owes and self._cover_own and self.last_double is not None:
            last = self.last_double
            if place != (last.slot, last.end):
                return _illegal(
                    "MUST_COVER_OWN_DOUBLE",
                    "MT-DBL-2",
                    f"the owed tile must cover your double on {self._ref(last)}",
                )
        elif self.own_train_only and slot != seat:
            return _illegal(
                "FIRST_TURN_OWN_TRAIN", "MT-FT-2", "on your first turn play on your own train only"
            )
        elif slot < personal and slot != seat and not self.markers[slot]:
            return _illegal(
                "TRAIN_NOT_AVAILABLE", "MT-TR-3", f"seat {slot}'s train carries no marker"
            )
        elif any(place == (d.slot, d.end) for d in doubles[1:] if d.played_this_turn):
            return _illegal(
                "OLDEST_DOUBLE_FIRST", "MT-DBL-4", "cover this turn's doubles oldest first"
            )
        value = self.open_ends[slot][train.end]
        if value not in (tile.a, tile.b):
            return _illegal(
                "TILE_DOES_NOT_MATCH", "MT-TR-5", f"{tile} does not match the open end {value}"
            )
        return _illegal("ILLEGAL_MOVE", "MT-TURN-1", f"{move} is not legal now")

    def _ref(self, double: OpenDouble) -> TrainRef:
        return _ref(self.personal_trains, double.slot, double.end)

    def _play(self, move: Move, ev: list[Event] | None) -> None:
        tile, train = move.tile, move.train
        assert tile is not None
        assert train is not None
        seat = self.current_seat
        slot = train.number if train.kind is _SEAT else self.personal_trains + train.number
        end = train.end
        a, b = tile
        ends = self.open_ends[slot]
        value = ends[end]
        other = b if a == value else a
        self._hand_lists[seat] = None
        hand = self.hands[seat]
        hand[a] &= ~(1 << b)
        hand[b] &= ~(1 << a)
        self.counts[seat] -= 1
        self.pips[seat] -= a + b
        on_table = self._on_table
        if on_table is not None:
            on_table[a] += 1
            if a != b:
                on_table[b] += 1
        doubles = self.doubles
        answered = None
        for double in doubles:
            if double.slot == slot and double.end == end:
                answered = double
                break
        if answered is not None and self._answers_needed > 1:
            # MT-DBL-7: each answer to a chicken-foot double starts a branch.
            placed_end = len(ends)
            ends.append(other)
            self._branched = True
            self.tile_codes[slot].append([value << 5 | other])
            self.parent_ends[slot].append(end)
        else:
            placed_end = end
            ends[end] = other
            self.tile_codes[slot][end].append(value << 5 | other)
        if ev is not None:
            ev.append(TilePlayed(seat, tile, train))
        if answered is not None:
            answered.answers += 1
            if answered.answers >= self._answers_needed:
                doubles.remove(answered)
                if answered is self.last_double:
                    self.last_double = None
                if self._answers_needed > 1:
                    ends[end] = -1  # the trunk ends at the chicken foot
                if ev is not None:
                    ev.append(DoubleSatisfied(train, value))
        if slot == seat and self.markers[seat]:  # never set without own trains
            self.markers[seat] = False  # MT-TR-4
            self._available = [None] * self.players
            if ev is not None:
                ev.append(MarkerRemoved(seat))
        if a == b:
            double = OpenDouble(slot, placed_end, a, 0, True)
            doubles.append(double)
            self.last_double = double
        if doubles:
            self._bury_dead(a, b, ev)
        self.played_this_turn += 1
        self.forced = -1
        # MT-END-1/2: the last tile ends the round (a double only if end_on_double).
        if not self.counts[seat] and (a != b or self._end_on_double):
            self._end_round(seat, RoundEndReason.DOMINO, ev)
            return
        if self._knock_rule and self.counts[seat] == 1 and not move.announce:
            self.penalties += 1  # MT-KNOCK-1
        if a == b and self.double_owes:
            # MT-DBL-1/4/6: a double owes one more tile, from the hand or one new
            # draw; ``drew`` stays as it is: the seat still drew this turn (API.md).
            self.owes = True
            self.doubles_this_turn += 1
            return
        self.owes = False
        if not self.chain_open:
            self._end_turn(False, ev)

    def _bury_dead(self, a: int, b: int, ev: list[Event] | None) -> None:
        """MT-DBL-5: a double whose number is all on the table is satisfied for good."""
        full = self._full
        for double in list(self.doubles):
            value = double.value
            if (value in (a, b)) and self.on_table[value] == full:
                self.doubles.remove(double)
                if double is self.last_double:
                    self.last_double = None
                if ev is not None:
                    ev.append(DoubleSatisfied(self._ref(double), value, True))

    def _draw(self, ev: list[Event] | None) -> None:
        """MT-DR-1 / MT-DBL-6: draw one; play it if it fits, else the turn ends."""
        seat = self.current_seat
        tid = self.boneyard.pop()
        self._add(seat, tid)
        self.drew = True
        self.chain_open = False  # MT-FT-3: a drawn tile that is played ends the turn
        if ev is not None:
            ev.append(TileDrawn(seat, TILES[tid]))
        a, b = tid >> 5, tid & 31
        if a == b and self._one_double and self.doubles_this_turn:
            fits = False  # MT-DBL-4: a second double is unplayable
        else:
            fits = any(v in (a, b) for _, _, v in self._targets())
        if fits:
            self.forced = tid
        else:
            self._end_turn(True, ev)

    # ------------------------------------------------------------------ queries

    @property
    def on_table(self) -> list[int]:
        """MT-DBL-5: how many tiles carrying each number are on the table."""
        if self._on_table is None:
            # Counted only when a dead double is in question: a request that
            # loads a state usually never asks.
            on_table = [0] * self._full
            on_table[self.engine_value] = 1
            for train in self.tile_codes:
                for codes in train:
                    for code in codes:
                        x, y = code >> 5, code & 31
                        on_table[x] += 1
                        if x != y:
                            on_table[y] += 1
            self._on_table = on_table
        return self._on_table

    @property
    def totals(self) -> list[int]:
        """MT-SC-2: each seat's total over the rounds played."""
        return [sum(rs) for rs in self.round_scores]

    @property
    def engine(self) -> Tile:
        return TILES[self.engine_value << 5 | self.engine_value]

    def is_over(self) -> bool:
        return self.over

    @property
    def status(self) -> GameStatus:
        return GameStatus.FINISHED if self.over else GameStatus.IN_PROGRESS

    def view(self, seat: int | None = None) -> GameView:
        """What ``seat`` (``None``: a spectator) may see (MT-VIS-1/2/3)."""
        return mexican_train_view(self, seat)

    def hand(self, seat: int) -> list[Tile]:
        """Seat ``seat``'s tiles in canonical order (private: MT-VIS-2)."""
        return list(map(TILES.__getitem__, self._hand_list(seat)))  # a C loop

    def _hand_list(self, seat: int) -> list[int]:
        """Seat ``seat``'s tile ids in canonical order. Kept until the hand
        changes: a move changes one hand, and saving a state lists them all
        (read-only for callers)."""
        ids = self._hand_lists[seat]
        if ids is None:
            ids = self._hand_lists[seat] = _hand_ids(self.hands[seat])
        return ids

    def hand_count(self, seat: int) -> int:
        return self.counts[seat]

    def boneyard_tiles(self) -> list[Tile]:
        """The boneyard in draw order (hidden from every view: MT-VIS-3)."""
        return [TILES[t] for t in reversed(self.boneyard)]

    def train_tiles_of(self, slot: int, end: int = 0) -> list[Tile]:
        """Branch ``end`` of train ``slot``, oriented ``touching-open`` (API.md)."""
        # TILES[x << 5 | y] is Tile(x, y); map keeps the loop in C (views list
        # every tile on the table, for every request).
        return list(map(TILES.__getitem__, self.tile_codes[slot][end]))

    def open_doubles(self) -> list[OpenDoubleView]:
        """Every unsatisfied double that is not dead, oldest first."""
        return [OpenDoubleView(self._ref(d), d.value, d.answers) for d in self.doubles]

    def train_ref(self, slot: int, end: int = 0) -> TrainRef:
        return _ref(self.personal_trains, slot, end)

    @property
    def slot_count(self) -> int:
        return self._slots

    # ------------------------------------------------------------------ state

    def to_dict(self) -> dict[str, Any]:
        """The whole state as plain JSON values (see :meth:`to_bytes`).

        A value of its own: callers edit it (the determinizer, scenario tests)
        and nothing they do reaches this game. The game's lists hold ints and
        bools only, so a shallow copy of each is enough, and each open double
        is written as a new :class:`SavedDouble`; it is on every move's path
        (the service saves the state), so the copies are made in C loops.
        """
        hand_lists = self._hand_lists
        if None in hand_lists:
            for seat in range(self.players):
                self._hand_list(seat)  # lists the hands that changed since the last save
        copy = list.copy  # list(map(copy, ...)) copies in a C loop
        doubles: list[SavedDouble] = [
            {
                "slot": d.slot,
                "end": d.end,
                "value": d.value,
                "answers": d.answers,
                "played_this_turn": d.played_this_turn,
            }
            for d in self.doubles
        ]
        last = self.last_double
        turn: SavedTurn = {
            "seat": self.current_seat,
            "owes": self.owes,
            "drew": self.drew,
            "forced": self.forced,
            "doubles_this_turn": self.doubles_this_turn,
            "played_this_turn": self.played_this_turn,
            "penalties": self.penalties,
            "last_double": -1 if last is None else self.doubles.index(last),
            "own_train_only": self.own_train_only,
            "chain_open": self.chain_open,
        }
        return {
            "format": STATE_FORMAT,
            "game": self.name,
            "rules": dict(self._rules_saved),  # a copy: the saved dict is shared (cached)
            "players": self.players,
            "seed": self.seed,
            "version": self.version,
            "round": self.round,
            "starter": self.starter,
            "hands": list(map(copy, cast("list[list[int]]", hand_lists))),
            "boneyard": self.boneyard[:],
            "trains": self._trains_saved(),
            "markers": self.markers[:],
            "doubles": doubles,
            "first_turn_pending": self.first_turn_pending[:],
            "turn": turn,
            "round_scores": list(map(copy, self.round_scores)),
            "over": self.over,
            "winners": list(self.winners),
            "history": self._history_string(),
        }

    def _trains_saved(self) -> list[list[list[Any]]]:
        """Each train as ``[[parent end, open end, tile codes], ...]``, a branch each
        (the codes copied: see :meth:`to_dict`)."""
        out: list[list[list[Any]]] = []
        for parents, ends, codes in zip(
            self.parent_ends, self.open_ends, self.tile_codes, strict=True
        ):
            if len(ends) == 1:  # no chicken foot (most trains): no inner loop
                out.append([[parents[0], ends[0], codes[0][:]]])
            else:
                out.append([[p, e, c[:]] for p, e, c in zip(parents, ends, codes, strict=True)])
        return out

    def to_bytes(self) -> bytes:
        """A compact serialized form of the whole state; :func:`load` reverses it."""
        return _ENCODER.encode(self.to_dict()).encode()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MexicanTrain:
        """Rebuild a state from :meth:`to_dict`'s output, without replaying it.

        Format 1 states (written before format 2) load too: games stored by
        an older service go on after an upgrade, and are saved as format 2.
        """
        try:
            state_format = data["format"]
            if state_format not in (STATE_FORMAT, 1) or data["game"] != cls.name:
                raise CorruptStateError(
                    f"state format {state_format!r} is not {STATE_FORMAT} (nor 1, still read)"
                )
            # Not sorted: states are written in one key order, and another
            # order only costs a second cache entry.
            loaded = cls._saved_rules(tuple(data["rules"].items()))
            self = cls(loaded[1], data["players"], data["seed"], _loaded=loaded)
            self.version = data["version"]
            self.round = data["round"]
            self.engine_value = self._first_engine - (self.round - 1)
            self.starter = data["starter"]
            n = self.players
            self.hands = [[0] * self._full for _ in range(n)]
            self._hand_lists = [None] * n
            self.counts = [0] * n
            self.pips = [0] * n
            bits, pips_of, canonical = _TILE_BITS, _PIPS, _CANONICAL
            # Typed, so that the compiled build runs these loops on C ints
            # (every state load comes through here).
            saved_hands: list[list[int]] = data["hands"]
            for seat, tids in enumerate(saved_hands):
                hand = self.hands[seat]
                pips = 0
                # As to_dict wrote it (ascending ids, each a <= b, no repeat):
                # saving again can reuse it.
                as_saved = True
                previous = -1
                for tid in tids:
                    a, bit_b, b, bit_a = bits[tid]
                    hand[a] |= bit_b
                    hand[b] |= bit_a
                    pips += pips_of[tid]
                    if tid <= previous or not canonical[tid]:
                        as_saved = False
                    previous = tid
                self.counts[seat] = len(tids)
                self.pips[seat] = pips
                if as_saved:
                    self._hand_lists[seat] = list(tids)
            self.boneyard = list(data["boneyard"])
            self.parent_ends, self.open_ends, self.tile_codes = [], [], []
            for train in data["trains"]:
                if len(train) == 1:  # no chicken foot: one branch (most trains)
                    ((parent, open_end, codes),) = train
                    self.parent_ends.append([parent])
                    self.open_ends.append([open_end])
                    self.tile_codes.append([list(codes)])
                else:
                    self.parent_ends.append([br[0] for br in train])
                    self.open_ends.append([br[1] for br in train])
                    self.tile_codes.append([list(br[2]) for br in train])
            self._on_table = None
            self.markers = list(data["markers"])
            self._available = [None] * n
            self._branched = any(len(train) > 1 for train in self.open_ends)
            if state_format == STATE_FORMAT:
                turn = data["turn"]
                self.doubles = [
                    OpenDouble(
                        d["slot"], d["end"], d["value"], d["answers"], bool(d["played_this_turn"])
                    )
                    for d in data["doubles"]
                ]
            else:  # format 1: the turn and each double a positional list
                turn = dict(zip(_TURN_FIELDS_1, data["turn"], strict=True))
                self.doubles = [
                    OpenDouble(slot, end, value, answers, bool(this_turn))
                    for slot, end, value, answers, this_turn in data["doubles"]
                ]
            self.first_turn_pending = list(data["first_turn_pending"])
            self.current_seat = turn["seat"]
            self.owes = turn["owes"]
            self.drew = turn["drew"]
            self.forced = turn["forced"]
            self.doubles_this_turn = turn["doubles_this_turn"]
            self.played_this_turn = turn["played_this_turn"]
            self.penalties = turn["penalties"]
            last = turn["last_double"]
            self.last_double = None if last < 0 else self.doubles[last]
            self.own_train_only = turn["own_train_only"]
            self.chain_open = turn["chain_open"]
            shape = (len(self.hands), len(self.markers), len(self.first_turn_pending))
            if shape != (n, n, n) or len(self.open_ends) != self._slots:
                raise CorruptStateError("the seats or trains do not match the player count")
            if not 0 <= self.current_seat < n or not 1 <= self.round <= self.rounds_total:
                raise CorruptStateError("the seat to move or the round is out of range")
            self.round_scores = [list(rs) for rs in data["round_scores"]]
            self.over = data["over"]
            self.winners = tuple(data["winners"])
            text = data["history"]
            if not isinstance(text, str) or (text.count(" ") + 1 if text else 0) != self.version:
                raise CorruptStateError("the history does not match the version")
            self._history_text = text
            self._history_moves = None
            return self
        except CorruptStateError:
            raise
        except (RailyardError, KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise CorruptStateError(f"not a Mexican Train state: {exc!r}") from exc

    @classmethod
    def engine_ruleset_of(cls, rules: Rules) -> Ruleset | None:
        """The Mexican Train options a view's ``rules`` play as (``None``: not
        this game's rules)."""
        return rules if isinstance(rules, Ruleset) else None

    @classmethod
    def _saved_rules(
        cls, items: tuple[tuple[str, Any], ...]
    ) -> tuple[Rules, Ruleset, dict[str, Any]]:
        """A saved state's rules: as views show them, as the engine plays them,
        and as saving writes them back."""
        ruleset, saved = _ruleset_of(items)
        return ruleset, ruleset, saved

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MexicanTrain):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        state = "over" if self.over else f"seat {self.current_seat} to move"
        return (
            f"<{type(self).__name__} {self.rules.preset} {self.players}p round {self.round}/"
            f"{self.rounds_total} v{self.version}: {state}>"
        )

    @property
    def seed_sha256(self) -> str:
        """MT-FAIR-1: the commitment to the seed, public from the start."""
        return hashlib.sha256(self.seed.encode()).hexdigest()


_ENCODER: Final = json.JSONEncoder(separators=(",", ":"))


@functools.lru_cache(maxsize=256)
def _ruleset_of(items: tuple[tuple[str, Any], ...]) -> tuple[Ruleset, dict[str, Any]]:
    # Every request loads a state; its ruleset is one of a few, so build each
    # once, with the dict that saving writes back (never handed out: copied).
    ruleset = Ruleset.from_dict(dict(items))
    return ruleset, ruleset.to_dict()


def _text(move: object) -> str:
    """A move's text form for a message, whatever the caller passed."""
    try:
        return str(move) if isinstance(move, Move) else repr(move)
    except (TypeError, ValueError, AttributeError):
        return repr(move)


def _illegal(reason: str, rule: str, message: str) -> IllegalMoveError:
    return IllegalMoveError(message, rule=rule, reason=reason)
