"""Railyard engine benchmark: deals, random playouts, legal-move generation.

    .venv/bin/python bench/engine.py [--seconds S] [--rounds N] [--wall] [--json]
    .venv/bin/python bench/engine.py --profile [--seconds S | --rounds N]

Machines are noisy and differ, so every rate is also shown as a ratio against
a baseline measured in the same run and process: the cost of one round's
shuffle and deal (constructing ``MexicanTrain`` for a fresh seed). Compare
those ratios across machines, not the absolute times.

Everything is single-process (one core) and deterministic: round ``i`` is
dealt from the seed ``bench-{i}`` and played by a ``random.Random`` reseeded
with that same seed, so ``push`` and ``apply`` play the very same games. Each
measurement runs the same work three times and keeps the fastest; the repeats
of all measurements are interleaved, and timed in process CPU time (``--wall``
for wall-clock), so a busy machine skews the baseline and the rates alike.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import math
import os
import platform
import pstats
import random
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Generic, TypeVar

# Run as a script, this file's own directory (bench/) comes first on sys.path,
# and this module, ``engine.py``, would shadow the ``engine`` package: put the
# repository root there instead.
_HERE: Final = Path(__file__).resolve().parent
ROOT: Final = _HERE.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(ROOT))

import engine.native  # noqa: E402
from engine.games.line import LineGame, LineRules, line_rules  # noqa: E402
from engine.games.mexican_train.game import MexicanTrain  # noqa: E402
from engine.games.mexican_train.rules import Ruleset, preset  # noqa: E402
from engine.moves import Move  # noqa: E402
from engine.shuffle import shuffle  # noqa: E402
from engine.tiles import canonical_ids  # noqa: E402

REPEATS: Final = 3
TARGET_ROUNDS_PER_S: Final = 1000
#: Rounds whose every position is sampled for the legal-move measurement.
SAMPLE_ROUNDS: Final = 30
#: Legal-move calls in a row on each sampled position (all but the first find it hot).
HOT_CALLS: Final = 16
#: The 90 tiles a double-12 deal shuffles (the 12-12 engine is set aside).
DECK_90: Final = [t for t in canonical_ids(12) if t != (12 << 5 | 12)]
DEAL_LABEL: Final = "round:1:deal"


@dataclass(frozen=True)
class Variant:
    key: str
    title: str
    ruleset: Ruleset
    players: int


VARIANTS: Final = (
    Variant("4p_standard", "4p double-12 standard", preset("standard").with_options(rounds=1), 4),
    Variant("2p_pagat", "2p double-12 pagat", preset("pagat").with_options(rounds=1), 2),
)


@dataclass(frozen=True)
class LineVariant:
    """A classic game measured one hand per playout, as OpenSpiel's games are."""

    key: str
    title: str
    ruleset: LineRules
    players: int
    #: The OpenSpiel game that plays the same hand, if any.
    peer: str | None


# target_score 1: a game ends with its first hand that scores (nearly every
# one), as OpenSpiel's game is one hand, instead of dealing the next.
_OPENSPIEL_BLOCK: Final = line_rules("block", opening="seat0_any", target_score=1)
LINE_VARIANTS: Final = (
    # OpenSpiel's block dominoes: seat 0 opens with any tile (CL-START-1 seat0_any).
    LineVariant("2p_block", "2p block (seat0_any)", _OPENSPIEL_BLOCK, 2, "python_block_dominoes"),
    LineVariant(
        "4p_block_teams",
        "4p block teams",
        line_rules("block", "block_teams", target_score=1),
        4,
        None,
    ),
    # Its default target: points come during play (CL-A5-1), so a target of 1
    # would end the game at the first multiple of five; the hand's end deals
    # the next one, which this playout pays for.
    LineVariant("2p_all_fives", "2p all fives", line_rules("all_fives"), 2, None),
    LineVariant("2p_matador", "2p matador", line_rules("matador", target_score=1), 2, None),
)
#: The classic-game target: random playouts of a 2-player Block hand at
#: least this many times OpenSpiel's python_block_dominoes (issue 11).
TARGET_OPENSPIEL_RATIO: Final = 10.0


def seeds_for(n: int) -> list[str]:
    return [f"bench-{i}" for i in range(n)]


# ---------------------------------------------------------------- workloads
# Each takes its work list and returns a count (of moves, or of calls).


def shuffle_work(seeds: Sequence[str]) -> int:
    """The raw deal shuffle of 90 tiles, one fresh seed per call."""
    for seed in seeds:
        shuffle(seed, DEAL_LABEL, DECK_90.copy())
    return len(seeds)


def deal_work(variant: Variant) -> Callable[[Sequence[str]], int]:
    """Construct a game for each seed: resolve the rules, shuffle, deal round 1."""
    ruleset, players = variant.ruleset, variant.players

    def run(seeds: Sequence[str]) -> int:
        for seed in seeds:
            MexicanTrain(ruleset, players, seed)
        return len(seeds)

    return run


def playout_work(variant: Variant, use_apply: bool) -> Callable[[Sequence[str]], int]:
    """Deal and play one round per seed, uniformly random moves; returns the moves."""
    ruleset, players = variant.ruleset, variant.players

    def run(seeds: Sequence[str]) -> int:
        rng = random.Random()
        # Uniform choice by scaling random(): Random.choice costs ~1 us a call
        # in pure Python, a tenth of a move, and the chooser is not the engine.
        rnd = rng.random
        moves = 0
        for seed in seeds:
            rng.seed(seed)
            game = MexicanTrain(ruleset, players, seed)
            legal = game.legal_moves
            step = game.apply if use_apply else game.push
            while not game.over:
                options = legal()
                step(options[int(rnd() * len(options))])
            moves += game.version
        return moves

    return run


def line_playout_work(variant: LineVariant) -> Callable[[Sequence[str]], int]:
    """Deal and play one hand per seed (uniformly random moves) to its end;
    returns the moves. The deal is API.md's SHA-256 shuffle (MT-FAIR-1), which
    OpenSpiel's chance nodes do not pay. A hand nobody scores (a blocked tie)
    deals the next, which the playout stops at; All Fives may end mid-hand."""
    ruleset, players = variant.ruleset, variant.players

    def run(seeds: Sequence[str]) -> int:
        # One chooser seeded once per run (the same work every repeat): seeding
        # it from a string costs 4 us, a tenth of a hand here, and is not the engine.
        rng = random.Random(seeds[0] if seeds else "")
        rnd = rng.random
        moves = 0
        for seed in seeds:
            game = LineGame(ruleset, players, seed)
            legal = game.legal_moves
            push = game.push
            while not game.over and game.round == 1:
                options = legal()
                push(options[int(rnd() * len(options))])
            moves += game.version
        return moves

    return run


def openspiel_playout_work(name: str) -> Callable[[Sequence[str]], int] | None:
    """Random playouts of OpenSpiel's ``name`` (chance outcomes drawn by their
    probabilities, players' actions uniformly), one hand each; None when
    OpenSpiel is not installed (it is a development dependency)."""
    try:
        import pyspiel  # type: ignore[import-not-found]
        from open_spiel.python import games  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return None
    game = pyspiel.load_game(name)

    def run(seeds: Sequence[str]) -> int:
        rng = random.Random(seeds[0] if seeds else "")  # as line_playout_work's
        rnd = rng.random
        moves = 0
        for _ in seeds:
            state = game.new_initial_state()
            while not state.is_terminal():
                if state.is_chance_node():
                    outcomes = state.chance_outcomes()  # uniform over the tiles left
                    state.apply_action(outcomes[int(rnd() * len(outcomes))][0])
                else:
                    actions = state.legal_actions()
                    state.apply_action(actions[int(rnd() * len(actions))])
                    moves += 1
        return moves

    return run


def sample_positions(variant: Variant, rounds: int) -> list[MexicanTrain]:
    """Every position (game not over) along the first ``rounds`` random playouts,
    each a copy via ``to_dict``/``from_dict`` with its legal-move cache empty."""
    rng = random.Random()
    positions = []
    for seed in seeds_for(rounds):
        rng.seed(seed)
        game = MexicanTrain(variant.ruleset, variant.players, seed)
        while not game.over:
            legal = game.legal_moves()
            copy = MexicanTrain.from_dict(game.to_dict())
            if copy._generate() != legal:
                raise RuntimeError(f"{seed} v{game.version}: a copied position lists other moves")
            copy._legal = None
            positions.append(copy)
            game.push(rng.choice(legal))
    return positions


def cycled(
    calls: list[Callable[[], list[Move]]], in_a_row: int = 1
) -> Callable[[int], list[Callable[[], list[Move]]]]:
    """Work lists for :func:`generate_work`: each sampled call ``in_a_row`` times in a
    row (the position stays in the CPU caches, as in a playout or a search), the
    whole list ``n`` times over (with ``in_a_row=1``, every call finds its position
    cache-cold, as when a service moves from game to game)."""
    row = [call for call in calls for _ in range(in_a_row)]

    def make(n: int) -> list[Callable[[], list[Move]]]:
        return row * n

    return make


def generate_work(gens: Sequence[Callable[[], list[Move]]]) -> int:
    """Uncached generation: ``_generate()`` is what ``legal_moves()`` runs on a miss."""
    for gen in gens:
        gen()
    return len(gens)


# ---------------------------------------------------------------- timing


@dataclass(frozen=True)
class Timing:
    units: int  # rounds, deals or calls per repeat
    count: int  # what the workload returned (moves for playouts)
    best: float  # seconds, fastest of the repeats
    runs: tuple[float, ...]

    @property
    def per_unit(self) -> float:
        return self.best / self.units

    @property
    def rate(self) -> float:
        return self.units / self.best

    @property
    def spread(self) -> float:
        """Slowest repeat over the fastest, minus one: how noisy the machine was."""
        return max(self.runs) / self.best - 1


Timer = Callable[[], float]


#: What one workload takes: seeds, or legal-move calls.
W = TypeVar("W")


def clock(fn: Callable[[Sequence[W]], int], work: Sequence[W], timer: Timer) -> tuple[float, int]:
    gc.collect()
    start = timer()
    count = fn(work)
    return timer() - start, count


def calibrate(
    fn: Callable[[Sequence[W]], int],
    make: Callable[[int], Sequence[W]],
    budget: float,
    timer: Timer,
) -> int:
    """How many units make one repeat last about ``budget`` seconds (also warms up)."""
    n = 1
    while True:
        elapsed, _ = clock(fn, make(n), timer)
        if elapsed >= min(0.05, budget / 4):
            return max(1, math.ceil(n * budget / elapsed))
        n *= 2


@dataclass
class Job(Generic[W]):
    fn: Callable[[Sequence[W]], int]
    work: Sequence[W]
    units: int
    runs: list[float]
    count: int = 0


class Suite:
    """Measurements whose repeats are interleaved: repeat ``r`` of every job runs
    before repeat ``r + 1`` of any, so a baseline and the rates compared with it
    see the same machine load, and each keeps its fastest repeat."""

    def __init__(self, budget: float, timer: Timer) -> None:
        self.budget = budget
        self.timer = timer
        # Jobs over seeds and jobs over calls side by side: each job's own
        # clock call pairs its fn with its work, whatever their element type.
        self.jobs: dict[str, Job[Any]] = {}

    def add(
        self,
        name: str,
        fn: Callable[[Sequence[W]], int],
        make: Callable[[int], Sequence[W]],
        units: int | None = None,
    ) -> int:
        """Plan ``name``: ``units`` of work per repeat, else about ``budget`` seconds' worth."""
        if units is None:
            units = calibrate(fn, make, self.budget, self.timer)
        self.jobs[name] = Job(fn, make(units), units, [])
        return units

    def run(self) -> dict[str, Timing]:
        # The jobs' own inputs (seeds, sampled positions) stay alive throughout:
        # frozen out of the collector, so a full collection during one job
        # walks that job's garbage, not every other job's inputs as well.
        gc.collect()
        gc.freeze()
        try:
            for _ in range(REPEATS):
                for job in self.jobs.values():
                    elapsed, job.count = clock(job.fn, job.work, self.timer)
                    job.runs.append(elapsed)
        finally:
            gc.unfreeze()
        return {
            name: Timing(job.units, job.count, min(job.runs), tuple(job.runs))
            for name, job in self.jobs.items()
        }


# ---------------------------------------------------------------- report


def us(seconds: float) -> str:
    """A duration in ns, us or ms."""
    if seconds < 1e-6:
        return f"{seconds * 1e9:.0f} ns"
    if seconds < 1e-3:
        return f"{seconds * 1e6:,.1f} us"
    return f"{seconds * 1e3:,.2f} ms"


def describe_host() -> str:
    rev = "unknown revision"
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "engine"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        rev = f"git {head}" + (" + uncommitted engine/ changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        pass
    cpus = os.cpu_count()
    return (
        f"{platform.python_implementation()} {platform.python_version()} on "
        f"{platform.system()} {platform.machine()} ({cpus} CPUs visible, 1 used); engine at {rev}, "
        f"running {engine.native.DESCRIPTION} (RAILYARD_ENGINE=pure for the other build; "
        "bench/builds.py compares them side by side)"
    )


def run_benchmark(seconds: float, rounds: int | None, wall: bool) -> dict[str, Any]:
    budget = seconds / REPEATS
    sized = f"{rounds} rounds" if rounds else f"~{budget:.2g} s"
    print("Railyard engine benchmark")
    print(describe_host())
    print(
        f"single process; each figure is the best of {REPEATS} repeats of the same work "
        f"({sized} each), repeats interleaved across all measurements; timed in "
        + ("wall-clock time" if wall else "this process's CPU time (time.process_time)")
    )
    print()

    # Plan (calibrate and warm up) every measurement, then run them all.
    suite = Suite(budget, time.perf_counter if wall else time.process_time)
    suite.add("shuffle", shuffle_work, seeds_for)
    samples: dict[str, list[MexicanTrain]] = {}
    for v in VARIANTS:
        suite.add(f"deal {v.key}", deal_work(v), seeds_for, rounds)
        # apply replays push's rounds (same seeds, same games), so the counts match.
        units = suite.add(f"push {v.key}", playout_work(v, False), seeds_for, rounds)
        suite.add(f"apply {v.key}", playout_work(v, True), seeds_for, units)
        positions = samples[v.key] = sample_positions(v, SAMPLE_ROUNDS)
        gens = [pos._generate for pos in positions]
        suite.add(f"generate {v.key}", generate_work, cycled(gens, HOT_CALLS))
        suite.add(f"cold {v.key}", generate_work, cycled(gens))
        for pos in positions:
            pos.legal_moves()  # fill the cache
        cached_calls = [pos.legal_moves for pos in positions]
        suite.add(f"cached {v.key}", generate_work, cycled(cached_calls, HOT_CALLS))
    for lv in LINE_VARIANTS:
        suite.add(f"line {lv.key}", line_playout_work(lv), seeds_for, rounds)
        peer = openspiel_playout_work(lv.peer) if lv.peer else None
        if peer is not None:
            suite.add(f"openspiel {lv.key}", peer, seeds_for, rounds)
    t = suite.run()

    summary: dict[str, Any] = {
        "seconds": seconds,
        "rounds": rounds,
        "repeats": REPEATS,
        "clock": "wall" if wall else "process_time",
        "engine": "compiled" if engine.native.COMPILED else "pure",
    }
    shuf = t["shuffle"]
    base = t[f"deal {VARIANTS[0].key}"].per_unit
    print("baseline (the unit: one round's shuffle and deal)")
    print(
        f"  shuffle of 90 tiles (engine.shuffle)     {us(shuf.per_unit):>10}/call   "
        f"= {shuf.per_unit / base:.2f} of a {VARIANTS[0].title} deal"
    )
    for v in VARIANTS:
        d = t[f"deal {v.key}"]
        print(
            f"  deal {v.title:<24}            {us(d.per_unit):>10}/round  "
            f"= {d.per_unit / shuf.per_unit:.2f} raw shuffles   [MexicanTrain(...), fresh seed]"
        )
    summary["baseline"] = {
        "shuffle90_us": shuf.per_unit * 1e6,
        "deal_us": {v.key: t[f"deal {v.key}"].per_unit * 1e6 for v in VARIANTS},
    }
    print()

    print(
        "random playouts: one round per fresh seed, uniform random legal move "
        "(noise: slowest repeat over fastest)"
    )
    print(
        f"  {'variant':<22} {'mode':<6} {'rounds/s':>9} {'moves/s':>10} {'moves/rd':>9} "
        f"{'per round':>11} {'per move':>9} {'round=deals':>12} {'move=deals':>11} {'noise':>6}"
    )
    playouts: dict[str, dict[str, Any]] = {}
    for v in VARIANTS:
        deal = t[f"deal {v.key}"].per_unit
        playouts[v.key] = {}
        for mode in ("push", "apply"):
            run = t[f"{mode} {v.key}"]
            mean_moves = run.count / run.units
            per_move = run.best / run.count
            print(
                f"  {v.title:<22} {mode:<6} {run.rate:>9,.0f} {run.count / run.best:>10,.0f} "
                f"{mean_moves:>9.1f} {us(run.per_unit):>11} {us(per_move):>9} "
                f"{run.per_unit / deal:>12.1f} {per_move / deal:>11.3f} {run.spread:>6.1%}"
            )
            playouts[v.key][mode] = {
                "rounds": run.units,
                "rounds_per_s": run.rate,
                "moves_per_s": run.count / run.best,
                "moves_per_round": mean_moves,
                "round_us": run.per_unit * 1e6,
                "move_us": per_move * 1e6,
                "round_in_deals": run.per_unit / deal,
                "move_in_deals": per_move / deal,
            }
    for v in VARIANTS:
        push, apply = t[f"push {v.key}"], t[f"apply {v.key}"]
        if push.count != apply.count:
            print(f"  WARNING: {v.title}: push played {push.count} moves, apply {apply.count}")
        share = t[f"deal {v.key}"].per_unit / push.per_unit
        print(
            f"  {v.title}: building events (apply) costs {apply.best / push.best - 1:+.1%} "
            f"per round; the deal is {share:.1%} of a push round"
        )
    summary["playouts"] = playouts
    print()

    print(
        f"listing legal moves: uncached generation (game._generate(), what legal_moves() "
        f"runs after a move) on every position of {SAMPLE_ROUNDS} random playouts"
    )
    print(
        f"  hot: each position {HOT_CALLS}x in a row, as in a playout; cold: one call per "
        "position in turn, cache-cold, as across many games"
    )
    print(
        f"  {'variant':<22} {'positions':>9} {'moves listed':>12} {'hot call':>9} "
        f"{'= deals':>8} {'of a push move':>15} {'cold call':>10} {'cached call':>12}"
    )
    legal: dict[str, Any] = {}
    for v in VARIANTS:
        positions = samples[v.key]
        listed = sum(len(pos.legal_moves()) for pos in positions) / len(positions)
        gen, cold, cached = (t[f"{name} {v.key}"] for name in ("generate", "cold", "cached"))
        call = gen.best / gen.count
        cold_call = cold.best / cold.count
        cached_call = cached.best / cached.count
        push = t[f"push {v.key}"]
        per_move = push.best / push.count
        deal = t[f"deal {v.key}"].per_unit
        print(
            f"  {v.title:<22} {len(positions):>9,} {listed:>12.2f} {us(call):>9} "
            f"{'1/' + format(deal / call, '.0f'):>8} {call / per_move:>15.1%} "
            f"{us(cold_call):>10} {us(cached_call):>12}"
        )
        legal[v.key] = {
            "positions": len(positions),
            "mean_moves_listed": listed,
            "call_us": call * 1e6,
            "call_in_deals": call / deal,
            "share_of_push_move": call / per_move,
            "cold_call_us": cold_call * 1e6,
            "cached_call_us": cached_call * 1e6,
        }
    summary["legal_moves"] = legal
    print()

    print(
        "classic games: random playouts of one hand per fresh seed (deal included), "
        "next to OpenSpiel's game of the same hand in the same run"
    )
    print(
        f"  {'variant':<22} {'hands/s':>9} {'moves/s':>10} {'moves/hand':>10} {'per hand':>10} "
        f"{'OpenSpiel hands/s':>18} {'ours/OpenSpiel':>15} {'noise':>6}"
    )
    classic: dict[str, Any] = {}
    ratio_of_target: float | None = None
    for lv in LINE_VARIANTS:
        run = t[f"line {lv.key}"]
        peer_run = t.get(f"openspiel {lv.key}")
        ratio = run.rate / peer_run.rate if peer_run is not None else None
        if lv.peer == "python_block_dominoes":
            ratio_of_target = ratio
        peer_text = f"{peer_run.rate:,.0f}" if peer_run is not None else "-"
        ratio_text = f"{ratio:.1f}x" if ratio is not None else "-"
        print(
            f"  {lv.title:<22} {run.rate:>9,.0f} {run.count / run.best:>10,.0f} "
            f"{run.count / run.units:>10.1f} {us(run.per_unit):>10} {peer_text:>18} "
            f"{ratio_text:>15} {run.spread:>6.1%}"
        )
        classic[lv.key] = {
            "hands_per_s": run.rate,
            "moves_per_s": run.count / run.best,
            "openspiel_hands_per_s": None if peer_run is None else peer_run.rate,
            "ratio": ratio,
        }
    summary["classic"] = classic
    if ratio_of_target is None:
        print("  (OpenSpiel is not installed: `make` installs it with the development tools)")
    else:
        verdict = "PASS" if ratio_of_target >= TARGET_OPENSPIEL_RATIO else "FAIL"
        print(
            f"target: 2p Block random playouts >= {TARGET_OPENSPIEL_RATIO:g}x OpenSpiel's "
            f"python_block_dominoes: {verdict} ({ratio_of_target:.1f}x)"
        )
    print()

    rate = t[f"push {VARIANTS[0].key}"].rate
    ok = rate >= TARGET_ROUNDS_PER_S
    print(
        f"target: >= {TARGET_ROUNDS_PER_S} rounds/s 4p double-12 standard (one core): "
        f"{'PASS' if ok else 'FAIL'} ({rate:,.0f} rounds/s with push, "
        f"{rate / TARGET_ROUNDS_PER_S:.0%} of target)"
    )
    summary["target"] = {"rounds_per_s": TARGET_ROUNDS_PER_S, "measured": rate, "pass": ok}
    return summary


def where(file: str) -> str:
    if file == "~":
        return "(built-in)"
    path = Path(file).resolve()
    if path.is_relative_to(ROOT):
        return str(path.relative_to(ROOT))
    return f"{path.name} (stdlib)"


def run_profile(seconds: float, rounds: int | None, top: int = 15) -> dict[str, Any]:
    """cProfile over the 4-player push playout: the top functions by own time."""
    variant = VARIANTS[0]
    fn = playout_work(variant, use_apply=False)
    units = rounds or calibrate(fn, seeds_for, seconds / REPEATS, time.process_time)
    work = seeds_for(units)
    profiler = cProfile.Profile()
    profiler.enable()
    moves = fn(work)
    profiler.disable()
    stats = pstats.Stats(profiler)
    table: dict[tuple[str, int, str], tuple[int, int, float, float, Any]]
    table = stats.stats  # type: ignore[attr-defined]
    total = sum(row[2] for row in table.values())
    print(f"cProfile: {units} random playouts, {variant.title}, push ({moves:,} moves)")
    print(
        f"profiled own time {total:.2f} s; cProfile adds a fixed cost per call, so small "
        "functions look dearer than they are: read the shares, not the times"
    )
    print()
    print(f"  {'tottime':>8} {'share':>6} {'ncalls':>10} {'us/call':>8} {'cumtime':>8}  function")
    ranked = sorted(table.items(), key=lambda item: item[1][2], reverse=True)
    rows = []
    for (file, line, func), (_, ncalls, tt, ct, _) in ranked[:top]:
        name = func if file == "~" else f"{func}  {where(file)}:{line}"
        print(
            f"  {tt:>8.3f} {tt / total:>6.1%} {ncalls:>10,} {tt / ncalls * 1e6:>8.2f} {ct:>8.3f}  "
            f"{name}"
        )
        rows.append({"function": name, "tottime": tt, "share": tt / total, "ncalls": ncalls})
    by_file: dict[str, float] = {}
    for (file, _, _), row in table.items():
        key = where(file)
        by_file[key] = by_file.get(key, 0.0) + row[2]
    print()
    print("  own time by file:")
    for key, tt in sorted(by_file.items(), key=lambda item: item[1], reverse=True)[:8]:
        print(f"  {tt:>8.3f} {tt / total:>6.1%}  {key}")
    return {"profile": {"rounds": units, "moves": moves, "top": rows, "by_file": by_file}}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--seconds",
        type=float,
        default=3.0,
        help="seconds per measurement, split over its 3 repeats (default 3)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="rounds (and deals) per repeat instead of sizing them to --seconds",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="instead of timing, cProfile the 4-player push playout (--rounds rounds, else "
        "about --seconds/3 worth) and print the top 15 functions by tottime",
    )
    parser.add_argument(
        "--wall",
        action="store_true",
        help="time in wall-clock seconds, not this process's CPU time (the default, which "
        "leaves out time the process waited for a core on a busy machine)",
    )
    parser.add_argument("--json", action="store_true", help="also print a JSON summary line")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or (args.rounds is not None and args.rounds < 1):
        parser.error("--seconds and --rounds must be positive")
    if args.profile:
        summary = run_profile(args.seconds, args.rounds)
    else:
        summary = run_benchmark(args.seconds, args.rounds, args.wall)
    if args.json:
        print(json.dumps(summary, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
