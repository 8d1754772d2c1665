"""``railyard-bot``: play one seat of a remote game through the API.

    railyard-bot --url http://host:8080 --game ID --token T --level expert
    railyard-bot --url host:50051,other:50051 --game ID --token T --module my_bot:choose

It follows the game with WatchGame (which resumes by itself, on the next
``--url`` when a replica goes away) and plays whenever the seat is to move,
until the game is over. Each move is sent with the version it was chosen
for (``expectedVersion``) and a ``requestId`` derived from that version, so
a retry, or a restarted bot, never plays a move twice.

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
import sys
from collections.abc import Callable, Sequence
from typing import Any

import grpc
from railyard_api import game_service_pb2 as pb

from railyard_client.client import Client
from railyard_client.errors import RailyardError

log = logging.getLogger("railyard_client.bot")

Choice = pb.LegalMove | pb.Move | str
Chooser = Callable[[pb.GameView, Sequence[pb.LegalMove]], Choice]


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
        """Play until the game is over; the last view."""
        view = self.play_turn(self.client.get_game(self.game_id, token=self.token))
        if view.status == pb.GAME_STATUS_FINISHED:
            return view
        for event in self.client.watch(self.game_id, token=self.token, after_version=view.version):
            if event.HasField("game_ended"):
                break
            kind = event.WhichOneof("kind")
            mine = kind == "turn_started" and event.turn_started.seat == view.viewer_seat
            if kind == "snapshot" or mine:
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
    parser.add_argument("--game", required=True, help="the game id")
    parser.add_argument(
        "--token",
        required=True,
        help="the seat's token from CreateGame (write --token=T if it starts with '-')",
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
    return parser.parse_args(argv)


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


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(quiet=args.quiet, verbose=args.verbose)
    urls = [u for arg in args.url for u in arg.split(",") if u]
    choose = module_chooser(args.module) if args.module else engine_chooser(args.level, args.budget)
    how = f"--module {args.module}" if args.module else f"--level {args.level}"
    log.info("game %s: playing its seat (%s) through %s", args.game, how, ", ".join(urls))
    with Client(urls, token=args.token) as client:
        bot = SeatBot(client, args.game, args.token, choose)
        try:
            view = bot.run()
        except RailyardError as error:
            print(f"railyard-bot: {error}", file=sys.stderr)
            return 2 if error.code is grpc.StatusCode.UNAVAILABLE else 1
    scores: list[Any] = [p.score for p in view.players]
    seat = view.viewer_seat
    log.info(
        "game %s over at version %d: seat %d played %d moves; scores %s; winners %s",
        args.game,
        view.version,
        seat,
        bot.moves,
        scores,
        list(view.winners),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
