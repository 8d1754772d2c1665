"""Bot seats (API.md "Bots"): the engine's bots, played for the service.

A bot is handed what its seat may see, the seat's view and legal moves
(engine.bots), with the public key of the decision (``engine.bot_key``), so a
game with bots replays exactly whichever replica plays it, and wherever in
that replica it is played.

No request may hold the event loop with bot play: one CreateGame of two
greedy bots on a double-18 set with 94-tile hands plays thousands of moves
(seconds of CPU); on the loop it stalled every other call of the process. So
a request's bot turns are played

* on the loop only while they are cheap: until :data:`INLINE_SLICE` seconds
  have gone by or an expert is to move (a person's move against three greedy
  bots takes less bot play than a trip to another process);
* then, all the rest at once, in a pool of worker processes, run at a lower
  CPU priority than the process serving requests (the pool starts on first
  use, from the ``forkserver`` context, since a fork of a process running
  gRPC's threads is not safe, and is rebuilt if a worker dies);

and all of it is bounded: a request whose bot turns take more than
``cpu_limit`` seconds of CPU is refused (:class:`BotWorkExceededError`), and
nothing it played is kept. The bound is CPU time, not moves: a greedy move
in the game above costs several times one in a 14-seat ``by_set`` game, so a
move count that allows the one game would allow several times its work.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import itertools
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Final

import orjson

import engine
from engine.bots import bot_key, choose
from railyard_api import convert
from railyard_api import game_service_pb2 as pb

log = logging.getLogger("railyard.bots")

#: The wire's bot levels and the engine's names for them.
LEVELS: Final[dict[int, str]] = {
    pb.BOT_LEVEL_RANDOM: "random",
    pb.BOT_LEVEL_GREEDY: "greedy",
    pb.BOT_LEVEL_EXPERT: "expert",
}
#: The expert's budget (playout moves per decision) in a game of bots only.
#: API.md has CreateGame play such a game to its end within the request,
#: where the default budget at every decision of every round would keep the
#: caller waiting far too long. A twenty-fifth of it keeps the search (and its
#: determinism: the budget follows from the seats) cheap enough to answer
#: within the request (docs/bots.md).
ALL_BOTS_BUDGET: Final = 100
#: The levels that never decide on the event loop.
_SLOW: Final = frozenset({"expert"})
#: Seconds of bot play a request may do on the event loop before the rest
#: goes to a worker process.
INLINE_SLICE: Final = 0.002
#: How much lower the workers' CPU priority is (nice), so that the process
#: answering requests gets a core first when both want one.
_WORKER_NICENESS: Final = 10


class BotWorkExceededError(Exception):
    """A request's bot turns took more than ``limit`` seconds of CPU."""

    def __init__(self, limit: float, moves: int) -> None:
        super().__init__(limit, moves)  # (args: what pickling rebuilds it from)
        self.limit = limit
        self.moves = moves


@dataclass(slots=True)
class BotMove:
    """One bot move: the game's version after it and the events it caused,
    serialized (as they are stored); as messages only when asked for, since
    a game of bots only, played in a worker, comes back as thousands of
    them and CreateGame needs none."""

    version: int
    payloads: list[bytes]
    _events: list[pb.GameEvent] | None = None

    def events(self) -> list[pb.GameEvent]:
        if self._events is None:
            self._events = [pb.GameEvent.FromString(p) for p in self.payloads]
        return self._events


@dataclass(slots=True)
class BotTurns:
    """What the bot seats played in one request, in order."""

    moves: list[BotMove] = field(default_factory=list)
    #: Per decision: the level and the seconds it took (telemetry).
    decisions: list[tuple[str, float]] = field(default_factory=list)
    #: Seconds of CPU spent on bot play so far.
    cpu: float = 0.0


def play_turns(
    game: engine.GameState,
    bots: Sequence[int],
    budget: int | None,
    cpu_limit: float,
    turns: BotTurns,
    stop: Callable[[str], bool] | None = None,
    limit: int | None = None,
) -> None:
    """Play ``game``'s bot seats (API.md Bots: until a person is to move or
    the game is over, or ``limit`` moves are in ``turns``) into ``turns``;
    ``stop(level)`` may hand the rest back (True: not this move, nor any
    after it). Raises :class:`BotWorkExceededError` past ``cpu_limit``
    seconds in all."""
    while not game.over and bots[game.current_seat]:
        if limit is not None and len(turns.moves) >= limit:
            return
        seat = game.current_seat
        level = LEVELS[bots[seat]]
        if stop is not None and stop(level):
            return
        began_cpu = time.thread_time()
        began = time.perf_counter()
        # The bot sees what its seat sees, nothing more (MT-VIS-1/2).
        view = engine.build_view(game, seat)
        move = choose(level, view, game.legal_moves(), bot_key(view), budget=budget)
        turns.decisions.append((level, time.perf_counter() - began))
        played = game.apply(move, seat=seat)
        version = game.version
        events = [convert.event_to_proto(e, version) for e in played]
        turns.moves.append(BotMove(version, [e.SerializeToString() for e in events], events))
        turns.cpu += time.thread_time() - began_cpu
        if turns.cpu > cpu_limit:
            raise BotWorkExceededError(cpu_limit, len(turns.moves))


#: What a worker sends back: the state (the engine's JSON), per move its
#: version and serialized events, the decisions, and the CPU spent in all.
_WorkerResult = tuple[bytes, list[tuple[int, list[bytes]]], list[tuple[str, float]], float]


def _play_elsewhere(
    state: bytes,
    bots: tuple[int, ...],
    budget: int | None,
    cpu_limit: float,
    cpu_spent: float,
    limit: int | None = None,
) -> _WorkerResult:
    """:func:`play_turns` in a worker: from and to bytes, for the pipe
    (``limit``: the moves it may play)."""
    game = engine.load_dict(orjson.loads(state))
    turns = BotTurns(cpu=cpu_spent)
    play_turns(game, bots, budget, cpu_limit, turns, limit=limit)
    moves = [(move.version, move.payloads) for move in turns.moves]
    return orjson.dumps(game.to_dict()), moves, turns.decisions, turns.cpu


def _start_worker(service: Connection) -> None:
    """A worker's set-up: a lower CPU priority, and an end with its service.

    A worker waits on its call queue, whose write end it holds itself, and
    may be deep in an expert's search when its service stops, while the
    service's exit waits for it (concurrent.futures joins its workers at
    exit). So a worker ends at once, whatever it is doing, when the pipe
    ``service`` reaches its end: the service closed its end
    (:meth:`BotPlayer.close`: the answers are no longer wanted) or its
    process is gone (SIGKILL, the OOM killer), the kernel closing it. Its
    forkserver and the resource tracker then see their own pipes close and
    end too.

    SIGINT is ignored: Ctrl-C in a terminal signals the whole process group,
    and a worker that took it would die mid-task with a traceback, breaking
    the pool under the service's graceful stop. The service stops on it and
    then closes the pipe, which ends the worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(_WORKER_NICENESS)
    threading.Thread(
        target=_exit_with, args=(service,), name="railyard-service-watch", daemon=True
    ).start()


def _exit_with(service: Connection) -> None:
    with contextlib.suppress(EOFError, OSError):
        while True:
            service.recv_bytes()  # (nothing is ever sent: it returns at the end)
    os._exit(0)  # no cleanup to wait for: the service no longer wants the answers


class BotsBusyError(Exception):
    """Every worker is busy and too many CreateGames already wait for one."""


class BotPlayer:
    """Plays the bot seats of a request: ``processes`` workers for what does
    not fit on the loop (0: a thread of this process instead, which keeps the
    loop answering but shares its interpreter; for tests and embedding).

    The workers are handed out in three lanes: a move's bot turns (a person
    waits for them between two turns of theirs) before a CreateGame's (a
    game of bots only can take seconds), before background play's (nobody
    waits on it), so a flood of big games of bots delays no table; and no
    more than ``waiting_creates`` CreateGames wait for a worker, past which
    they are refused (:class:`BotsBusyError`)."""

    def __init__(
        self, processes: int | None = None, cpu_limit: float = 10.0, waiting_creates: int = 0
    ) -> None:
        self._processes = (os.cpu_count() or 1) if processes is None else processes
        self._cpu_limit = cpu_limit
        self._pool: ProcessPoolExecutor | None = None
        #: Closed to end the pool's workers at once (:func:`_start_worker`).
        self._stop: Connection | None = None
        self._max_waiting_creates = waiting_creates or 4 * max(1, self._processes)
        self._busy = 0  # workers running a job
        # (lane, arrival, future): lane 0 = a move's turns, 1 = a CreateGame's,
        # 2 = background play's.
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._arrivals = itertools.count()

    async def play(
        self,
        game: engine.GameState,
        bots: Sequence[int],
        budget: int | None = None,
        *,
        creating: bool = False,
        background: bool = False,
        limit: int | None = None,
    ) -> tuple[engine.GameState, BotTurns]:
        """The game after its bot seats' turns (``game`` itself, or the state
        a worker sent back), at most ``limit`` of them, and those turns;
        ``creating``: for a CreateGame (the second lane); ``background``:
        for background play (the third). Raises :class:`BotWorkExceededError`
        past the CPU limit (``game`` may then be part-way: the caller drops
        it), and :class:`BotsBusyError`."""
        turns = BotTurns()
        if game.over or not bots[game.current_seat]:
            return game, turns
        ends = time.perf_counter() + INLINE_SLICE

        def handed_on(level: str) -> bool:
            return level in _SLOW or time.perf_counter() > ends

        play_turns(game, bots, budget, self._cpu_limit, turns, stop=handed_on, limit=limit)
        if game.over or not bots[game.current_seat]:
            return game, turns
        if limit is not None and len(turns.moves) >= limit:
            return game, turns
        task = functools.partial(
            _play_elsewhere,
            orjson.dumps(game.to_dict()),
            tuple(bots),
            budget,
            self._cpu_limit,
            turns.cpu,
            None if limit is None else limit - len(turns.moves),
        )
        if self._processes == 0:
            result = await asyncio.to_thread(task)
        else:
            result = await self._in_worker(task, lane=2 if background else int(creating))
        state, moves, decisions, turns.cpu = result
        turns.moves += [BotMove(version, payloads) for version, payloads in moves]
        turns.decisions += decisions
        return engine.load_dict(orjson.loads(state)), turns

    async def _in_worker(self, task: Callable[[], _WorkerResult], lane: int) -> _WorkerResult:
        """``task``'s result from a worker, once one is free for its lane."""
        loop = asyncio.get_running_loop()
        if self._busy >= self._processes or self._waiting:
            waiting_creates = sum(1 for w in self._waiting if w[0] == 1 and not w[2].done())
            if lane == 1 and waiting_creates >= self._max_waiting_creates:
                raise BotsBusyError
            turn = loop.create_future()
            heapq.heappush(self._waiting, (lane, next(self._arrivals), turn))
            try:
                await turn  # resolved by _release, which hands this call its worker
            except asyncio.CancelledError:
                if turn.done() and not turn.cancelled():
                    self._release()  # handed a worker, but gone: pass it on
                raise
        else:
            self._busy += 1
        try:
            job = self._executor().submit(task)
        except BaseException:
            self._release()
            raise
        # The worker is free when the job ends, not when this call stops
        # waiting for it (a cancelled request leaves its job running).
        job.add_done_callback(lambda _: loop.call_soon_threadsafe(self._release))
        try:
            return await asyncio.wrap_future(job)
        except BrokenProcessPool:
            # A worker died (killed, out of memory): this request is played
            # in a thread, the next ones in a new pool.
            log.warning("bot worker pool broken; starting a new one")
            self._close_pool()
            return await asyncio.to_thread(task)

    def _release(self) -> None:
        """A worker is free: to the first waiting call of the first lane."""
        while self._waiting:
            _, _, turn = heapq.heappop(self._waiting)
            if not turn.done():  # (done: its request was cancelled meanwhile)
                turn.set_result(None)
                return
        self._busy -= 1

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            context = multiprocessing.get_context("forkserver")
            # Only this process holds the write end (pipes are not inherited):
            # the workers read its end when it is closed or this process dies.
            reader, self._stop = context.Pipe(duplex=False)
            self._pool = ProcessPoolExecutor(
                self._processes,
                mp_context=context,
                initializer=_start_worker,
                initargs=(reader,),
            )
        return self._pool

    def _close_pool(self) -> None:
        pool, self._pool = self._pool, None
        stop, self._stop = self._stop, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if stop is not None:
            stop.close()  # the workers end now, a search in progress included

    def close(self) -> None:
        self._close_pool()
