"""The clients: :class:`Client` (blocking) and :class:`AsyncClient` (asyncio),
each over gRPC or HTTP/JSON, chosen by the endpoint's scheme.

Every method of API.md's GameService and of tables.md's tables, answering
the generated protobuf messages (``railyard_client.pb``) on both
transports. Refusals raise :class:`~railyard_client.errors.RailyardError`.
Transient failures (a replica or the store away, a rate limit) are retried,
on the next endpoint when several are given; CreateGame and ApplyMove always
carry a ``requestId``, so a retry is answered with the first outcome and
never applied twice. The table calls have no ``requestId``: they are
retried only after a refusal that did nothing (``is_unapplied``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Generator,
    Iterator,
    Mapping,
    Sequence,
)
from typing import Protocol, TypeVar

from google.protobuf.message import Message
from railyard_api import game_service_pb2 as pb

from railyard_client._common import (
    MoveLike,
    PlayerLike,
    RetryPolicy,
    WatchCursor,
    apply_request,
    create_request,
    ended_early,
    is_transient,
    is_unapplied,
    join_request,
    new_request_id,
)
from railyard_client._grpc import AsyncGrpcTransport, GrpcTransport
from railyard_client._http import AsyncHttpTransport, HttpTransport
from railyard_client.errors import RailyardError

M = TypeVar("M", bound=Message)
T = TypeVar("T")

Endpoints = str | Sequence[str]


def _endpoints(endpoints: Endpoints) -> tuple[list[str], bool]:
    """The endpoint list and whether it speaks HTTP (``http(s)://``) or gRPC."""
    found = [endpoints] if isinstance(endpoints, str) else list(endpoints)
    if not found:
        raise ValueError("no endpoint given")
    kinds = {e.startswith(("http://", "https://")) for e in found}
    if len(kinds) != 1:
        raise ValueError(f"endpoints mix HTTP and gRPC: {found}")
    return found, kinds.pop()


class _Transport(Protocol):
    def rotate(self) -> None: ...
    def unary(self, method: str, request: Message, into: M, token: str | None) -> M: ...
    def watch(
        self, game_id: str, after_version: int | None, token: str | None, reconnecting: bool
    ) -> Generator[pb.GameEvent, None, None]: ...
    def close(self) -> None: ...


class _AsyncTransport(Protocol):
    def rotate(self) -> None: ...
    async def unary(self, method: str, request: Message, into: M, token: str | None) -> M: ...
    def watch(
        self, game_id: str, after_version: int | None, token: str | None, reconnecting: bool
    ) -> AsyncGenerator[pb.GameEvent, None]: ...
    async def close(self) -> None: ...


class Client:
    """A blocking client.

    ``endpoints``: ``http://host:8080`` (HTTP/JSON) or ``host:50051`` /
    ``grpc://host:50051`` (gRPC), or a list of replicas of one kind.
    ``token``: the default seat token (each call may pass its own).
    ``headers``: sent with every call, as HTTP headers or gRPC metadata
    (an operator's API key: ``{"x-api-key": key}``).
    """

    def __init__(
        self,
        endpoints: Endpoints,
        *,
        token: str | None = None,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        max_reconnects: int = 8,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        found, http = _endpoints(endpoints)
        self.transport: _Transport = (
            HttpTransport(found, timeout, headers)
            if http
            else GrpcTransport(found, timeout, headers)
        )
        self.token = token
        self.retry = retry or RetryPolicy()
        self.max_reconnects = max_reconnects
        self.sleep: Callable[[float], None] = time.sleep

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.transport.close()

    def _token(self, token: str | None) -> str | None:
        return self.token if token is None else token

    def _call(
        self,
        method: str,
        request: Message,
        into: M,
        token: str | None,
        repeat: Callable[[RailyardError], bool] = is_transient,
    ) -> M:
        """One call; repeated (next endpoint) while ``repeat`` says its refusal may pass."""
        failures = 0
        while True:
            try:
                return self.transport.unary(method, request, into, self._token(token))
            except RailyardError as error:
                failures += 1
                if not repeat(error) or failures >= self.retry.attempts:
                    raise
                self.transport.rotate()
                self.sleep(self.retry.delay(failures, error))

    def create_game(
        self,
        players: Sequence[PlayerLike],
        ruleset: pb.Ruleset | str | None = None,
        *,
        seed: str = "",
        request_id: str | None = None,
        table: pb.TableSettings | None = None,
        turn_timeout_seconds: int = 0,
    ) -> pb.CreateGameResponse:
        """CreateGame. A retried request answers ``replayed`` with no seat tokens
        (API.md: tokens are shown once), but never creates a second game.

        A seat given as ``None`` (or ``pb.Player(open=True)``) is open: the game
        waits for someone to take it with :meth:`join_game`, or for its host
        to :meth:`start_game` it (tables.md). ``table``: visibility, the bots'
        level, spectators; the answer then carries the ``host_token`` and, for
        a private table with open seats, the ``join_code``.
        """
        request = create_request(
            players,
            ruleset,
            seed,
            request_id or new_request_id(),
            table=table,
            turn_timeout_seconds=turn_timeout_seconds,
        )
        return self._call("CreateGame", request, pb.CreateGameResponse(), None)

    def get_game(self, game_id: str, *, token: str | None = None) -> pb.GameView:
        return self._call("GetGame", pb.GetGameRequest(game_id=game_id), pb.GameView(), token)

    def list_legal_moves(
        self, game_id: str, *, token: str | None = None
    ) -> pb.ListLegalMovesResponse:
        request = pb.ListLegalMovesRequest(game_id=game_id)
        return self._call("ListLegalMoves", request, pb.ListLegalMovesResponse(), token)

    def apply_move(
        self,
        game_id: str,
        move: MoveLike,
        *,
        token: str | None = None,
        expected_version: int | None = None,
        request_id: str | None = None,
    ) -> pb.ApplyMoveResponse:
        """ApplyMove; ``request_id`` defaults to a fresh one, kept across retries."""
        request = apply_request(game_id, move, expected_version, request_id or new_request_id())
        return self._call("ApplyMove", request, pb.ApplyMoveResponse(), token)

    def get_game_log(self, game_id: str) -> pb.GetGameLogResponse:
        request = pb.GetGameLogRequest(game_id=game_id)
        return self._call("GetGameLog", request, pb.GetGameLogResponse(), None)

    def list_rulesets(self) -> pb.ListRulesetsResponse:
        return self._call("ListRulesets", pb.ListRulesetsRequest(), pb.ListRulesetsResponse(), None)

    def join_game(
        self,
        game_id: str | None = None,
        join_code: str | None = None,
        seat: int | None = None,
        display_name: str = "",
    ) -> pb.JoinGameResponse:
        """JoinGame: take an open seat of a waiting table, a public one by its
        id, a private one by its code (alone, or with its id); ``seat``: that
        one (else the lowest open). The answer's ``seat.token`` is the seat's
        and is shown only here; it is not kept as the client's ``token``.

        Repeated only after a refusal that took nothing (``is_unapplied``):
        JoinGame has no requestId, and a lost answer may have taken a seat.
        """
        request = join_request(game_id, join_code, seat, display_name)
        return self._call("JoinGame", request, pb.JoinGameResponse(), None, is_unapplied)

    def start_game(self, game_id: str, host_token: str | None = None) -> pb.StartGameResponse:
        """StartGame: the table's host (``host_token``, else the client's
        token) starts it now; its open seats are played by bots of the
        table's level."""
        request = pb.StartGameRequest(game_id=game_id)
        return self._call("StartGame", request, pb.StartGameResponse(), host_token, is_unapplied)

    def list_games(self, page_size: int = 0, page_token: str = "") -> pb.ListGamesResponse:
        """ListGames: one page of the joinable public tables, oldest first
        (``page_size`` 0: 50, at most 100); pass ``next_page_token`` back as
        ``page_token`` for the next (empty: the last page). :meth:`iter_games`
        does that for you."""
        request = pb.ListGamesRequest(page_size=page_size, page_token=page_token)
        return self._call("ListGames", request, pb.ListGamesResponse(), None)

    def iter_games(self, page_size: int = 0) -> Iterator[pb.GameSummary]:
        """Every joinable public table, page after page of :meth:`list_games`.
        A table that stays joinable while it pages comes once; one that fills
        up or starts meanwhile may not come at all (tables.md)."""
        page_token = ""
        while True:
            page = self.list_games(page_size, page_token)
            yield from page.games
            page_token = page.next_page_token
            if not page_token:
                return

    def leave_game(self, game_id: str, *, token: str | None = None) -> pb.LeaveGameResponse:
        """LeaveGame: give up the seat. Before the start it opens again;
        during play a bot of the table's level plays it, and the token stops
        working."""
        request = pb.LeaveGameRequest(game_id=game_id)
        return self._call("LeaveGame", request, pb.LeaveGameResponse(), token, is_unapplied)

    def rematch(self, game_id: str, *, token: str | None = None) -> pb.RematchResponse:
        """Rematch: the next game of a finished one (the same seats and rules,
        a new seed), created by the first call for it. The answer's
        ``seat.token`` is the seat's new token, given to the first
        presentation of its old one only (later answers have no ``seat``)."""
        request = pb.RematchRequest(game_id=game_id)
        return self._call("Rematch", request, pb.RematchResponse(), token, is_unapplied)

    def watch(
        self, game_id: str, *, token: str | None = None, after_version: int | None = None
    ) -> Iterator[pb.GameEvent]:
        """WatchGame: the snapshot, then every event after ``after_version``
        (absent: after the snapshot), each exactly once, until ``gameEnded``.

        A dropped stream (replica gone, store away, network) is reopened on
        the next endpoint from where it stopped; a reconnect's snapshot is not
        yielded again. Gives up after ``max_reconnects`` failures in a row.
        """
        cursor = WatchCursor(after_version)
        failures = 0
        while True:
            after = cursor.resume_after()
            try:
                stream = self.transport.watch(
                    game_id, after, self._token(token), cursor.reconnecting
                )
                # closing: a caller that stops early closes the connection now.
                with contextlib.closing(stream):
                    for event in stream:
                        if not cursor.accept(event):
                            continue
                        failures = 0
                        yield event
                        if event.HasField("game_ended"):
                            return
                if cursor.finished_snapshot:
                    return  # the game was over before this connection: only a snapshot
                raise ended_early(game_id)
            except RailyardError as error:
                failures += 1
                if not is_transient(error) or failures > self.max_reconnects:
                    raise
                self.transport.rotate()
                self.sleep(self.retry.delay(failures, error))


class AsyncClient:
    """The asyncio twin of :class:`Client`: the same methods, awaited;
    ``watch`` is an async iterator. ``headers`` as for :class:`Client`."""

    def __init__(
        self,
        endpoints: Endpoints,
        *,
        token: str | None = None,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        max_reconnects: int = 8,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        found, http = _endpoints(endpoints)
        self.transport: _AsyncTransport = (
            AsyncHttpTransport(found, timeout, headers)
            if http
            else AsyncGrpcTransport(found, timeout, headers)
        )
        self.token = token
        self.retry = retry or RetryPolicy()
        self.max_reconnects = max_reconnects

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.transport.close()

    def _token(self, token: str | None) -> str | None:
        return self.token if token is None else token

    async def _call(
        self,
        method: str,
        request: Message,
        into: M,
        token: str | None,
        repeat: Callable[[RailyardError], bool] = is_transient,
    ) -> M:
        failures = 0
        while True:
            try:
                return await self.transport.unary(method, request, into, self._token(token))
            except RailyardError as error:
                failures += 1
                if not repeat(error) or failures >= self.retry.attempts:
                    raise
                self.transport.rotate()
                await asyncio.sleep(self.retry.delay(failures, error))

    async def create_game(
        self,
        players: Sequence[PlayerLike],
        ruleset: pb.Ruleset | str | None = None,
        *,
        seed: str = "",
        request_id: str | None = None,
        table: pb.TableSettings | None = None,
        turn_timeout_seconds: int = 0,
    ) -> pb.CreateGameResponse:
        """As :meth:`Client.create_game`."""
        request = create_request(
            players,
            ruleset,
            seed,
            request_id or new_request_id(),
            table=table,
            turn_timeout_seconds=turn_timeout_seconds,
        )
        return await self._call("CreateGame", request, pb.CreateGameResponse(), None)

    async def get_game(self, game_id: str, *, token: str | None = None) -> pb.GameView:
        request = pb.GetGameRequest(game_id=game_id)
        return await self._call("GetGame", request, pb.GameView(), token)

    async def list_legal_moves(
        self, game_id: str, *, token: str | None = None
    ) -> pb.ListLegalMovesResponse:
        request = pb.ListLegalMovesRequest(game_id=game_id)
        return await self._call("ListLegalMoves", request, pb.ListLegalMovesResponse(), token)

    async def apply_move(
        self,
        game_id: str,
        move: MoveLike,
        *,
        token: str | None = None,
        expected_version: int | None = None,
        request_id: str | None = None,
    ) -> pb.ApplyMoveResponse:
        request = apply_request(game_id, move, expected_version, request_id or new_request_id())
        return await self._call("ApplyMove", request, pb.ApplyMoveResponse(), token)

    async def get_game_log(self, game_id: str) -> pb.GetGameLogResponse:
        request = pb.GetGameLogRequest(game_id=game_id)
        return await self._call("GetGameLog", request, pb.GetGameLogResponse(), None)

    async def list_rulesets(self) -> pb.ListRulesetsResponse:
        request = pb.ListRulesetsRequest()
        return await self._call("ListRulesets", request, pb.ListRulesetsResponse(), None)

    async def join_game(
        self,
        game_id: str | None = None,
        join_code: str | None = None,
        seat: int | None = None,
        display_name: str = "",
    ) -> pb.JoinGameResponse:
        """As :meth:`Client.join_game`."""
        request = join_request(game_id, join_code, seat, display_name)
        return await self._call("JoinGame", request, pb.JoinGameResponse(), None, is_unapplied)

    async def start_game(self, game_id: str, host_token: str | None = None) -> pb.StartGameResponse:
        """As :meth:`Client.start_game`."""
        request = pb.StartGameRequest(game_id=game_id)
        return await self._call(
            "StartGame", request, pb.StartGameResponse(), host_token, is_unapplied
        )

    async def list_games(self, page_size: int = 0, page_token: str = "") -> pb.ListGamesResponse:
        """As :meth:`Client.list_games`."""
        request = pb.ListGamesRequest(page_size=page_size, page_token=page_token)
        return await self._call("ListGames", request, pb.ListGamesResponse(), None)

    async def iter_games(self, page_size: int = 0) -> AsyncIterator[pb.GameSummary]:
        """As :meth:`Client.iter_games`."""
        page_token = ""
        while True:
            page = await self.list_games(page_size, page_token)
            for summary in page.games:
                yield summary
            page_token = page.next_page_token
            if not page_token:
                return

    async def leave_game(self, game_id: str, *, token: str | None = None) -> pb.LeaveGameResponse:
        """As :meth:`Client.leave_game`."""
        request = pb.LeaveGameRequest(game_id=game_id)
        return await self._call("LeaveGame", request, pb.LeaveGameResponse(), token, is_unapplied)

    async def rematch(self, game_id: str, *, token: str | None = None) -> pb.RematchResponse:
        """As :meth:`Client.rematch`."""
        request = pb.RematchRequest(game_id=game_id)
        return await self._call("Rematch", request, pb.RematchResponse(), token, is_unapplied)

    async def watch(
        self, game_id: str, *, token: str | None = None, after_version: int | None = None
    ) -> AsyncIterator[pb.GameEvent]:
        """As :meth:`Client.watch`."""
        cursor = WatchCursor(after_version)
        failures = 0
        while True:
            after = cursor.resume_after()
            try:
                stream = self.transport.watch(
                    game_id, after, self._token(token), cursor.reconnecting
                )
                # aclosing: a caller that stops early closes the connection now.
                async with contextlib.aclosing(stream):
                    async for event in stream:
                        if not cursor.accept(event):
                            continue
                        failures = 0
                        yield event
                        if event.HasField("game_ended"):
                            return
                if cursor.finished_snapshot:
                    return
                raise ended_early(game_id)
            except RailyardError as error:
                failures += 1
                if not is_transient(error) or failures > self.max_reconnects:
                    raise
                self.transport.rotate()
                await asyncio.sleep(self.retry.delay(failures, error))
