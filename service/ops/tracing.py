"""OpenTelemetry tracing: a server span per call on both transports, child
spans around every store call, the caller's W3C ``traceparent`` honoured.

Tracing is on for a :class:`~service.app.GameApp` when it is given an SDK
``TracerProvider`` (the tests, with an in-memory exporter) or when the
process has one (:func:`configure_from_env`, which ``railyard serve`` calls
once). Off, nothing is installed: no middleware, no interceptor, no store
wrapper, and the attribute calls below stop at ``is_recording()``.

Export is configured only by the standard ``OTEL_*`` environment variables
(OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, the
OTEL_BSP_* batch settings, OTEL_TRACES_SAMPLER, ...). With none set, nothing
is exported. Exporters are found by name through the entry points the
OpenTelemetry packages register, as the SDK's own auto-configuration does.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from importlib.metadata import entry_points
from typing import Any, Final

from opentelemetry import trace
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode

from service.app.errors import ServiceError
from service.store import (
    Commit,
    GameExistsError,
    GameRecord,
    OutcomeUnknownError,
    Store,
    StoredEvent,
    StoreUnavailableError,
)

# ------------------------------------------------------------------ attributes

GAME_ID: Final = "railyard.game.id"
SEAT: Final = "railyard.seat"
#: play, draw, pass, end_turn (the ApplyMove request's ``move`` oneof).
MOVE_KIND: Final = "railyard.move.kind"
#: The ErrorInfo reason of a refused call (NOT_YOUR_TURN, ILLEGAL_MOVE, ...).
ERROR_REASON: Final = "railyard.error.reason"
#: The rule a refused move broke (RULES.md's id, e.g. MT-PLAY-1).
RULE_ID: Final = "railyard.rule.id"
#: The engine's own word for why (metadata["detail"]).
REFUSAL_DETAIL: Final = "railyard.refusal.detail"
#: ok, version_mismatch, not_found, unavailable, outcome_unknown, game_exists.
STORE_OUTCOME: Final = "railyard.store.outcome"
STORE_NAME: Final = "railyard.store.name"

#: The service name when OTEL_SERVICE_NAME (or service.name in
#: OTEL_RESOURCE_ATTRIBUTES) does not give one.
SERVICE_NAME: Final = "railyard"


#: Whether any app of this process traces (:func:`active_provider` said so):
#: until one does, no span records, and :func:`note` looks for none (a
#: context lookup a call, three calls a move).
_tracing = False


def tracing_on() -> bool:
    """Whether any app of this process traces (spans may be recording)."""
    return _tracing


def note(attributes: Mapping[str, str | int]) -> None:
    """Set ``attributes`` on the current span (the call's server span), when
    one is recording: a call that is not traced pays one check."""
    if not _tracing:
        return
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attributes(attributes)


def note_error(error: ServiceError) -> None:
    """What the server span of a refused or failed call says about it: the
    reason, and the rule and detail of a refused move. Its status is ERROR
    only for a failure of the service (5xx), as OpenTelemetry's conventions
    for servers say: a refusal is the caller's error, not the server's."""
    span = trace.get_current_span()
    if not span.is_recording():
        return
    span.set_attribute(ERROR_REASON, error.reason)
    span.set_attribute("error.type", error.reason)
    rule = error.metadata.get("rule")
    if rule:
        span.set_attribute(RULE_ID, rule)
    detail = error.metadata.get("detail")
    if detail:
        span.set_attribute(REFUSAL_DETAIL, detail)
    if error.http_status >= 500:
        span.set_status(Status(StatusCode.ERROR, f"{error.reason}: {error.message}"))


def active_provider(given: trace.TracerProvider | None) -> trace.TracerProvider | None:
    """The provider an app traces with: ``given``, else the process's when one
    was set (an SDK provider); None: tracing is off."""
    global _tracing
    current = given if given is not None else trace.get_tracer_provider()
    if given is None and not isinstance(current, TracerProvider):
        return None
    _tracing = True
    return current


def grpc_server_interceptor(provider: trace.TracerProvider) -> Any:
    """OpenTelemetry's own grpc.aio server interceptor: a server span per
    call named for its method, in the trace its ``traceparent`` metadata
    names, with the ``rpc.*`` attributes and the status code."""
    from opentelemetry.instrumentation.grpc import aio_server_interceptor

    return aio_server_interceptor(tracer_provider=provider)  # type: ignore[no-untyped-call]


# ------------------------------------------------------------------ the store


class TracedStore:
    """A :class:`~service.store.Store` whose every call is a client span
    (``store.<call>``) under the current one, with its game id and outcome.
    Exceptions are recorded on the span and its status set to ERROR."""

    def __init__(self, store: Store, tracer: trace.Tracer) -> None:
        self.inner = store
        self.name = store.name
        self._tracer = tracer

    async def _traced(
        self,
        call: str,
        game_id: str | None,
        run: Callable[[], Awaitable[Any]],
        outcome: Callable[[Any], str],
    ) -> Any:
        attributes: dict[str, str] = {STORE_NAME: self.name, "db.operation.name": call}
        if game_id is not None:
            attributes[GAME_ID] = game_id
        with self._tracer.start_as_current_span(
            f"store.{call}", kind=SpanKind.CLIENT, attributes=attributes
        ) as span:
            try:
                result = await run()
            except OutcomeUnknownError:
                span.set_attribute(STORE_OUTCOME, "outcome_unknown")
                raise
            except StoreUnavailableError:
                span.set_attribute(STORE_OUTCOME, "unavailable")
                raise
            except GameExistsError:
                span.set_attribute(STORE_OUTCOME, "game_exists")
                raise
            span.set_attribute(STORE_OUTCOME, outcome(result))
            return result

    async def create(
        self,
        record: GameRecord,
        events: Sequence[StoredEvent],
        request_key: str | None,
        response: bytes | None,
    ) -> bytes | None:
        result: bytes | None = await self._traced(
            "create",
            record.game_id,
            lambda: self.inner.create(record, events, request_key, response),
            lambda remembered: "ok" if remembered is None else "remembered",
        )
        return result

    async def load(self, game_id: str) -> GameRecord | None:
        result: GameRecord | None = await self._traced(
            "load", game_id, lambda: self.inner.load(game_id), _found
        )
        return result

    async def commit(
        self,
        game_id: str,
        expected_version: int,
        version: int,
        state: bytes,
        events: Sequence[StoredEvent],
        request_key: str | None,
        response: bytes | None,
        deadline_ms: int = 0,
        *,
        rev: int = 0,
        meta: bytes | None = None,
    ) -> Commit:
        result: Commit = await self._traced(
            "commit",
            game_id,
            lambda: self.inner.commit(
                game_id,
                expected_version,
                version,
                state,
                events,
                request_key,
                response,
                deadline_ms,
                rev=rev,
                meta=meta,
            ),
            lambda committed: str(committed.value),
        )
        return result

    async def recall(self, game_id: str, request_key: str) -> bytes | None:
        result: bytes | None = await self._traced(
            "recall", game_id, lambda: self.inner.recall(game_id, request_key), _found
        )
        return result

    async def read_events(self, game_id: str, after_version: int) -> list[StoredEvent]:
        result: list[StoredEvent] = await self._traced(
            "read_events", game_id, lambda: self.inner.read_events(game_id, after_version), _ok
        )
        return result

    async def wait_events(
        self, game_id: str, after: tuple[int, int], timeout: float
    ) -> list[StoredEvent]:
        result: list[StoredEvent] = await self._traced(
            "wait_events", game_id, lambda: self.inner.wait_events(game_id, after, timeout), _ok
        )
        return result

    async def take(self, key: str, rate: float, burst: int) -> float:
        result: float = await self._traced(
            "take", None, lambda: self.inner.take(key, rate, burst), _ok
        )
        return result

    async def ping(self) -> None:
        await self._traced("ping", None, self.inner.ping, _ok)

    async def close(self) -> None:
        await self.inner.close()

    def __getattr__(self, name: str) -> Any:
        """Any other call of the store (one added to the protocol later), in a
        span of its name: every store call is traced without a method here."""
        found = getattr(self.inner, name)
        if not inspect.iscoroutinefunction(found):
            return found

        async def traced(*args: Any, **kwargs: Any) -> Any:
            game_id = args[0] if name in _GAME_FIRST and args else None
            return await self._traced(name, game_id, lambda: found(*args, **kwargs), _ok)

        return traced


#: The store calls (reached through ``__getattr__``) whose first argument is a game id.
_GAME_FIRST: Final = frozenset({"schedule", "renew", "release"})


def _found(result: object) -> str:
    return "not_found" if result is None else "ok"


def _ok(result: object) -> str:
    return "ok"


def traced_store(store: Store, provider: trace.TracerProvider | None) -> Store:
    """``store`` with its calls traced by ``provider``; untouched when tracing
    is off (None), so an untraced app pays nothing per store call."""
    if provider is None:
        return store
    return TracedStore(store, provider.get_tracer("railyard.store"))


# ------------------------------------------------------------------ the process


def _names(environ: Mapping[str, str], variable: str) -> list[str]:
    return [name.strip() for name in environ.get(variable, "").split(",") if name.strip()]


def _load_exporter(group: str, name: str, environ: Mapping[str, str], signal: str) -> Any:
    """The exporter registered as ``name`` in entry point ``group``; "otlp"
    is the gRPC or HTTP one, by OTEL_EXPORTER_OTLP_[<SIGNAL>_]PROTOCOL (grpc
    unless it says http/protobuf, as the Python SDK's own default)."""
    if name == "otlp":
        protocol = environ.get(
            f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL", environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "")
        ).strip()
        if protocol in ("", "grpc"):
            name = "otlp_proto_grpc"
        elif protocol == "http/protobuf":
            name = "otlp_proto_http"
        else:
            raise ValueError(
                f"OTEL_EXPORTER_OTLP_PROTOCOL {protocol!r} is not served: use grpc or http/protobuf"
            )
    found = list(entry_points(group=group, name=name))
    if not found:
        known = sorted(point.name for point in entry_points(group=group))
        raise ValueError(
            f"no {signal.lower()} exporter is called {name!r} (installed: {', '.join(known)})"
        )
    return found[0].load()()


def resource_from_env(environ: Mapping[str, str] = os.environ) -> Resource:
    """The process's resource: OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME,
    with ``railyard`` as the service name when neither gives one."""
    # (Resource.create reads the process's environment itself; the name is
    # passed from ``environ`` so that a given mapping decides it.)
    name = environ.get("OTEL_SERVICE_NAME", "").strip()
    if not name and "service.name=" in environ.get("OTEL_RESOURCE_ATTRIBUTES", ""):
        return Resource.create()
    return Resource.create({"service.name": name or SERVICE_NAME})


def tracer_provider_from_env(environ: Mapping[str, str] = os.environ) -> TracerProvider | None:
    """A TracerProvider exporting where the environment says, or None when it
    asks for nothing: OTEL_TRACES_EXPORTER unset (or ``none``) and no OTLP
    endpoint given, or OTEL_SDK_DISABLED=true. An endpoint alone means OTLP.
    ValueError names an exporter or protocol that is not installed."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    names = _names(environ, "OTEL_TRACES_EXPORTER")
    endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    if not names and endpoint:
        names = ["otlp"]
    names = [name for name in names if name != "none"]
    if not names:
        return None
    # The sampler comes from OTEL_TRACES_SAMPLER (the SDK reads it).
    provider = TracerProvider(resource=resource_from_env(environ))
    for name in names:
        exporter = _load_exporter("opentelemetry_traces_exporter", name, environ, "TRACES")
        # OTEL_BSP_* size and time the batches; spans leave off the request path.
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def metric_readers_from_env(environ: Mapping[str, str] = os.environ) -> list[MetricReader]:
    """Readers pushing the metrics where OTEL_METRICS_EXPORTER says (every
    OTEL_METRIC_EXPORT_INTERVAL ms), besides /metrics, which is always served
    (``prometheus`` and ``none`` add nothing)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    readers: list[MetricReader] = []
    for name in _names(environ, "OTEL_METRICS_EXPORTER"):
        if name in ("none", "prometheus"):
            continue
        exporter = _load_exporter("opentelemetry_metrics_exporter", name, environ, "METRICS")
        readers.append(PeriodicExportingMetricReader(exporter))
    return readers


def configure_from_env(environ: Mapping[str, str] = os.environ) -> list[MetricReader]:
    """Once per process, before its GameApp: the process's TracerProvider
    from the environment (if it asks for one), and the metric readers it
    asks for (hand them to the GameApp)."""
    provider = tracer_provider_from_env(environ)
    if provider is not None:
        trace.set_tracer_provider(provider)
    return metric_readers_from_env(environ)


def shutdown() -> None:
    """Flush and stop the process's TracerProvider, if it has one."""
    provider = trace.get_tracer_provider()
    if isinstance(provider, TracerProvider):
        provider.shutdown()
