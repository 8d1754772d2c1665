"""Our service against a boardgame.io server: server CPU per move, side by side.

    .venv/bin/python bench/peers/service.py [--pairs 5] [--seconds 10] [--clients 50]
                                            [--capacity 4000] [--retries 2]

Each pair measures, one after the other, three fresh server processes under
the same number of concurrent games (``--clients``, one move in flight each):

* ours: ``railyard serve`` with Redis over HTTP, exactly as
  ``bench/service.py --transport http`` measures it (wrk replaying scripted
  one-round 4-player games, one keep-alive connection per client);
* boardgame.io 0.50 (``bench/peers/boardgame-io/``, pinned in its lockfile),
  its server with in-memory storage and socket.io serving the dominoes of
  ``game.mjs`` (a line of play, hidden hands, ``playerView``), played by
  ``clients.mjs`` in a Node process of its own, in two variants: one socket
  per seat (a boardgame.io ``Client`` per seat, as real players) and one
  socket per match (one connection moves for every seat).

The figure is the server process's CPU time (utime + stime from /proc) per
move it applied: for ours over wrk's run, for boardgame.io over a window of
``--seconds`` after ``--warmup`` (its server counts the moves it applied and
answers them at ``GET /bench/moves``). Servers are pinned to one CPU, Redis
and the load generators to the other (``--no-pin`` to leave it). The verdict
takes the median over the pairs of ours / theirs (issue 15: <= 0.75x the
per-seat server, <= 1.0x the per-match server); what differs between the
sides is printed with it.

Both sides replay games made before the clock starts, and a side that runs
out of them measures a lighter load than asked for: the games are sized to
the rate (bench/provision.py), each measurement's for 1.5x the fastest rate
that side has shown so far, at least ``--capacity`` moves/s. A measurement
whose games ran out anyway (it ran dry: one of wrk's clients stopped, or a
boardgame.io client slot was left without a match) says so on its line, its
figure is not valid and left out, and it is measured again with twice the
games (``--retries`` times at most). A pair without a valid figure on both
sides gives no ratio; a verdict without any pair is NOT VALID, not FAIL.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Final

# Run as a script, this file's own directory comes first on sys.path, and
# this module, ``service.py``, would shadow the ``service`` package: put the
# repository root there instead (as bench/service.py does).
_HERE: Final = Path(__file__).resolve().parent
ROOT: Final = _HERE.parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(ROOT))

from bench import service as ours  # noqa: E402
from bench.builds import ratio_line  # noqa: E402
from bench.provision import Provision, dry_note  # noqa: E402

HARNESS: Final = _HERE / "boardgame-io"
#: Issue 15: our server CPU per move over theirs, at most.
TARGET_PER_SEAT: Final = 0.75
TARGET_PER_MATCH: Final = 1.0
#: Moves in a match of game.mjs's dominoes, about; to provision matches.
MOVES_PER_MATCH: Final = 95
VARIANTS: Final = {"seat": "one socket per seat", "match": "one socket per match"}
DIFFERS: Final = (
    "game: ours Mexican Train (double-12, trains, markers, doubles, a SHA-256 deal, "
    "events and the mover's view built per move); theirs a line of dominoes with two "
    "ends (game.mjs): far less rule work per move",
    "storage: ours Redis (a load and a versioned commit per move; redis-server's own CPU "
    "is not counted); theirs the Node process's memory (InMemory, its default)",
    "transport: ours HTTP/1.1 + JSON, one keep-alive connection per client for all its "
    "games, a bearer token per request, the mover answered; theirs socket.io over "
    "websocket, sockets opened per match (4 or 1, each with a sync, inside the window), "
    "every socket of the match sent the new state through playerView",
    "runtime: ours CPython 3.11, theirs Node (V8's JIT)",
)


@dataclass(frozen=True)
class Generator:
    """What clients.mjs says of its run (its JSON summary line)."""

    moves: int
    matches_done: int
    errors: int
    first_error: str
    sockets: int
    cpu_s: float
    #: Client slots left without a match to play: the matches ran out.
    idle_slots: int

    @classmethod
    def from_line(cls, line: str) -> Generator:
        summary = json.loads(line)
        return cls(
            int(summary["moves"]),
            int(summary["matches_done"]),
            int(summary["errors"]),
            str(summary["first_error"]),
            int(summary["sockets"]),
            float(summary["cpu_s"]),
            int(summary.get("idle_slots", 0)),
        )


@dataclass(frozen=True)
class Theirs:
    """One measurement of a boardgame.io server."""

    variant: str
    moves: int
    server_cpu: float
    seconds: float
    generator: Generator
    #: Actions its server refused (its "ERROR:" lines on stderr).
    refused: int
    #: The load generator ran out of matches before the window closed (a
    #: slot of it was left without one): the run ran dry.
    ran_out: bool
    #: The moves/s its matches were provisioned for.
    capacity: float

    @property
    def ms_per_move(self) -> float:
        return 1000 * self.server_cpu / self.moves if self.moves else math.nan

    @property
    def errors(self) -> int:
        return self.refused + self.generator.errors


def installed_version() -> str | None:
    """The boardgame.io in the harness's node_modules, if any."""
    try:
        meta = json.loads((HARNESS / "node_modules/boardgame.io/package.json").read_text())
    except OSError:
        return None
    return str(meta["version"])


def pinned_version() -> str:
    return str(json.loads((HARNESS / "package.json").read_text())["dependencies"]["boardgame.io"])


def moves_applied(url: str) -> int:
    with urllib.request.urlopen(f"{url}/bench/moves", timeout=30) as answer:
        return int(json.load(answer)["moves"])


def measure_theirs(
    variant: str,
    node: str,
    pair: int,
    opts: ours.Options,
    warmup: float,
    procs: ours.Processes,
    pin: ours.Pinning,
    work: Path,
    capacity: float,
) -> Theirs:
    """A fresh boardgame.io server under ``opts.clients`` concurrent matches,
    with matches for ``capacity`` moves/s over the warm-up and the window."""
    if opts.wait_quiet > 0:
        ours.wait_for_quiet(opts.wait_quiet)
    port = ours.free_port()
    url = f"http://127.0.0.1:{port}"
    stderr_path = work / f"bgio-{variant}-{pair}.stderr"
    # NODE_ENV=production, as deployed: boardgame.io logs nothing but errors.
    server_argv = ["env", "NODE_ENV=production", node, str(HARNESS / "server.mjs")]
    with open(stderr_path, "wb") as stderr:
        server = procs.start(
            [*pin.server, *server_argv, "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=stderr.fileno(),
        )
    ours.wait_until(lambda: moves_applied(url) >= 0, "the boardgame.io server")
    matches = opts.clients + math.ceil(capacity * (warmup + opts.seconds) / MOVES_PER_MATCH)
    generator_argv = [node, str(HARNESS / "clients.mjs"), "--server", url]
    generator_argv += ["--variant", variant, "--matches", str(matches)]
    generator_argv += ["--concurrency", str(opts.clients), "--players", str(opts.players)]
    generator = procs.start(
        [*pin.other, *generator_argv, "--seed", str(pair)], stdout=subprocess.PIPE
    )
    assert generator.stdout is not None
    ready = generator.stdout.readline()
    if not ready.startswith(b'{"event":"ready"'):
        raise SystemExit(f"peers: clients.mjs did not start (exit {generator.wait()}): {ready!r}")
    time.sleep(warmup)
    moves0, cpu0, start = moves_applied(url), ours.cpu_seconds(server.pid), time.monotonic()
    time.sleep(opts.seconds)
    cpu1, moves1, end = ours.cpu_seconds(server.pid), moves_applied(url), time.monotonic()
    exited = generator.poll() is not None
    summary = stop_generator(generator, procs)
    procs.stop(server)
    refused = sum(line.startswith("ERROR:") for line in stderr_path.read_text().splitlines())
    ran_out = exited or summary.idle_slots > 0
    return Theirs(
        variant, moves1 - moves0, cpu1 - cpu0, end - start, summary, refused, ran_out, capacity
    )


def stop_generator(generator: subprocess.Popen[bytes], procs: ours.Processes) -> Generator:
    """Its summary, printed at SIGTERM (or when it ran out of matches)."""
    if generator.poll() is None:
        generator.send_signal(signal.SIGTERM)
    try:
        out = generator.communicate(timeout=30)[0].decode()
    finally:
        procs.stop(generator)
    for line in reversed(out.splitlines()):
        if line.startswith('{"event":"done"'):
            return Generator.from_line(line)
    raise SystemExit(f"peers: clients.mjs gave no summary (exit {generator.returncode})")


def spread(values: list[float]) -> str:
    if not values:
        return "no valid measurement"
    return f"median {statistics.median(values):.2f} (range {min(values):.2f}-{max(values):.2f})"


def shown(ratio: float) -> str:
    return "not valid (ran dry)" if math.isnan(ratio) else f"{ratio:.2f}x"


def describe_theirs(theirs: Theirs) -> str:
    gen = theirs.generator
    line = (
        f"{VARIANTS[theirs.variant]} {theirs.ms_per_move:.2f} ms/move ({theirs.moves} moves, "
        f"{theirs.moves / theirs.seconds:,.0f}/s, server "
        f"{100 * theirs.server_cpu / theirs.seconds:.0f}% of a core; its load generator's "
        f"whole run: {gen.cpu_s:.1f} CPU-s, {gen.sockets} sockets, {gen.matches_done} matches)"
    )
    if theirs.errors:
        line += f", errors {theirs.errors} (first: {gen.first_error or 'on the server stderr'})"
    return line


def valid(values: list[float]) -> list[float]:
    return [v for v in values if not math.isnan(v)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=10, help="per measurement (whole: wrk's)")
    parser.add_argument("--warmup", type=float, default=2.0, help="boardgame.io, before its window")
    parser.add_argument("--clients", type=int, default=50, help="concurrent games a side (50)")
    parser.add_argument(
        "--capacity",
        type=float,
        default=4000,
        help="moves/s the prepared games last for at least; then 1.5x the rate measured (4000)",
    )
    parser.add_argument(
        "--retries", type=int, default=2, help="measurements again after a run ran dry (2)"
    )
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=30,
        help="wait up to S s before each measurement for other processes to go quiet (30)",
    )
    parser.add_argument("--no-pin", action="store_true", help="no taskset CPU pinning")
    args = parser.parse_args(argv)
    if min(args.pairs, args.seconds, args.clients) < 1 or args.warmup < 0:
        parser.error("--pairs, --seconds and --clients must be at least 1")
    if args.capacity <= 0 or args.retries < 0:
        parser.error("--capacity must be positive, --retries not negative")
    node = shutil.which("node")
    if node is None:
        parser.error("node is not on PATH (./scripts/install-node)")
    if shutil.which(ours.WRK) is None:
        parser.error("wrk is not installed: ./scripts/install-wrk (make bench-peers does)")
    if installed_version() != pinned_version():
        parser.error(
            f"bench/peers/boardgame-io/node_modules holds boardgame.io {installed_version()}, "
            f"not {pinned_version()}: run `make bench-peers` (npm ci there)"
        )

    opts = ours.Options(
        clients=args.clients,
        seconds=args.seconds,
        repeat=1,
        players=4,
        preset="standard",
        rounds=1,
        capacity=args.capacity,
        client_procs=1,
        wait_quiet=args.wait_quiet,
    )
    provision = Provision(args.capacity)
    pin = ours.pinning(not args.no_pin)
    procs = ours.Processes()
    work = Path(tempfile.mkdtemp(prefix="railyard-peers-"))
    node_version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout
    print(
        f"server CPU per move: ours (HTTP, Redis) against boardgame.io {pinned_version()} "
        f"(Node {node_version.strip()}, in memory); {args.clients} concurrent games a side, "
        f"{args.pairs} interleaved pairs, {args.seconds} s each; {pin.text}; games for 1.5x "
        f"the rate measured, at least {args.capacity:,.0f} moves/s",
        flush=True,
    )
    #: Server CPU ms a move, pair by pair (NaN: every run of it ran dry).
    ours_ms: list[float] = []
    theirs_ms: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    ratios: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    #: Errors: no verdict.
    errors = 0
    #: Measurements that ran dry (not valid, measured again).
    dry = 0
    try:
        rds = ours.RedisServer(procs, pin)
        for pair in range(args.pairs):
            tag = f"pair {pair + 1}/{args.pairs}"
            ms = math.nan
            line = ""
            for attempt in range(args.retries + 1):
                capacity = provision.capacity("ours")
                count = ours.games_needed(dataclasses.replace(opts, capacity=capacity))
                load, _ = ours.measure_service(
                    "http",
                    tag + (f", ours again ({attempt + 1})" if attempt else ""),
                    f"peers-{pair}" + (f".{attempt}" if attempt else ""),
                    procs,
                    pin,
                    rds,
                    count,
                    opts,
                    work,
                )
                figure = 1000 * load.server_cpu / load.ok if load.ok else math.nan
                errors += load.errors
                line = (
                    f"pair {pair + 1}: ours {figure:.2f} ms/move ({load.ok} moves, "
                    f"{load.rate:,.0f}/s, server {100 * load.server_cpu / load.seconds:.0f}% of a "
                    f"core, errors {load.errors})"
                )
                if not load.exhausted:
                    provision.seen("ours", load.rate)
                    ms = figure
                    break
                dry += 1
                again = provision.ran_dry("ours", capacity)
                line += (
                    f": {load.exhausted} of {args.clients} clients had no game left; "
                    + dry_note(capacity, again if attempt < args.retries else None)
                )
                print(line, flush=True)
            ours_ms.append(ms)
            lines = [line] if not math.isnan(ms) else []
            for variant in VARIANTS:
                side = f"theirs {variant}"
                theirs_figure = math.nan
                for attempt in range(args.retries + 1):
                    again_text = f" again ({attempt + 1})" if attempt else ""
                    print(f"[{tag}] boardgame.io, {VARIANTS[variant]}{again_text} ...", flush=True)
                    capacity = provision.capacity(side)
                    theirs = measure_theirs(
                        variant, node, pair, opts, args.warmup, procs, pin, work, capacity
                    )
                    errors += theirs.errors
                    if not theirs.ran_out:
                        provision.seen(side, theirs.moves / theirs.seconds)
                        theirs_figure = theirs.ms_per_move
                        lines.append(f"  theirs, {describe_theirs(theirs)}")
                        break
                    dry += 1
                    again = provision.ran_dry(side, capacity)
                    slots = theirs.generator.idle_slots
                    print(
                        f"  theirs, {describe_theirs(theirs)}: {slots} of {args.clients} client "
                        "slots had no match left; "
                        + dry_note(capacity, again if attempt < args.retries else None),
                        flush=True,
                    )
                theirs_ms[variant].append(theirs_figure)
                ratio = ms / theirs_figure if theirs_figure > 0 else math.nan
                ratios[variant].append(ratio)
            lines.append(
                "  ours / theirs: "
                + ", ".join(f"{VARIANTS[v]} {shown(ratios[v][-1])}" for v in VARIANTS)
            )
            print("\n".join(lines), flush=True)
    finally:
        procs.stop_all()
        shutil.rmtree(work, ignore_errors=True)

    print()
    print(f"server CPU ms/move, ours: {spread(valid(ours_ms))}")
    for variant, label in VARIANTS.items():
        print(f"server CPU ms/move, boardgame.io {label}: {spread(valid(theirs_ms[variant]))}")
    for variant, label in VARIANTS.items():
        if valid(ratios[variant]):
            print(ratio_line(f"ours / boardgame.io {label}", valid(ratios[variant])))
        else:
            print(f"ours / boardgame.io {label}: no valid pair")
    if dry:
        print(
            f"ran dry: {dry} measurement{'s' if dry > 1 else ''} (figures not valid, left out "
            "and measured again; see the pairs)"
        )
    print("what differs:")
    for line in DIFFERS:
        print(f"  {line}")
    verdicts = []
    for variant, target in (("seat", TARGET_PER_SEAT), ("match", TARGET_PER_MATCH)):
        head = f"target: ours <= {target:.2f}x boardgame.io {VARIANTS[variant]}: "
        measured = valid(ratios[variant])
        if not measured:
            verdicts.append(False)
            print(head + "NOT VALID (every pair ran dry: raise --capacity)")
            continue
        ok = errors == 0 and statistics.median(measured) <= target
        verdicts.append(ok)
        skipped = len(ratios[variant]) - len(measured)
        note = "" if errors == 0 else " (errors: see the pairs)"
        if skipped:
            note += f" ({skipped} pair{'s' if skipped > 1 else ''} left out: ran dry)"
        print(head + ours.yes(ok) + note)
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
