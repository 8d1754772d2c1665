"""The Python client's table calls (tables.md, issue 25) and ``railyard-bot
--join``, against a real ``railyard serve`` over Redis, through both
transports.

A private table of Block is joined by its code twice, once through the
client and once by ``railyard-bot --join CODE`` in its own process, which
waits for the start; the person's seat is played to the end through the
client while the bot plays its own, then Rematch. A public table is joined
by its id by the bot and started by its host (StartGame); the bot gives its
seat back when interrupted; ListGames pages; LeaveGame before and during
play; the table refusals arrive as RailyardError on both transports; and a
JoinGame whose outcome is unknown is never repeated.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from railyard_client import AsyncClient, Client, RailyardError, pb
from railyard_client.bot import join_target
from tests.test_service_resilience import Serve, serve

BOT = Path(sys.executable).with_name("railyard-bot")
TRANSPORTS = ("http", "grpc")
#: Block for three (block takes 2 to 4), to 30 points instead of 100
#: (CL-SC-2): a game of a few hands.
BLOCK = pb.Ruleset(preset="block", target_score=30)
#: Seeds whose deal has seat 1 open the hand (CL-START-1, the highest
#: double), for three seats and for two: railyard-bot's seat moves first, so
#: it must see the start itself (no turnStarted of its own follows it).
SEAT_1_OPENS = {3: "tables-3-1", 2: "tables-2-0"}
#: No bot worker processes (2 cores, shared).
ENV = {"RAILYARD_BOT_PROCESSES": "0"}
WAIT = 60.0


@pytest.fixture(scope="module")
def server(redis_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    """One replica over the session's Redis, for the module."""
    redis_server.start()
    with serve(tmp_path_factory.mktemp("tables"), redis_server.url, "tables", **ENV) as replica:
        yield replica


def endpoint(server: Serve, transport: str) -> str:
    return server.base_url if transport == "http" else server.target


def private_table(seats: int = 3) -> tuple[list[pb.Player | None], pb.TableSettings]:
    """Seat 0 a greedy bot of the service, the others open; private."""
    players: list[pb.Player | None] = [pb.Player(display_name="Dealer", bot=pb.BOT_LEVEL_GREEDY)]
    players += [None] * (seats - 1)
    return players, pb.TableSettings(visibility=pb.VISIBILITY_PRIVATE)


def start_bot(log_path: Path, *args: str) -> subprocess.Popen[bytes]:
    with log_path.open("wb") as log_file:
        return subprocess.Popen(
            [str(BOT), *args],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )


def wait_for(
    what: str, done: Callable[[], bool], bot: subprocess.Popen[bytes], log_path: Path
) -> None:
    """Polls ``done`` while the bot runs; fails with its log otherwise."""
    deadline = time.monotonic() + WAIT
    while not done():
        assert bot.poll() is None, f"railyard-bot exited before {what}:\n{log_path.read_text()}"
        assert time.monotonic() < deadline, f"no {what}:\n{log_path.read_text()}"
        time.sleep(0.05)


def finish(bot: subprocess.Popen[bytes], log_path: Path) -> str:
    """The bot's exit (it must be 0) and its log."""
    try:
        code = bot.wait(WAIT * 2)
    finally:
        if bot.poll() is None:
            bot.kill()
            bot.wait(10)
    text = log_path.read_text()
    assert code == 0, text
    return text


def is_my_turn(view: pb.GameView) -> bool:
    return (
        view.status == pb.GAME_STATUS_IN_PROGRESS
        and view.HasField("current_seat")
        and view.current_seat == view.viewer_seat
    )


def play_seat(
    client: Client, game_id: str, token: str, note: Callable[[], str] = str
) -> tuple[pb.GameView, int]:
    """A person's seat played to the end through the client: a move when the
    view says it is the seat's turn, else the view again a moment later. A
    turn that does not come within WAIT fails, with ``note()`` (the other
    seat's bot's log). The last view and the moves made."""
    view = client.get_game(game_id, token=token)
    moves = 0
    since = time.monotonic()
    while view.status != pb.GAME_STATUS_FINISHED:
        if is_my_turn(view):
            legal = client.list_legal_moves(game_id, token=token)
            plays = [m for m in legal.moves if m.move.HasField("play")]
            answer = client.apply_move(
                game_id,
                (plays or list(legal.moves))[0],
                token=token,
                expected_version=legal.version,
            )
            view, moves, since = answer.game, moves + 1, time.monotonic()
            continue
        waited = time.monotonic() - since
        assert waited < WAIT, f"seat {view.viewer_seat} waited at version {view.version}:\n{note()}"
        time.sleep(0.02)
        view = client.get_game(game_id, token=token)
    return view, moves


def movers(client: Client, game_id: str) -> list[int]:
    """The seat of each tile played or pass, in order, by the game's log."""
    seats = []
    for event in client.get_game_log(game_id).events:
        kind = event.WhichOneof("kind")
        if kind in ("tile_played", "passed"):
            seats.append(getattr(event, kind).seat)
    return seats


def refusal(call: Callable[[], object]) -> RailyardError:
    with pytest.raises(RailyardError) as caught:
        call()
    return caught.value


# ------------------------------------------------------------------ the whole story


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_private_table_joined_by_code_by_a_person_and_railyard_bot_then_a_rematch(
    server: Serve, transport: str, tmp_path: Path
) -> None:
    """Block for three: seat 0 the service's bot, two open seats. The bot
    takes one by the code (typed in lower case with a dash) and waits; the
    person takes the last through the client, which starts the table; both
    play to the end, then the person asks for the rematch."""
    url = endpoint(server, transport)
    with Client(url) as client:
        players, table = private_table()
        created = client.create_game(players, BLOCK, table=table, seed=SEAT_1_OPENS[3])
        game_id, code = created.game.game_id, created.join_code
        assert created.game.status == pb.GAME_STATUS_WAITING
        assert join_target(code) == ("", code)
        assert created.host_token
        assert not created.seats  # the creator holds no person's seat
        assert [p.open for p in created.game.players] == [False, True, True]

        log_path = tmp_path / "bot.log"
        typed = f"{code[:5].lower()}-{code[5:]}"
        bot = start_bot(
            log_path, "--url", url, "--join", typed, "--name", "Robo", "--level", "greedy"
        )
        try:
            wait_for(
                "the bot's seat",
                lambda: client.get_game(game_id).players[1].display_name == "Robo",
                bot,
                log_path,
            )
            time.sleep(0.3)  # the bot is following the waiting table by now
            assert client.get_game(game_id).status == pb.GAME_STATUS_WAITING
            assert bot.poll() is None

            joined = client.join_game(join_code=code, display_name="Ann")
            assert (joined.seat.seat, joined.game.game_id) == (2, game_id)
            assert joined.game.status == pb.GAME_STATUS_IN_PROGRESS  # the last seat: started
            assert joined.game.viewer_seat == 2
            assert len(joined.game.hand) == 7
            token = joined.seat.token
            view, moves = play_seat(client, game_id, token, log_path.read_text)
            text = finish(bot, log_path)
        finally:
            if bot.poll() is None:
                bot.kill()
        assert view.status == pb.GAME_STATUS_FINISHED
        assert moves > 0
        seats = movers(client, game_id)
        assert seats[0] == 1  # railyard-bot opened, once the person's join started the table
        assert {1, 2} <= set(seats)
        lines = text.splitlines()
        assert f"game {game_id}: took seat 1 (--join)" in lines[0], text
        assert f"game {game_id} over at version {view.version}: seat 1 played" in lines[-1], text
        assert len(lines) == 2, text

        again = client.rematch(game_id, token=token)
        new_id = again.game.game_id
        assert new_id != game_id
        assert again.seat.seat == 2
        assert again.game.viewer_seat == 2
        assert client.get_game(game_id).rematch_game_id == new_id
        # Each old token gets its new one once.
        assert not client.rematch(game_id, token=token).HasField("seat")
        mine = client.get_game(new_id, token=again.seat.token)
        assert [p.display_name for p in mine.players] == ["Dealer", "Robo", "Ann"]
        assert mine.players[0].bot == pb.BOT_LEVEL_GREEDY
        assert mine.seed_sha256 != view.seed_sha256


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_railyard_bot_joins_a_public_table_by_id_and_plays_once_its_host_starts_it(
    server: Serve, transport: str, tmp_path: Path
) -> None:
    """--join GAME_ID --seat 1 on a public table of two open seats; the table
    is listed with one open seat while it waits; the host's StartGame gives
    seat 0 to a random bot, and railyard-bot plays seat 1 to the end."""
    url = endpoint(server, transport)
    with Client(url) as client:
        created = client.create_game(
            [None, None],
            BLOCK,
            table=pb.TableSettings(visibility=pb.VISIBILITY_PUBLIC, bot_level=pb.BOT_LEVEL_RANDOM),
            seed=SEAT_1_OPENS[2],
        )
        game_id, host = created.game.game_id, created.host_token
        assert not created.join_code  # public: joined by its id
        log_path = tmp_path / "bot.log"
        how = ["--module", "railyard_client.bot:heaviest"]
        bot = start_bot(log_path, "--url", url, "--join", game_id, "--seat", "1", *how)
        try:
            wait_for(
                "the bot's seat",
                lambda: not client.get_game(game_id).players[1].open,
                bot,
                log_path,
            )
            listed = {g.game_id: g for g in client.iter_games()}
            assert listed[game_id].open_seats == 1
            assert [p.open for p in listed[game_id].players] == [True, False]

            error = refusal(lambda: client.start_game(game_id, "not-the-host-token"))
            assert (error.code, error.reason) == (grpc.StatusCode.PERMISSION_DENIED, "NOT_HOST")
            started = client.start_game(game_id, host)
            assert started.game.status == pb.GAME_STATUS_IN_PROGRESS
            assert started.game.players[0].bot == pb.BOT_LEVEL_RANDOM
            assert started.game.players[0].display_name == "Bot 1"
            error = refusal(lambda: client.start_game(game_id, host))
            assert error.reason == "GAME_STARTED"
            assert game_id not in {g.game_id for g in client.iter_games()}
            text = finish(bot, log_path)
        finally:
            if bot.poll() is None:
                bot.kill()
        view = client.get_game(game_id)
        assert view.status == pb.GAME_STATUS_FINISHED
        seats = movers(client, game_id)
        assert seats[0] == 1  # railyard-bot opened, once the host started the table
        assert set(seats) == {0, 1}
        assert f"game {game_id} over at version {view.version}: seat 1" in text, text


@pytest.mark.parametrize(("transport", "stop"), [("http", signal.SIGINT), ("grpc", signal.SIGTERM)])
def test_an_interrupted_railyard_bot_gives_its_seat_back(
    server: Serve, transport: str, stop: signal.Signals, tmp_path: Path
) -> None:
    """A --join bot stopped while its table waits leaves (LeaveGame): the seat
    is open again, and it exits 130."""
    url = endpoint(server, transport)
    with Client(url) as client:
        players, table = private_table()
        created = client.create_game(players, BLOCK, table=table)
        game_id = created.game.game_id
        log_path = tmp_path / "bot.log"
        bot = start_bot(log_path, "--url", url, "--join", created.join_code, "--level", "random")
        try:
            wait_for(
                "the bot's seat",
                lambda: not client.get_game(game_id).players[1].open,
                bot,
                log_path,
            )
            time.sleep(0.3)  # inside its watch of the waiting table
            bot.send_signal(stop)
            code = bot.wait(WAIT)
        finally:
            if bot.poll() is None:
                bot.kill()
        text = log_path.read_text()
        assert code == 130, text
        assert "its seat is open again" in text, text
        view = client.get_game(game_id)
        assert view.status == pb.GAME_STATUS_WAITING
        assert [p.open for p in view.players] == [False, True, True]


def test_railyard_bot_join_refusals(server: Serve) -> None:
    """--join takes a code or a game id, alone; a code no table has is a
    refusal (exit 1)."""

    def bot(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BOT), "--url", server.base_url, "--level", "random", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    done = bot("--join", "K7QXM2PAZ0")  # a 0 is no code's letter
    assert done.returncode == 2
    assert "--join wants a join code" in done.stderr
    done = bot("--join", "ABCDEFGHJK", "--game", "0" * 20)
    assert done.returncode == 2
    assert "without --game and --token" in done.stderr
    done = bot("--join", "ABCDEFGHJK", "--seat", "-1")
    assert done.returncode == 2
    assert "--seat is a seat's number" in done.stderr
    done = bot("--game", "0" * 20, "--token", "t", "--name", "Robo")
    assert done.returncode == 2
    assert "--name and --seat go with --join" in done.stderr
    done = bot("--join", "ABCDEFGHJK")
    assert done.returncode == 1
    assert "JOIN_CODE_NOT_FOUND" in done.stderr


# ------------------------------------------------------------------ ListGames


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_list_games_pages_oldest_first_and_iter_games_follows_the_pages(
    server: Serve, transport: str
) -> None:
    url = endpoint(server, transport)
    with Client(url) as client:
        public = pb.TableSettings(visibility=pb.VISIBILITY_PUBLIC)
        mine = [client.create_game(["Host", None], BLOCK, table=public) for _ in range(7)]
        ids = [c.game.game_id for c in mine]
        players, table = private_table(2)
        hidden = client.create_game(players, BLOCK, table=table).game.game_id
        pages: list[pb.ListGamesResponse] = []
        page_token = ""
        while True:
            page = client.list_games(page_size=3, page_token=page_token)
            pages.append(page)
            page_token = page.next_page_token
            if not page_token:
                break
        assert len(pages) >= 3
        assert all(len(p.games) == 3 for p in pages[:-1])
        assert len(pages[-1].games) <= 3
        paged = [g.game_id for p in pages for g in p.games]
        assert len(paged) == len(set(paged))
        assert [i for i in paged if i in ids] == ids  # oldest first
        assert hidden not in paged
        summary = next(g for p in pages for g in p.games if g.game_id == ids[0])
        assert summary.open_seats == 1
        assert summary.ruleset.preset == "block"
        assert summary.players[0].display_name == "Host"
        assert summary.create_time.seconds > 0
        # The iterator walks the same pages; a default page holds them all.
        assert [g.game_id for g in client.iter_games(page_size=3)] == paged
        assert [g.game_id for g in client.list_games().games] == paged

        error = refusal(lambda: client.list_games(page_token="not-a-token"))
        assert (error.code, error.field) == (grpc.StatusCode.INVALID_ARGUMENT, "pageToken")
        error = refusal(lambda: client.list_games(page_size=-1))
        assert (error.code, error.field) == (grpc.StatusCode.INVALID_ARGUMENT, "pageSize")
        assert error.http_status == (400 if transport == "http" else None)


# ------------------------------------------------------------------ LeaveGame


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_leave_game_before_the_start_and_during_play(server: Serve, transport: str) -> None:
    """Before the start the seat opens again and its token stops working;
    during play a bot of the table's level takes it over, keeping the name;
    once over, LeaveGame is GAME_OVER. Rematch of a game in progress is
    GAME_NOT_OVER."""
    with Client(endpoint(server, transport)) as client:
        created = client.create_game(
            ["Host", None],
            BLOCK,
            table=pb.TableSettings(visibility=pb.VISIBILITY_PUBLIC, bot_level=pb.BOT_LEVEL_RANDOM),
        )
        game_id, host = created.game.game_id, created.seats[0].token
        first = client.join_game(game_id, display_name="Ann", seat=1)
        assert first.game.status == pb.GAME_STATUS_IN_PROGRESS  # its last seat: started
        left = client.leave_game(game_id, token=first.seat.token)
        assert left.game.players[1].bot == pb.BOT_LEVEL_RANDOM
        assert left.game.players[1].display_name == "Ann"
        error = refusal(lambda: client.get_game(game_id, token=first.seat.token))
        assert (error.code, error.reason) == (grpc.StatusCode.PERMISSION_DENIED, "BAD_SEAT_TOKEN")
        error = refusal(lambda: client.rematch(game_id, token=host))
        assert (error.code, error.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "GAME_NOT_OVER")
        view, _ = play_seat(client, game_id, host)
        assert view.status == pb.GAME_STATUS_FINISHED
        assert 1 in movers(client, game_id)  # the bot played the seat Ann left
        error = refusal(lambda: client.leave_game(game_id, token=host))
        assert error.reason == "GAME_OVER"

        # Before the start: a three-seat table keeps waiting.
        waiting = client.create_game(["Host", None, None], BLOCK, table=pb.TableSettings())
        game_id = waiting.game.game_id
        ben = client.join_game(game_id, waiting.join_code, display_name="Ben")
        assert ben.seat.seat == 1
        assert ben.game.status == pb.GAME_STATUS_WAITING
        left = client.leave_game(game_id, token=ben.seat.token)
        assert left.game.status == pb.GAME_STATUS_WAITING
        assert [p.open for p in left.game.players] == [False, True, True]
        assert left.game.players[1].display_name == ""
        error = refusal(lambda: client.leave_game(game_id, token=ben.seat.token))
        assert error.reason == "BAD_SEAT_TOKEN"


# ------------------------------------------------------------------ refusals


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_table_refusals_arrive_as_railyard_errors(server: Serve, transport: str) -> None:
    """tables.md's error rows, each with its code, reason and (HTTP) status."""
    http = transport == "http"
    with Client(endpoint(server, transport)) as client:
        players, table = private_table()
        created = client.create_game(players, BLOCK, table=table)
        game_id, code = created.game.game_id, created.join_code

        def check(error: RailyardError, code: grpc.StatusCode, reason: str, status: int) -> None:
            assert (error.code, error.reason) == (code, reason), error
            assert error.http_status == (status if http else None), error

        denied, failed = grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.FAILED_PRECONDITION
        check(refusal(lambda: client.join_game(game_id)), denied, "BAD_JOIN_CODE", 403)
        check(
            refusal(lambda: client.join_game(game_id, "ABCDEFGHJK")), denied, "BAD_JOIN_CODE", 403
        )
        check(
            refusal(lambda: client.join_game(join_code="ABCDEFGHJK")),
            grpc.StatusCode.NOT_FOUND,
            "JOIN_CODE_NOT_FOUND",
            404,
        )
        ann = client.join_game(game_id, code, seat=1, display_name="Ann")
        check(refusal(lambda: client.join_game(join_code=code, seat=1)), failed, "SEAT_TAKEN", 400)
        error = refusal(lambda: client.join_game(join_code=code, display_name="x" * 65))
        check(error, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT", 400)
        assert error.field == "displayName"
        check(refusal(lambda: client.start_game(game_id, ann.seat.token)), denied, "NOT_HOST", 403)
        check(
            refusal(lambda: client.start_game(game_id)),
            grpc.StatusCode.UNAUTHENTICATED,
            "UNAUTHENTICATED",
            401,
        )
        moves = refusal(
            lambda: client.apply_move(game_id, pb.Move(draw=pb.Move.Draw()), token=ann.seat.token)
        )
        check(moves, failed, "GAME_NOT_STARTED", 400)
        # The client's default token is the host's: StartGame without one uses it.
        client.token = created.host_token
        assert client.start_game(game_id).game.status == pb.GAME_STATUS_IN_PROGRESS
        client.token = None
        check(refusal(lambda: client.join_game(join_code=code)), failed, "GAME_STARTED", 400)
        with pytest.raises(ValueError, match="game_id or a join_code"):
            client.join_game()


# ------------------------------------------------------------------ asyncio


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_async_client_joins_lists_starts_and_leaves(server: Serve, transport: str) -> None:
    async def main() -> None:
        async with AsyncClient(endpoint(server, transport)) as client:
            created = await client.create_game(
                ["Host", None, None],
                BLOCK,
                table=pb.TableSettings(visibility=pb.VISIBILITY_PUBLIC),
            )
            game_id = created.game.game_id
            joined = await client.join_game(game_id, seat=2, display_name="Ann")
            assert joined.seat.seat == 2
            listed = [g async for g in client.iter_games(page_size=2)]
            assert next(g for g in listed if g.game_id == game_id).open_seats == 1
            started = await client.start_game(game_id, created.host_token)
            assert started.game.status == pb.GAME_STATUS_IN_PROGRESS
            assert started.game.players[1].bot == pb.BOT_LEVEL_GREEDY  # the default level
            left = await client.leave_game(game_id, token=joined.seat.token)
            assert left.game.players[2].bot == pb.BOT_LEVEL_GREEDY
            assert left.game.players[2].display_name == "Ann"
            with pytest.raises(RailyardError) as caught:
                await client.rematch(game_id, token=created.seats[0].token)
            assert caught.value.reason == "GAME_NOT_OVER"

    asyncio.run(main())


# ------------------------------------------------------------------ retries


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_join_fails_over_from_a_dead_endpoint(server: Serve, transport: str) -> None:
    """A first endpoint that takes no connection: the JoinGame was never sent,
    so it goes to the next one."""
    dead = "http://127.0.0.1:1" if transport == "http" else "127.0.0.1:1"
    with Client(endpoint(server, transport)) as client:
        players, table = private_table(2)
        created = client.create_game(players, BLOCK, table=table)
    with Client([dead, endpoint(server, transport)], timeout=3) as failover:
        failover.sleep = lambda _seconds: None
        joined = failover.join_game(join_code=created.join_code)
    assert joined.seat.seat == 1


class _LostAnswers:
    """A transport whose every call fails as ``error`` does, counted."""

    def __init__(self, error: RailyardError) -> None:
        self.error = error
        self.calls = 0

    def rotate(self) -> None:
        pass

    def unary(self, method: str, request: object, into: object, token: str | None) -> Any:
        self.calls += 1
        raise self.error

    def close(self) -> None:
        pass


@pytest.mark.parametrize(
    ("error", "calls"),
    [
        # The store took the commit and its answer was lost: maybe a seat taken.
        (RailyardError(grpc.StatusCode.UNAVAILABLE, "lost", "OUTCOME_UNKNOWN"), 1),
        # The connection dropped mid-call: the same.
        (RailyardError(grpc.StatusCode.UNAVAILABLE, "Socket closed"), 1),
        # Refused before anything was done: repeated.
        (RailyardError(grpc.StatusCode.UNAVAILABLE, "store", "STORE_UNAVAILABLE"), 4),
        (RailyardError(grpc.StatusCode.UNAVAILABLE, "refused", is_unsent=True), 4),
        (RailyardError(grpc.StatusCode.RESOURCE_EXHAUSTED, "slow down", "RATE_LIMITED"), 4),
    ],
)
def test_table_calls_repeat_only_what_surely_did_nothing(error: RailyardError, calls: int) -> None:
    with Client("127.0.0.1:1") as client:
        lost = _LostAnswers(error)
        client.transport = lost
        client.sleep = lambda _seconds: None
        for call in (
            lambda: client.join_game(join_code="ABCDEFGHJK"),
            lambda: client.start_game("0" * 20, "host"),
            lambda: client.leave_game("0" * 20, token="t"),
            lambda: client.rematch("0" * 20, token="t"),
        ):
            lost.calls = 0
            assert refusal(call) is error
            assert lost.calls == calls
        lost.calls = 0
        refusal(lambda: client.list_games())  # a read: every transient refusal repeated
        assert lost.calls == 4
