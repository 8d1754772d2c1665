"""The compiled engine (mypyc) against the pure-Python one, side by side.

    .venv/bin/python bench/builds.py [--pairs 5] [--games 300] [--work mt4p,block2p,service]

Each measurement runs in a child process whose ``RAILYARD_ENGINE`` picks the
build (``pure``, or ``compiled``, which fails when the tree holds no current
build: ``make engine``), timed in that process's CPU time after a warm-up.
A pair is one measurement of each build, the pairs interleaved, so both see
the same machine load; the verdict is the median ratio with its range.

The work:

* ``mt4p``: random playouts of one round of double-12 ``standard``, 4
  players unless ``--players`` says otherwise (``push``, as bots and search
  play; ``mt4p-apply``: with events built, as the service plays);
* ``block2p``: random playouts of a 2-player Block hand (bench/engine.py's
  OpenSpiel variant);
* ``service``: what the service asks of the engine for one move: a state
  loaded from its bytes, the legal moves, the move applied with its events,
  the state saved, the mover's view built (the transport's encoding of that
  view is the service's, and not counted here).

:func:`measure` is also what bench/peers/engine.py measures our side with.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

_HERE: Final = Path(__file__).resolve().parent
ROOT: Final = _HERE.parent
if __name__ == "__main__":
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
    sys.path.insert(0, str(ROOT))

BUILDS: Final = ("pure", "compiled")
WORKS: Final = ("mt4p", "block2p", "service")
#: Also measurable, not run by default: mt4p with events built (``apply``).
EXTRA_WORKS: Final = ("mt4p-apply",)


@dataclass(frozen=True)
class Reading:
    """One child's measurement: what it counted, in how much CPU, on which engine."""

    count: int
    cpu_s: float
    engine: str

    @property
    def rate(self) -> float:
        return self.count / self.cpu_s if self.cpu_s > 0 else 0.0


def _work(name: str, players: int) -> Callable[[Sequence[str]], int]:
    """The named work over a list of seeds; returns what it counts (moves)."""
    # Imported here: the child's RAILYARD_ENGINE decides what they load.
    from bench.engine import _OPENSPIEL_BLOCK, Variant, line_playout_work, playout_work
    from engine.games.mexican_train.rules import preset

    if name in ("mt4p", "mt4p-apply"):
        ruleset = preset("standard").with_options(rounds=1)
        variant = Variant("mt", "mt", ruleset, players)
        return playout_work(variant, use_apply=name == "mt4p-apply")
    if name == "block2p":
        from bench.engine import LineVariant

        return line_playout_work(LineVariant("block", "block", _OPENSPIEL_BLOCK, 2, None))
    if name == "service":
        return _service_work(players)
    raise SystemExit(f"builds: no work {name!r} (one of {', '.join(WORKS + EXTRA_WORKS)})")


def _service_work(players: int) -> Callable[[Sequence[str]], int]:
    import engine

    def run(seeds: Sequence[str]) -> int:
        moves = 0
        for seed in seeds:
            rng = random.Random(seed)
            saved = engine.new_game("standard", players=players, seed=seed).to_bytes()
            for _ in range(40):  # a round's first 40 moves, each as a request
                game = engine.load(saved)
                if game.over:
                    break
                legal = game.legal_moves()
                game.apply(legal[int(rng.random() * len(legal))])
                saved = game.to_bytes()
                engine.build_view(game, game.current_seat)
                moves += 1
        return moves

    return run


def child(work: str, games: int, seed: str, players: int, warmup_s: float = 0.0) -> Reading:
    """Run in this process (the build its import chose); warm up (5 seeds, and
    on until ``warmup_s`` CPU-seconds have gone), then time."""
    import engine.native

    run = _work(work, players)
    warm = 0
    start = time.process_time()
    while warm < 5 or time.process_time() - start < warmup_s:
        run([f"{seed}-warm-{warm + i}" for i in range(5)])
        warm += 5
    seeds = [f"{seed}-{i}" for i in range(games)]
    start = time.process_time()
    count = run(seeds)
    return Reading(count, time.process_time() - start, engine.native.DESCRIPTION)


def measure(
    build: str, work: str, games: int, seed: str, players: int = 4, warmup_s: float = 0.0
) -> Reading:
    """``work`` over ``games`` seeds in a child process running ``build``,
    after a warm-up of at least ``warmup_s`` CPU-seconds."""
    # The repository root first (for ``bench``), then whatever the caller set.
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "RAILYARD_ENGINE": build, "PYTHONPATH": path}
    command = [sys.executable, str(_HERE / "builds.py"), "--child", work]
    command += ["--games", str(games), "--seed", seed, "--players", str(players)]
    command += ["--warmup-seconds", str(warmup_s)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"builds: the {build} child failed: {done.stderr.strip()}")
    result = json.loads(done.stdout.splitlines()[-1])
    return Reading(int(result["count"]), float(result["cpu_s"]), str(result["engine"]))


def ratio_line(name: str, ratios: list[float]) -> str:
    median = statistics.median(ratios)
    return f"{name}: median {median:.2f}x (range {min(ratios):.2f}-{max(ratios):.2f}x)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--games", type=int, default=300, help="seeds per measurement")
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument(
        "--work", default=",".join(WORKS), help="comma-separated: " + ", ".join(WORKS)
    )
    parser.add_argument("--child", metavar="WORK", help=argparse.SUPPRESS)
    parser.add_argument("--seed", default="builds", help=argparse.SUPPRESS)
    parser.add_argument("--warmup-seconds", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        reading = child(args.child, args.games, args.seed, args.players, args.warmup_seconds)
        print(
            json.dumps({"count": reading.count, "cpu_s": reading.cpu_s, "engine": reading.engine})
        )
        return 0
    works = [w for w in args.work.split(",") if w]
    if args.pairs < 1 or args.games < 1 or not works:
        parser.error("--pairs and --games must be at least 1, --work must name some work")
    print(f"compiled (mypyc) against pure Python, {args.pairs} interleaved pairs, process CPU time")
    ratios: dict[str, list[float]] = {w: [] for w in works}
    for pair in range(args.pairs):
        for work in works:
            seed = f"builds-{pair}"
            pure = measure("pure", work, args.games, seed, args.players)
            compiled = measure("compiled", work, args.games, seed, args.players)
            ratios[work].append(compiled.rate / pure.rate)
            print(
                f"pair {pair + 1} {work}: pure {pure.rate:,.0f}/CPU-s, compiled "
                f"{compiled.rate:,.0f}/CPU-s ({compiled.count} moves each): "
                f"{ratios[work][-1]:.2f}x",
                flush=True,
            )
    for work in works:
        print(ratio_line(f"{work}: compiled / pure", ratios[work]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
