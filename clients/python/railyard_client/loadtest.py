"""``railyard-loadtest``: real games played against a running deployment.

``--concurrency`` players, each a client of its own (``railyard_client``'s
:class:`~railyard_client.AsyncClient`, asyncio), create a game whose people's
seats they play themselves (``--players``, beside ``--bots`` seats the
service plays) and play it to the end, one legal move at a time
(ListLegalMoves, then ApplyMove of a random one with ``expectedVersion``),
then start the next, until ``--games`` games have been started or
``--duration`` seconds have passed. A game still running at the deadline is
left where it is (counted as cut, not as an error).

Several ``--url`` values, comma-separated, spread the players over replicas:
player ``i`` talks to URL ``i mod n``. The client's own retries are off, so
every refusal is counted here: a transient one (UNAVAILABLE, RATE_LIMITED)
is counted and the call repeated (an ApplyMove with the same ``requestId``,
so it is never applied twice) up to :data:`TRANSIENT_REPEATS` times; any
other abandons that game.

While it runs, a progress line every ``--progress-interval`` seconds (on
stderr); at the end a summary (stdout): games and moves per second, the
latency p50/p95/p99 of each call kind, and errors by kind.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import math
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

from railyard_client import AsyncClient, RailyardError, RetryPolicy, new_request_id, pb
from railyard_client._common import is_transient

T = TypeVar("T")
Write = Callable[[str], None]

#: The calls a player makes, in the order the summary lists them.
CALL_KINDS: Final = ("CreateGame", "ListLegalMoves", "ApplyMove")
#: How often a call refused with a transient error is repeated before its game is abandoned.
TRANSIENT_REPEATS: Final = 3
#: The header (HTTP) / metadata key (gRPC) that carries an operator's API key.
API_KEY_HEADER: Final = "x-api-key"
BOT_LEVELS: Final = {
    "random": pb.BOT_LEVEL_RANDOM,
    "greedy": pb.BOT_LEVEL_GREEDY,
    "expert": pb.BOT_LEVEL_EXPERT,
}


class LoadtestError(Exception):
    """Why a load test could not run (bad arguments, service unreachable): one line."""


@dataclass(frozen=True)
class Plan:
    """What to run: where, how many games, how many players at once, which games."""

    urls: tuple[str, ...]
    games: int
    concurrency: int
    duration: float
    preset: str = "standard"
    rounds: int = 1
    people: int = 4
    bots: int = 0
    bot_level: str = "greedy"
    api_key: str = ""
    timeout: float = 10.0
    progress_interval: float = 1.0

    @property
    def transport(self) -> str:
        return "http" if self.urls[0].startswith(("http://", "https://")) else "grpc"

    def ruleset(self) -> pb.Ruleset:
        ruleset = pb.Ruleset(preset=self.preset)
        if self.rounds:
            ruleset.rounds = self.rounds
        return ruleset

    def players(self) -> list[pb.Player]:
        seats = [pb.Player(display_name=f"load-{i}") for i in range(self.people)]
        level = BOT_LEVELS[self.bot_level]
        seats += [pb.Player(display_name=f"bot-{i}", bot=level) for i in range(self.bots)]
        return seats


def parse_urls(text: str, transport: str | None) -> tuple[str, ...]:
    """The endpoints of ``--url`` for ``--transport`` (absent: told by the URLs).

    gRPC takes ``host:port``, HTTP ``http://host:port``; with ``--transport
    http`` a bare ``host:port`` is read as ``http://host:port``.

    >>> parse_urls("a:1,b:2", None)
    ('a:1', 'b:2')
    >>> parse_urls("a:8080", "http")
    ('http://a:8080',)
    >>> parse_urls("http://a:8080", "grpc")
    Traceback (most recent call last):
    ...
    railyard_client.loadtest.LoadtestError: --url http://a:8080 is an HTTP URL, but --transport is grpc: give host:port
    """  # noqa: E501
    urls = [u.strip() for u in text.split(",") if u.strip()]
    if not urls:
        raise LoadtestError("--url names no endpoint")
    found: list[str] = []
    for url in urls:
        is_http = url.startswith(("http://", "https://"))
        if transport == "grpc" and is_http:
            raise LoadtestError(
                f"--url {url} is an HTTP URL, but --transport is grpc: give host:port"
            )
        if transport == "http" and not is_http:
            url = f"http://{url.removeprefix('grpc://')}"
        found.append(url)
    kinds = {u.startswith(("http://", "https://")) for u in found}
    if len(kinds) > 1:
        raise LoadtestError(f"--url mixes HTTP and gRPC endpoints: {','.join(found)}")
    return tuple(found)


def error_kind(call: str, error: RailyardError) -> str:
    """How the summary groups a refusal: the call, the gRPC code or HTTP status, the
    ErrorInfo reason (a failure before any answer has none: the start of its message).

    >>> import grpc
    >>> error_kind("ApplyMove", RailyardError(grpc.StatusCode.ABORTED, "x", "VERSION_MISMATCH"))
    'ApplyMove ABORTED VERSION_MISMATCH'
    >>> error_kind("GetGame", RailyardError(
    ...     grpc.StatusCode.UNAVAILABLE, "ConnectError: [Errno 111] refused"))
    'GetGame UNAVAILABLE ConnectError'
    """
    status = f"HTTP {error.http_status}" if error.http_status else error.code.name
    why = error.reason or error.message.split(":")[0].split(";")[0][:48] or "no reason"
    return f"{call} {status} {why}"


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """The value below which ``fraction`` of the samples fall (linear between ranks).

    >>> percentile([1.0, 2.0, 3.0, 4.0], 0.5)
    2.5
    >>> percentile([7.0], 0.99)
    7.0
    """
    if len(sorted_values) == 1:
        return sorted_values[0]
    cuts = statistics.quantiles(sorted_values, n=100, method="inclusive")
    index = round(fraction * 100) - 1
    return cuts[index]


@dataclass
class Tally:
    """Everything counted so far, shared by the players (one event loop: no locks)."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in CALL_KINDS})
    errors: Counter[str] = field(default_factory=Counter)
    first_error: str = ""
    moves: int = 0
    bot_moves: int = 0
    started: int = 0
    finished: list[str] = field(default_factory=list)
    abandoned: int = 0
    cut: int = 0

    @property
    def calls_ok(self) -> int:
        return sum(len(v) for v in self.latencies.values())

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def refused(self, call: str, error: RailyardError) -> None:
        self.errors[error_kind(call, error)] += 1
        if not self.first_error:
            self.first_error = f"{call}: {error}"


class _GameAbandonedError(Exception):
    """A game this player gives up (the refusal is counted already)."""


@dataclass
class _Clock:
    begun: float
    deadline: float

    def elapsed(self) -> float:
        return time.monotonic() - self.begun

    def is_over(self) -> bool:
        return time.monotonic() >= self.deadline


class Loadtest:
    """One run of a :class:`Plan`: :meth:`run` plays, :meth:`summary` tells."""

    def __init__(self, plan: Plan, *, progress: Write | None = None) -> None:
        self.plan = plan
        self.tally = Tally()
        self.progress = progress
        self.elapsed = 0.0
        #: CPU seconds this process spent during the run: near ``elapsed``, the
        #: tool itself (one Python process) is the limit, not the service.
        self.cpu = 0.0
        self.interrupted = False
        self._rng = random.Random()
        self._clock = _Clock(0.0, 0.0)

    def _client(self, index: int) -> AsyncClient:
        """Player ``index``'s client, on URL ``index mod n``."""
        urls = self.plan.urls
        first = index % len(urls)
        return self._new_client([*urls[first:], *urls[:first]])

    def _new_client(self, urls: Sequence[str]) -> AsyncClient:
        return AsyncClient(
            urls,
            timeout=self.plan.timeout,
            # Every refusal is counted here (and repeated here when transient).
            retry=RetryPolicy(attempts=1),
            headers={API_KEY_HEADER: self.plan.api_key} if self.plan.api_key else None,
        )

    async def preflight(self) -> None:
        """Each URL answers ListRulesets and knows the preset, or a LoadtestError says which."""
        for url in self.plan.urls:
            async with self._new_client([url]) as client:
                try:
                    rulesets = await client.list_rulesets()
                except RailyardError as error:
                    raise LoadtestError(f"cannot reach {url}: {error}") from None
            names = sorted(r.preset for r in rulesets.rulesets)
            if self.plan.preset not in names:
                raise LoadtestError(
                    f"--preset {self.plan.preset}: {url} has no such preset "
                    f"(it has {', '.join(names)})"
                )

    async def run(self) -> None:
        """Play until ``games`` are started and over, or the duration has passed."""
        await self.preflight()
        begun, cpu_begun = time.monotonic(), time.process_time()
        self._clock = _Clock(begun, begun + self.plan.duration)
        clients = [self._client(i) for i in range(self.plan.concurrency)]
        reporter = asyncio.create_task(self._report()) if self.progress else None
        try:
            await asyncio.gather(*(self._player(c) for c in clients))
        except asyncio.CancelledError:
            # Ctrl-C: the summary of what was done still comes.
            self.interrupted = True
        finally:
            self.elapsed = self._clock.elapsed()
            self.cpu = time.process_time() - cpu_begun
            if reporter is not None:
                reporter.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reporter
            for client in clients:
                await client.close()

    def _claim_game(self) -> bool:
        if self.tally.started >= self.plan.games or self._clock.is_over():
            return False
        self.tally.started += 1
        return True

    async def _player(self, client: AsyncClient) -> None:
        while self._claim_game():
            try:
                await self._play_game(client)
            except _GameAbandonedError:
                self.tally.abandoned += 1

    async def _call(self, kind: str, make: Callable[[], Awaitable[T]]) -> T:
        """One call, timed; a transient refusal is counted and repeated."""
        for attempt in range(TRANSIENT_REPEATS + 1):
            begun = time.perf_counter()
            try:
                answer = await make()
            except RailyardError as error:
                self.tally.refused(kind, error)
                if not is_transient(error) or attempt == TRANSIENT_REPEATS:
                    raise _GameAbandonedError from error
                pause = error.retry_after if error.retry_after is not None else 0.1 * 2**attempt
                await asyncio.sleep(min(pause, 2.0))
                continue
            self.tally.latencies[kind].append(time.perf_counter() - begun)
            return answer
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _protocol_failure(self, what: str) -> _GameAbandonedError:
        """The service answered, but not as API.md says it must: counted as an error."""
        self.tally.errors[what] += 1
        if not self.tally.first_error:
            self.tally.first_error = what
        return _GameAbandonedError()

    async def _play_game(self, client: AsyncClient) -> None:
        plan = self.plan
        create_id = new_request_id()
        created = await self._call(
            "CreateGame",
            lambda: client.create_game(plan.players(), plan.ruleset(), request_id=create_id),
        )
        tokens = {s.seat: s.token for s in created.seats}
        view = created.game
        game_id = view.game_id
        while view.status != pb.GAME_STATUS_FINISHED:
            if self._clock.is_over():
                self.tally.cut += 1
                return
            token = tokens.get(view.current_seat)
            if token is None:
                raise self._protocol_failure(
                    f"CreateGame gave no token for seat {view.current_seat}, to move"
                )
            legal = await self._call(
                "ListLegalMoves", functools.partial(client.list_legal_moves, game_id, token=token)
            )
            if not legal.moves:
                raise self._protocol_failure("ListLegalMoves empty for the seat to move")
            move = self._rng.choice(legal.moves)
            move_id = new_request_id()
            answer = await self._call(
                "ApplyMove",
                functools.partial(
                    client.apply_move,
                    game_id,
                    move,
                    token=token,
                    expected_version=legal.version,
                    request_id=move_id,
                ),
            )
            self.tally.moves += 1
            # Every version past this move's is a bot's move, played within the call.
            self.tally.bot_moves += max(0, answer.game.version - legal.version - 1)
            view = answer.game
        self.tally.finished.append(game_id)

    async def _report(self) -> None:
        assert self.progress is not None
        interval = self.plan.progress_interval
        moves_before, at_before = 0, self._clock.elapsed()
        while True:
            await asyncio.sleep(interval)
            now, moves = self._clock.elapsed(), self.tally.moves
            rate = (moves - moves_before) / max(now - at_before, 1e-9)
            moves_before, at_before = moves, now
            self.progress(self.progress_line(now, rate))

    def progress_line(self, elapsed: float, moves_per_s: float) -> str:
        t = self.tally
        playing = t.started - len(t.finished) - t.abandoned - t.cut
        return (
            f"[{elapsed:6.1f}s] games {len(t.finished)}/{self.plan.games} finished, "
            f"{playing} playing, {t.abandoned} abandoned | moves {t.moves} "
            f"({moves_per_s:.1f}/s) | errors {t.error_count}"
        )

    def figures(self) -> dict[str, Any]:
        """The summary as data (``--summary-json``)."""
        t, elapsed = self.tally, max(self.elapsed, 1e-9)
        calls: dict[str, Any] = {}
        for kind in CALL_KINDS:
            samples = sorted(t.latencies[kind])
            errors = sum(n for k, n in t.errors.items() if k.startswith(f"{kind} "))
            calls[kind] = {"ok": len(samples), "errors": errors}
            if samples:
                for name, fraction in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
                    calls[kind][f"{name}_ms"] = round(percentile(samples, fraction) * 1000, 2)
        return {
            "transport": self.plan.transport,
            "urls": list(self.plan.urls),
            "seconds": round(self.elapsed, 3),
            "client_cpu_seconds": round(self.cpu, 3),
            "interrupted": self.interrupted,
            "games": {
                "started": t.started,
                "finished": len(t.finished),
                "abandoned": t.abandoned,
                "cut_at_deadline": t.cut,
                "per_second": round(len(t.finished) / elapsed, 3),
            },
            "moves": {
                "applied": t.moves,
                "per_second": round(t.moves / elapsed, 1),
                "bot_moves": t.bot_moves,
            },
            "calls": calls,
            "errors": dict(t.errors.most_common()),
            "finished_game_ids": list(t.finished),
        }

    def summary(self) -> str:
        f, plan = self.figures(), self.plan
        games, moves = f["games"], f["moves"]
        seats = f"{plan.people} players" + (
            f" + {plan.bots} {plan.bot_level} bots" if plan.bots else ""
        )
        rounds = f"{plan.rounds} round(s)" if plan.rounds else "all rounds"
        lines = [
            f"railyard-loadtest: {f['transport']} to {len(plan.urls)} URL(s), "
            f"{plan.concurrency} concurrent, preset {plan.preset}, {rounds}, {seats}"
            + (" (interrupted)" if self.interrupted else ""),
            f"time       {f['seconds']:.1f} s (this tool's CPU: {self.cpu:.1f} s; near the "
            "time, the tool is the limit: run several)",
            f"games      {games['finished']} finished ({games['per_second']:.2f}/s), "
            f"{games['abandoned']} abandoned, {games['cut_at_deadline']} cut at the deadline",
            f"moves      {moves['applied']} applied ({moves['per_second']:.1f}/s), "
            f"{moves['bot_moves']} bot moves within them",
            f"{'call':<16}{'ok':>8}{'errors':>8}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}",
        ]
        for kind, call in f["calls"].items():
            cells = "".join(
                f"{call.get(p, math.nan):>10.1f}" for p in ("p50_ms", "p95_ms", "p99_ms")
            )
            lines.append(f"{kind:<16}{call['ok']:>8}{call['errors']:>8}{cells}")
        if f["errors"]:
            lines.append("errors by kind:")
            lines += [f"  {n:>6}  {kind}" for kind, n in f["errors"].items()]
        else:
            lines.append("errors     none")
        return "\n".join(lines)


def run(
    plan: Plan,
    *,
    write: Write = print,
    progress: Write | None = None,
    summary_json: Path | None = None,
) -> int:
    """Run ``plan``, print its summary; the exit code (1: no call succeeded)."""
    if progress is None and plan.progress_interval > 0:
        progress = _stderr
    loadtest = Loadtest(plan, progress=progress)
    try:
        asyncio.run(loadtest.run())
    except LoadtestError as error:
        _stderr(f"railyard-loadtest: {error}")
        return 1
    except KeyboardInterrupt:
        # asyncio.run re-raises Ctrl-C after run() has finished its summary data.
        loadtest.interrupted = True
    write(loadtest.summary())
    if summary_json is not None:
        summary_json.write_text(json.dumps(loadtest.figures(), indent=2) + "\n")
    if loadtest.tally.calls_ok == 0:
        _stderr(f"railyard-loadtest: every call failed; the first: {loadtest.tally.first_error}")
        return 1
    return 130 if loadtest.interrupted else 0


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its message
    return parse


def main(argv: Sequence[str] | None = None) -> int:
    """``railyard-loadtest``: the command line."""
    parser = argparse.ArgumentParser(
        prog="railyard-loadtest",
        description=(__doc__ or "").split("\n\n")[0].replace("``", ""),
    )
    parser.add_argument(
        "--url",
        required=True,
        help="the deployment: host:port (gRPC) or http://host:port (HTTP); several, "
        "comma-separated, spread the players over replicas",
    )
    parser.add_argument(
        "--transport", choices=["grpc", "http"], default=None, help="default: told by --url"
    )
    parser.add_argument(
        "--games", type=_positive(int), default=100, help="games to start at most (100)"
    )
    parser.add_argument(
        "--concurrency", type=_positive(int), default=10, help="players at once (10)"
    )
    parser.add_argument(
        "--duration", type=_positive(float), default=60.0, help="seconds at most (60)"
    )
    parser.add_argument("--preset", default="standard", help="the games' ruleset preset")
    parser.add_argument(
        "--rounds", type=int, default=1, help="rounds per game (1; 0: the preset's)"
    )
    parser.add_argument(
        "--players", type=_positive(int), default=4, help="seats the tool plays (4)"
    )
    parser.add_argument("--bots", type=int, default=0, help="seats the service's bots play (0)")
    parser.add_argument("--bot-level", choices=["random", "greedy", "expert"], default="greedy")
    parser.add_argument(
        "--api-key", default="", help="an operator API key, sent as x-api-key on every call"
    )
    parser.add_argument(
        "--timeout", type=_positive(float), default=10.0, help="seconds per call (10)"
    )
    parser.add_argument(
        "--progress-interval",
        type=float,
        default=1.0,
        help="seconds between progress lines on stderr (1; 0: none)",
    )
    parser.add_argument(
        "--summary-json", type=Path, default=None, help="also write the summary as JSON here"
    )
    args = parser.parse_args(argv)
    try:
        urls = parse_urls(args.url, args.transport)
    except LoadtestError as error:
        print(f"railyard-loadtest: {error}", file=sys.stderr)
        return 2
    plan = Plan(
        urls=urls,
        games=args.games,
        concurrency=args.concurrency,
        duration=args.duration,
        preset=args.preset,
        rounds=args.rounds,
        people=args.players,
        bots=args.bots,
        bot_level=args.bot_level,
        api_key=args.api_key,
        timeout=args.timeout,
        progress_interval=args.progress_interval,
    )
    return run(plan, summary_json=args.summary_json)


if __name__ == "__main__":
    sys.exit(main())
