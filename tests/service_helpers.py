"""Helpers shared by the service tests: servers on free ports, stores, clients."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from railyard_api import game_service_pb2 as pb
from railyard_api import game_service_pb2_grpc as pb_grpc
from service.app import GameApp
from service.settings import Settings
from service.store import Store
from service.store.memory import MemoryStore
from service.transports.grpc.server import create_grpc_server

T = TypeVar("T")


def run(coro: Awaitable[T]) -> T:
    return asyncio.run(coro)  # type: ignore[arg-type]


def make_store(kind: str, redis_url: str | None) -> Store:
    if kind == "memory":
        return MemoryStore()
    from service.store.redis import RedisStore

    assert redis_url is not None
    return RedisStore(redis_url)


@asynccontextmanager
async def grpc_service(
    store: Store, settings: Settings | None = None
) -> AsyncIterator[tuple[pb_grpc.GameServiceAsyncStub, grpc.aio.Channel, GameApp]]:
    """A real gRPC server on a free loopback port, and a client stub to it."""
    app = GameApp(store, settings)
    server, port = create_grpc_server(app, "127.0.0.1", 0)
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield pb_grpc.GameServiceStub(channel), channel, app
    finally:
        await channel.close()
        await server.stop(None)


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def error_info(exc: grpc.aio.AioRpcError) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    """The status code, ErrorInfo reason and metadata of a failed call."""
    status = rpc_status.from_call(exc)  # type: ignore[arg-type]
    assert status is not None, f"no google.rpc.Status in {exc!r}"
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    return exc.code(), info.reason, dict(info.metadata)


async def expect_error(
    call: Callable[[], Awaitable[Any]],
) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    try:
        await call()
    except grpc.aio.AioRpcError as exc:
        return error_info(exc)
    raise AssertionError("the call succeeded")


def people(n: int, bots: dict[int, int] | None = None) -> list[pb.Player]:
    bots = bots or {}
    return [pb.Player(display_name=f"P{i}", bot=bots.get(i, 0)) for i in range(n)]  # type: ignore[arg-type]
