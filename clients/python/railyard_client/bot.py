"""``railyard-bot``: play one seat of a remote game through the API.

    railyard-bot --url http://host:8080 --game ID --token T --level expert
    railyard-bot --url host:50051,other:50051 --game ID --token T --module my_bot:choose
    railyard-bot --url http://host:8080 --join K7QXM2PAZR --name Robo --level greedy

It follows the game with WatchGame (which resumes by itself, on the next
``--url`` when a replica goes away) and plays whenever the seat is to move,
until the game is over. Each move is sent with the version it was chosen
for (``expectedVersion``) and a ``requestId`` derived from that version, so
a retry, or a restarted bot, never plays a move twice.

``--join`` takes an open seat of a waiting table first (tables.md): a
private table's by its join code, a public table's by its game id. It then
waits, following the table's events, until the table starts (its last seat
taken, or its host's StartGame), and plays the seat as above. Interrupted
(Ctrl-C, SIGTERM) before the game is over, it gives the seat up
(LeaveGame): before the start the seat opens again, during play a bot of
the table's level takes it over; the table never waits for a bot that is
gone. Its seat's token is never shown.

A ``--module`` bot is a function ``choose(view, legal)`` of the seat's
:class:`pb.GameView` and its :class:`pb.LegalMove` list, returning one of
them (a LegalMove, a Move or a notation such as ``"5-12@p0"``).
``--level`` uses the engine's own bots (random, greedy, expert): they need
the ``[bots]`` extra (``railyard-engine`` and ``railyard-api[engine]``), not
the service; ``--module railyard_client.bot:heaviest`` needs nothing.

It says two lines, one as it starts and the game's result at the end
(``--quiet``: none; ``--verbose``: each move, and each call it makes).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import re
import signal
import sys
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any, Final

import grpc
from railyard_api import game_service_pb2 as pb

from railyard_client.client import Client
from railyard_client.errors import RailyardError

log = logging.getLogger("railyard_client.bot")

Choice = pb.LegalMove | pb.Move | str
Chooser = Callable[[pb.GameView, Sequence[pb.LegalMove]], Choice]

#: A join code (tables.md: ten letters and digits, no 0/O, 1/I/L) and a game id.
JOIN_CODE: Final = re.compile("[ABCDEFGHJKMNPQRSTUVWXYZ23456789]{10}")
GAME_ID: Final = re.compile("[0-9a-f]{20}")
#: The exit status of a bot stopped by Ctrl-C or SIGTERM (128 + SIGINT).
INTERRUPTED: Final = 130


def heaviest(view: pb.GameView, legal: Sequence[pb.LegalMove]) -> Choice:
    """An engine-free bot: play the tile with the most pips, doubles first
    (they can be answered from the same hand); else draw, pass or end."""
    del view

    def weight(entry: pb.LegalMove) -> tuple[int, int]:
        if not entry.move.HasField("play"):
            return (-1, 0)
        tile = entry.move.play.tile
        return (int(tile.a == tile.b), tile.a + tile.b)

    return max(legal, key=weight)


def engine_chooser(level: str, budget: int | None = None) -> Chooser:
    """The engine's bot ``level``, deciding from the seat's view as the service's own do."""
    try:
        from railyard_client import engine_view
    except ImportError as exc:
        raise SystemExit(
            f"railyard-bot: --level {level} needs the engine: install the client with "
            "its bots extra (pip install 'railyard-client[bots]'), or use --module"
        ) from exc
    return engine_view.chooser(level, budget)


def module_chooser(spec: str) -> Chooser:
    """``package.module:function``."""
    module_name, _, attribute = spec.partition(":")
    if not attribute:
        raise SystemExit(f"railyard-bot: --module wants module:function, not {spec!r}")
    found: Chooser = getattr(importlib.import_module(module_name), attribute)
    return found


def _pick(choice: Choice, legal: Sequence[pb.LegalMove]) -> pb.Move:
    if isinstance(choice, pb.LegalMove):
        return choice.move
    if isinstance(choice, pb.Move):
        return choice
    for entry in legal:
        if entry.notation == choice:
            return entry.move
    raise ValueError(f"the bot chose {choice!r}, which is not a legal move now")


def join_target(text: str) -> tuple[str, str]:
    """``--join``'s table as ``(game_id, join_code)``: a game id (20 lowercase
    hex digits) names a public table, anything else must be a join code
    (typed in any case, with dashes or spaces, as tables.md allows).

    >>> join_target("0123456789abcdef0123")
    ('0123456789abcdef0123', '')
    >>> join_target("k7qxm-2pazr")
    ('', 'K7QXM2PAZR')
    >>> join_target("K7QXM2PAZ0")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: --join wants a join code (...) or a game id (...), not 'K7QXM2PAZ0'
    """
    if GAME_ID.fullmatch(text):
        return text, ""
    code = text.upper().replace("-", "").replace(" ", "")
    if JOIN_CODE.fullmatch(code):
        return "", code
    raise ValueError(
        "--join wants a join code (10 letters and digits, no 0, O, 1, I or L) "
        f"or a game id (20 hex digits), not {text!r}"
    )


#: Refusals that mean the game moved on under us: look again.
_RACES = {"VERSION_MISMATCH", "NOT_YOUR_TURN"}


class SeatBot:
    """One seat of one game, played by ``choose``."""

    def __init__(self, client: Client, game_id: str, token: str, choose: Chooser) -> None:
        self.client = client
        self.game_id = game_id
        self.token = token
        self.choose = choose
        self.moves = 0

    def _is_mine(self, view: pb.GameView) -> bool:
        return (
            view.status != pb.GAME_STATUS_FINISHED
            and view.HasField("current_seat")
            and view.HasField("viewer_seat")
            and view.current_seat == view.viewer_seat
        )

    def play_turn(self, view: pb.GameView) -> pb.GameView:
        """Move while the seat is to move (a draw, a double or a chain first
        turn keeps the turn); the view after."""
        while self._is_mine(view):
            legal = self.client.list_legal_moves(self.game_id, token=self.token)
            if not legal.moves:
                fresh = self.client.get_game(self.game_id, token=self.token)
                if fresh.version == view.version:
                    return fresh  # not ours after all: the watch will say when
                view = fresh
                continue
            move = _pick(self.choose(view, list(legal.moves)), legal.moves)
            if log.isEnabledFor(logging.DEBUG):
                notation = next((e.notation for e in legal.moves if e.move == move), "")
                seat = view.viewer_seat
                log.debug("seat %d plays %s at version %d", seat, notation, legal.version)
            try:
                answer = self.client.apply_move(
                    self.game_id,
                    move,
                    token=self.token,
                    expected_version=legal.version,
                    # One id per (seat, version): a repeat is answered, not replayed.
                    request_id=f"bot:{view.viewer_seat}:{legal.version}",
                )
            except RailyardError as error:
                if error.reason not in _RACES:
                    raise
                view = self.client.get_game(self.game_id, token=self.token)
                continue
            self.moves += 1
            view = answer.game
        return view

    def run(self) -> pb.GameView:
        """Play until the game is over (waiting first while the table waits
        for people); the last view."""
        view = self.play_turn(self.client.get_game(self.game_id, token=self.token))
        if view.status == pb.GAME_STATUS_FINISHED:
            return view
        if view.status == pb.GAME_STATUS_WAITING:
            # Its gameStarted comes live; a watch resumed after a drop starts
            # with a snapshot, which is looked at like the start.
            log.debug("game %s: waiting for the table to start", self.game_id)
        for event in self.client.watch(self.game_id, token=self.token):
            if event.HasField("game_ended"):
                break
            kind = event.WhichOneof("kind")
            mine = kind == "turn_started" and event.turn_started.seat == view.viewer_seat
            if kind in ("snapshot", "game_started") or mine:
                view = self.play_turn(self.client.get_game(self.game_id, token=self.token))
        return self.client.get_game(self.game_id, token=self.token)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="railyard-bot", description="Play one seat of a Railyard game through the API."
    )
    parser.add_argument(
        "--url",
        required=True,
        action="append",
        help="http(s)://host:port (HTTP/JSON) or host:port (gRPC); repeat it, or separate "
        "with commas, to name replicas to fall back on",
    )
    parser.add_argument("--game", help="the game id (with --token)")
    parser.add_argument(
        "--token",
        help="the seat's token from CreateGame (write --token=T if it starts with '-')",
    )
    parser.add_argument(
        "--join",
        metavar="CODE|GAME_ID",
        help="instead of --game and --token: take an open seat of a waiting table, a private "
        "one by its join code, a public one by its game id, and play it once the table starts",
    )
    parser.add_argument("--name", default="", help="with --join: the seat's display name")
    parser.add_argument(
        "--seat", type=int, help="with --join: the seat to take (default: the lowest open one)"
    )
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--level", choices=("random", "greedy", "expert"), help="an engine bot")
    how.add_argument("--module", help="module:function, choose(view, legal) -> move")
    parser.add_argument("--budget", type=int, help="the expert's search budget (playout moves)")
    talk = parser.add_mutually_exclusive_group()
    talk.add_argument("--quiet", action="store_true", help="no lines but errors and warnings")
    talk.add_argument(
        "--verbose",
        action="store_true",
        help="also a line for each move played and each HTTP or gRPC call made",
    )
    args = parser.parse_args(argv)
    if args.join is None:
        if args.game is None or args.token is None:
            parser.error("give --game and --token, or --join")
        if args.name or args.seat is not None:
            parser.error("--name and --seat go with --join")
    elif args.game is not None or args.token is not None:
        parser.error("--join takes a seat of its own: give it without --game and --token")
    elif args.seat is not None and args.seat < 0:
        parser.error(f"--seat is a seat's number, 0 or more, not {args.seat}")
    else:
        try:
            args.game, args.join_code = join_target(args.join)
        except ValueError as exc:
            parser.error(str(exc))
    return args


def configure_logging(*, quiet: bool = False, verbose: bool = False) -> None:
    """Two lines by default, the start and the result (this module's INFO);
    ``quiet``: warnings and errors only; ``verbose``: also the moves, the
    gRPC transport's calls (both DEBUG) and httpx's request lines (INFO).
    Every other logger stays at WARNING: httpx says a line per call at INFO,
    which for a whole game drowns the two lines that matter."""
    logging.basicConfig(level=logging.WARNING, format="railyard-bot: %(message)s")
    logging.getLogger("railyard_client").setLevel(logging.DEBUG if verbose else logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.INFO if verbose else logging.WARNING)
    log.setLevel(logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO)


def _interrupted(signum: int, frame: FrameType | None) -> None:
    del signum, frame
    raise KeyboardInterrupt


def take_seat(client: Client, args: argparse.Namespace) -> pb.JoinGameResponse:
    """``--join``: JoinGame, by the code or the id ``parse_args`` found."""
    return client.join_game(
        game_id=args.game or None,
        join_code=args.join_code or None,
        seat=args.seat,
        display_name=args.name,
    )


def give_up(client: Client, game_id: str, token: str) -> None:
    """An interrupted ``--join`` bot's seat, given back (LeaveGame), if the game goes on."""
    try:
        view = client.leave_game(game_id, token=token).game
    except RailyardError as error:
        if error.reason != "GAME_OVER":
            log.warning("game %s: the seat could not be given up: %s", game_id, error)
        return
    if view.status == pb.GAME_STATUS_WAITING:
        log.info("game %s: interrupted; its seat is open again", game_id)
    else:
        log.info("game %s: interrupted; a bot of the table's level plays its seat", game_id)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(quiet=args.quiet, verbose=args.verbose)
    urls = [u for arg in args.url for u in arg.split(",") if u]
    choose = module_chooser(args.module) if args.module else engine_chooser(args.level, args.budget)
    how = f"--module {args.module}" if args.module else f"--level {args.level}"
    through = ", ".join(urls)
    game_id, token = args.game, args.token
    joined = args.join is not None
    if joined:
        # SIGTERM as Ctrl-C: either gives the seat it took back (give_up).
        # SIGINT too, set here: a process started in the background by a
        # shell inherits SIGINT ignored, and would then keep its seat.
        signal.signal(signal.SIGTERM, _interrupted)
        signal.signal(signal.SIGINT, _interrupted)
    with Client(urls) as client:
        try:
            if joined:
                answer = take_seat(client, args)
                game_id, token = answer.game.game_id, answer.seat.token
                log.info(
                    "game %s: took seat %d (--join); playing it (%s) through %s",
                    game_id,
                    answer.seat.seat,
                    how,
                    through,
                )
            else:
                log.info("game %s: playing its seat (%s) through %s", game_id, how, through)
            bot = SeatBot(client, game_id, token, choose)
            view = bot.run()
        except RailyardError as error:
            print(f"railyard-bot: {error}", file=sys.stderr)
            return 2 if error.code is grpc.StatusCode.UNAVAILABLE else 1
        except KeyboardInterrupt:
            if joined and token:
                give_up(client, game_id, token)
            return INTERRUPTED
    scores: list[Any] = [p.score for p in view.players]
    seat = view.viewer_seat
    log.info(
        "game %s over at version %d: seat %d played %d moves; scores %s; winners %s",
        game_id,
        view.version,
        seat,
        bot.moves,
        scores,
        list(view.winners),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
