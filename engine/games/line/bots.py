"""The greedy bot of the line games (CL-BOT-1), from a seat's view alone.

:func:`greedy` scores every legal placement and takes the best, the first in
``legal``'s order on a tie, so it is deterministic given ``(view, legal)``.
The heuristics, per game:

* **Block, Draw** (and their teams): shed weight, since whatever stays in the
  hand is scored by the winner (CL-SC-1): a play is worth its pips, and a
  double a little more (it fits one number only, so it is the tile most
  likely to be stranded). Keep control: each tile left in the hand that fits
  an end the play leaves is worth :data:`CONTROL`. Do not hand the ends to
  the others: an end the play leaves that the hand cannot follow, while
  tiles that fit it are still unseen (in other hands or the boneyard), costs
  :data:`OPEN_TO_THEM`.
* **All Fives**: the immediate fives points first (CL-A5-1), then the Block
  score.
* **Bergen**: the header points first (CL-BERGEN-1), then the Block score.
* **Matador**: a matador joins any end (CL-MAT-1), so it is kept for when
  nothing else fits: any other placement comes first, heaviest first; when
  only matadors fit, the one (and the open number) with the best Block
  score, which keeps the number the hand can follow.

Draws and passes are never a choice (CL-TURN-1): when one is legal it is
the only legal move.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from engine.games.line.rules import InPlay, LineRules, Matching
from engine.moves import Move, MoveKind
from engine.view import GameView

# Measured head to head (400 2-player games each of Block, Draw and Matador,
# a variant in one seat against these weights in the other): heaviness alone
# (1, 0, 0, 0) won 20% to 33%; doubling or halving any one weight moved the
# share by less than the noise (about 2.5 points).
#: Per pip of the tile played: what it no longer costs at the hand's end.
HEAVY: Final = 1
#: A double played: it fits one number only, the likeliest tile to be stranded.
DOUBLE: Final = 2
#: Per hand tile that fits an end the play leaves (control of the ends).
CONTROL: Final = 2
#: Per end left that the hand cannot follow while unseen tiles fit it.
OPEN_TO_THEM: Final = 3

_MATADORS: Final = frozenset({(0, 0), (1, 6), (2, 5), (3, 4)})


def greedy(view: GameView, legal: Sequence[Move]) -> Move:
    """The greedy bot's move: the best of ``legal`` by the module's heuristics."""
    if not legal:
        raise ValueError("no legal move to choose from")
    if len(legal) == 1:
        return legal[0]
    scores = greedy_scores(view, legal)
    best = max(range(len(legal)), key=lambda i: (scores[i], -i))
    return legal[best]


def greedy_scores(view: GameView, legal: Sequence[Move]) -> list[tuple[int, int]]:
    """One score per move of ``legal`` (higher is better): the game's own
    points first (fives, headers, not spending a matador), then the Block score."""
    rules = view.ruleset
    if not isinstance(rules, LineRules):
        raise ValueError("the line games' greedy bot plays a line game")
    if view.hand is None or view.line is None:
        raise ValueError("a bot needs a seat's view of a line game")
    facts = rules.facts
    sevens = facts.matching is Matching.SEVENS
    full = rules.set_max + 1
    hand = [0] * full
    for a, b in view.hand:
        hand[a] |= 1 << b
        hand[b] |= 1 << a
    seen = hand[:]  # the hand's tiles and the line's: what nobody else can hold
    for a, b in view.line.tiles:
        seen[a] |= 1 << b
        seen[b] |= 1 << a
    everything = (1 << full) - 1
    ends = view.line.open_ends
    line = view.line.tiles
    out = []
    for move in legal:
        if move.kind is not MoveKind.PLAY or move.tile is None or move.train is None:
            out.append((-1000, 0))
            continue
        a, b = move.tile
        if not ends:
            left, right = a, b
            left_double = right_double = a == b
            lone = True
        else:
            value = ends[move.train.end]
            if move.exposed is not None:
                other = move.exposed
            elif sevens:
                other = b if a + value == 7 else a
            else:
                other = b if a == value else a
            left, right = ends
            left_double = line[0].a == line[0].b
            right_double = line[-1].a == line[-1].b
            if move.train.end == 0:
                left, left_double = other, a == b
            else:
                right, right_double = other, a == b
            lone = False
        after = hand[:]
        after[a] &= ~(1 << b)
        after[b] &= ~(1 << a)
        block = HEAVY * (a + b) + (DOUBLE if a == b else 0)
        for end in (left, right):
            if sevens:
                mine, unseen = _sevens_fit(after, seen, end, full, everything)
            else:
                mine = after[end].bit_count()
                unseen = (everything & ~seen[end]).bit_count()
            block += CONTROL * mine
            if not mine and unseen:
                block -= OPEN_TO_THEM
        if facts.in_play is InPlay.FIVES:
            first = _fives(left, right, left_double, right_double, lone)
        elif facts.in_play is InPlay.HEADERS:
            first = _headers(left, right, left_double, right_double, lone)
        elif sevens:
            first = 0 if (a, b) in _MATADORS else 1
        else:
            first = 0
        out.append((first, block))
    return out


def _sevens_fit(
    after: list[int], seen: list[int], end: int, full: int, everything: int
) -> tuple[int, int]:
    """CL-MAT-1: the hand's non-matador tiles that join ``end``, and the unseen
    tiles that join it (matadors included)."""
    touch = 7 - end
    mine = unseen = 0
    if 1 <= end <= 7 and touch < full:
        mask = after[touch]
        if (min(touch, end), max(touch, end)) in _MATADORS:
            mask &= ~(1 << end)  # a matador: kept for when nothing else fits
        mine = mask.bit_count()
        unseen = (everything & ~seen[touch]).bit_count()
    unseen += sum(1 for x, y in _MATADORS if not seen[x] >> y & 1)
    return mine, unseen


def _fives(left: int, right: int, left_double: bool, right_double: bool, lone: bool) -> int:
    """CL-A5-1: what the ends add up to, when a positive multiple of 5."""
    if lone:
        total = left + right
    else:
        total = (2 * left if left_double else left) + (2 * right if right_double else right)
    return total if total and not total % 5 else 0


def _headers(left: int, right: int, left_double: bool, right_double: bool, lone: bool) -> int:
    """CL-BERGEN-1: 2 for a double header, 3 for a triple header."""
    if left != right:
        return 0
    return 2 if lone or not (left_double or right_double) else 3
