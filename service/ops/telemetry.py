"""Metrics through OpenTelemetry: what the operators of a hosted Railyard watch.

``GET /metrics`` on the HTTP port serves them in Prometheus' text format,
through OpenTelemetry's Prometheus exporter: one metrics system, whose
instruments other readers (OTLP, :func:`service.ops.tracing.metric_readers_from_env`;
an in-memory one in tests) read as well. Each :class:`~service.app.GameApp`
has a MeterProvider and a Prometheus registry of its own, so several apps in
one process (the tests) never share or clash. The transports record every
call (method or operation, outcome, duration); the application layer
records what happens to games (created, moves, finished, lost races, store
outages, open watches, bot decision times); the process's CPU time, resident
memory and garbage collections are read at each collection.

The exposition keeps the names the Prometheus client gave them before
(counters end in ``_total``, histograms in ``_bucket``/``_count``/``_sum``).

Counts are observable instruments over plain integers, read when collected:
a synchronous OpenTelemetry counter's ``add`` costs many times an integer's
increment (the SDK checks and hashes the attributes of every measurement),
more than the Prometheus client's did, and a turn over HTTP counts six
things (two calls, the move, the bots' moves). Durations stay synchronous
histograms (there is no observable one): two a turn.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import resource
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Final, TextIO

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import (
    AlwaysOffExemplarFilter,
    MeterProvider,
    TraceBasedExemplarFilter,
)
from opentelemetry.sdk.metrics.export import MetricReader
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from service import GRPC_ENV_IGNORED
from service.ops.redaction import RedactSecrets
from service.ops.tracing import resource_from_env

#: The Content-Type of :meth:`Metrics.exposition`.
CONTENT_TYPE: Final = CONTENT_TYPE_LATEST

#: Seconds: a move takes about a millisecond in the process, a bot's turn up
#: to a few hundred, a store outage the connect timeout.
_LATENCY: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
_BOT: Final = (0.0001, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

#: Streams live as long as their game: their duration is not a latency.
STREAMING: Final = frozenset({"WatchGame"})

#: What a webhook delivery attempt came to (service.app.webhooks).
WEBHOOK_OUTCOMES: Final = ("delivered", "failed", "refused", "dropped")

_Attributes = dict[str, str]


class Count:
    """One count with fixed labels (``inc``, as the Prometheus client's);
    its instrument reads ``value`` when collected."""

    __slots__ = ("attributes", "value")

    def __init__(self, attributes: _Attributes | None = None) -> None:
        self.attributes = attributes
        self.value = 0

    def inc(self, amount: int = 1) -> None:
        self.value += amount

    def dec(self) -> None:
        self.value -= 1


def _observe(
    counts: Callable[[], Iterable[Count]],
) -> Callable[[CallbackOptions], Iterable[Observation]]:
    """The callback of an observable instrument over ``counts()``."""

    def callback(options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(c.value, c.attributes) for c in counts()]

    return callback


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

    def __init__(self, readers: Sequence[MetricReader] = (), *, traced: bool = True) -> None:
        """``traced``: whether the app traces its calls. Without tracing no
        span is ever current, so the SDK's default exemplar filter (a
        measurement taken inside a sampled span) would keep none, and it
        looks for the span at every measurement, a large part of a
        histogram record's cost. Off then."""
        registry = self.registry = CollectorRegistry(auto_describe=True)
        # Its own registry (the exporter's default is the process-wide one),
        # without the otel_scope_* labels: the samples keep their labels.
        prometheus = PrometheusMetricReader(scope_info_enabled=False, registry=registry)
        self.provider = MeterProvider(
            metric_readers=[prometheus, *readers],
            resource=resource_from_env(),
            exemplar_filter=TraceBasedExemplarFilter() if traced else AlwaysOffExemplarFilter(),
        )
        meter = self.provider.get_meter("railyard")
        #: The calls' counts, by (transport, name, outcome).
        self._calls: dict[tuple[str, str, str], tuple[Count, _Attributes | None]] = {}
        meter.create_observable_counter(
            "railyard_grpc_requests",
            [_observe(lambda: self._counts_of("grpc"))],
            description="gRPC calls handled, by method and status code",
        )
        self._grpc_seconds = meter.create_histogram(
            "railyard_grpc_request_duration_seconds",
            unit="s",
            description="Time to answer a unary gRPC call, by method",
            explicit_bucket_boundaries_advisory=_LATENCY,
        )
        meter.create_observable_counter(
            "railyard_http_requests",
            [_observe(lambda: self._counts_of("http"))],
            description="HTTP requests handled, by operation (the OpenAPI operationId) and "
            "status; 499: the client went away before the answer",
        )
        self._http_seconds = meter.create_histogram(
            "railyard_http_request_duration_seconds",
            unit="s",
            description="Time to answer an HTTP request, by operation (streams excluded)",
            explicit_bucket_boundaries_advisory=_LATENCY,
        )

        def counter(name: str, description: str, *counts: Count) -> None:
            meter.create_observable_counter(
                name, [_observe(lambda: counts)], description=description
            )

        self.games_created = Count()
        counter("railyard_games_created", "Games created", self.games_created)
        self.games_finished = Count()
        counter("railyard_games_finished", "Games played to their end", self.games_finished)
        self.person_moves = Count({"player": "person"})
        self.bot_moves = Count({"player": "bot"})
        counter(
            "railyard_moves_applied",
            "Moves applied, by who played them (person or bot)",
            self.person_moves,
            self.bot_moves,
        )
        self.commit_conflicts = Count()
        counter(
            "railyard_commit_conflicts",
            "Moves whose commit lost the race for their version (then retried, or ABORTED)",
            self.commit_conflicts,
        )
        self.store_unavailable = Count()
        counter(
            "railyard_store_unavailable",
            "Calls answered UNAVAILABLE because the store did not answer",
            self.store_unavailable,
        )
        self.corrupt_states = Count()
        counter(
            "railyard_corrupt_states",
            "Loads of a stored game that could not be read (DATA_LOSS CORRUPT_STATE)",
            self.corrupt_states,
        )
        self.watches = Count()
        meter.create_observable_up_down_counter(
            "railyard_watch_streams",
            [_observe(lambda: (self.watches,))],
            description="WatchGame streams open now",
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
        # Webhooks (service.app.webhooks), counted by each replica's delivery task.
        #: Delivery attempts by outcome (WEBHOOK_OUTCOMES).
        self.webhook_deliveries = {
            outcome: Count({"outcome": outcome}) for outcome in WEBHOOK_OUTCOMES
        }
        counter(
            "railyard_webhook_deliveries",
            "Webhook delivery attempts, by outcome: delivered (2xx), failed (another "
            "answer, a timeout, no connection: retried), refused (the target's address "
            "is not allowed: retried), dropped (given up, or unreadable)",
            *self.webhook_deliveries.values(),
        )
        #: Events queued for the tenants' webhooks (retries included), as last counted.
        self.webhook_queued = Count()
        meter.create_observable_gauge(
            "railyard_webhook_queued",
            [_observe(lambda: (self.webhook_queued,))],
            description="Webhook events not yet delivered nor dropped, retries included, "
            "as this replica last counted them (the queue is the deployment's)",
        )

    def _call(self, kind: str, name: str, outcome: str) -> tuple[Count, _Attributes | None]:
        """A call's count, and the attributes of its duration (None: a stream)."""
        key = (kind, name, outcome)
        found = self._calls.get(key)
        if found is None:
            label, outcome_label = ("method", "code") if kind == "grpc" else ("operation", "status")
            latency = None if name in STREAMING else {label: name}
            found = (Count({label: name, outcome_label: outcome}), latency)
            self._calls[key] = found
        return found

    def _counts_of(self, kind: str) -> list[Count]:
        # A copy: a call of a new kind may add an entry while this is read.
        return [count for (k, _, _), (count, _) in list(self._calls.items()) if k == kind]

    def grpc_call(self, method: str, code: str, seconds: float) -> None:
        """One gRPC call answered (``code``: the status code's name)."""
        count, latency = self._call("grpc", method, code)
        count.value += 1
        if latency is not None:
            self._grpc_seconds.record(seconds, latency)

    def http_call(self, operation: str, status: int, seconds: float) -> None:
        """One HTTP request answered (``status`` 0: the client went away)."""
        count, latency = self._call("http", operation, str(status or 499))
        count.value += 1
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
        if record.exc_text:  # the traceback as RedactSecrets left it
            entry["error"] = record.exc_text
        elif record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(level: str, form: str, secrets: Iterable[str] = ()) -> None:
    """The process's log lines: ``text`` for people, ``json`` for machines,
    through one handler whose filter redacts seat tokens, API keys and
    ``authorization`` headers (:class:`~service.ops.redaction.RedactSecrets`;
    ``secrets``: exact strings to redact as well, the configured API keys).
    Every logger reaches that handler: one with handlers of its own would
    write past the filter, so its handlers are removed here, and uvicorn is
    given no logging config of its own (server.py)."""
    logging.basicConfig(level=level.upper(), handlers=[log_handler(form, secrets)], force=True)
    # What logging writes for a logger that neither propagates nor has a
    # handler (warnings and worse): through the same filter, not raw to stderr.
    last_resort = log_handler(form, secrets)
    last_resort.setLevel(logging.WARNING)
    logging.lastResort = last_resort
    through_root()
    for name, value in GRPC_ENV_IGNORED.items():
        logging.getLogger("railyard").warning(
            "%s=%s is ignored: gRPC's C core writes what it asks for (call metadata, seat "
            "tokens and API keys included) to stderr, past the log's redaction",
            name,
            value,
        )


def log_handler(
    form: str, secrets: Iterable[str] = (), stream: TextIO | None = None
) -> logging.Handler:
    """The process's one log handler (to ``stream``, stderr by default): the
    ``form``'s formatter, and the filter that redacts secrets."""
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactSecrets(secrets))
    if form == "json":
        handler.setFormatter(JsonLogFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    return handler


def through_root(loggers: Iterable[logging.Logger] | None = None) -> None:
    """Send the records of ``loggers`` (by default every logger created so
    far) to the root logger's handler alone: a library's own handlers are
    removed, and the logger made to propagate to the root. A NullHandler,
    which writes nothing, is kept, and so is a logger's choice not to
    propagate where it has no handler to lose (uvicorn's disabled access
    log): its warnings reach logging's last resort, which configure_logging
    points at the same filter."""
    if loggers is None:
        loggers = [
            logger
            for logger in list(logging.root.manager.loggerDict.values())
            # (not a PlaceHolder: a name under which no logger was created yet)
            if isinstance(logger, logging.Logger)
        ]
    for logger in loggers:
        writers = [h for h in logger.handlers if not isinstance(h, logging.NullHandler)]
        for writer in writers:
            logger.removeHandler(writer)
        if writers:
            logger.propagate = True
