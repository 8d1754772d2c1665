"""Metrics through OpenTelemetry: what the operators of a hosted Railyard watch.

``GET /metrics`` on the HTTP port serves them in Prometheus' text format,
through OpenTelemetry's Prometheus exporter: one metrics system, whose
instruments other readers (OTLP, :func:`service.tracing.metric_readers_from_env`;
an in-memory one in tests) read as well. Each :class:`~service.app.GameApp`
has a MeterProvider and a Prometheus registry of its own, so several apps in
one process (the tests) never share or clash. The transports record every
call (method or operation, outcome, duration); the application layer
records what happens to games (created, moves, finished, lost races, store
outages, open watches, bot decision times); the process's CPU time, resident
memory and garbage collections are read at each collection.

The exposition keeps the names the Prometheus client gave them before
(counters end in ``_total``, histograms in ``_bucket``/``_count``/``_sum``).
Attribute sets are built once per label value and kept: a move pays
dictionary lookups and the SDK's own aggregation, not a new dict per call.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import resource
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Final

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.metrics import Counter as OtelCounter
from opentelemetry.metrics import UpDownCounter as OtelUpDownCounter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from service.tracing import resource_from_env

#: The Content-Type of :meth:`Metrics.exposition`.
CONTENT_TYPE: Final = CONTENT_TYPE_LATEST

#: Seconds: a move takes about a millisecond in the process, a bot's turn up
#: to a few hundred, a store outage the connect timeout.
_LATENCY: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
_BOT: Final = (0.0001, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

#: Streams live as long as their game: their duration is not a latency.
STREAMING: Final = frozenset({"WatchGame"})

_Attributes = dict[str, str]


class Count:
    """One counter with fixed labels (``inc``, as the Prometheus client's)."""

    __slots__ = ("_attributes", "_counter")

    def __init__(self, counter: OtelCounter, attributes: _Attributes | None = None) -> None:
        self._counter = counter
        self._attributes = attributes

    def inc(self, amount: int = 1) -> None:
        self._counter.add(amount, self._attributes)


class Level:
    """A value that goes up and down (open streams): a Prometheus gauge."""

    __slots__ = ("_counter",)

    def __init__(self, counter: OtelUpDownCounter) -> None:
        self._counter = counter

    def inc(self) -> None:
        self._counter.add(1)

    def dec(self) -> None:
        self._counter.add(-1)


def _resident_bytes() -> int:
    """The process's resident set now (Linux: /proc/self/statm); elsewhere
    its peak, the nearest the standard library tells."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _cpu_seconds(options: CallbackOptions) -> Iterable[Observation]:
    times = os.times()
    yield Observation(times.user, {"cpu.mode": "user"})
    yield Observation(times.system, {"cpu.mode": "system"})


def _memory(options: CallbackOptions) -> Iterable[Observation]:
    yield Observation(_resident_bytes())


def _gc_collections(options: CallbackOptions) -> Iterable[Observation]:
    for generation, stats in enumerate(gc.get_stats()):
        yield Observation(stats["collections"], {"cpython.gc.generation": str(generation)})


class Metrics:
    """The metrics of one GameApp and its transports. ``readers``: more
    readers of the same instruments besides /metrics' (OTLP, in-memory)."""

    def __init__(self, readers: Sequence[MetricReader] = ()) -> None:
        registry = self.registry = CollectorRegistry(auto_describe=True)
        # Its own registry (the exporter's default is the process-wide one),
        # without the otel_scope_* labels: the samples keep their labels.
        prometheus = PrometheusMetricReader(scope_info_enabled=False, registry=registry)
        self.provider = MeterProvider(
            metric_readers=[prometheus, *readers], resource=resource_from_env()
        )
        meter = self.provider.get_meter("railyard")
        self._grpc_calls = meter.create_counter(
            "railyard_grpc_requests", description="gRPC calls handled, by method and status code"
        )
        self._grpc_seconds = meter.create_histogram(
            "railyard_grpc_request_duration_seconds",
            unit="s",
            description="Time to answer a unary gRPC call, by method",
            explicit_bucket_boundaries_advisory=_LATENCY,
        )
        self._http_calls = meter.create_counter(
            "railyard_http_requests",
            description="HTTP requests handled, by operation (the OpenAPI operationId) and "
            "status; 499: the client went away before the answer",
        )
        self._http_seconds = meter.create_histogram(
            "railyard_http_request_duration_seconds",
            unit="s",
            description="Time to answer an HTTP request, by operation (streams excluded)",
            explicit_bucket_boundaries_advisory=_LATENCY,
        )
        self.games_created = Count(
            meter.create_counter("railyard_games_created", description="Games created")
        )
        self.games_finished = Count(
            meter.create_counter("railyard_games_finished", description="Games played to their end")
        )
        moves = meter.create_counter(
            "railyard_moves_applied",
            description="Moves applied, by who played them (person or bot)",
        )
        self.person_moves = Count(moves, {"player": "person"})
        self.bot_moves = Count(moves, {"player": "bot"})
        self.commit_conflicts = Count(
            meter.create_counter(
                "railyard_commit_conflicts",
                description="Moves whose commit lost the race for their version (then "
                "retried, or ABORTED)",
            )
        )
        self.store_unavailable = Count(
            meter.create_counter(
                "railyard_store_unavailable",
                description="Calls answered UNAVAILABLE because the store did not answer",
            )
        )
        self.corrupt_states = Count(
            meter.create_counter(
                "railyard_corrupt_states",
                description="Loads of a stored game that could not be read (DATA_LOSS "
                "CORRUPT_STATE)",
            )
        )
        self.watches = Level(
            meter.create_up_down_counter(
                "railyard_watch_streams", description="WatchGame streams open now"
            )
        )
        self._bot_seconds = meter.create_histogram(
            "railyard_bot_decision_seconds",
            unit="s",
            description="Time a bot seat took to choose its move, by level",
            explicit_bucket_boundaries_advisory=_BOT,
        )
        # The process (OpenTelemetry's semantic conventions for processes and
        # CPython), read when collected. Not the system-metrics instrumentation:
        # it instruments one MeterProvider per process, and each app has its own.
        meter.create_observable_counter(
            "process.cpu.time",
            [_cpu_seconds],
            unit="s",
            description="CPU seconds the process used, by mode (user, system)",
        )
        meter.create_observable_up_down_counter(
            "process.memory.usage",
            [_memory],
            unit="By",
            description="The process's resident memory",
        )
        meter.create_observable_counter(
            "cpython.gc.collections",
            [_gc_collections],
            description="Garbage collections run, by generation",
        )
        self._attributes: dict[tuple[str, str, str], tuple[_Attributes, _Attributes | None]] = {}

    def _labels(self, kind: str, name: str, outcome: str) -> tuple[_Attributes, _Attributes | None]:
        """The attributes of a call's count and of its duration (None: a stream)."""
        key = (kind, name, outcome)
        found = self._attributes.get(key)
        if found is None:
            label, outcome_label = ("method", "code") if kind == "grpc" else ("operation", "status")
            latency = None if name in STREAMING else {label: name}
            found = ({label: name, outcome_label: outcome}, latency)
            self._attributes[key] = found
        return found

    def grpc_call(self, method: str, code: str, seconds: float) -> None:
        """One gRPC call answered (``code``: the status code's name)."""
        calls, latency = self._labels("grpc", method, code)
        self._grpc_calls.add(1, calls)
        if latency is not None:
            self._grpc_seconds.record(seconds, latency)

    def http_call(self, operation: str, status: int, seconds: float) -> None:
        """One HTTP request answered (``status`` 0: the client went away)."""
        calls, latency = self._labels("http", operation, str(status or 499))
        self._http_calls.add(1, calls)
        if latency is not None:
            self._http_seconds.record(seconds, latency)

    def bot_decision(self, level: str, seconds: float) -> None:
        self._bot_seconds.record(seconds, {"level": level})

    def exposition(self) -> bytes:
        """Every metric, in Prometheus' text format."""
        return generate_latest(self.registry)

    def close(self) -> None:
        """Stop the readers (a last export to any that push)."""
        self.provider.shutdown()


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
