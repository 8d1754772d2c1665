"""Prometheus metrics: what the operators of a hosted Railyard watch.

``GET /metrics`` on the HTTP port serves them in Prometheus' text format.
Each :class:`~service.app.GameApp` has a registry of its own, so several apps
in one process (the tests) never share or clash. The transports record every
call (method or operation, outcome, duration); the application layer
records what happens to games (created, moves, finished, lost races, store
outages, open watches, bot decision times).

Labelled children are looked up once per label value and kept: a move pays
two dictionary lookups and a few additions, not prometheus_client's label
resolution.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

#: The Content-Type of :meth:`Metrics.exposition`.
CONTENT_TYPE: Final = CONTENT_TYPE_LATEST

#: Seconds: a move takes about a millisecond in the process, a bot's turn up
#: to a few hundred, a store outage the connect timeout.
_LATENCY: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
_BOT: Final = (0.0001, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

#: Streams live as long as their game: their duration is not a latency.
STREAMING: Final = frozenset({"WatchGame"})


class Metrics:
    """The metrics of one GameApp and its transports."""

    def __init__(self) -> None:
        registry = self.registry = CollectorRegistry(auto_describe=True)
        self._grpc_calls = Counter(
            "railyard_grpc_requests",
            "gRPC calls handled, by method and status code",
            ["method", "code"],
            registry=registry,
        )
        self._grpc_seconds = Histogram(
            "railyard_grpc_request_duration_seconds",
            "Time to answer a unary gRPC call, by method",
            ["method"],
            buckets=_LATENCY,
            registry=registry,
        )
        self._http_calls = Counter(
            "railyard_http_requests",
            "HTTP requests handled, by operation (the OpenAPI operationId) and status; "
            "499: the client went away before the answer",
            ["operation", "status"],
            registry=registry,
        )
        self._http_seconds = Histogram(
            "railyard_http_request_duration_seconds",
            "Time to answer an HTTP request, by operation (streams excluded)",
            ["operation"],
            buckets=_LATENCY,
            registry=registry,
        )
        self.games_created = Counter("railyard_games_created", "Games created", registry=registry)
        self.games_finished = Counter(
            "railyard_games_finished", "Games played to their end", registry=registry
        )
        self._moves = Counter(
            "railyard_moves_applied",
            "Moves applied, by who played them (person or bot)",
            ["player"],
            registry=registry,
        )
        self.person_moves = self._moves.labels("person")
        self.bot_moves = self._moves.labels("bot")
        self.commit_conflicts = Counter(
            "railyard_commit_conflicts",
            "Moves whose commit lost the race for their version (then retried, or ABORTED)",
            registry=registry,
        )
        self.store_unavailable = Counter(
            "railyard_store_unavailable",
            "Calls answered UNAVAILABLE because the store did not answer",
            registry=registry,
        )
        self.corrupt_states = Counter(
            "railyard_corrupt_states",
            "Loads of a stored game that could not be read (DATA_LOSS CORRUPT_STATE)",
            registry=registry,
        )
        self.watches = Gauge(
            "railyard_watch_streams", "WatchGame streams open now", registry=registry
        )
        self._bot_seconds = Histogram(
            "railyard_bot_decision_seconds",
            "Time a bot seat took to choose its move, by level",
            ["level"],
            buckets=_BOT,
            registry=registry,
        )
        self._children: dict[tuple[str, ...], tuple[Counter, Histogram | None]] = {}

    def _child(self, kind: str, name: str, outcome: str) -> tuple[Counter, Histogram | None]:
        key = (kind, name, outcome)
        found = self._children.get(key)
        if found is None:
            calls, seconds = (
                (self._grpc_calls, self._grpc_seconds)
                if kind == "grpc"
                else (self._http_calls, self._http_seconds)
            )
            found = (
                calls.labels(name, outcome),
                None if name in STREAMING else seconds.labels(name),
            )
            self._children[key] = found
        return found

    def grpc_call(self, method: str, code: str, seconds: float) -> None:
        """One gRPC call answered (``code``: the status code's name)."""
        calls, latency = self._child("grpc", method, code)
        calls.inc()
        if latency is not None:
            latency.observe(seconds)

    def http_call(self, operation: str, status: int, seconds: float) -> None:
        """One HTTP request answered (``status`` 0: the client went away)."""
        calls, latency = self._child("http", operation, str(status or 499))
        calls.inc()
        if latency is not None:
            latency.observe(seconds)

    def bot_decision(self, level: str, seconds: float) -> None:
        self._bot_seconds.labels(level).observe(seconds)

    def exposition(self) -> bytes:
        """Every metric, in Prometheus' text format."""
        return generate_latest(self.registry)


class LogTally:
    """Log lines for an event that can happen thousands of times a second (a
    failing accept(), refused connections): the first is logged at once, the
    rest counted and logged as one line per ``interval`` seconds while they
    keep coming, so a flood costs a line a minute, not a line each."""

    def __init__(
        self,
        logger: logging.Logger,
        what: str,
        interval: float = 60.0,
        level: int = logging.WARNING,
    ) -> None:
        self.logger = logger
        self.what = what
        self.interval = interval
        self.level = level
        self._count = 0  # since the last line
        self._last = ""
        #: Set while a window is open: events are counted until it fires.
        self._timer: asyncio.TimerHandle | None = None

    def add(self, loop: asyncio.AbstractEventLoop, detail: str) -> None:
        """One more event (``detail``: what the line says about it)."""
        if self._timer is not None:
            self._count += 1
            self._last = detail
            return
        self.logger.log(
            self.level,
            "%s: %s (more are counted, one line every %g s)",
            self.what,
            detail,
            self.interval,
        )
        self._timer = loop.call_later(self.interval, self._flush, loop)

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._count:
            self._timer = None  # quiet for a whole window: the next one is logged at once
            return
        self.logger.log(
            self.level,
            "%s: %d more in the last %g s (last: %s)",
            self.what,
            self._count,
            self.interval,
            self._last,
        )
        self._count = 0
        self._timer = loop.call_later(self.interval, self._flush, loop)


class JsonLogFormatter(logging.Formatter):
    """One JSON object per line (``--log-format json``), for log pipelines:
    ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, and
    ``error`` with the traceback when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(level: str, form: str) -> None:
    """The process's log lines: ``text`` for people, ``json`` for machines.
    uvicorn's loggers go through the same handler (server.py hands it no
    logging config of its own in json form)."""
    handler = logging.StreamHandler()
    if form == "json":
        handler.setFormatter(JsonLogFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
