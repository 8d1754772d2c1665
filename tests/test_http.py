"""The HTTP/JSON transport (service/transports/http/server.py) against API.md.

Every request goes through the real ASGI app: ``httpx.ASGITransport`` for
plain calls (it buffers a whole response), and a small hand-driven ASGI
client for live Server-Sent Events, which never end on their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import random
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
import jsonschema_rs
import pytest
import uvicorn
from google.protobuf import json_format

import engine
from railyard_api import game_service_pb2 as pb
from service.app import GameApp
from service.settings import Settings
from service.store import StoreUnavailableError
from service.store.memory import MemoryStore
from service.transports.http.server import _event_stream, close_streams, create_http_app
from tests.presets import LINE_PRESETS, players_for

T = TypeVar("T")

PEOPLE_AND_BOT = [
    {"displayName": "Ana"},
    {"displayName": "Ben"},
    {"displayName": "Robo", "bot": "BOT_LEVEL_RANDOM"},
]
#: A short game: double-9, two rounds (MT-RND-1), so a whole game is ~100 moves.
SHORT = {"preset": "standard", "setMax": 9, "rounds": 2}
SEED = "railyard-http"


def run(coro: Awaitable[T]) -> T:
    return asyncio.run(coro)  # type: ignore[arg-type]


class FlakyStore(MemoryStore):
    """A memory store that can be switched off: every call then raises
    StoreUnavailableError, as a Redis store does when Redis is unreachable."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise StoreUnavailableError("store switched off by the test")

    async def create(self, *args: Any, **kwargs: Any) -> Any:
        self._check()
        return await super().create(*args, **kwargs)

    async def load(self, *args: Any, **kwargs: Any) -> Any:
        self._check()
        return await super().load(*args, **kwargs)

    async def commit(self, *args: Any, **kwargs: Any) -> Any:
        self._check()
        return await super().commit(*args, **kwargs)

    async def recall(self, *args: Any, **kwargs: Any) -> Any:
        self._check()
        return await super().recall(*args, **kwargs)

    async def read_events(self, *args: Any, **kwargs: Any) -> Any:
        self._check()
        return await super().read_events(*args, **kwargs)

    async def wait_events(self, *args: Any, **kwargs: Any) -> Any:
        self._check()
        found = await super().wait_events(*args, **kwargs)
        self._check()
        return found

    async def ping(self) -> None:
        self._check()


@asynccontextmanager
async def http_client(game_app: GameApp) -> AsyncIterator[httpx.AsyncClient]:
    api = create_http_app(game_app)
    transport = httpx.ASGITransport(app=api)
    async with httpx.AsyncClient(transport=transport, base_url="http://railyard.test") as client:
        client.api = api  # type: ignore[attr-defined]
        yield client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def version_of(message: dict[str, Any]) -> int:
    """An int64 of the canonical JSON: a string, omitted when 0."""
    value = message.get("version", "0")
    assert isinstance(value, str), f"int64 must be a JSON string: {value!r}"
    return int(value)


@dataclass
class Game:
    game_id: str
    tokens: dict[int, str]  # by seat: people's seats only (API.md CreateGameResponse)
    created: dict[str, Any]

    @property
    def url(self) -> str:
        return f"/v1/games/{self.game_id}"


async def create(
    client: httpx.AsyncClient,
    players: list[dict[str, Any]] | None = None,
    ruleset: dict[str, Any] | None = None,
    seed: str = SEED,
) -> Game:
    body = {"players": players or PEOPLE_AND_BOT, "ruleset": ruleset or SHORT, "seed": seed}
    response = await client.post("/v1/games", json=body)
    assert response.status_code == 200, response.text
    created = response.json()
    return Game(created["game"]["gameId"], tokens_by_seat(created), created)


def tokens_by_seat(created: dict[str, Any]) -> dict[int, str]:
    """The seat tokens of a CreateGameResponse by seat (seat 0 and an empty
    list are omitted in canonical JSON); each seat at most once."""
    seats = created.get("seats", [])
    tokens = {s.get("seat", 0): s["token"] for s in seats}
    assert len(tokens) == len(seats), f"a seat listed twice: {seats}"
    return tokens


async def view(client: httpx.AsyncClient, game: Game, seat: int | None = None) -> dict[str, Any]:
    headers = bearer(game.tokens[seat]) if seat is not None else {}
    response = await client.get(game.url, headers=headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def version_now(client: httpx.AsyncClient, game: Game) -> int:
    return version_of(await view(client, game))


async def play_one(
    client: httpx.AsyncClient, game: Game, rng: random.Random
) -> tuple[int, dict[str, Any]]:
    """The person to move plays a random legal move; returns (seat, response)."""
    seat = (await view(client, game)).get("currentSeat", 0)
    legal = (await client.get(f"{game.url}/legal-moves", headers=bearer(game.tokens[seat]))).json()
    move = rng.choice(legal["moves"])["move"]
    response = await client.post(
        f"{game.url}/moves", headers=bearer(game.tokens[seat]), json={"move": move}
    )
    assert response.status_code == 200, response.text
    return seat, response.json()


async def play_to_end(client: httpx.AsyncClient, game: Game, rng: random.Random) -> None:
    while (await view(client, game))["status"] != "GAME_STATUS_FINISHED":
        await play_one(client, game, rng)


def assert_status(
    response: httpx.Response, http: int, code: int, reason: str, **metadata: str
) -> dict[str, Any]:
    """The response is API.md's error: HTTP status, google.rpc.Status body with
    the gRPC code, a message, and one ErrorInfo with ``reason`` and ``metadata``."""
    assert response.status_code == http, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"code", "message", "details"}, body
    assert body["code"] == code, body
    assert isinstance(body["message"], str)
    assert body["message"]
    [info] = body["details"]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert info["domain"] == "railyard.dev"
    assert info["reason"] == reason, body
    for key, value in metadata.items():
        assert info.get("metadata", {}).get(key) == value, body
    return dict(body)


# gRPC codes (google.rpc.Code)
INVALID_ARGUMENT = 3
NOT_FOUND = 5
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
UNAUTHENTICATED = 16


# ------------------------------------------------------------ schema check of real answers


class SchemaCheck:
    """Validates real answers against the served OpenAPI components, so the
    schemas generated from the descriptors are checked on whole games, not
    only on what schemathesis happens to generate."""

    def __init__(self, document: dict[str, Any]) -> None:
        self._components = document["components"]
        self._validators: dict[str, Any] = {}

    def __call__(self, name: str, instance: Any) -> None:
        validator = self._validators.get(name)
        if validator is None:
            schema = {"$ref": f"#/components/schemas/{name}", "components": self._components}
            validator = jsonschema_rs.Draft202012Validator(schema)
            self._validators[name] = validator
        errors = [str(e) for e in validator.iter_errors(instance)]
        assert not errors, f"{name}: {errors[:3]}"


# ------------------------------------------------------------ a whole game


def strip_hidden(event: dict[str, Any]) -> dict[str, Any]:
    """The public form of an event a seat saw (MT-DR-3: drawn tiles hidden)."""
    if "tileDrawn" in event:
        event = {**event, "tileDrawn": {k: v for k, v in event["tileDrawn"].items() if k != "tile"}}
    return event


def _players(ruleset: dict[str, Any]) -> list[dict[str, Any]]:
    """Two people and a random bot last (a team game: three people)."""
    if "preset" not in ruleset or players_for(ruleset["preset"], 3) == 3:
        return PEOPLE_AND_BOT
    return [*PEOPLE_AND_BOT[:2], {"displayName": "Cy"}, PEOPLE_AND_BOT[2]]


@pytest.mark.parametrize(
    "ruleset",
    [
        pytest.param(SHORT, id="standard-short"),
        *(pytest.param({"preset": preset}, id=preset) for preset in LINE_PRESETS),
    ],
)
def test_whole_game_over_http_two_people_and_a_bot(ruleset: dict[str, Any]) -> None:
    """API.md Methods and Bots: create, view, legal moves, moves, log, to the
    end, every answer checked against the OpenAPI document: Mexican Train's
    two rounds, and each classic preset to its target score."""
    players = _players(ruleset)
    bot = len(players) - 1
    people_seats = list(range(bot))
    classic = ruleset is not SHORT

    async def scenario() -> None:
        async with http_client(GameApp(MemoryStore())) as client:
            check = SchemaCheck((await client.get("/openapi.json")).json())
            response = await client.post(
                "/v1/games", json={"players": players, "ruleset": ruleset, "seed": SEED}
            )
            assert response.status_code == 200, response.text
            created = response.json()
            check("CreateGameResponse", created)
            # People's seats only: the last seat is a bot and gets no token.
            assert [s.get("seat", 0) for s in created["seats"]] == people_seats
            assert len({s["token"] for s in created["seats"]}) == bot
            game = Game(created["game"]["gameId"], tokens_by_seat(created), created)
            public = created["game"]
            assert "hand" not in public
            assert "viewerSeat" not in public
            assert "seed" not in public
            assert public["seedSha256"] == hashlib.sha256(SEED.encode()).hexdigest()
            assert public["status"] == "GAME_STATUS_IN_PROGRESS"
            assert public["ruleset"]["setMax"] == (6 if classic else 9)
            names = [p["displayName"] for p in players]
            assert [p["displayName"] for p in public["players"]] == names
            assert public["players"][bot]["bot"] == "BOT_LEVEL_RANDOM"
            if classic:  # API.md "Classic games": the line, no trains, a target score
                assert public["ruleset"]["preset"] == ruleset["preset"]
                assert public["line"] == {} or version_of(public) > 0
                assert "trains" not in public
                assert "roundsTotal" not in public
                assert public["targetScore"] == public["ruleset"]["targetScore"]
                assert ("teams" in public) == public["ruleset"].get("teams", False)
            created_version = version_of(public)

            rng = random.Random(7)
            seen: list[dict[str, Any]] = []
            version = created_version
            rounds_seen = 0
            while True:
                spectator = await view(client, game)
                check("GameView", spectator)
                assert version_of(spectator) == version
                assert "hand" not in spectator
                if spectator["status"] == "GAME_STATUS_FINISHED":
                    break
                assert "seed" not in spectator  # MT-FAIR-1: not before the end
                seat = spectator.get("currentSeat", 0)
                assert seat in people_seats, "a bot seat is never left to move"
                own = await view(client, game, seat)
                check("GameView", own)
                assert own.get("viewerSeat", 0) == seat
                assert len(own.get("hand", [])) == own["players"][seat].get("handCount", 0)
                other = (seat + 1) % bot
                idle = (
                    await client.get(f"{game.url}/legal-moves", headers=bearer(game.tokens[other]))
                ).json()
                check("ListLegalMovesResponse", idle)
                assert idle.get("moves", []) == []
                assert version_of(idle) == version
                legal = (
                    await client.get(f"{game.url}/legal-moves", headers=bearer(game.tokens[seat]))
                ).json()
                check("ListLegalMovesResponse", legal)
                assert version_of(legal) == version
                assert legal["moves"], "the seat to move always has a move"
                choice = rng.choice(legal["moves"])
                assert choice["notation"]
                # expectedVersion as a JSON string and as a number (API.md ApplyMove).
                expected: str | int = str(version) if rng.random() < 0.5 else version
                response = await client.post(
                    f"{game.url}/moves",
                    headers=bearer(game.tokens[seat]),
                    json={"move": choice["move"], "expectedVersion": expected},
                )
                assert response.status_code == 200, response.text
                applied = response.json()
                check("ApplyMoveResponse", applied)
                new_version = version_of(applied["game"])
                assert applied["game"].get("viewerSeat", 0) == seat
                events = applied["events"]
                versions = [version_of(e) for e in events]
                assert versions == sorted(versions)
                # +1 per accepted move, bot moves included; each move has events.
                assert sorted(set(versions)) == list(range(version + 1, new_version + 1))
                for event in events:
                    drawn = event.get("tileDrawn")
                    if drawn is not None:
                        assert ("tile" in drawn) == (drawn.get("seat", 0) == seat)
                    if "gameEnded" in event:
                        assert event["gameEnded"]["seed"] == SEED
                    else:
                        assert "seed" not in json.dumps(event)
                    rounds_seen += "roundEnded" in event
                seen.extend(events)
                version = new_version

                if rng.random() < 0.1:
                    log = (await client.get(f"{game.url}/log")).json()
                    check("GetGameLogResponse", log)
                    assert "seed" not in log
                    assert all("gameEnded" not in e for e in log["events"])

            final = await view(client, game)
            if classic:
                # A hand is a round; one the target ended mid-play has no roundEnded
                # (CL-SC-2).
                hands = len(final["players"][0].get("roundScores", []))
                assert rounds_seen in (hands - 1, hands)
                assert any("pointsScored" in e for e in seen) == (
                    final["ruleset"]["game"] in ("GAME_ALL_FIVES", "GAME_BERGEN")
                )
                teams = final["ruleset"].get("teams", False)
                for event in seen:  # API.md: pointsScored names the team when teams play
                    scored = event.get("pointsScored")
                    if scored is not None:
                        assert ("team" in scored) == teams, event
                        assert not teams or scored["team"] == scored.get("seat", 0) % 2
            else:
                assert rounds_seen == 2
            assert final["seed"] == SEED
            assert hashlib.sha256(final["seed"].encode()).hexdigest() == final["seedSha256"]
            assert "currentSeat" not in final
            assert final["winners"]
            assert version_of(final) == version

            log = (await client.get(f"{game.url}/log")).json()
            check("GetGameLogResponse", log)
            assert log["seed"] == SEED
            assert log["seedSha256"] == final["seedSha256"]
            assert "gameEnded" in log["events"][-1]
            assert log["events"][-1]["gameEnded"]["seed"] == SEED
            assert version_of(log["events"][-1]) == version
            later = [e for e in log["events"] if version_of(e) > created_version]
            assert later == [strip_hidden(e) for e in seen]
            # The opening events (version 0) come first: the deal of round 1.
            assert version_of(log["events"][0]) == 0
            assert any("roundStarted" in e for e in log["events"] if version_of(e) == 0)

            rulesets = (await client.get("/v1/rulesets")).json()
            check("ListRulesetsResponse", rulesets)
            # API.md: a preset per game, each with its resolved options.
            assert [r["preset"] for r in rulesets["rulesets"]] == [
                "standard",
                "pagat",
                "university_games",
                "cover_own",
                "by_set",
                "house",
                "chicken_foot",
                "block",
                "block_teams",
                "draw",
                "draw_teams",
                "all_fives",
                "all_fives_teams",
                "bergen",
                "matador",
                "chicken_foot_game",
            ]
            games = {r["preset"]: r.get("game") for r in rulesets["rulesets"]}
            assert games["block_teams"] == "GAME_BLOCK"
            assert games["all_fives"] == "GAME_ALL_FIVES"
            assert games["house"] == "GAME_MEXICAN_TRAIN"
            assert games["chicken_foot"] == "GAME_MEXICAN_TRAIN"  # MT's preset (MT-DBL-7)
            assert games["chicken_foot_game"] == "GAME_CHICKEN_FOOT"  # CL-CF-1's own game

    run(scenario())


def test_a_game_of_bots_only_is_played_by_create() -> None:
    """API.md Bots, kept as ``bots_only = "request"``: a game with only bots
    is played to the end by CreateGame (the default plays it in the
    background: tests/test_background.py)."""

    async def scenario() -> None:
        async with http_client(GameApp(MemoryStore(), Settings(bots_only="request"))) as client:
            bots = [{"bot": "BOT_LEVEL_RANDOM"}, {"bot": "BOT_LEVEL_RANDOM"}]
            game = await create(client, players=bots)
            assert game.created["game"]["status"] == "GAME_STATUS_FINISHED"
            assert "seats" not in game.created  # no person, no token
            assert game.tokens == {}
            assert game.created["game"]["seed"] == SEED
            assert version_of(game.created["game"]) > 0

    run(scenario())


# ------------------------------------------------------------ the errors table


def test_malformed_bodies_are_400_never_422() -> None:
    """API.md Errors, first row: bad JSON, unknown fields, wrong types."""

    async def scenario() -> None:
        async with http_client(GameApp(MemoryStore())) as client:
            game = await create(client)
            before = await version_now(client, game)
            seat = (await view(client, game)).get("currentSeat", 0)
            moves = f"{game.url}/moves"
            auth = bearer(game.tokens[seat])
            bad_bodies: list[tuple[str, bytes]] = [
                ("/v1/games", b"{not json"),
                ("/v1/games", b"[1, 2]"),
                ("/v1/games", b'"players"'),
                ("/v1/games", b"\xff\xfe"),
                ("/v1/games", b'{"players": [{"displayName": "a"}], "colour": "red"}'),
                ("/v1/games", b'{"players": "Ana"}'),
                ("/v1/games", b'{"players": [{"bot": "BOT_LEVEL_GENIUS"}]}'),
                ("/v1/games", b'{"players": [{}], "seed": 5}'),
                ("/v1/games", b'{"players": [{}], "players": [{}]}'),
                ("/v1/games", b'{"players": [{}], "ruleset": {"setMax": -1}}'),
                ("/v1/games", b"[" * 100_000),
                (moves, b"{"),
                (moves, b'{"move": {"draw": {}}, "expectedVersion": "twelve"}'),
                (moves, b'{"move": {"draw": {}}, "expectedVersion": 1.5}'),
                (moves, b'{"move": {"draw": {}, "pass": {}}}'),
                (moves, b'{"move": {"jump": {}}}'),
                (moves, b'{"move": {}}'),
                (moves, b"{}"),
                (moves, b'{"move": {"play": {"tile": {"a": 5, "b": 12}}}}'),
                (moves, b'{"move": {"play": {"tile": {"a": 5, "b": 99}, "train": {"seat": 0}}}}'),
                (moves, b'{"move": {"draw": {}}, "gameId": "0123456789abcdef0123"}'),
                (moves, b'{"move": {"draw": {}}, "requestId": "' + b"x" * 65 + b'"}'),
            ]
            for path, content in bad_bodies:
                response = await client.post(path, content=content, headers=auth)
                assert_status(response, 400, INVALID_ARGUMENT, "INVALID_ARGUMENT")
            response = await client.get(f"{game.url}/events", params={"afterVersion": "x"})
            assert_status(response, 400, INVALID_ARGUMENT, "INVALID_ARGUMENT", field="afterVersion")
            response = await client.get(f"{game.url}/events", headers={"Last-Event-ID": "1e3"})
            assert_status(response, 400, INVALID_ARGUMENT, "INVALID_ARGUMENT")
            response = await client.get(f"{game.url}/events", params={"afterVersion": str(2**63)})
            assert_status(response, 400, INVALID_ARGUMENT, "INVALID_ARGUMENT")
            assert await version_now(client, game) == before

    run(scenario())


def test_unknown_routes_and_methods_are_status_bodies() -> None:
    async def scenario() -> None:
        async with http_client(GameApp(MemoryStore())) as client:
            response = await client.get("/v1/nothing-here")
            assert_status(response, 404, NOT_FOUND, "NOT_FOUND")
            response = await client.get("/v1/games/abc/legal-moves/extra")
            assert_status(response, 404, NOT_FOUND, "NOT_FOUND")
            response = await client.delete("/v1/rulesets")
            assert_status(response, 405, UNIMPLEMENTED, "METHOD_NOT_ALLOWED")
            # A GET route answers HEAD too (RFC 9110 9.3.2), headers only.
            # (Starlette lists them in no fixed order.)
            assert set(response.headers["allow"].split(", ")) == {"GET", "HEAD"}
            head = await client.head("/v1/rulesets")
            assert head.status_code == 200
            assert head.content == b""
            response = await client.put("/v1/games")
            assert_status(response, 405, UNIMPLEMENTED, "METHOD_NOT_ALLOWED")

    run(scenario())


def test_bad_rulesets_and_deals_are_invalid_argument() -> None:
    """API.md Errors: unknown preset, bad option, deal that does not fit (MT-DEAL-2,
    CL-DEAL-1), a classic game's option it does not have or out of range."""

    async def scenario() -> None:
        async with http_client(GameApp(MemoryStore())) as client:
            players = [{"displayName": "a"}, {"displayName": "b"}]
            cases: list[tuple[dict[str, Any], str, dict[str, str]]] = [
                ({"preset": "martian"}, "INVALID_ARGUMENT", {}),
                ({"mexicanTrains": 0}, "INVALID_ARGUMENT", {}),
                ({"setMax": 40}, "INVALID_ARGUMENT", {}),
                # Chicken Foot (CL-CF-1): its own options only, a deal with the
                # station set aside, a round per double at most.
                (
                    {"game": "GAME_CHICKEN_FOOT", "knockRule": "KNOCK_RULE_PENALTY"},
                    "INVALID_ARGUMENT",
                    {"rule": "CL-SET-1"},
                ),
                ({"game": "GAME_MEXICAN_TRAIN", "centerLines": 4}, "INVALID_ARGUMENT", {}),
                ({"preset": "chicken_foot_game", "centerLines": 5}, "INVALID_ARGUMENT", {}),
                (
                    {"preset": "chicken_foot_game", "handSize": 28},
                    "DEAL_DOES_NOT_FIT",
                    {"rule": "MT-DEAL-2"},
                ),
                (
                    {"game": "GAME_CHICKEN_FOOT", "rounds": 11},
                    "INVALID_ARGUMENT",
                    {"rule": "MT-RND-1"},
                ),
                ({"game": "GAME_BLOCK", "rounds": 2}, "INVALID_ARGUMENT", {"rule": "CL-SET-1"}),
                (
                    {"preset": "block", "game": "GAME_DRAW"},
                    "INVALID_ARGUMENT",
                    {"rule": "CL-SET-1"},
                ),
                ({"setMax": 6, "handSize": 15}, "DEAL_DOES_NOT_FIT", {"rule": "MT-DEAL-2"}),
                # The classic games (RULES.md section 3), in their JSON spelling.
                ({"preset": "block_teams"}, "INVALID_ARGUMENT", {"rule": "CL-TEAM-1"}),
                ({"preset": "draw", "handSize": 15}, "DEAL_DOES_NOT_FIT", {"rule": "CL-DEAL-1"}),
                ({"game": "GAME_BERGEN", "teams": True}, "INVALID_ARGUMENT", {"rule": "CL-SET-1"}),
                ({"preset": "matador", "targetScore": 0}, "INVALID_ARGUMENT", {"rule": "CL-SET-1"}),
                (
                    {"preset": "draw", "boneyardReserve": 1},
                    "INVALID_ARGUMENT",
                    {"rule": "CL-DRAW-1"},
                ),
                (
                    {"game": "GAME_ALL_FIVES", "centerLines": 6},
                    "INVALID_ARGUMENT",
                    {"rule": "CL-SET-1"},
                ),
                (
                    {"preset": "block", "opening": "OPENING_UNSPECIFIED"},
                    "INVALID_ARGUMENT",
                    {"field": "ruleset.opening"},
                ),
            ]
            for ruleset, reason, metadata in cases:
                response = await client.post(
                    "/v1/games", json={"players": players, "ruleset": ruleset}
                )
                assert_status(response, 400, INVALID_ARGUMENT, reason, **metadata)
            response = await client.post("/v1/games", json={"players": []})
            assert_status(response, 400, INVALID_ARGUMENT, "INVALID_ARGUMENT")
            response = await client.post(
                "/v1/games",
                json={"players": PEOPLE_AND_BOT, "ruleset": {"setMax": 6}},
            )
            assert_status(response, 400, INVALID_ARGUMENT, "DEAL_DOES_NOT_FIT", rule="MT-DEAL-2")

    run(scenario())


def test_a_classic_game_seats_as_many_as_its_deal_fits() -> None:
    """CL-SET-1: with a set larger than double-six a classic game seats as many
    players as the deal fits (CL-DEAL-1), beyond Mexican Train's 14 (MT-SET-2);
    past the most any game seats, CreateGame refuses before any work per player."""

    async def scenario() -> None:
        # (Played by CreateGame, so that the answer shows the whole game.)
        async with http_client(GameApp(MemoryStore(), Settings(bots_only="request"))) as client:

            def body(count: int, **ruleset: Any) -> dict[str, Any]:
                players = [
                    {"displayName": f"p{i}", "bot": "BOT_LEVEL_RANDOM"} for i in range(count)
                ]
                return {"players": players, "ruleset": ruleset, "seed": "crowd"}

            # 15 x 6 = 90 of double-twelve's 91 tiles: one sleeps.
            response = await client.post(
                "/v1/games", json=body(15, preset="block", setMax=12, handSize=6)
            )
            assert response.status_code == 200, response.text
            game = response.json()["game"]
            assert len(game["players"]) == 15
            assert game["status"] == "GAME_STATUS_FINISHED"  # bots only: played by CreateGame
            response = await client.post(
                "/v1/games", json=body(16, preset="block", setMax=12, handSize=6)
            )
            assert_status(response, 400, INVALID_ARGUMENT, "DEAL_DOES_NOT_FIT", rule="CL-DEAL-1")
            response = await client.post("/v1/games", json=body(15, preset="standard"))
            assert_status(response, 400, INVALID_ARGUMENT, "INVALID_ARGUMENT", rule="MT-SET-2")
            most = engine.MAX_PLAYERS  # a classic game on double-12, one tile each
            response = await client.post(
                "/v1/games", json=body(most + 1, preset="block", setMax=12, handSize=1)
            )
            assert_status(response, 400, INVALID_ARGUMENT, "INVALID_ARGUMENT", field="players")

    run(scenario())


def test_tokens_unauthenticated_and_bad_seat_token() -> None:
    """API.md Errors: no token on a seat-only call -> 401; another game's token -> 403."""

    async def scenario() -> None:
        async with http_client(GameApp(MemoryStore())) as client:
            game = await create(client)
            other = await create(client, seed="another")
            before = await version_now(client, game)
            draw: dict[str, Any] = {"move": {"draw": {}}}
            response = await client.get(f"{game.url}/legal-moves")
            assert_status(response, 401, UNAUTHENTICATED, "UNAUTHENTICATED")
            response = await client.post(f"{game.url}/moves", json=draw)
            assert_status(response, 401, UNAUTHENTICATED, "UNAUTHENTICATED")
            for header in ("Basic YWxhZGRpbjpvcGVuc2VzYW1l", "Bearer", "Bearer    ", "token"):
                for method, path in (("GET", game.url), ("GET", f"{game.url}/legal-moves")):
                    response = await client.request(method, path, headers={"Authorization": header})
                    assert_status(response, 401, UNAUTHENTICATED, "UNAUTHENTICATED")
            foreign = bearer(other.tokens[0])
            for method, path, body in (
                ("GET", game.url, None),
                ("GET", f"{game.url}/legal-moves", None),
                ("POST", f"{game.url}/moves", draw),
                ("GET", f"{game.url}/events", None),
            ):
                response = await client.request(method, path, headers=foreign, json=body)
                assert_status(
                    response, 403, PERMISSION_DENIED, "BAD_SEAT_TOKEN", gameId=game.game_id
                )
            # The scheme is case-insensitive (RFC 9110).
            response = await client.get(
                f"{game.url}/legal-moves", headers={"Authorization": f"bearer {game.tokens[0]}"}
            )
            assert response.status_code == 200
            assert await version_now(client, game) == before

    run(scenario())


def test_unknown_game_is_404_everywhere() -> None:
    async def scenario() -> None:
        async with http_client(GameApp(MemoryStore())) as client:
            game = await create(client)
            auth = bearer(game.tokens[0])
            for game_id in ("0123456789abcdef0123", "nope", "ZZZ" * 10):
                url = f"/v1/games/{game_id}"
                for method, path, body in (
                    ("GET", url, None),
                    ("GET", f"{url}/legal-moves", None),
                    ("POST", f"{url}/moves", {"move": {"draw": {}}}),
                    ("GET", f"{url}/events", None),
                    ("GET", f"{url}/log", None),
                ):
                    response = await client.request(method, path, headers=auth, json=body)
                    assert_status(response, 404, NOT_FOUND, "GAME_NOT_FOUND", gameId=game_id)

    run(scenario())


def test_move_refusals_not_your_turn_illegal_stale_game_over() -> None:
    """API.md Errors: NOT_YOUR_TURN, ILLEGAL_MOVE (with the rule), VERSION_MISMATCH,
    GAME_OVER; nothing changes in the game on any of them."""

    async def scenario() -> None:
        async with http_client(GameApp(MemoryStore())) as client:
            game = await create(client)
            state = await view(client, game)
            before = version_of(state)
            seat = state.get("currentSeat", 0)
            waiting = 1 - seat
            own = await view(client, game, seat)
            hand = {(t.get("a", 0), t.get("b", 0)) for t in own["hand"]}
            moves = f"{game.url}/moves"

            response = await client.post(
                moves, headers=bearer(game.tokens[waiting]), json={"move": {"draw": {}}}
            )
            assert_status(response, 400, FAILED_PRECONDITION, "NOT_YOUR_TURN")

            missing = next((a, b) for a in range(10) for b in range(a, 10) if (a, b) not in hand)
            play = {"play": {"tile": {"a": missing[0], "b": missing[1]}, "train": {"seat": seat}}}
            response = await client.post(
                moves, headers=bearer(game.tokens[seat]), json={"move": play}
            )
            body = assert_status(response, 400, FAILED_PRECONDITION, "ILLEGAL_MOVE")
            assert body["details"][0]["metadata"]["rule"].startswith("MT-")

            response = await client.post(
                moves,
                headers=bearer(game.tokens[seat]),
                json={"move": {"pass": {}}},
            )
            body = assert_status(response, 400, FAILED_PRECONDITION, "ILLEGAL_MOVE")
            assert "rule" in body["details"][0]["metadata"]

            legal = await client.get(f"{game.url}/legal-moves", headers=bearer(game.tokens[seat]))
            move = legal.json()["moves"][0]["move"]
            for stale in (before + 1, str(before - 1), "99"):
                response = await client.post(
                    moves,
                    headers=bearer(game.tokens[seat]),
                    json={"move": move, "expectedVersion": stale},
                )
                assert_status(
                    response,
                    409,
                    ABORTED,
                    "VERSION_MISMATCH",
                    expectedVersion=str(stale),
                    currentVersion=str(before),
                )
            assert await version_now(client, game) == before
            assert (await view(client, game, seat))["hand"] == own["hand"]

            await play_to_end(client, game, random.Random(3))
            final = await version_now(client, game)
            assert sorted(game.tokens) == [0, 1]
            for token in game.tokens.values():
                response = await client.post(
                    moves, headers=bearer(token), json={"move": {"draw": {}}}
                )
                assert_status(response, 400, FAILED_PRECONDITION, "GAME_OVER")
            response = await client.post(
                moves,
                headers=bearer(game.tokens[0]),
                json={"move": {"draw": {}}, "expectedVersion": final},
            )
            assert_status(response, 400, FAILED_PRECONDITION, "GAME_OVER")
            assert await version_now(client, game) == final

    run(scenario())


def test_rate_limit_is_429_with_retry_after() -> None:
    """API.md Errors: RESOURCE_EXHAUSTED / 429 with Retry-After."""

    async def scenario() -> None:
        game_app = GameApp(MemoryStore(), Settings(rate_limit=1, rate_burst=2))
        async with http_client(game_app) as client:
            game = await create(client)  # the peer's first request
            before = version_of(game.created["game"])
            response = await client.get(game.url)  # second: the burst is spent
            assert response.status_code == 200
            for method, path, body in (
                ("GET", game.url, None),
                ("POST", "/v1/games", {"players": PEOPLE_AND_BOT}),
                ("GET", f"{game.url}/log", None),
            ):
                response = await client.request(method, path, json=body)
                refused = assert_status(response, 429, RESOURCE_EXHAUSTED, "RATE_LIMITED")
                retry_after = response.headers["retry-after"]
                assert retry_after.isdigit()
                assert int(retry_after) >= 1
                assert refused["details"][0]["metadata"]["retryAfterSeconds"] == retry_after
            # A seat token is its own caller: its bucket is fresh.
            seat = game.created["game"].get("currentSeat", 0)
            response = await client.get(game.url, headers=bearer(game.tokens[seat]))
            assert response.status_code == 200
            assert version_of(response.json()) == before

    run(scenario())


def test_store_unavailable_is_503_and_changes_nothing() -> None:
    """API.md Errors: UNAVAILABLE / 503 STORE_UNAVAILABLE; /readyz follows the store."""

    async def scenario() -> None:
        store = FlakyStore()
        async with http_client(GameApp(store)) as client:
            game = await create(client)
            before = await version_now(client, game)
            seat = (await view(client, game)).get("currentSeat", 0)
            auth = bearer(game.tokens[seat])
            assert (await client.get("/readyz")).status_code == 200
            store.down = True
            for method, path, body in (
                ("POST", "/v1/games", {"players": PEOPLE_AND_BOT}),
                ("GET", game.url, None),
                ("GET", f"{game.url}/legal-moves", None),
                ("POST", f"{game.url}/moves", {"move": {"draw": {}}}),
                ("GET", f"{game.url}/events", None),
                ("GET", f"{game.url}/log", None),
                ("GET", "/readyz", None),
            ):
                response = await client.request(method, path, headers=auth, json=body)
                assert_status(response, 503, UNAVAILABLE, "STORE_UNAVAILABLE")
            health = await client.get("/healthz")  # the process is still up
            assert health.status_code == 200
            assert health.json() == {"status": "ok"}
            rulesets = await client.get("/v1/rulesets")  # needs no store
            assert rulesets.status_code == 200
            store.down = False
            assert (await client.get("/readyz")).status_code == 200
            assert await version_now(client, game) == before

    run(scenario())


def test_request_id_replay_returns_the_first_answer_and_applies_once() -> None:
    """API.md Concurrency and retries: requestId."""

    async def scenario() -> None:
        async with http_client(GameApp(MemoryStore())) as client:
            create_body = {"players": PEOPLE_AND_BOT, "ruleset": SHORT, "requestId": "new-1"}
            first = await client.post("/v1/games", json=create_body)
            again = await client.post("/v1/games", json=create_body)
            assert first.status_code == again.status_code == 200
            created = first.json()
            # The same game; the tokens only in the first answer (issue 10).
            assert again.json() == {"game": created["game"], "replayed": True}
            game = Game(created["game"]["gameId"], tokens_by_seat(created), created)

            state = await view(client, game)
            before = version_of(state)
            seat = state.get("currentSeat", 0)
            auth = bearer(game.tokens[seat])
            legal = (await client.get(f"{game.url}/legal-moves", headers=auth)).json()
            body = {"move": legal["moves"][0]["move"], "requestId": "move-1"}
            first = await client.post(f"{game.url}/moves", headers=auth, json=body)
            assert first.status_code == 200, first.text
            after = await version_now(client, game)
            assert after > before
            log_after = (await client.get(f"{game.url}/log")).json()
            for _ in range(2):
                again = await client.post(f"{game.url}/moves", headers=auth, json=body)
                assert again.status_code == 200
                assert again.content == first.content
            assert await version_now(client, game) == after
            assert (await client.get(f"{game.url}/log")).json() == log_after

    run(scenario())


# ------------------------------------------------------------ Server-Sent Events


@dataclass
class Frame:
    """One SSE event (or a comment)."""

    id: str | None = None
    event: str | None = None
    data: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)

    @property
    def json(self) -> dict[str, Any]:
        return dict(json.loads("\n".join(self.data)))


def parse_frame(block: str) -> Frame:
    frame = Frame()
    for line in block.split("\n"):
        if line.startswith(":"):
            frame.comments.append(line[1:].strip())
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "id":
            frame.id = value
        elif name == "event":
            frame.event = value
        elif name == "data":
            frame.data.append(value)
    return frame


def parse_sse(text: str) -> list[Frame]:
    assert text.endswith("\n\n") or not text
    return [parse_frame(block) for block in text.split("\n\n") if block]


def assert_event_frames(frames: list[Frame]) -> list[dict[str, Any]]:
    """Every frame is one data line of JSON whose version is the SSE id."""
    events = []
    for frame in frames:
        if not frame.data:
            assert frame.comments == ["keep-alive"]
            continue
        assert frame.event is None
        assert len(frame.data) == 1
        event = frame.json
        assert frame.id == str(version_of(event))
        events.append(event)
    return events


async def finished_game(client: httpx.AsyncClient) -> tuple[Game, int, list[dict[str, Any]]]:
    game = await create(client)
    await play_to_end(client, game, random.Random(11))
    final = await version_now(client, game)
    log = (await client.get(f"{game.url}/log")).json()["events"]
    return game, final, log


def test_sse_after_version_replays_exactly() -> None:
    """API.md WatchGame: snapshot, then every event with version > N, in order, no gaps,
    no duplicates; ids equal versions; the stream ends after gameEnded."""

    async def scenario() -> None:
        async with http_client(GameApp(MemoryStore())) as client:
            game, final, log = await finished_game(client)
            for after in (-1, 0, 1, 5, final // 2, final - 1):
                response = await client.get(
                    f"{game.url}/events", params={"afterVersion": str(after)}
                )
                assert response.status_code == 200, response.text
                assert response.headers["content-type"].startswith("text/event-stream")
                assert response.headers["cache-control"] == "no-cache"
                snapshot, *events = assert_event_frames(parse_sse(response.text))
                assert version_of(snapshot) == final
                assert snapshot["snapshot"]["status"] == "GAME_STATUS_FINISHED"
                assert "hand" not in snapshot["snapshot"]
                assert events == [e for e in log if version_of(e) > after]
                versions = [version_of(e) for e in events]
                assert versions == sorted(versions)
                assert sorted(set(versions)) == list(range(max(after, -1) + 1, final + 1))
                assert "gameEnded" in events[-1]
            # No afterVersion on a finished game: the snapshot alone.
            response = await client.get(f"{game.url}/events")
            [only] = assert_event_frames(parse_sse(response.text))
            assert "snapshot" in only
            # afterVersion at the end: the snapshot alone too.
            response = await client.get(f"{game.url}/events", params={"afterVersion": final})
            assert len(parse_sse(response.text)) == 1

    run(scenario())


def test_sse_last_event_id_resumes_and_wins_over_after_version() -> None:
    async def scenario() -> None:
        async with http_client(GameApp(MemoryStore())) as client:
            game, final, log = await finished_game(client)
            url = f"{game.url}/events"
            for last in (3, final - 2):
                by_query = await client.get(url, params={"afterVersion": last})
                by_header = await client.get(url, headers={"Last-Event-ID": str(last)})
                both = await client.get(
                    url, params={"afterVersion": 0}, headers={"Last-Event-ID": str(last)}
                )
                assert by_query.text == by_header.text == both.text
                events = assert_event_frames(parse_sse(by_header.text))[1:]
                assert events == [e for e in log if version_of(e) > last]
            # Resuming from the last id received continues a cut stream exactly.
            full = assert_event_frames(
                parse_sse((await client.get(url, params={"afterVersion": 0})).text)
            )[1:]
            cut = next(i for i, e in enumerate(full) if version_of(e) == 10) + 1
            while cut < len(full) and version_of(full[cut]) == 10:
                cut += 1
            resumed = await client.get(url, headers={"Last-Event-ID": "10"})
            assert full[:cut] + assert_event_frames(parse_sse(resumed.text))[1:] == full

    run(scenario())


def test_sse_errors_before_the_stream_are_plain_http_errors() -> None:
    async def scenario() -> None:
        async with http_client(GameApp(MemoryStore())) as client:
            game = await create(client)
            other = await create(client, seed="other")
            response = await client.get("/v1/games/0123456789abcdef0123/events")
            assert_status(response, 404, NOT_FOUND, "GAME_NOT_FOUND")
            response = await client.get(f"{game.url}/events", headers=bearer(other.tokens[0]))
            assert_status(response, 403, PERMISSION_DENIED, "BAD_SEAT_TOKEN")
            response = await client.get(f"{game.url}/events", headers={"Authorization": "Nope"})
            assert_status(response, 401, UNAUTHENTICATED, "UNAUTHENTICATED")

    run(scenario())


class LiveStream:
    """A GET driven by hand through the ASGI app, read frame by frame while it
    is still open (httpx.ASGITransport waits for a response to finish)."""

    def __init__(self, api: Any, path: str, headers: dict[str, str] | None = None) -> None:
        url = httpx.URL(path)
        self._scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": url.path,
            "raw_path": url.raw_path.split(b"?")[0],
            "query_string": url.query,
            "root_path": "",
            "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
            "client": ("127.0.0.1", 40000),
            "server": ("railyard.test", 80),
        }
        self._api = api
        self._messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._disconnect = asyncio.Event()
        self._requested = False
        self._buffer = ""
        self.ended = False
        self.status = 0
        self.headers: dict[str, str] = {}

    async def _receive(self) -> dict[str, Any]:
        if not self._requested:
            self._requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await self._disconnect.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: dict[str, Any]) -> None:
        await self._messages.put(message)

    async def __aenter__(self) -> LiveStream:
        self._task = asyncio.create_task(self._api(self._scope, self._receive, self._send))
        start = await asyncio.wait_for(self._messages.get(), 5)
        assert start["type"] == "http.response.start"
        self.status = start["status"]
        self.headers = {k.decode(): v.decode() for k, v in start["headers"]}
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._disconnect.set()
        await asyncio.wait_for(self._task, 5)

    @property
    def task_done(self) -> bool:
        return self._task.done()

    async def chunk(self, timeout: float = 5) -> str | None:
        """The next body message as sent (after whole frames were read), or
        None once the response has ended."""
        assert not self._buffer
        if self.ended:
            return None
        message = await asyncio.wait_for(self._messages.get(), timeout)
        assert message["type"] == "http.response.body"
        self.ended = not message.get("more_body", False)
        body = message.get("body", b"").decode()
        return body if body or not self.ended else None

    async def frame(self, timeout: float = 5) -> Frame | None:
        """The next frame, or None once the response has ended."""
        while "\n\n" not in self._buffer:
            if self.ended:
                assert not self._buffer
                return None
            message = await asyncio.wait_for(self._messages.get(), timeout)
            assert message["type"] == "http.response.body"
            self._buffer += message.get("body", b"").decode()
            self.ended = not message.get("more_body", False)
        block, _, self._buffer = self._buffer.partition("\n\n")
        return parse_frame(block)


def test_sse_live_events_keepalive_and_end() -> None:
    """Live WatchGame over HTTP: events arrive as moves are made, in order and
    seat-filtered (MT-DR-3), keep-alive comments fill quiet periods, and the
    stream ends after gameEnded."""

    async def scenario() -> None:
        game_app = GameApp(MemoryStore(), Settings(keepalive=0.05))
        async with http_client(game_app) as client:
            game = await create(client)
            watcher = 0
            start = await version_now(client, game)
            path = f"{game.url}/events"
            async with LiveStream(client.api, path, bearer(game.tokens[watcher])) as stream:  # type: ignore[attr-defined]
                assert stream.status == 200
                assert stream.headers["content-type"].startswith("text/event-stream")
                first = await stream.frame()
                assert first is not None
                snapshot = first.json
                assert first.id == str(start)
                assert snapshot["snapshot"].get("viewerSeat", 0) == watcher
                assert "hand" in snapshot["snapshot"]
                quiet = await stream.frame()
                assert quiet is not None
                assert quiet.comments == ["keep-alive"]
                assert not quiet.data

                rng = random.Random(5)
                received: list[dict[str, Any]] = []
                expected: list[dict[str, Any]] = []
                while (await view(client, game))["status"] != "GAME_STATUS_FINISHED":
                    _, applied = await play_one(client, game, rng)
                    expected.extend(applied["events"])
                    while len(received) < len(expected):
                        frame = await stream.frame()
                        assert frame is not None, "the stream ended early"
                        if frame.data:
                            assert frame.id == str(version_of(frame.json))
                            received.append(frame.json)
                # Nothing after gameEnded: the response is complete.
                assert "gameEnded" in received[-1]
                assert await stream.frame() is None
                assert stream.ended
            assert [strip_hidden(e) for e in received] == [strip_hidden(e) for e in expected]
            for event in received:
                drawn = event.get("tileDrawn")
                if drawn is not None:
                    assert ("tile" in drawn) == (drawn.get("seat", 0) == watcher)
            versions = [version_of(e) for e in received]
            assert versions == sorted(versions)
            assert sorted(set(versions)) == list(range(start + 1, versions[-1] + 1))

    run(scenario())


def test_sse_store_failure_mid_stream_ends_with_an_error_event() -> None:
    async def scenario() -> None:
        store = FlakyStore()
        async with http_client(GameApp(store, Settings(keepalive=0.05))) as client:
            game = await create(client)
            async with LiveStream(client.api, f"{game.url}/events") as stream:  # type: ignore[attr-defined]
                first = await stream.frame()
                assert first is not None
                assert "snapshot" in first.json
                store.down = True
                frame = await stream.frame()
                while frame is not None and frame.comments:
                    frame = await stream.frame()
                assert frame is not None
                assert frame.event == "error"
                error = frame.json
                assert error["code"] == UNAVAILABLE
                assert error["details"][0]["reason"] == "STORE_UNAVAILABLE"
                assert await stream.frame() is None

    run(scenario())


def test_sse_client_disconnect_stops_the_watch(caplog: pytest.LogCaptureFixture) -> None:
    """A client that goes away releases its watch: the response task ends, also
    while the app is waiting for the store, and nothing is logged as failed."""

    async def scenario() -> None:
        async with http_client(GameApp(MemoryStore(), Settings(keepalive=10))) as client:
            game = await create(client)
            stream = LiveStream(client.api, f"{game.url}/events")  # type: ignore[attr-defined]
            async with stream:
                assert await stream.frame() is not None
                await asyncio.sleep(0.05)  # the app is now waiting for events
            assert stream.task_done
            # The game goes on undisturbed.
            await play_one(client, game, random.Random(1))

    with caplog.at_level("WARNING", logger="railyard"):
        run(scenario())
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "WARNING")]


def test_close_streams_ends_open_watches_at_once() -> None:
    """Graceful shutdown: close_streams ends every SSE stream now (an SSE
    response never ends by itself, and uvicorn waits for open responses)."""

    async def scenario() -> None:
        async with http_client(GameApp(MemoryStore(), Settings(keepalive=10))) as client:
            game = await create(client)
            path = f"{game.url}/events"
            async with LiveStream(client.api, path) as one, LiveStream(client.api, path) as two:  # type: ignore[attr-defined]
                for stream in (one, two):
                    assert await stream.frame() is not None
                await asyncio.sleep(0.05)  # both wait on the store (keepalive 10 s)
                close_streams(client.api)  # type: ignore[attr-defined]
                for stream in (one, two):
                    last = await stream.frame(timeout=2)
                    assert last is not None
                    assert last.comments
                    assert "shutting down" in last.comments[0]
                    assert await stream.frame(timeout=2) is None
            # A watch opened after that gets its snapshot, then the stream ends.
            async with LiveStream(client.api, path) as late:  # type: ignore[attr-defined]
                first = await late.frame(timeout=2)
                assert first is not None
                assert "snapshot" in first.json
                assert (await late.frame(timeout=2)) is not None
                assert await late.frame(timeout=2) is None
            # Plain calls are unaffected.
            assert (await client.get(game.url)).status_code == 200

    run(scenario())


def test_shutdown_ends_sse_streams_between_versions_and_resume_is_exact() -> None:
    """One move (plus the bot's) makes several events per version, and a client
    resumes by version (the SSE id). So each version's events go out as one
    chunk, a graceful shutdown ends the stream only between versions, and a
    reconnect with Last-Event-ID on another replica gets exactly the rest."""

    async def scenario() -> None:
        store = MemoryStore()
        async with http_client(GameApp(store, Settings(keepalive=10))) as client:
            game = await create(client)
            path = f"{game.url}/events"
            async with LiveStream(client.api, path) as stream:  # type: ignore[attr-defined]
                first = await stream.frame()
                assert first is not None
                assert "snapshot" in first.json
                _, applied = await play_one(client, game, random.Random(3))
                events = applied["events"]
                versions = [version_of(e) for e in events]
                assert len(set(versions)) > 1  # the bot moved too
                assert len(versions) > len(set(versions))  # a version with several events
                sent = await stream.chunk()  # at least the first version has gone out
                close_streams(client.api)  # type: ignore[attr-defined]
                chunks = [sent]
                while (chunk := await stream.chunk()) is not None:
                    chunks.append(chunk)
        assert chunks[-1] is not None
        assert "shutting down" in chunks[-1]
        seen: list[dict[str, Any]] = []
        for chunk in chunks[:-1]:
            assert chunk is not None
            got = assert_event_frames(parse_sse(chunk))
            (version,) = {version_of(e) for e in got}  # one version per chunk...
            assert got == [e for e in events if version_of(e) == version]  # ...all of it
            seen += got
        assert seen == events[: len(seen)]
        # A client whose connection broke after the first version resumes
        # from its id: exactly the later events, none twice.
        cut = version_of(seen[0])
        rest = [e for e in events if version_of(e) > cut]
        assert rest

        # Another replica over the same store (this one is shutting down).
        async with http_client(GameApp(store, Settings(keepalive=10))) as other:
            resumed = LiveStream(other.api, path, {"Last-Event-ID": str(cut)})  # type: ignore[attr-defined]
            async with resumed:
                first = await resumed.frame()
                assert first is not None
                assert "snapshot" in first.json
                got = []
                while len(got) < len(rest):
                    frame = await resumed.frame(timeout=2)
                    assert frame is not None
                    got += assert_event_frames([frame])
        assert got == rest

    run(scenario())


def test_event_stream_ends_between_versions() -> None:
    """The SSE writer itself: a shutdown that comes while a version is being
    sent lets that version finish (one chunk) and sends no later one."""

    def event(version: int, **kind: Any) -> pb.GameEvent:
        return json_format.ParseDict({"version": str(version), **kind}, pb.GameEvent())

    async def scenario() -> None:
        closing = asyncio.Event()

        async def versions() -> AsyncIterator[tuple[pb.GameEvent, ...] | None]:
            yield (event(5, tilePlayed={"seat": 1}), event(5, turnStarted={"seat": 2}))
            yield (event(6, passed={"seat": 2}),)

        stream = _event_stream((event(4, snapshot={}),), versions(), closing)
        assert parse_sse(await anext(stream))[0].id == "4"
        five = parse_sse(await anext(stream))
        closing.set()  # while version 5 is on its way to the client
        after = [chunk async for chunk in stream]
        assert [(f.id, list(f.json)) for f in five] == [
            ("5", ["version", "tilePlayed"]),
            ("5", ["version", "turnStarted"]),
        ]
        assert len(after) == 1
        assert "shutting down" in after[0]

    run(scenario())


class _QuietUvicorn(uvicorn.Server):
    """uvicorn without its signal handlers (the test stops it)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def test_sse_over_uvicorn_live_then_graceful_shutdown() -> None:
    """Over a real socket: a live event reaches an open stream, and after
    close_streams a graceful uvicorn shutdown completes at once despite it."""

    async def scenario() -> None:
        api = create_http_app(GameApp(MemoryStore(), Settings(keepalive=15)))
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        server = _QuietUvicorn(uvicorn.Config(api, log_level="warning", lifespan="off"))
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            await asyncio.sleep(0.01)
        base = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(base_url=base, timeout=10) as client:
            game = await create(client)
            async with client.stream("GET", f"{game.url}/events") as response:
                assert response.headers["content-type"].startswith("text/event-stream")
                blocks = response.aiter_text()
                buffer = ""
                while "\n\n" not in buffer:
                    buffer += await anext(blocks)
                assert "snapshot" in parse_sse(buffer)[0].json
                _, applied = await play_one(client, game, random.Random(2))
                want = len(applied["events"])
                while len(assert_event_frames(parse_sse(buffer))) < 1 + want:
                    buffer += await anext(blocks)
                begun = time.monotonic()
                close_streams(api)
                server.should_exit = True
                rest = "".join([text async for text in blocks])
                assert "shutting down" in rest
            await asyncio.wait_for(serving, 5)
            assert time.monotonic() - begun < 2
            live = assert_event_frames(parse_sse(buffer))[1:]
            assert [strip_hidden(e) for e in live] == [strip_hidden(e) for e in applied["events"]]

    run(scenario())


# ------------------------------------------------------------ health and OpenAPI


def test_health_and_readiness() -> None:
    async def scenario() -> None:
        store = FlakyStore()
        async with http_client(GameApp(store)) as client:
            assert (await client.get("/healthz")).json() == {"status": "ok"}
            ready = await client.get("/readyz")
            assert ready.status_code == 200
            assert ready.json() == {"status": "ok"}
            store.down = True
            assert (await client.get("/healthz")).status_code == 200
            response = await client.get("/readyz")
            assert_status(response, 503, UNAVAILABLE, "STORE_UNAVAILABLE")

    run(scenario())


def test_openapi_document_is_generated_from_the_proto() -> None:
    async def scenario() -> dict[str, Any]:
        async with http_client(GameApp(MemoryStore())) as client:
            docs = await client.get("/docs")
            assert docs.status_code == 200
            assert "text/html" in docs.headers["content-type"]
            return dict((await client.get("/openapi.json")).json())

    document = run(scenario())
    schemas = document["components"]["schemas"]
    # Every $ref resolves.
    refs = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                refs.add(node["$ref"].removeprefix("#/components/schemas/"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(document)
    assert refs <= set(schemas)
    # Canonical mapping: lowerCamelCase, enums by name, int64 as string, uint32 >= 0.
    view = schemas["GameView"]["properties"]
    assert "seedSha256" in view
    assert "seed_sha256" not in view
    assert "string" in view["version"]["type"]
    # A response-only message: canonical forms only (no null, no string for a uint32).
    assert view["round"] == {"type": "integer", "minimum": 0, "maximum": 2**32 - 1}
    # What a request reaches also takes the parser's other input forms
    # (service.transports.http.openapi).
    assert schemas["Tile"]["properties"]["a"] == {
        "anyOf": [
            {"type": "integer", "minimum": 0, "maximum": 18},
            {"type": "string", "pattern": "^0*(?:[0-9]|1[0-8])$"},
            {"type": "null"},
        ]
    }
    assert schemas["GameStatus"]["enum"] == [
        "GAME_STATUS_UNSPECIFIED",
        "GAME_STATUS_IN_PROGRESS",
        "GAME_STATUS_FINISHED",
        "GAME_STATUS_WAITING",
    ]
    assert view["status"] == {"$ref": "#/components/schemas/GameStatus"}
    assert view["players"]["items"] == {"$ref": "#/components/schemas/PlayerView"}
    assert schemas["Move"]["properties"]["play"] == {
        "anyOf": [{"$ref": "#/components/schemas/Move.Play"}, {"type": "null"}]
    }
    assert len(schemas["Move"]["oneOf"]) == 4  # exactly one action
    assert schemas["ApplyMoveBody"]["required"] == ["move"]
    assert schemas["Ruleset"]["additionalProperties"] is False
    assert "gameId" not in schemas["ApplyMoveBody"]["properties"]
    assert set(schemas["ApplyMoveBody"]["properties"]) == {"move", "expectedVersion", "requestId"}
    paths = document["paths"]
    apply = paths["/v1/games/{gameId}/moves"]["post"]
    assert apply["requestBody"]["required"] is True
    assert set(apply["responses"]) == {"200", "400", "401", "403", "404", "409", "429", "503"}
    assert apply["responses"]["409"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Status"
    }
    assert "Retry-After" in apply["responses"]["429"]["headers"]
    assert apply["security"] == [{"seatToken": []}]
    watch = paths["/v1/games/{gameId}/events"]["get"]
    assert {p["name"] for p in watch["parameters"]} == {"gameId", "afterVersion", "Last-Event-ID"}
    assert "text/event-stream" in watch["responses"]["200"]["content"]
    assert "TOO_MANY_WATCHERS" in watch["responses"]["429"]["description"]
    assert "Retry-After" in watch["responses"]["429"]["headers"]
    assert "TOO_MANY_WATCHERS" not in apply["responses"]["429"]["description"]
    assert "422" not in json.dumps(paths)
    assert {op["operationId"] for ops in paths.values() for op in ops.values()} >= {
        "CreateGame",
        "GetGame",
        "ListLegalMoves",
        "ApplyMove",
        "WatchGame",
        "GetGameLog",
        "ListRulesets",
    }


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/games", {"players": [{}]}),
        ("/v1/games/0123456789abcdef0123/moves", {"move": {"draw": {}}}),
    ],
)
def test_an_unexpected_failure_is_a_generic_500(
    path: str, body: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug is logged and answered 500 INTERNAL with no traceback in the body."""

    async def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret detail")

    async def scenario() -> None:
        game_app = GameApp(MemoryStore())
        monkeypatch.setattr(game_app, "create_game", boom)
        monkeypatch.setattr(game_app, "apply_move", boom)
        api = create_http_app(game_app)
        transport = httpx.ASGITransport(app=api, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            response = await client.post(path, json=body)
            status = assert_status(response, 500, INTERNAL, "INTERNAL")
            assert "secret" not in response.text
            assert "Traceback" not in response.text
            assert status["message"] == "internal error"

    run(scenario())


# ------------------------------------------------------------------ CORS

PAGE = "https://play.example.com"


def test_cors_lets_a_configured_origin_play_from_a_browser() -> None:
    """RAILYARD_CORS_ORIGINS: a page of an allowed origin gets its preflight
    answered and CORS headers on every answer (every route, errors, the SSE
    stream); another origin gets none."""
    settings = Settings(cors_origins=f"{PAGE}, http://localhost:5173/", keepalive=0.05)

    async def scenario() -> None:
        async with http_client(GameApp(MemoryStore(), settings)) as client:
            game = await create(client)
            origin = {"origin": PAGE}
            preflight = await client.options(
                f"{game.url}/moves",
                headers={
                    **origin,
                    "access-control-request-method": "POST",
                    "access-control-request-headers": "authorization, content-type",
                },
            )
            assert preflight.status_code == 200
            assert preflight.headers["access-control-allow-origin"] == PAGE
            assert "POST" in preflight.headers["access-control-allow-methods"]
            allowed = preflight.headers["access-control-allow-headers"].lower()
            assert {"authorization", "content-type", "last-event-id"} <= {
                h.strip() for h in allowed.split(",")
            }
            seat = (await view(client, game)).get("currentSeat", 0)
            answers = [
                await client.get(game.url, headers=origin),  # GetGame
                await client.post(  # ApplyMove, an error
                    f"{game.url}/moves", json={"move": {"pass": {}}}, headers=origin
                ),
                await client.get(
                    f"{game.url}/legal-moves", headers={**origin, **bearer(game.tokens[seat])}
                ),
                await client.get("/v1/games/nosuchgame/log", headers=origin),  # 404
                await client.get("/v1/rulesets", headers=origin),
            ]
            for answer in answers:
                assert answer.headers["access-control-allow-origin"] == PAGE, answer.request.url
                assert "origin" in answer.headers["vary"].lower()
                assert answer.headers["access-control-expose-headers"].lower() == "retry-after"
            assert [a.status_code for a in answers] == [200, 401, 200, 404, 200]
            dev = await client.get(game.url, headers={"origin": "http://localhost:5173"})
            assert dev.headers["access-control-allow-origin"] == "http://localhost:5173"
            async with LiveStream(client.api, f"{game.url}/events", origin) as stream:  # type: ignore[attr-defined]
                assert stream.headers["access-control-allow-origin"] == PAGE
                assert stream.headers["content-type"].startswith("text/event-stream")
                first = await stream.frame()
                assert first is not None
                assert "snapshot" in first.json

            other = {"origin": "https://evil.example"}
            refused = await client.options(
                f"{game.url}/moves", headers={**other, "access-control-request-method": "POST"}
            )
            assert refused.status_code == 400
            assert "access-control-allow-origin" not in refused.headers
            plain = await client.get(game.url, headers=other)
            assert plain.status_code == 200  # CORS is the browser's rule, tokens guard seats
            assert "access-control-allow-origin" not in plain.headers

    run(scenario())


def test_cors_any_origin_and_none_by_default() -> None:
    async def scenario() -> None:
        app = GameApp(MemoryStore(), Settings(cors_origins="*"))
        async with http_client(app) as client:
            game = await create(client)
            got = await client.get(game.url, headers={"origin": PAGE})
            assert got.headers["access-control-allow-origin"] == "*"
        async with http_client(GameApp(MemoryStore())) as client:
            game = await create(client)
            got = await client.get(game.url, headers={"origin": PAGE})
            assert got.status_code == 200
            assert not [h for h in got.headers if h.startswith("access-control-")]
            preflight = await client.options(
                f"{game.url}/moves",
                headers={"origin": PAGE, "access-control-request-method": "POST"},
            )
            assert preflight.status_code == 405
            assert "access-control-allow-origin" not in preflight.headers
            assert preflight.json()["details"][0]["reason"] == "METHOD_NOT_ALLOWED"

    run(scenario())


@pytest.mark.parametrize("bad", ["play.example.com", "https://play.example.com/app", "ftp://x"])
def test_cors_origins_must_be_origins(bad: str) -> None:
    with pytest.raises(ValueError, match="is not an origin"):
        Settings(cors_origins=f"{PAGE},{bad}")


# ------------------------------------------------------------------ body size


#: The default body limit: the apps below run with default settings.
MAX_BODY = Settings().max_body_bytes


def test_bodies_over_a_mebibyte_are_refused_unread() -> None:
    """A request body over max_body_bytes (1 MiB by default, as gRPC's limit) is
    INVALID_ARGUMENT naming the body, declared or streamed, on ApplyMove and
    CreateGame, and changes nothing; one just under it is parsed."""

    async def scenario() -> None:
        async with http_client(GameApp(MemoryStore())) as client:
            game = await create(client)
            before = await version_now(client, game)
            seat = (await view(client, game)).get("currentSeat", 0)
            padding = " " * MAX_BODY
            big = '{"move": {"draw": {}}}' + padding

            async def chunks() -> AsyncIterator[bytes]:  # no Content-Length
                for _ in range(4):
                    yield padding[: MAX_BODY // 2].encode()

            answers = [
                await client.post(
                    f"{game.url}/moves", content=big, headers=bearer(game.tokens[seat])
                ),
                await client.post(
                    f"{game.url}/moves", content=chunks(), headers=bearer(game.tokens[seat])
                ),
                await client.post("/v1/games", content='{"players": [{}, {}]}' + padding),
                await client.post("/v1/games", content=chunks()),
            ]
            for answer in answers:
                assert answer.status_code == 400, answer.text
                body = answer.json()
                assert body["details"][0]["reason"] == "INVALID_ARGUMENT"
                assert body["details"][0]["metadata"] == {"field": "body"}
                assert f"larger than {MAX_BODY} bytes" in body["message"]
            assert await version_now(client, game) == before
            # Just under the limit: read and judged on its content.
            fits = '{"move": {"draw": {}}}' + " " * (MAX_BODY - 100)
            judged = await client.post(
                f"{game.url}/moves", content=fits, headers=bearer(game.tokens[seat])
            )
            assert judged.status_code in (200, 400)
            assert "larger than" not in judged.text

    run(scenario())
