"""Tables (issue 25): open seats, JoinGame, StartGame, LeaveGame, Rematch,
ListGames and the spectator settings, over both transports and both stores."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf import json_format

from railyard_api import game_service_pb2 as pb
from railyard_api import game_service_pb2_grpc as pb_grpc
from service.app import GameApp
from service.app.admission import Caller
from service.app.errors import ServiceError
from service.settings import Settings
from service.store import Store
from service.transports.grpc.server import create_grpc_server
from service.transports.http.server import create_http_app
from tests.service_helpers import bearer, expect_error, grpc_service, make_store

STORES = ["memory", "redis"]


def open_table(
    seats: int = 2,
    *,
    taken: int = 1,
    preset: str = "block",
    visibility: int = pb.VISIBILITY_PUBLIC,
    **table: Any,
) -> pb.CreateGameRequest:
    """A table whose first ``taken`` seats are its creator's, the rest open."""
    players = [
        pb.Player(display_name=f"Host{i}") if i < taken else pb.Player(open=True)
        for i in range(seats)
    ]
    return pb.CreateGameRequest(
        ruleset=pb.Ruleset(preset=preset),
        players=players,
        table=pb.TableSettings(visibility=visibility, **table),  # type: ignore[arg-type]
    )


def store_for(kind: str, redis_url: str | None) -> Store:
    return make_store(kind, redis_url if kind == "redis" else None)


@asynccontextmanager
async def served(
    store: Store,
) -> AsyncIterator[tuple[pb_grpc.GameServiceAsyncStub, grpc.aio.Channel, GameApp]]:
    """:func:`grpc_service` on ``store``, closed at the end (its Redis
    connections would outlive the test, and other tests count them)."""
    try:
        async with grpc_service(store, Settings(rate_limit=0)) as serving:
            yield serving
            serving[2].close()
    finally:
        await store.close()


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def url(store_kind: str, request: pytest.FixtureRequest) -> str | None:
    if store_kind == "redis":
        return str(request.getfixturevalue("redis_url"))
    return None


@asynccontextmanager
async def http_client(app: GameApp) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_http_app(app))
    async with httpx.AsyncClient(transport=transport, base_url="http://railyard.test") as client:
        yield client


@asynccontextmanager
async def many_stubs(
    store: Store, n: int
) -> AsyncIterator[tuple[list[pb_grpc.GameServiceAsyncStub], GameApp]]:
    """A real gRPC server and ``n`` clients, each on a connection of its own."""
    app = GameApp(store, Settings(rate_limit=0))
    server, port = create_grpc_server(app, "127.0.0.1", 0)
    await server.start()
    channels = [
        grpc.aio.insecure_channel(
            f"127.0.0.1:{port}", options=[("grpc.use_local_subchannel_pool", 1)]
        )
        for _ in range(n)
    ]
    try:
        yield [pb_grpc.GameServiceStub(c) for c in channels], app
    finally:
        for channel in channels:
            await channel.close(None)
        await server.stop(None)
        app.close()
        await store.close()


async def play_out(
    stub: pb_grpc.GameServiceAsyncStub, game_id: str, tokens: dict[int, str], seed: int = 1
) -> pb.GameView:
    """Random legal moves by the seats in ``tokens`` until the game is over."""
    rng = random.Random(seed)
    for _ in range(5000):
        view = await stub.GetGame(pb.GetGameRequest(game_id=game_id))
        if view.status == pb.GAME_STATUS_FINISHED:
            return view
        seat = view.current_seat
        token = tokens[seat]
        legal = await stub.ListLegalMoves(
            pb.ListLegalMovesRequest(game_id=game_id), metadata=bearer(token)
        )
        move = rng.choice(legal.moves).move
        await stub.ApplyMove(
            pb.ApplyMoveRequest(game_id=game_id, move=move, expected_version=legal.version),
            metadata=bearer(token),
        )
    raise AssertionError("the game did not end")


# ------------------------------------------------------------ JoinGame races


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_200_concurrent_joins_for_one_seat_give_exactly_one_token(
    store_kind: str, url: str | None, transport: str
) -> None:
    async def main() -> None:
        async with many_stubs(store_for(store_kind, url), 25) as (stubs, app):
            stub = stubs[0]
            created = await stub.CreateGame(open_table(2, taken=1))
            game_id = created.game.game_id
            assert created.game.status == pb.GAME_STATUS_WAITING
            assert created.host_token
            assert not created.join_code  # public: no code
            refusals: list[grpc.StatusCode] = []

            async def join_grpc(i: int) -> str | None:
                try:
                    # 25 connections, 8 calls each: under the 16 a connection
                    # holds at once, where grpc refuses none (ADR 0002).
                    answer = await stubs[i % 25].JoinGame(
                        pb.JoinGameRequest(game_id=game_id, seat=1, display_name=f"J{i}")
                    )
                except grpc.aio.AioRpcError as exc:
                    refusals.append(exc.code())
                    return None
                return answer.seat.token

            async with http_client(app) as client:

                async def join_http(i: int) -> str | None:
                    answer = await client.post(
                        f"/v1/games/{game_id}/join", json={"seat": 1, "displayName": f"J{i}"}
                    )
                    if answer.status_code != 200:
                        assert answer.status_code == 400, answer.text
                        reason = answer.json()["details"][0]["reason"]
                        assert reason in ("SEAT_TAKEN", "GAME_STARTED"), answer.text
                        return None
                    return str(answer.json()["seat"]["token"])

                join = join_grpc if transport == "grpc" else join_http
                tokens = await asyncio.gather(*(join(i) for i in range(200)))
            assert set(refusals) <= {grpc.StatusCode.FAILED_PRECONDITION}
            won = [t for t in tokens if t]
            assert len(won) == 1
            view = await stub.GetGame(pb.GetGameRequest(game_id=game_id), metadata=bearer(won[0]))
            assert view.viewer_seat == 1
            assert view.status == pb.GAME_STATUS_IN_PROGRESS  # the last seat: started
            assert len(view.hand) > 0
            log = await stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id))
            kinds = [e.WhichOneof("kind") for e in log.events]
            assert kinds.count("seat_joined") == 1
            assert kinds.count("game_started") == 1

    asyncio.run(main())


def test_a_game_starts_exactly_once_across_two_replicas(redis_url: str) -> None:
    """Two replicas on one Redis: four open seats taken at once through
    both, and the host's StartGame racing them; one start, every seat once."""

    async def main() -> None:
        async with (
            served(make_store("redis", redis_url)) as (one, _, _a),
            served(make_store("redis", redis_url)) as (two, _, _b),
        ):
            refused: list[grpc.StatusCode] = []
            for round_ in range(5):
                created = await one.CreateGame(open_table(5, taken=1, preset="standard"))
                game_id = created.game.game_id
                host = bearer(created.host_token)

                async def join(
                    stub: pb_grpc.GameServiceAsyncStub, i: int, game_id: str = game_id
                ) -> int | None:
                    try:
                        answer = await stub.JoinGame(
                            pb.JoinGameRequest(game_id=game_id, display_name=f"J{i}")
                        )
                    except grpc.aio.AioRpcError as exc:
                        refused.append(exc.code())
                        return None
                    return answer.seat.seat

                async def start(game_id: str = game_id, host: Any = host) -> bool:
                    try:
                        await two.StartGame(pb.StartGameRequest(game_id=game_id), metadata=host)
                    except grpc.aio.AioRpcError as exc:
                        refused.append(exc.code())
                        return False
                    return True

                calls: list[Any] = [join(one if i % 2 else two, i) for i in range(8)]
                if round_ % 2:
                    calls.append(start())
                results = await asyncio.gather(*calls)
                assert set(refused) <= {
                    grpc.StatusCode.FAILED_PRECONDITION,
                    grpc.StatusCode.ABORTED,
                }
                seats = [s for s in results[:8] if s is not None]
                assert len(seats) == len(set(seats))
                log = await one.GetGameLog(pb.GetGameLogRequest(game_id=game_id))
                kinds = [e.WhichOneof("kind") for e in log.events]
                assert kinds.count("game_started") == 1, kinds
                view = await two.GetGame(pb.GetGameRequest(game_id=game_id))
                assert view.status == pb.GAME_STATUS_IN_PROGRESS
                assert not any(p.open for p in view.players)
                assert kinds.count("seat_joined") == len(seats)

    asyncio.run(main())


# ------------------------------------------------------------ private tables, leaving


def test_a_private_table_is_joined_by_its_code_and_a_seat_reopens_before_the_start(
    store_kind: str, url: str | None
) -> None:
    async def main() -> None:
        async with served(store_for(store_kind, url)) as (
            stub,
            _,
            _app,
        ):
            created = await stub.CreateGame(
                open_table(3, taken=1, visibility=pb.VISIBILITY_PRIVATE)
            )
            game_id = created.game.game_id
            code = created.join_code
            assert len(code) == 10
            assert code not in game_id
            found = await expect_error(lambda: stub.JoinGame(pb.JoinGameRequest(game_id=game_id)))
            assert found[1] == "BAD_JOIN_CODE"
            found = await expect_error(
                lambda: stub.JoinGame(pb.JoinGameRequest(join_code="ABCDEFGHJK"))
            )
            assert found[1] == "JOIN_CODE_NOT_FOUND"
            # By the code alone, typed in lower case with a dash.
            typed = f"{code[:5].lower()}-{code[5:]}"
            ann = await stub.JoinGame(pb.JoinGameRequest(join_code=typed, display_name="Ann"))
            assert ann.game.game_id == game_id
            assert ann.seat.seat == 1
            assert not ann.game.hand  # waiting: no hand is shown
            assert ann.game.status == pb.GAME_STATUS_WAITING
            left = await stub.LeaveGame(
                pb.LeaveGameRequest(game_id=game_id), metadata=bearer(ann.seat.token)
            )
            assert left.game.players[1].open
            found = await expect_error(
                lambda: stub.GetGame(
                    pb.GetGameRequest(game_id=game_id), metadata=bearer(ann.seat.token)
                )
            )
            assert found[1] == "BAD_SEAT_TOKEN"
            bob = await stub.JoinGame(
                pb.JoinGameRequest(game_id=game_id, join_code=code, display_name="Bob")
            )
            assert bob.seat.seat == 1
            moves = await expect_error(
                lambda: stub.ApplyMove(
                    pb.ApplyMoveRequest(game_id=game_id, move=pb.Move(draw=pb.Move.Draw())),
                    metadata=bearer(bob.seat.token),
                )
            )
            assert moves[1] == "GAME_NOT_STARTED"
            found = await expect_error(
                lambda: stub.StartGame(
                    pb.StartGameRequest(game_id=game_id), metadata=bearer(bob.seat.token)
                )
            )
            assert found[1] == "NOT_HOST"
            started = await stub.StartGame(
                pb.StartGameRequest(game_id=game_id), metadata=bearer(created.host_token)
            )
            assert started.game.status == pb.GAME_STATUS_IN_PROGRESS
            assert started.game.players[2].bot == pb.BOT_LEVEL_GREEDY  # the table's level
            found = await expect_error(
                lambda: stub.JoinGame(pb.JoinGameRequest(game_id=game_id, join_code=code))
            )
            assert found[1] == "GAME_STARTED"

    asyncio.run(main())


def test_leaving_mid_game_hands_the_seat_to_a_bot_and_the_token_is_refused(
    store_kind: str, url: str | None
) -> None:
    async def main() -> None:
        async with served(store_for(store_kind, url)) as (
            stub,
            _,
            _app,
        ):
            created = await stub.CreateGame(open_table(2, taken=1, bot_level=pb.BOT_LEVEL_RANDOM))
            game_id = created.game.game_id
            host = created.seats[0].token
            joined = await stub.JoinGame(pb.JoinGameRequest(game_id=game_id, display_name="Ann"))
            ann = joined.seat.token
            left = await stub.LeaveGame(pb.LeaveGameRequest(game_id=game_id), metadata=bearer(ann))
            assert left.game.players[1].bot == pb.BOT_LEVEL_RANDOM
            assert left.game.players[1].display_name == "Ann"
            for call in (
                lambda: stub.GetGame(pb.GetGameRequest(game_id=game_id), metadata=bearer(ann)),
                lambda: stub.ListLegalMoves(
                    pb.ListLegalMovesRequest(game_id=game_id), metadata=bearer(ann)
                ),
                lambda: stub.LeaveGame(pb.LeaveGameRequest(game_id=game_id), metadata=bearer(ann)),
            ):
                assert (await expect_error(call))[1] == "BAD_SEAT_TOKEN"
            log = await stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id))
            lefts = [e.seat_left for e in log.events if e.WhichOneof("kind") == "seat_left"]
            assert [(s.seat, s.reason, s.bot) for s in lefts] == [
                (1, pb.LEAVE_REASON_LEFT, pb.BOT_LEVEL_RANDOM)
            ]
            # The host plays on against the bot to the end.
            final = await play_out(stub, game_id, {0: host})
            assert final.status == pb.GAME_STATUS_FINISHED

    asyncio.run(main())


# ------------------------------------------------------------ Rematch


def test_rematch_hands_each_seat_one_new_token_once(store_kind: str, url: str | None) -> None:
    async def main() -> None:
        async with served(store_for(store_kind, url)) as (
            stub,
            _,
            _app,
        ):
            created = await stub.CreateGame(
                pb.CreateGameRequest(
                    ruleset=pb.Ruleset(preset="block"),
                    players=[pb.Player(display_name="A"), pb.Player(display_name="B")],
                )
            )
            game_id = created.game.game_id
            old = {s.seat: s.token for s in created.seats}
            found = await expect_error(
                lambda: stub.Rematch(pb.RematchRequest(game_id=game_id), metadata=bearer(old[0]))
            )
            assert found[1] == "GAME_NOT_OVER"
            await play_out(stub, game_id, old)

            async def ask(seat: int) -> pb.RematchResponse:
                answer: pb.RematchResponse = await stub.Rematch(
                    pb.RematchRequest(game_id=game_id), metadata=bearer(old[seat])
                )
                return answer

            answers = await asyncio.gather(ask(0), ask(0), ask(1), ask(1), ask(0))
            new_id = answers[0].game.game_id
            assert new_id != game_id
            assert {a.game.game_id for a in answers} == {new_id}
            given = [(a.seat.seat, a.seat.token) for a in answers if a.HasField("seat")]
            assert sorted(s for s, _ in given) == [0, 1]  # one new token per seat, once
            finished = await stub.GetGame(pb.GetGameRequest(game_id=game_id))
            assert finished.rematch_game_id == new_id
            new = dict(given)
            view = await stub.GetGame(pb.GetGameRequest(game_id=new_id), metadata=bearer(new[0]))
            assert view.viewer_seat == 0
            assert [p.display_name for p in view.players] == ["A", "B"]
            assert view.seed_sha256 != finished.seed_sha256
            # The old tokens play nothing in the new game.
            found = await expect_error(
                lambda: stub.GetGame(pb.GetGameRequest(game_id=new_id), metadata=bearer(old[0]))
            )
            assert found[1] == "BAD_SEAT_TOKEN"
            await play_out(stub, new_id, new)

    asyncio.run(main())


# ------------------------------------------------------------ ListGames


def test_list_games_pages_through_1000_tables_with_no_duplicate_and_no_gap(
    store_kind: str, url: str | None
) -> None:
    async def main() -> None:
        store = store_for(store_kind, url)
        app = GameApp(store, Settings(rate_limit=0))
        caller = Caller(address="127.0.0.1")
        try:
            ids = []
            for _ in range(1000):
                created = await app.create_game(open_table(2, taken=1), caller)
                ids.append(created.game.game_id)
            private = await app.create_game(
                open_table(2, taken=1, visibility=pb.VISIBILITY_PRIVATE), caller
            )
            # While paging: 100 of the listed tables fill up, and 100 more are created.
            filled = set(random.Random(3).sample(ids, 100))
            stay = [i for i in ids if i not in filled]
            seen: list[str] = []
            token = ""
            pending_fill = sorted(filled)
            while True:
                page = await app.list_games(
                    pb.ListGamesRequest(page_size=37, page_token=token), caller
                )
                seen += [g.game_id for g in page.games]
                for summary in page.games:
                    assert summary.open_seats == 1
                    assert summary.players[1].open
                    assert summary.ruleset.preset == "block"
                for game_id in pending_fill[:10]:
                    await app.join_game(pb.JoinGameRequest(game_id=game_id), caller)
                pending_fill = pending_fill[10:]
                for _ in range(10):
                    await app.create_game(open_table(2, taken=1), caller)
                token = page.next_page_token
                if not token:
                    break
            assert len(seen) == len(set(seen))  # no duplicate
            assert set(stay) <= set(seen)  # no gap: every table open all along is there
            assert private.game.game_id not in seen
            found = await asyncio.gather(
                app.list_games(pb.ListGamesRequest(page_size=500), caller),
                return_exceptions=True,
            )
            assert len(found[0].games) == 100  # type: ignore[union-attr]
        finally:
            app.close()
            await store.close()

    asyncio.run(main())


def test_list_games_over_http_refuses_a_token_it_did_not_give() -> None:
    async def main() -> None:
        store = make_store("memory", None)
        app = GameApp(store, Settings(rate_limit=0))
        try:
            async with http_client(app) as client:
                for _ in range(3):
                    created = await client.post(
                        "/v1/games", json=json_format.MessageToDict(open_table(2))
                    )
                    assert created.status_code == 200, created.text
                first = await client.get("/v1/games", params={"pageSize": 2})
                assert first.status_code == 200
                body = first.json()
                assert len(body["games"]) == 2
                second = await client.get("/v1/games", params={"pageToken": body["nextPageToken"]})
                assert len(second.json()["games"]) == 1
                assert "nextPageToken" not in second.json()
                bad = await client.get("/v1/games", params={"pageToken": "nonsense"})
                assert bad.status_code == 400
                assert "pageToken" in bad.json()["message"]
        finally:
            app.close()
            await store.close()

    asyncio.run(main())


# ------------------------------------------------------------ spectators


def test_spectators_none_are_refused_and_a_delay_holds_the_view_back(
    store_kind: str, url: str | None
) -> None:
    async def main() -> None:
        async with served(store_for(store_kind, url)) as (
            stub,
            _,
            _app,
        ):
            closed = await stub.CreateGame(
                pb.CreateGameRequest(
                    ruleset=pb.Ruleset(preset="block"),
                    players=[pb.Player(display_name="A"), pb.Player(display_name="B")],
                    table=pb.TableSettings(spectators=pb.SPECTATORS_NONE),
                )
            )
            game_id = closed.game.game_id
            for call in (
                lambda: stub.GetGame(pb.GetGameRequest(game_id=game_id)),
                lambda: stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id)),
                lambda: anext(aiter(stub.WatchGame(pb.WatchGameRequest(game_id=game_id)))),
                lambda: stub.GetGame(
                    pb.GetGameRequest(game_id=game_id), metadata=bearer(closed.host_token)
                ),
            ):
                code, reason, _ = await expect_error(call)
                assert (code, reason) == (
                    grpc.StatusCode.PERMISSION_DENIED,
                    "SPECTATORS_NOT_ALLOWED",
                )
            seat0 = closed.seats[0].token
            assert (
                await stub.GetGame(pb.GetGameRequest(game_id=game_id), metadata=bearer(seat0))
            ).viewer_seat == 0

            delayed = await stub.CreateGame(
                pb.CreateGameRequest(
                    ruleset=pb.Ruleset(preset="block"),
                    players=[pb.Player(display_name="A"), pb.Player(display_name="B")],
                    table=pb.TableSettings(spectators=pb.SPECTATORS_SEATED_ONLY, spectator_delay=3),
                )
            )
            game_id = delayed.game.game_id
            tokens = {s.seat: s.token for s in delayed.seats}
            assert (await expect_error(lambda: stub.GetGame(pb.GetGameRequest(game_id=game_id))))[
                1
            ] == "SPECTATORS_NOT_ALLOWED"
            rng = random.Random(5)
            host = bearer(delayed.host_token)
            for _ in range(5):
                view = await stub.GetGame(
                    pb.GetGameRequest(game_id=game_id), metadata=bearer(tokens[0])
                )
                legal = await stub.ListLegalMoves(
                    pb.ListLegalMovesRequest(game_id=game_id),
                    metadata=bearer(tokens[view.current_seat]),
                )
                await stub.ApplyMove(
                    pb.ApplyMoveRequest(game_id=game_id, move=rng.choice(legal.moves).move),
                    metadata=bearer(tokens[view.current_seat]),
                )
            now = await stub.GetGame(pb.GetGameRequest(game_id=game_id), metadata=bearer(tokens[0]))
            watcher = await stub.GetGame(pb.GetGameRequest(game_id=game_id), metadata=host)
            assert now.version == 5
            assert (watcher.version, watcher.delayed_by) == (2, 3)
            log = await stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id), metadata=host)
            assert max(e.version for e in log.events) == 2
            stream = stub.WatchGame(pb.WatchGameRequest(game_id=game_id), metadata=host)
            first = await anext(aiter(stream))
            assert first.snapshot.version == 2
            stream.cancel()

    asyncio.run(main())


# ------------------------------------------------------------ timeouts


@pytest.fixture
def past_every_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The turn timer's clock is the store's ``now_ms``, read by the
    service's turns: moved past every deadline here, so no test waits."""
    import service.app.turns as turns

    monkeypatch.setattr(turns, "now_ms", lambda: 2**62)


@asynccontextmanager
async def timed_table(**table: Any) -> AsyncIterator[tuple[GameApp, str, dict[int, str]]]:
    """A Block table of two people, 60 s a turn, a seat given to the bot
    after two timeouts in a row (``table``: more TableSettings): the app,
    the game's id and each seat's token."""
    store = make_store("memory", None)
    app = GameApp(store, Settings(rate_limit=0))
    try:
        created = await app.create_game(
            pb.CreateGameRequest(
                ruleset=pb.Ruleset(preset="block"),
                players=[pb.Player(display_name="A"), pb.Player(display_name="B")],
                turn_timeout_seconds=60,
                table=pb.TableSettings(max_timeouts=2, **table),
            ),
            Caller(),
        )
        yield app, created.game.game_id, {s.seat: s.token for s in created.seats}
    finally:
        app.close()
        await store.close()


@pytest.mark.usefixtures("past_every_deadline")
def test_a_person_out_of_time_max_timeouts_times_in_a_row_is_replaced_by_the_bot() -> None:
    async def main() -> None:
        async with timed_table(bot_level=pb.BOT_LEVEL_RANDOM) as (app, game_id, tokens):
            for _ in range(4):  # each seat out of time twice in a row
                await app.advance(game_id)
            log = await app.get_game_log(game_id, Caller())
            lefts = [e.seat_left for e in log.events if e.WhichOneof("kind") == "seat_left"]
            assert sorted((s.seat, s.reason, s.bot) for s in lefts) == [
                (0, pb.LEAVE_REASON_TIMEOUTS, pb.BOT_LEVEL_RANDOM),
                (1, pb.LEAVE_REASON_TIMEOUTS, pb.BOT_LEVEL_RANDOM),
            ]
            timed_out = [e for e in log.events if e.WhichOneof("kind") == "turn_timed_out"]
            assert len(timed_out) == 4
            for token in tokens.values():
                with pytest.raises(ServiceError) as refused:
                    await app.get_game(game_id, Caller(token=token))
                assert refused.value.reason == "BAD_SEAT_TOKEN"

    asyncio.run(main())


@pytest.mark.usefixtures("past_every_deadline")
def test_a_move_of_their_own_resets_a_persons_timeouts() -> None:
    async def main() -> None:
        async with timed_table() as (app, game_id, tokens):
            rng = random.Random(2)

            async def move_current() -> None:
                view = await app.get_game(game_id, Caller())
                caller = Caller(token=tokens[view["current_seat"]])
                legal = await app.list_legal_moves(game_id, caller)
                await app.apply_move(
                    pb.ApplyMoveRequest(game_id=game_id, move=rng.choice(legal.moves).move),
                    caller,
                )

            await app.advance(game_id)  # X out of time once
            await move_current()  # Y
            await move_current()  # X moves: its count starts over
            await move_current()  # Y
            await app.advance(game_id)  # X out of time: once in a row, not twice
            log = await app.get_game_log(game_id, Caller())
            assert not [e for e in log.events if e.WhichOneof("kind") == "seat_left"]

    asyncio.run(main())


# ------------------------------------------------------------ over HTTP


def test_a_table_over_http_from_creation_to_its_rematch(store_kind: str, url: str | None) -> None:
    async def main() -> None:
        store = store_for(store_kind, url)
        app = GameApp(store, Settings(rate_limit=0))
        try:
            async with http_client(app) as client:
                body = json_format.MessageToDict(
                    open_table(3, taken=1, visibility=pb.VISIBILITY_PRIVATE)
                )
                created = (await client.post("/v1/games", json=body)).json()
                game_id = created["game"]["gameId"]
                assert created["game"]["status"] == "GAME_STATUS_WAITING"
                host = {"authorization": f"Bearer {created['hostToken']}"}
                code = created["joinCode"]
                ann = await client.post(
                    "/v1/games/-/join", json={"joinCode": code, "displayName": "Ann"}
                )
                assert ann.status_code == 200, ann.text
                ann_token = ann.json()["seat"]["token"]
                gone = await client.post(
                    f"/v1/games/{game_id}/leave", headers={"authorization": f"Bearer {ann_token}"}
                )
                assert gone.json()["game"]["players"][1]["open"] is True
                taken = await client.post(
                    f"/v1/games/{game_id}/join",
                    json={"joinCode": code, "seat": 2, "displayName": "Cy"},
                )
                assert taken.json()["seat"]["seat"] == 2
                again = await client.post(
                    f"/v1/games/{game_id}/join", json={"joinCode": code, "seat": 2}
                )
                assert again.status_code == 400
                assert again.json()["details"][0]["reason"] == "SEAT_TAKEN"
                wrong = await client.post(f"/v1/games/{game_id}/join", json={"joinCode": "X"})
                assert wrong.status_code == 403
                assert wrong.json()["details"][0]["reason"] == "BAD_JOIN_CODE"
                started = await client.post(f"/v1/games/{game_id}/start", headers=host)
                assert started.status_code == 200, started.text
                game = started.json()["game"]
                assert game["status"] == "GAME_STATUS_IN_PROGRESS"
                assert game["players"][1]["bot"] == "BOT_LEVEL_GREEDY"
                log = (await client.get(f"/v1/games/{game_id}/log")).json()
                kinds = [next(k for k in e if k != "version") for e in log["events"]]
                assert kinds.count("seatJoined") == 2
                assert kinds.count("seatLeft") == 1
                assert kinds.count("gameStarted") == 1
                started_event = next(e for e in log["events"] if "gameStarted" in e)
                assert started_event["gameStarted"]["botSeats"] == [1]
                # Play the people's seats to the end, then the rematch.
                tokens = {0: created["seats"][0]["token"], 2: taken.json()["seat"]["token"]}
                rng = random.Random(4)
                for _ in range(400):
                    view = (await client.get(f"/v1/games/{game_id}")).json()
                    if view["status"] == "GAME_STATUS_FINISHED":
                        break
                    auth = {"authorization": f"Bearer {tokens[view.get('currentSeat', 0)]}"}
                    legal = (
                        await client.get(f"/v1/games/{game_id}/legal-moves", headers=auth)
                    ).json()
                    move = rng.choice(legal["moves"])["move"]
                    played = await client.post(
                        f"/v1/games/{game_id}/moves", json={"move": move}, headers=auth
                    )
                    assert played.status_code == 200, played.text
                assert view["status"] == "GAME_STATUS_FINISHED"
                auth = {"authorization": f"Bearer {tokens[2]}"}
                first = (await client.post(f"/v1/games/{game_id}/rematch", headers=auth)).json()
                second = (await client.post(f"/v1/games/{game_id}/rematch", headers=auth)).json()
                assert first["seat"]["seat"] == 2
                assert "seat" not in second
                assert first["game"]["gameId"] == second["game"]["gameId"]
                finished = (await client.get(f"/v1/games/{game_id}")).json()
                assert finished["rematchGameId"] == first["game"]["gameId"]
        finally:
            app.close()
            await store.close()

    asyncio.run(main())


def test_a_watcher_of_a_waiting_table_hears_the_seats_fill_and_the_start(
    store_kind: str, url: str | None
) -> None:
    async def main() -> None:
        async with served(store_for(store_kind, url)) as (stub, _, _app):
            created = await stub.CreateGame(open_table(3, taken=1))
            game_id = created.game.game_id
            host = created.seats[0].token
            stream = stub.WatchGame(pb.WatchGameRequest(game_id=game_id), metadata=bearer(host))
            events = aiter(stream)
            first = await anext(events)
            assert first.snapshot.status == pb.GAME_STATUS_WAITING
            for i in (1, 2):
                await stub.JoinGame(pb.JoinGameRequest(game_id=game_id, display_name=f"J{i}"))
            heard = []
            while len(heard) < 3:
                event = await asyncio.wait_for(anext(events), 10)
                heard.append(event.WhichOneof("kind"))
            assert heard == ["seat_joined", "seat_joined", "game_started"]
            stream.cancel()

    asyncio.run(main())


@pytest.mark.usefixtures("past_every_deadline")
def test_another_persons_move_keeps_a_seats_timeouts_in_a_row() -> None:
    async def main() -> None:
        async with timed_table() as (app, game_id, tokens):
            late = (await app.get_game(game_id, Caller()))["current_seat"]
            await app.advance(game_id)  # X out of time once
            other = Caller(token=tokens[1 - late])
            legal = await app.list_legal_moves(game_id, other)
            await app.apply_move(
                pb.ApplyMoveRequest(game_id=game_id, move=legal.moves[0].move), other
            )
            await app.advance(game_id)  # X out of time again: twice in a row
            log = await app.get_game_log(game_id, Caller())
            lefts = [e.seat_left.seat for e in log.events if e.WhichOneof("kind") == "seat_left"]
            assert lefts == [late]

    asyncio.run(main())


def test_a_rematch_takes_a_place_under_its_tenants_live_game_cap() -> None:
    key = "k" * 16

    async def main() -> None:
        store = make_store("memory", None)
        app = GameApp(
            store, Settings(rate_limit=0, api_keys=f"acme:{key}", tenant_max_live_games=2)
        )
        caller = Caller(api_key=key)
        two = [pb.Player(display_name="A"), pb.Player(display_name="B")]
        try:
            created = await app.create_game(
                pb.CreateGameRequest(ruleset=pb.Ruleset(preset="block"), players=two), caller
            )
            game_id = created.game.game_id
            tokens = {s.seat: s.token for s in created.seats}
            rng = random.Random(6)
            while (await app.get_game(game_id, caller))["status"] != pb.GAME_STATUS_FINISHED:
                seat = (await app.get_game(game_id, caller))["current_seat"]
                mover = Caller(token=tokens[seat], api_key=key)
                legal = await app.list_legal_moves(game_id, mover)
                await app.apply_move(
                    pb.ApplyMoveRequest(game_id=game_id, move=rng.choice(legal.moves).move), mover
                )
            for _ in range(2):  # the cap, filled
                await app.create_game(
                    pb.CreateGameRequest(ruleset=pb.Ruleset(preset="block"), players=two), caller
                )
            with pytest.raises(ServiceError) as refused:
                await app.rematch(game_id, Caller(token=tokens[0]))
            assert refused.value.reason == "TOO_MANY_GAMES"
        finally:
            app.close()
            await store.close()

    asyncio.run(main())
