"""End to end: real gRPC and HTTP servers on loopback ports over one real Redis.

Several service instances (each its own RedisStore, GameApp, gRPC server and
uvicorn HTTP server) share one redis-server, as replicas behind a load
balancer would. What is checked:

* whole games through either transport, and across instances and transports,
  of Mexican Train and of every classic preset (RULES.md section 3);
* hidden information (MT-VIS, MT-DR-3, MT-FAIR-1, CL-VIS-1): no payload a
  caller can get (views, legal moves, move answers, watch streams, logs,
  error bodies), read raw off the wire, names a tile of another hand or of
  the boneyard (a block game's sleeping tiles included, also after a hand
  ends), or the seed before the game is over;
* the classic games' refusals over both transports, each with its reason and
  CL- rule, none of them changing the game;
* races between instances: one winner per version, one application per
  requestId, the same answer byte for byte to every retry;
* CreateGame with a requestId is idempotent, and only its first answer
  carries seat tokens.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import random
import re
import socket
import uuid
from collections.abc import AsyncIterator, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import grpc
import httpx
import pytest
import uvicorn
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status
from redis import Redis

import engine
from engine.tiles import MAX_SET
from railyard_api import game_service_pb2 as pb
from service.app import GameApp, Seats
from service.settings import Settings
from service.store import GameRecord
from service.store.redis import RedisStore
from service.transports.grpc.server import create_grpc_server
from service.transports.http.server import create_http_app
from tests.presets import LINE_PRESETS, draws, players_for
from tests.service_helpers import bearer, people, run

FINISHED = "GAME_STATUS_FINISHED"
_CODE_NAMES = {code.value[0]: code.name for code in grpc.StatusCode}
_SERVICE = "/railyard.v1.GameService/"

TileT = tuple[int, int]


def _tile(a: int, b: int) -> TileT:
    return (a, b) if a <= b else (b, a)


# ------------------------------------------------------------------ servers


@asynccontextmanager
async def http_server(app: GameApp) -> AsyncIterator[str]:
    """uvicorn serving create_http_app(app) on a free loopback port, in this loop."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it; without it every answer waits ~40 ms on
    # delayed ACKs (asyncio sets it itself only on sockets it creates).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        create_http_app(app),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("uvicorn stopped before it started")
            await asyncio.sleep(0.005)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()


@dataclass
class Instance:
    """One replica: its own store object, app, gRPC server and HTTP server."""

    store: RedisStore
    app: GameApp
    channel: grpc.aio.Channel
    http: httpx.AsyncClient

    @property
    def grpc(self) -> GrpcClient:
        return GrpcClient(self.channel)

    @property
    def rest(self) -> HttpClient:
        return HttpClient(self.http)


@asynccontextmanager
async def instance(redis_url: str) -> AsyncIterator[Instance]:
    async with AsyncExitStack() as stack:
        store = RedisStore(redis_url)
        stack.push_async_callback(store.close)
        # Games of bots only played by CreateGame (API.md Bots): this
        # instance runs no background player.
        # The races below put 25 calls on one connection at once, past the
        # default cap of 16 (a client that does so has some refused: ADR 0002).
        settings = Settings(rate_limit=0, bots_only="request", grpc_max_streams=64)
        app = GameApp(store, settings)
        server, port = create_grpc_server(app, "127.0.0.1", 0)
        await server.start()
        stack.push_async_callback(server.stop, None)
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        stack.push_async_callback(channel.close)
        base = await stack.enter_async_context(http_server(app))
        client = await stack.enter_async_context(
            httpx.AsyncClient(base_url=base, timeout=httpx.Timeout(30, read=60))
        )
        yield Instance(store, app, channel, client)


# ------------------------------------------------------------------ clients


@dataclass
class Reply:
    """One answer as received: the code, the canonical JSON, the raw payloads."""

    code: str  # "OK" or the gRPC status code's name
    reason: str  # the ErrorInfo reason; "" when OK
    data: dict[str, Any]  # the response message, or the google.rpc.Status, as JSON
    message: Message  # the same, as a message
    raw: list[tuple[str, bytes]]  # ("bin" | "json" | "text", payload) as on the wire
    http_status: int = 200

    def ok(self) -> dict[str, Any]:
        assert self.code == "OK", f"{self.code} {self.reason}: {self.data}"
        return self.data


def _reason(status: status_pb2.Status) -> str:
    info = error_details_pb2.ErrorInfo()
    assert status.details, f"no ErrorInfo in {status}"
    assert status.details[0].Unpack(info), f"no ErrorInfo in {status}"
    return info.reason


def _json_of(message: Message) -> tuple[dict[str, Any], bytes]:
    text = json_format.MessageToJson(message)
    return json.loads(text), text.encode()


class GrpcClient:
    """GameService over a channel, keeping every answer's wire bytes."""

    name = "grpc"

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.channel = channel

    async def _unary(self, method: str, request: Message, kind: type[Message], token: str | None):
        call = self.channel.unary_unary(
            _SERVICE + method,
            request_serializer=type(request).SerializeToString,
            response_deserializer=None,  # the raw bytes
        )
        try:
            wire = await call(request, metadata=bearer(token) if token else None)
        except grpc.aio.AioRpcError as exc:
            return _grpc_error(exc)
        message = kind.FromString(wire)
        data, text = _json_of(message)
        return Reply("OK", "", data, message, [("bin", wire), ("json", text)])

    async def create(self, request: pb.CreateGameRequest) -> Reply:
        return await self._unary("CreateGame", request, pb.CreateGameResponse, None)

    async def get(self, game_id: str, token: str | None) -> Reply:
        return await self._unary("GetGame", pb.GetGameRequest(game_id=game_id), pb.GameView, token)

    async def legal(self, game_id: str, token: str | None) -> Reply:
        request = pb.ListLegalMovesRequest(game_id=game_id)
        return await self._unary("ListLegalMoves", request, pb.ListLegalMovesResponse, token)

    async def apply(
        self,
        game_id: str,
        token: str | None,
        move: dict[str, Any],
        expected: int | None = None,
        request_id: str | None = None,
    ) -> Reply:
        request = pb.ApplyMoveRequest(game_id=game_id)
        json_format.ParseDict(move, request.move)
        if expected is not None:
            request.expected_version = expected
        if request_id is not None:
            request.request_id = request_id
        return await self._unary("ApplyMove", request, pb.ApplyMoveResponse, token)

    async def log(self, game_id: str) -> Reply:
        request = pb.GetGameLogRequest(game_id=game_id)
        return await self._unary("GetGameLog", request, pb.GetGameLogResponse, None)

    async def watch(
        self,
        game_id: str,
        token: str | None,
        after: int | None = None,
        started: asyncio.Event | None = None,
    ) -> list[tuple[dict[str, Any], list[tuple[str, bytes]]]]:
        request = pb.WatchGameRequest(game_id=game_id)
        if after is not None:
            request.after_version = after
        call = self.channel.unary_stream(
            _SERVICE + "WatchGame",
            request_serializer=pb.WatchGameRequest.SerializeToString,
            response_deserializer=None,
        )
        out = []
        async for wire in call(request, metadata=bearer(token) if token else None):
            data, text = _json_of(pb.GameEvent.FromString(wire))
            out.append((data, [("bin", wire), ("json", text)]))
            if started is not None:
                started.set()
        return out


def _grpc_error(exc: grpc.aio.AioRpcError) -> Reply:
    status = rpc_status.from_call(exc)  # type: ignore[arg-type]
    assert status is not None, f"no google.rpc.Status in {exc!r}"
    data, text = _json_of(status)
    raw: list[tuple[str, bytes]] = [
        ("text", (exc.details() or "").encode()),
        ("bin", status.SerializeToString()),
        ("json", text),
    ]
    for key, value in exc.trailing_metadata() or ():
        raw.append(("bin", value if isinstance(value, bytes) else f"{key}: {value}".encode()))
    return Reply(exc.code().name, _reason(status), data, status, raw)


class HttpClient:
    """The HTTP/JSON transport, keeping every body as received."""

    name = "http"

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def _call(
        self,
        verb: str,
        path: str,
        kind: type[Message],
        token: str | None,
        body: dict[str, Any] | None = None,
    ) -> Reply:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        response = await self.client.request(verb, path, json=body, headers=headers)
        data = response.json()
        raw = [("json", response.content)]
        if response.status_code == 200:
            message = json_format.ParseDict(data, kind(), ignore_unknown_fields=True)
            return Reply("OK", "", data, message, raw)
        status = json_format.ParseDict(data, status_pb2.Status())
        code = _CODE_NAMES[data["code"]]
        return Reply(code, _reason(status), data, status, raw, response.status_code)

    async def create(self, request: pb.CreateGameRequest) -> Reply:
        body = json_format.MessageToDict(request)
        return await self._call("POST", "/v1/games", pb.CreateGameResponse, None, body)

    async def get(self, game_id: str, token: str | None) -> Reply:
        return await self._call("GET", f"/v1/games/{game_id}", pb.GameView, token)

    async def legal(self, game_id: str, token: str | None) -> Reply:
        path = f"/v1/games/{game_id}/legal-moves"
        return await self._call("GET", path, pb.ListLegalMovesResponse, token)

    async def apply(
        self,
        game_id: str,
        token: str | None,
        move: dict[str, Any],
        expected: int | None = None,
        request_id: str | None = None,
    ) -> Reply:
        body: dict[str, Any] = {"move": move}
        if expected is not None:
            # API.md: int64 as a JSON string, and a number is accepted on input.
            body["expectedVersion"] = str(expected) if expected % 2 else expected
        if request_id is not None:
            body["requestId"] = request_id
        path = f"/v1/games/{game_id}/moves"
        return await self._call("POST", path, pb.ApplyMoveResponse, token, body)

    async def log(self, game_id: str) -> Reply:
        return await self._call("GET", f"/v1/games/{game_id}/log", pb.GetGameLogResponse, None)

    async def watch(
        self,
        game_id: str,
        token: str | None,
        after: int | None = None,
        started: asyncio.Event | None = None,
        last_event_id: int | None = None,
    ) -> list[tuple[dict[str, Any], list[tuple[str, bytes]]]]:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        if last_event_id is not None:
            headers["last-event-id"] = str(last_event_id)
        params = {} if after is None else {"afterVersion": str(after)}
        out = []
        path = f"/v1/games/{game_id}/events"
        async with self.client.stream("GET", path, params=params, headers=headers) as response:
            assert response.status_code == 200, await response.aread()
            assert response.headers["content-type"].startswith("text/event-stream")
            event_id: str | None = None
            async for line in response.aiter_lines():
                assert not line.startswith("event:"), f"the stream failed: {line}"
                if line.startswith("id:"):
                    event_id = line[3:].strip()
                elif line.startswith("data:"):
                    payload = line[5:].strip()
                    data = json.loads(payload)
                    assert event_id == data.get("version", "0"), (event_id, payload)
                    out.append((data, [("json", payload.encode())]))
                    event_id = None
                    if started is not None:
                        started.set()
        return out


Client = GrpcClient | HttpClient


# ------------------------------------------------------------------ games


def _version(message: dict[str, Any]) -> int:
    """A message's int64 version (proto3 JSON leaves out 0, writes a string)."""
    return int(message.get("version", "0"))


def _seed(label: str) -> str:
    """A distinctive seed, the same on every run (a failure replays)."""
    return f"{label}-{uuid.uuid5(uuid.NAMESPACE_URL, label)}"


def _finished(view: dict[str, Any]) -> bool:
    return view.get("status") == FINISHED


def _tokens(created: dict[str, Any]) -> dict[int, str]:
    """The seat tokens by seat: the people's seats only (API.md CreateGameResponse)."""
    seats = created.get("seats", [])
    tokens = {s.get("seat", 0): s["token"] for s in seats}
    assert len(tokens) == len(seats), f"a seat listed twice: {seats}"
    return tokens


def _kind(event: dict[str, Any]) -> str:
    kinds = [k for k in event if k != "version"]
    assert len(kinds) == 1, event
    return kinds[0]


async def play_to_end(
    client: Client,
    game_id: str,
    tokens: dict[int, str],
    view: dict[str, Any],
    rng: random.Random,
    bots: set[int],
) -> tuple[dict[str, Any], int]:
    """Random legal moves by the people until the game is over; the last view."""
    moves = 0
    while not _finished(view):
        seat = view["currentSeat"]
        assert seat not in bots, "a bot seat is played by the service"
        legal = (await client.legal(game_id, tokens[seat])).ok()
        assert legal["moves"], f"seat {seat} to move has no legal move"
        assert _version(legal) == _version(view)
        choice = rng.choice(legal["moves"])
        request_id = f"{rng.getrandbits(64):x}" if rng.random() < 0.3 else None
        answer = await client.apply(
            game_id, tokens[seat], choice["move"], _version(legal), request_id
        )
        body = answer.ok()
        new = body["game"]
        before, after = _version(view), _version(new)
        assert after >= before + 1
        versions = [_version(e) for e in body["events"]]
        assert versions == sorted(versions)
        assert versions[0] == before + 1
        assert versions[-1] == after
        assert new["viewerSeat"] == seat
        assert len(new.get("hand", [])) == new["players"][seat].get("handCount", 0)
        if "line" in new:
            check_line_view(new)
        if not _finished(new):
            assert "seed" not in new
            assert not any(_kind(e) == "gameEnded" for e in body["events"])
        view = new
        moves += 1
    return view, moves


#: CL-MAT-1: the matadors, which join any end.
_MATADORS: Final = {(0, 0), (1, 6), (2, 5), (3, 4)}


def check_line_view(view: dict[str, Any]) -> None:
    """A classic game's view (API.md "Classic games"): the line left to right,
    each tile {a: left half, b: right half}, joined to its neighbours
    (CL-LINE-1, CL-MAT-1), its open ends [left, right]; no trains; a hand
    counts as a round of a game to a target score; teams' scores are their
    seats' sums (CL-TEAM-1)."""
    rules = view["ruleset"]
    assert "trains" not in view, "a line game has no trains"
    tiles = [(t.get("a", 0), t.get("b", 0)) for t in view["line"].get("tiles", [])]
    ends = view["line"].get("openEnds", [])
    assert ends == ([tiles[0][0], tiles[-1][1]] if tiles else []), view["line"]
    sevens = rules["game"] == "GAME_MATADOR"
    for x, y in itertools.pairwise(tiles):
        if sevens:  # by sevens, unless one of the two is a matador
            assert x[1] + y[0] == 7 or {_tile(*x), _tile(*y)} & _MATADORS, tiles
        else:
            assert x[1] == y[0], tiles
    assert "roundsTotal" not in view, "a classic game runs to its target score"
    assert view["targetScore"] == rules["targetScore"] >= 1
    scores = [p.get("score", 0) for p in view["players"]]
    if rules.get("teams"):
        assert [(t.get("seats", []), t.get("score", 0)) for t in view["teams"]] == [
            ([0, 2], scores[0] + scores[2]),
            ([1, 3], scores[1] + scores[3]),
        ]
    else:
        assert "teams" not in view
    hands = [len(p.get("roundScores", [])) for p in view["players"]]
    assert len(set(hands)) == 1
    assert view["round"] in (hands[0], hands[0] + 1), "round counts hands"


def check_classic_winners(view: dict[str, Any]) -> None:
    """CL-SC-2 / CL-TEAM-1: the winner (a team: both its seats) reached the target."""
    target = view["targetScore"]
    scores = [p.get("score", 0) for p in view["players"]]
    winners = view["winners"]
    if view["ruleset"].get("teams"):
        assert winners in ([0, 2], [1, 3]), winners
        assert scores[winners[0]] + scores[winners[1]] >= target
    else:
        [winner] = winners
        assert scores[winner] >= target, (scores, target)


async def check_finished(client: Client, game_id: str, view: dict[str, Any], seed: str) -> None:
    assert view["seed"] == seed
    assert view["winners"]
    if "line" in view:
        check_line_view(view)
        check_classic_winners(view)
    log = (await client.log(game_id)).ok()
    assert log["seed"] == seed
    assert log["events"][-1]["gameEnded"]["seed"] == seed
    assert _version(log["events"][-1]) == _version(view)
    versions = [_version(e) for e in log["events"]]
    assert versions == sorted(versions)
    for event in log["events"]:
        if _kind(event) == "tileDrawn":
            assert "tile" not in event["tileDrawn"], "the public log shows a drawn tile"


def _request(players: int, bots: dict[int, int], seed: str, **rules: Any) -> pb.CreateGameRequest:
    return pb.CreateGameRequest(
        ruleset=pb.Ruleset(**rules), players=people(players, bots), seed=seed
    )


#: The games played whole through the service: Mexican Train (two rounds of
#: pagat) and every classic preset at its own options (to its target score).
WHOLE_GAMES = [
    pytest.param("pagat", {"rounds": 2}, id="pagat"),
    *(pytest.param(preset, {}, id=preset) for preset in LINE_PRESETS),
]


@pytest.mark.parametrize(("preset", "rules"), WHOLE_GAMES)
@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_full_game(redis_url: str, transport: str, preset: str, rules: dict[str, Any]) -> None:
    """A whole game through one transport, people plus a random bot."""

    async def go() -> None:
        async with instance(redis_url) as one:
            client: Client = one.grpc if transport == "grpc" else one.rest
            n, bot = (3, 1) if transport == "grpc" else (4, 0)
            n = players_for(preset, n)  # a team game seats 4
            seed = _seed(f"full-{transport}" if preset == "pagat" else f"full-{transport}-{preset}")
            request = _request(n, {bot: pb.BOT_LEVEL_RANDOM}, seed, preset=preset, **rules)
            created = (await client.create(request)).ok()
            tokens = _tokens(created)
            people_seats = [s for s in range(n) if s != bot]
            assert sorted(tokens) == people_seats, "a token for each person, none for the bot"
            assert len(set(tokens.values())) == n - 1
            view = created["game"]
            assert "seed" not in view
            assert "viewerSeat" not in view
            assert view["status"] == "GAME_STATUS_IN_PROGRESS"
            assert view["currentSeat"] != bot  # a bot to move has moved already
            assert view["ruleset"]["preset"] == preset
            view = (await client.get(created["game"]["gameId"], tokens[(bot + 1) % n])).ok()
            final, moves = await play_to_end(
                client, view["gameId"], tokens, view, random.Random(seed), {bot}
            )
            assert moves > 5
            await check_finished(client, view["gameId"], final, seed)
            for seat, token in tokens.items():
                mine = (await client.get(view["gameId"], token)).ok()
                assert mine["status"] == FINISHED
                assert mine["viewerSeat"] == seat
                assert mine["seed"] == seed
            spectator = (await client.get(view["gameId"], None)).ok()
            assert "hand" not in spectator
            assert "viewerSeat" not in spectator
            assert spectator["seed"] == seed

    run(go())


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_create_game_gives_tokens_to_the_people_only(redis_url: str, transport: str) -> None:
    """API.md CreateGameResponse: a {seat, token} for each person's seat and none
    for a bot seat (its token would show its creator that bot's hand); no seat
    token acts for a bot seat, on either transport."""

    async def go() -> None:
        async with instance(redis_url) as one:
            creator: Client = one.grpc if transport == "grpc" else one.rest
            clients: list[Client] = [one.grpc, one.rest]
            bots = {1: pb.BOT_LEVEL_RANDOM, 3: pb.BOT_LEVEL_GREEDY}
            seed = _seed(f"people-only-{transport}")
            created = (await creator.create(_request(4, bots, seed, rounds=1))).ok()
            tokens = _tokens(created)
            assert sorted(tokens) == [0, 2], f"seats with a token: {created.get('seats')}"
            assert len(set(tokens.values())) == 2
            game_id = created["game"]["gameId"]
            record = await one.store.load(game_id)
            assert record is not None
            stored = Seats.from_bytes(record.meta)
            assert [h == "" for h in stored.token_hashes] == [False, True, False, True]
            for seat, token in tokens.items():
                assert stored.seat_of(token) == seat
            assert stored.seat_of("") is None  # a digest is never "": no bot seat matches

            async def each_token_is_its_own_seat(view: dict[str, Any]) -> None:
                for client in clients:
                    for seat, token in tokens.items():
                        mine = (await client.get(game_id, token)).ok()
                        assert mine["viewerSeat"] == seat
                        assert len(mine.get("hand", [])) == mine["players"][seat].get(
                            "handCount", 0
                        )
                        legal = (await client.legal(game_id, token)).ok()
                        if _finished(view) or view["currentSeat"] != seat:
                            assert not legal.get("moves"), f"seat {seat} may move for another"
                            refused = await client.apply(game_id, token, {"draw": {}})
                            reason = "GAME_OVER" if _finished(view) else "NOT_YOUR_TURN"
                            assert refused.reason == reason, refused.data
                    refused = await client.apply(game_id, None, {"draw": {}})
                    assert refused.reason == "UNAUTHENTICATED", refused.data
                    public = (await client.get(game_id, None)).ok()
                    assert "hand" not in public
                    assert "viewerSeat" not in public
                    for token in ("not-a-token", "x" * 32):
                        for call in (
                            client.get(game_id, token),
                            client.legal(game_id, token),
                            client.apply(game_id, token, {"draw": {}}),
                        ):
                            assert (await call).reason == "BAD_SEAT_TOKEN"

            view = created["game"]
            await each_token_is_its_own_seat(view)
            final, moves = await play_to_end(
                creator, game_id, tokens, view, random.Random(seed), set(bots)
            )
            assert moves > 3
            await each_token_is_its_own_seat(final)

            # Bots only: no person, no token at all (JSON omits an empty list).
            only_bots = {0: pb.BOT_LEVEL_RANDOM, 1: pb.BOT_LEVEL_RANDOM}
            request = _request(2, only_bots, seed + "-bots", rounds=1)
            for client in clients:
                created = await client.create(request)
                assert "seats" not in created.ok()
                assert not created.message.seats  # type: ignore[attr-defined]
                record = await one.store.load(created.data["game"]["gameId"])
                assert record is not None
                assert Seats.from_bytes(record.meta).token_hashes == ("", "")

    run(go())


#: Mexican Train both ways, and each classic preset one way, the ways in turn.
CROSSINGS = [
    *(pytest.param(d, "standard", id=d) for d in ("http-then-grpc", "grpc-then-http")),
    *(
        pytest.param(d, p, id=f"{d}-{p}")
        for d, p in zip(
            itertools.cycle(("http-then-grpc", "grpc-then-http")), LINE_PRESETS, strict=False
        )
    ),
]


@pytest.mark.parametrize(("direction", "preset"), CROSSINGS)
def test_game_moves_between_instances_and_transports(
    redis_url: str, direction: str, preset: str
) -> None:
    """Created through one transport on instance A, played to the end through the
    other on instance B: nothing about a game lives in a replica."""

    async def go() -> None:
        async with instance(redis_url) as a, instance(redis_url) as b:
            if direction == "http-then-grpc":
                creator, player = a.rest, b.grpc
            else:
                creator, player = a.grpc, b.rest
            if preset == "standard":
                seed = _seed(f"cross-{direction}")
                request = _request(3, {2: pb.BOT_LEVEL_RANDOM}, seed, rounds=1)
            else:
                seed = _seed(f"cross-{direction}-{preset}")
                n = players_for(preset, 3)
                request = _request(n, {2: pb.BOT_LEVEL_RANDOM}, seed, preset=preset)
            created = (await creator.create(request)).ok()
            game_id = created["game"]["gameId"]
            tokens = _tokens(created)
            seen_by_b = (await player.get(game_id, None)).ok()
            assert seen_by_b == created["game"]
            view = (await player.get(game_id, tokens[0])).ok()
            final, _ = await play_to_end(player, game_id, tokens, view, random.Random(seed), {2})
            await check_finished(player, game_id, final, seed)
            # Both instances, both transports, one game.
            views = [
                (await client.get(game_id, None)).ok()
                for client in (a.grpc, a.rest, b.grpc, b.rest)
            ]
            assert all(v == views[0] for v in views)
            assert views[0]["seed"] == seed
            logs = [(await client.log(game_id)).ok() for client in (a.grpc, b.rest)]
            assert logs[0] == logs[1]
            assert logs[0]["seed"] == seed
            record = await a.store.load(game_id)
            assert record is not None
            assert record.version == _version(final)

    run(go())


# ------------------------------------------------------------------ hidden information

_TILE_TEXT = re.compile(r"(?<![0-9A-Za-z_.-])(\d{1,2})-(\d{1,2})(?![0-9A-Za-z_])")


def _text_tiles(text: str, out: set[TileT]) -> None:
    for m in _TILE_TEXT.finditer(text):
        a, b = int(m.group(1)), int(m.group(2))
        if a <= MAX_SET and b <= MAX_SET:
            out.add(_tile(a, b))


def _json_tiles(node: Any, out: set[TileT]) -> None:
    """Every {"a": x, "b": y} object (zero halves are omitted in proto3 JSON) and
    every "x-y" notation in a parsed JSON document."""
    if isinstance(node, dict):
        if node and set(node) <= {"a", "b"} and all(isinstance(v, int) for v in node.values()):
            out.add(_tile(node.get("a", 0), node.get("b", 0)))
        for value in node.values():
            _json_tiles(value, out)
    elif isinstance(node, list):
        for value in node:
            _json_tiles(value, out)
    elif isinstance(node, str):
        _text_tiles(node, out)


def _proto_tiles(message: Message, out: set[TileT]) -> None:
    """Every railyard.v1.Tile in a message, 0-0 (an empty message) included."""
    if message.DESCRIPTOR.full_name == "railyard.v1.Tile":
        out.add(_tile(message.a, message.b))  # type: ignore[attr-defined]
        return
    for fd, value in message.ListFields():
        if fd.message_type is None or fd.message_type.GetOptions().map_entry:
            continue
        for item in value if fd.is_repeated else [value]:
            _proto_tiles(item, out)


def payload_tiles(raw: list[tuple[str, bytes]], message: Message | None = None) -> set[TileT]:
    found: set[TileT] = set()
    for kind, blob in raw:
        if kind == "bin":
            continue
        text = blob.decode()
        _text_tiles(text, found)
        if kind == "json":
            _json_tiles(json.loads(text), found)
    if message is not None:
        _proto_tiles(message, found)
    for kind, blob in raw:  # a Tile anywhere in a gRPC message, 0-0 included
        if kind == "bin" and message is not None:
            try:
                _proto_tiles(type(message).FromString(blob), found)
            except Exception:  # trailing metadata is not that message
                continue
    return found


def blank_secrets(raw: list[tuple[str, bytes]], secrets: Iterable[str]) -> list[tuple[str, bytes]]:
    """The payloads with each secret overwritten by as many '#'.

    A seat token is 32 random base64url characters, so about one in 40,000
    starts like "7-8-" and the text scan would read a tile in it (CI saw
    one). The CreateGame answer carries the tokens by right; blanking them
    byte for byte keeps the protobuf lengths valid and the rest scanned.
    """
    out = []
    for kind, blob in raw:
        for secret in secrets:
            blob = blob.replace(secret.encode(), b"#" * len(secret.encode()))
        out.append((kind, blob))
    return out


@dataclass
class Checkpoint:
    """The authoritative state at one version, read from Redis."""

    version: int
    over: bool
    current: int | None
    hands: dict[int, frozenset[TileT]]
    boneyard: frozenset[TileT]
    hidden: dict[int | None, frozenset[TileT]] = field(default_factory=dict)


async def checkpoint(store: RedisStore, game_id: str, players: int) -> Checkpoint:
    record = await store.load(game_id)
    assert record is not None
    game = engine.load(record.state)
    assert game.version == record.version
    hands = {s: frozenset(_tile(*t) for t in game.hand(s)) for s in range(players)}
    boneyard = frozenset(_tile(*t) for t in game.boneyard_tiles())
    cp = Checkpoint(
        record.version, game.over, None if game.over else game.current_seat, hands, boneyard
    )
    for viewer in [None, *range(players)]:
        others = [h for s, h in hands.items() if s != viewer]
        cp.hidden[viewer] = boneyard.union(*others)
    return cp


@dataclass
class Leaks:
    """Collects every finding, so one run reports all of them."""

    seed: str
    secrets: list[str]
    found: list[str] = field(default_factory=list)
    checked: int = 0
    own_draws: int = 0  # tileDrawn events checked in the drawer's own payloads
    other_draws: int = 0  # ... and in everyone else's

    def scan(
        self,
        where: str,
        raw: list[tuple[str, bytes]],
        forbidden: frozenset[TileT] | set[TileT],
        seed_ok: bool,
        message: Message | None = None,
    ) -> None:
        self.checked += 1
        if not seed_ok and any(self.seed.encode() in blob for _, blob in raw):
            self.found.append(f"{where}: the seed before the game is over")
        for secret in self.secrets:
            if any(secret.encode() in blob for _, blob in raw):
                self.found.append(f"{where}: a seat token")
        leaked = payload_tiles(raw, message) & forbidden
        if leaked:
            shown = ", ".join(f"{a}-{b}" for a, b in sorted(leaked))
            self.found.append(f"{where}: hidden tiles {shown}")

    def note(self, finding: str) -> None:
        self.found.append(finding)


class Timeline:
    """Checkpoints by version: between two of them lies exactly one request."""

    def __init__(self) -> None:
        self.points: list[Checkpoint] = []

    def add(self, cp: Checkpoint) -> None:
        if self.points and self.points[-1].version == cp.version:
            return
        assert not self.points or cp.version > self.points[-1].version
        self.points.append(cp)

    def at(self, version: int) -> Checkpoint:
        for cp in self.points:
            if cp.version == version:
                return cp
        raise AssertionError(f"no checkpoint at version {version}")

    def around(self, version: int) -> tuple[Checkpoint, Checkpoint]:
        before = [cp for cp in self.points if cp.version < version]
        after = [cp for cp in self.points if cp.version >= version]
        assert after, f"version {version} is after the last checkpoint"
        # Before the game existed everything was hidden: the creation's own
        # events are held to the first checkpoint alone.
        return (before or after)[-1 if before else 0], after[0]


def _revealed(events: list[dict[str, Any]], viewer: int | None) -> set[TileT]:
    """Tiles an event shows by right: the tile played, the viewer's own draw."""
    out: set[TileT] = set()
    for event in events:
        for key in ("tilePlayed", "tileDrawn"):
            body = event.get(key)
            if body is None or "tile" not in body:
                continue
            if key == "tilePlayed" or body.get("seat", 0) == viewer:
                out.add(_tile(body["tile"].get("a", 0), body["tile"].get("b", 0)))
    return out


def check_view(
    leaks: Leaks,
    where: str,
    view: dict[str, Any],
    raw: list[tuple[str, bytes]],
    message: Message | None,
    cp: Checkpoint,
    viewer: int | None,
) -> None:
    """A view at checkpoint cp: nothing hidden from viewer, its own hand exactly."""
    assert _version(view) == cp.version, where
    leaks.scan(where, raw, cp.hidden[viewer], cp.over, message)
    hand = {_tile(t.get("a", 0), t.get("b", 0)) for t in view.get("hand", [])}
    if viewer is None:
        if "hand" in view or "viewerSeat" in view:
            leaks.note(f"{where}: a spectator's view has a hand or a viewer seat")
    elif hand != cp.hands[viewer] or view.get("viewerSeat") != viewer:
        leaks.note(f"{where}: seat {viewer}'s view has hand {sorted(hand)}")
    if cp.over and view.get("seed") != leaks.seed:
        leaks.note(f"{where}: the finished game's view lacks the seed")
    # Public by right (MT-VIS-1, CL-VIS-1): every hand count, and the boneyard
    # count, a block game's sleeping and a draw game's reserved tiles included.
    counts = [p.get("handCount", 0) for p in view.get("players", [])]
    if counts != [len(cp.hands[s]) for s in range(len(cp.hands))]:
        leaks.note(f"{where}: hand counts {counts}")
    if view.get("boneyardCount", 0) != len(cp.boneyard):
        leaks.note(f"{where}: boneyardCount {view.get('boneyardCount', 0)}, not {len(cp.boneyard)}")


def check_event(
    leaks: Leaks,
    where: str,
    event: dict[str, Any],
    raw: list[tuple[str, bytes]],
    timeline: Timeline,
    viewer: int | None,
) -> None:
    version = _version(event)
    kind = _kind(event)
    message = json_format.ParseDict(event, pb.GameEvent())
    if kind == "snapshot":
        cp = timeline.at(version)
        check_view(leaks, where, event["snapshot"], raw, message, cp, viewer)
        return
    first, last = timeline.around(version)
    forbidden = (first.hidden[viewer] & last.hidden[viewer]) - _revealed([event], viewer)
    leaks.scan(f"{where} {kind}@{version}", raw, forbidden, kind == "gameEnded", message)
    if kind in ("roundEnded", "gameEnded") and payload_tiles(raw, message):
        # The end of a round (a hand) or of the game shows no tile at all: not
        # the hands left, not the boneyard, not a block game's sleeping tiles
        # (CL-DEAL-1), whichever the later deal makes of them.
        shown = sorted(payload_tiles(raw, message))
        leaks.note(f"{where}: {kind}@{version} shows tiles {shown}")
    if kind == "tileDrawn":
        mine = event["tileDrawn"].get("seat", 0) == viewer
        if mine:
            leaks.own_draws += 1
        else:
            leaks.other_draws += 1
        if not mine and "tile" in event["tileDrawn"]:
            leaks.note(f"{where}: another seat's tileDrawn@{version} carries its tile")
        if mine and "tile" not in event["tileDrawn"]:
            leaks.note(f"{where}: the drawer's own tileDrawn@{version} lacks its tile")


def check_stream(
    leaks: Leaks,
    where: str,
    items: list[tuple[dict[str, Any], list[tuple[str, bytes]]]],
    timeline: Timeline,
    viewer: int | None,
    log: list[dict[str, Any]],
    after: int | None,
) -> None:
    """A watch stream: a snapshot, then exactly the log's later events (seat-filtered)."""
    assert items, where
    assert _kind(items[0][0]) == "snapshot", where
    for event, raw in items:
        check_event(leaks, where, event, raw, timeline, viewer)
    start = _version(items[0][0]) if after is None else after
    events = [json.loads(json.dumps(e)) for e, _ in items[1:]]
    for event in events:  # the drawer's tile aside, a seat sees the public log
        if _kind(event) == "tileDrawn" and event["tileDrawn"].get("seat", 0) == viewer:
            event["tileDrawn"].pop("tile", None)
    expected = [e for e in log if _version(e) > start]
    if events != expected:
        leaks.note(f"{where}: the stream is not the log after version {start}")
    if not events or _kind(events[-1]) != "gameEnded":
        leaks.note(f"{where}: the stream did not end with gameEnded")


def _move_key(move: dict[str, Any]) -> tuple[Any, ...]:
    """A move without announceLastTile, every default spelled out."""
    if "play" not in move:
        return (next(iter(move)),)
    play = move["play"]
    train = dict(play.get("train", {}))
    end = train.pop("end", 0)
    tile = play.get("tile", {})
    tile_key = _tile(tile.get("a", 0), tile.get("b", 0))
    return ("play", tile_key, json.dumps(train), end, play.get("exposed"))


def _illegal_moves(
    view: dict[str, Any], legal: list[dict[str, Any]], hand: frozenset[TileT]
) -> list[dict[str, Any]]:
    """Moves of the seat's own tiles (nothing hidden from it) that are not legal now:
    on every train, or at both ends of a classic game's line, there also naming
    the number left open (CL-MAT-1's ``exposed``), which only a Matador
    matador may name."""
    allowed = {_move_key(m["move"]) for m in legal}
    candidates: list[dict[str, Any]] = [{"draw": {}}, {"pass": {}}, {"endTurn": {}}]
    for a, b in sorted(hand):
        tile = {"a": a, "b": b}
        for train in view.get("trains", []):
            candidates.append({"play": {"tile": tile, "train": train["ref"]}})
        if "line" in view:
            for end in (0, 1):
                line = {"line": {}, "end": end}
                candidates.append({"play": {"tile": tile, "train": line}})
                candidates.append({"play": {"tile": tile, "train": line, "exposed": b}})
    return [m for m in candidates if _move_key(m) not in allowed]


def test_scanner_reads_tiles_but_not_a_token_that_looks_like_one() -> None:
    """The hidden-information scan itself: CI once failed on a token "7-8-...".

    Both payload forms of a CreateGame answer whose seat token starts like a
    tile: raw, the scan sees tile 7-8 (the false alarm); with the token
    blanked it does not, while a real tile elsewhere in the same answer is
    still found, in the JSON text and in the protobuf bytes.
    """
    token = "7-8-" + "A" * 28
    answer = pb.CreateGameResponse(seats=[pb.SeatToken(seat=0, token=token)])
    answer.game.hand.add(a=3, b=5)
    _, text = _json_of(answer)
    raw = [("bin", answer.SerializeToString()), ("json", text)]
    assert payload_tiles(raw) == {_tile(7, 8), _tile(3, 5)}
    blanked = blank_secrets(raw, [token])
    assert payload_tiles(blanked) == {_tile(3, 5)}
    assert payload_tiles(blanked, answer) == {_tile(3, 5)}
    assert pb.CreateGameResponse.FromString(blanked[0][1]).seats[0].token == "#" * 32
    assert token.encode() not in blanked[0][1] + blanked[1][1]


HIDDEN_GAMES = [
    # players, bots, rounds (None: a classic game, to its target score), ruleset overrides
    pytest.param(3, {}, 1, {"preset": "standard", "set_max": 9}, id="3p-d9-1round"),
    pytest.param(
        4, {2: pb.BOT_LEVEL_RANDOM}, 2, {"set_max": 9, "hand_size": 8}, id="4p-bot-d9-2rounds"
    ),
    pytest.param(3, {0: pb.BOT_LEVEL_RANDOM}, 1, {"preset": "pagat"}, id="3p-bot-d12-1round"),
    # The classic games, each to a target low enough for a few hands: a block
    # game's sleeping tiles (CL-DEAL-1) stay hidden across hands and at the end.
    pytest.param(
        2, {}, None, {"preset": "block", "target_score": 40}, id="block-2p-sleeping-hands"
    ),
    pytest.param(
        3,
        {1: pb.BOT_LEVEL_GREEDY},
        None,
        {"preset": "block", "target_score": 25},
        id="block-3p-bot",
    ),
    pytest.param(
        4,
        {3: pb.BOT_LEVEL_RANDOM},
        None,
        {"preset": "block_teams", "target_score": 40},
        id="block_teams-bot",
    ),
    pytest.param(
        2,
        {},
        None,
        {"preset": "draw", "target_score": 40, "boneyard_reserve": 2},
        id="draw-2p-reserve",
    ),
    pytest.param(
        4,
        {0: pb.BOT_LEVEL_RANDOM},
        None,
        {"preset": "draw_teams", "target_score": 60},
        id="draw_teams-bot",
    ),
    pytest.param(
        3,
        {2: pb.BOT_LEVEL_EXPERT},
        None,
        {"preset": "all_fives", "target_score": 120},
        id="all_fives-3p-expert",
    ),
    pytest.param(
        4, {}, None, {"preset": "all_fives_teams", "target_score": 120}, id="all_fives_teams"
    ),
    pytest.param(2, {}, None, {"preset": "bergen"}, id="bergen-2p-sleeping"),
    pytest.param(
        3, {0: pb.BOT_LEVEL_RANDOM}, None, {"preset": "bergen", "set_max": 9}, id="bergen-3p-d9-bot"
    ),
    pytest.param(
        2,
        {1: pb.BOT_LEVEL_RANDOM},
        None,
        {"preset": "matador", "target_score": 40},
        id="matador-2p-bot",
    ),
]


@pytest.mark.parametrize(("players", "bots", "rounds", "rules"), HIDDEN_GAMES)
def test_hidden_information(
    redis_url: str,
    players: int,
    bots: dict[int, int],
    rounds: int | None,
    rules: dict[str, Any],
) -> None:
    """No payload, as received, shows another hand, the boneyard (sleeping
    tiles included), or the seed early."""

    async def go() -> list[str]:
        seed = "SEED-" + _seed(f"hidden-{players}-{sorted(bots.items())}-{rounds}-{rules}")
        rng = random.Random(seed)
        async with instance(redis_url) as one:
            authority = RedisStore(redis_url)
            try:
                return await _hidden_game(one, authority, rng, seed, players, bots, rounds, rules)
            finally:
                await authority.close()

    found = run(go())
    assert not found, "\n".join(found[:40])


async def _hidden_game(
    one: Instance,
    authority: RedisStore,
    rng: random.Random,
    seed: str,
    players: int,
    bots: dict[int, int],
    rounds: int | None,
    rules: dict[str, Any],
) -> list[str]:
    clients: list[Client] = [one.grpc, one.rest]
    if rounds is not None:
        rules = {**rules, "rounds": rounds}
    request = _request(players, bots, seed, **rules)
    creator = rng.choice(clients)
    created = await creator.create(request)
    body = created.ok()
    game_id = body["game"]["gameId"]
    tokens = _tokens(body)
    # A token for each person and none for a bot: a bot seat's token would
    # show its creator that bot's hand. So a bot seat is never a viewer.
    people_seats = [s for s in range(players) if s not in bots]
    assert sorted(tokens) == people_seats, f"seat tokens {sorted(tokens)}, bots {sorted(bots)}"
    viewers: list[int | None] = [None, *people_seats]
    leaks = Leaks(seed, list(tokens.values()))
    timeline = Timeline()
    cp = await checkpoint(authority, game_id, players)
    timeline.add(cp)
    # The CreateGame answer holds the tokens: scan it without them.
    create_leaks = Leaks(seed, [])
    create_raw = blank_secrets(created.raw, tokens.values())
    create_leaks.scan("create", create_raw, cp.hidden[None], False, created.message)
    check_view(create_leaks, "create", body["game"], [], None, cp, None)
    leaks.found += create_leaks.found

    # One watcher per viewer and transport, from the start to gameEnded.
    watches: dict[tuple[str, int | None], asyncio.Task[Any]] = {}
    started = []
    for viewer in viewers:
        token = tokens[viewer] if viewer is not None else None
        for client in clients:
            ready = asyncio.Event()
            started.append(ready)
            watches[client.name, viewer] = asyncio.create_task(
                client.watch(game_id, token, started=ready)
            )
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in started)), 10)

    pending: tuple[Reply, Checkpoint, int, str] | None = None
    steps = 0
    while True:
        cp = await checkpoint(authority, game_id, players)
        timeline.add(cp)
        if pending is not None:
            reply, first, mover, where = pending
            answer = reply.ok()
            forbidden = (first.hidden[mover] & cp.hidden[mover]) - _revealed(
                answer["events"], mover
            )
            leaks.scan(where, reply.raw, forbidden, cp.over, reply.message)
            check_view(leaks, f"{where} game", answer["game"], [], None, cp, mover)
            view_message = reply.message.game  # type: ignore[attr-defined]
            view_tiles: set[TileT] = set()
            _proto_tiles(view_message, view_tiles)
            if view_tiles & cp.hidden[mover]:
                leaks.note(f"{where}: the view after the move shows hidden tiles")
            for event in answer["events"]:
                raw = [("json", json.dumps(event).encode())]
                check_event(leaks, where, event, raw, timeline, mover)
        if cp.over:
            break
        steps += 1
        mover = cp.current
        assert mover is not None
        assert mover not in bots
        # Every call for every viewer, through one transport a step (alternating).
        probers = [clients[steps % 2]]
        for viewer in viewers:
            token = tokens[viewer] if viewer is not None else None
            for client in probers:
                where = f"step {steps} v{cp.version} {client.name} viewer {viewer}"
                got = await client.get(game_id, token)
                check_view(leaks, f"{where} GetGame", got.ok(), got.raw, got.message, cp, viewer)
                legal = await client.legal(game_id, token)
                leaks.scan(
                    f"{where} ListLegalMoves", legal.raw, cp.hidden[viewer], False, legal.message
                )
                if viewer is None:
                    assert (legal.code, legal.reason) == ("UNAUTHENTICATED", "UNAUTHENTICATED")
                    refused = await client.apply(game_id, None, {"draw": {}})
                    assert refused.code == "UNAUTHENTICATED"
                    leaks.scan(
                        f"{where} error", refused.raw, cp.hidden[None], False, refused.message
                    )
                    continue
                moves = legal.ok().get("moves", [])
                assert _version(legal.data) == cp.version
                if viewer != mover:
                    assert not moves
                    if steps % 4 not in (1, 2):
                        continue  # NOT_YOUR_TURN bodies: every other step per transport
                    own = sorted(cp.hands[viewer])
                    attempt: dict[str, Any] = {"draw": {}}
                    if own:
                        a, b = rng.choice(own)
                        train = {"line": {}} if "line" in got.data else {"seat": viewer}
                        attempt = {"play": {"tile": {"a": a, "b": b}, "train": train}}
                    refused = await client.apply(game_id, token, attempt)
                    assert (refused.code, refused.reason) == (
                        "FAILED_PRECONDITION",
                        "NOT_YOUR_TURN",
                    ), refused.data
                    leaks.scan(
                        f"{where} error", refused.raw, cp.hidden[viewer], False, refused.message
                    )
                    continue
                assert moves
                illegal = _illegal_moves(got.data, moves, cp.hands[viewer])
                if illegal:
                    bad = rng.choice(illegal)
                    refused = await client.apply(game_id, token, bad)
                    assert refused.code == "FAILED_PRECONDITION", (bad, refused.data)
                    leaks.scan(
                        f"{where} illegal {bad}",
                        refused.raw,
                        cp.hidden[viewer],
                        False,
                        refused.message,
                    )
                stale = await client.apply(
                    game_id, token, rng.choice(moves)["move"], expected=cp.version + 1
                )
                assert (stale.code, stale.reason) == ("ABORTED", "VERSION_MISMATCH")
                assert client.name == "grpc" or stale.http_status == 409
                leaks.scan(f"{where} stale", stale.raw, cp.hidden[viewer], False, stale.message)
        if steps % 10 == 0:  # the public log so far: no seed, no drawn tile
            log_so_far = await probers[0].log(game_id)
            leaks.scan(f"step {steps} log", log_so_far.raw, frozenset(), False)
            for event in log_so_far.ok()["events"]:
                raw = [("json", json.dumps(event).encode())]
                check_event(leaks, f"step {steps} log", event, raw, timeline, None)
        again = await authority.load(game_id)
        assert again is not None
        assert again.version == cp.version, "an error changed the game"
        client = rng.choice(clients)
        legal = (await client.legal(game_id, tokens[mover])).ok()
        move = rng.choice(legal["moves"])["move"]
        reply = await client.apply(game_id, tokens[mover], move, expected=cp.version)
        pending = (reply, cp, mover, f"step {steps} {client.name} ApplyMove by {mover}")

    # Every watcher saw the game to its end.
    done = await asyncio.wait_for(asyncio.gather(*watches.values()), 20)
    log_reply = await one.grpc.log(game_id)
    log = log_reply.ok()["events"]
    assert log_reply.data["seed"] == seed
    for (name, viewer), items in zip(watches, done, strict=True):
        check_stream(leaks, f"watch {name} viewer {viewer}", items, timeline, viewer, log, None)
    for client in clients:
        got = await client.log(game_id)
        assert got.data == log_reply.data
        for event in got.ok()["events"]:
            raw = [("json", json.dumps(event).encode())]
            check_event(leaks, f"log {client.name}", event, raw, timeline, None)
    # A late watcher from the very start: the history, seat-filtered, then the end.
    for viewer in viewers:
        token = tokens[viewer] if viewer is not None else None
        for client in clients:
            items = await asyncio.wait_for(client.watch(game_id, token, after=-1), 10)
            check_stream(leaks, f"rewatch {client.name} {viewer}", items, timeline, viewer, log, -1)
    # An EventSource reconnecting with Last-Event-ID: the rest, nothing twice.
    middle = timeline.points[len(timeline.points) // 2].version
    for viewer in (None, people_seats[0]):
        token = tokens[viewer] if viewer is not None else None
        items = await asyncio.wait_for(one.rest.watch(game_id, token, last_event_id=middle), 10)
        check_stream(leaks, f"resume {viewer}", items, timeline, viewer, log, middle)
    final = timeline.points[-1]
    for viewer in viewers:
        token = tokens[viewer] if viewer is not None else None
        for client in clients:
            got = await client.get(game_id, token)
            check_view(leaks, "final", got.ok(), got.raw, got.message, final, viewer)
            assert got.data["seed"] == seed
    assert steps > 10
    assert leaks.checked > 100
    record = await authority.load(game_id)
    assert record is not None
    game = engine.load(record.state)
    reserve = getattr(game.rules, "boneyard_reserve", None) or 0  # CL-DRAW-1
    if draws(game.rules.preset) and len(timeline.points[0].boneyard) > reserve:
        assert leaks.own_draws > 0, "no drawn tile was seen by its drawer"
        assert leaks.other_draws > 0, "no drawn tile was seen by anyone else"
    else:
        assert leaks.own_draws == leaks.other_draws == 0, "a block game drew (CL-BLOCK-1)"
    if rounds is None:
        # The classic games ran across hands: tiles that slept in one hand were
        # checked in the next hand's payloads and in every one after the end.
        hands = sum(1 for e in log if _kind(e) == "roundStarted")
        assert hands >= 2, f"{hands} hand(s): the target score is too high for this check"
        assert any(_kind(e) == "roundEnded" for e in log)
    return leaks.found


# ------------------------------------------------------------------ classic refusals

#: Per classic preset, an option its game does not have (CL-SET-1): the
#: option's snake_case name (the proto field) and a value for it.
NOT_AN_OPTION: Final[dict[str, tuple[str, Any]]] = {
    "block": ("boneyard_reserve", 2),  # Block never draws
    "block_teams": ("double_blank_value", 0),
    "draw": ("rounds", 2),
    "draw_teams": ("center_lines", 4),  # Chicken Foot's
    "all_fives": ("first_player", pb.FIRST_PLAYER_SEAT0),
    "all_fives_teams": ("knock_rule", pb.KNOCK_RULE_PENALTY),
    "bergen": ("teams", True),
    "matador": ("teams", False),  # refused even at its default value
}

_FAILED = "FAILED_PRECONDITION"


def _create_refusals(preset: str) -> list[tuple[str, int, dict[str, Any], str, str, list[str]]]:
    """(what, players, ruleset fields, reason, rule, words of the message) of
    CreateGame requests for ``preset`` that RULES.md section 3 refuses."""
    rules = engine.preset(preset)
    game = rules.game
    this = pb.Game.Value(f"GAME_{game.upper()}")
    other = next(g for g in (pb.GAME_DRAW, pb.GAME_BLOCK) if g != this)
    other_name = pb.Game.Name(other).removeprefix("GAME_").lower()
    n = players_for(preset, 2)
    option, value = NOT_AN_OPTION[preset]
    cases = [
        ("not an option", n, {option: value}, "INVALID_ARGUMENT", "CL-SET-1", [option, game]),
        (
            "a preset of another game",
            n,
            {"game": other},
            "INVALID_ARGUMENT",
            "CL-SET-1",
            [preset, game, other_name],
        ),
        (
            "Mexican Train's preset",
            n,
            {"preset": "standard", "game": this},
            "INVALID_ARGUMENT",
            "CL-SET-1",
            ["standard", game],
        ),
        ("target 0", n, {"target_score": 0}, "INVALID_ARGUMENT", "CL-SET-1", ["target_score"]),
        ("hand size 0", n, {"hand_size": 0}, "INVALID_ARGUMENT", "CL-SET-1", ["hand_size"]),
        ("set above 12", n, {"set_max": 13}, "INVALID_ARGUMENT", "CL-SET-1", ["set_max"]),
        ("5 with double-six", 5, {}, "INVALID_ARGUMENT", "CL-SET-1", ["double-six", "5"]),
        (
            "the deal does not fit",
            n,
            {"hand_size": 28 // n + 1},
            "DEAL_DOES_NOT_FIT",
            "CL-DEAL-1",
            [f"{n} players", "28 tiles"],
        ),
    ]
    if "teams" in rules.options:
        teams = {} if rules.teams else {"teams": True}
        cases += [
            (f"teams of {k}", k, teams, "INVALID_ARGUMENT", "CL-TEAM-1", ["4", str(k)])
            for k in (2, 3)
        ]
    if "boneyard_reserve" in rules.options:
        cases.append(
            ("reserve 1", n, {"boneyard_reserve": 1}, "INVALID_ARGUMENT", "CL-DRAW-1", ["0 or 2"])
        )
    return cases


def _expected_rules(preset: str) -> set[tuple[str, str, str]]:
    """The (reason, rule, detail) refusals every game of ``preset`` meets in
    ``test_classic_refusals``."""
    rules = engine.preset(preset)
    join = "CL-MAT-1" if rules.game == "matador" else "CL-LINE-1"
    out = {
        ("NOT_YOUR_TURN", "CL-TURN-1", "NOT_YOUR_TURN"),
        ("ILLEGAL_MOVE", "CL-START-1", "MUST_OPEN_WITH"),
        ("ILLEGAL_MOVE", "CL-TURN-1", "MUST_PLAY"),  # a pass or a draw by a seat that can place
        ("ILLEGAL_MOVE", "CL-TURN-1", "CANNOT_END_TURN"),
        ("ILLEGAL_MOVE", "CL-TURN-1", "TILE_NOT_IN_HAND"),
        ("ILLEGAL_MOVE", "CL-LINE-1", "NO_SUCH_TRAIN"),
        ("ILLEGAL_MOVE", join, "TILE_DOES_NOT_MATCH"),
        ("ILLEGAL_MOVE", join, "EXPOSED_NUMBER"),
        ("GAME_OVER", "CL-SC-2", "GAME_OVER"),
    }
    if not draws(preset):
        out.add(("ILLEGAL_MOVE", "CL-BLOCK-1", "CANNOT_DRAW"))  # Block and Bergen pass
    elif rules.teams:
        out.add(("ILLEGAL_MOVE", "CL-DRAW-1", "CANNOT_DRAW"))  # four hands: no boneyard
    else:
        out.add(("ILLEGAL_MOVE", "CL-DRAW-1", "CANNOT_PASS"))  # draw while the boneyard lasts
    return out


@pytest.mark.parametrize("preset", LINE_PRESETS)
@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_classic_refusals(redis_url: str, transport: str, preset: str) -> None:
    """API.md Errors for a classic game, over one transport: every CreateGame
    RULES.md section 3 refuses (an option the game does not have, named with
    the game; a preset of another game; teams without four players; a deal
    that does not fit) stores nothing, and every move refused during a whole
    game (NOT_YOUR_TURN, ILLEGAL_MOVE with its CL- rule in metadata.rule,
    BAD_SEAT_TOKEN, UNAUTHENTICATED, VERSION_MISMATCH, then GAME_OVER)
    leaves the stored game exactly as it was."""

    async def go() -> None:
        async with instance(redis_url) as one:
            client: Client = one.grpc if transport == "grpc" else one.rest
            for what, n, fields, reason, rule, words in _create_refusals(preset):
                request = pb.CreateGameRequest(
                    ruleset=pb.Ruleset(**{"preset": preset, **fields}), players=people(n)
                )
                reply = await client.create(request)
                assert (reply.code, reply.reason) == ("INVALID_ARGUMENT", reason), (what, reply)
                assert client.name == "grpc" or reply.http_status == 400
                assert reply.data["details"][0]["metadata"]["rule"] == rule, (what, reply.data)
                for word in words:
                    assert word in reply.data["message"], (what, word, reply.data["message"])
            assert _games_in_redis(redis_url) == 0, "a refused CreateGame stored a game"
            await _refused_moves(one, client, preset)

    run(go())


async def _refused_moves(one: Instance, client: Client, preset: str) -> None:
    n = players_for(preset, 2)
    seed = _seed(f"refusals-{client.name}-{preset}")
    target = max(15, engine.preset(preset).target_score // 2)  # type: ignore[attr-defined]
    request = _request(n, {}, seed, preset=preset, target_score=target)  # a few hands
    created = (await client.create(request)).ok()
    game_id = created["game"]["gameId"]
    tokens = _tokens(created)
    stranger = _tokens((await client.create(request)).ok())[0]
    rng = random.Random(seed)
    seen: set[tuple[str, str, str]] = set()
    join = "CL-MAT-1" if engine.preset(preset).game == "matador" else "CL-LINE-1"

    async def refused(
        token: str | None,
        move: dict[str, Any],
        reason: str,
        rule: str | None = None,
        detail: str | None = None,
        **kw: Any,
    ) -> None:
        """``move`` is refused with ``reason`` (and the rule and the engine's
        detail, when given), and nothing in the store changes."""
        before = await one.store.load(game_id)
        reply = await client.apply(game_id, token, move, **kw)
        after = await one.store.load(game_id)
        assert before is not None
        assert after is not None
        assert reply.reason == reason, (move, reply.data)
        assert (after.version, after.state) == (before.version, before.state), (move, reason)
        info = reply.data["details"][0]
        meta = info.get("metadata", {})
        if reason in ("ILLEGAL_MOVE", "NOT_YOUR_TURN", "GAME_OVER"):
            assert reply.code == _FAILED
            assert client.name == "grpc" or reply.http_status == 400
            seen.add((reason, meta["rule"], meta["detail"]))
        assert rule is None or meta.get("rule") == rule, (move, reply.data)
        assert detail is None or meta.get("detail") == detail, (move, reply.data)

    def play(tile: TileT, end: int = 0) -> dict[str, Any]:
        return {"play": {"tile": {"a": tile[0], "b": tile[1]}, "train": {"line": {}, "end": end}}}

    view = created["game"]
    mover = view["currentSeat"]
    other = (mover + 1) % n
    hand = {
        _tile(t.get("a", 0), t.get("b", 0))
        for t in (await client.get(game_id, tokens[mover])).ok()["hand"]
    }
    [opening] = (await client.legal(game_id, tokens[mover])).ok()["moves"]
    assert opening["notation"].endswith("@l0")  # CL-START-1: the one legal first move
    # Seat tokens, in every call that takes one.
    for token in ("not-a-token", stranger):
        for call in (client.get(game_id, token), client.legal(game_id, token)):
            reply = await call
            assert (reply.code, reply.reason) == ("PERMISSION_DENIED", "BAD_SEAT_TOKEN")
        await refused(token, opening["move"], "BAD_SEAT_TOKEN")
    await refused(None, opening["move"], "UNAUTHENTICATED")
    await refused(tokens[mover], opening["move"], "VERSION_MISMATCH", expected=1)
    await refused(tokens[other], opening["move"], "NOT_YOUR_TURN", "CL-TURN-1")
    opener = opening["move"]["play"]["tile"]
    opener_tile = _tile(opener.get("a", 0), opener.get("b", 0))
    mover_token = tokens[mover]
    # CL-START-1: the highest double (or the heaviest tile) opens the first hand.
    another = play(min(hand - {opener_tile}))
    await refused(mover_token, another, "ILLEGAL_MOVE", "CL-START-1", "MUST_OPEN_WITH")
    await refused(mover_token, play(opener_tile, 1), "ILLEGAL_MOVE", "CL-LINE-1", "NO_SUCH_TRAIN")
    for move in ({"pass": {}}, {"draw": {}}):  # CL-TURN-1: whoever can place must
        await refused(mover_token, move, "ILLEGAL_MOVE", "CL-TURN-1", "MUST_PLAY")
    await refused(mover_token, {"endTurn": {}}, "ILLEGAL_MOVE", "CL-TURN-1", "CANNOT_END_TURN")
    absent = next(_tile(a, b) for a in range(7) for b in range(a, 7) if _tile(a, b) not in hand)
    await refused(mover_token, play(absent), "ILLEGAL_MOVE", "CL-TURN-1", "TILE_NOT_IN_HAND")
    seat_train = {"play": {"tile": opener, "train": {"seat": mover}}}
    await refused(mover_token, seat_train, "ILLEGAL_MOVE", "CL-LINE-1", "NO_SUCH_TRAIN")
    malformed = await client.apply(game_id, tokens[mover], play((7, 7)))  # T-1: not double-six
    assert (malformed.code, malformed.reason) == ("INVALID_ARGUMENT", "INVALID_ARGUMENT")

    # A whole game at random, refusing on the way what each position forbids.
    while not _finished(view):
        mover = view["currentSeat"]
        token = tokens[mover]
        legal = (await client.legal(game_id, token)).ok()["moves"]
        kinds = {next(iter(m["move"])) for m in legal}
        if kinds == {"pass"}:  # CL-BLOCK-1: no drawing; CL-DRAW-1: no more than the reserve
            blocked = "CL-DRAW-1" if draws(preset) else "CL-BLOCK-1"
            await refused(token, {"draw": {}}, "ILLEGAL_MOVE", blocked, "CANNOT_DRAW")
        elif kinds == {"draw"}:
            await refused(token, {"pass": {}}, "ILLEGAL_MOVE", "CL-DRAW-1", "CANNOT_PASS")
        elif rng.random() < 0.3:
            mine = (await client.get(game_id, token)).ok()["hand"]
            hand = {_tile(t.get("a", 0), t.get("b", 0)) for t in mine}
            fits = {_move_key(m["move"])[1] for m in legal}
            stuck = sorted(hand - fits)
            if stuck and view["line"].get("tiles"):  # CL-LINE-1 / CL-MAT-1: joins no end
                bad = play(rng.choice(stuck), rng.randrange(2))
                await refused(token, bad, "ILLEGAL_MOVE", join, "TILE_DOES_NOT_MATCH")
            elif stuck:  # CL-START-1: a hand after one nobody won opens as the first
                bad = play(rng.choice(stuck))
                await refused(token, bad, "ILLEGAL_MOVE", "CL-START-1", "MUST_OPEN_WITH")
            pick = rng.choice(legal)["move"]["play"]
            named = {**pick, "exposed": pick["tile"].get("a", 0)}  # a plain tile names none
            if "exposed" in pick:  # a two-way matador must name one
                named = {k: v for k, v in pick.items() if k != "exposed"}
            await refused(token, {"play": named}, "ILLEGAL_MOVE", join, "EXPOSED_NUMBER")
            await refused(token, {"pass": {}}, "ILLEGAL_MOVE", "CL-TURN-1", "MUST_PLAY")
            await refused(tokens[(mover + 1) % n], {"pass": {}}, "NOT_YOUR_TURN", "CL-TURN-1")
        answer = await client.apply(game_id, token, rng.choice(legal)["move"], _version(view))
        view = answer.ok()["game"]
    for token in tokens.values():
        await refused(token, {"draw": {}}, "GAME_OVER", "CL-SC-2")
        await refused(token, {"pass": {}}, "GAME_OVER", "CL-SC-2", expected=_version(view))
    await refused(stranger, {"draw": {}}, "BAD_SEAT_TOKEN")
    missing = _expected_rules(preset) - seen
    assert not missing, f"not refused in this game: {sorted(missing)}"
    assert {rule for _, rule, _ in seen} <= {
        "CL-TURN-1",
        "CL-START-1",
        "CL-LINE-1",
        "CL-MAT-1",
        "CL-BLOCK-1",
        "CL-DRAW-1",
        "CL-SC-2",
    }, seen


# ------------------------------------------------------------------ races


async def _two_person_game(one: Instance, seed: str) -> tuple[str, dict[int, str], int]:
    created = (await one.grpc.create(_request(2, {}, seed, rounds=1))).ok()
    game_id = created["game"]["gameId"]
    return game_id, _tokens(created), created["game"]["currentSeat"]


def _public(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = json.loads(json.dumps(events))
    for event in out:
        if _kind(event) == "tileDrawn":
            event["tileDrawn"].pop("tile", None)
    return out


async def _log_and_version(one: Instance, game_id: str) -> tuple[list[dict[str, Any]], int]:
    log = (await one.grpc.log(game_id)).ok()["events"]
    record = await one.store.load(game_id)
    assert record is not None
    return log, record.version


def test_racing_moves_one_version_one_winner(redis_url: str) -> None:
    """50 moves for one expectedVersion over two replicas: one lands, 49 are ABORTED."""

    async def go() -> None:
        async with instance(redis_url) as a, instance(redis_url) as b:
            game_id, tokens, seat = await _two_person_game(a, _seed("race"))
            log_before, version = await _log_and_version(a, game_id)
            legal = (await a.grpc.legal(game_id, tokens[seat])).ok()
            assert _version(legal) == version
            moves = [m["move"] for m in legal["moves"]]
            replicas = [a.grpc, b.grpc]

            async def attempt(i: int) -> Reply:
                client = replicas[i % 2]
                return await client.apply(game_id, tokens[seat], moves[i % len(moves)], version)

            replies = await asyncio.gather(*(attempt(i) for i in range(50)))
            winners = [r for r in replies if r.code == "OK"]
            losers = [(r.code, r.reason) for r in replies if r.code != "OK"]
            assert len(winners) == 1, losers
            assert losers == [("ABORTED", "VERSION_MISMATCH")] * 49
            won = winners[0].data
            assert _version(won["game"]) == version + 1
            log_after, now = await _log_and_version(b, game_id)
            assert now == version + 1
            assert log_after[: len(log_before)] == log_before
            added = log_after[len(log_before) :]
            assert added == _public(won["events"])
            assert all(_version(e) == version + 1 for e in added)
            primary = [e for e in added if _kind(e) in ("tilePlayed", "tileDrawn", "passed")]
            assert len(primary) <= 1  # endTurn has no event of its own

    run(go())


def test_retries_with_one_request_id_apply_once(redis_url: str) -> None:
    """20 identical ApplyMove with one requestId, racing over two replicas: one
    application, and every caller gets the same answer, byte for byte, then and later."""

    async def go() -> None:
        async with instance(redis_url) as a, instance(redis_url) as b:
            game_id, tokens, seat = await _two_person_game(a, _seed("retry"))
            log_before, version = await _log_and_version(a, game_id)
            legal = (await b.grpc.legal(game_id, tokens[seat])).ok()
            move = legal["moves"][0]["move"]
            request_id = f"retry-{uuid.uuid4()}"
            replicas = [a.grpc, b.grpc]

            async def attempt(i: int) -> Reply:
                return await replicas[i % 2].apply(
                    game_id, tokens[seat], move, request_id=request_id
                )

            replies = await asyncio.gather(*(attempt(i) for i in range(20)))
            assert [r.code for r in replies] == ["OK"] * 20, [r.data for r in replies]
            wires = {r.raw[0][1] for r in replies}
            assert len(wires) == 1, "retries got different answers"
            first = replies[0].data
            assert _version(first["game"]) == version + 1
            log_after, now = await _log_and_version(b, game_id)
            assert now == version + 1
            added = log_after[len(log_before) :]
            assert log_after[: len(log_before)] == log_before
            assert added == _public(first["events"])
            # Later, through either replica and either transport: the first answer.
            for client in (a.grpc, b.grpc):
                later = await client.apply(game_id, tokens[seat], move, request_id=request_id)
                assert later.code == "OK"
                assert later.raw[0][1] in wires
            later_http = await a.rest.apply(game_id, tokens[seat], move, request_id=request_id)
            assert later_http.ok() == first
            log_last, last = await _log_and_version(a, game_id)
            assert (log_last, last) == (log_after, now)

    run(go())


# ------------------------------------------------------------------ idempotent CreateGame


def _games_in_redis(redis_url: str) -> int:
    client = Redis.from_url(redis_url)
    try:
        return len(client.keys("ry:{*}:g"))
    finally:
        client.close()


def test_a_request_id_used_for_another_move_is_refused(redis_url: str) -> None:
    """A requestId names one request: sent again with another move or another
    expectedVersion it is INVALID_ARGUMENT (field requestId) on both
    transports and nothing changes, while the true retry still gets the first
    answer. An answer remembered before requests were fingerprinted (no
    prefix) is still given back."""

    async def go() -> None:
        async with instance(redis_url) as one:
            game_id, tokens, seat = await _two_person_game(one, _seed("reuse"))
            token = tokens[seat]
            legal = (await one.grpc.legal(game_id, token)).ok()
            moves = [m["move"] for m in legal["moves"]]
            assert len(moves) >= 2
            first = await one.rest.apply(game_id, token, moves[0], request_id="r1")
            log, version = await _log_and_version(one, game_id)
            for client in (one.grpc, one.rest):
                for move, expected in [(moves[1], None), (moves[0], version - 1)]:
                    refused = await client.apply(
                        game_id, token, move, expected=expected, request_id="r1"
                    )
                    assert (refused.code, refused.reason) == (
                        "INVALID_ARGUMENT",
                        "INVALID_ARGUMENT",
                    )
                    assert "requestId 'r1'" in refused.data["message"]
                    info = refused.data["details"][0]
                    assert info["metadata"] == {"field": "requestId"}
                again = await client.apply(game_id, token, moves[0], request_id="r1")
                assert again.ok() == first.ok()
            assert await _log_and_version(one, game_id) == (log, version)

            # An entry as an older version remembered it: the bare answer.
            raw = Redis.from_url(redis_url)
            key = one.store.request_key(game_id, f"move:{seat}:r1")
            stored = raw.get(key)
            assert stored is not None
            assert stored[:1] == b"\x00"
            raw.set(key, stored[33:], keepttl=True)
            for move in moves[:2]:  # not checked: it has no fingerprint
                legacy = await one.grpc.apply(game_id, token, move, request_id="r1")
                assert legacy.ok() == first.ok()
            assert await _log_and_version(one, game_id) == (log, version)

    run(go())


def test_create_game_with_request_id_is_idempotent(redis_url: str) -> None:
    """The same CreateGameRequest and requestId: one game, however often, from
    whichever replica, racing or not, through either transport. The first
    answer alone carries the seat tokens: every repeat is that game's first
    view, marked replayed, with no token (anyone may send the same body and
    id; issue 10)."""

    async def go() -> None:
        async with instance(redis_url) as a, instance(redis_url) as b:
            seeded = pb.CreateGameRequest(
                ruleset=pb.Ruleset(preset="house", rounds=2),
                players=people(3, {0: pb.BOT_LEVEL_RANDOM}),
                seed=f"create-{uuid.uuid4()}",
                request_id=f"create-{uuid.uuid4()}",
            )
            first = await a.grpc.create(seeded)
            second = await b.grpc.create(seeded)
            assert first.code == second.code == "OK"
            body = first.ok()
            assert sorted(_tokens(body)) == [1, 2], "the people's seats: seat 0 is a bot"
            assert "replayed" not in body
            assert second.ok() == {"game": body["game"], "replayed": True}
            over_http = await a.rest.create(seeded)
            assert over_http.ok() == second.ok()  # the same request, the other transport
            assert _games_in_redis(redis_url) == 1
            game_id = body["game"]["gameId"]
            log = (await b.grpc.log(game_id)).ok()["events"]
            assert sum(1 for e in log if _kind(e) == "roundStarted") == 1
            for seat, token in _tokens(body).items():
                assert (await b.rest.get(game_id, token)).ok()["viewerSeat"] == seat

            # No seed (a random one each time), ten at once over both replicas:
            # one of them created the game and got its tokens.
            unseeded = pb.CreateGameRequest(
                players=people(2), ruleset=pb.Ruleset(rounds=1), request_id=uuid.uuid4().hex
            )
            clients = [a.grpc, b.grpc, a.rest, b.rest]
            replies = await asyncio.gather(*(clients[i % 4].create(unseeded) for i in range(10)))
            answers = [r.ok() for r in replies]
            creators = [x for x in answers if "replayed" not in x]
            assert len(creators) == 1
            assert sorted(_tokens(creators[0])) == [0, 1]
            replays = [x for x in answers if x is not creators[0]]
            assert replays == [{"game": creators[0]["game"], "replayed": True}] * 9
            wires = {r.raw[0][1] for r in replies if r.raw[0][0] == "bin" and "replayed" in r.ok()}
            assert len(wires) <= 1  # replays are one answer, byte for byte
            assert _games_in_redis(redis_url) == 2
            other = answers[0]["game"]["gameId"]
            log = (await a.rest.log(other)).ok()["events"]
            assert sum(1 for e in log if _kind(e) == "roundStarted") == 1

    run(go())


def test_a_game_stored_in_state_format_1_plays_on_after_an_upgrade(redis_url: str) -> None:
    """A game an older service left in Redis, its state in the engine's format 1
    (bytes git 9ad9fff wrote: tests/fixtures/mexican_train_format_1.json), is
    served and played on over both transports, and saved again in format 2:
    each move's stored state is the one the engine reaches from the same bytes."""
    fixture = Path(__file__).parent / "fixtures" / "mexican_train_format_1.json"
    states = json.loads(fixture.read_text())["states"]
    state = next(e for e in states if "two open doubles" in e["shows"])["state"].encode()
    local = engine.load(state)
    tokens = [f"format-1-seat-{s}" for s in range(local.players)]
    seats = Seats(
        tuple(f"P{s}" for s in range(local.players)),
        (0,) * local.players,
        tuple(hashlib.sha256(t.encode()).hexdigest() for t in tokens),
    )
    game_id = "f0f0f0f0f0f0f0f0f001"  # 20 hex digits, as the service names games
    rng = random.Random(game_id)

    async def go() -> None:
        async with instance(redis_url) as one:
            record = GameRecord(game_id, local.version, state, seats.to_bytes())
            assert await one.store.create(record, [], None, None) is None
            clients: list[Client] = [one.grpc, one.rest]
            for i in range(12):
                client, token = clients[i % 2], tokens[local.current_seat]
                assert _version((await client.get(game_id, token)).ok()) == local.version
                offered = (await client.legal(game_id, token)).ok()["moves"]
                assert len(offered) == len(local.legal_moves())
                k = rng.randrange(len(offered))
                answer = (await client.apply(game_id, token, offered[k]["move"])).ok()
                local.apply(local.legal_moves()[k])
                assert _version(answer["game"]) == local.version
                stored = await one.store.load(game_id)
                assert stored is not None
                assert stored.version == local.version
                saved = json.loads(stored.state)
                assert saved["format"] == 2
                assert saved == local.to_dict()

    run(go())
