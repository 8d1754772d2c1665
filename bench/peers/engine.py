"""Our engine against the TypeScript Mexican Train engine, side by side.

    .venv/bin/python bench/peers/engine.py --peer-dir DIR [--pairs 5] [--games 300]
                                           [--warmup-seconds 2] [--peer-warmup 3000]
    .venv/bin/python bench/peers/engine.py --ours-only [--pairs 1] [--games 5]

The peer is JamesAtIntegratnIO/mexican-train (TypeScript on Node): the
fastest open Mexican Train engine we know of. It is not published on npm
(its package.json is private) and no other JS/TS Mexican Train or domino
rules engine installs from the registry (``double-eighteen``, named by the
npm package ``double-eighteen-react``, and ``domino-game-engine`` answer
404), so ``DIR`` is a checkout of its repository (``PEER_ENGINE_DIR``);
``bench/peers/ts-engine/playouts.mjs`` plays it.

Ours is measured in both builds, each in a child process (bench/builds.py):
the compiled engine (mypyc, when the tree holds a current build) and the
pure-Python one, the reference.

Same game on both sides: one round of double-12 with the 12-12 engine,
4 players (``--players``), 15 tiles a hand (both engines' table for 2-4
players), every move chosen uniformly among the legal ones, one legal-move
search a turn, and the rules' marker played (a player's marker comes off
when they play on their own train, MT-TR-4: the peer's engine leaves that
to its players, and a harness that never lowers it plays shorter rounds,
80 actions instead of 90). Each pair prints the mean moves a round of both
sides, so a reader sees that the rounds match. Both sides warm up before
their clock starts: at least ``--warmup-seconds`` of CPU (2), and the peer
at least ``--peer-warmup`` rounds (3,000: V8's optimising compiler needs
them; 20 read ~15% slower). A pair is one measurement of each of ours then
one of theirs, each in process CPU time over ``--games`` rounds after that
warm-up; the pairs are interleaved, so both sides see the same machine
load, and the verdict is the median ratio.

What counts as a move, and what differs (said in the output too):
- ours counts every move the engine applies (``game.version``): plays,
  draws, passes; theirs counts every action call: plays, draws, passes, and
  also laying the engine and the hunt for it (their round starts with the
  12-12 in someone's hand or the boneyard; ours sets it aside, MT-SETUP-2),
  about 2 a round, printed apart. Taking a marker down is part of a play on
  both sides, not a move of its own.
- ours uses ``push`` (no events, as bots and search play) and, printed
  apart, ``apply`` (events built, as the service plays); theirs writes a
  log line on every action, which is its only form of events.
- ours deals with API.md's SHA-256 shuffle (MT-FAIR-1); theirs with a
  seeded Math.random (mulberry32), a cheaper generator.
- theirs plays its own rules for doubles: with its ``foot`` of 1 (its
  default, and its table's) a double is a tile like any other, where ours
  owes a tile on an unsatisfied double (MT-DBL-1 to MT-DBL-3); ours also
  plays a few more moves a round.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

# Run as a script, this file's own directory comes first on sys.path, and
# this module, ``engine.py``, would shadow the ``engine`` package: put the
# repository root there instead (as bench/engine.py does).
_HERE: Final = Path(__file__).resolve().parent
ROOT: Final = _HERE.parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(ROOT))

from bench.builds import Reading, measure, ratio_line  # noqa: E402

HARNESS: Final = _HERE / "ts-engine" / "playouts.mjs"
#: The issue's targets for moves per CPU-second, ours over theirs (issue 15),
#: with ``push``: the compiled engine (mypyc), and the pure-Python one.
TARGETS: Final = {"compiled": 3.0, "pure": 1.7}


#: Mean moves a round that differ more than this between the sides say the
#: two harnesses play different games (a warning, printed).
ROUND_LENGTH_TOLERANCE: Final = 0.10


@dataclass(frozen=True)
class Side:
    """What playouts.mjs says of its run (its JSON line)."""

    moves: int
    cpu_s: float
    games: int
    #: Of the moves, the hunt for the engine and laying it (ours has none).
    hunt_moves: float
    markers_down: float
    warmup_games: int
    warmup_cpu_s: float
    node: str

    @property
    def rate(self) -> float:
        return self.moves / self.cpu_s if self.cpu_s > 0 else 0.0

    @property
    def per_round(self) -> float:
        return self.moves / self.games if self.games else 0.0


def measure_ours(
    build: str, players: int, games: int, pair: int, use_apply: bool, warmup_s: float
) -> Reading:
    """``games`` rounds of ``build`` on fresh seeds (new ones every pair, as
    theirs), in a child process (bench/builds.py), after ``warmup_s``
    CPU-seconds of warm-up."""
    work = "mt4p-apply" if use_apply else "mt4p"
    return measure(build, work, games, f"peers-{pair}", players, warmup_s)


def measure_theirs(
    node: str,
    peer_dir: Path,
    players: int,
    games: int,
    pair: int,
    warmup_s: float,
    warmup_games: int,
) -> Side:
    done = subprocess.run(
        [
            node,
            str(HARNESS),
            "--engine-dir",
            str(peer_dir),
            "--games",
            str(games),
            "--players",
            str(players),
            "--seed",
            str(pair + 1),
            "--warmup",
            str(warmup_games),
            "--warmup-seconds",
            str(warmup_s),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"peers: the Node harness failed (exit {done.returncode}): {done.stderr}")
    result = json.loads(done.stdout.splitlines()[-1])
    return Side(
        int(result["moves"]),
        float(result["cpu_s"]),
        int(result["games"]),
        float(result["hunt_moves_per_round"]),
        float(result["markers_down_per_round"]),
        int(result["warmup_games"]),
        float(result["warmup_cpu_s"]),
        str(result["node"]),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--games", type=int, default=300, help="rounds per side per pair")
    parser.add_argument("--players", type=int, default=4, choices=(2, 3, 4))
    parser.add_argument(
        "--warmup-seconds",
        type=float,
        default=2.0,
        help="CPU-seconds each side plays before its clock starts (2)",
    )
    parser.add_argument(
        "--peer-warmup",
        type=int,
        default=3000,
        help="rounds the peer plays at least before its clock starts, for V8's JIT (3000)",
    )
    parser.add_argument(
        "--peer-dir",
        type=Path,
        default=Path(os.environ["PEER_ENGINE_DIR"]) if os.environ.get("PEER_ENGINE_DIR") else None,
        help="a checkout of JamesAtIntegratnIO/mexican-train (default: $PEER_ENGINE_DIR)",
    )
    parser.add_argument("--ours-only", action="store_true", help="measure our side only")
    args = parser.parse_args(argv)
    if args.pairs < 1 or args.games < 1:
        parser.error("--pairs and --games must be at least 1")
    if args.warmup_seconds < 0 or args.peer_warmup < 0:
        parser.error("--warmup-seconds and --peer-warmup must not be negative")

    node = shutil.which("node")
    theirs_too = not args.ours_only
    if theirs_too:
        if args.peer_dir is None or not (args.peer_dir / "server" / "game.ts").is_file():
            parser.error(
                "--peer-dir (or PEER_ENGINE_DIR) must name a checkout of "
                "JamesAtIntegratnIO/mexican-train holding server/game.ts; it is not on npm"
                f" (got {args.peer_dir}); --ours-only measures our side alone"
            )
        if node is None:
            parser.error("node is not on PATH (./scripts/install-node)")
        if not (_HERE / "ts-engine" / "node_modules" / "esbuild").is_dir():
            parser.error("bench/peers/ts-engine/node_modules is missing: run `make bench-peers`")

    import engine.native

    # A build that is there but out of date is not measured (its child would
    # refuse to run it); with RAILYARD_ENGINE=pure here, the child finds out.
    usable = engine.native.COMPILED or os.environ.get("RAILYARD_ENGINE") == "pure"
    builds = ["pure", "compiled"] if engine.native.MANIFEST.exists() and usable else ["pure"]
    if not engine.native.MANIFEST.exists():
        print("ours compiled: not measured (no compiled engine in the tree: `make engine`)")
    elif builds == ["pure"]:
        print(f"ours compiled: not measured (the engine runs {engine.native.DESCRIPTION})")
    warm = f"each side warmed up for {args.warmup_seconds:g} CPU-s at least"
    if theirs_too:
        warm += f", theirs for {args.peer_warmup:,} rounds at least"
    print(
        f"{args.players}p double-12 standard, one round a game, {args.games} games a side, "
        f"{args.pairs} interleaved pairs, process CPU time; ours: {' and '.join(builds)}; "
        f"{warm}"
    )
    push_ratios: dict[str, list[float]] = {b: [] for b in builds}
    apply_ratios: dict[str, list[float]] = {b: [] for b in builds}
    ours_rounds: list[float] = []
    theirs_rounds: list[Side] = []
    for pair in range(args.pairs):
        ours = {
            b: (
                measure_ours(
                    b, args.players, args.games, pair, use_apply=False, warmup_s=args.warmup_seconds
                ),
                measure_ours(
                    b, args.players, args.games, pair, use_apply=True, warmup_s=args.warmup_seconds
                ),
            )
            for b in builds
        }
        parts = [
            f"ours {b} push {push.rate:,.0f} moves/CPU-s ({push.count} moves), apply "
            f"{applied.rate:,.0f}"
            for b, (push, applied) in ours.items()
        ]
        counts = {r.count for pair_readings in ours.values() for r in pair_readings}
        ours_per_round = max(counts) / args.games
        ours_rounds.append(ours_per_round)
        lengths = f"  moves a round: ours {ours_per_round:.1f}"
        if len(counts) > 1:
            lengths += f" (WARNING: our builds and modes played {sorted(counts)} moves)"
        if theirs_too:
            assert node is not None
            assert args.peer_dir is not None
            theirs = measure_theirs(
                node,
                args.peer_dir,
                args.players,
                args.games,
                pair,
                args.warmup_seconds,
                args.peer_warmup,
            )
            theirs_rounds.append(theirs)
            parts.append(
                f"theirs {theirs.rate:,.0f} ({theirs.moves} moves, after {theirs.warmup_games:,} "
                f"warm-up rounds in {theirs.warmup_cpu_s:.1f} CPU-s)"
            )
            for b, (push, applied) in ours.items():
                push_ratios[b].append(push.rate / theirs.rate)
                apply_ratios[b].append(applied.rate / theirs.rate)
                parts.append(
                    f"{b}/theirs push {push_ratios[b][-1]:.2f}x, apply {apply_ratios[b][-1]:.2f}x"
                )
            lengths += (
                f", theirs {theirs.per_round:.1f} ({theirs.hunt_moves:.1f} of them the hunt for "
                f"the engine and laying it; markers taken down {theirs.markers_down:.1f})"
            )
            if abs(theirs.per_round / ours_per_round - 1) > ROUND_LENGTH_TOLERANCE:
                lengths += (
                    f" WARNING: the rounds differ by more than {ROUND_LENGTH_TOLERANCE:.0%}: "
                    "the two sides do not play the same game"
                )
        print(f"pair {pair + 1}: " + "; ".join(parts), flush=True)
        print(lengths, flush=True)

    if not theirs_too:
        print("theirs: not measured (--ours-only)")
        return 0
    for b in builds:
        print(ratio_line(f"ours {b} (push) / theirs", push_ratios[b]))
        print(ratio_line(f"ours {b} (apply) / theirs", apply_ratios[b]))
    theirs_mean = statistics.mean(t.per_round for t in theirs_rounds)
    hunt_mean = statistics.mean(t.hunt_moves for t in theirs_rounds)
    print(
        f"mean moves a round: ours {statistics.mean(ours_rounds):.1f}, theirs "
        f"{theirs_mean:.1f} ({theirs_mean - hunt_mean:.1f} without the hunt for the engine); "
        f"theirs on Node {theirs_rounds[0].node}"
    )
    print(
        "differs: theirs counts laying the engine and the hunt for it as moves; "
        "ours shuffles with SHA-256, theirs with a seeded Math.random; "
        "theirs logs a line per action (ours: apply builds events, push none); "
        "theirs plays a double as any tile (its foot of 1), ours owes a tile on it"
    )
    met = True
    for b in builds:
        ok = statistics.median(push_ratios[b]) >= TARGETS[b]
        met = met and ok
        print(f"target ({b}, push): >= {TARGETS[b]}x: " + ("met" if ok else "missed"))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
