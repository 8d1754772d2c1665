"""Schemathesis against the HTTP transport's own OpenAPI document.

Requests generated from the schemas (service/transports/http/openapi.py, from the proto
descriptors, with service/transports/http/field_limits.py) go through the real ASGI app.

- Every operation, schemathesis's default modes (positive and negative): no
  answer is a 5xx, every status is one the operation documents, and every
  body matches its schema. Each case is sent twice: as generated (a random
  gameId: 404s, malformed tokens: 401s), and aimed at a real game with a
  real seat token, so bodies reach the engine.
- CreateGame and ApplyMove, negative mode only: a body the schema refuses is
  refused by the service too (negative_data_rejection), and refused for its
  shape (INVALID_ARGUMENT), not for the game (ILLEGAL_MOVE, VERSION_MISMATCH)
  nor for fields that do not fit together (DEAL_DOES_NOT_FIT).
- A table of exact cases: the schema and the service agree on each.

WatchGame is left out: on a game in progress its stream never ends (it is
covered by tests/test_http.py).
"""

from __future__ import annotations

import asyncio
import json
from functools import cache
from typing import Any

import httpx
import jsonschema_rs
import pytest
import schemathesis
from google.protobuf import descriptor_pool
from hypothesis import HealthCheck, settings
from schemathesis import checks
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation import GenerationMode

import engine
from engine.games.chicken_foot.rules import CENTER_LINES
from engine.games.line.rules import MIN_TARGET_SCORE, RESERVES
from engine.games.mexican_train.rules import (
    MAX_KNOCK_PENALTY,
    MAX_MEXICAN_TRAINS,
    MAX_PLAYERS,
    MIN_PLAYERS,
    PRESETS,
)
from engine.tiles import MAX_SET, MIN_SET
from railyard_api import game_service_pb2 as pb
from service.app import MAX_NAME, MAX_REQUEST_ID, MAX_SEED, GameApp
from service.store.memory import MemoryStore
from service.transports.http.field_limits import FIELD_LIMITS
from service.transports.http.server import APPLY_MOVE_BODY, create_http_app

api = create_http_app(GameApp(MemoryStore()))
schema = schemathesis.openapi.from_asgi("/openapi.json", api).exclude(operation_id="WatchGame")

#: Negative cases of the two bodies; the seat token is set by the test, so
#: the security header is not generated.
negative = schemathesis.openapi.from_asgi("/openapi.json", api).include(
    operation_id=["CreateGame", "ApplyMove"]
)
negative.config.generation.update(modes=[GenerationMode.NEGATIVE], with_security_parameters=False)

CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
]

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

TWO: Any = [{"displayName": "a"}, {"displayName": "b"}]


async def _post(path: str, body: Any, token: str | None = None) -> httpx.Response:
    transport = httpx.ASGITransport(app=api)
    headers = {"content-type": "application/json"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        return await client.post(path, content=json.dumps(body), headers=headers)


def new_game(set_max: int) -> tuple[str, str]:
    """A game in progress (one round) and the token of the seat to move."""
    ruleset = {"setMax": set_max, "rounds": 1}
    response = asyncio.run(
        _post("/v1/games", {"players": TWO, "ruleset": ruleset, "seed": "schemathesis"})
    )
    assert response.status_code == 200, response.text
    created = response.json()
    seat = created["game"].get("currentSeat", 0)
    return created["game"]["gameId"], created["seats"][seat]["token"]


@cache
def real_game() -> tuple[str, str]:
    """One game for the generated cases: of the largest set, so that every
    tile the schema admits reaches the engine's rules."""
    return new_game(MAX_SET)


def reason(response: httpx.Response | Any) -> str | None:
    """The ErrorInfo reason of a Status body (None for a success)."""
    if response.status_code == 200:
        return None
    details = response.json().get("details", [])
    return str(details[0]["reason"]) if details else None


@schema.parametrize()
@SETTINGS
def test_api_conforms_to_its_openapi_document(case: schemathesis.Case[Any]) -> None:
    case.call_and_validate(checks=CHECKS)
    if "gameId" in (case.path_parameters or {}):
        game_id, token = real_game()
        case.path_parameters["gameId"] = game_id
        case.call_and_validate(checks=CHECKS, headers={"Authorization": f"Bearer {token}"})


@negative.parametrize()
@SETTINGS
def test_a_body_the_schema_refuses_is_refused_for_its_shape(case: schemathesis.Case[Any]) -> None:
    headers: dict[str, str] = {}
    if "gameId" in (case.path_parameters or {}):
        game_id, token = real_game()
        case.path_parameters["gameId"] = game_id
        headers["Authorization"] = f"Bearer {token}"
    response = case.call_and_validate(
        checks=[*CHECKS, checks.negative_data_rejection], headers=headers
    )
    if case.meta is not None and case.meta.is_negative_at(ParameterLocation.BODY):
        # The service checks every field on its own before anything that
        # spans fields or needs the game, so a bad field is what it names.
        assert response.status_code == 400, response.text
        assert reason(response) == "INVALID_ARGUMENT", response.text


# ------------------------------------------------------------------ exact cases


@cache
def body_validator(name: str) -> Any:
    components = api.openapi()["components"]
    document = {"$ref": f"#/components/schemas/{name}", "components": components}
    return jsonschema_rs.Draft202012Validator(document)


def test_every_limit_names_a_field_or_oneof_of_the_api() -> None:
    pool = descriptor_pool.Default()
    for name, limits in FIELD_LIMITS.items():
        try:
            pool.FindFieldByName(name)
        except KeyError:
            pool.FindOneofByName(name)  # raises for a name that is neither
            assert limits == type(limits)(required=limits.required), name


def _players(count: int) -> list[dict[str, str]]:
    return [{"displayName": f"p{i}"} for i in range(count)]


FOUR: Any = _players(4)


def _classic(**ruleset: Any) -> Any:
    """A CreateGame body of a classic game: two players, four for teams."""
    teams = ruleset.get("teams") is True or str(ruleset.get("preset", "")).endswith("_teams")
    return {"players": FOUR if teams else TWO, "ruleset": ruleset}


#: (what, CreateGame body, admitted by both the schema and the service).
#: Accepted bodies are ones whose fields fit together (a deal that fits...):
#: Mexican Train's 15 players (MT-SET-2), say, is the service's refusal alone.
CREATE_GAME_CASES: list[tuple[str, Any, bool]] = [
    ("two players", {"players": TWO}, True),
    ("players missing", {}, False),
    ("players null", {"players": None}, False),
    ("players empty", {"players": []}, False),
    ("players with a null", {"players": [None, {}]}, False),
    ("fewest players - 1", {"players": _players(MIN_PLAYERS - 1)}, False),
    ("most players", {"players": _players(MAX_PLAYERS), "ruleset": {"preset": "by_set"}}, True),
    (  # CL-SET-1: a classic game seats as many as its deal fits
        "most players of any game",
        {
            "players": _players(engine.MAX_PLAYERS),
            "ruleset": {"preset": "block", "setMax": 12, "handSize": 1},
        },
        True,
    ),
    ("most players of any game + 1", {"players": _players(engine.MAX_PLAYERS + 1)}, False),
    ("ruleset null", {"players": TWO, "ruleset": None}, True),
    ("seed null", {"players": TWO, "seed": None}, True),
    ("requestId null", {"players": TWO, "requestId": None}, True),
    ("player fields null", {"players": [{"displayName": None, "bot": None}, {}]}, True),
    ("longest seed", {"players": TWO, "seed": "s" * MAX_SEED}, True),
    ("seed too long", {"players": TWO, "seed": "s" * (MAX_SEED + 1)}, False),
    ("longest name", {"players": [{"displayName": "n" * MAX_NAME}, {}]}, True),
    ("name too long", {"players": [{"displayName": "n" * (MAX_NAME + 1)}, {}]}, False),
    ("requestId too long", {"players": TWO, "requestId": "r" * (MAX_REQUEST_ID + 1)}, False),
    ("bot by name", {"players": [{}, {"bot": "BOT_LEVEL_RANDOM"}]}, True),
    ("bot by number", {"players": [{}, {"bot": 1}]}, True),
    ("bot unknown number", {"players": [{}, {"bot": 9}]}, False),
    ("bot true", {"players": [{}, {"bot": True}]}, False),
    ("unknown field", {"players": TWO, "colour": "red"}, False),
    # json_format would take any iterable for a message
    # (service.transports.http.jsonwire.check_input).
    ("ruleset an empty list", {"players": TWO, "ruleset": []}, False),
    ("player an empty string", {"players": [{}, ""]}, False),
    ("body not an object", [TWO], False),
    *((f"preset {name}", {"players": TWO, "ruleset": {"preset": name}}, True) for name in PRESETS),
    ("preset empty", {"players": TWO, "ruleset": {"preset": ""}}, False),
    ("preset unknown", {"players": TWO, "ruleset": {"preset": "nope"}}, False),
    ("preset null", {"players": TWO, "ruleset": {"preset": None}}, True),
    ("game by name", {"players": TWO, "ruleset": {"game": "GAME_MEXICAN_TRAIN"}}, True),
    ("game by number", {"players": TWO, "ruleset": {"game": pb.GAME_MEXICAN_TRAIN}}, True),
    ("Chicken Foot", {"players": TWO, "ruleset": {"game": "GAME_CHICKEN_FOOT"}}, True),
    ("game unknown number", {"players": TWO, "ruleset": {"game": 99}}, False),
    ("a classic game", {"players": TWO, "ruleset": {"game": "GAME_BLOCK"}}, True),
    ("game unspecified", {"players": TWO, "ruleset": {"game": 0}}, False),
    ("option null", {"players": TWO, "ruleset": {"setMax": None, "handSizeTable": None}}, True),
    ("setMax below", {"players": TWO, "ruleset": {"setMax": MIN_SET - 1}}, False),
    ("setMax lowest", {"players": TWO, "ruleset": {"setMax": MIN_SET, "handSize": 5}}, True),
    ("setMax highest", {"players": TWO, "ruleset": {"setMax": MAX_SET}}, True),
    ("setMax above", {"players": TWO, "ruleset": {"setMax": MAX_SET + 1}}, False),
    ("setMax a string", {"players": TWO, "ruleset": {"setMax": "9"}}, True),
    ("setMax leading zero", {"players": TWO, "ruleset": {"setMax": "09"}}, True),
    ("setMax a string below", {"players": TWO, "ruleset": {"setMax": str(MIN_SET - 1)}}, False),
    ("setMax whole float", {"players": TWO, "ruleset": {"setMax": 9.0}}, True),
    ("setMax fraction", {"players": TWO, "ruleset": {"setMax": 9.5}}, False),
    ("setMax true", {"players": TWO, "ruleset": {"setMax": True}}, False),
    ("setMax not a number", {"players": TWO, "ruleset": {"setMax": "nine"}}, False),
    ("handSize 0", {"players": TWO, "ruleset": {"handSize": 0}}, False),
    ("rounds 0", {"players": TWO, "ruleset": {"rounds": 0}}, False),
    ("firstEngine above", {"players": TWO, "ruleset": {"firstEngine": MAX_SET + 1}}, False),
    ("mexicanTrains 0", {"players": TWO, "ruleset": {"mexicanTrains": 0}}, False),
    (
        "mexicanTrains most",
        {"players": TWO, "ruleset": {"mexicanTrains": MAX_MEXICAN_TRAINS}},
        True,
    ),
    (
        "mexicanTrains above",
        {"players": TWO, "ruleset": {"mexicanTrains": MAX_MEXICAN_TRAINS + 1}},
        False,
    ),
    ("maxDoublesPerTurn 1", {"players": TWO, "ruleset": {"maxDoublesPerTurn": 1}}, True),
    ("maxDoublesPerTurn 2", {"players": TWO, "ruleset": {"maxDoublesPerTurn": 2}}, False),
    ("knockPenalty most", {"players": TWO, "ruleset": {"knockPenalty": MAX_KNOCK_PENALTY}}, True),
    (
        "knockPenalty above",
        {"players": TWO, "ruleset": {"knockPenalty": MAX_KNOCK_PENALTY + 1}},
        False,
    ),
    ("doubleBlankValue 25", {"players": TWO, "ruleset": {"doubleBlankValue": 25}}, True),
    ("doubleBlankValue '050'", {"players": TWO, "ruleset": {"doubleBlankValue": "050"}}, True),
    ("doubleBlankValue 26", {"players": TWO, "ruleset": {"doubleBlankValue": 26}}, False),
    (
        "enum option by number",
        {"players": TWO, "ruleset": {"handSizeTable": pb.HAND_SIZE_TABLE_DOUBLE6}},
        True,
    ),
    (
        "enum option unspecified",
        {"players": TWO, "ruleset": {"handSizeTable": "HAND_SIZE_TABLE_UNSPECIFIED"}},
        False,
    ),
    ("enum option 0", {"players": TWO, "ruleset": {"firstTurn": 0}}, False),
    ("bool option a string", {"players": TWO, "ruleset": {"endOnDouble": "yes"}}, False),
    # The classic games' options (RULES.md section 3).
    *(
        (f"preset {name}", _classic(preset=name), True)
        for name, rules in engine.PRESETS.items()
        if rules.game != "mexican_train"
    ),
    *(
        (f"boneyardReserve {n}", _classic(game="GAME_DRAW", boneyardReserve=n), True)
        for n in RESERVES
    ),
    ("boneyardReserve '2'", _classic(game="GAME_MATADOR", boneyardReserve="2"), True),
    ("boneyardReserve 1", _classic(game="GAME_DRAW", boneyardReserve=1), False),
    ("boneyardReserve 3", _classic(game="GAME_ALL_FIVES", boneyardReserve=3), False),
    ("boneyardReserve -2", _classic(game="GAME_DRAW", boneyardReserve=-2), False),
    ("targetScore lowest", _classic(game="GAME_BLOCK", targetScore=MIN_TARGET_SCORE), True),
    ("targetScore 0", _classic(game="GAME_BERGEN", targetScore=MIN_TARGET_SCORE - 1), False),
    ("targetScore a string", _classic(game="GAME_BLOCK", targetScore="150"), True),
    ("targetScore '0'", _classic(game="GAME_BLOCK", targetScore="0"), False),
    ("targetScore large", _classic(game="GAME_ALL_FIVES", targetScore=2**32 - 1), True),
    ("targetScore above uint32", _classic(game="GAME_ALL_FIVES", targetScore=2**32), False),
    ("teams true", _classic(preset="draw", teams=True), True),
    ("teams false", _classic(preset="block_teams", teams=False), True),
    ("teams a string", _classic(preset="block", teams="yes"), False),
    ("teams a number", _classic(preset="block", teams=1), False),
    ("opening by name", _classic(game="GAME_BLOCK", opening="OPENING_SEAT0_ANY"), True),
    ("opening unspecified", _classic(game="GAME_BLOCK", opening="OPENING_UNSPECIFIED"), False),
    # Chicken Foot's (CL-CF-1).
    *(
        (f"centerLines {n}", _classic(game="GAME_CHICKEN_FOOT", centerLines=n), True)
        for n in CENTER_LINES
    ),
    ("centerLines '4'", _classic(preset="chicken_foot_game", centerLines="4"), True),
    ("centerLines 5", _classic(game="GAME_CHICKEN_FOOT", centerLines=5), False),
    ("centerLines 0", _classic(game="GAME_CHICKEN_FOOT", centerLines=0), False),
    (
        "Chicken Foot's options",
        _classic(
            game="GAME_CHICKEN_FOOT",
            setMax=12,
            handSize=8,
            rounds=3,
            firstPlayer="FIRST_PLAYER_SEAT0",
            doubleBlankValue=0,
        ),
        True,
    ),
    (
        "blockedScoring by number",
        _classic(game="GAME_MATADOR", blockedScoring=pb.BLOCKED_SCORING_OPPONENTS_TOTAL),
        True,
    ),
    ("blockedScoring 0", _classic(game="GAME_MATADOR", blockedScoring=0), False),
]


@pytest.mark.parametrize(
    ("body", "admitted"),
    [pytest.param(body, admitted, id=what) for what, body, admitted in CREATE_GAME_CASES],
)
def test_create_game_schema_and_service_agree(body: Any, admitted: bool) -> None:
    assert body_validator("CreateGameRequest").is_valid(body) is admitted
    response = asyncio.run(_post("/v1/games", body))
    assert (response.status_code == 200) is admitted, response.text
    if not admitted:
        assert reason(response) == "INVALID_ARGUMENT", response.text


_PLAY: Any = {"tile": {"a": 1, "b": 2}, "train": {"seat": 0}}

#: (what, ApplyMove body, admitted). The service admits a body's shape when
#: it answers anything but INVALID_ARGUMENT: the move may still be illegal
#: now (FAILED_PRECONDITION) or the version stale (ABORTED).
APPLY_MOVE_CASES: list[tuple[str, Any, bool]] = [
    ("draw", {"move": {"draw": {}}}, True),
    ("move empty", {"move": {}}, False),
    ("only action null", {"move": {"draw": None}}, False),
    ("move null", {"move": None}, False),
    ("move missing", {}, False),
    ("two actions", {"move": {"draw": {}, "pass": {}}}, False),
    ("action an empty list", {"move": {"draw": []}}, False),
    ("line an empty string", {"move": {"play": {**_PLAY, "train": {"line": ""}}}}, False),
    ("an action and a null one", {"move": {"draw": None, "pass": {}}}, True),
    ("play", {"move": {"play": _PLAY}}, True),
    ("play announced", {"move": {"play": {**_PLAY, "announceLastTile": True}}}, True),
    ("play without tile", {"move": {"play": {"train": {"seat": 0}}}}, False),
    ("play tile null", {"move": {"play": {**_PLAY, "tile": None}}}, False),
    ("play without train", {"move": {"play": {"tile": {"a": 1}}}}, False),
    ("train without target", {"move": {"play": {**_PLAY, "train": {"end": 0}}}}, False),
    ("train target null", {"move": {"play": {**_PLAY, "train": {"seat": None}}}}, False),
    ("train two targets", {"move": {"play": {**_PLAY, "train": {"seat": 0, "mexican": 0}}}}, False),
    (
        "train a target and a null one",
        {"move": {"play": {**_PLAY, "train": {"seat": None, "mexican": 0}}}},
        True,
    ),
    ("train on the line", {"move": {"play": {**_PLAY, "train": {"line": {}}}}}, True),
    ("tile half highest", {"move": {"play": {**_PLAY, "tile": {"a": MAX_SET}}}}, True),
    ("tile half above", {"move": {"play": {**_PLAY, "tile": {"a": MAX_SET + 1}}}}, False),
    ("tile half a string", {"move": {"play": {**_PLAY, "tile": {"a": "5"}}}}, True),
    ("tile half negative", {"move": {"play": {**_PLAY, "tile": {"a": -1}}}}, False),
    ("tile half null", {"move": {"play": {**_PLAY, "tile": {"a": None, "b": 2}}}}, True),
    ("expectedVersion null", {"move": {"draw": {}}, "expectedVersion": None}, True),
    ("expectedVersion a string", {"move": {"draw": {}}, "expectedVersion": "12"}, True),
    ("expectedVersion a number", {"move": {"draw": {}}, "expectedVersion": 12}, True),
    ("expectedVersion not a number", {"move": {"draw": {}}, "expectedVersion": "v12"}, False),
    ("expectedVersion fraction", {"move": {"draw": {}}, "expectedVersion": 1.5}, False),
    ("requestId null", {"move": {"draw": {}}, "requestId": None}, True),
    ("requestId longest", {"move": {"draw": {}}, "requestId": "r" * MAX_REQUEST_ID}, True),
    ("requestId too long", {"move": {"draw": {}}, "requestId": "r" * (MAX_REQUEST_ID + 1)}, False),
    ("gameId in the body", {"move": {"draw": {}}, "gameId": "x"}, False),
    ("unknown field", {"move": {"draw": {}}, "why": "because"}, False),
]


@pytest.mark.parametrize(
    ("body", "admitted"),
    [pytest.param(body, admitted, id=what) for what, body, admitted in APPLY_MOVE_CASES],
)
def test_apply_move_schema_and_service_agree(body: Any, admitted: bool) -> None:
    assert body_validator(APPLY_MOVE_BODY).is_valid(body) is admitted
    game_id, token = new_game(MAX_SET)  # every tile of the schema is one of its set
    response = asyncio.run(_post(f"/v1/games/{game_id}/moves", body, token))
    assert response.status_code != 500, response.text
    assert (reason(response) != "INVALID_ARGUMENT") is admitted, response.text
