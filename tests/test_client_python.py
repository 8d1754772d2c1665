"""The Python client (``clients/python``, ``railyard_client``) against the real
service: ``railyard serve`` processes over one real redis-server, as replicas
run, through both transports.

Whole games (sync and asyncio), every error row of API.md, requestId
retries that apply once, a watch that resumes on the other replica when its
own is killed, the deal verifier on real finished games (and on altered
ones), the shuffle agreeing across the Python client, the JS client and the
engine, and ``railyard-bot`` finishing a game after its replica is stopped.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from packaging.utils import canonicalize_name

import engine
from engine.shuffle import shuffle as engine_shuffle
from railyard_client import (
    AsyncClient,
    Client,
    DealMismatchError,
    RailyardError,
    new_request_id,
    pb,
    verify_game,
)
from railyard_client import verify as client_verify
from tests.lockfile import locked_pins, pinned_version, project_requirements
from tests.test_client_js import node
from tests.test_service_resilience import Serve, serve

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ROOT / "clients" / "python"
#: The copy of ../shared/vectors/shuffle.json that ships with the tests
#: (tests/test_shuffle.py keeps it current), so a clone runs them too.
VECTORS = ROOT / "tests" / "fixtures" / "shuffle.json"
BOT = Path(sys.executable).with_name("railyard-bot")
TRANSPORTS = ("http", "grpc")
#: A short game: double-6, hands of 7, one round (MT-SET-1, MT-RND-1).
SHORT = pb.Ruleset(set_max=6, hand_size=7, rounds=1)
#: The replicas as tests run them: no bot worker processes (2 cores, shared).
# (A game of bots only played by CreateGame: the verifier's tests want it whole.)
ENV = {"RAILYARD_BOT_PROCESSES": "0", "RAILYARD_BOTS_ONLY": "request"}


def endpoint(server: Serve, transport: str) -> str:
    if transport == "http":
        return server.base_url
    return f"127.0.0.1:{server.grpc_port}"


@pytest.fixture(scope="module")
def replicas(redis_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Serve]]:
    """Two replicas over the session's Redis, shared by the tests that kill nothing."""
    tmp = tmp_path_factory.mktemp("replicas")
    redis_server.start()
    with (
        serve(tmp, redis_server.url, "a", **ENV) as a,
        serve(tmp, redis_server.url, "b", **ENV) as b,
    ):
        yield [a, b]


def tokens_of(created: pb.CreateGameResponse) -> dict[int, str]:
    return {s.seat: s.token for s in created.seats}


def first_play(legal: pb.ListLegalMovesResponse) -> pb.LegalMove:
    plays = [m for m in legal.moves if m.move.HasField("play")]
    return (plays or list(legal.moves))[0]


def play_to_end(clients: list[Client], game_id: str, tokens: dict[int, str]) -> pb.GameView:
    """Both seats play, each through its own client (its own replica), with
    expectedVersion on every move; the view after the last."""
    view = clients[0].get_game(game_id)
    while view.status != pb.GAME_STATUS_FINISHED:
        seat = view.current_seat
        client = clients[seat % len(clients)]
        legal = client.list_legal_moves(game_id, token=tokens[seat])
        assert legal.version == view.version
        answer = client.apply_move(
            game_id, first_play(legal), token=tokens[seat], expected_version=legal.version
        )
        assert answer.game.version > view.version
        view = answer.game
    return view


def as_dicts(events: Any) -> list[dict[str, Any]]:
    return [json_format.MessageToDict(e) for e in events]


# ------------------------------------------------------------------ whole games


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_whole_game_sync_across_replicas_and_verified(
    replicas: list[Serve], transport: str
) -> None:
    """A game created on one replica, played through both (seat 0 on a, seat 1
    on b), every method called; the finished game's deals verify (MT-FAIR-1)."""
    clients = [Client(endpoint(r, transport)) for r in replicas]
    try:
        rulesets = clients[0].list_rulesets()
        assert {"standard", "block", "chicken_foot"} <= {r.preset for r in rulesets.rulesets}
        created = clients[0].create_game(["Ana", "Ben"], SHORT)
        game_id, tokens = created.game.game_id, tokens_of(created)
        assert set(tokens) == {0, 1}
        assert created.game.version == 0
        mine = clients[1].get_game(game_id, token=tokens[0])
        assert mine.viewer_seat == 0
        assert len(mine.hand) == 7
        public = clients[1].get_game(game_id)
        assert not public.HasField("viewer_seat")
        assert len(public.hand) == 0
        view = play_to_end(clients, game_id, tokens)
        assert view.seed
        assert view.winners
        log = clients[1].get_game_log(game_id)
        assert log.seed == view.seed
        report = verify_game(log, view_seed_sha256=created.game.seed_sha256)
        assert report.rounds == 1
        assert report.tiles_played > 0
    finally:
        for client in clients:
            client.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_whole_game_async_with_a_watch(replicas: list[Serve], transport: str) -> None:
    """The asyncio client plays a game while a spectator's watch follows it:
    the watch yields a snapshot, then exactly the log's events, then stops."""

    async def main() -> tuple[list[pb.GameEvent], pb.GetGameLogResponse]:
        async with AsyncClient([endpoint(r, transport) for r in replicas]) as client:
            created = await client.create_game(
                [pb.Player(display_name="Ana"), pb.Player(display_name="Bot", bot=2)], SHORT
            )
            game_id, token = created.game.game_id, tokens_of(created)[0]
            seen: list[pb.GameEvent] = []

            async def follow() -> None:
                async for event in client.watch(game_id, after_version=0):
                    seen.append(event)

            watcher = asyncio.create_task(follow())
            view = created.game
            while view.status != pb.GAME_STATUS_FINISHED:
                legal = await client.list_legal_moves(game_id, token=token)
                answer = await client.apply_move(
                    game_id, first_play(legal), token=token, expected_version=legal.version
                )
                view = answer.game
            await asyncio.wait_for(watcher, 30)
            return seen, await client.get_game_log(game_id)

    seen, log = asyncio.run(main())
    assert seen[0].HasField("snapshot")
    assert seen[-1].HasField("game_ended")
    assert as_dicts(seen[1:]) == as_dicts(e for e in log.events if e.version > 0)
    verify_game(log)


# ------------------------------------------------------------------ errors


def refusal(call: Any) -> RailyardError:
    with pytest.raises(RailyardError) as caught:
        call()
    return caught.value


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_error_row(replicas: list[Serve], transport: str) -> None:
    """API.md's error table, each row as a RailyardError with the gRPC code,
    the reason, the rule id or field, and (HTTP) the status; nothing changes."""
    http = transport == "http"
    with Client(endpoint(replicas[0], transport)) as client:
        created = client.create_game(["Ana", "Ben"], SHORT, seed="errors")
        game_id, tokens = created.game.game_id, tokens_of(created)
        view = client.get_game(game_id)
        mover, waiter = view.current_seat, 1 - view.current_seat
        legal = client.list_legal_moves(game_id, token=tokens[mover])
        move = first_play(legal)

        def check(error: RailyardError, code: grpc.StatusCode, reason: str, status: int) -> None:
            assert (error.code, error.reason) == (code, reason), error
            assert error.http_status == (status if http else None), error
            assert error.message

        # No token on a seat-only call.
        error = refusal(lambda: client.apply_move(game_id, move))
        check(error, grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED", 401)
        # A token that is not this game's.
        error = refusal(lambda: client.apply_move(game_id, move, token="not-a-token"))
        check(error, grpc.StatusCode.PERMISSION_DENIED, "BAD_SEAT_TOKEN", 403)
        # A valid token of this game, not this seat's turn.
        error = refusal(lambda: client.apply_move(game_id, move, token=tokens[waiter]))
        check(error, grpc.StatusCode.FAILED_PRECONDITION, "NOT_YOUR_TURN", 400)
        # A move not legal now, with the rule it breaks.
        legal_texts = {m.notation for m in legal.moves}
        hand = client.get_game(game_id, token=tokens[mover]).hand
        illegal = next(
            pb.Move(play=pb.Move.Play(tile=t, train=pb.TrainRef(seat=mover)))
            for t in hand
            if f"{t.a}-{t.b}@p{mover}" not in legal_texts
            and f"{t.b}-{t.a}@p{mover}" not in legal_texts
        )
        error = refusal(lambda: client.apply_move(game_id, illegal, token=tokens[mover]))
        check(error, grpc.StatusCode.FAILED_PRECONDITION, "ILLEGAL_MOVE", 400)
        assert error.rule is not None, error
        assert re.fullmatch(r"[A-Z]+(-[A-Z0-9]+)+", error.rule), error
        # A stale expectedVersion.
        error = refusal(
            lambda: client.apply_move(game_id, move, token=tokens[mover], expected_version=7)
        )
        check(error, grpc.StatusCode.ABORTED, "VERSION_MISMATCH", 409)
        # An unknown game (an id of the right shape that names none).
        error = refusal(lambda: client.get_game("z" * len(game_id)))
        check(error, grpc.StatusCode.NOT_FOUND, "GAME_NOT_FOUND", 404)
        # Bad input: an unknown preset, no players, an option out of range.
        error = refusal(lambda: client.create_game(["Ana", "Ben"], "no-such-preset"))
        check(error, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT", 400)
        error = refusal(lambda: client.create_game([], SHORT))
        check(error, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT", 400)
        error = refusal(lambda: client.create_game(["A", "B"], pb.Ruleset(set_max=99)))
        check(error, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT", 400)
        error = refusal(lambda: client.apply_move(game_id, pb.Move(), token=tokens[mover]))
        check(error, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT", 400)
        # Nothing changed in the game.
        assert client.get_game(game_id).version == view.version
        # Game over: finish it, then move again.
        play_to_end([client], game_id, tokens)
        error = refusal(lambda: client.apply_move(game_id, move, token=tokens[mover]))
        check(error, grpc.StatusCode.FAILED_PRECONDITION, "GAME_OVER", 400)


def test_an_unreachable_service_is_unavailable() -> None:
    with Client(["127.0.0.1:1"], timeout=2) as client:
        client.retry = type(client.retry)(attempts=2, first_delay=0.01)
        assert refusal(client.list_rulesets).code is grpc.StatusCode.UNAVAILABLE
    with Client("http://127.0.0.1:1", timeout=2) as client:
        client.retry = type(client.retry)(attempts=1)
        assert refusal(client.list_rulesets).code is grpc.StatusCode.UNAVAILABLE


# ------------------------------------------------------------------ retries


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_request_id_retries_apply_once(replicas: list[Serve], transport: str) -> None:
    """A repeated ApplyMove (same requestId, on the other replica) answers the
    first outcome and applies nothing; a client whose first endpoint is down
    retries on the next with the same id; a repeated CreateGame creates no
    second game (replayed, without tokens: API.md shows them once)."""
    a, b = (Client(endpoint(r, transport)) for r in replicas)
    try:
        once = new_request_id()  # the replicas' Redis outlives a test: a fresh id
        created = a.create_game(["Ana", "Ben"], SHORT, request_id=once)
        again = b.create_game(["Ana", "Ben"], SHORT, request_id=once)
        assert again.game.game_id == created.game.game_id
        assert again.replayed
        assert not again.seats
        game_id, tokens = created.game.game_id, tokens_of(created)

        seat = created.game.current_seat
        legal = a.list_legal_moves(game_id, token=tokens[seat])
        first = a.apply_move(game_id, first_play(legal), token=tokens[seat], request_id="m1")
        # The answer was "lost": the caller repeats it elsewhere.
        repeat = b.apply_move(game_id, first_play(legal), token=tokens[seat], request_id="m1")
        assert repeat.game.version == first.game.version == legal.version + 1
        assert as_dicts(repeat.events) == as_dicts(first.events)
        assert b.get_game(game_id).version == first.game.version
        played = [e for e in a.get_game_log(game_id).events if e.HasField("tile_played")]
        assert len(played) == len([e for e in first.events if e.HasField("tile_played")])

        # A dead first endpoint: the call goes to the next one, same request id.
        dead = "http://127.0.0.1:1" if transport == "http" else "127.0.0.1:1"
        with Client([dead, endpoint(replicas[1], transport)], timeout=3) as failover:
            failover.sleep = lambda _seconds: None
            view = failover.get_game(game_id)
            seat = view.current_seat
            legal = failover.list_legal_moves(game_id, token=tokens[seat])
            assert legal.version == first.game.version
            answer = failover.apply_move(
                game_id, first_play(legal), token=tokens[seat], request_id="m2"
            )
            assert answer.game.version == legal.version + 1
    finally:
        a.close()
        b.close()


# ------------------------------------------------------------------ watch across a killed replica


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_watch_resumes_on_the_other_replica_after_a_kill(
    tmp_path: Path, redis_url: str, transport: str
) -> None:
    """The watch is on replica a; a is SIGKILLed mid-game; the client resumes
    on b by itself, and what it yielded is the log exactly: nothing missed,
    nothing twice."""
    with (
        serve(tmp_path, redis_url, "a", **ENV) as a,
        serve(tmp_path, redis_url, "b", **ENV) as b,
        Client(endpoint(b, transport)) as player,
    ):
        created = player.create_game(["Ana", "Ben"], SHORT)
        game_id, tokens = created.game.game_id, tokens_of(created)
        seen: list[pb.GameEvent] = []
        failed: list[BaseException] = []
        watcher = Client([endpoint(a, transport), endpoint(b, transport)])
        watcher.sleep = lambda _seconds: time.sleep(0.05)

        def follow() -> None:
            try:
                seen.extend(watcher.watch(game_id, after_version=0))
            except BaseException as exc:  # reported by the test thread
                failed.append(exc)

        thread = threading.Thread(target=follow, daemon=True)
        thread.start()

        def play(moves: int) -> pb.GameView:
            view = player.get_game(game_id)
            for _ in range(moves):
                if view.status == pb.GAME_STATUS_FINISHED:
                    break
                legal = player.list_legal_moves(game_id, token=tokens[view.current_seat])
                view = player.apply_move(
                    game_id, first_play(legal), token=tokens[view.current_seat]
                ).game
            return view

        view = play(4)
        deadline = time.monotonic() + 10
        while not any(e.version == view.version for e in seen):
            assert time.monotonic() < deadline, "the watch on a saw nothing"
            time.sleep(0.02)
        a.proc.send_signal(signal.SIGKILL)
        a.proc.wait(10)
        while play(50).status != pb.GAME_STATUS_FINISHED:
            pass
        thread.join(30)
        watcher.close()
        assert not thread.is_alive(), "the watch did not end after gameEnded"
        assert failed == []
        log = player.get_game_log(game_id)
    assert seen[0].HasField("snapshot")
    assert sum(e.HasField("snapshot") for e in seen) == 1
    assert as_dicts(seen[1:]) == as_dicts(e for e in log.events if e.version > 0)


# ------------------------------------------------------------------ the verifier


@pytest.fixture(scope="module")
def finished_log(replicas: list[Serve]) -> tuple[pb.GetGameLogResponse, dict[str, Any]]:
    """A finished game of bots (three seats, two rounds, draws), its log as a
    message and as the HTTP JSON."""
    with Client(replicas[0].base_url) as client:
        created = client.create_game(
            [pb.Player(display_name=f"B{i}", bot=1 + i % 2) for i in range(3)],
            pb.Ruleset(preset="standard", rounds=2),
        )
        assert created.game.status == pb.GAME_STATUS_FINISHED
        log = client.get_game_log(created.game.game_id)
        raw = client.transport._http.get(  # type: ignore[attr-defined]
            f"{replicas[0].base_url}/v1/games/{created.game.game_id}/log"
        ).json()
    return log, raw


def altered(log: pb.GetGameLogResponse) -> Iterator[tuple[str, pb.GetGameLogResponse]]:
    def copy() -> pb.GetGameLogResponse:
        other = pb.GetGameLogResponse()
        other.CopyFrom(log)
        return other

    other = copy()
    other.seed = "not the seed"
    yield "seed", other
    other = copy()
    other.seed = "another seed"
    other.seed_sha256 = client_verify.seed_sha256("another seed")
    for event in other.events:
        if event.HasField("game_ended"):
            event.game_ended.seed = "another seed"
    yield "seed and commitment", other
    other = copy()
    played = next(e for e in other.events if e.HasField("tile_played") and e.version > 3)
    tile = played.tile_played.tile
    swap = next(
        e.tile_played.tile
        for e in other.events
        if e.HasField("tile_played") and e.tile_played.seat != played.tile_played.seat
    )
    tile.a, tile.b = swap.a, swap.b
    yield "a played tile", other
    other = copy()
    drawn = next(i for i, e in enumerate(other.events) if e.HasField("tile_drawn"))
    del other.events[drawn]
    yield "a draw left out", other


def test_verifier_accepts_a_real_game_and_rejects_altered_ones(
    finished_log: tuple[pb.GetGameLogResponse, dict[str, Any]],
) -> None:
    log, _ = finished_log
    report = verify_game(log)
    assert report.rounds == 2
    assert report.tiles_drawn > 0
    with pytest.raises(DealMismatchError, match="committed"):
        verify_game(log, view_seed_sha256="0" * 64)
    for what, other in altered(log):
        with pytest.raises(DealMismatchError):
            verify_game(other)
        assert what


def run_js(script: str, payload: Any) -> Any:
    """A node ES module reading JSON on stdin, printing JSON."""
    done = subprocess.run(
        [node(), "--input-type=module", "-e", script],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=ROOT / "clients" / "js",
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


JS_VERIFY = """
import { readFileSync } from "node:fs";
import { verifyGame } from "./src/verify.js";
const logs = JSON.parse(readFileSync(0, "utf8"));
const out = [];
for (const log of logs) {
  try { out.push({ ok: await verifyGame(log) }); }
  catch (err) { out.push({ error: err.name + ": " + err.message }); }
}
console.log(JSON.stringify(out));
"""


def test_js_verifier_agrees_on_a_real_game_and_altered_ones(
    finished_log: tuple[pb.GetGameLogResponse, dict[str, Any]],
) -> None:
    log, raw = finished_log
    assert json_format.ParseDict(raw, pb.GetGameLogResponse()) == log
    logs = [raw, *(json_format.MessageToDict(other) for _, other in altered(log))]
    results = run_js(JS_VERIFY, logs)
    report = verify_game(log)
    assert results[0] == {
        "ok": {
            "rounds": report.rounds,
            "tilesPlayed": report.tiles_played,
            "tilesDrawn": report.tiles_drawn,
        }
    }
    assert all(r.get("error", "").startswith("DealMismatchError") for r in results[1:]), results


# ------------------------------------------------------------------ cross-language shuffle

JS_SHUFFLE = """
import { readFileSync } from "node:fs";
import { shuffle, tiles } from "./src/verify.js";
const cases = JSON.parse(readFileSync(0, "utf8"));
const out = [];
for (const c of cases) {
  const aside = ([a, b]) => c.engine_set_aside && a === c.set && b === c.set;
  const items = tiles(c.set).filter((t) => !aside(t));
  out.push((await shuffle(c.seed, c.label, items)).map(([a, b]) => `${a}-${b}`));
}
console.log(JSON.stringify(out));
"""


def three_shuffles(cases: list[dict[str, Any]]) -> tuple[list[list[str]], ...]:
    """The shuffled lists of ``cases`` by the Python client, the engine and the JS client."""
    python, by_engine = [], []
    for case in cases:
        n = case["set"]
        items = [
            t for t in client_verify.tiles(n) if not (case["engine_set_aside"] and t == (n, n))
        ]
        python.append(
            [f"{a}-{b}" for a, b in client_verify.shuffle(case["seed"], case["label"], list(items))]
        )
        tiles = [engine.Tile(a, b) for a, b in items]
        by_engine.append([str(t) for t in engine_shuffle(case["seed"], case["label"], tiles)])
    return python, by_engine, run_js(JS_SHUFFLE, cases)


def test_mt_fair_1_shared_vectors_in_three_implementations() -> None:
    cases = json.loads(VECTORS.read_text())["cases"]
    python, by_engine, js = three_shuffles(cases)
    expected = [case["shuffled"] for case in cases]
    assert python == expected
    assert by_engine == expected
    assert js == expected


def test_mt_fair_1_random_seeds_in_three_implementations() -> None:
    rng = random.Random(13)
    alphabet = "abcxyz0189-_ éü♥"
    cases = [
        {
            "seed": "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40))),
            "label": f"round:{rng.randrange(1, 14)}:" + rng.choice(["deal", "first-player:1"]),
            "set": rng.choice([6, 9, 12, 15, 18]),
            "engine_set_aside": rng.random() < 0.5,
        }
        for _ in range(100)
    ]
    python, by_engine, js = three_shuffles(cases)
    assert python == by_engine
    assert js == python


# ------------------------------------------------------------------ railyard-bot


def start_bot(*args: str, log_path: Path) -> subprocess.Popen[bytes]:
    with log_path.open("wb") as log_file:
        return subprocess.Popen(
            [str(BOT), *args],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(log_path.parent)},
        )


@pytest.mark.parametrize(
    ("transport", "how"), [("http", ["--level", "greedy"]), ("grpc", ["--module", "my_bot:choose"])]
)
def test_railyard_bot_finishes_a_game_on_another_replica(
    tmp_path: Path, redis_url: str, transport: str, how: list[str]
) -> None:
    """Two railyard-bot processes play the two seats through replica a (b
    named as the fallback); a is stopped mid-game; they finish on b."""
    (tmp_path / "my_bot.py").write_text(
        "from railyard_client.bot import heaviest\n\n"
        "def choose(view, legal):\n"
        "    return heaviest(view, legal).notation  # a notation is a choice too\n"
    )
    with (
        serve(tmp_path, redis_url, "a", **ENV) as a,
        serve(tmp_path, redis_url, "b", **ENV) as b,
        Client(endpoint(b, transport)) as client,
    ):
        created = client.create_game(["Bot0", "Bot1"], pb.Ruleset(preset="standard", rounds=2))
        game_id, tokens = created.game.game_id, tokens_of(created)
        url = f"{endpoint(a, transport)},{endpoint(b, transport)}"
        bots = [
            start_bot(
                "--url",
                url,
                "--game",
                game_id,
                f"--token={tokens[seat]}",  # the = form takes any token
                *how,
                log_path=tmp_path / f"bot{seat}.log",
            )
            for seat in (0, 1)
        ]
        try:
            deadline = time.monotonic() + 60
            while client.get_game(game_id).version < 6:
                assert time.monotonic() < deadline, (tmp_path / "bot0.log").read_text()
                assert all(bot.poll() is None for bot in bots), (tmp_path / "bot0.log").read_text()
                time.sleep(0.05)
            a.proc.send_signal(signal.SIGKILL)
            a.proc.wait(10)
            stopped_at = client.get_game(game_id).version
            codes = [bot.wait(120) for bot in bots]
        finally:
            for bot in bots:
                if bot.poll() is None:
                    bot.kill()
        logs = [(tmp_path / f"bot{seat}.log").read_text() for seat in (0, 1)]
        assert codes == [0, 0], logs
        view = client.get_game(game_id)
        assert view.status == pb.GAME_STATUS_FINISHED, logs
        assert view.version > stopped_at
        assert all("over at version" in text for text in logs), logs
        verify_game(client.get_game_log(game_id))


def test_railyard_bot_needs_a_level_or_a_module() -> None:
    done = subprocess.run(
        [str(BOT), "--url", "x:1", "--game", "g", "--token", "t"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "--level" in done.stderr


@pytest.mark.parametrize(
    ("transport", "flag"),
    [
        ("http", ""),
        ("grpc", ""),
        ("http", "--verbose"),
        ("grpc", "--verbose"),
        ("http", "--quiet"),
    ],
)
def test_railyard_bot_says_two_lines_unless_asked(
    replicas: list[Serve], transport: str, flag: str
) -> None:
    """By default a start line and the result, and none of httpx's line per
    request; --verbose adds a line per move and per call (httpx's over HTTP,
    the gRPC transport's own over gRPC); --quiet says nothing."""
    url = endpoint(replicas[0], transport)
    with Client(url) as client:
        created = client.create_game(
            [pb.Player(display_name="Ann"), pb.Player(display_name="Bot", bot=pb.BOT_LEVEL_GREEDY)],
            SHORT,
        )
    done = subprocess.run(
        [
            str(BOT),
            "--url",
            url,
            "--game",
            created.game.game_id,
            f"--token={tokens_of(created)[0]}",
            "--module",
            "railyard_client.bot:heaviest",
            *([flag] if flag else []),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    lines = output.splitlines()
    if flag == "--quiet":
        assert lines == []
        return
    assert f"game {created.game.game_id}: playing its seat" in lines[0], output
    assert "over at version" in lines[-1], output
    if not flag:
        assert len(lines) == 2, output
        return
    assert any(" plays " in line for line in lines), output
    if transport == "http":
        assert any("HTTP Request: POST" in line and "/moves" in line for line in lines), output
    else:
        assert any("gRPC call:" in line and "ApplyMove OK" in line for line in lines), output


# ------------------------------------------------------------------ packaging


def test_client_requirements_are_locked_within_their_bounds() -> None:
    """scripts/bootstrap installs the client with --no-deps: the lock must
    hold what it needs."""
    pins = locked_pins()
    wrong = []
    for requirement in project_requirements(CLIENT / "pyproject.toml"):
        pin = pins.get(canonicalize_name(requirement.name))
        if pin is None or not requirement.specifier.contains(pinned_version(pin)):
            wrong.append(str(requirement))
    assert wrong == []


@pytest.mark.parametrize(
    "preset", ["standard", "chicken_foot", "chicken_foot_game", "draw", "matador"]
)
def test_bot_levels_see_the_engine_view_the_service_sent(preset: str) -> None:
    """railyard-bot --level rebuilds the engine's view from the wire view
    (railyard_client.engine_view): at every position of a game, for the
    seat to move, it equals the view the service built (MT-VIS-1/2)."""
    from railyard_api import convert
    from railyard_api.convert import move_to_proto, view_to_proto
    from railyard_client import engine_view

    game = engine.new_game(engine.preset(preset), 3, f"wire-{preset}")
    choose = engine_view.chooser("greedy")
    positions = 0
    while not game.over and positions < 150:
        view = engine.build_view(game, game.current_seat)
        wire = pb.GameView.FromString(
            view_to_proto(view, "g", ["a", "b", "c"], [0, 0, 0]).SerializeToString()
        )
        assert convert.view_from_proto(wire) == view
        legal = game.legal_moves()
        expected = engine.bots.choose("greedy", view, legal)
        offered = [
            pb.LegalMove(move=pb.Move.FromString(move_to_proto(m).SerializeToString()))
            for m in legal
        ]
        assert choose(wire, offered) is offered[legal.index(expected)]
        game.apply(expected)
        positions += 1
    assert positions > 20
