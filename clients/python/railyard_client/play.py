"""``railyard-play``: a game in the terminal against the service's bots,
through the API (gRPC or HTTP/JSON, like any client).

    railyard-play --url 127.0.0.1:50051 --game chicken_foot --players 3

Creates a game with you in one seat and bots in the others, then shows the
table from your seat and its legal moves; answer with a move's number or its
text in API.md's notation (``5-12@p0``, ``draw``). With the engine installed
(``pip install 'railyard-client[bots]'``) any move text is sent, and the
service's refusal names its rule; without it, the text must be one of the
moves listed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from railyard_api import game_service_pb2 as pb

from railyard_client.client import Client
from railyard_client.errors import RailyardError

Read = Callable[[str], str]
Write = Callable[[str], None]

#: The games of railyard.v1.Game, by the name the service's presets use.
GAMES = tuple(
    value.name.removeprefix("GAME_").lower() for value in pb.Game.DESCRIPTOR.values if value.number
)


def _tile(t: pb.Tile) -> str:
    return f"{t.a}-{t.b}"


def _ref(r: pb.TrainRef) -> str:
    """A train as API.md's move notation writes it: ``p0``, ``m1.2``, ``l1``."""
    target = r.WhichOneof("target")
    if target == "line":
        return f"l{r.end}"
    base = f"m{r.mexican}" if target == "mexican" else f"p{r.seat}"
    return f"{base}.{r.end}" if r.end else base


#: What a game calls the double its trains start from (MT-ENG-1), where it
#: is not the engine: Chicken Foot's station (CL-CF-1).
_CENTRE: dict[int, str] = {pb.GAME_CHICKEN_FOOT: "station"}


def _centre(ruleset: pb.Ruleset) -> str:
    return _CENTRE.get(ruleset.game, "engine")


def _examples(view: pb.GameView) -> str:
    """Move texts of the game's own kinds (API.md), for the prompt."""
    if view.HasField("line"):
        return "3-5@l1, draw"
    if any(t.ref.WhichOneof("target") == "seat" for t in view.trains):
        return "5-12@p0, 12-12@m0, draw"
    return "0-9@m2, 4-7@m0.2, draw"  # shared lines only (CL-CF-1)


def render(view: pb.GameView) -> str:
    """A plain-text picture of a seat's view."""
    names = [p.display_name for p in view.players]
    # Without personal trains the Mexican trains are the station's lines,
    # open to everyone (CL-CF-1): named as lines, not as the Mexican train.
    shared = "Mexican" if any(t.ref.WhichOneof("target") == "seat" for t in view.trains) else "line"
    if view.HasField("line"):  # a classic game: hands to a target score
        lines = [
            f"Hand {view.round}, to {view.target_score} points  "
            f"boneyard {view.boneyard_count}  version {view.version}"
        ]
        tiles = " ".join(f"{t.a}|{t.b}" for t in view.line.tiles) or "(empty: open it)"
        ends = " and ".join(map(str, view.line.open_ends)) or "-"
        lines.append(f"  line: {tiles}  ends {ends} (l0 left, l1 right)")
        for number, team in enumerate(view.teams):
            members = " + ".join(names[s] for s in team.seats)
            lines.append(f"  team {number}: {members}, {team.score} pts")
    else:
        lines = [
            f"Round {view.round}/{view.rounds_total}  {_centre(view.ruleset)} "
            f"{_tile(view.engine)}  "
            f"boneyard {view.boneyard_count}  version {view.version}"
        ]
    for train in view.trains:
        ref = train.ref
        owner = shared if ref.WhichOneof("target") == "mexican" else names[ref.seat]
        tiles = " ".join(f"{t.a}|{t.b}" for t in train.tiles) or "(empty)"
        ends = ",".join(map(str, train.open_ends))
        marker = "  [marker]" if train.marker else ""
        lines.append(f"  {_ref(ref):<5}{owner:<10} {tiles}  -> {ends}{marker}")
        for branch in train.branches[1:]:  # MT-DBL-7: a foot's branches, each its own end
            tiles = " ".join(f"{t.a}|{t.b}" for t in branch.tiles)
            end = f"  -> {branch.open_end}" if branch.HasField("open_end") else ""
            lines.append(f"         .{branch.end} from .{branch.parent_end}: {tiles}{end}")
    for double in view.open_doubles:
        lines.append(f"  open double {double.value}-{double.value} on {_ref(double.train)}")
    lines.append(
        "  "
        + "  ".join(f"{p.display_name}: {p.hand_count} tiles, {p.score} pts" for p in view.players)
    )
    if view.HasField("viewer_seat"):
        lines.append("Your hand: " + " ".join(_tile(t) for t in view.hand))
    return "\n".join(lines)


def describe(event: pb.GameEvent, names: Sequence[str], centre: str = "engine") -> str | None:
    """One line for a person, or None for events not worth a line; ``centre``
    is what the game calls a round's double (:func:`_centre`)."""
    kind = event.WhichOneof("kind")
    if kind == "tile_played":
        e = event.tile_played
        return f"{names[e.seat]} played {_tile(e.tile)} on {_ref(e.train)}"
    if kind == "tile_drawn":
        d = event.tile_drawn
        tile = f" {_tile(d.tile)}" if d.HasField("tile") else " a tile"
        why = " (knock penalty)" if d.reason == pb.DRAW_REASON_PENALTY else ""
        return f"{names[d.seat]} drew{tile}{why}"
    if kind == "passed":
        return f"{names[event.passed.seat]} passed"
    if kind == "marker_placed":
        return f"{names[event.marker_placed.seat]}'s train is open (marker on)"
    if kind == "double_satisfied":
        d2 = event.double_satisfied
        return f"double {d2.value}-{d2.value} is " + ("dead" if d2.dead else "satisfied")
    if kind == "turn_timed_out":
        return f"{names[event.turn_timed_out.seat]} ran out of time: the service plays the turn"
    if kind == "points_scored":
        p = event.points_scored
        why = pb.PointsReason.Name(p.reason).removeprefix("POINTS_REASON_").lower()
        return f"{names[p.seat]} scores {p.points} ({why.replace('_', ' ')})"
    if kind == "round_started":
        r = event.round_started
        if not r.HasField("engine"):
            return f"Hand {r.round} is dealt; to open: {names[r.starter]}"
        return f"Round {r.round} starts: {centre} {_tile(r.engine)}, {names[r.starter]} starts"
    if kind == "round_ended":
        e2 = event.round_ended
        how = "domino" if e2.reason == pb.ROUND_END_REASON_DOMINO else "blocked"
        won = f", won by {names[e2.winner]}" if e2.HasField("winner") else ""
        return f"Round {e2.round} ends ({how}{won}); scores {list(e2.scores)}"
    if kind == "game_ended":
        g = event.game_ended
        won = ", ".join(names[s] for s in g.winners)
        return f"Game over. Totals {list(g.totals)}; winner: {won}; seed {g.seed!r}"
    return None


def _typed_move(text: str, legal: Sequence[pb.LegalMove]) -> pb.Move | None:
    """The move ``text`` names: by the engine's parser where the engine is
    installed (any move, legal or not: the service judges it), else one of
    ``legal`` by its notation; None when it names none."""
    try:
        from engine import Move
        from engine import RailyardError as EngineError
        from railyard_api.convert import move_to_proto
    except ImportError:
        found = [m.move for m in legal if m.notation == text]
        return found[0] if found else None
    try:
        return move_to_proto(Move.parse(text))
    except EngineError:
        return None


def play(args: argparse.Namespace, read: Read = input, write: Write = print) -> int:
    """One game to its end (or ``q``); 0, or 2 when the game was refused."""
    bot = pb.BotLevel.Value(f"BOT_LEVEL_{args.bots.upper()}")
    players = [
        pb.Player(display_name="You")
        if s == args.seat
        else pb.Player(display_name=f"Bot {s}", bot=bot)
        for s in range(args.players)
    ]
    ruleset = pb.Ruleset()
    if args.preset:
        ruleset.preset = args.preset
    if args.game:
        ruleset.game = pb.Game.Value(f"GAME_{args.game.upper()}")
    if args.rounds:
        ruleset.rounds = args.rounds
    with Client(args.url) as client:
        try:
            created = client.create_game(players, ruleset, seed=args.seed)
        except RailyardError as exc:
            write(f"error: {exc}")
            return 2
        game_id = created.game.game_id
        token = next(s.token for s in created.seats if s.seat == args.seat)
        names = [p.display_name for p in created.game.players]
        centre = _centre(created.game.ruleset)
        write(
            f"Game {game_id}: {created.game.ruleset.preset} rules, {args.players} players. "
            f"Type a move number, a move's text ({_examples(created.game)}), or q."
        )
        for event in client.get_game_log(game_id).events:
            line = describe(event, names, centre)
            if line:
                write(f"  {line}")
        while True:
            view = client.get_game(game_id, token=token)
            if view.status == pb.GAME_STATUS_FINISHED:
                return 0
            legal = client.list_legal_moves(game_id, token=token)
            write("")
            write(render(view))
            write("Moves: " + "  ".join(f"[{i}] {m.notation}" for i, m in enumerate(legal.moves)))
            try:
                answer = read("> ").strip()
            except EOFError:
                write("bye")
                return 0
            if answer in ("q", "quit", "exit"):
                write("bye")
                return 0
            if answer.isdigit() and int(answer) < len(legal.moves):
                move: pb.Move | None = legal.moves[int(answer)].move
            else:
                move = _typed_move(answer, legal.moves)
            if move is None:
                write(f"  not that: {answer!r} is none of the moves listed")
                continue
            try:
                applied = client.apply_move(
                    game_id, move, token=token, expected_version=legal.version
                )
            except RailyardError as exc:
                write(f"  not that: {exc}")
                continue
            for event in applied.events:
                line = describe(event, names, centre)
                if line:
                    write(f"  {line}")


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url",
        default="127.0.0.1:50051",
        help="the service: host:port (gRPC) or http(s)://host:port (default 127.0.0.1:50051)",
    )
    parser.add_argument(
        "--players", type=int, default=4, help="2 to what the game seats (default 4)"
    )
    parser.add_argument(
        "--game",
        default="",
        choices=GAMES,
        help="the game, played by its own preset (default: the preset's game)",
    )
    parser.add_argument("--preset", default="", help="a preset's name (default: standard)")
    parser.add_argument("--rounds", type=int, default=0, help="play only the first N rounds")
    parser.add_argument("--seed", default="", help="deal seed (default: random)")
    parser.add_argument("--seat", type=int, default=0, help="your seat (default 0)")
    parser.add_argument("--bots", default="random", choices=["random", "greedy", "expert"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="railyard-play", description="Play a game in the terminal against bots."
    )
    options(parser)
    return play(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
