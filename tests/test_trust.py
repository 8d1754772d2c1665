"""Contract and trust (issue 10), against real servers and a real Redis:
failures answered for what they are, and counted."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from railyard_api import game_service_pb2 as pb
from railyard_api.fields import message_of
from service.app import Caller, GameApp
from service.app.errors import ServiceError
from service.settings import Settings
from service.store.memory import MemoryStore
from service.store.redis import RedisStore
from tests.redis_harness import RedisServer
from tests.service_helpers import bearer, expect_error, people, run
from tests.test_service_resilience import ERROR_INFO, free_port, instance


def metric(exposition: bytes, name: str) -> float:
    for line in exposition.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"no metric {name}")


@pytest.mark.parametrize("field", ["state", "meta"])
def test_a_stored_game_that_cannot_be_read_is_data_loss_not_unavailable(
    redis_url: str, redis_server: RedisServer, field: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A corrupt stored game used to be answered UNAVAILABLE "retry shortly":
    clients retried for ever. It is DATA_LOSS CORRUPT_STATE (HTTP 500) on
    both transports, logged with the game id, and counted."""

    async def go() -> None:
        async with instance(RedisStore(redis_url), Settings(bot_processes=0)) as svc:
            created = await svc.stub.CreateGame(pb.CreateGameRequest(players=people(2)))
            game_id = created.game.game_id
            redis_server.command("HSET", f"ry:{{{game_id}}}:g", field, "not what we wrote")
            code, reason, meta = await expect_error(
                lambda: svc.stub.GetGame(pb.GetGameRequest(game_id=game_id))
            )
            assert (code, reason, meta["gameId"]) == (
                grpc.StatusCode.DATA_LOSS,
                "CORRUPT_STATE",
                game_id,
            )
            response = await svc.http.get(f"/v1/games/{game_id}")
            assert response.status_code == 500
            (info,) = response.json()["details"]
            assert (info["@type"], info["reason"]) == (ERROR_INFO, "CORRUPT_STATE")
            assert "not what we wrote" not in response.text
            assert metric(svc.app.metrics.exposition(), "railyard_corrupt_states_total") == 2

    with caplog.at_level("ERROR", logger="railyard"):
        run(go())
    assert any(game_line for game_line in caplog.messages if "cannot be read" in game_line)


def test_store_unavailable_is_counted() -> None:
    """railyard_store_unavailable_total counts the calls answered 503
    STORE_UNAVAILABLE (it was declared and never incremented)."""

    async def go() -> None:
        store = RedisStore(f"redis://127.0.0.1:{free_port()}/0")
        app = GameApp(store, Settings(bot_processes=0))
        try:
            for _ in range(3):
                with pytest.raises(ServiceError) as refused:
                    message_of(pb.GameView, await app.get_game("0" * 20, Caller()))
                assert refused.value.reason == "STORE_UNAVAILABLE"
            assert metric(app.metrics.exposition(), "railyard_store_unavailable_total") == 3
        finally:
            app.close()
            await store.close()

    run(go())


def test_memory_store_corrupt_state_too() -> None:
    """The memory store goes through the same load: DATA_LOSS there too."""

    async def go() -> None:
        store = MemoryStore()
        app = GameApp(store, Settings(bot_processes=0))
        created = await app.create_game(pb.CreateGameRequest(players=people(2)), Caller())
        game_id = created.game.game_id
        held = store._games[game_id]
        held.record = type(held.record)(game_id, held.record.version, b"{}", held.record.meta)
        with pytest.raises(ServiceError) as refused:
            message_of(pb.GameView, await app.get_game(game_id, Caller()))
        assert (refused.value.code, refused.value.reason) == (
            grpc.StatusCode.DATA_LOSS,
            "CORRUPT_STATE",
        )
        app.close()

    asyncio.run(go())


@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_create_game_retried_after_the_request_ttl_is_a_clear_4xx(
    redis_url: str, kind: str
) -> None:
    """A CreateGame retried with its requestId after --request-ttl, while the
    game lives, was HTTP 500 / gRPC UNKNOWN (a ValueError of the stores). It
    is INVALID_ARGUMENT naming requestId and the game, on both transports,
    and creates nothing."""

    async def go() -> None:
        store = (
            MemoryStore(request_ttl=0.3)
            if kind == "memory"
            else RedisStore(redis_url, request_ttl=0.3)
        )
        async with instance(store, Settings(request_ttl=0.3, bot_processes=0)) as svc:
            request = pb.CreateGameRequest(players=people(2), request_id="table 9")
            first = await svc.stub.CreateGame(request)
            again = await svc.stub.CreateGame(request)  # within the TTL: the first game
            assert again == pb.CreateGameResponse(game=first.game, replayed=True)
            await asyncio.sleep(0.5)
            code, reason, meta = await expect_error(lambda: svc.stub.CreateGame(request))
            assert (code, reason, meta["field"], meta["gameId"]) == (
                grpc.StatusCode.INVALID_ARGUMENT,
                "INVALID_ARGUMENT",
                "requestId",
                first.game.game_id,
            )
            response = await svc.http.post(
                "/v1/games",
                json={
                    "players": [{"displayName": "P0"}, {"displayName": "P1"}],
                    "requestId": "table 9",
                },
            )
            assert response.status_code == 400, response.text
            (info,) = response.json()["details"]
            assert info["metadata"]["field"] == "requestId"
            view = await svc.stub.GetGame(pb.GetGameRequest(game_id=first.game.game_id))
            assert view.version == first.game.version  # the game is as it was

    run(go())


class _FreezesBeforeCommit(RedisStore):
    """The Redis store, and the real redis-server SIGSTOPped just before a
    commit is sent: the commit leaves, and no answer comes."""

    def __init__(self, url: str, server: RedisServer) -> None:
        super().__init__(url, timeout=0.5)
        self.server = server
        self.armed = False

    async def commit(self, *args: Any, **kwargs: Any) -> Any:
        if self.armed:
            self.armed = False
            self.server.freeze()
        return await super().commit(*args, **kwargs)


def test_a_commit_whose_answer_is_lost_is_outcome_unknown_and_a_retry_tells(
    redis_url: str, redis_server: RedisServer
) -> None:
    """Redis stalled while a move was between load and commit: the watchdog
    answered 503 STORE_UNAVAILABLE ("nothing changed"), and after SIGCONT the
    move was applied. API.md: that is UNAVAILABLE OUTCOME_UNKNOWN, and the
    retry with the same requestId returns the real outcome, applied once."""

    async def go() -> None:
        store = _FreezesBeforeCommit(redis_url, redis_server)
        async with instance(store, Settings(bot_processes=0)) as svc:
            created = await svc.stub.CreateGame(pb.CreateGameRequest(players=people(2)))
            game_id = created.game.game_id
            tokens = {s.seat: s.token for s in created.seats}

            async def next_move(request_id: str) -> tuple[pb.ApplyMoveRequest, str]:
                view = await svc.stub.GetGame(pb.GetGameRequest(game_id=game_id))
                token = tokens[view.current_seat]
                legal = await svc.stub.ListLegalMoves(
                    pb.ListLegalMovesRequest(game_id=game_id), metadata=bearer(token)
                )
                move = legal.moves[0].move
                return pb.ApplyMoveRequest(game_id=game_id, move=move, request_id=request_id), token

            # One move first: Redis then holds the commit script, and the
            # frozen one is the script itself (not an EVALSHA answered NOSCRIPT).
            first, token = await next_move("first")
            await svc.stub.ApplyMove(first, metadata=bearer(token))
            before = (await svc.stub.GetGame(pb.GetGameRequest(game_id=game_id))).version
            request, token = await next_move("lost answer")
            store.armed = True
            try:
                code, reason, _ = await expect_error(
                    lambda: svc.stub.ApplyMove(request, metadata=bearer(token))
                )
            finally:
                redis_server.thaw()
            assert (code, reason) == (grpc.StatusCode.UNAVAILABLE, "OUTCOME_UNKNOWN")
            # Redis runs what it had been sent once it goes on.
            deadline = asyncio.get_running_loop().time() + 10
            while True:
                view = await svc.stub.GetGame(pb.GetGameRequest(game_id=game_id))
                if view.version == before + 1:
                    break
                assert asyncio.get_running_loop().time() < deadline, "the move never landed"
                await asyncio.sleep(0.05)
            retried = await svc.stub.ApplyMove(request, metadata=bearer(token))
            assert retried.game.version == before + 1  # its outcome, not applied again
            view = await svc.stub.GetGame(pb.GetGameRequest(game_id=game_id))
            assert view.version == before + 1

            # A store that cannot be reached at all: nothing was sent, and
            # that is plain STORE_UNAVAILABLE (nothing changed).
            again, token = await next_move("")
            redis_server.stop()
            try:
                code, reason, _ = await expect_error(
                    lambda: svc.stub.ApplyMove(again, metadata=bearer(token))
                )
                assert (code, reason) == (grpc.StatusCode.UNAVAILABLE, "STORE_UNAVAILABLE")
            finally:
                redis_server.start()

    run(go())


@pytest.mark.parametrize(("busy", "setting"), [("http", "--http-port"), ("grpc", "--grpc-port")])
def test_a_busy_port_is_one_line_naming_its_setting(busy: str, setting: str) -> None:
    """A port in use ended in uvicorn's traceback (after gRPC had started),
    naming no setting. Now: exit 1 and one line naming the flag and the
    environment variable, no traceback."""
    import socket
    import subprocess

    from tests.test_service_resilience import RAILYARD

    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        other = free_port()
        http, grpc_port = (port, other) if busy == "http" else (other, port)
        done = subprocess.run(
            [
                str(RAILYARD),
                "serve",
                "--host",
                "127.0.0.1",
                "--http-port",
                str(http),
                "--grpc-port",
                str(grpc_port),
            ],
            capture_output=True,
            text=True,
            timeout=30,
            env={"PATH": "/usr/bin:/bin"},
        )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    (line,) = [x for x in done.stderr.splitlines() if "cannot start" in x]
    assert setting in line
    assert f"RAILYARD_{busy.upper()}_PORT" in line
    assert str(port) in line


def test_the_default_bind_is_loopback_and_the_deployments_open_it() -> None:
    """`make run` with the in-process store is for one machine: it listened
    on every interface. Loopback by default; the image and the manifests
    say 0.0.0.0 themselves."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    assert Settings().host == "127.0.0.1"
    assert "RAILYARD_HOST=0.0.0.0" in (root / "Dockerfile").read_text()
    assert (
        '{name: RAILYARD_HOST, value: "0.0.0.0"}' in (root / "deploy/k8s/railyard.yaml").read_text()
    )


def test_help_is_plain_text() -> None:
    """`railyard --help` showed the module docstring's reStructuredText quoting."""
    import subprocess

    from tests.test_service_resilience import RAILYARD

    shown = subprocess.run([str(RAILYARD), "--help"], capture_output=True, text=True, check=True)
    assert "``" not in shown.stdout
    assert "railyard serve" in shown.stdout


def _stored_bytes(redis_url: str) -> bytes:
    """Every value the service keeps in Redis, read by type."""
    from redis import Redis

    client = Redis.from_url(redis_url)
    found = bytearray()
    try:
        for key in client.scan_iter():
            kind = client.type(key)
            if kind == b"string":
                found += client.get(key) or b""
            elif kind == b"hash":
                for field, value in client.hgetall(key).items():
                    found += field + value
            elif kind == b"stream":
                for _, entry in client.xrange(key):
                    for field, value in entry.items():
                        found += field + value
            elif kind == b"zset":
                found += b"".join(client.zrange(key, 0, -1))
            else:
                raise AssertionError(f"a {kind!r} key the test does not read: {key!r}")
    finally:
        client.close()
    return bytes(found)


@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_a_replayed_create_game_never_hands_out_seat_tokens(redis_url: str, kind: str) -> None:
    """The remembered CreateGame answer held every seat token in plain text
    under a requestId anyone may send: a second caller sending the first
    caller's body and id got the first caller's seats. A repeat now gets the
    same game, marked replayed, with no token, on both transports; and the
    tokens are nowhere in the store (only their hashes)."""

    async def go() -> None:
        store = MemoryStore() if kind == "memory" else RedisStore(redis_url)
        async with instance(store, Settings(bot_processes=0)) as svc:
            request = pb.CreateGameRequest(
                players=[
                    pb.Player(display_name="Ann"),
                    pb.Player(bot=pb.BOT_LEVEL_GREEDY),
                    pb.Player(display_name="Bea"),
                ],
                request_id="table 7",
            )
            first = await svc.stub.CreateGame(request)
            tokens = [s.token for s in first.seats]
            assert [s.seat for s in first.seats] == [0, 2]
            assert all(tokens)
            assert not first.replayed
            body = {
                "players": [
                    {"displayName": "Ann"},
                    {"bot": "BOT_LEVEL_GREEDY"},
                    {"displayName": "Bea"},
                ],
                "requestId": "table 7",
            }
            over_grpc = await svc.stub.CreateGame(request)
            over_http = await svc.http.post("/v1/games", json=body)
            assert over_http.status_code == 200, over_http.text
            assert over_grpc == pb.CreateGameResponse(game=first.game, replayed=True)
            assert over_http.json() == {
                "game": json_format.MessageToDict(first.game),
                "replayed": True,
            }
            for token in tokens:
                assert token not in over_http.text
                assert token.encode() not in over_grpc.SerializeToString()
            if kind == "redis":
                at_rest = _stored_bytes(redis_url)
                assert first.game.game_id.encode() in at_rest  # the reader reads the store
                for token in tokens:
                    assert token.encode() not in at_rest
            # The first caller's tokens still play.
            for seat, token in zip((0, 2), tokens, strict=True):
                view = await svc.stub.GetGame(
                    pb.GetGameRequest(game_id=first.game.game_id), metadata=bearer(token)
                )
                assert view.viewer_seat == seat

    run(go())


def test_a_game_dealt_from_the_callers_seed_says_so_and_an_operator_may_refuse_one(
    redis_url: str,
) -> None:
    """API.md: a caller's seed lets its creator compute every hand, so the
    game's view says seedFromCaller (both transports, every viewer, after
    reload); --caller-seeds deny refuses one (INVALID_ARGUMENT, field seed)
    and still deals from the service's own seed."""

    async def go() -> None:
        async with instance(RedisStore(redis_url), Settings(bot_processes=0)) as svc:
            chosen = await svc.stub.CreateGame(pb.CreateGameRequest(players=people(2), seed="mine"))
            drawn = await svc.stub.CreateGame(pb.CreateGameRequest(players=people(2)))
            assert chosen.game.seed_from_caller
            assert not drawn.game.seed_from_caller
            for game, expected in ((chosen, True), (drawn, False)):
                game_id = game.game.game_id
                for metadata in ((), bearer(game.seats[0].token)):
                    view = await svc.stub.GetGame(
                        pb.GetGameRequest(game_id=game_id), metadata=metadata
                    )
                    assert view.seed_from_caller is expected
                response = await svc.http.get(f"/v1/games/{game_id}")
                assert response.json().get("seedFromCaller", False) is expected
        denying = Settings(bot_processes=0, caller_seeds="deny")
        async with instance(RedisStore(redis_url), denying) as svc:
            code, reason, meta = await expect_error(
                lambda: svc.stub.CreateGame(pb.CreateGameRequest(players=people(2), seed="mine"))
            )
            assert (code, reason, meta["field"]) == (
                grpc.StatusCode.INVALID_ARGUMENT,
                "INVALID_ARGUMENT",
                "seed",
            )
            response = await svc.http.post("/v1/games", json={"players": [{}, {}], "seed": "mine"})
            assert response.status_code == 400
            assert "--caller-seeds deny" in response.json()["message"]
            dealt = await svc.stub.CreateGame(pb.CreateGameRequest(players=people(2)))
            assert not dealt.game.seed_from_caller

    run(go())


def test_seat_tokens_never_start_with_a_dash() -> None:
    """A token starting with "-" reads as an option on a command line
    (``railyard-bot --token -x...``); 1 in 64 of base64url strings do."""
    from service.app.games import new_seat_token

    tokens = [new_seat_token() for _ in range(2000)]
    assert not [t for t in tokens if t.startswith("-")]
    assert len(set(tokens)) == len(tokens)
    assert all(len(t) == 32 for t in tokens)  # 24 random bytes, base64url
