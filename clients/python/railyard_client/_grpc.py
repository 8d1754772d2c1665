"""The gRPC transport: the generated stubs of proto/railyard/v1, one channel
per endpoint, refusals turned into :class:`RailyardError`."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Generator, Mapping, Sequence
from typing import Any, Final, TypeVar

import grpc
from google.protobuf.message import Message
from railyard_api import game_service_pb2 as pb
from railyard_api import game_service_pb2_grpc as pb_grpc

from railyard_client.errors import from_grpc

#: Each client its own connection. grpc's channels to one address otherwise
#: share one HTTP/2 connection in the process, and the service takes only
#: so many calls at once on a connection (16 by default, --grpc-max-streams):
#: many clients in one program (railyard-loadtest's players, a platform's
#: games) would queue on it and, past the cap, have calls refused with
#: UNAVAILABLE.
CHANNEL_OPTIONS: Final = (("grpc.use_local_subchannel_pool", 1),)

M = TypeVar("M", bound=Message)

#: A line per call at DEBUG (``railyard-bot --verbose``), as httpx writes
#: one per HTTP request: grpc itself says nothing of the calls it makes.
log = logging.getLogger("railyard_client.grpc")


def _log_call(
    endpoint: str, method: str, error: grpc.RpcError | None = None, status: str = "OK"
) -> None:
    if not log.isEnabledFor(logging.DEBUG):
        return
    if error is not None:
        code = getattr(error, "code", None)
        found = code() if callable(code) else None
        status = found.name if isinstance(found, grpc.StatusCode) else "failed"
    log.debug("gRPC call: %s %s %s", endpoint, method, status)


def _target(endpoint: str) -> tuple[str, bool]:
    """A channel target from ``grpc://host:port``, ``grpcs://host:port`` or ``host:port``."""
    if endpoint.startswith("grpcs://"):
        return endpoint.removeprefix("grpcs://"), True
    return endpoint.removeprefix("grpc://"), False


def _metadata(token: str | None, extra: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    return ((("authorization", f"Bearer {token}"),) if token else ()) + extra


def _extra_metadata(headers: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    # gRPC metadata keys are lowercase ASCII; an HTTP header name is not case-sensitive.
    return tuple((name.lower(), value) for name, value in (headers or {}).items())


class GrpcTransport:
    """Blocking gRPC calls to one of ``endpoints``."""

    def __init__(
        self,
        endpoints: Sequence[str],
        timeout: float = 10.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.endpoints = list(endpoints)
        self.timeout = timeout
        self._extra = _extra_metadata(headers)
        self._index = 0
        self._channels: dict[int, grpc.Channel] = {}

    @property
    def endpoint(self) -> str:
        return self.endpoints[self._index]

    def rotate(self) -> None:
        self._index = (self._index + 1) % len(self.endpoints)

    def _stub(self) -> Any:
        channel = self._channels.get(self._index)
        if channel is None:
            target, secure = _target(self.endpoint)
            channel = (
                grpc.secure_channel(target, grpc.ssl_channel_credentials(), CHANNEL_OPTIONS)
                if secure
                else grpc.insecure_channel(target, CHANNEL_OPTIONS)
            )
            self._channels[self._index] = channel
        return pb_grpc.GameServiceStub(channel)

    def unary(self, method: str, request: Message, into: M, token: str | None) -> M:
        try:
            answer: M = getattr(self._stub(), method)(
                request, metadata=_metadata(token, self._extra), timeout=self.timeout
            )
        except grpc.RpcError as exc:
            _log_call(self.endpoint, method, exc)
            raise from_grpc(exc) from exc
        _log_call(self.endpoint, method)
        return answer

    def watch(
        self, game_id: str, after_version: int | None, token: str | None, reconnecting: bool
    ) -> Generator[pb.GameEvent, None, None]:
        del reconnecting  # gRPC has one way to say where to resume
        request = pb.WatchGameRequest(game_id=game_id)
        if after_version is not None:
            request.after_version = after_version
        _log_call(self.endpoint, "WatchGame", status="opening the stream")
        call = self._stub().WatchGame(request, metadata=_metadata(token, self._extra))
        try:
            yield from call
        except grpc.RpcError as exc:
            raise from_grpc(exc) from exc
        finally:
            call.cancel()

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()


class AsyncGrpcTransport:
    """The asyncio twin of :class:`GrpcTransport` (``grpc.aio``)."""

    def __init__(
        self,
        endpoints: Sequence[str],
        timeout: float = 10.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.endpoints = list(endpoints)
        self.timeout = timeout
        self._extra = _extra_metadata(headers)
        self._index = 0
        self._channels: dict[int, grpc.aio.Channel] = {}

    @property
    def endpoint(self) -> str:
        return self.endpoints[self._index]

    def rotate(self) -> None:
        self._index = (self._index + 1) % len(self.endpoints)

    def _stub(self) -> Any:
        channel = self._channels.get(self._index)
        if channel is None:
            target, secure = _target(self.endpoint)
            channel = (
                grpc.aio.secure_channel(target, grpc.ssl_channel_credentials(), CHANNEL_OPTIONS)
                if secure
                else grpc.aio.insecure_channel(target, CHANNEL_OPTIONS)
            )
            self._channels[self._index] = channel
        return pb_grpc.GameServiceStub(channel)

    async def unary(self, method: str, request: Message, into: M, token: str | None) -> M:
        try:
            answer: M = await getattr(self._stub(), method)(
                request, metadata=_metadata(token, self._extra), timeout=self.timeout
            )
        except grpc.RpcError as exc:
            _log_call(self.endpoint, method, exc)
            raise from_grpc(exc) from exc
        _log_call(self.endpoint, method)
        return answer

    async def watch(
        self, game_id: str, after_version: int | None, token: str | None, reconnecting: bool
    ) -> AsyncGenerator[pb.GameEvent, None]:
        del reconnecting
        request = pb.WatchGameRequest(game_id=game_id)
        if after_version is not None:
            request.after_version = after_version
        _log_call(self.endpoint, "WatchGame", status="opening the stream")
        call = self._stub().WatchGame(request, metadata=_metadata(token, self._extra))
        try:
            async for event in call:
                yield event
        except grpc.RpcError as exc:
            raise from_grpc(exc) from exc
        finally:
            call.cancel()

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close(None)
        self._channels.clear()
