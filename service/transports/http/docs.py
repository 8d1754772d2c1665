"""``/docs``: Swagger UI served by the service itself, and the request
examples its "Try it out" sends.

The page's JavaScript and CSS are the Swagger UI files that the
``fastapi-offline`` package ships, mounted under :data:`ASSETS_URL`: FastAPI's
own page loads them from a CDN, so a machine without internet access (or a
network that blocks the CDN) got a blank page.

The examples are real: :data:`CREATE_GAME_EXAMPLE` deals a fixed seed in
which seat 0 (the person) moves first, and :data:`APPLY_MOVE_EXAMPLE` is a
legal first move of that deal (``tests/test_docs.py`` plays both on a real
service).
"""

from __future__ import annotations

from typing import Any, Final

from fastapi.openapi.docs import get_swagger_ui_html
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

DOCS_URL: Final = "/docs"
#: Where the Swagger UI files are served (under /docs, so they stay out of
#: the way of the table served at /).
ASSETS_URL: Final = "/docs/assets"
#: The package, and its folder, that holds swagger-ui-bundle.js and swagger-ui.css.
ASSETS_PACKAGE: Final = ("fastapi_offline", "static")

#: Swagger UI's options beyond FastAPI's defaults. validatorUrl: off, else the
#: page sends the document to validator.swagger.io for its badge (an
#: outside request, and a leak of the document). persistAuthorization: the
#: seat token entered under "Authorize" survives a reload.
SWAGGER_UI_PARAMETERS: Final[dict[str, Any]] = {
    "validatorUrl": None,
    "persistAuthorization": True,
}

#: The seed of :data:`CREATE_GAME_EXAMPLE`: with two players and one round of
#: the standard preset, seat 0 wins the draw for the first turn (MT-ENG-1) and holds
#: 5-12 for its own train.
EXAMPLE_SEED: Final = "docs-example-14"

CREATE_GAME_EXAMPLE: Final[dict[str, Any]] = {
    "players": [
        {"displayName": "Ann"},
        {"displayName": "Bot", "bot": "BOT_LEVEL_RANDOM"},
    ],
    "ruleset": {"preset": "standard", "rounds": 1},
    "seed": EXAMPLE_SEED,
}

APPLY_MOVE_EXAMPLE: Final[dict[str, Any]] = {
    "move": {"play": {"tile": {"a": 5, "b": 12}, "train": {"seat": 0}}},
    "expectedVersion": "0",
    "requestId": "docs-example-first-move",
}

CREATE_GAME_EXAMPLES: Final[dict[str, Any]] = {
    "personAgainstBot": {
        "summary": "You (seat 0) against a random bot, a fixed deal",
        "description": "One round of the standard preset, dealt from a fixed seed in "
        "which seat 0 moves first, so the ApplyMove example is its legal first move. "
        "Copy `game.gameId` into ApplyMove's gameId and `seats[0].token` into "
        "Authorize (seatToken). Drop `seed` for a random deal (a service run with "
        "`--caller-seeds deny` refuses a caller's seed).",
        "value": CREATE_GAME_EXAMPLE,
    }
}

APPLY_MOVE_EXAMPLES: Final[dict[str, Any]] = {
    "firstMove": {
        "summary": "5-12 onto seat 0's own train: the first move of CreateGame's example",
        "description": "Legal as the first move of the game CreateGame's example "
        "creates (`5-12@p0`). For any other game, call ListLegalMoves with the seat's "
        "token and send one of its `moves[].move` here, with its `version` as "
        "`expectedVersion`. The `requestId` makes a repeat return the first answer "
        "instead of moving twice; use a new one for each move.",
        "value": APPLY_MOVE_EXAMPLE,
    }
}


def routes(title: str, openapi_url: str) -> list[BaseRoute]:
    """Swagger UI at :data:`DOCS_URL` for the document at ``openapi_url``,
    from local files. (The page's HTML is FastAPI's function, the one part
    of FastAPI the service keeps: fastapi-offline ships its files for it.)"""

    async def swagger_ui(request: Request) -> HTMLResponse:
        # Behind a proxy that serves the app under a prefix, every URL keeps it.
        root = str(request.scope.get("root_path", "")).rstrip("/")
        return get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{title} - Swagger UI",
            swagger_js_url=f"{root}{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS_URL}/favicon.png",
            swagger_ui_parameters=SWAGGER_UI_PARAMETERS,
        )

    return [
        Mount(ASSETS_URL, StaticFiles(packages=[ASSETS_PACKAGE]), name="docs-assets"),
        Route(DOCS_URL, swagger_ui, methods=["GET"], name="Docs"),
    ]
