"""Mexican Train's bots: the greedy bot's heuristics (:func:`greedy_scores`,
read from a seat's view), the same policy read from a state for the
expert's playouts (:func:`playout_policy`), and the playouts' objective
(:func:`reward`). ``engine.bots`` and ``engine.expert`` do the rest for
every game; :data:`HOOKS` is what they are given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, final

from engine.game import BotHooks, GameState, HandResult
from engine.games.mexican_train.determinize import Determinizer
from engine.games.mexican_train.game import MexicanTrain
from engine.games.mexican_train.rules import DoubleFollowup, Ruleset
from engine.moves import Move, MoveKind, TrainKind, TrainRef
from engine.tiles import Tile
from engine.view import GameView

_PLAY: Final = MoveKind.PLAY
_SEAT: Final = TrainKind.SEAT

#: Reward per pip left in the seat's hand at the round's end, beside the
#: round's win (1): a tie-breaker between outcomes that win or lose alike.
#: Measured with the expert's own weights (:data:`EXPERT`), 2 players,
#: double-12, 3,000 rounds on duplicate deals against greedy: 0.01 won more
#: rounds than 0.1, which traded wins for pips (docs/bots.md).
PIP_WEIGHT: Final = 0.01

# What the greedy bot weighs, in pips (the unit a round is scored in, MT-SC-1).
# Checked one at a time (2,000 rounds each, the changed bot in one seat vs
# the same deals all-greedy; with the first version's longest-chain search,
# which the cheaper walk of own_chain then matched): without the chain
# kept for the own train (CHAIN_SPENT 0) it won 5 points fewer rounds;
# without CHAIN_BROKEN or DOUBLE_FOLLOWED, 3 fewer; the others moved it by
# less than the noise (about 2 points).
#: A double played with a tile to follow it sheds two tiles in one turn (MT-DBL-1).
DOUBLE_FOLLOWED: Final = 20
#: A double with nothing to follow it: the seat will draw (MT-DBL-6); still one
#: heavy tile less, and it blocks the others until covered (MT-DBL-3).
DOUBLE_ALONE: Final = 0
#: Taking one's marker off by playing on one's own train (MT-TR-4): the train is
#: private again, so the tiles kept for it are safe.
MARKER_OFF: Final = 12
#: Spending a tile of the chain kept for one's own train on another train.
CHAIN_SPENT: Final = 10
#: Playing on one's own train a tile that is not the next of its chain.
CHAIN_BROKEN: Final = 6
#: Playing on one's own (unmarked) train at all: shared trains first, since only
#: this seat can play on its own unmarked train later (MT-TR-3).
OWN_TRAIN: Final = 3
#: Another seat's marked train may close at its owner's next play: use it now.
MARKED_TRAIN: Final = 2
#: Per tile of the hand that fits the open end a play leaves on a shared train.
FOLLOWER: Final = 1
#: END_TURN's score: below every play (MT-FT-1: only once the chain cannot go on).
_END_TURN_SCORE: Final = -(1 << 20)


@final
class Weights:
    """What :func:`play_scores` weighs: a play's pips (MT-SC-1), and each of
    the heuristics above, in the same unit."""

    def __init__(
        self,
        pip: int,
        double_followed: int,
        double_alone: int,
        marker_off: int,
        chain_spent: int,
        chain_broken: int,
        own_train: int,
        marked_train: int,
        follower: int,
    ) -> None:
        self.pip: Final = pip
        self.double_followed: Final = double_followed
        self.double_alone: Final = double_alone
        self.marker_off: Final = marker_off
        self.chain_spent: Final = chain_spent
        self.chain_broken: Final = chain_broken
        self.own_train: Final = own_train
        self.marked_train: Final = marked_train
        self.follower: Final = follower


#: The greedy bot's weights: a pip counts as much as a point of any heuristic.
GREEDY: Final = Weights(
    1,
    DOUBLE_FOLLOWED,
    DOUBLE_ALONE,
    MARKER_OFF,
    CHAIN_SPENT,
    CHAIN_BROKEN,
    OWN_TRAIN,
    MARKED_TRAIN,
    FOLLOWER,
)
#: The expert's own weights: the greedy bot's heuristics, each worth ten times
#: a pip. Shedding heavy tiles first saves points, but a round is won by going
#: out (MT-END-1), so the expert sheds tiles in the order that keeps it
#: playing, and lets the pips decide only between plays the heuristics find
#: equal (measured in docs/bots.md).
EXPERT: Final = Weights(
    1,
    10 * DOUBLE_FOLLOWED,
    10 * DOUBLE_ALONE,
    10 * MARKER_OFF,
    10 * CHAIN_SPENT,
    10 * CHAIN_BROKEN,
    10 * OWN_TRAIN,
    10 * MARKED_TRAIN,
    10 * FOLLOWER,
)


def preferred_moves(legal: Sequence[Move]) -> list[Move]:
    """``legal`` without the plays a sensible player never makes: an unannounced
    last-but-one tile when the announced one is legal (MT-KNOCK-1 penalty)."""
    if not any(m.announce for m in legal):
        return list(legal)
    return [m for m in legal if m.kind is not _PLAY or m.announce]


def greedy_scores(view: GameView, options: Sequence[Move]) -> list[int]:
    """One score per move of ``options`` (higher is better): :func:`play_scores`
    for the seat of ``view``, with the greedy bot's weights."""
    return view_scores(view, options, GREEDY)


def expert_scores(view: GameView, options: Sequence[Move]) -> list[int]:
    """:func:`greedy_scores` with the expert's own weights (:data:`EXPERT`)."""
    return view_scores(view, options, EXPERT)


def view_scores(view: GameView, options: Sequence[Move], weights: Weights) -> list[int]:
    """:func:`play_scores` with ``weights`` for the seat of ``view``."""
    seat = view.viewer_seat
    if seat is None or view.hand is None:
        raise ValueError("a bot needs a seat's view")
    rules = view.ruleset
    assert rules.set_max is not None
    hand = hand_masks(view.hand, rules.set_max)
    # Chicken Foot (CL-CF-1) plays on this engine with no own trains.
    own_trains = bool(view.trains) and view.trains[0].ref.kind is TrainKind.SEAT
    own_ends = list(view.trains[seat].open_ends) if own_trains else []
    shared_ends = [
        v
        for train in view.trains
        if train.ref.kind is TrainKind.MEXICAN or (train.marker and train.ref.number != seat)
        for v in train.open_ends
    ]
    values = [-1 if m.train is None else _end_value(view, m.train) for m in options]
    return play_scores(
        hand,
        seat,
        options,
        values,
        own_ends,
        view.players[seat].marker,
        shared_ends,
        # A double's tile to follow goes anywhere (MT-DBL-2); none is owed
        # where the rules are not Mexican Train's own (Chicken Foot).
        isinstance(rules, Ruleset) and rules.double_followup is DoubleFollowup.ANY_TRAIN,
        weights,
    )


def play_scores(
    hand: list[int],
    seat: int,
    options: Sequence[Move],
    values: Sequence[int],
    own_ends: Sequence[int],
    marked: bool,
    shared_ends: Sequence[int],
    any_train: bool,
    weights: Weights = GREEDY,
) -> list[int]:
    """The greedy bot's score of each move of ``options`` (higher is better),
    or with ``weights``, another bot's (the expert's, :data:`EXPERT`).

    ``hand`` is one bit mask per pip value (bit ``x`` of ``hand[v]``: the tile
    ``v-x`` is held), ``values[i]`` the open end ``options[i]`` plays on,
    ``own_ends`` the open ends of the seat's train, ``shared_ends`` those of
    the other trains it may play on (MT-TR-3; read only when a double is
    among ``options``). The heuristics:

    * shed heavy tiles: a play is worth its pips, since whatever stays in the
      hand at the round's end is scored (MT-SC-1);
    * shed doubles early, when a tile can follow (two tiles in one turn,
      MT-DBL-1/2); a lone double is worth its pips only;
    * keep the own train private and a playable chain for it: a chain of hand
      tiles from the own train's open end (:func:`own_chain`) is kept for
      that train, which no one else may play on while unmarked (MT-TR-3); its
      tiles are not spent elsewhere, and the own train takes the chain's next
      tile only. Shared trains (Mexican, others' marked ones) are used first,
      marked ones before they close;
    * take the marker off (MT-TR-4) when the own train can be played;
    * on a shared train, prefer leaving an open end the hand can follow;
    * in a chain first turn (MT-FT-1) keep playing: ``END_TURN`` comes last.

    The expert's playouts call this same function for every seat.
    """
    if len(own_ends) == 1:
        chain = own_chain(hand, own_ends[0])
    else:  # a chicken-footed own train (MT-DBL-7): the best of its branches
        chain = max((own_chain(hand, v) for v in own_ends), key=_chain_value, default=[])
    next_of_chain = chain[0] if chain else -1
    reserved = [0] * len(hand)  # the chain's tiles, as masks like the hand's
    for t in chain:
        reserved[t >> 5] |= 1 << (t & 31)
        reserved[t & 31] |= 1 << (t >> 5)
    w = weights
    scores = []
    for move, value in zip(options, values, strict=True):
        tile, train = move.tile, move.train
        if tile is None or train is None:
            scores.append(_END_TURN_SCORE)  # END_TURN: only once the chain cannot go on
            continue
        a, b = tile
        score = w.pip * (a + b)
        if a == b:
            others = hand[a] & ~(1 << a)
            follows = bool(others) or (
                any_train
                and any(
                    others if v == a else hand[v] for ends in (shared_ends, own_ends) for v in ends
                )
            )
            score += w.double_followed if follows else w.double_alone
        if train.kind is _SEAT and train.number == seat:
            score += w.marker_off if marked else -w.own_train
            if a << 5 | b != next_of_chain:
                score -= w.chain_broken
        else:
            if reserved[a] >> b & 1:
                score -= w.chain_spent
            if train.kind is _SEAT:
                score += w.marked_train
            left = b if a == value else a
            # The hand's other tiles that fit the end this play leaves, chain tiles aside.
            followers = hand[left] & ~reserved[left] & ~(1 << (a + b - left))
            score += w.follower * followers.bit_count()
        scores.append(score)
    return scores


def hand_masks(tiles: Sequence[Tile], set_max: int) -> list[int]:
    """A hand as one bit mask per pip value, the engine's own form (bit ``x`` of
    ``masks[v]``: the tile ``v-x`` is held)."""
    masks = [0] * (set_max + 1)
    for a, b in tiles:
        masks[a] |= 1 << b
        masks[b] |= 1 << a
    return masks


def own_chain(hand: list[int], start: int) -> list[int]:
    """A chain of hand tiles (ids) from the open end ``start`` (MT-TR-5), built
    one tile at a time: a double first (it is covered by the next tile,
    MT-DBL-1), else the tile whose far end the rest of the hand continues
    most, the heavier on a tie. Not always the longest chain, but as good for
    the greedy bot in measured play, and cheap enough for playouts."""
    masks = hand[:]
    chain: list[int] = []
    end = start
    while True:
        bits = masks[end]
        if not bits:
            return chain
        if bits >> end & 1:
            far = end
        else:
            far = -1
            best = -1
            while bits:
                low = bits & -bits
                bits ^= low
                x = low.bit_length() - 1
                rank = (masks[x] & ~(1 << end)).bit_count() << 5 | x
                if rank > best:
                    best, far = rank, x
        masks[end] &= ~(1 << far)
        masks[far] &= ~(1 << end)
        chain.append(end << 5 | far if end <= far else far << 5 | end)
        end = far


def _chain_value(chain: list[int]) -> tuple[int, int]:
    return len(chain), sum((t >> 5) + (t & 31) for t in chain)


def _end_value(view: GameView, ref: TrainRef) -> int:
    """The open end a play on ``ref`` must match."""
    for train in view.trains:
        if train.ref.kind is ref.kind and train.ref.number == ref.number:
            if train.branches:
                end = train.branches[ref.end].open_end
                assert end is not None
                return end
            return train.open_ends[0]
    raise ValueError(f"no train {ref} in the view")


def playout_policy(state: GameState, searcher: int) -> Callable[[Sequence[Move]], Move]:
    """The playout policy of ``state`` (a Mexican Train game): :func:`playout_move`,
    the searching seat (``searcher``) by the expert's weights, the others by
    the greedy bot's."""
    assert isinstance(state, MexicanTrain)
    game = state
    any_train = game.double_owes and game.engine_rules.double_followup is DoubleFollowup.ANY_TRAIN

    def policy(legal: Sequence[Move]) -> Move:
        weights = EXPERT if game.current_seat == searcher else GREEDY
        return playout_move(game, legal, any_train, weights)

    return policy


def playout_move(
    game: MexicanTrain, legal: Sequence[Move], any_train: bool, weights: Weights = GREEDY
) -> Move:
    """The move :func:`play_scores` picks with ``weights`` for the seat to
    move, read from the state instead of a view; the first best on a tie,
    announcing the last-but-one tile (MT-KNOCK-1)."""
    seat = game.current_seat
    personal = game.personal_trains
    open_ends = game.open_ends
    markers = game.markers
    shared_ends: list[int] = []
    values: list[int] = []
    doubles = False
    for move in legal:
        tile = move.tile
        train = move.train
        if tile is None or train is None:
            values.append(-1)
            continue
        doubles = doubles or tile.a == tile.b
        values.append(
            open_ends[train.number if train.kind is _SEAT else personal + train.number][train.end]
        )
    if doubles:
        for slot, ends in enumerate(open_ends):
            if slot >= personal or (markers[slot] and slot != seat):
                shared_ends.extend(v for v in ends if v >= 0)
    scores = play_scores(
        game.hands[seat],
        seat,
        legal,
        values,
        [v for v in open_ends[seat] if v >= 0] if seat < personal else [],
        markers[seat],
        shared_ends,
        any_train,
        weights,
    )
    best = legal[0]
    best_value = -1 << 30
    for move, score in zip(legal, scores, strict=True):
        value = score * 2 + move.announce
        if value > best_value:
            best, best_value = move, value
    return best


def reward(state: GameState, seat: int) -> float:
    """The seat's outcome of a finished round: its share of the win (the lowest
    round score, split between ties) less ``PIP_WEIGHT`` per pip left (MT-SC-1)."""
    return round_reward(state, seat, PIP_WEIGHT)


def round_reward(state: GameState, seat: int, pip_weight: float) -> float:
    """:func:`reward` with ``pip_weight`` per pip left."""
    assert isinstance(state, MexicanTrain)
    scores = [rs[-1] for rs in state.round_scores]
    mine = scores[seat]
    low = min(scores)
    won = 1.0 / scores.count(low) if mine == low else 0.0
    return won - pip_weight * mine


def round_wins(scores: Sequence[int]) -> list[float]:
    """Each seat's share of a round's win: the lowest score wins (the seat
    that went out, MT-END-1, or the lowest hand of a blocked round, MT-END-3),
    ties split.

    >>> round_wins([0, 12, 30, 7]), round_wins([5, 5, 9])
    ([1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.0])
    """
    low = min(scores)
    winners = sum(1 for s in scores if s == low)
    return [1.0 / winners if s == low else 0.0 for s in scores]


def results(state: GameState) -> list[HandResult]:
    """Every round of a finished game: its win shares and round scores (MT-SC-1)."""
    assert isinstance(state, MexicanTrain)
    rounds = zip(*state.round_scores, strict=True)
    return [HandResult(tuple(round_wins(scores)), tuple(scores)) for scores in rounds]


def describe(rules: Ruleset) -> str:
    """The arena's line for a resolved Mexican Train ruleset."""
    return f"preset {rules.preset}, double-{rules.set_max}, {rules.rounds} round(s) a game"


def _worlds(view: GameView, legal: Sequence[Move]) -> Determinizer:
    return Determinizer(view, legal, MexicanTrain)


def expert_budget(players: int) -> int:
    """The expert's playout moves per decision: a move costs more the more
    trains and hands there are, and a playout makes more of them, so the
    budget shrinks with the players to keep a decision's p99 under 100 ms
    (measured in docs/bots.md).

    >>> [expert_budget(n) for n in (2, 4, 8)]
    [12000, 7200, 4000]
    """
    return max(4000, 36000 // (players + 1))


HOOKS: Final = BotHooks(
    scores=greedy_scores,
    expert_scores=expert_scores,
    budget=expert_budget,
    sensible=preferred_moves,
    worlds=_worlds,
    playout_policy=playout_policy,
    reward=reward,
)
