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

import random
from collections.abc import Callable, Sequence
from typing import Any, Final

from engine.game import BotHooks, GameState, HandResult
from engine.games.line.game import LineGame
from engine.games.line.rules import InPlay, LineRules, Matching
from engine.moves import Move, MoveKind
from engine.tiles import Tile, canonical_ids
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

#: The expert's reward per point of the hand above the best other side.
POINTS_WEIGHT: Final = 0.02
#: Games whose points weigh more: a Bergen hand's win is worth 2 points, no
#: more than a double header (CL-BERGEN-1), so its points are the game. Over
#: 1,000 games against greedy (seed ``classic-bergen``), 0.02 won 54.0% of the
#: hands but its points barely separated (2.93 [2.86, 3.00] against 2.76
#: [2.69, 2.84]); 0.1 won 53.8% [52.2, 55.4] and 3.07 [3.00, 3.15] points a
#: hand against 2.74 [2.66, 2.81]; 0.25, 52.8% and 3.10.
GAME_POINTS_WEIGHT: Final = {"bergen": 0.1}
#: ``hook_scores``: the game's own points outrank any Block score.
_FIRST: Final = 10_000

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
    full = rules.set_max + 1
    hand = [0] * full
    for a, b in view.hand:
        hand[a] |= 1 << b
        hand[b] |= 1 << a
    line = view.line.tiles
    codes = [a << 5 | b for a, b in line]
    return _scores(rules, hand, codes, view.line.open_ends, legal)


def _scores(
    rules: LineRules,
    hand: list[int],
    line: Sequence[int],
    ends: tuple[int, ...],
    legal: Sequence[Move],
) -> list[tuple[int, int]]:
    """The heuristics of the module, from the seat's hand (one mask per pip
    value), the line (codes ``left << 5 | right``) and its open ends."""
    facts = rules.facts
    sevens = facts.matching is Matching.SEVENS
    full = rules.set_max + 1
    seen = hand[:]  # the hand's tiles and the line's: what nobody else can hold
    for code in line:
        a, b = code >> 5, code & 31
        seen[a] |= 1 << b
        seen[b] |= 1 << a
    everything = (1 << full) - 1
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
            left_double = line[0] >> 5 == line[0] & 31
            right_double = line[-1] >> 5 == line[-1] & 31
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


# ------------------------------------------------------------------ the hooks


def hook_scores(view: GameView, legal: Sequence[Move]) -> list[int]:
    """:func:`greedy_scores` as one number per move (``BotHooks.scores``)."""
    return [first * _FIRST + block for first, block in greedy_scores(view, legal)]


def playout_policy(state: GameState, searcher: int) -> Callable[[Sequence[Move]], Move]:
    """The greedy bot for every seat of ``state``, the searching seat's too,
    read from the state itself (the first best move on a tie)."""
    del searcher  # the line games' expert has no heuristic of its own
    assert isinstance(state, LineGame)
    game = state
    rules = game.rules

    def policy(legal: Sequence[Move]) -> Move:
        if len(legal) == 1:
            return legal[0]
        scores = _scores(rules, game.hands[game.current_seat], game.line, game.open_ends, legal)
        best = max(range(len(legal)), key=lambda i: (scores[i], -i))
        return legal[best]

    return policy


def reward(state: GameState, seat: int) -> float:
    """The seat's outcome of its hand's playout: 1 if its side won the hand,
    plus :data:`POINTS_WEIGHT` (:data:`GAME_POINTS_WEIGHT` for some games) per
    point its side scored in it above the best other side (the points are what
    the game is won by, CL-SC-2)."""
    assert isinstance(state, LineGame)
    scores = [rs[-1] for rs in state.round_scores]
    sides = _sides(state)
    mine = next(side for side in sides if seat in side)
    points = {side: sum(scores[s] for s in side) for side in sides}
    best_other = max(points[side] for side in sides if side != mine)
    winner = state.hand_winners[-1]
    won = 1.0 if winner in mine else 0.0
    weight = GAME_POINTS_WEIGHT.get(state.name, POINTS_WEIGHT)
    return won + weight * (points[mine] - best_other)


def results(state: GameState) -> list[HandResult]:
    """Every hand of a finished game: its win shares (the hand's winner, or
    its team's two seats half each; a tie split between all seats) and each
    seat's score in it."""
    assert isinstance(state, LineGame)
    n = state.players
    out = []
    for i, scores in enumerate(zip(*state.round_scores, strict=True)):
        winner = state.hand_winners[i]
        if winner < 0:
            shares = [1.0 / n] * n
        elif state.teams:
            shares = [0.5 if s & 1 == winner & 1 else 0.0 for s in range(n)]
        else:
            shares = [1.0 if s == winner else 0.0 for s in range(n)]
        out.append(HandResult(tuple(shares), tuple(scores)))
    return out


def describe(rules: LineRules) -> str:
    """The arena's line for resolved line-game rules."""
    teams = ", teams" if rules.teams else ""
    return (
        f"{rules.game} (preset {rules.preset}), double-{rules.set_max}, "
        f"{rules.hand_size} tiles, to {rules.target_score}{teams}"
    )


def _sides(state: LineGame) -> list[tuple[int, ...]]:
    if state.teams:
        return [(0, 2), (1, 3)]
    return [(s,) for s in range(state.players)]


class LineWorlds:
    """Full positions consistent with one seat's view (``BotHooks.worlds``).

    The tiles the seat has not seen (the set, less its hand and the line)
    are dealt at random to the other hands, each at its public count, and to
    the boneyard (sleeping and reserved tiles included), in a random order.
    The deal is uniform: it does not use what passes and draws hint at (the
    view has no move log). A position ends with the view's hand
    (``last_hand``): a playout stops there instead of dealing the next.

    >>> from engine.games.line import PRESETS, LineGame
    >>> import random
    >>> game = LineGame(PRESETS["draw"], 3, "worlds")
    >>> seat = game.current_seat
    >>> worlds = LineWorlds(game.view(seat), game.legal_moves())
    >>> sample = LineGame.from_dict(worlds.sample(random.Random(1)))
    >>> sample.hand(seat) == game.hand(seat), sample.legal_moves() == game.legal_moves()
    (True, True)
    """

    def __init__(self, view: GameView, legal: Sequence[Move]) -> None:
        seat = view.viewer_seat
        rules = view.ruleset
        if not isinstance(rules, LineRules):
            raise ValueError("not a line game's view")
        if view.over or view.turn is None or view.hand is None or view.line is None:
            raise ValueError("the view is not a seat's view of a game in progress")
        if seat is None or view.current_seat != seat:
            raise ValueError("the view is not the seat to move's")
        self.seat: Final = seat
        players = len(view.players)
        hand = sorted(t.id for t in view.hand)
        line = [a << 5 | b for a, b in view.line.tiles]
        seen = set(hand) | {Tile.of(a, b).id for a, b in view.line.tiles}
        self.unseen: Final = [t for t in canonical_ids(rules.set_max) if t not in seen]
        self._counts = [p.hand_count for p in view.players]
        if sum(self._counts) - self._counts[seat] + view.boneyard_count != len(self.unseen):
            raise ValueError("the view's counts do not add up to its unseen tiles")
        opening = -1
        plays = [m for m in legal if m.kind is MoveKind.PLAY and m.tile is not None]
        if not line and len(plays) == 1 and len(hand) > 1:
            assert plays[0].tile is not None
            opening = plays[0].tile.id  # CL-START-1: the tile that must open
        round_scores = [list(p.round_scores) for p in view.players]
        data = LineGame(rules, players, "world").to_dict()
        data.update(
            round=view.round,
            starter=seat,
            line=line,
            opening_tile=opening,
            turn=[seat, view.turn.drew_this_turn],
            turns=0 if view.turn.first_turn else players,
            hand_points=[p.score - sum(p.round_scores) for p in view.players],
            round_scores=round_scores,
            hand_winners=[-1] * len(round_scores[0]),
            last_hand=view.round,
            version=0,
            history="",
        )
        self._template = data
        self._hand = hand

    def sample(self, rng: random.Random) -> dict[str, Any]:
        """One position (``LineGame.to_dict``'s form, version 0)."""
        tiles = self.unseen[:]
        rng.shuffle(tiles)
        hands = []
        at = 0
        for s, count in enumerate(self._counts):
            if s == self.seat:
                hands.append(self._hand[:])
            else:
                hands.append(sorted(tiles[at : at + count]))
                at += count
        data = dict(self._template)
        data["hands"] = hands
        data["boneyard"] = tiles[at:]
        data["line"] = data["line"][:]
        data["turn"] = data["turn"][:]
        data["hand_points"] = data["hand_points"][:]
        data["round_scores"] = [rs[:] for rs in data["round_scores"]]
        data["hand_winners"] = data["hand_winners"][:]
        return data


def _worlds(view: GameView, legal: Sequence[Move]) -> LineWorlds:
    return LineWorlds(view, legal)


#: What the bots of ``engine.bots`` and the search of ``engine.expert`` are given.
HOOKS: Final = BotHooks(
    scores=hook_scores,
    sensible=list,
    worlds=_worlds,
    playout_policy=playout_policy,
    reward=reward,
    # Switch on any lead: a line game's hand is short, so the default budget
    # plays some 30 worlds per candidate, and on the same 40 2-player Block
    # games (seed "eg", default budget) margin 0 won 55.8% of the hands
    # [52.5, 59.1] against greedy, the shared margin of 1 52.3% [49.0, 55.5].
    switch_margin=0.0,
)


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
