"""One path per route: every (method, path) of the HTTP app is served by one
route of Starlette's router, found through its mounts, and the calls of
every turn (GetGame, ApplyMove) are ordinary routes of the games group that
answer through the app's whole stack (CORS, metrics, exception handlers)
like every other; and a call is one server span, the service's."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from railyard_api import game_service_pb2 as pb
from service.app import GameApp
from service.settings import Settings
from service.store.memory import MemoryStore
from service.transports.http import server as http_server
from service.transports.http.server import RailyardAPI, create_http_app, games
from tests.test_telemetry import samples, value

GAME = "/v1/games"
ORIGIN = "https://table.example"


def served(routes: Sequence[BaseRoute], prefix: str = "") -> Iterator[tuple[str, str, Any]]:
    """(method, path, route) for every route of ``routes``, through mounts; a
    mount of something other than routes (static files) answers any method
    under its path ("*"), and so does any other kind of route."""
    for route in routes:
        if isinstance(route, Mount):
            inner = getattr(route.app, "routes", None)
            if inner is None:
                yield "*", prefix + route.path, route
            else:
                yield from served(inner, prefix + route.path)
        elif isinstance(route, Route):
            for method in sorted(route.methods or {"*"}):
                yield method, prefix + route.path, route
        else:
            yield "*", prefix + getattr(route, "path", ""), route


def test_each_method_and_path_has_one_route() -> None:
    app = GameApp(MemoryStore(), Settings(bot_processes=0))
    api = create_http_app(app)
    found = list(served(api.routes))
    counts = Counter((method, path) for method, path, _ in found)
    assert [key for key, n in counts.items() if n > 1] == []
    by_operation = {getattr(route, "name", None): route for _, _, route in found}
    # Every RPC of API.md is a route, the turn calls on the games router.
    for operation in ("CreateGame", "GetGame", "ListLegalMoves", "ApplyMove", "WatchGame"):
        assert operation in by_operation, operation
    for operation in ("GetGame", "ApplyMove"):
        assert by_operation[operation] in games.routes
    assert ("GET", "/v1/games/{gameId}") in counts
    assert ("POST", "/v1/games/{gameId}/moves") in counts
    app.close()


def test_no_dispatcher_beside_the_router() -> None:
    """Nothing answers a request but Starlette's router: the app adds no
    routing of its own, and a request of every turn passes the middleware
    stack (a middleware added to it sees it) and is matched to its route there."""
    assert [n for n in vars(RailyardAPI) if "direct" in n.lower()] == []
    assert [n for n in vars(http_server) if "direct" in n.lower()] == []

    seen: list[tuple[str, str, Any]] = []

    class Seen:
        def __init__(self, inner: ASGIApp) -> None:
            self.inner = inner

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            await self.inner(scope, receive, send)
            if scope["type"] == "http":
                seen.append((scope["method"], scope["path"], scope.get("route")))

    async def go() -> None:
        app = GameApp(MemoryStore(), Settings(bot_processes=0))
        api = create_http_app(app)
        api.add_middleware(Seen)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=api), base_url="http://t"
        ) as http:
            created = await http.post(GAME, json={"players": [{}, {}], "seed": "routes"})
            game_id = created.json()["game"]["gameId"]
            token = created.json()["seats"][created.json()["game"].get("currentSeat", 0)]["token"]
            auth = {"authorization": f"Bearer {token}"}
            assert (await http.get(f"{GAME}/{game_id}", headers=auth)).status_code == 200
            moved = await http.post(f"{GAME}/{game_id}/moves", headers=auth, json={"move": {}})
            assert moved.status_code == 400  # a move with no action: the app's refusal
        routes = {(method, path): route for method, path, route in seen}
        assert routes[("GET", f"{GAME}/{game_id}")].name == "GetGame"
        assert routes[("POST", f"{GAME}/{game_id}/moves")].name == "ApplyMove"
        app.close()

    asyncio.run(go())


def test_turn_routes_pass_the_whole_stack() -> None:
    async def go() -> None:
        app = GameApp(MemoryStore(), Settings(cors_origins=ORIGIN, bot_processes=0))
        api = create_http_app(app)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=api), base_url="http://t"
        ) as http:
            created = await http.post(
                GAME, json={"players": [{}, {}], "seed": "hot", "ruleset": {"setMax": 9}}
            )
            game_id = created.json()["game"]["gameId"]
            tokens = [s["token"] for s in created.json()["seats"]]
            moves = f"{GAME}/{game_id}/moves"
            mover = created.json()["game"].get("currentSeat", 0)
            auth = [{"authorization": f"Bearer {t}", "origin": ORIGIN} for t in tokens]

            # CORS: a preflight and the answer's headers, on both turn routes.
            preflight = await http.options(
                moves,
                headers={
                    "origin": ORIGIN,
                    "access-control-request-method": "POST",
                    "access-control-request-headers": "authorization,content-type",
                },
            )
            assert preflight.status_code == 200
            assert preflight.headers["access-control-allow-origin"] == ORIGIN
            view = await http.get(f"{GAME}/{game_id}", headers=auth[0])
            assert view.status_code == 200
            assert view.headers["access-control-allow-origin"] == ORIGIN

            # Refusals come from the app's exception handlers: Status bodies.
            refused = await http.post(moves, headers=auth[1 - mover], json={"move": {"draw": {}}})
            assert refused.status_code == 400
            assert refused.json()["details"][0]["reason"] == "NOT_YOUR_TURN"
            assert refused.headers["access-control-allow-origin"] == ORIGIN
            broken = await http.post(moves, headers=auth[mover], content=b"{")
            assert broken.status_code == 400
            assert broken.json()["details"][0]["reason"] == "INVALID_ARGUMENT"
            missing = await http.get(f"{GAME}/{'0' * 20}")
            assert missing.json()["details"][0]["reason"] == "GAME_NOT_FOUND"
            # A path beside the route is no route (no redirect, no 405).
            assert (await http.get(f"{GAME}/{game_id}/")).status_code == 404

            # Counted by operation, as every route.
            legal = await http.get(f"{GAME}/{game_id}/legal-moves", headers=auth[mover])
            move = legal.json()["moves"][0]["move"]
            applied = await http.post(moves, headers=auth[mover], json={"move": move})
            assert applied.status_code == 200
            found = samples((await http.get("/metrics")).text)
        calls = "railyard_http_requests_total"
        assert value(found, calls, operation="GetGame", status="200") == 1
        assert value(found, calls, operation="GetGame", status="404") == 1
        assert value(found, calls, operation="ApplyMove", status="400") == 2
        assert value(found, calls, operation="ApplyMove", status="200") == 1
        app.close()

    asyncio.run(go())


def test_a_client_gone_before_its_body_gets_no_answer() -> None:
    async def go() -> None:
        app = GameApp(MemoryStore(), Settings(bot_processes=0))
        api = create_http_app(app)
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "method": "POST",
            "path": "/v1/games/abc/moves",
            "raw_path": b"/v1/games/abc/moves",
            "query_string": b"",
            "headers": [(b"authorization", b"Bearer t")],
            "client": ("127.0.0.1", 1),
        }
        await api(scope, receive, send)
        assert sent == []
        found = samples(app.metrics.exposition().decode())
        assert value(found, "railyard_http_requests_total", operation="ApplyMove", status="499")
        app.close()

    asyncio.run(go())


class FailingApp(GameApp):
    """An app whose view fails as a bug would (not a ServiceError)."""

    async def get_game(self, game_id: str, caller: Any) -> pb.GameView:
        raise RuntimeError("a bug in the view")


def test_a_turn_route_that_fails_answers_500_as_every_route_does(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A turn route's unexpected exception goes to the app's own handler: a
    Status body (INTERNAL, no traceback), logged, counted as 500; a method the
    turn path does not take is the router's 405."""

    async def go() -> None:
        app = FailingApp(MemoryStore(), Settings(bot_processes=0))
        api = create_http_app(app)
        # (Starlette raises the exception again once answered, for the server
        # to log, as for every route: test_http's generic 500.)
        transport = httpx.ASGITransport(app=api, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            failed = await http.get(f"{GAME}/{'0' * 20}")
            assert failed.status_code == 500
            assert failed.json()["details"][0]["reason"] == "INTERNAL"
            assert "bug" not in failed.text
            assert (await http.put(f"{GAME}/{'0' * 20}")).status_code == 405
            found = samples((await http.get("/metrics")).text)
        assert value(found, "railyard_http_requests_total", operation="GetGame", status="500") == 1
        app.close()

    asyncio.run(go())
    assert any("a bug in the view" in str(r.exc_info) for r in caplog.records if r.exc_info)


def test_an_http_call_is_one_server_span(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a tracer provider configured for the process, a call is the one
    server span of service.ops.tracing, whatever its route."""
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    # The process's provider, as configure_from_env sets it (set_tracer_provider
    # takes one per process, so it is read through the getter here).
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)

    async def go() -> None:
        app = GameApp(MemoryStore(), Settings(bot_processes=0))
        api = create_http_app(app)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=api), base_url="http://t"
        ) as http:
            assert (await http.get("/v1/rulesets")).status_code == 200
            assert (await http.get(f"{GAME}/{'0' * 20}")).status_code == 404
        app.close()

    asyncio.run(go())
    server = [s.name for s in spans.get_finished_spans() if s.kind is SpanKind.SERVER]
    assert server == ["GET /v1/rulesets", "GET /v1/games/{gameId}"]
