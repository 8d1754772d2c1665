"""ApplyMove and GetGame, the calls of every turn, are ordinary routes of the
app (service.http_server.DirectRoute): one implementation each, reached
through the same stack as every other route (CORS, metrics, exception
handlers, tracing), never past it."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from service.app import GameApp
from service.http_server import DirectRoute, create_http_app, games
from service.settings import Settings
from service.store.memory import MemoryStore
from tests.test_telemetry import samples, value

GAME = "/v1/games"
ORIGIN = "https://table.example"


def test_each_turn_operation_has_one_route() -> None:
    app = GameApp(MemoryStore(), Settings(bot_processes=0))
    api = create_http_app(app)
    routes = [*api.routes, *games.routes]
    for operation in ("GetGame", "ApplyMove"):
        found = [r for r in routes if getattr(r, "operation_id", None) == operation]
        assert len(found) == 1
        assert isinstance(found[0], DirectRoute)
    app.close()


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

    async def get_game_json(self, game_id: str, caller: Any) -> dict[str, Any]:
        raise RuntimeError("a bug in the view")


def test_a_turn_route_that_fails_answers_500_as_every_route_does(caplog: Any) -> None:
    """A turn route's unexpected exception goes to the app's own handler: a
    Status body (INTERNAL, no traceback), logged, counted as 500; a method the
    turn path does not take goes to FastAPI (405)."""

    async def go() -> None:
        app = FailingApp(MemoryStore(), Settings(bot_processes=0))
        api = create_http_app(app)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=api), base_url="http://t"
        ) as http:
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
