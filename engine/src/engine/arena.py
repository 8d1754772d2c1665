"""Bots against bots on the engine alone, and the statistics that compare them.

:func:`play_game` plays one game of an :class:`ArenaConfig`, seated by
:func:`seating` (or, with ``duplicate``, by :func:`seatings`); :func:`run`
plays many (through any ``map``, so a caller may spread them over
processes); :func:`summarize` turns the records into one line per bot and
:func:`paired` compares two bots deal by deal. :func:`play_deal` plays one
game of given bots from a given seed (``railyard ladder`` builds on it).
Nothing here reads a clock or prints: the caller passes the clock that times
decisions and a progress callback (``railyard arena`` in ``service/cli.py``
passes ``time.perf_counter`` and writes to stderr).

Any game of the registry plays here; its spec says how a round (a hand)
came out (``GameSpec.results``) and whether low scores win.

A bot is a level of :data:`engine.bots.LEVELS`, or any other name that the
config's ``maker`` turns into a function ``(view, legal) -> move``
(``service.ladder.module_bots.module_bot`` does it for ``module:function`` bots
with railyard-bot's ``--module`` contract). The maker must be picklable (a
module's function) for the games to be spread over processes.

**Seating.** Without ``duplicate`` seats rotate and every game has its own
deal: game ``g`` seats ``bots[(s + g) % n]`` in seat ``s`` and is dealt from
``f"{seed}:{g}"``. With ``duplicate`` each deal is played once per
*distinct* rotation of the bots, from the same seed: the ``k`` seatings of
deal ``d`` are games ``d*k .. d*k + k - 1``, all dealt from ``f"{seed}:{d}"``
(the seed fixes every round's deal, MT-FAIR-1), so every bot holds every
seat's tiles of the same deal. ``k`` is ``n`` for ``n`` different bots and
less when the list repeats itself (``greedy,random,greedy,random`` has two
distinct rotations; playing the other two again would replay the very same
games, the bots being deterministic).

**The statistics**, per bot (seats with the same bot pooled):

* **won share**: the share of seat-rounds the bot won. Mexican Train: a
  round is won by the lowest round score: the seat that went out (MT-END-1,
  score 0), or the lowest hand of a blocked round (MT-END-3). The classic
  games: by the hand's winner (a team's hand: each partner half). A tie
  splits the win equally, so the shares of all seats of a round add up to 1
  and an even field scores ``1/players``.
* **mean round score** (Mexican Train: lower is better, MT-SC-1; the
  classic games: points made, higher is better).
* **mean game total** (MT-SC-2).
* **decision time** p50/p99/max over every decision the bot was asked for,
  forced ones included (nearest-rank percentiles); the expert's p99 is
  held against :data:`EXPERT_P99_TARGET_MS`.

Their 95% intervals depend on what is independent:

* Independent deals (no ``duplicate``): the won share has Wilson's score
  interval over the seat-rounds (conservative for a bot holding several
  seats: only one of them can win a round). The round score has a normal
  interval with the round as the unit: the bot's seats of one round are
  averaged into one sample first, since they share a deal and a round
  length; rounds are independent, each dealt from its own seed label. The
  game total: the same with the game as the unit.
* Duplicate deals: every seating of a deal plays the same tiles, so its
  seat-rounds are not independent (the deal's luck is in all of them, on
  both sides) and neither Wilson's interval nor rounds as units would be
  right. The **deal** is the unit: per deal, the bot's won rounds ``y_d``
  and its seat-rounds ``n_d`` over all the deal's seatings; the share is
  ``sum(y_d) / sum(n_d)`` with the normal interval of a ratio of cluster
  sums, variance ``D/(D-1) * sum((y_d - share*n_d)^2) / sum(n_d)^2`` over
  ``D`` deals (:func:`ratio_interval`; with equal ``n_d`` it is the plain
  interval of the per-deal means). The round score is the same ratio with
  pips (points) for ``y_d``; the game total a normal interval over the
  per-deal means of the bot's totals.
* **paired comparison** (duplicate deals; :func:`paired`): per deal, bot A's
  won share and mean round score over its seat-rounds in all the deal's
  seatings, minus B's, averaged over deals with a normal interval over
  deals. Both bots held the same tiles, so the deal's luck is on both sides
  of each difference; and the two bots' own intervals are not independent
  (a round's shares add up to 1), so whether A beats B is read from this
  interval, not from whether theirs overlap. In team games it is per team
  (a team's share of the hand and its points, the partners' sum,
  CL-TEAM-1) when every team is one bot, else per seat.

>>> import time
>>> from engine.games.mexican_train.rules import preset
>>> config = ArenaConfig(("greedy", "random"), preset("standard").with_options(rounds=1), 4)
>>> records = run(config, clock=time.perf_counter)
>>> [r.levels for r in records]
[('greedy', 'random'), ('random', 'greedy'), ('greedy', 'random'), ('random', 'greedy')]
>>> stats = summarize(records)
>>> [s.level for s in stats], sum(s.wins for s in stats)
(['random', 'greedy'], 4.0)
>>> duplicate = ArenaConfig(config.bots, config.ruleset, 4, duplicate=True)
>>> [(r.deal, r.seed, r.levels) for r in run(duplicate, clock=time.perf_counter)][:2]
[(0, 'arena:0', ('greedy', 'random')), (0, 'arena:0', ('random', 'greedy'))]
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from statistics import fmean, stdev
from typing import Final

from engine.bots import LEVELS, bot_key, choose
from engine.game import Rules
from engine.moves import Move
from engine.registry import game_spec, new_game
from engine.view import GameView

#: z for a two-sided 95% interval.
Z95: Final = 1.959963984540054
#: The expert's decision time the arena reports against (docs/bots.md): p99 in ms.
EXPERT_P99_TARGET_MS: Final = 100.0

Clock = Callable[[], float]
Mapper = Callable[[Callable[[int], "GameRecord"], Iterable[int]], Iterable["GameRecord"]]
Progress = Callable[[int, int], None]
#: A bot other than the levels: a move of ``legal`` from the seat's view alone.
Chooser = Callable[[GameView, Sequence[Move]], Move]
#: Turns a bot's name (e.g. ``package.module:function``) into its chooser;
#: raises ValueError, naming the bot, for a name it cannot.
BotMaker = Callable[[str], Chooser]


class BotError(RuntimeError):
    """A bot that is not a level failed: it raised, or chose an illegal move.
    The message names the bot, the game's seed, the seat and the version."""


def is_level(bot: str) -> bool:
    return bot in LEVELS


def check_bots(bots: Sequence[str], maker: BotMaker | None) -> None:
    """Refuses a bot that is neither a level nor one ``maker`` can make (it
    is made here once, so a module that cannot be imported is named before
    any game is played)."""
    for bot in bots:
        if is_level(bot):
            continue
        if maker is None:
            raise ValueError(f"unknown bot level {bot!r}; known: {', '.join(LEVELS)}")
        maker(bot)


@dataclass(frozen=True)
class ArenaConfig:
    """What to play: one bot per seat, the ruleset, how many games, the seed
    games are dealt from (see the module's "Seating"), the expert's budget
    (``None``: its default), whether deals are played in duplicate, and what
    makes the bots that are not levels."""

    bots: tuple[str, ...]
    ruleset: Rules
    games: int
    seed: str = "arena"
    budget: int | None = None
    duplicate: bool = False
    maker: BotMaker | None = None

    def __post_init__(self) -> None:
        check_bots(self.bots, self.maker)
        if self.games < 1:
            raise ValueError(f"games must be at least 1, not {self.games}")
        self.ruleset.resolve(len(self.bots))  # refuses a count or deal that cannot be played
        k = len(seatings(self.bots))
        if self.duplicate and self.games % k:
            near = sorted({self.games - self.games % k, self.games + k - self.games % k} - {0})
            raise ValueError(
                f"duplicate deals are played once per seating ({k} for {','.join(self.bots)}): "
                f"games must be a multiple of {k} (e.g. {' or '.join(map(str, near))}), "
                f"not {self.games}"
            )

    @property
    def seatings(self) -> int:
        """Games per deal: the distinct rotations with ``duplicate``, else 1."""
        return len(seatings(self.bots)) if self.duplicate else 1

    @property
    def deals(self) -> int:
        return self.games // self.seatings


@dataclass(frozen=True)
class GameRecord:
    """One finished game: who sat where, every round's scores and win shares
    (per round, per seat), and every decision's time in seconds (per seat);
    the deal it was dealt (``None``: its own, the game's index), its seed,
    and its sides (the teams' seats; empty: every seat for itself)."""

    index: int
    levels: tuple[str, ...]
    round_scores: tuple[tuple[int, ...], ...]
    round_shares: tuple[tuple[float, ...], ...]
    decision_seconds: tuple[tuple[float, ...], ...]
    deal: int | None = None
    seed: str = ""
    sides: tuple[tuple[int, ...], ...] = ()

    @property
    def deal_number(self) -> int:
        return self.index if self.deal is None else self.deal


@dataclass(frozen=True)
class LevelStats:
    level: str  # the bot: a level or another bot's name
    seats: int  # seats per game
    seat_rounds: int
    wins: float
    won_share: float
    won_low: float
    won_high: float
    rounds: int  # rounds the bot took part in
    mean_score: float
    score_half: float
    games: int
    mean_total: float
    total_half: float
    decisions: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    #: The intervals' units: deals (duplicate), else rounds and games.
    deals: int = 0
    duplicate: bool = False


@dataclass(frozen=True)
class PairedStats:
    """Bot ``first`` minus bot ``second``, deal by deal (see the module's
    "paired comparison"): the won share and the mean round score, each with
    the half-width of its 95% interval over ``deals``."""

    first: str
    second: str
    per: str  # "seat" or "team"
    deals: int
    won_diff: float
    won_half: float
    score_diff: float
    score_half: float


def seating(bots: Sequence[str], game: int) -> tuple[str, ...]:
    """Who plays each seat in game ``game``: the list rotated by ``game``."""
    n = len(bots)
    return tuple(bots[(s + game) % n] for s in range(n))


def seatings(bots: Sequence[str]) -> list[tuple[str, ...]]:
    """The distinct rotations of ``bots``, rotation 0 first: each bot in each
    seat once per deal.

    >>> seatings(["expert", "greedy", "random"])
    [('expert', 'greedy', 'random'), ('greedy', 'random', 'expert'), ('random', 'expert', 'greedy')]
    >>> seatings(["greedy", "random", "greedy", "random"])
    [('greedy', 'random', 'greedy', 'random'), ('random', 'greedy', 'random', 'greedy')]
    """
    first = tuple(bots)
    out = [first]
    for shift in range(1, len(first)):
        rotated = seating(first, shift)
        if rotated == first:
            break  # the list repeats itself: further rotations are the same seatings
        out.append(rotated)
    return out


def sides(ruleset: Rules, players: int) -> tuple[tuple[int, ...], ...]:
    """The seats of each side: the teams' (CL-TEAM-1), else one seat each."""
    view = new_game(ruleset, players, "sides").view(None)
    return tuple(t.seats for t in view.teams) or tuple((s,) for s in range(players))


@functools.lru_cache(maxsize=64)
def _made(maker: BotMaker, bot: str) -> Chooser:
    # Once per process and bot: a module is imported once, not per game.
    return maker(bot)


def play_deal(
    ruleset: Rules,
    bots: Sequence[str],
    seed: str,
    *,
    clock: Clock,
    index: int = 0,
    deal: int | None = None,
    budget: int | None = None,
    maker: BotMaker | None = None,
) -> GameRecord:
    """Play a game of ``bots`` (one per seat) dealt from ``seed`` to its end."""
    levels = tuple(bots)
    game = new_game(ruleset, len(levels), seed)
    sides_ = tuple(t.seats for t in game.view(None).teams)
    others: dict[str, Chooser] = {}
    for bot in levels:
        if not is_level(bot) and bot not in others:
            if maker is None:
                raise ValueError(f"unknown bot level {bot!r}; known: {', '.join(LEVELS)}")
            others[bot] = _made(maker, bot)
    times: list[list[float]] = [[] for _ in levels]
    while not game.over:
        seat = game.current_seat
        view = game.view(seat)
        legal = game.legal_moves()
        bot = levels[seat]
        start = clock()
        if is_level(bot):
            move = choose(bot, view, legal, bot_key(view), budget=budget)
        else:
            move = _ask(others[bot], bot, view, legal, seed)
        times[seat].append(clock() - start)
        game.push(move, seat)
    hands = game_spec(ruleset.game).results(game)
    return GameRecord(
        index,
        levels,
        tuple(h.scores for h in hands),
        tuple(h.shares for h in hands),
        tuple(tuple(t) for t in times),
        deal,
        seed,
        sides_,
    )


def _ask(chooser: Chooser, bot: str, view: GameView, legal: Sequence[Move], seed: str) -> Move:
    where = f"bot {bot!r} (game {seed!r}, seat {view.viewer_seat}, version {view.version})"
    try:
        move = chooser(view, legal)
    except Exception as exc:  # the bot's own code: whatever it raises is its failure
        raise BotError(f"{where} failed: {type(exc).__name__}: {exc}") from exc
    if move not in legal:
        raise BotError(f"{where} chose {move}, which is not a legal move now")
    return move


def play_game(config: ArenaConfig, index: int, clock: Clock) -> GameRecord:
    """Play game ``index`` of ``config`` to its end, every seat a bot."""
    if config.duplicate:
        k = config.seatings
        deal = index // k
        bots = seatings(config.bots)[index % k]
    else:
        deal = index
        bots = seating(config.bots, index)
    return play_deal(
        config.ruleset,
        bots,
        f"{config.seed}:{deal}",
        clock=clock,
        index=index,
        deal=deal,
        budget=config.budget,
        maker=config.maker,
    )


def run(
    config: ArenaConfig,
    *,
    clock: Clock,
    progress: Progress | None = None,
    mapper: Mapper = map,
) -> list[GameRecord]:
    """Play every game of ``config``; ``mapper`` may run them in any order and
    place (e.g. a process pool's); ``progress(games_done, games)`` follows.
    The records come back in game order."""
    records: list[GameRecord] = []
    job = functools.partial(play_game, config, clock=clock)
    for record in mapper(job, range(config.games)):
        records.append(record)
        if progress is not None:
            progress(len(records), config.games)
    records.sort(key=lambda r: r.index)
    return records


# ------------------------------------------------------------------ statistics


def wilson(successes: float, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval for a proportion.

    >>> [round(x, 4) for x in wilson(50, 100)]
    [0.4038, 0.5962]
    >>> wilson(0, 0)
    (0.0, 1.0)
    """
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def mean_interval(samples: Sequence[float], z: float = Z95) -> tuple[float, float]:
    """The mean and the half-width of its normal interval (0 for one sample).

    >>> [round(x, 4) for x in mean_interval([1.0, 2.0, 3.0, 4.0])]
    [2.5, 1.2652]
    """
    mean = fmean(samples)
    if len(samples) < 2:
        return mean, 0.0
    return mean, z * stdev(samples) / math.sqrt(len(samples))


def ratio_interval(
    sums: Sequence[float], counts: Sequence[float], z: float = Z95
) -> tuple[float, float]:
    """``sum(sums) / sum(counts)`` and the half-width of its normal interval
    with each (sum, count) pair one independent cluster (a deal): the
    linearized variance ``k/(k-1) * sum((y - r*n)^2) / sum(n)^2`` over ``k``
    clusters. With equal counts it is :func:`mean_interval` of the
    clusters' means.

    >>> [round(x, 4) for x in ratio_interval([2.0, 4.0, 6.0, 8.0], [2, 2, 2, 2])]
    [2.5, 1.2652]
    >>> ratio_interval([3.0], [4])
    (0.75, 0.0)
    """
    total = math.fsum(counts)
    ratio = math.fsum(sums) / total
    k = len(sums)
    if k < 2:
        return ratio, 0.0
    spread = math.fsum((y - ratio * n) ** 2 for y, n in zip(sums, counts, strict=True))
    return ratio, z * math.sqrt(k / (k - 1) * spread) / total


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` percentile (0 < q <= 100) of ``values``.

    >>> percentile(list(range(1, 101)), 99), percentile([3.0, 1.0, 2.0], 50)
    (99, 2.0)
    """
    ordered = sorted(values)
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def bot_order(records: Sequence[GameRecord]) -> list[str]:
    """The bots present: the levels in :data:`LEVELS` order, then the others
    in the order they first sat."""
    seen: dict[str, None] = {}
    for record in records:
        seen.update(dict.fromkeys(record.levels))
    return [lv for lv in LEVELS if lv in seen] + [b for b in seen if not is_level(b)]


def is_duplicate(records: Sequence[GameRecord]) -> bool:
    """Whether some deal was played more than once (its games are then paired)."""
    deals = [r.deal_number for r in records]
    return len(set(deals)) < len(deals)


def _by_deal(records: Sequence[GameRecord]) -> dict[int, list[GameRecord]]:
    out: dict[int, list[GameRecord]] = {}
    for record in records:
        out.setdefault(record.deal_number, []).append(record)
    return out


def summarize(records: Sequence[GameRecord]) -> list[LevelStats]:
    """One :class:`LevelStats` per bot present, in :func:`bot_order`; the
    intervals as the module says, by whether deals were played in duplicate."""
    duplicate = is_duplicate(records)
    deals = _by_deal(records)
    stats = []
    for level in bot_order(records):
        seat_rounds = 0
        wins = 0.0
        round_means: list[float] = []
        game_means: list[float] = []
        times: list[float] = []
        seats = 0
        # Per deal: won rounds, pips (points), seat-rounds, and the game totals.
        deal_wins: list[float] = []
        deal_scores: list[float] = []
        deal_rounds: list[int] = []
        deal_totals: list[float] = []
        for games in deals.values():
            d_wins, d_scores, d_rounds = 0.0, 0.0, 0
            d_totals: list[int] = []
            for record in games:
                mine = [s for s, lv in enumerate(record.levels) if lv == level]
                if not mine:
                    continue
                seats = max(seats, len(mine))
                totals = [0] * len(record.levels)
                for scores, shares in zip(record.round_scores, record.round_shares, strict=True):
                    won = sum(shares[s] for s in mine)
                    wins += won
                    d_wins += won
                    d_scores += sum(scores[s] for s in mine)
                    seat_rounds += len(mine)
                    d_rounds += len(mine)
                    round_means.append(fmean(scores[s] for s in mine))
                    for s, score in enumerate(scores):
                        totals[s] += score
                game_means.append(fmean(totals[s] for s in mine))
                d_totals.extend(totals[s] for s in mine)
                for s in mine:
                    times.extend(record.decision_seconds[s])
            if d_rounds:
                deal_wins.append(d_wins)
                deal_scores.append(d_scores)
                deal_rounds.append(d_rounds)
                deal_totals.append(fmean(d_totals))
        if duplicate:
            share, share_half = ratio_interval(deal_wins, deal_rounds)
            low, high = max(0.0, share - share_half), min(1.0, share + share_half)
            mean_score, score_half = ratio_interval(deal_scores, deal_rounds)
            mean_total, total_half = mean_interval(deal_totals)
        else:
            low, high = wilson(wins, seat_rounds)
            mean_score, score_half = mean_interval(round_means)
            mean_total, total_half = mean_interval(game_means)
        stats.append(
            LevelStats(
                level=level,
                seats=seats,
                seat_rounds=seat_rounds,
                wins=wins,
                won_share=wins / seat_rounds if seat_rounds else math.nan,
                won_low=low,
                won_high=high,
                rounds=len(round_means),
                mean_score=mean_score,
                score_half=score_half,
                games=len(game_means),
                mean_total=mean_total,
                total_half=total_half,
                decisions=len(times),
                p50_ms=percentile(times, 50) * 1000,
                p99_ms=percentile(times, 99) * 1000,
                max_ms=max(times, default=math.nan) * 1000,
                deals=len(deal_rounds),
                duplicate=duplicate,
            )
        )
    return stats


def per_team(records: Sequence[GameRecord]) -> bool:
    """Whether every game has teams and each team is one bot in every game:
    then the paired comparison is per team."""
    return bool(records) and all(
        r.sides and all(len({r.levels[s] for s in side}) == 1 for side in r.sides) for r in records
    )


def paired(records: Sequence[GameRecord], first: str, second: str) -> PairedStats:
    """``first`` minus ``second`` over the deals both played (the module's
    "paired comparison"). Per deal and bot: its won share and mean round
    score over its units' rounds in every seating (a unit is a seat, or a
    team whose seats it holds both, per :func:`per_team`)."""
    teams = per_team(records)
    won_diffs: list[float] = []
    score_diffs: list[float] = []
    for games in _by_deal(records).values():
        measures = []
        for bot in (first, second):
            won = score = 0.0
            count = 0
            for record in games:
                own = record.sides if teams else tuple((s,) for s in range(len(record.levels)))
                units = [side for side in own if record.levels[side[0]] == bot]
                for scores, shares in zip(record.round_scores, record.round_shares, strict=True):
                    for unit in units:
                        won += sum(shares[s] for s in unit)
                        score += sum(scores[s] for s in unit)
                        count += 1
            measures.append((won / count, score / count) if count else None)
        a, b = measures
        if a is None or b is None:
            continue
        won_diffs.append(a[0] - b[0])
        score_diffs.append(a[1] - b[1])
    if not won_diffs:
        raise ValueError(f"{first!r} and {second!r} played no deal together")
    won_diff, won_half = mean_interval(won_diffs)
    score_diff, score_half = mean_interval(score_diffs)
    return PairedStats(
        first,
        second,
        "team" if teams else "seat",
        len(won_diffs),
        won_diff,
        won_half,
        score_diff,
        score_half,
    )


def expert_p99_line(stats: Sequence[LevelStats]) -> str | None:
    """The expert's p99 against the target, when it played."""
    for s in stats:
        if s.level == "expert" and s.decisions:
            met = "met" if s.p99_ms <= EXPERT_P99_TARGET_MS else "NOT met"
            return (
                f"decision time target: the expert's p99 at most {EXPERT_P99_TARGET_MS:.0f} ms: "
                f"{met} ({s.p99_ms:.1f} ms over {s.decisions:,} decisions)"
            )
    return None


def report(config: ArenaConfig, records: Sequence[GameRecord]) -> str:
    """The arena's table, as ``railyard arena`` prints it."""
    rules = config.ruleset.resolve(len(config.bots))
    spec = game_spec(rules.game)
    rounds = sum(len(r.round_scores) for r in records)
    budget = "default" if config.budget is None else str(config.budget)
    won = (
        "won share: lowest round score wins, ties split"
        if spec.low_score_wins
        else "won share: the hand's winner (a team: each partner half), ties split"
    )
    better = "lower" if spec.low_score_wins else "higher"
    stats = summarize(records)
    duplicate = is_duplicate(records)
    if duplicate:
        deals = len(_by_deal(records))
        games = (
            f"duplicate: {deals} deals x {config.seatings} seatings = {len(records)} games, "
            f"{rounds} rounds"
        )
        method = [
            f"{won}; 95% normal interval over deals (a deal's seatings share its tiles: "
            "one sample)",
            "round score, game total: mean and 95% normal interval over deals "
            f"({better} is better)",
        ]
    else:
        games = f"{len(records)} games, {rounds} rounds"
        method = [
            f"{won}; 95% Wilson interval over seat-rounds",
            "round score, game total: mean and 95% normal interval over rounds / games "
            f"({better} is better)",
        ]
    width = max([7, *(len(s.level) for s in stats)])
    lines = [
        f"{len(config.bots)} players ({', '.join(config.bots)}), {spec.describe(rules)}; "
        f"{games}; seed {config.seed!r}; expert budget {budget}",
        *method,
        "",
        f"{'level':<{width}} {'seats':>5} {'won share [95% CI]':<24} "
        f"{'round score [95% CI]':<24} {'game total ± 95%':<18} "
        f"{'decision p50 / p99 / max':<28} {'decisions':>9}",
    ]
    for s in stats:
        won = f"{s.won_share:.3f} [{s.won_low:.3f}, {s.won_high:.3f}]"
        score = (
            f"{s.mean_score:.2f} [{s.mean_score - s.score_half:.2f}, "
            f"{s.mean_score + s.score_half:.2f}]"
        )
        total = f"{s.mean_total:.1f} ± {s.total_half:.1f}"
        times = f"{s.p50_ms:.2f} / {s.p99_ms:.2f} / {s.max_ms:.1f} ms"
        lines.append(
            f"{s.level:<{width}} {s.seats:>5} {won:<24} {score:<24} {total:<18} "
            f"{times:<28} {s.decisions:>9,}"
        )
    if duplicate:
        order = list(dict.fromkeys(config.bots))
        for i, first in enumerate(order):
            for second in order[i + 1 :]:
                lines += ["", *paired_lines(paired(records, first, second), spec.low_score_wins)]
    target = expert_p99_line(stats)
    if target:
        lines += ["", target]
    return "\n".join(lines)


def paired_lines(p: PairedStats, low_score_wins: bool) -> list[str]:
    """The paired comparison as the arena prints it."""
    better = "lower" if low_score_wins else "higher"
    return [
        f"paired by deal, {p.first} minus {p.second}, per {p.per} "
        f"({p.deals} deals; 95% normal interval over deals):",
        f"  won share    {p.won_diff:+.3f} [{p.won_diff - p.won_half:+.3f}, "
        f"{p.won_diff + p.won_half:+.3f}]",
        f"  round score  {p.score_diff:+.2f} [{p.score_diff - p.score_half:+.2f}, "
        f"{p.score_diff + p.score_half:+.2f}] ({better} is better)",
    ]
