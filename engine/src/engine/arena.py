"""Bots against bots on the engine alone, and the statistics that compare them.

:func:`play_game` plays one game between bot levels seated by
:func:`seating`; :func:`run` plays many (through any ``map``, so a caller may
spread them over processes) and :func:`summarize` turns the records into one
line per bot level. Nothing here reads a clock or prints: the caller passes
the clock that times decisions and a progress callback (``railyard arena``
in ``service/cli.py`` passes ``time.perf_counter`` and writes to stderr).

Any game of the registry plays here; its spec says how a round (a hand)
came out (``GameSpec.results``) and whether low scores win.

The statistics, per bot level (seats with the same level pooled):

* **won share**: the share of seat-rounds the level won. Mexican Train: a
  round is won by the lowest round score: the seat that went out (MT-END-1,
  score 0), or the lowest hand of a blocked round (MT-END-3). The classic
  games: by the hand's winner (a team's hand: each partner half). A tie
  splits the win equally, so the shares of all seats of a round add up to 1
  and an even field scores ``1/players``. The 95% interval is Wilson's score interval over the
  seat-rounds. For a level holding several seats this is conservative: its
  seats of one round are negatively correlated (only one of them can win).
* **mean round score** (Mexican Train: lower is better, MT-SC-1; the
  classic games: points made, higher is better) with a normal 95%
  interval. The unit of sampling is the round: the level's seats of one
  round are averaged into one sample first, since they share a deal and a
  round length and are not independent. Deals are independent across
  rounds and games (each round is dealt from its own seed label).
* **mean game total** (MT-SC-2), the same way with the game as the unit.
* **decision time** p50/p99/max over every decision the level was asked for,
  forced ones included (nearest-rank percentiles).

Seats rotate: in game ``g`` seat ``s`` is played by ``bots[(s + g) % n]``, so
over ``n`` consecutive games every bot sits in every seat once.

>>> import time
>>> from engine.games.mexican_train.rules import preset
>>> config = ArenaConfig(("greedy", "random"), preset("standard").with_options(rounds=1), 4)
>>> records = run(config, clock=time.perf_counter)
>>> [r.levels for r in records]
[('greedy', 'random'), ('random', 'greedy'), ('greedy', 'random'), ('random', 'greedy')]
>>> stats = summarize(records)
>>> [s.level for s in stats], sum(s.wins for s in stats)
(['random', 'greedy'], 4.0)
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
from engine.registry import game_spec, new_game

#: z for a two-sided 95% interval.
Z95: Final = 1.959963984540054

Clock = Callable[[], float]
Mapper = Callable[[Callable[[int], "GameRecord"], Iterable[int]], Iterable["GameRecord"]]
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class ArenaConfig:
    """What to play: one bot level per seat, the ruleset, how many games, the
    seed games are dealt from (game ``g`` uses ``f"{seed}:{g}"``) and the
    expert's budget (``None``: its default)."""

    bots: tuple[str, ...]
    ruleset: Rules
    games: int
    seed: str = "arena"
    budget: int | None = None

    def __post_init__(self) -> None:
        unknown = [b for b in self.bots if b not in LEVELS]
        if unknown:
            raise ValueError(f"unknown bot level {unknown[0]!r}; known: {', '.join(LEVELS)}")
        if self.games < 1:
            raise ValueError(f"games must be at least 1, not {self.games}")
        self.ruleset.resolve(len(self.bots))  # refuses a count or deal that cannot be played


@dataclass(frozen=True)
class GameRecord:
    """One finished game: who sat where, every round's scores and win shares
    (per round, per seat), and every decision's time in seconds (per seat)."""

    index: int
    levels: tuple[str, ...]
    round_scores: tuple[tuple[int, ...], ...]
    round_shares: tuple[tuple[float, ...], ...]
    decision_seconds: tuple[tuple[float, ...], ...]


@dataclass(frozen=True)
class LevelStats:
    level: str
    seats: int  # seats per game
    seat_rounds: int
    wins: float
    won_share: float
    won_low: float
    won_high: float
    rounds: int  # rounds the level took part in (the score interval's samples)
    mean_score: float
    score_half: float
    games: int
    mean_total: float
    total_half: float
    decisions: int
    p50_ms: float
    p99_ms: float
    max_ms: float


def seating(bots: Sequence[str], game: int) -> tuple[str, ...]:
    """Who plays each seat in game ``game``: the list rotated by ``game``."""
    n = len(bots)
    return tuple(bots[(s + game) % n] for s in range(n))


def play_game(config: ArenaConfig, index: int, clock: Clock) -> GameRecord:
    """Play game ``index`` of ``config`` to its end, every seat a bot."""
    levels = seating(config.bots, index)
    game = new_game(config.ruleset, len(levels), f"{config.seed}:{index}")
    times: list[list[float]] = [[] for _ in levels]
    while not game.over:
        seat = game.current_seat
        view = game.view(seat)
        legal = game.legal_moves()
        start = clock()
        move = choose(levels[seat], view, legal, bot_key(view), budget=config.budget)
        times[seat].append(clock() - start)
        game.push(move, seat)
    hands = game_spec(config.ruleset.game).results(game)
    return GameRecord(
        index,
        levels,
        tuple(h.scores for h in hands),
        tuple(h.shares for h in hands),
        tuple(tuple(t) for t in times),
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


def summarize(records: Sequence[GameRecord]) -> list[LevelStats]:
    """One :class:`LevelStats` per bot level present, in :data:`LEVELS` order."""
    present = {level for r in records for level in r.levels}
    stats = []
    for level in (lv for lv in LEVELS if lv in present):
        seat_rounds = 0
        wins = 0.0
        round_means: list[float] = []
        game_means: list[float] = []
        times: list[float] = []
        seats = 0
        for record in records:
            mine = [s for s, lv in enumerate(record.levels) if lv == level]
            if not mine:
                continue
            seats = max(seats, len(mine))
            totals = [0] * len(record.levels)
            for scores, shares in zip(record.round_scores, record.round_shares, strict=True):
                wins += sum(shares[s] for s in mine)
                seat_rounds += len(mine)
                round_means.append(fmean(scores[s] for s in mine))
                for s, score in enumerate(scores):
                    totals[s] += score
            game_means.append(fmean(totals[s] for s in mine))
            for s in mine:
                times.extend(record.decision_seconds[s])
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
            )
        )
    return stats


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
    lines = [
        f"{len(config.bots)} players ({', '.join(config.bots)}), {spec.describe(rules)}; "
        f"{len(records)} games, {rounds} rounds; seed {config.seed!r}; expert budget {budget}",
        f"{won}; 95% Wilson interval over seat-rounds",
        "round score, game total: mean and 95% normal interval over rounds / games "
        f"({'lower' if spec.low_score_wins else 'higher'} is better)",
        "",
        f"{'level':<7} {'seats':>5} {'won share [95% CI]':<24} "
        f"{'round score [95% CI]':<24} {'game total ± 95%':<18} "
        f"{'decision p50 / p99 / max':<28} {'decisions':>9}",
    ]
    for s in summarize(records):
        won = f"{s.won_share:.3f} [{s.won_low:.3f}, {s.won_high:.3f}]"
        score = (
            f"{s.mean_score:.2f} [{s.mean_score - s.score_half:.2f}, "
            f"{s.mean_score + s.score_half:.2f}]"
        )
        total = f"{s.mean_total:.1f} ± {s.total_half:.1f}"
        times = f"{s.p50_ms:.2f} / {s.p99_ms:.2f} / {s.max_ms:.1f} ms"
        lines.append(
            f"{s.level:<7} {s.seats:>5} {won:<24} {score:<24} {total:<18} "
            f"{times:<28} {s.decisions:>9,}"
        )
    return "\n".join(lines)
