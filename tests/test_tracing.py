"""OpenTelemetry (service/ops/tracing.py, service/ops/telemetry.py): one ApplyMove over
each transport, on a real service over a real Redis, is a server span in the
caller's trace (the ``traceparent`` it sent) with the game, seat and move, and
child spans for its store calls with their outcomes; a refused move's span
names the rule; the metrics reach an in-memory reader as they reach /metrics.
Export is configured by the OTEL_* environment only."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf import json_format
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from railyard_api import game_service_pb2 as pb
from railyard_api import game_service_pb2_grpc as pb_grpc
from service.app import GameApp
from service.ops import tracing
from service.settings import Settings
from service.store.memory import MemoryStore
from service.store.redis import RedisStore
from service.transports.grpc.server import create_grpc_server
from tests.service_helpers import bearer, expect_error
from tests.test_service_e2e import http_server
from tests.test_telemetry import samples, value

RULES = pb.Ruleset(set_max=6, hand_size=7, rounds=1)
APPLY_MOVE = "/railyard.v1.GameService/ApplyMove"
HTTP_APPLY_MOVE = "POST /v1/games/{gameId}/moves"


@dataclass
class Traced:
    """A service traced into memory, with clients for both transports."""

    app: GameApp
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    stub: pb_grpc.GameServiceAsyncStub
    http: httpx.AsyncClient

    def finished(self) -> Sequence[ReadableSpan]:
        return self.spans.get_finished_spans()


@asynccontextmanager
async def traced_service(redis_url: str) -> AsyncIterator[Traced]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    store = RedisStore(redis_url)
    app = GameApp(
        store,
        Settings(rate_limit=0, bot_processes=0),
        tracer_provider=provider,
        metric_readers=[reader],
    )
    server, port = create_grpc_server(app, "127.0.0.1", 0)
    await server.start()
    try:
        async with (
            grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel,
            http_server(app) as base,
            httpx.AsyncClient(base_url=base) as http,
        ):
            yield Traced(app, spans, reader, pb_grpc.GameServiceStub(channel), http)
    finally:
        await server.stop(None)
        app.close()
        await store.close()
        provider.shutdown()


def caller_trace() -> tuple[int, int, str]:
    """A trace id and span id of the caller's, and the traceparent naming them."""
    trace_id = secrets.randbits(128) | 1
    span_id = secrets.randbits(64) | 1
    return trace_id, span_id, f"00-{trace_id:032x}-{span_id:016x}-01"


async def new_game(service: Traced) -> tuple[str, dict[int, str], int, pb.Move]:
    """A two-person game: its id, the seats' tokens, who moves, and a legal move."""
    created = await service.stub.CreateGame(
        pb.CreateGameRequest(ruleset=RULES, seed=secrets.token_hex(4), players=[pb.Player()] * 2)
    )
    tokens = {seat.seat: seat.token for seat in created.seats}
    mover = created.game.current_seat
    legal = await service.stub.ListLegalMoves(
        pb.ListLegalMovesRequest(game_id=created.game.game_id), metadata=bearer(tokens[mover])
    )
    return created.game.game_id, tokens, mover, legal.moves[0].move


def server_span(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    found = [s for s in spans if s.kind is SpanKind.SERVER and s.name == name]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def check_move_trace(
    spans: Sequence[ReadableSpan],
    name: str,
    trace_id: int,
    parent_id: int,
    game_id: str,
    seat: int,
    kind: str,
) -> None:
    """A server span in the caller's trace, with the move's attributes, and a
    child span for each of its store calls (a load and a commit, both ok)."""
    server = server_span(spans, name)
    assert server.context is not None
    assert server.context.trace_id == trace_id
    assert server.parent is not None
    assert server.parent.span_id == parent_id
    assert server.parent.is_remote
    attributes = dict(server.attributes or {})
    assert attributes[tracing.GAME_ID] == game_id
    assert attributes[tracing.SEAT] == seat
    assert attributes[tracing.MOVE_KIND] == kind
    assert server.status.status_code is not StatusCode.ERROR
    children = [
        s for s in spans if s.parent is not None and s.parent.span_id == server.context.span_id
    ]
    by_name = {s.name: s for s in children}
    assert {"store.load", "store.commit"} <= by_name.keys(), sorted(by_name)
    for child in children:
        assert child.kind is SpanKind.CLIENT
        assert child.context is not None
        assert child.context.trace_id == trace_id
        assert (child.attributes or {})[tracing.GAME_ID] == game_id
        assert (child.attributes or {})[tracing.STORE_OUTCOME] == "ok"
        assert (child.attributes or {})[tracing.STORE_NAME] == "redis"


def test_a_grpc_move_is_a_server_span_in_the_callers_trace_with_store_spans(
    redis_url: str,
) -> None:
    async def go() -> None:
        async with traced_service(redis_url) as service:
            game_id, tokens, mover, move = await new_game(service)
            service.spans.clear()
            trace_id, parent_id, traceparent = caller_trace()
            await service.stub.ApplyMove(
                pb.ApplyMoveRequest(game_id=game_id, move=move),
                metadata=(*bearer(tokens[mover]), ("traceparent", traceparent)),
            )
            kind = move.WhichOneof("action")
            assert kind is not None
            check_move_trace(
                service.finished(), APPLY_MOVE, trace_id, parent_id, game_id, mover, kind
            )

    asyncio.run(go())


def test_an_http_move_is_a_server_span_in_the_callers_trace_with_store_spans(
    redis_url: str,
) -> None:
    async def go() -> None:
        async with traced_service(redis_url) as service:
            game_id, tokens, mover, move = await new_game(service)
            service.spans.clear()
            trace_id, parent_id, traceparent = caller_trace()
            kind = move.WhichOneof("action")
            assert kind is not None
            body = {"move": json_format.MessageToDict(move)}
            response = await service.http.post(
                f"/v1/games/{game_id}/moves",
                json=body,
                headers={"authorization": f"Bearer {tokens[mover]}", "traceparent": traceparent},
            )
            assert response.status_code == 200, response.text
            spans = service.finished()
            check_move_trace(spans, HTTP_APPLY_MOVE, trace_id, parent_id, game_id, mover, kind)
            server = server_span(spans, HTTP_APPLY_MOVE)
            attributes = dict(server.attributes or {})
            assert attributes["http.route"] == "/v1/games/{gameId}/moves"
            assert attributes["railyard.operation"] == "ApplyMove"

    asyncio.run(go())


def test_a_refused_move_names_its_rule_on_the_server_span(redis_url: str) -> None:
    async def go() -> None:
        async with traced_service(redis_url) as service:
            game_id, tokens, mover, _ = await new_game(service)
            # Ending a turn that was never a chain first turn breaks MT-FT-1
            # (whatever the deal): the same refusal over both transports.
            end_turn = pb.Move(end_turn=pb.Move.EndTurn())
            service.spans.clear()
            _, reason, metadata = await expect_error(
                lambda: service.stub.ApplyMove(
                    pb.ApplyMoveRequest(game_id=game_id, move=end_turn),
                    metadata=bearer(tokens[mover]),
                )
            )
            assert reason == "ILLEGAL_MOVE"
            assert metadata["rule"]
            response = await service.http.post(
                f"/v1/games/{game_id}/moves",
                json={"move": {"endTurn": {}}},
                headers={"authorization": f"Bearer {tokens[mover]}"},
            )
            assert response.status_code == 400
            spans = service.finished()
            for name in (APPLY_MOVE, HTTP_APPLY_MOVE):
                attributes = dict(server_span(spans, name).attributes or {})
                assert attributes[tracing.RULE_ID] == metadata["rule"]
                assert attributes[tracing.ERROR_REASON] == "ILLEGAL_MOVE"
                assert attributes[tracing.REFUSAL_DETAIL] == metadata["detail"]
                assert attributes[tracing.MOVE_KIND] == "end_turn"
                assert attributes[tracing.SEAT] == mover
            # Loaded, judged, refused: nothing was committed.
            assert not [s for s in spans if s.name == "store.commit"]

    asyncio.run(go())


def test_store_spans_say_what_the_store_answered(redis_server: Any, redis_url: str) -> None:
    async def go() -> None:
        async with traced_service(redis_url) as service:
            game_id, tokens, mover, move = await new_game(service)
            service.spans.clear()
            missing = "0" * 20
            code, _, _ = await expect_error(
                lambda: service.stub.GetGame(pb.GetGameRequest(game_id=missing))
            )
            assert code is grpc.StatusCode.NOT_FOUND
            loads = [s for s in service.finished() if s.name == "store.load"]
            assert [(s.attributes or {})[tracing.STORE_OUTCOME] for s in loads] == ["not_found"]
            # A move against a stale version: refused before any commit.
            service.spans.clear()
            _, reason, _ = await expect_error(
                lambda: service.stub.ApplyMove(
                    pb.ApplyMoveRequest(game_id=game_id, move=move, expected_version=7),
                    metadata=bearer(tokens[mover]),
                )
            )
            assert reason == "VERSION_MISMATCH"
            server = server_span(service.finished(), APPLY_MOVE)
            assert (server.attributes or {})[tracing.ERROR_REASON] == "VERSION_MISMATCH"
            # A refusal is the caller's error, not the server's (OpenTelemetry's
            # conventions for a server span).
            assert server.status.status_code is StatusCode.UNSET

            # The store down: its span says so, with the exception; the call's
            # span is an error of the server's.
            redis_server.stop()
            try:
                service.spans.clear()
                code, reason, _ = await expect_error(
                    lambda: service.stub.GetGame(pb.GetGameRequest(game_id=game_id))
                )
                assert (code, reason) == (grpc.StatusCode.UNAVAILABLE, "STORE_UNAVAILABLE")
                spans = service.finished()
                (load,) = [s for s in spans if s.name == "store.load"]
                assert (load.attributes or {})[tracing.STORE_OUTCOME] == "unavailable"
                assert load.status.status_code is StatusCode.ERROR
                assert [e.name for e in load.events] == ["exception"]
                server = server_span(spans, "/railyard.v1.GameService/GetGame")
                assert server.status.status_code is StatusCode.ERROR
                assert (server.attributes or {})[tracing.ERROR_REASON] == "STORE_UNAVAILABLE"
            finally:
                redis_server.start()

    asyncio.run(go())


def test_metrics_reach_an_in_memory_reader_and_metrics_shows_the_process(
    redis_url: str,
) -> None:
    async def go() -> None:
        async with traced_service(redis_url) as service:
            game_id, tokens, mover, move = await new_game(service)
            await service.stub.ApplyMove(
                pb.ApplyMoveRequest(game_id=game_id, move=move), metadata=bearer(tokens[mover])
            )
            data = service.metrics.get_metrics_data()
            assert data is not None
            points: dict[str, list[Any]] = {}
            for resource_metrics in data.resource_metrics:
                for scope in resource_metrics.scope_metrics:
                    for metric in scope.metrics:
                        points[metric.name] = list(metric.data.data_points)
            moves = {
                dict(p.attributes)["player"]: p.value for p in points["railyard_moves_applied"]
            }
            assert moves["person"] == 1
            assert "process.cpu.time" in points
            page = await service.http.get("/metrics")
        found = samples(page.text)
        assert value(found, "railyard_moves_applied_total", player="person") == 1
        assert value(found, "railyard_grpc_requests_total", method="ApplyMove", code="OK") == 1
        assert value(found, "railyard_games_created_total") == 1
        assert value(found, "process_cpu_time_seconds_total", cpu_mode="user") > 0
        assert value(found, "process_memory_usage_bytes") > 1_000_000
        assert value(found, "cpython_gc_collections_total", cpython_gc_generation="0") >= 0
        assert ("cpython_gc_collections_total", (("cpython_gc_generation", "2"),)) in found

    asyncio.run(go())


def test_several_apps_in_one_process_keep_their_own_metrics() -> None:
    one = GameApp(MemoryStore(), Settings(bot_processes=0))
    two = GameApp(MemoryStore(), Settings(bot_processes=0))
    one.metrics.person_moves.inc()
    assert (
        value(
            samples(one.metrics.exposition().decode()),
            "railyard_moves_applied_total",
            player="person",
        )
        == 1
    )
    assert (
        value(
            samples(two.metrics.exposition().decode()),
            "railyard_moves_applied_total",
            player="person",
        )
        == 0
    )
    one.close()
    two.close()


def test_untraced_apps_install_nothing() -> None:
    store = MemoryStore()
    app = GameApp(store, Settings(bot_processes=0))
    assert app.tracer_provider is None
    assert app.store is store  # no wrapper around each store call
    app.close()


@pytest.mark.parametrize(
    ("environ", "exporters"),
    [
        ({}, None),
        ({"OTEL_SERVICE_NAME": "x"}, None),
        ({"OTEL_TRACES_EXPORTER": "none"}, None),
        ({"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}, None),
        ({"OTEL_TRACES_EXPORTER": "console"}, ["ConsoleSpanExporter"]),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, ["OTLPSpanExporter"]),
        (
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
            ["OTLPSpanExporter"],
        ),
    ],
)
def test_export_is_configured_by_the_otel_environment(
    environ: dict[str, str], exporters: list[str] | None
) -> None:
    provider = tracing.tracer_provider_from_env(environ)
    if exporters is None:
        assert provider is None
        return
    assert provider is not None
    processors = provider._active_span_processor._span_processors
    names = [type(p._batch_processor._exporter).__name__ for p in processors]  # type: ignore[attr-defined]
    assert names == exporters
    module = type(processors[0]._batch_processor._exporter).__module__  # type: ignore[attr-defined]
    if environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") == "http/protobuf":
        assert ".http." in module
    assert provider.resource.attributes["service.name"] == "railyard"
    provider.shutdown()


def test_the_environment_names_the_service_and_bad_exporters() -> None:
    named = tracing.tracer_provider_from_env(
        {"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "table-eu"}
    )
    assert named is not None
    assert named.resource.attributes["service.name"] == "table-eu"
    named.shutdown()
    with pytest.raises(ValueError, match="'zipkin'"):
        tracing.tracer_provider_from_env({"OTEL_TRACES_EXPORTER": "zipkin"})
    with pytest.raises(ValueError, match="'http/json'"):
        tracing.tracer_provider_from_env(
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
        )
    assert tracing.metric_readers_from_env({"OTEL_METRICS_EXPORTER": "prometheus"}) == []
    (reader,) = tracing.metric_readers_from_env({"OTEL_METRICS_EXPORTER": "console"})
    reader.shutdown()
