"""The HTTP/JSON transport (API.md: canonical proto3 JSON, SSE for WatchGame).

Answers are parsed into the same protobuf messages the gRPC transport
returns, so one client class serves both.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Generator, Mapping, Sequence
from typing import Any, Final, TypeVar
from urllib.parse import quote, urlencode

import httpx
from google.protobuf import json_format
from google.protobuf.message import Message
from railyard_api import game_service_pb2 as pb

from railyard_client.errors import from_http, transport_error

M = TypeVar("M", bound=Message)

#: The service sends a keep-alive comment at least every 15 s (API.md).
STREAM_READ_TIMEOUT: Final = 45.0
#: Failures before any byte of the request was sent: no connection was made.
_UNSENT: Final = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def _route(method: str, request: Message) -> tuple[str, str, dict[str, Any] | None]:
    """HTTP verb, path and JSON body of one call."""
    body: dict[str, Any] = json_format.MessageToDict(request)
    game_id = quote(body.pop("gameId", ""), safe="")
    match method:
        case "CreateGame":
            return "POST", "/v1/games", body
        case "GetGame":
            return "GET", f"/v1/games/{game_id}", None
        case "ListLegalMoves":
            return "GET", f"/v1/games/{game_id}/legal-moves", None
        case "ApplyMove":
            return "POST", f"/v1/games/{game_id}/moves", body
        case "GetGameLog":
            return "GET", f"/v1/games/{game_id}/log", None
        case "ListRulesets":
            return "GET", "/v1/rulesets", None
        case "JoinGame":
            # A private table by its code alone: gameId "-" (tables.md).
            return "POST", f"/v1/games/{game_id or '-'}/join", body
        case "StartGame":
            return "POST", f"/v1/games/{game_id}/start", body
        case "ListGames":
            # pageSize and pageToken, when set, as the query (AIP-158).
            query = urlencode(body)
            return "GET", f"/v1/games?{query}" if query else "/v1/games", None
        case "LeaveGame":
            return "POST", f"/v1/games/{game_id}/leave", body
        case "Rematch":
            return "POST", f"/v1/games/{game_id}/rematch", body
    raise ValueError(f"no HTTP route for {method}")


def _headers(token: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} if token else {}


def _parse(response: httpx.Response, into: M) -> M:
    if response.is_error:
        raise from_http(response.status_code, response.content, response.headers)
    return json_format.Parse(response.content, into, ignore_unknown_fields=True)


def _watch_request(
    game_id: str, after_version: int | None, token: str | None, reconnecting: bool
) -> tuple[str, dict[str, str], dict[str, str]]:
    path = f"/v1/games/{quote(game_id, safe='')}/events"
    headers = {**_headers(token), "accept": "text/event-stream"}
    params: dict[str, str] = {}
    if after_version is not None:
        # A reconnect says where it stopped the way a browser's EventSource
        # would; the first connection uses the query parameter.
        if reconnecting:
            headers["last-event-id"] = str(after_version)
        else:
            params["afterVersion"] = str(after_version)
    return path, headers, params


class _SseParser:
    """Server-Sent Events, line by line: yields (event type, data) per message."""

    def __init__(self) -> None:
        self._type = "message"
        self._data: list[str] = []

    def line(self, line: str) -> tuple[str, str] | None:
        if not line:
            if not self._data:
                self._type = "message"
                return None
            message = (self._type, "\n".join(self._data))
            self._type, self._data = "message", []
            return message
        if line.startswith(":"):
            return None  # keep-alive comment
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._type = value
        return None


def _event(kind: str, data: str) -> pb.GameEvent | None:
    if kind == "error":
        # A refusal inside an open stream (the store went away): a Status.
        raise from_http(0, data.encode(), {})
    if kind != "message":
        return None
    return json_format.Parse(data, pb.GameEvent(), ignore_unknown_fields=True)


class HttpTransport:
    """Blocking HTTP/JSON calls to one of ``endpoints`` (base URLs)."""

    def __init__(
        self,
        endpoints: Sequence[str],
        timeout: float = 10.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.endpoints = [e.rstrip("/") for e in endpoints]
        self._index = 0
        self._http = httpx.Client(timeout=timeout, headers=headers)

    @property
    def endpoint(self) -> str:
        return self.endpoints[self._index]

    def rotate(self) -> None:
        self._index = (self._index + 1) % len(self.endpoints)

    def unary(self, method: str, request: Message, into: M, token: str | None) -> M:
        verb, path, body = _route(method, request)
        try:
            response = self._http.request(
                verb,
                self.endpoint + path,
                headers=_headers(token),
                content=None if body is None else json.dumps(body),
            )
        except httpx.TransportError as exc:
            raise transport_error(exc, is_unsent=isinstance(exc, _UNSENT)) from exc
        return _parse(response, into)

    def watch(
        self, game_id: str, after_version: int | None, token: str | None, reconnecting: bool
    ) -> Generator[pb.GameEvent, None, None]:
        path, headers, params = _watch_request(game_id, after_version, token, reconnecting)
        timeout = httpx.Timeout(self._http.timeout.connect, read=STREAM_READ_TIMEOUT)
        parser = _SseParser()
        try:
            with self._http.stream(
                "GET", self.endpoint + path, headers=headers, params=params, timeout=timeout
            ) as response:
                if response.is_error:
                    response.read()
                    raise from_http(response.status_code, response.content, response.headers)
                for line in response.iter_lines():
                    message = parser.line(line)
                    if message is not None and (event := _event(*message)) is not None:
                        yield event
        except httpx.TransportError as exc:
            raise transport_error(exc) from exc

    def close(self) -> None:
        self._http.close()


class AsyncHttpTransport:
    """The asyncio twin of :class:`HttpTransport`."""

    def __init__(
        self,
        endpoints: Sequence[str],
        timeout: float = 10.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.endpoints = [e.rstrip("/") for e in endpoints]
        self._index = 0
        self._http = httpx.AsyncClient(timeout=timeout, headers=headers)

    @property
    def endpoint(self) -> str:
        return self.endpoints[self._index]

    def rotate(self) -> None:
        self._index = (self._index + 1) % len(self.endpoints)

    async def unary(self, method: str, request: Message, into: M, token: str | None) -> M:
        verb, path, body = _route(method, request)
        try:
            response = await self._http.request(
                verb,
                self.endpoint + path,
                headers=_headers(token),
                content=None if body is None else json.dumps(body),
            )
        except httpx.TransportError as exc:
            raise transport_error(exc, is_unsent=isinstance(exc, _UNSENT)) from exc
        return _parse(response, into)

    async def watch(
        self, game_id: str, after_version: int | None, token: str | None, reconnecting: bool
    ) -> AsyncGenerator[pb.GameEvent, None]:
        path, headers, params = _watch_request(game_id, after_version, token, reconnecting)
        timeout = httpx.Timeout(self._http.timeout.connect, read=STREAM_READ_TIMEOUT)
        parser = _SseParser()
        try:
            async with self._http.stream(
                "GET", self.endpoint + path, headers=headers, params=params, timeout=timeout
            ) as response:
                if response.is_error:
                    await response.aread()
                    raise from_http(response.status_code, response.content, response.headers)
                async for line in response.aiter_lines():
                    message = parser.line(line)
                    if message is not None and (event := _event(*message)) is not None:
                        yield event
        except httpx.TransportError as exc:
            raise transport_error(exc) from exc

    async def close(self) -> None:
        await self._http.aclose()
