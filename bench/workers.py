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
"""

from __future__ import annotations

import argparse
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="workers against one (2)")
    parser.add_argument("--pairs", type=int, default=5, help="interleaved pairs (5)")
    parser.add_argument("--seconds", type=int, default=10, help="per measurement (whole: wrk's)")
    parser.add_argument("--clients", type=int, default=50, help="concurrent clients (50)")
    parser.add_argument("--no-pin", action="store_true", help="no taskset CPU pinning")
    args = parser.parse_args(argv)
    if args.workers < 2 or args.pairs < 1 or args.seconds <= 0 or args.clients < 1:
        parser.error("--workers must be at least 2; --pairs, --seconds, --clients positive")
    opts = ours.Options(args.clients, args.seconds, 1, 4, "standard", 1, 4000, 2, wait_quiet=0)
    pin = pinning(args.workers, not args.no_pin)
    procs = ours.Processes()
    work = Path(tempfile.mkdtemp(prefix="railyard-workers-"))
    counts = (1, args.workers)
    per_move: dict[int, list[float]] = {n: [] for n in counts}
    errors = 0
    print(
        f"server CPU per move: railyard serve --workers {args.workers} against --workers 1 "
        f"(HTTP, Redis); {args.clients} concurrent games, {args.pairs} interleaved pairs, "
        f"{args.seconds:g} s each; {pin.text}; {os.cpu_count()} CPUs"
    )
    try:
        rds = ours.RedisServer(procs, pin)
        count = ours.games_needed(opts)
        for pair in range(args.pairs):
            order = counts if pair % 2 == 0 else counts[::-1]
            for n in order:
                tag = f"pair {pair + 1}/{args.pairs}, {n} worker{'s' if n > 1 else ''}"
                load, _ = ours.measure_service(
                    "http", tag, f"w{pair}.{n}", procs, pin, rds, count, opts, work, workers=n
                )
                rds.client.flushall()  # the next run's games only
                errors += load.errors
                ms = 1000 * load.server_cpu / load.ok if load.ok else float("nan")
                per_move[n].append(ms)
                print(
                    f"  {n} worker{'s' if n > 1 else ' '}: {ms:.3f} ms/move "
                    f"({load.ok} moves, {load.rate:,.0f}/s, p99 {load.p99_ms:.0f} ms, "
                    f"processes {100 * load.server_cpu / load.seconds:.0f}% of a core, "
                    f"errors {load.errors})",
                    flush=True,
                )
    finally:
        procs.stop_all()
        shutil.rmtree(work, ignore_errors=True)
    one, many = per_move[1], per_move[args.workers]
    print(
        f"server CPU ms/move, 1 worker: median {statistics.median(one):.3f} "
        f"(range {min(one):.3f}-{max(one):.3f})"
    )
    print(
        f"server CPU ms/move, {args.workers} workers: median {statistics.median(many):.3f} "
        f"(range {min(many):.3f}-{max(many):.3f})"
    )
    ratios = [m / o for m, o in zip(many, one, strict=True)]
    print(ratio_line(f"{args.workers} workers / 1 worker", ratios))
    met = statistics.median(ratios) <= TARGET and errors == 0
    print(
        f"target: {args.workers} workers <= {TARGET:.2f}x one worker: {'PASS' if met else 'FAIL'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
