"""``/docs`` works offline, and its request examples play (service/transports/http/docs.py).

A real service (uvicorn on a free loopback port) answers: the Swagger UI page
names no URL outside the service and every file it loads is served; the
request examples of the OpenAPI document are valid against their schemas;
and "Try it out" with them succeeds: CreateGame's example creates a game,
and ApplyMove's example, sent with that game's id and seat token, is played.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
import jsonschema_rs

from service.app import GameApp
from service.settings import Settings
from service.store.memory import MemoryStore
from service.transports.http import docs
from tests.service_helpers import run
from tests.test_service_e2e import http_server


class _Links(HTMLParser):
    """Every URL an HTML page makes a browser load (src=, href=)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [value for name, value in attrs if name in ("src", "href") and value]


async def _get(url: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=10) as client:
        return await client.get(url)


def test_docs_load_nothing_from_outside_the_service() -> None:
    async def scenario() -> None:
        app = GameApp(MemoryStore(), Settings(bot_processes=0))
        try:
            async with http_server(app) as base:
                page = await _get(f"{base}/docs")
                assert page.status_code == 200
                assert page.headers["content-type"].startswith("text/html")
                links = _Links()
                links.feed(page.text)
                # The inline script names the document Swagger UI loads.
                (spec,) = re.findall(r"url: '([^']*)'", page.text)
                assets = [*links.urls, spec]
                assert any(u.endswith("swagger-ui-bundle.js") for u in assets), page.text
                assert any(u.endswith("swagger-ui.css") for u in assets), page.text
                # No CDN, no validator badge, no favicon from elsewhere.
                assert not re.search(r"https?://|//[a-z]", page.text), page.text
                for url in assets:
                    absolute = urljoin(f"{base}/docs", url)
                    assert urlsplit(absolute).netloc == urlsplit(base).netloc, url
                    answer = await _get(absolute)
                    assert answer.status_code == 200, (url, answer.status_code)
                    assert answer.content, url
                css = await _get(urljoin(base, docs.ASSETS_URL + "/swagger-ui.css"))
                # The stylesheet loads no fonts or images of its own from elsewhere.
                assert not re.search(r"url\(\s*['\"]?(https?:)?//", css.text)
                assert "text/css" in css.headers["content-type"]
                bundle = await _get(urljoin(base, docs.ASSETS_URL + "/swagger-ui-bundle.js"))
                assert "javascript" in bundle.headers["content-type"]
                # Swagger UI 5 renders an OpenAPI 3.1 document (4 does not).
                assert (await _get(f"{base}/openapi.json")).json()["openapi"].startswith("3.1")
        finally:
            app.close()

    run(scenario())


def _body_examples(document: dict[str, Any], operation_id: str) -> tuple[Any, dict[str, Any]]:
    """The request body schema of an operation, and its named examples."""
    for item in document["paths"].values():
        for operation in item.values():
            if operation.get("operationId") == operation_id:
                media = operation["requestBody"]["content"]["application/json"]
                return media["schema"], media["examples"]
    raise AssertionError(f"no operation {operation_id}")


def test_request_examples_are_valid_against_their_schemas() -> None:
    from service.transports.http.server import create_http_app

    document = create_http_app(GameApp(MemoryStore())).openapi()
    for operation_id in ("CreateGame", "ApplyMove"):
        schema, examples = _body_examples(document, operation_id)
        assert examples, operation_id
        validator = jsonschema_rs.Draft202012Validator(
            {**schema, "components": document["components"]}
        )
        for name, example in examples.items():
            assert example["summary"], name
            assert example["description"], name
            errors = [str(e) for e in validator.iter_errors(example["value"])]
            assert errors == [], f"{operation_id} example {name}: {errors}"


def test_try_it_out_with_the_examples_creates_a_game_and_plays_its_first_move() -> None:
    async def scenario() -> None:
        app = GameApp(MemoryStore(), Settings(bot_processes=0))
        try:
            async with http_server(app) as base, httpx.AsyncClient(timeout=10) as client:
                document = (await client.get(f"{base}/openapi.json")).json()
                (create,) = _body_examples(document, "CreateGame")[1].values()
                created = await client.post(f"{base}/v1/games", json=create["value"])
                assert created.status_code == 200, created.text
                game = created.json()
                # The person moves first: no bot move yet, the game at version 0.
                assert game["game"].get("currentSeat") == 0, game["game"]
                assert game["game"].get("version", "0") == "0"
                game_id, token = game["game"]["gameId"], game["seats"][0]["token"]
                (apply,) = _body_examples(document, "ApplyMove")[1].values()
                moved = await client.post(
                    f"{base}/v1/games/{game_id}/moves",
                    json=apply["value"],
                    headers={"authorization": f"Bearer {token}"},
                )
                assert moved.status_code == 200, moved.text
                events = moved.json()["events"]
                played = events[0]["tilePlayed"]
                assert played.get("seat", 0) == 0
                assert played["tile"] == {"a": 5, "b": 12}
                # Then the bot answered, inside the same request (API.md, Bots).
                bot_moves = [
                    e.get("tilePlayed") or e.get("tileDrawn") or e.get("passed") for e in events
                ]
                assert any(m is not None and m.get("seat") == 1 for m in bot_moves), events
                # "Execute" pressed again: the requestId returns the first answer.
                again = await client.post(
                    f"{base}/v1/games/{game_id}/moves",
                    json=apply["value"],
                    headers={"authorization": f"Bearer {token}"},
                )
                assert again.status_code == 200, again.text
                assert again.json()["events"] == events
        finally:
            app.close()

    run(scenario())
