"""``serve --workers N`` against one worker: server CPU per move, side by side.

    .venv/bin/python bench/workers.py [--workers 2] [--pairs 5] [--seconds 10] [--clients 50]

Each pair measures, in turn (the order reversed every pair), a fresh
``railyard serve --workers 1`` and a fresh ``railyard serve --workers N``
with Redis over HTTP, exactly as ``bench/service.py --transport http``
measures the service (wrk replaying scripted one-round 4-player games, one
keep-alive connection per client; the kernel spreads the connections over
the workers, ``SO_REUSEPORT``). The figure is the CPU of the whole process
tree (supervisor, workers, their bot processes) over the moves answered.

What it tells: whether N processes over one store pay for sharing it (issue
15: total CPU per move within 10% of one worker). On a machine with more
CPUs than workers, the service's processes are pinned to the first N CPUs in
both runs, Redis and wrk to the rest (``--no-pin`` to leave them); with
fewer, nothing is pinned: N workers pinned to fewer cores would measure
processes taking turns on a core (each switch losing the other's caches),
not the store they share.

The scripted games are sized to the rate (bench/provision.py): each run has
games for 1.5x the fastest rate that worker count has shown so far, at least
``--capacity`` moves/s. A run whose clients run out of games anyway (it ran
dry: part of its window was a lighter load) says so on its line, its figure
is not valid and left out, and it is measured again with twice the games
(``--retries`` times at most); a pair without a valid figure on both sides
gives no ratio, and a verdict without any pair is NOT VALID, not FAIL.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Final

_HERE: Final = Path(__file__).resolve().parent
# Run as a script, bench/ comes first on sys.path, and bench/service.py would
# shadow the ``service`` package: put the repository root there instead.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from bench import service as ours  # noqa: E402
from bench.builds import ratio_line  # noqa: E402
from bench.provision import Provision, dry_note  # noqa: E402

#: Issue 15: N workers' CPU per move over one worker's, at most.
TARGET: Final = 1.10


def pinning(workers: int, enabled: bool) -> ours.Pinning:
    """The service on the first ``workers`` CPUs, Redis and wrk on the rest;
    no pinning where the machine has no CPU left over (see the docstring)."""
    cpus = sorted(os.sched_getaffinity(0))
    taskset = shutil.which("taskset")
    if not enabled or len(cpus) <= workers or taskset is None:
        why = "" if not enabled else f" (the service's {workers} workers need {workers + 1} CPUs)"
        return ours.Pinning([], [], None, f"no CPU pinning{why}")
    mine, others = cpus[:workers], cpus[workers:]
    server, other = ",".join(map(str, mine)), ",".join(map(str, others))
    return ours.Pinning(
        [taskset, "-c", server],
        [taskset, "-c", other],
        set(others),
        f"the service pinned to CPUs {server}; redis-server and wrk to CPUs {other}",
    )


def spread(values: list[float]) -> str:
    if not values:
        return "no valid run"
    return f"median {statistics.median(values):.3f} (range {min(values):.3f}-{max(values):.3f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="workers against one (2)")
    parser.add_argument("--pairs", type=int, default=5, help="interleaved pairs (5)")
    parser.add_argument("--seconds", type=int, default=10, help="per measurement (whole: wrk's)")
    parser.add_argument("--clients", type=int, default=50, help="concurrent clients (50)")
    parser.add_argument(
        "--capacity",
        type=float,
        default=4000,
        help="moves/s the scripted games last for at least; then 1.5x the rate measured (4000)",
    )
    parser.add_argument(
        "--retries", type=int, default=2, help="measurements again after a run ran dry (2)"
    )
    parser.add_argument("--no-pin", action="store_true", help="no taskset CPU pinning")
    args = parser.parse_args(argv)
    if args.workers < 2 or args.pairs < 1 or args.seconds <= 0 or args.clients < 1:
        parser.error("--workers must be at least 2; --pairs, --seconds, --clients positive")
    if args.capacity <= 0 or args.retries < 0:
        parser.error("--capacity must be positive, --retries not negative")
    opts = ours.Options(
        args.clients, args.seconds, 1, 4, "standard", 1, args.capacity, 2, wait_quiet=0
    )
    provision = Provision(args.capacity)
    pin = pinning(args.workers, not args.no_pin)
    procs = ours.Processes()
    work = Path(tempfile.mkdtemp(prefix="railyard-workers-"))
    counts = (1, args.workers)
    #: Server CPU ms a move, by worker count, pair by pair (NaN: no valid run).
    per_move: dict[int, list[float]] = {n: [] for n in counts}
    errors = 0
    dry = 0
    print(
        f"server CPU per move: railyard serve --workers {args.workers} against --workers 1 "
        f"(HTTP, Redis); {args.clients} concurrent games, {args.pairs} interleaved pairs, "
        f"{args.seconds:g} s each; {pin.text}; {os.cpu_count()} CPUs; scripted games for "
        f"1.5x the rate measured, at least {args.capacity:,.0f} moves/s"
    )
    try:
        rds = ours.RedisServer(procs, pin)
        for pair in range(args.pairs):
            order = counts if pair % 2 == 0 else counts[::-1]
            for n in order:
                label = f"{n} worker{'s' if n > 1 else ' '}"
                side = f"{n} workers"
                ms = math.nan
                for attempt in range(args.retries + 1):
                    capacity = provision.capacity(side)
                    count = ours.games_needed(dataclasses.replace(opts, capacity=capacity))
                    tag = f"pair {pair + 1}/{args.pairs}, {label.strip()}"
                    seed = f"w{pair}.{n}"
                    if attempt:
                        tag += f", again ({attempt + 1})"
                        seed += f".{attempt}"
                    load, _ = ours.measure_service(
                        "http", tag, seed, procs, pin, rds, count, opts, work, workers=n
                    )
                    rds.client.flushall()  # the next run's games only
                    errors += load.errors
                    figure = 1000 * load.server_cpu / load.ok if load.ok else math.nan
                    line = (
                        f"  {label}: {figure:.3f} ms/move "
                        f"({load.ok} moves, {load.rate:,.0f}/s, p99 {load.p99_ms:.0f} ms, "
                        f"processes {100 * load.server_cpu / load.seconds:.0f}% of a core, "
                        f"errors {load.errors})"
                    )
                    if not load.exhausted:
                        provision.seen(side, load.rate)
                        ms = figure
                        print(line, flush=True)
                        break
                    dry += 1
                    again = provision.ran_dry(side, capacity)
                    print(
                        f"{line}: {load.exhausted} of {args.clients} clients ran out of games; "
                        + dry_note(capacity, again if attempt < args.retries else None),
                        flush=True,
                    )
                per_move[n].append(ms)
    finally:
        procs.stop_all()
        shutil.rmtree(work, ignore_errors=True)
    one, many = per_move[1], per_move[args.workers]
    print(f"server CPU ms/move, 1 worker: {spread([m for m in one if not math.isnan(m)])}")
    print(
        f"server CPU ms/move, {args.workers} workers: "
        + spread([m for m in many if not math.isnan(m)])
    )
    ratios = [m / o for m, o in zip(many, one, strict=True) if o > 0 and not math.isnan(m)]
    skipped = len(one) - len(ratios)
    if ratios:
        print(ratio_line(f"{args.workers} workers / 1 worker", ratios))
    else:
        print(f"{args.workers} workers / 1 worker: no valid pair")
    if dry:
        print(
            f"ran dry: {dry} run{'s' if dry > 1 else ''} (figures not valid, left out); "
            f"{skipped} pair{'s' if skipped != 1 else ''} without a valid figure on both sides"
        )
    head = f"target: {args.workers} workers <= {TARGET:.2f}x one worker: "
    if not ratios:
        print(head + "NOT VALID (every pair ran dry: raise --capacity)")
        return 1
    met = statistics.median(ratios) <= TARGET and errors == 0
    print(head + ("PASS" if met else "FAIL"))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
