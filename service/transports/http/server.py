"""The HTTP/JSON transport: Starlette routes over :class:`~service.app.GameApp`.

Routes only translate. In: the JSON body (canonical proto3 mapping, parsed by
``json_format``), the path, ``afterVersion``/``Last-Event-ID`` and the bearer
token become a request message and a :class:`~service.app.Caller`. Out: the
app's message as canonical JSON, or its :class:`~service.app.errors.ServiceError`
as a ``google.rpc.Status`` body with the HTTP status of API.md's table.
Loading, permissions, rate limits and storage are the app's, never a route's.

Every refusal, routing ones included, is a Status body. The OpenAPI
document is each route's operation (:class:`Routes`) over the components
generated from the proto descriptors (:mod:`service.transports.http.openapi`).

Starlette, not FastAPI on it: no route here declares a parameter or a body
for FastAPI to validate or document, so FastAPI's layers (dependency
solving, its middleware, its router) did nothing for us but cost the most
of any part of an HTTP move (docs/adr/0001-http-server.md).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar, cast

import anyio
import grpc
import orjson
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2
from opentelemetry import trace
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.metrics import NoOpMeterProvider
from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as ASGIMessage

from railyard_api import game_service_pb2 as pb
from railyard_api.fields import build
from service.app import Caller, GameApp, errors
from service.app.errors import ServiceError
from service.app.identity import TrustedProxies, api_key_of, seat_token
from service.app.streams import until_closed
from service.ops import telemetry, tracing
from service.settings import cors_origin_list
from service.transports.http import docs, jsonwire, openapi, web
from service.transports.http.field_limits import FIELD_LIMITS

log = logging.getLogger("railyard.http")

M = TypeVar("M", bound=Message)

_INT64: Final = re.compile(r"-?[0-9]{1,19}")
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_SEAT_TOKEN: Final = "seatToken"
_API_KEY: Final = "apiKey"

# ------------------------------------------------------------------ wire helpers


def to_json(message: Message) -> dict[str, Any]:
    """The canonical proto3 JSON of ``message`` (lowerCamelCase, enum names,
    64-bit integers as strings, empty fields omitted)."""
    return jsonwire.to_dict(message)


def status_body(
    code: grpc.StatusCode, reason: str, message: str, metadata: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A ``google.rpc.Status`` with one ``ErrorInfo``, in JSON."""
    status = status_pb2.Status(code=int(code.value[0]), message=message)
    info = error_details_pb2.ErrorInfo(
        reason=reason, domain=errors.DOMAIN, metadata=dict(metadata or {})
    )
    status.details.add().Pack(info)
    return to_json(status)


def error_response(error: ServiceError) -> JSONResponse:
    tracing.note_error(error)
    headers = {}
    retry_after = error.metadata.get("retryAfterSeconds")
    if retry_after:
        headers["Retry-After"] = retry_after
    body = status_body(error.code, error.reason, error.message, error.metadata)
    return JSONResponse(body, status_code=error.http_status, headers=headers)


def proto_response(message: Message) -> Response:
    return json_response(to_json(message))


def json_response(body: dict[str, Any]) -> Response:
    # orjson: json.dumps of a view was a large share of an HTTP move.
    return Response(orjson.dumps(body), media_type="application/json")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "malformed request"


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise errors.invalid(f"the body names {key!r} twice")
        found[key] = value
    return found


def _names(value: Any) -> int:
    """How many names the objects in ``value`` (a decoded JSON value) hold;
    -1 when it holds a float (orjson reads an integer past 64 bits as one)."""
    count = 0
    pending = [value]
    while pending:
        item = pending.pop()
        if type(item) is dict:
            count += len(item)
            pending += item.values()
        elif type(item) is list:
            pending += item
        elif type(item) is float:
            return -1
    return count


def _decoded(raw: bytes) -> Any:
    """The JSON value of a body, a name given twice in one object refused.

    orjson first: json with a Python hook for duplicate names was a large
    share of the application's work on a move. orjson keeps the last of a
    duplicate name, so its value is taken only when its objects hold as many
    names as the body has colons: each name is followed by one colon outside
    strings, and a colon inside a string only makes the count larger, so
    equal counts mean no name was lost. Nor is a value holding a float taken
    (orjson reads an integer past 64 bits as a float, json as an int; no
    field of ours is a float). Any other body, and any orjson refuses (NaN,
    a BOM, UTF-16, lone surrogates), is judged by json, as before: the same
    values, the same errors (tests/test_http_body.py)."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    else:
        if _names(data) == raw.count(b":"):
            return data
    try:
        return json.loads(raw, object_pairs_hook=_refuse_duplicates)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise errors.invalid(f"the body is not valid JSON: {_first_line(str(exc))}") from exc


class ClientGoneError(Exception):
    """The client disconnected before its request body arrived."""


def _too_large(limit: int) -> ServiceError:
    return errors.invalid(f"the body is larger than {limit} bytes", field="body")


def _check_length(header: str | None, limit: int) -> None:
    """Refuse at once a body whose declared Content-Length is over ``limit``."""
    if header is not None and header.strip().isdigit() and int(header) > limit:
        raise _too_large(limit)


async def parse_body(request: Request, message: M, limit: int) -> M:
    """``message`` filled from the JSON body; an empty body is an empty message.
    Bad JSON, unknown fields and wrong types are INVALID_ARGUMENT, and so is a
    body over ``limit`` bytes (settings.max_body_bytes; read no further)."""
    _check_length(request.headers.get("content-length"), limit)
    # The ASGI messages read here, not through Request.stream(): an async
    # generator a request, and the loop's hooks for it, cost more than the
    # loop (a body is one message but for large ones).
    receive = request.receive
    chunks: list[bytes] = []
    size = 0
    while True:
        received = await receive()
        if received["type"] != "http.request":
            # Gone before its body was in (or cut off by the body timeout): no
            # one to answer, and nothing to log.
            raise ClientGoneError
        chunk = received.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        if not received.get("more_body", False):
            break
        chunks.append(chunk)
    raw = b"".join((*chunks, chunk)) if chunks else chunk
    return parse_raw_body(raw, message)


def parse_raw_body(raw: bytes, message: M) -> M:
    """:func:`parse_body` of a body already read. A body written as the
    canonical mapping writes it (every body of API.md's) is read by
    jsonwire.canonical_fields; ParseDict reads any other spelling the
    mapping allows and explains what is wrong with the rest (it was a large
    share of an HTTP move)."""
    if not raw.strip():
        return message
    data = _decoded(raw)
    if not isinstance(data, dict):
        raise errors.invalid("the body must be a JSON object")
    fields = jsonwire.canonical_fields(cast(Descriptor, message.DESCRIPTOR), data)
    if fields is not None:
        return build(message, fields)
    try:
        jsonwire.check_input(data, message)
        json_format.ParseDict(data, message)
    except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        raise errors.invalid(_first_line(str(exc))) from exc
    return message


def parse_int64(text: str, name: str) -> int:
    """A query or header value that must be an int64."""
    value = text.strip()
    if not _INT64.fullmatch(value) or not _INT64_MIN <= int(value) <= _INT64_MAX:
        raise errors.invalid(f"{name} must be an integer version, not {text!r}", field=name)
    return int(value)


# ------------------------------------------------------------------ a request's context


def game_app_of(request: Request) -> GameApp:
    game_app = request.app.state.game_app
    assert isinstance(game_app, GameApp)
    return game_app


def caller_of(scope: Scope, proxies: TrustedProxies) -> Caller:
    """The caller of a request: its ``authorization`` header (absent: a
    spectator), its address, through trusted proxies only, and its
    ``x-api-key`` header."""
    client = scope.get("client")
    peer = str(client[0]) if client else ""
    if proxies.networks:
        peer = proxies.client(
            peer,
            forwarded=scope_header(scope, b"forwarded"),
            forwarded_for=scope_header(scope, b"x-forwarded-for"),
        )
    authorization: list[str] = []
    api_keys: list[str] = []
    for key, value in scope["headers"]:
        if key == b"authorization":
            authorization.append(value.decode("latin-1"))
        elif key == b"x-api-key":
            api_keys.append(value.decode("latin-1"))
    return Caller(token=seat_token(authorization), address=peer, api_key=api_key_of(api_keys))


def _context(request: Request) -> tuple[GameApp, Caller, str]:
    """The app, the caller (its bearer token, absent: a spectator; its
    address; its API key) and the path's game id."""
    game_app = game_app_of(request)
    caller = caller_of(request.scope, game_app.proxies)
    return game_app, caller, str(request.path_params["gameId"])


# ------------------------------------------------------------------ OpenAPI of a route

_ERROR_DESCRIPTIONS: Final = {
    400: "INVALID_ARGUMENT (malformed request, DEAL_DOES_NOT_FIT) or FAILED_PRECONDITION "
    "(NOT_YOUR_TURN, ILLEGAL_MOVE, GAME_OVER)",
    401: "UNAUTHENTICATED: no seat token, or a malformed authorization header",
    403: "PERMISSION_DENIED (BAD_SEAT_TOKEN): the token is not a seat token of this game",
    404: "NOT_FOUND (GAME_NOT_FOUND)",
    409: "ABORTED (VERSION_MISMATCH): expectedVersion is not the game's version",
    429: "RESOURCE_EXHAUSTED (RATE_LIMITED; BOTS_BUSY: CreateGame only, the replica's bot "
    "workers are busy; TOO_MANY_GAMES: CreateGame only, the API key's tenant has its cap of "
    "games in progress); Retry-After gives the seconds to wait",
    503: "UNAVAILABLE (STORE_UNAVAILABLE: nothing changed; OUTCOME_UNKNOWN: a change was sent "
    "to the store and its answer lost, retry with the same requestId to learn its outcome)",
}

_GAME_ID_PARAM: Final = {
    "name": "gameId",
    "in": "path",
    "required": True,
    "description": "The game's id, as CreateGame returned it.",
    "schema": {"type": "string"},
}


def _error(status: int, description: str | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": description or _ERROR_DESCRIPTIONS[status],
        "content": {"application/json": {"schema": openapi.status_ref()}},
    }
    if status == 429:
        response["headers"] = {
            "Retry-After": {
                "description": "Seconds to wait before retrying.",
                "schema": {"type": "integer", "minimum": 1},
            }
        }
    return response


def operation(
    *,
    ok: dict[str, Any],
    failures: Sequence[int],
    body: dict[str, Any] | None = None,
    auth: Literal["none", "optional", "required"] = "none",
    parameters: Sequence[dict[str, Any]] = (),
    descriptions: Mapping[int, str] | None = None,
    examples: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``openapi_extra`` of a route: its parameters, body, answers and security;
    ``descriptions`` replaces the common description of some failures;
    ``examples`` are the body's named examples (Swagger UI's "Try it out")."""
    own = descriptions or {}
    extra: dict[str, Any] = {
        "responses": {"200": ok, **{str(s): _error(s, own.get(s)) for s in failures}}
    }
    if parameters:
        extra["parameters"] = list(parameters)
    if body is not None:
        media: dict[str, Any] = {"schema": body}
        if examples:
            media["examples"] = dict(examples)
        extra["requestBody"] = {"required": True, "content": {"application/json": media}}
    if auth == "required":
        extra["security"] = [{_SEAT_TOKEN: []}]
    elif auth == "optional":
        extra["security"] = [{_SEAT_TOKEN: []}, {}]
    return extra


def _json_ok(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass
class Routes:
    """Routes under one path prefix and OpenAPI tag: each a Starlette
    :class:`~starlette.routing.Route` named by its operation id (the name
    metrics and spans give it), and its OpenAPI operation."""

    prefix: str = ""
    tag: str | None = None
    routes: list[Route] = field(default_factory=list)
    #: (path, method, operation) of each route the OpenAPI document shows.
    operations: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    def get(self, path: str, **operation: Any) -> Callable[[Endpoint], Endpoint]:
        return self.route("GET", path, **operation)

    def post(self, path: str, **operation: Any) -> Callable[[Endpoint], Endpoint]:
        return self.route("POST", path, **operation)

    def route(
        self,
        method: str,
        path: str,
        *,
        operation_id: str,
        summary: str | None = None,
        description: str | None = None,
        openapi_extra: Mapping[str, Any] | None = None,
        in_schema: bool = True,
    ) -> Callable[[Endpoint], Endpoint]:
        """A route for ``method`` ``prefix + path``; ``openapi_extra`` is its
        OpenAPI operation's parameters, body, answers and security
        (:func:`operation`)."""

        def add(endpoint: Endpoint) -> Endpoint:
            full = self.prefix + path
            self.routes.append(Route(full, endpoint, methods=[method], name=operation_id))
            if in_schema:
                described: dict[str, Any] = {"tags": [self.tag]} if self.tag else {}
                if summary:
                    described["summary"] = summary
                if description:
                    described["description"] = description
                described["operationId"] = operation_id
                described |= openapi_extra or {}
                self.operations.append((full, method.lower(), described))
            return endpoint

        return add


# ------------------------------------------------------------------ games

#: Why a CreateGame body that its schema admits is refused: each reason is
#: more than one field (service.transports.http.field_limits holds the single-field ones).
_CREATE_GAME_REFUSALS: Final = (
    "DEAL_DOES_NOT_FIT when the hand size table has no entry for this many players and "
    "this set (MT-DEAL-1) or the hands take more tiles than the set deals (MT-DEAL-2); "
    "INVALID_ARGUMENT when firstEngine is above setMax, or rounds is more than the "
    "engines from firstEngine down to 0-0 (MT-RND-1); for the classic games, "
    "DEAL_DOES_NOT_FIT when the hands take more tiles than the set (CL-DEAL-1), and "
    "INVALID_ARGUMENT for an option the game does not have or a preset of another game, "
    "setMax above 12, more than 4 players with double-six (CL-SET-1), or teams without "
    "4 players (CL-TEAM-1); for Chicken Foot, DEAL_DOES_NOT_FIT when the hands take more "
    "tiles than the set deals with its station set aside (MT-DEAL-2), and INVALID_ARGUMENT "
    "for an option it does not have (CL-SET-1), other than 2 to 8 players, or rounds more "
    "than the doubles from setMax down to 0-0 (CL-CF-1, MT-RND-1); and, by the operator's "
    "settings, "
    "INVALID_ARGUMENT for any seed where caller seeds are denied, for bot turns that "
    "take more than the bot CPU limit, or for a requestId whose first answer has expired."
)

#: The routes below in the order the router tries them: the calls of every turn
#: (ApplyMove, GetGame) first, as each route passed over costs a match.
games = Routes(prefix="/v1/games", tag="games")

#: The body of ApplyMove over HTTP: the request without gameId (it is in the path).
APPLY_MOVE_BODY: Final = "ApplyMoveBody"


@games.post(
    "/{gameId}/moves",
    operation_id="ApplyMove",
    summary="Apply a move",
    description="One move for the caller's seat, then any bot turns that follow; "
    "optional expectedVersion (else 409) and requestId (a repeat returns the first answer). "
    "A body its schema admits may still be refused for the game: a move not legal now "
    "(FAILED_PRECONDITION), a tile above the game's set (INVALID_ARGUMENT, T-1), a "
    "requestId this seat used for another move (INVALID_ARGUMENT).",
    openapi_extra=operation(
        parameters=[_GAME_ID_PARAM],
        auth="required",
        body={"$ref": openapi.REF_PREFIX + APPLY_MOVE_BODY},
        ok=_json_ok(
            "The view after the move and its events", openapi.ref(pb.ApplyMoveResponse.DESCRIPTOR)
        ),
        failures=(400, 401, 403, 404, 409, 429, 503),
        examples=docs.APPLY_MOVE_EXAMPLES,
    ),
)
async def apply_move(request: Request) -> Response:
    game_app, caller, game_id = _context(request)
    message = await parse_body(request, pb.ApplyMoveRequest(), game_app.settings.max_body_bytes)
    if message.game_id and message.game_id != game_id:
        raise errors.invalid("gameId belongs in the path, not in the body", field="gameId")
    message.game_id = game_id
    answer = await game_app.apply_move(message, caller)
    return json_response(jsonwire.fields_to_dict(pb.ApplyMoveResponse.DESCRIPTOR, answer))


@games.get(
    "/{gameId}",
    operation_id="GetGame",
    summary="View a game",
    description="The caller's view: public, or public plus the seat's hand with its token.",
    openapi_extra=operation(
        parameters=[_GAME_ID_PARAM],
        auth="optional",
        ok=_json_ok("The caller's view", openapi.ref(pb.GameView.DESCRIPTOR)),
        failures=(401, 403, 404, 429, 503),
    ),
)
async def get_game(request: Request) -> Response:
    game_app, caller, game_id = _context(request)
    view = await game_app.get_game(game_id, caller)
    return json_response(jsonwire.fields_to_dict(pb.GameView.DESCRIPTOR, view))


@games.post(
    "",
    operation_id="CreateGame",
    summary="Create a game",
    description="A new game from a ruleset (preset and overrides) and the players; "
    "returns its public view and one token per seat (shown only here). "
    "The body's schema states every field's own limits; a body it admits is still "
    "refused (400) when its fields do not fit together: " + _CREATE_GAME_REFUSALS,
    openapi_extra={
        **operation(
            body=openapi.ref(pb.CreateGameRequest.DESCRIPTOR),
            ok=_json_ok("The new game", openapi.ref(pb.CreateGameResponse.DESCRIPTOR)),
            failures=(400, 401, 403, 429, 503),
            descriptions={
                400: "INVALID_ARGUMENT: a body its schema refuses, or one whose fields do not "
                "fit together (DEAL_DOES_NOT_FIT, MT-RND-1: see the operation's description)",
                401: "UNAUTHENTICATED: the operator configured API keys and the request sent "
                "no x-api-key header",
                403: "PERMISSION_DENIED (BAD_API_KEY): the x-api-key is not one of this "
                "service's keys",
            },
            examples=docs.CREATE_GAME_EXAMPLES,
        ),
        # Needed only where the operator configured keys (docs/operations.md,
        # "Tenants and API keys").
        "security": [{_API_KEY: []}, {}],
    },
)
async def create_game(request: Request) -> Response:
    game_app = game_app_of(request)
    caller = caller_of(request.scope, game_app.proxies)
    message = await parse_body(request, pb.CreateGameRequest(), game_app.settings.max_body_bytes)
    return proto_response(await game_app.create_game(message, caller))


@games.get(
    "/{gameId}/legal-moves",
    operation_id="ListLegalMoves",
    summary="List the caller's legal moves",
    description="The seat's legal moves now (none when it is not its turn) and the "
    "version they apply to.",
    openapi_extra=operation(
        parameters=[_GAME_ID_PARAM],
        auth="required",
        ok=_json_ok("The legal moves", openapi.ref(pb.ListLegalMovesResponse.DESCRIPTOR)),
        failures=(401, 403, 404, 429, 503),
    ),
)
async def list_legal_moves(request: Request) -> Response:
    game_app, caller, game_id = _context(request)
    return proto_response(await game_app.list_legal_moves(game_id, caller))


class EventStreamResponse(StreamingResponse):
    media_type = "text/event-stream"


Version = tuple[pb.GameEvent, ...]  # the events of one version (GameApp.watch_game)


def _sse_frames(version: Version | None) -> str:
    """The frames of one version's events, sent as one chunk, or a keep-alive."""
    if version is None:
        return ": keep-alive\n\n"
    return "".join(
        f"id: {event.version}\ndata: {orjson.dumps(to_json(event)).decode()}\n\n"
        for event in version
    )


def _sse_error(body: dict[str, Any]) -> str:
    return f"event: error\ndata: {json.dumps(body, separators=(',', ':'))}\n\n"


async def _event_stream(
    first: Version | None,
    events: AsyncIterator[Version | None],
    closing: asyncio.Event,
) -> AsyncIterator[str]:
    """The SSE frames of ``first`` and the rest of ``events``. A failure after
    the headers are sent ends the stream with an ``error`` event; a shutdown
    (:func:`close_streams`) ends it with a comment, and the client reconnects
    with ``Last-Event-ID``."""
    try:
        yield _sse_frames(first)
        async for item in until_closed(events, closing):
            yield _sse_frames(item)
        if closing.is_set():
            yield ": server shutting down; reconnect with Last-Event-ID\n\n"
    except ServiceError as exc:
        log.warning("watch stream ended: %s %s", exc.reason, exc.message)
        yield _sse_error(status_body(exc.code, exc.reason, exc.message, exc.metadata))
    except Exception:
        log.exception("watch stream failed")
        yield _sse_error(status_body(grpc.StatusCode.INTERNAL, "INTERNAL", "internal error"))
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            with anyio.CancelScope(shield=True):
                await aclose()


def close_streams(api: Starlette) -> None:
    """End every open WatchGame stream now, and any opened later right after
    its snapshot. Call it when a graceful shutdown begins: an SSE response never
    ends by itself, and uvicorn waits for open responses before it exits."""
    closing = api.state.streams_closing
    assert isinstance(closing, asyncio.Event)
    closing.set()


def resume_version(request: Request) -> int | None:
    """Where a watch resumes: ``Last-Event-ID`` (an EventSource reconnecting)
    wins over ``afterVersion``; neither: only what follows the snapshot."""
    last_event_id = request.headers.get("last-event-id", "").strip()
    if last_event_id:
        return parse_int64(last_event_id, "Last-Event-ID")
    after = request.query_params.get("afterVersion")
    return None if after is None else parse_int64(after, "afterVersion")


@games.get(
    "/{gameId}/events",
    operation_id="WatchGame",
    summary="Watch a game (Server-Sent Events)",
    description="A snapshot event (the caller's view now), then every event with a "
    "version above afterVersion, then live events until gameEnded. Each event is one "
    "`data:` line holding a GameEvent in JSON, with `id:` its version; a `: keep-alive` "
    "comment comes after each quiet period (at most 15 s). A failure after the stream "
    "started ends it with an `event: error` whose data is a Status.",
    openapi_extra=operation(
        parameters=[
            _GAME_ID_PARAM,
            {
                "name": "afterVersion",
                "in": "query",
                "required": False,
                "description": "Send the events with a version above this one.",
                "schema": openapi.field_schema(
                    pb.WatchGameRequest.DESCRIPTOR.fields_by_name["after_version"]
                ),
            },
            {
                "name": "Last-Event-ID",
                "in": "header",
                "required": False,
                "description": "The last SSE id received (a version); resumes like "
                "afterVersion and wins over it.",
                "schema": {"type": "string", "pattern": "^-?[0-9]+$"},
            },
        ],
        auth="optional",
        ok={
            "description": "A stream of GameEvent (see the GameEvent schema), one per "
            "`data:` line, `id:` its version.",
            "content": {
                "text/event-stream": {
                    "schema": {"type": "string"},
                    "x-event-schema": openapi.ref(pb.GameEvent.DESCRIPTOR),
                }
            },
        },
        failures=(400, 401, 403, 404, 429, 503),
        descriptions={
            429: "RESOURCE_EXHAUSTED: RATE_LIMITED, TOO_MANY_WATCHERS (this replica "
            "has as many watch streams open as it takes), or TOO_MANY_LOG_READS (a replay "
            "from afterVersion while the replica reads as many game histories as it "
            "takes); Retry-After gives the seconds to wait"
        },
    ),
)
async def watch_game(request: Request) -> Response:
    game_app, caller, game_id = _context(request)
    closing = request.app.state.streams_closing
    assert isinstance(closing, asyncio.Event)
    events = game_app.watch_game(game_id, resume_version(request), caller)
    # Pull the snapshot first: an unknown game or a bad token is a plain HTTP
    # error, not a stream that opens and fails.
    try:
        first = await anext(events)
    except StopAsyncIteration:
        return EventStreamResponse(iter(()), headers={"Cache-Control": "no-cache"})
    return EventStreamResponse(
        _event_stream(first, events, closing),
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@games.get(
    "/{gameId}/log",
    operation_id="GetGameLog",
    summary="The game's public log",
    description="Every public event from the start, the ruleset, the seed's SHA-256, "
    "and the seed once the game is over (MT-FAIR-1).",
    openapi_extra=operation(
        parameters=[_GAME_ID_PARAM],
        ok=_json_ok("The log", openapi.ref(pb.GetGameLogResponse.DESCRIPTOR)),
        failures=(401, 404, 429, 503),
        descriptions={
            429: "RESOURCE_EXHAUSTED: RATE_LIMITED, or TOO_MANY_LOG_READS (this replica "
            "reads as many game histories from the store as it takes); Retry-After gives "
            "the seconds to wait"
        },
    ),
)
async def get_game_log(request: Request) -> Response:
    game_app, caller, game_id = _context(request)
    return proto_response(await game_app.get_game_log(game_id, caller))


# ------------------------------------------------------------------ tables


@games.get(
    "",
    operation_id="ListGames",
    summary="List the joinable public tables",
    description="The public tables of the caller's tenant (its x-api-key's) that wait for "
    "people, oldest first, a page at a time (AIP-158): pass nextPageToken back as pageToken.",
    openapi_extra={
        **operation(
            parameters=[
                {
                    "name": "pageSize",
                    "in": "query",
                    "required": False,
                    "description": "At most this many tables (0 or absent: 50; above 100: 100).",
                    "schema": {"type": "integer", "minimum": 0},
                },
                {
                    "name": "pageToken",
                    "in": "query",
                    "required": False,
                    "description": "The nextPageToken of the previous page.",
                    "schema": {"type": "string"},
                },
            ],
            ok=_json_ok("A page of tables", openapi.ref(pb.ListGamesResponse.DESCRIPTOR)),
            failures=(400, 401, 403, 429, 503),
        ),
        "security": [{_API_KEY: []}, {}],
    },
)
async def list_games(request: Request) -> Response:
    game_app = game_app_of(request)
    caller = caller_of(request.scope, game_app.proxies)
    message = pb.ListGamesRequest(page_token=request.query_params.get("pageToken", ""))
    size = request.query_params.get("pageSize")
    if size is not None:
        value = parse_int64(size, "pageSize")
        if not -(2**31) <= value < 2**31:
            raise errors.invalid("pageSize is out of range", field="pageSize")
        message.page_size = value
    return proto_response(await game_app.list_games(message, caller))


def _path_body(request: Request, message: M, game_id: str) -> M:
    if getattr(message, "game_id", "") and message.game_id not in (game_id, "-"):  # type: ignore[attr-defined]
        raise errors.invalid("gameId belongs in the path, not in the body", field="gameId")
    message.game_id = "" if game_id == "-" else game_id  # type: ignore[attr-defined]
    return message


@games.post(
    "/{gameId}/join",
    operation_id="JoinGame",
    summary="Take an open seat",
    description="Take an open seat of a waiting table, by its id (a public table), or by its "
    "join code (a private one: gameId `-` and the code alone, or both). Answers the seat's "
    "token to the first caller for that seat only; the table starts when its last seat is "
    "taken.",
    openapi_extra=operation(
        parameters=[_GAME_ID_PARAM],
        body=openapi.ref(pb.JoinGameRequest.DESCRIPTOR),
        ok=_json_ok("The seat and the joiner's view", openapi.ref(pb.JoinGameResponse.DESCRIPTOR)),
        failures=(400, 403, 404, 429, 503),
        descriptions={
            400: "INVALID_ARGUMENT, or FAILED_PRECONDITION: SEAT_TAKEN (another caller took "
            "it), TABLE_FULL, GAME_STARTED, GAME_OVER",
            403: "PERMISSION_DENIED (BAD_JOIN_CODE): a private table needs its join code",
            404: "NOT_FOUND: GAME_NOT_FOUND, JOIN_CODE_NOT_FOUND",
        },
    ),
)
async def join_game(request: Request) -> Response:
    game_app, caller, game_id = _context(request)
    message = await parse_body(request, pb.JoinGameRequest(), game_app.settings.max_body_bytes)
    return proto_response(await game_app.join_game(_path_body(request, message, game_id), caller))


@games.post(
    "/{gameId}/start",
    operation_id="StartGame",
    summary="Start a waiting table",
    description="The table's host (authorization: Bearer <hostToken>) starts it now; its open "
    "seats are played by bots of the table's level.",
    openapi_extra=operation(
        parameters=[_GAME_ID_PARAM],
        auth="required",
        ok=_json_ok("The table, started", openapi.ref(pb.StartGameResponse.DESCRIPTOR)),
        failures=(400, 401, 403, 404, 429, 503),
        descriptions={
            400: "FAILED_PRECONDITION (GAME_STARTED)",
            403: "PERMISSION_DENIED (NOT_HOST): the token is not the table's host token",
        },
    ),
)
async def start_game(request: Request) -> Response:
    game_app, caller, game_id = _context(request)
    view = await game_app.start_game(game_id, caller)
    return json_response({"game": jsonwire.fields_to_dict(pb.GameView.DESCRIPTOR, view)})


@games.post(
    "/{gameId}/leave",
    operation_id="LeaveGame",
    summary="Give up the caller's seat",
    description="Before the start the seat opens again; during play a bot of the table's "
    "level plays it from the next turn, and the token stops working.",
    openapi_extra=operation(
        parameters=[_GAME_ID_PARAM],
        auth="required",
        ok=_json_ok("The table's public view", openapi.ref(pb.LeaveGameResponse.DESCRIPTOR)),
        failures=(400, 401, 403, 404, 429, 503),
        descriptions={400: "FAILED_PRECONDITION (GAME_OVER)"},
    ),
)
async def leave_game(request: Request) -> Response:
    game_app, caller, game_id = _context(request)
    view = await game_app.leave_game(game_id, caller)
    return json_response({"game": jsonwire.fields_to_dict(pb.GameView.DESCRIPTOR, view)})


@games.post(
    "/{gameId}/rematch",
    operation_id="Rematch",
    summary="The next game of a finished one",
    description="Any seat token of the finished game: the same seats, players and rules with "
    "a new seed (created by the first call). Each seat's holder gets its new token by "
    "presenting its old one, once; the finished game's view names the rematch.",
    openapi_extra=operation(
        parameters=[_GAME_ID_PARAM],
        auth="required",
        ok=_json_ok("The new game", openapi.ref(pb.RematchResponse.DESCRIPTOR)),
        failures=(400, 401, 403, 404, 429, 503),
        descriptions={400: "FAILED_PRECONDITION (GAME_NOT_OVER)"},
    ),
)
async def rematch(request: Request) -> Response:
    game_app, caller, game_id = _context(request)
    return proto_response(await game_app.rematch(game_id, caller))


# ------------------------------------------------------------------ rulesets

rulesets = Routes(prefix="/v1/rulesets", tag="rulesets")


@rulesets.get(
    "",
    operation_id="ListRulesets",
    summary="List the presets",
    description="Every preset with its resolved options.",
    openapi_extra=operation(
        ok=_json_ok("The presets", openapi.ref(pb.ListRulesetsResponse.DESCRIPTOR)),
        failures=(),
    ),
)
async def list_rulesets(request: Request) -> Response:
    return proto_response(game_app_of(request).list_rulesets())


# ------------------------------------------------------------------ health

health = Routes(tag="health")

_HEALTH_OK: Final = _json_ok(
    "Up",
    {
        "type": "object",
        "properties": {"status": {"type": "string", "const": "ok"}},
        "required": ["status"],
    },
)


@health.get(
    "/healthz",
    operation_id="Healthz",
    summary="Liveness: the process is up",
    openapi_extra=operation(ok=_HEALTH_OK, failures=()),
)
async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


@health.get(
    "/metrics",
    operation_id="Metrics",
    summary="Prometheus metrics of this process",
    description="Calls by method and outcome, latencies, games, moves, open watches and bot "
    "decision times, in Prometheus' text format (service/ops/telemetry.py). Keep it off the "
    "public internet: scrape it from inside the deployment.",
    openapi_extra=operation(
        ok={
            "description": "The metrics",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        },
        failures=(),
    ),
)
async def metrics(request: Request) -> Response:
    return Response(game_app_of(request).metrics.exposition(), media_type=telemetry.CONTENT_TYPE)


@health.get(
    "/readyz",
    operation_id="Readyz",
    summary="Readiness: the store answers",
    openapi_extra=operation(ok=_HEALTH_OK, failures=(503,)),
)
async def readyz(request: Request) -> Response:
    if await game_app_of(request).ready():
        return JSONResponse({"status": "ok"})
    return error_response(errors.store_unavailable("readiness check: the store did not answer"))


# ------------------------------------------------------------------ errors

#: HTTP status of a routing refusal -> gRPC code and reason (as grpc-gateway's).
_ROUTING: Final[dict[int, tuple[grpc.StatusCode, str]]] = {
    400: (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"),
    404: (grpc.StatusCode.NOT_FOUND, "NOT_FOUND"),
    405: (grpc.StatusCode.UNIMPLEMENTED, "METHOD_NOT_ALLOWED"),
}


async def _on_service_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ServiceError)
    return error_response(exc)


async def _on_http_error(request: Request, exc: Exception) -> Response:
    """Unknown routes (404), wrong methods (405): a Status body, not Starlette's."""
    assert isinstance(exc, StarletteHTTPException)
    code, reason = _ROUTING.get(exc.status_code, (grpc.StatusCode.UNKNOWN, "UNKNOWN"))
    if exc.status_code == 404:
        message = f"no route {request.method} {request.url.path}"
    elif exc.status_code == 405:
        message = f"{request.method} is not allowed on {request.url.path}"
    else:
        message = str(exc.detail)
    body = status_body(code, reason, message)
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


class _NoAnswer(Response):
    """Nothing sent: there is no one to send it to."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        return None


async def _on_client_gone(request: Request, exc: Exception) -> Response:
    # The connection is gone: nothing is sent, and the call is counted as 499.
    return _NoAnswer()


async def _on_unexpected(request: Request, exc: Exception) -> Response:
    log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    body = status_body(grpc.StatusCode.INTERNAL, "INTERNAL", "internal error")
    return JSONResponse(body, status_code=500)


# ------------------------------------------------------------------ the app


def scope_header(scope: Scope, name: bytes) -> str | None:
    """The first value of header ``name`` (lower case), as Starlette reads it."""
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _name_server_span(scope: Scope) -> None:
    """Name the server span for the request's route (OpenTelemetry's
    ``{method} {http.route}``), not its raw path: the span began before
    routing, and ends with the answer's last byte, so it is named as the
    answer starts."""
    if not tracing.tracing_on():
        return
    span = trace.get_current_span()
    route = scope.get("route")
    if span.is_recording() and isinstance(route, Route):
        span.update_name(f"{scope['method']} {route.path}")
        span.set_attribute("http.route", route.path)
        span.set_attribute("railyard.operation", route.name)


class RailyardAPI(Starlette):
    """Starlette serving :class:`Routes`, with their OpenAPI document at
    :attr:`openapi_url`, and whose every request, whatever its route, passes
    through one stack: tracing (:mod:`service.ops.tracing`, when on), CORS
    (settings.cors_origins, when any), then :meth:`serve`'s timing and
    counting, then Starlette's exception handling and router."""

    title: Final = "Railyard"
    version: Final = "v1"
    description: Final = (
        "Mexican Train, the classic domino games and Chicken Foot as a service: the "
        "HTTP/JSON transport of railyard.v1.GameService (canonical proto3 JSON). Errors are "
        "google.rpc.Status bodies with one ErrorInfo."
    )
    openapi_url: Final = "/openapi.json"
    #: The OpenAPI tags, in the document's order.
    openapi_tags: Final = (
        {"name": "games", "description": "Create, view, play and watch games."},
        {"name": "rulesets", "description": "The presets."},
        {"name": "health", "description": "Liveness and readiness."},
    )

    def __init__(self, groups: Sequence[Routes], routes: Sequence[BaseRoute]) -> None:
        """``groups``' routes, then ``routes`` (not in the document)."""
        super().__init__(routes=[*(r for g in groups for r in g.routes), *routes])
        # Starlette answers "/v1/games/x/log/" with an empty 307 to the path
        # without the slash (and "/v1/games/" with one to POST-only
        # "/v1/games"): a path that is not a route is a 404 Status body.
        self.router.redirect_slashes = False
        self.groups = tuple(groups)
        self.openapi_schema: dict[str, Any] | None = None
        #: The outermost layer of the stack (:func:`create_http_app` builds it).
        self.entry: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.entry is not None and scope["type"] == "http":
            await self.entry(scope, receive, send)
        else:
            await self.serve(scope, receive, send)

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The request, timed and counted by operation and status (telemetry)."""
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        begun = time.perf_counter()
        status = 0  # no answer started: the client went away

        async def sending(message: ASGIMessage) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                _name_server_span(scope)
            await send(message)

        try:
            await super().__call__(scope, receive, sending)
        finally:
            route = scope.get("route")
            operation = route.name if isinstance(route, Route) else "unmatched"
            self.state.game_app.metrics.http_call(operation, status, time.perf_counter() - begun)

    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema:
            return self.openapi_schema
        paths: dict[str, dict[str, Any]] = {}
        for group in self.groups:
            for path, method, described in group.operations:
                paths.setdefault(path, {})[method] = described
        document: dict[str, Any] = {
            "openapi": "3.1.0",
            "info": {"title": self.title, "description": self.description, "version": self.version},
            "paths": paths,
            "tags": list(self.openapi_tags),
        }
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        schemas[APPLY_MOVE_BODY] = openapi.message_schema(
            pb.ApplyMoveRequest.DESCRIPTOR, omit={"game_id"}, limits=FIELD_LIMITS, wire_input=True
        )
        schemas[APPLY_MOVE_BODY]["title"] = APPLY_MOVE_BODY
        document["components"]["securitySchemes"] = {
            _API_KEY: {
                "type": "apiKey",
                "in": "header",
                "name": "x-api-key",
                "description": "An operator's API key: CreateGame needs one where the "
                "operator configured any.",
            },
            _SEAT_TOKEN: {
                "type": "http",
                "scheme": "bearer",
                "description": "A seat token returned by CreateGame. Without it the "
                "caller is a spectator.",
            },
        }
        self.openapi_schema = openapi.add_components(document, [pb.DESCRIPTOR], FIELD_LIMITS)
        return self.openapi_schema


def _openapi_document(request: Request) -> Response:
    api = request.app
    assert isinstance(api, RailyardAPI)
    return JSONResponse(api.openapi())


def create_http_app(app: GameApp) -> RailyardAPI:
    """The HTTP/JSON transport of ``app`` (serve it with any ASGI server)."""
    api = RailyardAPI(
        # The games first: a request is matched against the routes in order
        # (see games); the table at /, after every API route.
        [games, rulesets, health],
        [
            Route(RailyardAPI.openapi_url, _openapi_document, methods=["GET"], name="OpenAPI"),
            *docs.routes(RailyardAPI.title, RailyardAPI.openapi_url),
            *web.routes,
        ],
    )
    api.state.game_app = app
    api.state.streams_closing = asyncio.Event()
    # The stack every request passes, from the inside out; a layer that is off
    # is not there at all (nothing to pay per request).
    entry: ASGIApp = api.serve
    origins = cors_origin_list(app.settings.cors_origins)
    if origins:
        entry = CORSMiddleware(
            entry,
            allow_origins=origins,
            allow_methods=["GET", "POST"],
            # Bearer tokens, JSON bodies, and EventSource-style resumption.
            allow_headers=["authorization", "content-type", "last-event-id", "x-api-key"],
            expose_headers=["retry-after"],  # API.md: a 429 says when to retry
            max_age=600,
        )
    if app.tracer_provider is not None:
        # The server span, joined to the caller's trace by its traceparent
        # header. Its own HTTP metrics are off (the railyard_http_* ones count
        # every call by operation), and so are its spans per ASGI message.
        entry = OpenTelemetryMiddleware(
            entry,
            tracer_provider=app.tracer_provider,
            meter_provider=NoOpMeterProvider(),
            exclude_spans=["receive", "send"],
        )
    if entry is not api.serve:
        api.entry = entry
    api.add_exception_handler(ServiceError, _on_service_error)
    api.add_exception_handler(ClientGoneError, _on_client_gone)
    api.add_exception_handler(StarletteHTTPException, _on_http_error)
    api.add_exception_handler(Exception, _on_unexpected)
    return api
