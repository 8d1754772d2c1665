"""The gRPC transport against a real server on a free port, over both stores."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2

from railyard_api import game_service_pb2 as pb
from railyard_api import game_service_pb2_grpc as pb_grpc
from service.app import GameApp
from service.settings import Settings
from service.store.memory import MemoryStore
from service.transports.grpc.server import create_grpc_server
from tests.presets import LINE_PRESETS, players_for
from tests.service_helpers import (
    bearer,
    error_info,
    expect_error,
    grpc_service,
    make_store,
    people,
    run,
)
from tests.test_telemetry import samples, value

#: Mexican Train (two rounds of pagat) and every classic preset, whole.
GAMES = [
    pytest.param(pb.Ruleset(preset="pagat", rounds=2), id="pagat"),
    *(pytest.param(pb.Ruleset(preset=p), id=p) for p in LINE_PRESETS),
]


@pytest.mark.parametrize("ruleset", GAMES)
def test_full_game_over_grpc(store_kind: str, url: str | None, ruleset: pb.Ruleset) -> None:
    async def go() -> None:
        async with grpc_service(make_store(store_kind, url)) as (stub, _, _):
            created = await stub.CreateGame(
                pb.CreateGameRequest(
                    ruleset=ruleset,
                    players=people(players_for(ruleset.preset, 3), {1: pb.BOT_LEVEL_RANDOM}),
                    seed="grpc-full",
                )
            )
            game_id = created.game.game_id
            tokens = {s.seat: s.token for s in created.seats}
            players = len(created.game.players)
            assert sorted(tokens) == [s for s in range(players) if s != 1], "seat 1 is a bot"
            assert len(created.seats) == players - 1
            assert all(len(t) >= 32 for t in tokens.values())
            assert created.game.seed == ""
            assert created.game.seed_sha256
            view = created.game
            moves = 0
            while view.status != pb.GAME_STATUS_FINISHED:
                seat = view.current_seat
                assert seat != 1, "the bot seat is played by the service"
                legal = await stub.ListLegalMoves(
                    pb.ListLegalMovesRequest(game_id=game_id), metadata=bearer(tokens[seat])
                )
                assert legal.moves
                assert legal.version == view.version
                applied = await stub.ApplyMove(
                    pb.ApplyMoveRequest(
                        game_id=game_id, move=legal.moves[-1].move, expected_version=legal.version
                    ),
                    metadata=bearer(tokens[seat]),
                )
                assert applied.game.version >= view.version + 1
                assert [e.version for e in applied.events] == sorted(
                    e.version for e in applied.events
                )
                view = applied.game
                moves += 1
                assert view.viewer_seat == seat
                assert view.seed == "" or view.status == pb.GAME_STATUS_FINISHED
            assert view.seed == "grpc-full"
            assert list(view.winners)
            if view.HasField("line"):  # a classic game: to its target score (CL-SC-2)
                assert not view.trains
                assert view.target_score == view.ruleset.target_score
                totals = [p.score for p in view.players]
                if view.ruleset.teams:
                    totals = [view.teams[s % 2].score for s in range(len(totals))]
                    assert list(view.winners) in ([0, 2], [1, 3])
                assert all(totals[w] >= view.target_score for w in view.winners)
            log = await stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id))
            assert log.seed == "grpc-full"
            assert log.events[-1].WhichOneof("kind") == "game_ended"
            assert log.events[-1].version == view.version
            assert moves > 10

    run(go())


@pytest.mark.parametrize(
    ("ruleset", "rule_of"),
    [
        pytest.param(
            pb.Ruleset(rounds=1), {"deal": "MT-DEAL-2", "draw": "MT-TURN-2"}, id="standard"
        ),
        *(
            pytest.param(pb.Ruleset(preset=p), {"deal": "CL-DEAL-1", "draw": "CL-TURN-1"}, id=p)
            for p in LINE_PRESETS
        ),
    ],
)
def test_errors_carry_error_info_and_change_nothing(
    store_kind: str, url: str | None, ruleset: pb.Ruleset, rule_of: dict[str, str]
) -> None:
    async def go() -> None:
        async with grpc_service(make_store(store_kind, url)) as (stub, _, _):
            n = players_for(ruleset.preset or "standard", 2)
            created = await stub.CreateGame(
                pb.CreateGameRequest(ruleset=ruleset, players=people(n), seed="e")
            )
            game_id = created.game.game_id
            tokens = {s.seat: s.token for s in created.seats}
            mover = created.game.current_seat
            other = (mover + 1) % n

            async def version() -> int:
                return (await stub.GetGame(pb.GetGameRequest(game_id=game_id))).version

            draw = pb.Move(draw=pb.Move.Draw())
            code, reason, _ = await expect_error(
                lambda: stub.CreateGame(
                    pb.CreateGameRequest(ruleset=pb.Ruleset(preset="nope"), players=people(2))
                )
            )
            assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT")
            too_big = pb.Ruleset()
            too_big.CopyFrom(ruleset)
            too_big.hand_size = 30
            code, reason, meta = await expect_error(
                lambda: stub.CreateGame(pb.CreateGameRequest(ruleset=too_big, players=people(4)))
            )
            assert (code, reason, meta["rule"]) == (
                grpc.StatusCode.INVALID_ARGUMENT,
                "DEAL_DOES_NOT_FIT",
                rule_of["deal"],
            )
            cases = [
                (
                    lambda: stub.ApplyMove(pb.ApplyMoveRequest(game_id=game_id, move=draw)),
                    grpc.StatusCode.UNAUTHENTICATED,
                    "UNAUTHENTICATED",
                ),
                (
                    lambda: stub.ApplyMove(
                        pb.ApplyMoveRequest(game_id=game_id, move=draw),
                        metadata=bearer("not-a-token"),
                    ),
                    grpc.StatusCode.PERMISSION_DENIED,
                    "BAD_SEAT_TOKEN",
                ),
                (
                    lambda: stub.GetGame(pb.GetGameRequest(game_id="0" * 20)),
                    grpc.StatusCode.NOT_FOUND,
                    "GAME_NOT_FOUND",
                ),
                (
                    lambda: stub.ApplyMove(
                        pb.ApplyMoveRequest(game_id=game_id, move=draw),
                        metadata=bearer(tokens[other]),
                    ),
                    grpc.StatusCode.FAILED_PRECONDITION,
                    "NOT_YOUR_TURN",
                ),
                (
                    lambda: stub.ApplyMove(
                        pb.ApplyMoveRequest(game_id=game_id, move=pb.Move()),
                        metadata=bearer(tokens[mover]),
                    ),
                    grpc.StatusCode.INVALID_ARGUMENT,
                    "INVALID_ARGUMENT",
                ),
                (
                    lambda: stub.ApplyMove(
                        pb.ApplyMoveRequest(game_id=game_id, move=draw, expected_version=7),
                        metadata=bearer(tokens[mover]),
                    ),
                    grpc.StatusCode.ABORTED,
                    "VERSION_MISMATCH",
                ),
            ]
            for call, want_code, want_reason in cases:
                before = await version()
                code, reason, _ = await expect_error(call)
                assert (code, reason) == (want_code, want_reason)
                assert await version() == before
            # A move the rules forbid names the rule.
            legal = await stub.ListLegalMoves(
                pb.ListLegalMovesRequest(game_id=game_id), metadata=bearer(tokens[mover])
            )
            if legal.moves[0].move.WhichOneof("action") == "play":
                code, reason, meta = await expect_error(
                    lambda: stub.ApplyMove(
                        pb.ApplyMoveRequest(game_id=game_id, move=draw),
                        metadata=bearer(tokens[mover]),
                    )
                )
                assert (code, reason, meta["rule"]) == (
                    grpc.StatusCode.FAILED_PRECONDITION,
                    "ILLEGAL_MOVE",
                    rule_of["draw"],
                )
            else:
                assert not ruleset.HasField("preset"), "a classic game opens with a play"

    run(go())


def test_health() -> None:
    async def go() -> None:
        async with grpc_service(make_store("memory", None)) as (_, channel, _):
            health = health_pb2_grpc.HealthStub(channel)
            for service in ("", "railyard.v1.GameService"):
                reply = await health.Check(health_pb2.HealthCheckRequest(service=service))
                assert reply.status == health_pb2.HealthCheckResponse.SERVING

    run(go())


@pytest.mark.parametrize("version", ["v1", "v1alpha"])
def test_reflection_serves_v1_and_v1alpha(version: str) -> None:
    """Server reflection under grpc.reflection.v1 (current grpcurl and IDEs;
    grpcio-reflection ships only v1alpha) and v1alpha: it lists every service
    and describes every method of GameService, itself included. The v1
    client here is a generic stub over the v1 method path, as grpcurl is."""

    async def go() -> None:
        async with grpc_service(make_store("memory", None)) as (_, channel, _):
            method = f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo"
            call = channel.stream_stream(
                method,
                request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
                response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
            )

            async def ask(**kind: Any) -> reflection_pb2.ServerReflectionResponse:
                replies = [
                    r async for r in call(iter([reflection_pb2.ServerReflectionRequest(**kind)]))
                ]
                (reply,) = replies
                assert not reply.HasField("error_response"), reply.error_response
                return reply

            listed = await ask(list_services="")
            names = {s.name for s in listed.list_services_response.service}
            assert names == {
                "railyard.v1.GameService",
                "grpc.health.v1.Health",
                "grpc.reflection.v1.ServerReflection",
                "grpc.reflection.v1alpha.ServerReflection",
            }
            for name in sorted(names):
                reply = await ask(file_containing_symbol=name)
                files = [
                    descriptor_pb2.FileDescriptorProto.FromString(raw)
                    for raw in reply.file_descriptor_response.file_descriptor_proto
                ]
                services = {
                    f"{f.package}.{service.name}": [m.name for m in service.method]
                    for f in files
                    for service in f.service
                }
                assert name in services, (name, list(services))
                if name == "railyard.v1.GameService":
                    assert set(services[name]) == {
                        m.name for m in pb.DESCRIPTOR.services_by_name["GameService"].methods
                    }
                if name == "grpc.reflection.v1.ServerReflection":
                    (v1,) = [f for f in files if f.package == "grpc.reflection.v1"]
                    assert v1.name == "grpc/reflection/v1/reflection.proto"
                    types = {f.type_name for m in v1.message_type for f in m.field if f.type_name}
                    assert types
                    assert all(t.startswith(".grpc.reflection.v1.") for t in types)

    run(go())


def test_health_not_serving_when_redis_is_down(redis_server: object, redis_url: str) -> None:
    async def go() -> None:
        async with grpc_service(make_store("redis", redis_url)) as (stub, channel, _):
            health = health_pb2_grpc.HealthStub(channel)
            ok = await health.Check(health_pb2.HealthCheckRequest())
            assert ok.status == health_pb2.HealthCheckResponse.SERVING
            redis_server.kill()  # type: ignore[attr-defined]
            down = await health.Check(health_pb2.HealthCheckRequest())
            assert down.status == health_pb2.HealthCheckResponse.NOT_SERVING
            code, reason, _ = await expect_error(
                lambda: stub.GetGame(pb.GetGameRequest(game_id="0" * 20))
            )
            assert (code, reason) == (grpc.StatusCode.UNAVAILABLE, "STORE_UNAVAILABLE")
            redis_server.start()  # type: ignore[attr-defined]
            back = await health.Check(health_pb2.HealthCheckRequest())
            assert back.status == health_pb2.HealthCheckResponse.SERVING

    run(go())


async def read_until_failure(call: Any, into: list[pb.GameEvent]) -> None:
    while True:
        into.append(await call.read())


def test_shutdown_ends_watches_at_once_and_between_versions() -> None:
    """The closing event of a graceful shutdown: an open WatchGame ends at
    once with UNAVAILABLE / SERVER_SHUTTING_DOWN (not after the grace period,
    wherever it was), after whole versions only; the server then stops
    without waiting; watching again with afterVersion resumes exactly."""

    async def go() -> None:
        store = MemoryStore()
        app = GameApp(store, Settings(keepalive=10))
        closing = asyncio.Event()
        server, port = create_grpc_server(app, "127.0.0.1", 0, closing)
        await server.start()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.GameServiceStub(channel)
            created = await stub.CreateGame(
                pb.CreateGameRequest(
                    ruleset=pb.Ruleset(set_max=6, hand_size=7, rounds=1),
                    players=[*people(2), pb.Player(bot=pb.BOT_LEVEL_RANDOM)],
                    seed="closing",
                )
            )
            game_id = created.game.game_id
            tokens = {s.seat: s.token for s in created.seats}
            watch = stub.WatchGame(pb.WatchGameRequest(game_id=game_id))
            snapshot = await watch.read()
            assert snapshot.WhichOneof("kind") == "snapshot"
            mover = created.game.current_seat
            legal = await stub.ListLegalMoves(
                pb.ListLegalMovesRequest(game_id=game_id), metadata=bearer(tokens[mover])
            )
            applied = await stub.ApplyMove(
                pb.ApplyMoveRequest(game_id=game_id, move=legal.moves[0].move),
                metadata=bearer(tokens[mover]),
            )
            seen = [await watch.read()]  # the move's first event is on its way
            closing.set()
            begun = time.monotonic()
            with pytest.raises(grpc.aio.AioRpcError) as ended:
                await read_until_failure(watch, seen)
            assert error_info(ended.value)[:2] == (
                grpc.StatusCode.UNAVAILABLE,
                "SERVER_SHUTTING_DOWN",
            )
            assert time.monotonic() - begun < 3  # at once, not at the grace period
            # Whole versions only: the last version seen was sent entirely.
            last = seen[-1].version
            assert [e for e in seen if e.version == last] == [
                e for e in applied.events if e.version == last
            ]
            assert seen == list(applied.events[: len(seen)])
            stopping = time.monotonic()
            await server.stop(grace=5)
            assert time.monotonic() - stopping < 3  # no watch held it (grace: 5 s)

        # Another replica over the same store: afterVersion resumes exactly.
        async with grpc_service(store) as (stub, _, _):
            resumed = stub.WatchGame(pb.WatchGameRequest(game_id=game_id, after_version=last))
            assert (await resumed.read()).WhichOneof("kind") == "snapshot"
            rest = [e for e in applied.events if e.version > last]
            assert [await resumed.read() for _ in rest] == rest
            resumed.cancel()

    run(go())


def test_a_call_that_ends_first_is_cancelled_on_the_loop(caplog: pytest.LogCaptureFixture) -> None:
    """A call that ends before its handler (here WatchGame's deadline, on a
    game where nothing happens) cancels the handler's coroutine on the event
    loop, from grpc's thread: the watch's place is free again, the call is
    counted CANCELLED, nothing is logged as the handler's error, and the
    next calls are served as before."""

    async def go() -> None:
        async with grpc_service(make_store("memory", None)) as (stub, _, app):
            created = await stub.CreateGame(
                pb.CreateGameRequest(ruleset=pb.Ruleset(preset="pagat"), players=people(2))
            )
            game_id = created.game.game_id
            for ended_so_far in range(1, 4):
                watch = stub.WatchGame(pb.WatchGameRequest(game_id=game_id), timeout=0.5)
                assert (await watch.read()).WhichOneof("kind") == "snapshot"
                assert app.watching == 1
                with pytest.raises(grpc.aio.AioRpcError) as ended:
                    await watch.read()
                assert ended.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
                # The handler's end on the loop follows the client's.
                deadline = time.monotonic() + 5
                while cancelled(app) < ended_so_far and time.monotonic() < deadline:
                    await asyncio.sleep(0.02)
                assert (cancelled(app), app.watching) == (ended_so_far, 0)
            assert (await stub.GetGame(pb.GetGameRequest(game_id=game_id))).game_id == game_id

    def cancelled(app: GameApp) -> float:
        found = samples(app.metrics.exposition().decode())
        return value(found, "railyard_grpc_requests_total", method="WatchGame", code="CANCELLED")

    with caplog.at_level(logging.WARNING):
        run(go())
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
