"""The ``railyard`` command: play Mexican Train in the terminal against bots.

Until the service lands (issue 3) this drives the engine directly; the
computer seats pick uniformly among their legal moves, seeded from the game
seed and the version so a game replays exactly.
"""

from __future__ import annotations

import argparse
import random
import secrets
import sys
from collections.abc import Callable, Sequence

import engine
from engine import GameView, MexicanTrain, Move, RailyardError, build_view


def _train_line(view: GameView, index: int) -> str:
    train = view.trains[index]
    name = f"p{train.ref.number}" if train.ref.kind == "seat" else f"m{train.ref.number}"
    owner = "Mexican" if train.ref.kind == "mexican" else f"seat {train.ref.number}"
    tiles = " ".join(f"{t.a}|{t.b}" for t in train.tiles) or "(empty)"
    marker = "  [marker]" if train.marker else ""
    ends = ",".join(map(str, train.open_ends))
    line = f"  {name:<4}{owner:<9} {tiles}  -> {ends}{marker}"
    for branch in train.branches[1:]:
        line += f"\n        .{branch.end} from .{branch.parent_end}: "
        line += " ".join(f"{t.a}|{t.b}" for t in branch.tiles)
    return line


def render(view: GameView, names: Sequence[str]) -> str:
    """A plain-text picture of a seat's view."""
    lines = [
        f"Round {view.round}/{view.rounds_total}  engine {view.engine}  "
        f"boneyard {view.boneyard_count}  version {view.version}"
    ]
    lines += [_train_line(view, i) for i in range(len(view.trains))]
    for double in view.open_doubles:
        lines.append(f"  open double {double.value}-{double.value} on {double.train}")
    scores = "  ".join(
        f"{names[p.seat]}: {p.hand_count} tiles, {p.score} pts" for p in view.players
    )
    lines.append(f"  {scores}")
    if view.hand is not None:
        lines.append("Your hand: " + " ".join(map(str, view.hand)))
    return "\n".join(lines)


def _does(name: str, verb: str) -> str:
    return f"{name} {verb}" if name == "you" else f"{name} {verb}s"


def _describe(event: engine.Event, names: Sequence[str]) -> str | None:
    if isinstance(event, engine.TilePlayed):
        return f"{_does(names[event.seat], 'play')} {event.tile} on {event.train}"
    if isinstance(event, engine.TileDrawn):
        tile = f" {event.tile}" if event.tile is not None else " a tile"
        return f"{_does(names[event.seat], 'draw')}{tile}" + (
            " as a knock penalty" if event.why == "penalty" else ""
        )
    if isinstance(event, engine.Passed):
        return _does(names[event.seat], "pass")
    if isinstance(event, engine.MarkerPlaced):
        owner = "your" if names[event.seat] == "you" else f"{names[event.seat]}'s"
        return f"{owner} train is open (marker on)"
    if isinstance(event, engine.DoubleSatisfied):
        return f"double {event.value}-{event.value} on {event.train} is " + (
            "dead" if event.dead else "satisfied"
        )
    if isinstance(event, engine.RoundEnded):
        how = "domino" if event.reason == "domino" else "blocked"
        return f"Round {event.round} ends ({how}); scores {list(event.scores)}"
    if isinstance(event, engine.RoundStarted):
        return (
            f"Round {event.round} starts with engine {event.engine}; {names[event.starter]} starts"
        )
    if isinstance(event, engine.GameEnded):
        won = ", ".join(names[s] for s in event.winners)
        return f"Game over. Totals {list(event.totals)}; winner: {won} (seed {event.seed!r})"
    return None


def play(
    args: argparse.Namespace,
    read: Callable[[str], str] = input,
    write: Callable[[str], None] = print,
) -> int:
    """Seat ``args.seat`` is the person; every other seat is a random bot."""
    seed = args.seed or secrets.token_hex(8)
    try:
        ruleset = engine.preset(args.preset)
        if args.rounds:
            ruleset = ruleset.with_options(rounds=args.rounds)
        game = MexicanTrain(ruleset, args.players, seed)
    except RailyardError as exc:
        write(f"error: {exc}")
        return 2
    names = ["you" if s == args.seat else f"bot{s}" for s in range(args.players)]
    write(
        f"Mexican Train, {ruleset.preset} rules, {args.players} players (seed hash "
        f"{game.seed_sha256[:12]}...). Type a move number, a move like 5-12@p0, or q."
    )
    _report(game.opening_events, args.seat, names, write)
    while not game.over:
        if game.current_seat != args.seat:
            bot = random.Random(f"{seed}:{game.version}")
            _report(game.apply(bot.choice(game.legal_moves())), args.seat, names, write)
            continue
        write("")
        write(render(build_view(game, args.seat), names))
        legal = game.legal_moves()
        write("Moves: " + "  ".join(f"[{i}] {m}" for i, m in enumerate(legal)))
        try:
            answer = read("> ").strip()
        except EOFError:
            write("bye")
            return 0
        if answer in ("q", "quit", "exit"):
            write("bye")
            return 0
        try:
            move = legal[int(answer)] if answer.isdigit() else Move.parse(answer)
            events = game.apply(move, seat=args.seat)
        except (IndexError, RailyardError) as exc:
            write(f"  not that: {exc}")
            continue
        _report(events, args.seat, names, write)
    return 0


def _report(
    events: list[engine.Event], seat: int, names: Sequence[str], write: Callable[[str], None]
) -> None:
    for event in events:
        text = _describe(engine.for_seat(event, seat), names)
        if text:
            write(f"  {text}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="railyard", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("play", help="play in the terminal against bots (the default)")
    for target in (parser, p):
        target.add_argument("--players", type=int, default=4, help="2 to 14 (default 4)")
        target.add_argument("--preset", default="standard", choices=sorted(engine.PRESETS))
        target.add_argument("--rounds", type=int, default=0, help="play only the first N rounds")
        target.add_argument("--seed", default="", help="deal seed (default: random)")
        target.add_argument("--seat", type=int, default=0, help="your seat (default 0)")
    args = parser.parse_args(argv)
    if not 0 <= args.seat < args.players:
        parser.error(f"--seat must be from 0 to {args.players - 1}")
    return play(args)


if __name__ == "__main__":
    sys.exit(main())
