"""What the transports make of malformed input, against real servers (gRPC
and uvicorn over one GameApp): the ``authorization`` header, request bytes
that do not decode, paths with a trailing slash, enums of the wrong type.

Every refusal is the API's (API.md Errors): the same code and reason over
both transports, a ``google.rpc.Status`` body with its ErrorInfo, never a
redirect, a traceback or a lenient guess.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2

from railyard_api import game_service_pb2 as pb
from service.store.memory import MemoryStore
from tests.service_helpers import error_info, grpc_service, people, run
from tests.test_service_resilience import Instance, instance

#: Far from any version a new game has: a seat's ApplyMove is refused
#: (VERSION_MISMATCH) after the token is judged, and the game is left as is.
STALE = 1_000_000
CODE_NAMES = {code.value[0]: code.name for code in grpc.StatusCode}


def status_of(body: dict[str, Any]) -> tuple[str, str, dict[str, str], str]:
    """The code name, ErrorInfo reason, metadata and message of an HTTP error body."""
    status = json_format.ParseDict(body, status_pb2.Status())
    info = error_details_pb2.ErrorInfo()
    assert len(status.details) == 1, body
    assert status.details[0].Unpack(info), body
    return CODE_NAMES[status.code], info.reason, dict(info.metadata), status.message


# ------------------------------------------------------------------ authorization

#: (header value, or None for no header; what it is). Absent: a spectator;
#: ``Bearer <token>`` (any case of the scheme): the seat; anything else, an
#: empty value included, is UNAUTHENTICATED on every call.
VALID = "valid"
SPECTATOR = "spectator"
MALFORMED = "malformed"
AUTHORIZATION_CASES: list[tuple[str | None, str]] = [
    (None, SPECTATOR),
    ("Bearer {token}", VALID),
    ("bearer {token}", VALID),
    ("BEARER   {token}", VALID),
    ("", MALFORMED),
    ("   ", MALFORMED),
    ("Basic YWxhZGRpbjpvcGVuc2VzYW1l", MALFORMED),
    ("Bearer", MALFORMED),
    ("Bearer    ", MALFORMED),
    ("Token {token}", MALFORMED),
    ("token", MALFORMED),
    ("{token}", MALFORMED),
    ("Bearer {token} {token}", MALFORMED),
]

#: What each call answers (code name, reason) for each kind of caller.
EXPECTED: dict[str, dict[str, tuple[str, str]]] = {
    SPECTATOR: {
        "GetGame": ("OK", ""),
        "ListLegalMoves": ("UNAUTHENTICATED", "UNAUTHENTICATED"),
        "ApplyMove": ("UNAUTHENTICATED", "UNAUTHENTICATED"),
    },
    VALID: {
        "GetGame": ("OK", ""),
        "ListLegalMoves": ("OK", ""),
        "ApplyMove": ("ABORTED", "VERSION_MISMATCH"),
    },
    MALFORMED: {
        "GetGame": ("UNAUTHENTICATED", "UNAUTHENTICATED"),
        "ListLegalMoves": ("UNAUTHENTICATED", "UNAUTHENTICATED"),
        "ApplyMove": ("UNAUTHENTICATED", "UNAUTHENTICATED"),
    },
}


async def grpc_answer(call: Callable[[], Awaitable[Any]]) -> tuple[str, str, str]:
    """(code name, reason, message) of a gRPC call; ("OK", "", "") when it succeeds."""
    try:
        await call()
    except grpc.aio.AioRpcError as exc:
        code, reason, _ = error_info(exc)
        return code.name, reason, exc.details() or ""
    return "OK", "", ""


async def raw_http(
    base_url: httpx.URL, method: str, path: str, headers: list[tuple[str, str]], body: Any = None
) -> tuple[int, bytes]:
    """(status, body) of one request written by hand: httpx (h11) refuses to
    send a header value with spaces around it, and a client may well."""
    payload = b"" if body is None else json.dumps(body).encode()
    head = [f"{method} {path} HTTP/1.1", f"host: {base_url.host}", "connection: close"]
    head += [f"{name}: {value}" for name, value in headers]
    head += ["content-type: application/json", f"content-length: {len(payload)}"]
    assert base_url.port is not None
    reader, writer = await asyncio.open_connection(base_url.host, base_url.port)
    try:
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)
        answer = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def http_answer(status: int, body: bytes) -> tuple[str, str, str]:
    if status == 200:
        return "OK", "", ""
    code, reason, _, message = status_of(json.loads(body))
    return code, reason, message


async def every_call(
    inst: Instance, game_id: str, header: list[tuple[str, str]]
) -> dict[str, dict[str, tuple[str, str, str]]]:
    """Each seat call's answer over each transport, sending ``header``."""
    stub, base = inst.stub, inst.http.base_url
    draw = pb.Move(draw=pb.Move.Draw())
    move = pb.ApplyMoveRequest(game_id=game_id, move=draw, expected_version=STALE)
    body = {"move": {"draw": {}}, "expectedVersion": str(STALE)}
    url = f"/v1/games/{game_id}"
    return {
        "GetGame": {
            "grpc": await grpc_answer(
                lambda: stub.GetGame(pb.GetGameRequest(game_id=game_id), metadata=header)
            ),
            "http": http_answer(*await raw_http(base, "GET", url, header)),
        },
        "ListLegalMoves": {
            "grpc": await grpc_answer(
                lambda: stub.ListLegalMoves(
                    pb.ListLegalMovesRequest(game_id=game_id), metadata=header
                )
            ),
            "http": http_answer(*await raw_http(base, "GET", f"{url}/legal-moves", header)),
        },
        "ApplyMove": {
            "grpc": await grpc_answer(lambda: stub.ApplyMove(move, metadata=header)),
            "http": http_answer(*await raw_http(base, "POST", f"{url}/moves", header, body)),
        },
    }


def test_authorization_is_parsed_alike_on_both_transports() -> None:
    """API.md Transports (seat authentication): one parser, one answer per
    header over gRPC and HTTP; a malformed header is UNAUTHENTICATED and its
    message says the form, never a silent spectator."""

    async def scenario() -> None:
        async with instance(MemoryStore()) as inst:
            created = await inst.stub.CreateGame(
                pb.CreateGameRequest(players=people(2), seed="auth-parity")
            )
            game_id, token = created.game.game_id, created.seats[0].token
            for template, kind in AUTHORIZATION_CASES:
                header = (
                    [] if template is None else [("authorization", template.format(token=token))]
                )
                answers = await every_call(inst, game_id, header)
                for call, by_transport in answers.items():
                    for transport, (code, reason, message) in by_transport.items():
                        where = f"{call} over {transport} with {template!r}"
                        assert (code, reason) == EXPECTED[kind][call], where
                        if kind == MALFORMED:
                            assert "Bearer <" in message, where
            # Two authorization headers: which one would be meant is a guess.
            twice = [("authorization", f"Bearer {token}"), ("authorization", "Bearer other")]
            for call, by_transport in (await every_call(inst, game_id, twice)).items():
                for transport, (code, reason, _) in by_transport.items():
                    assert (code, reason) == EXPECTED[MALFORMED][call], (call, transport)
            # Nothing above changed the game.
            view = await inst.stub.GetGame(pb.GetGameRequest(game_id=game_id))
            assert view.version == created.game.version

    run(scenario())


# ------------------------------------------------------------------ undecodable gRPC requests

#: Field 1 (every request's game_id, and the health check's service) holding
#: bytes that are not UTF-8, which proto3 refuses for a string; and a field
#: cut short.
NOT_UTF8 = b"\x0a\x02\xff\xfe"
TRUNCATED = b"\x0a\x09abc"
UNDECODABLE = [
    ("/railyard.v1.GameService/GetGame", "unary"),
    ("/railyard.v1.GameService/ListLegalMoves", "unary"),
    ("/railyard.v1.GameService/ApplyMove", "unary"),
    ("/railyard.v1.GameService/GetGameLog", "unary"),
    ("/railyard.v1.GameService/CreateGame", "unary"),
    ("/railyard.v1.GameService/WatchGame", "stream"),
    ("/grpc.health.v1.Health/Check", "unary"),
]


@pytest.mark.parametrize("raw", [NOT_UTF8, TRUNCATED], ids=["not-utf8", "truncated"])
def test_a_request_that_does_not_decode_is_invalid_argument(
    raw: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    """API.md Errors: a malformed request is INVALID_ARGUMENT with the house
    ErrorInfo, over gRPC too (grpc's own answer was UNKNOWN "Unexpected
    DecodeError" with a traceback in the log)."""

    async def scenario() -> None:
        async with grpc_service(MemoryStore()) as (_, channel, _):
            for method, kind in UNDECODABLE:
                if kind == "unary":
                    call = channel.unary_unary(method)
                    answer = call(raw, timeout=10)
                else:
                    stream = channel.unary_stream(method)(raw, timeout=10)
                    answer = stream.read()
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await answer
                assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (
                    method,
                    refused.value.details(),
                )
                code, reason, _ = error_info(refused.value)
                assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT")

    with caplog.at_level(logging.WARNING):
        run(scenario())
    tracebacks = [record.getMessage() for record in caplog.records if record.exc_info]
    assert not tracebacks


# ------------------------------------------------------------------ trailing slashes


def test_no_path_answers_a_redirect() -> None:
    """API.md Errors: every HTTP answer is the API's; a path with a trailing
    slash is an unknown route (404 with a Status body), as any other unknown
    path is, never Starlette's empty 307."""

    async def scenario() -> None:
        async with instance(MemoryStore()) as inst:
            created = await inst.stub.CreateGame(pb.CreateGameRequest(players=people(2)))
            game = f"/v1/games/{created.game.game_id}"
            paths = [
                ("GET", "/v1/games/"),
                ("POST", "/v1/games/"),
                ("GET", "/v1/games//"),
                ("GET", f"{game}/"),
                ("GET", f"{game}//"),
                ("GET", f"{game}/log/"),
                ("GET", f"{game}/legal-moves/"),
                ("GET", f"{game}/events/"),
                ("POST", f"{game}/moves/"),
                ("POST", "/v1/games//moves"),
                ("GET", "/v1/rulesets/"),
                ("GET", "/healthz/"),
                ("GET", "/readyz/"),
                ("GET", "/openapi.json/"),
            ]
            for method, path in paths:
                response = await inst.http.request(
                    method, path, json={} if method == "POST" else None
                )
                assert response.status_code == 404, (method, path, response.status_code)
                code, reason, _, _ = status_of(response.json())
                assert (code, reason) == ("NOT_FOUND", "NOT_FOUND"), (method, path)
            # The routes themselves still answer.
            for path in (game, f"{game}/log", "/v1/rulesets", "/healthz"):
                assert (await inst.http.get(path)).status_code == 200, path

    run(scenario())


# ------------------------------------------------------------------ enums over HTTP

#: Not an enum value in canonical proto3 JSON (its name, or an integer that
#: is one of its numbers); json_format.ParseDict took int() of the first three.
WRONG_ENUMS: list[Any] = [1.5, True, "1", 99, -1, "BOT_LEVEL_NOPE", "", [1], {}]


def test_enums_take_only_their_names_or_numbers() -> None:
    """API.md Transports: canonical proto3 JSON, so an enum is its value's
    name or number; a wrong type or an unknown value is INVALID_ARGUMENT
    naming the field, never a guess (``"bot": true`` was a random bot)."""

    async def scenario() -> None:
        async with instance(MemoryStore()) as inst:

            async def create(body: dict[str, Any]) -> httpx.Response:
                return await inst.http.post("/v1/games", json=body)

            def bot_players(bot: Any) -> list[dict[str, Any]]:
                return [{"displayName": "Ana"}, {"displayName": "Robo", "bot": bot}]

            for wrong in WRONG_ENUMS:
                for body, field in (
                    ({"players": bot_players(wrong)}, "players[1].bot"),
                    (
                        {"players": bot_players(None), "ruleset": {"handSizeTable": wrong}},
                        "ruleset.handSizeTable",
                    ),
                    ({"players": bot_players(None), "ruleset": {"game": wrong}}, "ruleset.game"),
                    # The proto field name is accepted as a key; the error names the JSON name.
                    (
                        {"players": bot_players(None), "ruleset": {"first_player": wrong}},
                        "ruleset.firstPlayer",
                    ),
                ):
                    response = await create(body)
                    assert response.status_code == 400, (body, response.text)
                    code, reason, metadata, _ = status_of(response.json())
                    assert (code, reason) == ("INVALID_ARGUMENT", "INVALID_ARGUMENT"), body
                    assert metadata.get("field") == field, (body, metadata)
            for right, level in (
                ("BOT_LEVEL_GREEDY", pb.BOT_LEVEL_GREEDY),
                (1, pb.BOT_LEVEL_RANDOM),
                (3.0, pb.BOT_LEVEL_EXPERT),  # a JSON number with an integer value
                (None, pb.BOT_LEVEL_UNSPECIFIED),  # null: the field's default
            ):
                response = await create({"players": bot_players(right)})
                assert response.status_code == 200, (right, response.text)
                robo = response.json()["game"]["players"][1]
                assert robo.get("bot", "BOT_LEVEL_UNSPECIFIED") == pb.BotLevel.Name(level), right
            response = await create(
                {"players": bot_players(None), "ruleset": {"handSizeTable": 1, "firstPlayer": 1}}
            )
            assert response.status_code == 200, response.text
            ruleset = response.json()["game"]["ruleset"]
            assert ruleset["handSizeTable"] == pb.HandSizeTable.Name(1)
            assert ruleset["firstPlayer"] == pb.FirstPlayer.Name(1)

    run(scenario())
