"""ApplyMove and GetGame are served straight from the ASGI scope (the "hot
routes" of RailyardAPI), past FastAPI's routing. Their answers must be those
of the FastAPI routes they shadow: every request here is sent both ways and
the status, content type, Retry-After and body bytes compared."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

from service.app import GameApp
from service.http_server import RailyardAPI, create_http_app, hot_route
from service.settings import Settings
from service.store.memory import MemoryStore

GAME = "/v1/games"


def _routed(api: FastAPI) -> Any:
    """``api`` with the hot routes switched off: FastAPI routes everything."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await FastAPI.__call__(api, scope, receive, send)

    return app


def _same(a: httpx.Response, b: httpx.Response) -> None:
    assert (a.status_code, a.content) == (b.status_code, b.content)
    for header in ("content-type", "retry-after"):
        assert a.headers.get(header) == b.headers.get(header)


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("POST", "/v1/games/abc/moves", ("ApplyMove", "abc")),
        ("GET", "/v1/games/abc", ("GetGame", "abc")),
        ("GET", "/v1/games/abc/", None),
        ("HEAD", "/v1/games/abc", None),
        ("PUT", "/v1/games/abc/moves", None),
        ("POST", "/v1/games//moves", None),
        ("POST", "/v1/games/a/b/moves", None),
        ("GET", "/v1/games/abc/legal-moves", None),
        ("GET", "/v1/games/", None),
        ("POST", "/v1/games", None),
    ],
)
def test_which_requests_are_hot(method: str, path: str, expected: Any) -> None:
    assert hot_route({"type": "http", "method": method, "path": path}) == expected


def test_hot_routes_answer_as_the_fastapi_routes() -> None:
    async def go() -> None:
        api = create_http_app(GameApp(MemoryStore(), Settings(rate_limit=0.5, rate_burst=100)))
        assert isinstance(api, RailyardAPI)
        hot = httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://t")
        routed = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=_routed(api)), base_url="http://t"
        )
        created = await hot.post(
            GAME,
            json={"players": [{}, {}], "seed": "hot", "ruleset": {"setMax": 9, "rounds": 1}},
        )
        assert created.status_code == 200
        game_id = created.json()["game"]["gameId"]
        tokens = [s["token"] for s in created.json()["seats"]]
        moves = f"{GAME}/{game_id}/moves"

        async def both(method: str, path: str, **kw: Any) -> httpx.Response:
            a = await hot.request(method, path, **kw)
            b = await routed.request(method, path, **kw)
            _same(a, b)
            return a

        auth = [{"authorization": f"Bearer {t}"} for t in tokens]
        legal = (await hot.get(f"{GAME}/{game_id}/legal-moves", headers=auth[0])).json()
        move = legal["moves"][0]["move"]
        # Refusals: each changes nothing, so both sides see the same game.
        for headers in ({}, auth[0], auth[1], {"authorization": "Basic x"}):
            await both("GET", f"{GAME}/{game_id}", headers=headers)
        await both("GET", f"{GAME}/{'0' * 20}")
        await both("GET", f"{GAME}/nope")
        refusals = [
            ({}, {"move": move}),
            ({"authorization": "Bearer"}, {"move": move}),
            ({"authorization": "Bearer wrong"}, {"move": move}),
            (auth[1], {"move": move}),  # NOT_YOUR_TURN
            (auth[0], {"move": move, "expectedVersion": "99"}),
            (auth[0], {"move": move, "gameId": "other"}),
            (auth[0], {"move": {"play": {"tile": {"a": 9, "b": 9}, "train": {"seat": 1}}}}),
            (auth[0], {"move": {"jump": {}}}),
            (auth[0], {"move": move, "expected_version": "x"}),
            (auth[0], {}),
        ]
        for headers, body in refusals:
            response = await both("POST", moves, headers=headers, json=body)
            assert response.status_code in (400, 401, 403, 409)
        for raw in (b"{", b"[]", b'{"move": {}, "move": {}}', b"\xff"):
            await both("POST", moves, headers=auth[0], content=raw)
        await both("POST", f"{GAME}/{'0' * 20}/moves", headers=auth[0], json={"move": move})
        # A move, then its retry on the other side: the same bytes.
        body = {"move": move, "expectedVersion": "0", "requestId": "once"}
        first = await hot.post(moves, headers=auth[0], json=body)
        assert first.status_code == 200
        _same(first, await routed.post(moves, headers=auth[0], json=body))
        _same(first, await hot.post(moves, headers=auth[0], json=body))
        # Rate limited: 429 with Retry-After on both.
        flood = [hot.get(f"{GAME}/{game_id}", headers=auth[1]) for _ in range(150)]
        statuses = [r.status_code for r in await asyncio.gather(*flood)]
        assert 429 in statuses
        await both("GET", f"{GAME}/{game_id}", headers=auth[1])
        await hot.aclose()
        await routed.aclose()

    asyncio.run(go())


def test_a_client_gone_before_its_body_gets_no_answer() -> None:
    async def go() -> None:
        api = create_http_app(GameApp(MemoryStore()))
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "method": "POST",
            "path": "/v1/games/abc/moves",
            "headers": [(b"authorization", b"Bearer t")],
            "client": ("127.0.0.1", 1),
        }
        await api(scope, receive, send)
        assert sent == []

    asyncio.run(go())
