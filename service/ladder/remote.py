"""The ladder's games with remote bots, through a running service (``--url``).

A remote bot is any program that plays a seat through the API, started by
the ladder once per seat it holds, from its ``--remote NAME=COMMAND``
template with the seat's ``{url}``, ``{game}``, ``{token}`` (and
``{seat}``): ``railyard-bot --url {url} --game {game} --token {token}
--module mybot:choose`` is one, a program in any language that speaks
HTTP/JSON or gRPC is another. Per game the ladder:

1. creates the game with CreateGame and the deal's seed (API.md: the
   service deals from a caller's seed exactly as the engine does, so the
   duplicate deal is the same one the engine-side games play), the levels
   as the service's own bot seats (``Player.bot``), every other seat a
   person's, with ``turnTimeoutSeconds`` = ``--turn-timeout``;
2. starts each remote seat's program, and for each module bot's seat
   ``railyard-bot --module`` (the contract it plays by on the engine, in
   the Python client, which the service does not import);
3. waits for the game to finish, reading it every 0.1 s;
4. reads the rounds' results and the timeouts from GetGameLog
   (``roundEnded``: the scores per seat and, in the classic games, the
   hand's winner; ``turnTimedOut``), and stops what is still running.

**Nothing hangs for ever.** A program that stops moving has its turns
played by the service when its turn timer runs out (docs/bots.md "Turn
timers": as the greedy bot would, after a ``turnTimedOut`` event); the
ladder counts them and says so, since such a rating is partly greedy's.
``--turn-timeout 0`` turns the timers off; then, and in any case, a game
not over after ``--game-timeout`` seconds stops the ladder with an error,
as does a program that exits before its game is over (its last output
lines are quoted). Every program the ladder started is stopped when its
game ends, or the ladder does.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar
from urllib.parse import quote

import grpc
import httpx
from google.protobuf import json_format
from google.protobuf.message import Message

from engine.arena import GameRecord, is_level
from engine.games.mexican_train.bots import round_wins
from engine.registry import game_spec
from railyard_api import convert
from railyard_api import game_service_pb2 as pb
from railyard_api import game_service_pb2_grpc as pb_grpc
from service.ladder.pool import LadderConfig, LadderGame, RemoteBot, Seated

M = TypeVar("M", bound=Message)

#: The service's bot seats by level (API.md "Bots").
BOT_SEATS: Final = {
    "random": pb.BOT_LEVEL_RANDOM,
    "greedy": pb.BOT_LEVEL_GREEDY,
    "expert": pb.BOT_LEVEL_EXPERT,
}
#: How often the ladder looks whether a game is over.
POLL_SECONDS: Final = 0.1
#: How long a program may take to exit by itself once its game is over.
EXIT_GRACE_SECONDS: Final = 2.0
#: Output lines of a failed program quoted in the error.
TAIL_LINES: Final = 15


class RemoteGameError(RuntimeError):
    """A game through the service could not be played to its end."""


def hands_from_log(
    events: Sequence[pb.GameEvent], players: int, sides: Sequence[Sequence[int]], low_wins: bool
) -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[float, ...], ...], tuple[int, ...]]:
    """Round scores and win shares per round (as ``GameSpec.results`` gives
    them), and the timeouts per seat, from a finished game's log."""
    scores: list[tuple[int, ...]] = []
    shares: list[tuple[float, ...]] = []
    timeouts = [0] * players
    for event in events:
        kind = event.WhichOneof("kind")
        if kind == "turn_timed_out":
            timeouts[event.turn_timed_out.seat] += 1
        elif kind == "round_ended":
            ended = event.round_ended
            round_scores = tuple(ended.scores)
            scores.append(round_scores)
            if low_wins:  # MT-END-1/3: the lowest round score wins, ties split
                shares.append(tuple(round_wins(list(round_scores))))
            elif not ended.HasField("winner"):  # a tied hand: split between all seats
                shares.append((1.0 / players,) * players)
            else:  # the winner's side (a team: each partner half, CL-TEAM-1)
                shares.append(_side_shares(ended.winner, players, sides))
        elif kind == "game_ended" and not low_wins:
            # CL-SC-2: a game won by points scored during a hand (All Fives,
            # Bergen) ends in that hand, with no roundEnded: the hand is what
            # the totals hold beyond the hands before, won by the side that
            # reached the target.
            ended_game = event.game_ended
            before = [sum(hand[s] for hand in scores) for s in range(players)]
            rest = tuple(t - b for t, b in zip(ended_game.totals, before, strict=True))
            if any(rest) and ended_game.winners:
                scores.append(rest)
                shares.append(_side_shares(ended_game.winners[0], players, sides))
    return tuple(scores), tuple(shares), tuple(timeouts)


def _side_shares(winner: int, players: int, sides: Sequence[Sequence[int]]) -> tuple[float, ...]:
    side = next(s for s in sides if winner in s)
    return tuple(1.0 / len(side) if s in side else 0.0 for s in range(players))


def _tail(path: Path) -> str:
    lines = path.read_text(errors="replace").splitlines()[-TAIL_LINES:]
    return "\n".join(f"    {line}" for line in lines) or "    (no output)"


class ServiceApi:
    """The three calls the ladder makes itself (CreateGame, GetGame,
    GetGameLog), over gRPC (``host:port``, ``grpc://host:port``) or HTTP/JSON
    (``http(s)://host:port``), like the client's URLs. (The service does not
    import its client: tests/test_packages.py keeps them apart; the client
    plays the seats, as ``railyard-bot`` programs.)"""

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        self.url = url
        self.timeout = timeout
        self._http: httpx.Client | None = None
        self._channel: grpc.Channel | None = None
        if url.startswith(("http://", "https://")):
            self._http = httpx.Client(base_url=url.rstrip("/"), timeout=timeout)
        else:
            self._channel = grpc.insecure_channel(url.removeprefix("grpc://"))
            self._stub = pb_grpc.GameServiceStub(self._channel)

    def __enter__(self) -> ServiceApi:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._http is not None:
            self._http.close()
        if self._channel is not None:
            self._channel.close()

    def create_game(self, request: pb.CreateGameRequest) -> pb.CreateGameResponse:
        if self._http is None:
            return self._rpc(self._stub.CreateGame, request)
        body = json_format.MessageToDict(request)
        return self._json("POST", "/v1/games", body, pb.CreateGameResponse())

    def get_game(self, game_id: str) -> pb.GameView:
        if self._http is None:
            return self._rpc(self._stub.GetGame, pb.GetGameRequest(game_id=game_id))
        return self._json("GET", f"/v1/games/{quote(game_id, safe='')}", None, pb.GameView())

    def get_game_log(self, game_id: str) -> pb.GetGameLogResponse:
        if self._http is None:
            return self._rpc(self._stub.GetGameLog, pb.GetGameLogRequest(game_id=game_id))
        path = f"/v1/games/{quote(game_id, safe='')}/log"
        return self._json("GET", path, None, pb.GetGameLogResponse())

    def _rpc(self, call: Callable[..., M], request: Message) -> M:
        try:
            return call(request, timeout=self.timeout)
        except grpc.RpcError as error:
            code, details = error.code(), error.details()
            raise ServiceCallError(f"{code.name}: {details}") from error

    def _json(self, method: str, path: str, body: dict[str, Any] | None, into: M) -> M:
        assert self._http is not None
        try:
            answer = self._http.request(method, path, json=body)
        except httpx.HTTPError as error:
            raise ServiceCallError(f"{type(error).__name__}: {error}") from error
        if answer.status_code != 200:
            try:  # a google.rpc.Status (API.md "Errors")
                message = str(answer.json().get("message", ""))
            except ValueError:
                message = answer.text[:200]
            raise ServiceCallError(f"HTTP {answer.status_code}: {message}")
        return json_format.ParseDict(answer.json(), into, ignore_unknown_fields=True)


class ServiceCallError(RuntimeError):
    """A call to the service failed; the message says how."""


def railyard_bot() -> str:
    """The ``railyard-bot`` program (beside this Python, else on PATH)."""
    beside = Path(sys.executable).with_name("railyard-bot")
    found = str(beside) if beside.is_file() else shutil.which("railyard-bot")
    if found is None:
        raise RemoteGameError(
            "module bots play games through the service as railyard-bot programs: "
            "install the client (pip install 'railyard-client[bots]')"
        )
    return found


def module_seat(spec: str) -> RemoteBot:
    """A module bot's seat in a game through the service: railyard-bot
    ``--module``, the very contract it plays by on the engine."""
    return RemoteBot(
        spec,
        (
            railyard_bot(),
            "--url",
            "{url}",
            "--game",
            "{game}",
            "--token={token}",
            "--module",
            spec,
            "--quiet",
        ),
    )


def play_through_service(config: LadderConfig, game: Seated, workdir: Path) -> LadderGame:
    """Play ``game`` through the service at ``config.url`` (the module says how)."""
    where = f"game {game.index} (deal {game.deal}, {', '.join(game.places)})"
    request = pb.CreateGameRequest(
        ruleset=convert.ruleset_to_proto(config.ruleset),
        players=[
            pb.Player(display_name=bot, bot=BOT_SEATS[bot])
            if is_level(bot)
            else pb.Player(display_name=bot)
            for bot in game.seats
        ],
        seed=game.seed,
        request_id=uuid.uuid4().hex,
        turn_timeout_seconds=config.turn_timeout,
    )
    programs: list[Program] = []
    finished = False
    # The ladder's own calls go to the first replica; the programs get them all.
    first = config.url.split(",")[0]
    try:
        with ServiceApi(first) as api:
            created = api.create_game(request)
            game_id = created.game.game_id
            tokens = {s.seat: s.token for s in created.seats}
            for seat, bot in enumerate(game.seats):
                if is_level(bot):
                    continue  # the service's own bot seat
                remote = config.remote(bot)
                program = remote or module_seat(bot)
                argv = program.command(config.url, game_id, tokens[seat], seat)
                log_path = workdir / f"{game_id}-{seat}.log"
                env = None if remote else _importing_as_here()
                programs.append(_start(bot, seat, argv, log_path, env, where))
            _wait(api, game_id, config.game_timeout, programs, where)
            finished = True
            events = api.get_game_log(game_id).events
    except ServiceCallError as error:
        raise RemoteGameError(f"{where}: the service at {first}: {error}") from error
    finally:
        _stop(programs, EXIT_GRACE_SECONDS if finished else 0.0)
    sides = config.sides
    low_wins = game_spec(config.ruleset.game).low_score_wins
    scores, shares, timeouts = hands_from_log(events, config.players, sides, low_wins)
    record = GameRecord(
        game.index,
        game.seats,
        scores,
        shares,
        tuple(() for _ in game.seats),
        game.deal,
        game.seed,
        sides if len(sides[0]) > 1 else (),
    )
    return LadderGame(game, record, timeouts)


@dataclass
class Program:
    """A program playing one seat: a remote bot's, or railyard-bot for a module bot."""

    bot: str
    seat: int
    process: subprocess.Popen[bytes]
    log_path: Path


def _importing_as_here() -> dict[str, str]:
    """The environment of a railyard-bot playing a module bot's seat: this
    Python's, with this process's import path, so it finds the module as
    the ladder did (a folder on ``sys.path`` that ``PYTHONPATH`` lacks).
    Not for a remote bot's program, which may be any language or Python."""
    paths = [p for p in (*sys.path, os.environ.get("PYTHONPATH", "")) if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def _start(
    bot: str,
    seat: int,
    argv: Sequence[str],
    log_path: Path,
    env: dict[str, str] | None,
    where: str,
) -> Program:
    """Start a seat's program, its output to ``log_path`` (``env`` None: this one's)."""
    with log_path.open("wb") as log:  # the child keeps its own descriptor
        try:
            process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env
            )
        except OSError as exc:
            raise RemoteGameError(f"{where}: cannot start {bot} ({argv[0]}): {exc}") from exc
    return Program(bot, seat, process, log_path)


def _wait(
    api: ServiceApi, game_id: str, timeout: float, programs: Sequence[Program], where: str
) -> None:
    """Until the game is over; RemoteGameError when it cannot be."""
    deadline = time.monotonic() + timeout
    while True:
        view = api.get_game(game_id)
        if view.status == pb.GAME_STATUS_FINISHED:
            return
        for program in programs:
            if program.process.poll() is not None:
                # It may have seen the end before this loop did: look once more.
                if api.get_game(game_id).status == pb.GAME_STATUS_FINISHED:
                    return
                raise RemoteGameError(
                    f"{where}: {program.bot} (seat {program.seat}) exited with status "
                    f"{program.process.returncode} before game {game_id} was over; its last "
                    f"output:\n{_tail(program.log_path)}"
                )
        if time.monotonic() > deadline:
            raise RemoteGameError(
                f"{where}: game {game_id} was not over after {timeout:g} s (--game-timeout), "
                f"at version {view.version}, seat {view.current_seat} to move"
            )
        time.sleep(POLL_SECONDS)


def _stop(programs: Sequence[Program], grace: float) -> None:
    """Each program the ladder started ends: by itself within ``grace``
    seconds (its game is over), else terminated, else killed."""
    deadline = time.monotonic() + grace
    for program in programs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            program.process.wait(max(0.0, deadline - time.monotonic()))
    for program in programs:
        if program.process.poll() is None:
            program.process.terminate()
            try:
                program.process.wait(5)
            except subprocess.TimeoutExpired:
                program.process.kill()
                program.process.wait()


def play_all(
    config: LadderConfig,
    games: Sequence[Seated],
    *,
    jobs: int,
    done: Callable[[LadderGame], None],
) -> None:
    """Play ``games`` through the service, ``jobs`` at once; ``done`` is
    called with each as it finishes. The first failure stops the rest."""
    with tempfile.TemporaryDirectory(prefix="railyard-ladder-") as tmp:
        workdir = Path(tmp)
        if jobs <= 1:
            for game in games:
                done(play_through_service(config, game, workdir))
            return
        with ThreadPoolExecutor(jobs, thread_name_prefix="ladder") as pool:
            futures = [pool.submit(play_through_service, config, g, workdir) for g in games]
            try:
                for future in futures:
                    done(future.result())
            finally:
                for future in futures:
                    future.cancel()
