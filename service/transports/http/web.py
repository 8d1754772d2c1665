"""The web table: static files shipped in the package (``service/transports/http/web/``),
served at ``/`` (index.html) and ``/web/<file>``.

Read once at import, answered from memory by plain routes. They sit after
every API route, so the table costs the API's calls nothing.
"""

from __future__ import annotations

from importlib import resources
from typing import Final

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",  # the favicon
}

#: The table's own origin only; no inline script (index.html has none).
_CSP: Final = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)


def _load() -> dict[str, tuple[bytes, str]]:
    files: dict[str, tuple[bytes, str]] = {}
    folder = resources.files("service.transports.http") / "web"
    for entry in folder.iterdir():
        suffix = entry.name[entry.name.rfind(".") :]
        if entry.is_file() and suffix in _TYPES:
            files[entry.name] = (entry.read_bytes(), _TYPES[suffix])
    return files


FILES: Final = _load()


def _file(name: str) -> Response:
    found = FILES.get(name)
    if found is None:
        raise HTTPException(404)  # the same Status body as any unknown route
    body, media_type = found
    return Response(
        body,
        media_type=media_type,
        headers={
            # Revalidated every time: a new release's table is picked up at once.
            "Cache-Control": "no-cache",
            "Content-Security-Policy": _CSP,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
        },
    )


async def index(request: Request) -> Response:
    """The table (a seat's token travels in the URL fragment, never to the server)."""
    return _file("index.html")


async def web_file(request: Request) -> Response:
    return _file(str(request.path_params["name"]))


routes: Final = [
    Route("/", index, methods=["GET"], name="WebTable"),
    Route("/web/{name}", web_file, methods=["GET"], name="WebTableFile"),
]
