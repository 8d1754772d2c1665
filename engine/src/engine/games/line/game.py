"""The line games (RULES.md 3.1-3.3): one state for Block, Draw, All Fives,
Bergen and Matador, teams included.

A :class:`LineGame` holds a whole game: hands are dealt one after another
from the seed (API.md's shuffle, label ``round:<h>:deal``) until a player or
a team reaches the target score (CL-SC-2), so ``(rules, players, seed,
moves)`` rebuilds it exactly. What differs between the games is read once,
in ``_setup``, from :class:`~engine.games.line.rules.LineGameFacts` and the
options: whether a blocked player draws, how a tile joins an end, what a
placement scores.

Inside, a tile is an id ``a << 5 | b`` (:mod:`engine.tiles`); a hand is one
bit mask per pip value (``hand[v]`` has bit ``x`` set when the tile ``v-x``
is held), so the tiles that carry an end's number ``v`` are ``hand[v]``. The
line is a list of oriented codes ``left << 5 | right``, left to right, and
its two ends are plain ints (``-1`` before the opening).

Readings where RULES.md leaves a choice:

* ``RoundEnded.scores`` (and ``round_scores``) hold everything a seat scored
  in the hand: points during play (CL-A5-1, CL-BERGEN-1) and the hand's
  end; ``scores`` (a player's total) include the points of the hand being
  played.
* When points during play reach the target before the hand ends (CL-SC-2),
  the game ends with ``PointsScored`` then ``GameEnded``: the hand is
  recorded in ``round_scores`` but no ``RoundEnded`` is sent, since it
  ended neither by a domino nor by a block. When that tile also ends the
  hand, ``RoundEnded`` comes first, with the in-play points only.
* A drawn tile that fits is the only tile that fits (nothing fitted before
  the draw, and the ends have not changed), so CL-DRAW-1's "only legal
  play" needs no flag.
* The first turn of a seat (API.md ``turn.firstTurn``) is any turn before
  every seat has had one: turns go strictly clockwise (CL-TURN-1).

Speed: random 2-player Block playouts (``legal_moves`` then ``push``, a new
game per playout, deals included) are held to ten times as many hands per
second as OpenSpiel's ``python_block_dominoes`` random playouts
(``bench/engine.py``, in one process, interleaved; the readings are in
docs/performance.md). API.md's SHA-256 shuffle is a good part of a one-hand
playout, which OpenSpiel's chance nodes do not pay; most hands end blocked,
so the block check after each placement is on the hot path.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

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
    Event,
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
)
from engine.game import GameStatus, StateBase
from engine.games.line.rules import (
    BlockedScoring,
    InPlay,
    LineRules,
    Matching,
    Opening,
)
from engine.moves import DRAW, PASS, Move, MoveKind, TrainKind, TrainRef
from engine.shuffle import shuffle
from engine.tiles import TILE_BITS as _TILE_BITS
from engine.tiles import TILE_OF_PAIR as _TID
from engine.tiles import TILES, Tile, canonical_ids
from engine.tiles import hand_ids as _hand_ids
from engine.view import GameView, LineView, PlayerView, TeamView, TurnView

#: Version of :meth:`LineGame.to_dict`'s format.
STATE_FORMAT: Final = 1

_PLAY: Final = MoveKind.PLAY
_DRAW: Final = MoveKind.DRAW
_PASS: Final = MoveKind.PASS
_LINE: Final = TrainKind.LINE

#: The two ends of the line (CL-LINE-1): 0 left, 1 right.
LEFT: Final = TrainRef(TrainKind.LINE, 0, 0)
RIGHT: Final = TrainRef(TrainKind.LINE, 0, 1)
_ENDS: Final = (LEFT, RIGHT)


#: Interned plays: ``_PLAYS[end][tid]`` (no exposed number).
_PLAYS: Final = [[Move(MoveKind.PLAY, tile, ref) for tile in TILES] for ref in _ENDS]


#: CL-MAT-1: the matadors, in every set.
MATADORS: Final = (0 << 5 | 0, 1 << 5 | 6, 2 << 5 | 5, 3 << 5 | 4)
_IS_MATADOR: Final = [t in MATADORS for t in range(1024)]
#: The two-way matadors' moves: ``_MATADOR_PLAYS[end][tid]`` lists one per
#: number it can leave open (``1-6@l0:1``, ``1-6@l0:6``).
_MATADOR_PLAYS: Final = [
    {
        t: (
            Move(MoveKind.PLAY, TILES[t], ref, False, t >> 5),
            Move(MoveKind.PLAY, TILES[t], ref, False, t & 31),
        )
        for t in MATADORS[1:]
    }
    for ref in _ENDS
]


#: The plays at one end, by ``(end << 5 | value) << 13 | mask`` (``mask``: the
#: hand's tiles carrying ``value``, as ``hand[value]``); filled as met.
_PLAYS_AT: dict[int, tuple[Move, ...]] = {}


def _plays_at(key: int, end: int, value: int, bits: int) -> tuple[Move, ...]:
    """CL-LINE-1: one play per hand tile carrying the end's number, lowest other half first."""
    row = _PLAYS[end]
    tids = _TID[value]
    moves = []
    while bits:
        low = bits & -bits
        bits ^= low
        moves.append(row[tids[low.bit_length() - 1]])
    plays = _PLAYS_AT[key] = tuple(moves)
    return plays


#: The openings (CL-LINE-1, written @l0) of the tiles ``a-b`` with ``b >= a``
#: a hand holds, by ``a << 13 | bits`` (``bits``: ``hand[a]`` less the bits below
#: ``a``), in canonical order; filled as met.
_OPENINGS_AT: dict[int, tuple[Move, ...]] = {}


def _openings_at(key: int, a: int, bits: int) -> tuple[Move, ...]:
    row = _PLAYS[0]
    moves = []
    while bits:
        low = bits & -bits
        bits ^= low
        moves.append(row[a << 5 | (low.bit_length() - 1)])
    plays = _OPENINGS_AT[key] = tuple(moves)
    return plays


def _hand_pips(hand: list[int]) -> int:
    """The pip total of a hand of per-pip masks (0-0 counts 0, CL-SC-1)."""
    # A tile v-x is bit x of hand[v] and bit v of hand[x]: each half counted
    # once, but a double's only once in all, so its second half is added.
    total = 0
    for v, mask in enumerate(hand):
        if mask:
            total += v * (mask.bit_count() + (mask >> v & 1))
    return total


def _touch(v: int, set_max: int) -> int:
    """CL-MAT-1: the number that joins an end showing ``v`` (adds up to 7), or
    ``-1`` where only a matador joins (an end of 0, or above 7)."""
    t = 7 - v
    return t if 1 <= v <= 7 and t <= set_max else -1


def round_to_five(points: int) -> int:
    """CL-A5-1: to the nearest multiple of 5 (12 -> 10, 13 -> 15).

    >>> [round_to_five(x) for x in (0, 2, 3, 12, 13, 15)]
    [0, 0, 5, 10, 15, 15]
    """
    return (points + 2) // 5 * 5


class LineGame(StateBase):
    """A game of one of the line games from its rules, a player count and a seed.

    The protocol of :mod:`engine.game`: :meth:`legal_moves`, :meth:`apply`
    (events) or :meth:`push` (none), :meth:`view`, :meth:`to_dict` /
    :meth:`from_dict`. ``round`` counts hands.
    """

    def __init__(
        self, rules: LineRules, players: int, seed: str, *, _loading: bool = False
    ) -> None:
        # ``_loading``: for from_dict only, which sets the hand's state
        # itself (a loaded state deals nothing). A native class compiled by
        # mypyc is made only through its __init__: no ``cls.__new__(cls)``.
        if not isinstance(rules, LineRules):
            raise RulesetError(
                f"a line game is played from LineRules, not {type(rules).__name__}",
                rule="CL-SET-1",
            )
        if not isinstance(seed, str):
            raise RailyardError(f"the seed is text, not {type(seed).__name__}", rule="MT-FAIR-1")
        self._rules, facts = _prepare(rules, players)
        self._players = players
        self._seed = seed
        self._setup(facts)
        self.opening_events: list[Event] = []
        if not _loading:
            self._deal(1, -1, self.opening_events)

    # ------------------------------------------------------------------ setup

    def _setup(self, facts: _Facts) -> None:
        """The game's facts, and every option, read once (:func:`_prepare`)."""
        n = self._players
        (
            self.name,
            self.set_max,
            self._full,
            self._canon,
            self._hand_size,
            self._draws,
            self._reserve,
            self._sevens,
            self._touch,
            self._fives,
            self._headers,
            self._scores_in_play,
            self._teams,
            self._difference,
            self._seat0_any,
            self._target,
            self._rules_saved,
        ) = facts
        self._legal: list[Move] | None = None
        self.version = 0
        self._history_text = ""
        self._history_moves: list[Move] | None = []
        self._history_tail: list[Move] = []
        self.round_scores: list[list[int]] = [[] for _ in range(n)]
        #: What each seat scored in the hand being played (CL-A5-1, CL-BERGEN-1).
        self.hand_points = [0] * n
        #: Each seat's total: its finished hands plus ``hand_points``.
        self.scores = [0] * n
        #: Each finished hand's winner (the seat credited), ``-1`` on a tie.
        self.hand_winners: list[int] = []
        #: A hand after which the game ends whatever the scores (0: none): set
        #: only in a search's positions (``engine.games.line.bots.LineWorlds``).
        self.last_hand = 0
        self.over = False
        self.winners: tuple[int, ...] = ()
        self.starter = 0

    # ------------------------------------------------------------------ protocol facts

    @property
    def rules(self) -> LineRules:
        return self._rules

    @property
    def players(self) -> int:
        return self._players

    @property
    def seed(self) -> str:
        return self._seed

    @property
    def seed_sha256(self) -> str:
        """MT-FAIR-1: the commitment to the seed, public from the start."""
        return hashlib.sha256(self._seed.encode()).hexdigest()

    @property
    def status(self) -> GameStatus:
        return GameStatus.FINISHED if self.over else GameStatus.IN_PROGRESS

    # ------------------------------------------------------------------ deal

    def _deal(self, hand_no: int, opener: int, ev: list[Event] | None) -> None:
        """CL-DEAL-1: shuffle and deal hand ``hand_no``; CL-START-1: ``opener``
        (the previous hand's winner) opens with any tile, ``-1`` for the first
        hand's rule."""
        n = self._players
        h = self._hand_size
        order = list(self._canon)
        shuffle(self._seed, f"round:{hand_no}:deal", order)  # in place
        self.round = hand_no
        hands: list[list[int]] = []
        self.hands = hands
        self.counts = [h] * n
        bits = _TILE_BITS
        full = self._full
        for seat in range(n):
            hand = [0] * full
            for tid in order[seat * h : (seat + 1) * h]:
                a, bit_b, b, bit_a = bits[tid]
                hand[a] |= bit_b
                hand[b] |= bit_a
            hands.append(hand)
        # API.md step 5: drawn from the front; kept reversed, so a draw is a pop.
        self.boneyard: list[int] = order[n * h :][::-1]
        self.line: list[int] = []
        self.left = self.right = -1
        self.turns = 0  # turns ended this hand: a seat's first is before n (CL-TURN-1)
        self.opening_tile = -1  # CL-START-1: the tile that must open, or any
        if self._seat0_any:
            self.starter = 0
        elif opener >= 0:
            self.starter = opener
        else:
            self.starter, self.opening_tile = self._first_opener()
        self.current_seat = self.starter
        self.drew = False  # API.md turn.drewThisTurn
        if ev is not None:
            ev.append(RoundStarted(hand_no, None, self.starter))
            ev.append(TurnStarted(self.starter))

    def _first_opener(self) -> tuple[int, int]:
        """CL-START-1 ``highest_double``: the holder of the highest double opens
        with it; with no double dealt, the holder of the heaviest tile (highest
        ``a + b``, then the highest number) with it."""
        hands = self.hands
        for v in range(self.set_max, -1, -1):
            for seat, hand in enumerate(hands):
                if hand[v] >> v & 1:
                    return seat, v << 5 | v
        best = (-1, -1, -1, -1)
        for seat in range(self._players):
            for tid in _hand_ids(hands[seat]):
                a, b = tid >> 5, tid & 31
                best = max(best, (a + b, b, seat, tid))
        return best[2], best[3]

    # ------------------------------------------------------------------ turns

    def _next_turn(self, ev: list[Event] | None) -> None:
        seat = self.current_seat + 1
        if seat == self._players:
            seat = 0  # CL-TURN-1: clockwise
        self.current_seat = seat
        self.turns += 1
        self.drew = False
        if ev is not None:
            ev.append(TurnStarted(seat))

    @property
    def first_turn(self) -> bool:
        """Whether the seat to move is in its first turn of the hand (API.md)."""
        return self.turns < self._players

    def pips(self, seat: int) -> int:
        """The pip total of seat ``seat``'s hand (0-0 counts 0, CL-SC-1)."""
        return _hand_pips(self.hands[seat])

    def _can_draw(self) -> bool:
        """CL-DRAW-1: a drawing game, and more than the reserve in the boneyard."""
        return self._draws and len(self.boneyard) > self._reserve

    def _anyone_fits(self) -> bool:
        """Whether any hand holds a tile that joins either end (CL-END-1)."""
        left, right = self.left, self.right
        if not self._sevens:
            return any(hand[left] | hand[right] for hand in self.hands)
        tl, tr = self._touch[left], self._touch[right]
        for hand in self.hands:
            if (tl >= 0 and hand[tl]) or (tr >= 0 and hand[tr]):
                return True
            if hand[0] & 1 or hand[1] >> 6 & 1 or hand[2] >> 5 & 1 or hand[3] >> 4 & 1:
                return True  # CL-MAT-1: a matador joins any end
        return False

    # ------------------------------------------------------------------ legal moves

    def _generate(self) -> list[Move]:
        if self.over:
            return []
        hand = self.hands[self.current_seat]
        left = self.left
        if left < 0:
            # CL-LINE-1 / CL-START-1: the opening, written @l0.
            if self.opening_tile >= 0:
                return [_PLAYS[0][self.opening_tile]]
            # Every tile, canonical order: by its low half a, the tiles a-b with
            # b >= a (the bits of hand[a] from a up), looked up per a.
            opening: list[Move] = []
            openings = _OPENINGS_AT
            for a, mask in enumerate(hand):
                bits = mask >> a << a
                if bits:
                    key = a << 13 | bits
                    opening += openings.get(key) or _openings_at(key, a, bits)
            return opening
        moves: list[Move] = []
        if self._sevens:
            self._generate_sevens(hand, moves)
        else:
            # The plays at each end depend on the end's number and the hand's
            # tiles carrying it only: looked up, built once (_plays_at).
            plays = _PLAYS_AT
            bits = hand[left]
            at_left: tuple[Move, ...] = ()
            if bits:
                key = left << 13 | bits
                at_left = plays.get(key) or _plays_at(key, 0, left, bits)
            right = self.right
            bits = hand[right]
            if bits:
                key = (32 | right) << 13 | bits
                return [*at_left, *(plays.get(key) or _plays_at(key, 1, right, bits))]
            if at_left:
                return list(at_left)
        if not moves:
            # CL-DRAW-1 / CL-BLOCK-1: draw while drawable, else pass.
            moves.append(DRAW if self._draws and len(self.boneyard) > self._reserve else PASS)
        return moves

    def _generate_sevens(self, hand: list[int], moves: list[Move]) -> None:
        """CL-MAT-1: by sums of 7, then the matadors (two-way ones twice)."""
        is_matador = _IS_MATADOR
        held = [t for t in MATADORS if hand[t >> 5] >> (t & 31) & 1]
        for end, value in ((0, self.left), (1, self.right)):
            touch = self._touch[value]
            row = _PLAYS[end]
            if touch >= 0:
                bits = hand[touch]
                tids = _TID[touch]
                while bits:
                    low = bits & -bits
                    bits ^= low
                    tid = tids[low.bit_length() - 1]
                    if not is_matador[tid]:
                        moves.append(row[tid])
            for tid in held:
                if tid == 0:
                    moves.append(row[0])
                else:
                    moves.extend(_MATADOR_PLAYS[end][tid])

    # ------------------------------------------------------------------ moves

    # ``move: object``: whatever the caller passes is judged by the rules
    # (T-2 for what is not a move), compiled or not (engine.checks).
    def apply(self, move: object, seat: int | None = None) -> list[Event]:
        """Apply ``move`` for the seat to move (``seat``, when given, must be it)
        and return the events it caused. Raises a :class:`MoveError` and changes
        nothing when the move is not legal now."""
        events: list[Event] = []
        self.push(move, seat, events)
        return events

    def push(self, given: object, seat: int | None = None, ev: list[Event] | None = None) -> None:
        """:meth:`apply` without building events (``ev`` ``None``), for
        playouts and search; with a list, the events are appended to it. The
        one implementation of a move: playouts call it directly (a call less
        on the hot path than a wrapper, and mypyc compiles no method alias)."""
        if self.over:
            raise GameOverError(f"{_text(given)} is not legal: the game is over", rule="CL-SC-2")
        if seat is not None and seat != self.current_seat:
            raise NotYourTurnError(
                f"{_text(given)} is not legal: it is seat {self.current_seat}'s turn, "
                f"not seat {seat}'s",
                rule="CL-TURN-1",
            )
        legal = self._legal
        if legal is None:
            legal = self._legal = self._generate()
        move = given if given in legal else self._normalize(given, legal)
        # The move is legal: it is recorded first, as nothing below refuses it.
        self.version += 1
        self._history_tail.append(move)
        self._legal = None
        kind = move.kind
        if kind is _DRAW:
            self._draw(ev)
            return
        if kind is _PASS:
            if ev is not None:
                ev.append(Passed(self.current_seat))
            if self._can_draw() or self._anyone_fits():
                self._next_turn(ev)  # CL-BLOCK-1, CL-DRAW-1
            else:
                # CL-END-1, checked after every move: a game's own moves never
                # get here (the move before ended the hand), but a search's
                # position deals the hidden tiles anew, and may be blocked.
                self._end_hand(RoundEndReason.BLOCKED, ev)
            return
        # A placement: the hot path of every playout, inline (a call less),
        # plain locals, no helper calls in the common case.
        tile, train = move.tile, move.train
        assert tile is not None
        assert train is not None
        seat = self.current_seat
        a, b = tile
        end = train.end
        hand = self.hands[seat]
        hand[a] &= ~(1 << b)
        hand[b] &= ~(1 << a)
        counts = self.counts
        counts[seat] -= 1
        left = self.left
        if left < 0:
            # CL-LINE-1: the opening lays its low half left.
            self.line.append(a << 5 | b)
            left = self.left = a
            right = self.right = b
            self.opening_tile = -1
        else:
            right = self.right
            value = right if end else left
            if move.exposed is not None:
                other = move.exposed  # CL-MAT-1: a two-way matador names it
            elif self._sevens:
                other = b if a == self._touch[value] else a  # 0-0 leaves 0 either way
            else:
                other = b if a == value else a
            if end:
                self.line.append((a + b - other) << 5 | other)
                right = self.right = other
            else:
                self.line.insert(0, other << 5 | (a + b - other))
                left = self.left = other
        if ev is not None:
            ev.append(TilePlayed(seat, TILES[a << 5 | b], _ENDS[end]))
        if self._scores_in_play and self._score_in_play(seat, ev):
            return  # CL-SC-2: the target was reached during play
        if not counts[seat]:
            self._end_hand(RoundEndReason.DOMINO, ev)  # CL-END-1: domino
            return
        if not (self._draws and len(self.boneyard) > self._reserve):
            # CL-END-1: blocked when nobody can place and nobody may draw.
            if self._sevens:
                fits = self._anyone_fits()
            else:
                for other_hand in self.hands:
                    if other_hand[left] | other_hand[right]:
                        fits = True
                        break
                else:
                    fits = False
            if not fits:
                self._end_hand(RoundEndReason.BLOCKED, ev)
                return
        seat += 1
        if seat == self._players:
            seat = 0  # CL-TURN-1: clockwise
        self.current_seat = seat
        self.turns += 1
        self.drew = False
        if ev is not None:
            ev.append(TurnStarted(seat))

    def _draw(self, ev: list[Event] | None) -> None:
        """CL-DRAW-1: one tile; the turn stays with the drawer, who draws again
        or places it (it is then the only tile that fits)."""
        seat = self.current_seat
        tid = self.boneyard.pop()
        a, b = tid >> 5, tid & 31
        hand = self.hands[seat]
        hand[a] |= 1 << b
        hand[b] |= 1 << a
        self.counts[seat] += 1
        self.drew = True
        if ev is not None:
            ev.append(TileDrawn(seat, TILES[tid]))
        if not self._can_draw() and not self._anyone_fits():
            self._end_hand(RoundEndReason.BLOCKED, ev)  # CL-END-1, checked after every move

    # ------------------------------------------------------------------ scoring

    def _score_in_play(self, seat: int, ev: list[Event] | None) -> bool:
        """CL-A5-1 / CL-BERGEN-1: what the placement just made scores; True when
        it reached the target and so ended the game (CL-SC-2)."""
        line = self.line
        left, right = self.left, self.right
        if self._fives:
            if len(line) == 1:
                total = left + right  # a lone opening tile: both numbers (5-5: 10)
            else:
                first, last = line[0], line[-1]
                # A double at an end counts both halves.
                total = (left << 1 if first >> 5 == first & 31 else left) + (
                    right << 1 if last >> 5 == last & 31 else right
                )
            if not total or total % 5:
                return False
            points, reason = total, PointsReason.FIVES
        else:
            if left != right:
                return False
            first, last = line[0], line[-1]
            if len(line) > 1 and (first >> 5 == first & 31 or last >> 5 == last & 31):
                points, reason = 3, PointsReason.TRIPLE_HEADER  # 3 in all, not 2 + 3
            else:
                points, reason = 2, PointsReason.DOUBLE_HEADER  # a lone double too
        return self._credit(seat, points, reason, ev)

    def _credit(self, seat: int, points: int, reason: PointsReason, ev: list[Event] | None) -> bool:
        """Points scored during play; True (and the game over) when they reach
        the target (CL-SC-2: at that moment, mid-hand included)."""
        self.hand_points[seat] += points
        self.scores[seat] += points
        team = seat & 1 if self._teams else None
        if ev is not None:
            ev.append(PointsScored(seat, points, reason, team))
        if self._total_of(seat) < self._target:
            return False
        # The hand's own end, if this tile made one, scores nothing more.
        if not self.counts[seat]:
            self._record_hand(RoundEndReason.DOMINO, seat, ev)
        elif not self._can_draw() and not self._anyone_fits():
            self._record_hand(RoundEndReason.BLOCKED, self._blocked_winner()[0], ev)
        else:
            self._record_hand(None, seat, ev)  # the hand ends with the game
        self._finish(seat, ev)
        return True

    def _total_of(self, seat: int) -> int:
        """The score that counts for the target: the seat's, or its team's (CL-TEAM-1)."""
        if self._teams:
            return self.scores[seat & 1] + self.scores[(seat & 1) + 2]
        return self.scores[seat]

    def _blocked_winner(self) -> tuple[int | None, int]:
        """CL-SC-1 / CL-TEAM-1 after a block: the seat credited (``None`` on a tie
        for the lowest total) and the ``blocked_scoring`` amount."""
        pips = list(map(_hand_pips, self.hands))
        if self._teams:
            team_pips = (pips[0] + pips[2], pips[1] + pips[3])
            if team_pips[0] == team_pips[1]:
                return None, 0
            k = 0 if team_pips[0] < team_pips[1] else 1
            own, other = team_pips[k], team_pips[1 - k]
            # The partner with the lower hand total, then the lower seat.
            seat = min((pips[k], k), (pips[k + 2], k + 2))[1]
            return seat, other - own if self._difference else other
        low = min(pips)
        if pips.count(low) > 1:
            return None, 0
        seat = pips.index(low)
        others = sum(pips) - low
        return seat, others - low if self._difference else others

    def _end_hand(self, reason: RoundEndReason, ev: list[Event] | None) -> None:
        """CL-SC-1 and its variants: score the hand that just ended, then check
        the target (CL-SC-2) and deal the next hand or end the game."""
        if reason is RoundEndReason.DOMINO:
            seat = self.current_seat
            winner: int | None = seat
            hands = self.hands
            if self._teams:
                k = 1 - (seat & 1)
                # The other team's hands, not the partner's.
                amount = _hand_pips(hands[k]) + _hand_pips(hands[k + 2])
            else:
                amount = sum(map(_hand_pips, hands))  # the winner's own is empty
        else:
            winner, amount = self._blocked_winner()
        if winner is not None:
            if self._headers:
                self.hand_points[winner] += 2  # CL-BERGEN-1: the hand's winner
                self.scores[winner] += 2
                if ev is not None:
                    team = winner & 1 if self._teams else None
                    ev.append(PointsScored(winner, 2, PointsReason.HAND_WON, team))
            else:
                if self._fives:
                    amount = round_to_five(amount)  # CL-A5-1
                self.hand_points[winner] += amount
                self.scores[winner] += amount
        self._record_hand(reason, winner, ev)
        if winner is not None and self._total_of(winner) >= self._target:
            self._finish(winner, ev)  # CL-SC-2
            return
        if self.round == self.last_hand:
            self._cut(winner, ev)  # a search's position: its game is this hand
            return
        self._deal(self.round + 1, -1 if winner is None else winner, ev)

    def _record_hand(
        self, reason: RoundEndReason | None, winner: int | None, ev: list[Event] | None
    ) -> None:
        """The hand's scores go to ``round_scores`` and its winner (``None``: a
        tie) to ``hand_winners``; ``reason`` ``None``: the game ended in the
        hand (CL-SC-2), which then ends with no ``RoundEnded``, and ``winner``
        is the seat that reached the target."""
        scores = tuple(self.hand_points)
        for seat, points in enumerate(scores):
            self.round_scores[seat].append(points)
        self.hand_winners.append(-1 if winner is None else winner)
        self.hand_points = [0] * self._players
        self._legal = None
        if ev is not None and reason is not None:
            ev.append(RoundEnded(self.round, reason, scores, winner))

    def _cut(self, winner: int | None, ev: list[Event] | None) -> None:
        """The end of a game cut to one hand (``last_hand``, for search): over,
        won by the hand's winner (none on a tie)."""
        if winner is None:
            self.over = True
            self.winners = ()
            if ev is not None:
                ev.append(GameEnded(tuple(self.scores), (), self._seed))
            return
        self._finish(winner, ev)

    def _finish(self, seat: int, ev: list[Event] | None) -> None:
        self.over = True
        if self._teams:
            k = seat & 1
            self.winners = (k, k + 2)  # CL-TEAM-1: both seats
        else:
            self.winners = (seat,)
        if ev is not None:
            ev.append(GameEnded(tuple(self.scores), self.winners, self._seed))

    # ------------------------------------------------------------------ errors

    def _normalize(self, move: object, legal: list[Move]) -> Move:
        """The legal move ``move`` stands for, or the error that says why none."""
        # The knock flag (MT-KNOCK-1) means nothing here: ignored.
        move = well_formed(move, self.set_max)._replace(announce=False)
        if move in legal:
            return move
        why = self._explain(move, legal)
        raise IllegalMoveError(
            f"{move} is not legal: {why.message}", rule=why.rule, reason=why.reason
        )

    def _explain(self, move: Move, legal: list[Move]) -> MoveError:
        """Why ``move`` (well-formed, not legal) is refused: the reason and rule."""
        plays = legal[0].kind is _PLAY
        kind = move.kind
        if kind is MoveKind.END_TURN:
            return _illegal("CANNOT_END_TURN", "CL-TURN-1", "a turn of a line game ends by itself")
        if kind is _DRAW or kind is _PASS:
            if plays:
                return _illegal("MUST_PLAY", "CL-TURN-1", "you can place a tile: place one")
            if kind is _DRAW:
                if not self._draws:
                    return _illegal(
                        "CANNOT_DRAW", "CL-BLOCK-1", f"{self.name} has no drawing: pass"
                    )
                return _illegal(
                    "CANNOT_DRAW",
                    "CL-DRAW-1",
                    f"the boneyard holds {len(self.boneyard)} tiles, no more than the "
                    f"reserve of {self._reserve}: pass",
                )
            return _illegal("CANNOT_PASS", "CL-DRAW-1", "the boneyard is not empty: draw")
        tile, train = move.tile, move.train
        assert tile is not None
        assert train is not None
        a, b = tile
        tid = a << 5 | b
        rule = "CL-MAT-1" if self._sevens else "CL-LINE-1"
        if train.kind is not _LINE or train.number != 0 or train.end not in (0, 1):
            return _illegal(
                "NO_SUCH_TRAIN", "CL-LINE-1", f"the line has ends @l0 and @l1, not {train}"
            )
        if not self.hands[self.current_seat][a] >> b & 1:
            return _illegal("TILE_NOT_IN_HAND", "CL-TURN-1", f"{tile} is not in your hand")
        if self.left < 0:
            if self.opening_tile >= 0 and tid != self.opening_tile:
                return _illegal(
                    "MUST_OPEN_WITH",
                    "CL-START-1",
                    f"the hand opens with {TILES[self.opening_tile]}",
                )
            if train.end != 0:
                return _illegal("NO_SUCH_TRAIN", "CL-LINE-1", "the opening is written @l0")
            return _illegal(
                "EXPOSED_NUMBER", rule, "the opening tile names no number: it lays low half left"
            )
        same_tile = [m for m in legal if m.tile == tile and m.train == train]
        if not same_tile:
            value = self.left if train.end == 0 else self.right
            if self._sevens:
                why = (
                    f"{tile} does not join the end {value}: its numbers do not add up to 7 "
                    "with it, and it is no matador"
                )
            else:
                why = f"{tile} does not carry the end's number {value}"
            return _illegal("TILE_DOES_NOT_MATCH", rule, why)
        if all(m.exposed is None for m in same_tile):
            return _illegal("EXPOSED_NUMBER", rule, f"{tile} leaves one number open: name none")
        numbers = " or ".join(f":{m.exposed}" for m in same_tile)
        return _illegal(
            "EXPOSED_NUMBER", "CL-MAT-1", f"name the number {tile} leaves open ({numbers})"
        )

    # ------------------------------------------------------------------ queries

    def is_over(self) -> bool:
        return self.over

    @property
    def totals(self) -> list[int]:
        """Each seat's score so far (a team's score is the sum of its seats')."""
        return self.scores[:]

    def team_scores(self) -> list[int]:
        """CL-TEAM-1: team 0 (seats 0 and 2) and team 1 (seats 1 and 3); empty without teams."""
        if not self._teams:
            return []
        s = self.scores
        return [s[0] + s[2], s[1] + s[3]]

    @property
    def teams(self) -> bool:
        return self._teams

    def hand(self, seat: int) -> list[Tile]:
        """Seat ``seat``'s tiles in canonical order (private: CL-VIS-1)."""
        return [TILES[t] for t in _hand_ids(self.hands[seat])]

    def hand_count(self, seat: int) -> int:
        return self.counts[seat]

    def boneyard_tiles(self) -> list[Tile]:
        """The boneyard in draw order (never in a view: CL-VIS-1, CL-DEAL-1)."""
        return [TILES[t] for t in reversed(self.boneyard)]

    def line_tiles(self) -> list[Tile]:
        """The line from left to right, each ``{a: left half, b: right half}``."""
        return [TILES[c] for c in self.line]

    @property
    def open_ends(self) -> tuple[int, ...]:
        """``(left, right)``, or ``()`` before the opening."""
        return () if self.left < 0 else (self.left, self.right)

    def can_draw(self) -> bool:
        """CL-DRAW-1: whether a player who cannot place would draw now."""
        return self._can_draw()

    def view(self, seat: int | None) -> GameView:
        """What ``seat`` (``None``: a spectator) may see: :func:`build_line_view`."""
        return build_line_view(self, seat)

    # ------------------------------------------------------------------ state

    def to_dict(self) -> dict[str, Any]:
        """The whole state as plain JSON values; :meth:`from_dict` rebuilds it.

        A value of its own: editing it changes nothing in this game.
        """
        return {
            "format": STATE_FORMAT,
            "game": self.name,
            "rules": dict(self._rules_saved),
            "players": self._players,
            "seed": self._seed,
            "version": self.version,
            "round": self.round,
            "starter": self.starter,
            "hands": [_hand_ids(hand) for hand in self.hands],
            "boneyard": self.boneyard[::-1],  # first drawn first
            "line": self.line[:],
            "opening_tile": self.opening_tile,
            "turn": [self.current_seat, self.drew],
            "turns": self.turns,
            "hand_points": self.hand_points[:],
            "round_scores": [rs[:] for rs in self.round_scores],
            "over": self.over,
            "winners": list(self.winners),
            "hand_winners": self.hand_winners[:],
            "last_hand": self.last_hand,
            "history": self._history_string(),
        }

    def to_bytes(self) -> bytes:
        """A compact serialized form of the whole state (JSON)."""
        return _ENCODER.encode(self.to_dict()).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> LineGame:
        try:
            decoded = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptStateError(f"not a serialized state: {exc}") from exc
        return cls.from_dict(decoded)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LineGame:
        """Rebuild a state from :meth:`to_dict`'s output (without replaying it);
        :class:`CorruptStateError` for anything this engine did not write."""
        try:
            return cls._from_dict(data)
        except CorruptStateError:
            raise
        except (RailyardError, KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise CorruptStateError(f"not a line game state: {exc!r}") from exc

    @classmethod
    def _from_dict(cls, data: dict[str, Any]) -> LineGame:
        if not isinstance(data, dict):
            raise CorruptStateError("a state is a mapping")
        if data["format"] != STATE_FORMAT:
            raise CorruptStateError(f"state format {data['format']!r} is not {STATE_FORMAT}")
        rules = LineRules.from_dict(data["rules"])
        if data["game"] != rules.game:
            raise CorruptStateError(f"the state names {data['game']!r}, its rules {rules.game!r}")
        players = data["players"]
        seed = data["seed"]
        if not isinstance(seed, str):
            raise CorruptStateError("the seed is text")
        self = cls(rules, players, seed, _loading=True)
        n = players
        self.version = _int(data["version"], 0)
        self.round = _int(data["round"], 1)
        self.starter = _int(data["starter"], 0, n - 1)
        full = self._full
        canon = set(self._canon)
        seen: set[int] = set()

        def tiles_of(codes: object, what: str) -> list[int]:
            if not isinstance(codes, list):
                raise CorruptStateError(f"{what} is not a list of tiles")
            for code in codes:
                if type(code) is not int or code not in canon or code in seen:
                    raise CorruptStateError(f"{what} holds {code!r}: not a tile, or one seen twice")
                seen.add(code)
            return codes

        hands = data["hands"]
        if not isinstance(hands, list) or len(hands) != n:
            raise CorruptStateError("the hands do not match the player count")
        self.hands = [[0] * full for _ in range(n)]
        self.counts = [0] * n
        for seat, codes in enumerate(hands):
            hand = self.hands[seat]
            for tid in tiles_of(codes, f"hand {seat}"):
                a, b = tid >> 5, tid & 31
                hand[a] |= 1 << b
                hand[b] |= 1 << a
            self.counts[seat] = len(codes)
        self.boneyard = list(tiles_of(data["boneyard"], "the boneyard"))[::-1]
        line = data["line"]
        if not isinstance(line, list):
            raise CorruptStateError("the line is not a list")
        tiles_of([min(c >> 5, c & 31) << 5 | max(c >> 5, c & 31) for c in line], "the line")
        for x, y in itertools.pairwise(line):
            r, lft = x & 31, y >> 5
            if self._sevens:
                fits = r + lft == 7 or _IS_MATADOR[_canon_id(x)] or _IS_MATADOR[_canon_id(y)]
            else:
                fits = r == lft
            if not fits:
                raise CorruptStateError(f"{TILES[x]} and {TILES[y]} do not join in the line")
        self.line = list(line)
        self.left = line[0] >> 5 if line else -1
        self.right = line[-1] & 31 if line else -1
        self.opening_tile = data["opening_tile"]
        if self.opening_tile != -1 and (line or self.opening_tile not in canon):
            raise CorruptStateError("an opening tile is named once the line has opened")
        seat, drew = data["turn"]
        self.current_seat = _int(seat, 0, n - 1)
        if not isinstance(drew, bool) or (drew and not self._draws):
            raise CorruptStateError("turn.drew is not a flag this game can have")
        self.drew = drew
        self.turns = _int(data["turns"], 0)
        self.hand_points = [_int(x, 0) for x in data["hand_points"]]
        self.round_scores = [[_int(x, 0) for x in rs] for rs in data["round_scores"]]
        if (len(self.hand_points), len(self.round_scores)) != (n, n) or len(
            {len(rs) for rs in self.round_scores}
        ) != 1:
            raise CorruptStateError("the seats' lists do not match the player count")
        self.scores = [
            sum(rs) + hp for rs, hp in zip(self.round_scores, self.hand_points, strict=True)
        ]
        self.over = data["over"]
        if not isinstance(self.over, bool):
            raise CorruptStateError("over is a flag")
        self.winners = tuple(_int(w, 0, n - 1) for w in data["winners"])
        self.hand_winners = [_int(w, -1, n - 1) for w in data["hand_winners"]]
        self.last_hand = _int(data["last_hand"], 0)
        if len(self.hand_winners) != len(self.round_scores[0]):
            raise CorruptStateError("hand_winners does not match round_scores")
        if self.over != bool(self.winners) and not (self.over and self.last_hand):
            raise CorruptStateError("a game over has winners, and only then")
        text = data["history"]
        if not isinstance(text, str) or (text.count(" ") + 1 if text else 0) != self.version:
            raise CorruptStateError("the history does not match the version")
        self._history_text = text
        self._history_moves = None
        return self

    def copy(self) -> LineGame:
        """An independent copy of this state (for search)."""
        # Through the saved form: one list of what a state holds (to_dict's),
        # not a second one here to keep in step. Search deals its own states.
        other = LineGame.from_dict(self.to_dict())
        other.opening_events = self.opening_events[:]
        return other

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LineGame):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        state = "over" if self.over else f"seat {self.current_seat} to move"
        return f"<LineGame {self.name} {self._players}p hand {self.round} v{self.version}: {state}>"


def build_line_view(game: LineGame, seat: int | None = None) -> GameView:
    """The view of ``game`` for ``seat`` (``None``: a spectator, public only).

    CL-VIS-1: the line, hand counts, the boneyard count (sleeping and reserved
    tiles included, CL-DEAL-1), scores; ``hand`` only for the seat's own
    view; the boneyard's tiles never, not even once over; the seed once over.
    """
    n = game.players
    if seat is not None and not 0 <= seat < n:
        raise ValueError(f"no seat {seat} in a {n}-player game")
    over = game.over
    scores = game.scores
    players = tuple(
        PlayerView(s, game.counts[s], False, scores[s], tuple(game.round_scores[s]))
        for s in range(n)
    )
    teams: tuple[TeamView, ...] = ()
    if game.teams:
        teams = (
            TeamView((0, 2), scores[0] + scores[2]),
            TeamView((1, 3), scores[1] + scores[3]),
        )
    current = game.current_seat
    return GameView(
        version=game.version,
        status=game.status,
        over=over,
        ruleset=game.rules,
        round=game.round,
        rounds_total=0,  # the game runs to target_score
        engine=None,
        current_seat=None if over else current,
        boneyard_count=len(game.boneyard),
        players=players,
        trains=(),
        open_doubles=(),
        turn=None if over else TurnView(False, game.drew, game.first_turn),
        hand=None if seat is None else tuple(game.hand(seat)),
        viewer_seat=seat,
        seed_sha256=game.seed_sha256,
        seed=game.seed if over else None,  # MT-FAIR-1: revealed once over
        winners=game.winners,
        line=LineView(tuple(TILES[c] for c in game.line), game.open_ends),
        teams=teams,
        target_score=game.rules.target_score or 0,
    )


def replay(rules: LineRules, players: int, seed: str, moves: Sequence[Move | str]) -> LineGame:
    """Rebuild a game from its rules, player count, seed and moves."""
    game = LineGame(rules, players, seed)
    for move in moves:
        game.push(Move.parse(move) if isinstance(move, str) else move)
    return game


_ENCODER: Final = json.JSONEncoder(separators=(",", ":"))


class _Facts(NamedTuple):
    """What a game reads from its rules, in the order ``_setup`` unpacks it."""

    name: str
    set_max: int
    full: int  # set_max + 1: the pip values
    canon: tuple[int, ...]
    hand_size: int
    draws: bool
    reserve: int
    sevens: bool
    touch: list[int]
    fives: bool
    headers: bool
    scores_in_play: bool
    teams: bool
    difference: bool
    seat0_any: bool
    target: int
    rules_saved: dict[str, Any]


#: :func:`_prepare`'s answers by ``(id(rules), players)``, each with the
#: rules it was read from (kept alive, so the id is not reused meanwhile).
_PREPARED: dict[tuple[int, int], tuple[LineRules, LineRules, _Facts]] = {}


def _prepare(rules: LineRules, players: int) -> tuple[LineRules, _Facts]:
    """The rules resolved for ``players`` and every fact and option a game
    reads from them, once per rules object: a playout deals many games from
    one, and a frozen dataclass hashes all its fields at every cache lookup."""
    key = (id(rules), players)
    entry = _PREPARED.get(key)
    if entry is not None and entry[0] is rules:
        return entry[1], entry[2]
    resolved = rules.resolve(players)
    facts = _read_rules(resolved)
    if len(_PREPARED) >= 256:
        _PREPARED.clear()
    _PREPARED[key] = (rules, resolved, facts)
    return resolved, facts


def _read_rules(rules: LineRules) -> _Facts:
    """Every fact and option a game reads from resolved rules."""
    facts = rules.facts
    assert rules.target_score is not None
    fives = facts.in_play is InPlay.FIVES  # CL-A5-1
    headers = facts.in_play is InPlay.HEADERS  # CL-BERGEN-1
    return _Facts(
        facts.name,
        rules.set_max,
        rules.set_max + 1,
        canonical_ids(rules.set_max),
        rules.hand_size,
        facts.draws,  # CL-DRAW-1, else CL-BLOCK-1
        # CL-DRAW-1: a drawing game draws while the boneyard holds more than the
        # reserve; a block game never draws (its boneyard sleeps, CL-DEAL-1).
        rules.boneyard_reserve or 0,
        facts.matching is Matching.SEVENS,  # CL-MAT-1
        [_touch(v, rules.set_max) for v in range(rules.set_max + 1)],
        fives,
        headers,
        fives or headers,
        bool(rules.teams),  # CL-TEAM-1
        rules.blocked_scoring is not BlockedScoring.OPPONENTS_TOTAL,  # CL-SC-1
        rules.opening is Opening.SEAT0_ANY,  # CL-START-1
        rules.target_score,  # CL-SC-2
        rules.to_dict(),  # shared: to_dict copies it
    )


def _canon_id(code: int) -> int:
    x, y = code >> 5, code & 31
    return x << 5 | y if x <= y else y << 5 | x


def _int(value: object, low: int, high: int | None = None) -> int:
    if type(value) is not int or value < low or (high is not None and value > high):
        raise CorruptStateError(f"{value!r} is out of range")
    return value


def _text(move: object) -> str:
    try:
        return str(move) if isinstance(move, Move) else repr(move)
    except (TypeError, ValueError, AttributeError):
        return repr(move)


def _illegal(reason: str, rule: str, message: str) -> IllegalMoveError:
    return IllegalMoveError(message, rule=rule, reason=reason)
