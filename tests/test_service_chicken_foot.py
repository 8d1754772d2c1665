"""Chicken Foot (RULES.md CL-CF-1) through the service, end to end: real gRPC
and uvicorn HTTP servers on loopback ports, over the in-process store and the
real redis-server the harness starts.

What is checked, on both transports:

* whole games by people playing legal moves to the end, each view checked
  against API.md's Chicken Foot shape: ``trains`` lists only the station's
  lines, as Mexican trains (``ref.mexican`` = line index), with their
  branches as for MT-DBL-7; no personal train, no marker; every tile of the
  set accounted for; only line starts are legal until every line has
  started; the lowest total wins (MT-SC-3's ties);
* option overrides (``centerLines`` among them) and ``ListRulesets``;
* games with bot seats, and of bots only (played whole by CreateGame);
* a game created through one transport on one replica and finished
  through the other on another;
* hidden information on raw payloads (tests/test_service_e2e.py's check:
  no other seat's tile, no boneyard tile, no seed before the end);
* watch streams from the start, per viewer, to ``gameEnded``;
* refusals, each with its reason and rule id, none changing the stored
  game: options Chicken Foot does not have (CL-SET-1), a move on a started
  line during the line-start phase (CL-CF-1 MUST_START_LINE), a personal
  train (MT-TR-3 NO_SUCH_TRAIN: CL-CF-1 names the rule it builds on), not
  this seat's turn, a play away from an open chicken foot (MT-DBL-3), after
  the end;
* ``railyard play --game chicken_foot`` in a terminal, from piped input.
"""

from __future__ import annotations

import argparse
import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, Final

import grpc
import httpx
import pytest
from google.protobuf import json_format

from railyard_api import game_service_pb2 as pb
from railyard_api import game_service_pb2_grpc as pb_grpc
from railyard_client import play
from service.app import GameApp
from service.settings import Settings
from service.store.memory import MemoryStore
from service.store.redis import RedisStore
from service.transports.grpc.server import create_grpc_server
from tests import test_service_e2e as e2e
from tests.service_helpers import people, run
from tests.test_http import SchemaCheck
from tests.test_service_resilience import serve

Client = e2e.GrpcClient | e2e.HttpClient
TileT = tuple[int, int]

GAME: Final = "GAME_CHICKEN_FOOT"
PRESET: Final = "chicken_foot_game"


# ------------------------------------------------------------------ servers


@asynccontextmanager
async def replica(kind: str, redis_url: str | None) -> AsyncIterator[e2e.Instance]:
    """One replica over the store ``kind``: Redis (e2e's instance) or the
    in-process store, with the same gRPC and HTTP servers."""
    if kind == "redis":
        assert redis_url is not None
        async with e2e.instance(redis_url) as one:
            yield one
        return
    async with AsyncExitStack() as stack:
        store = MemoryStore()
        stack.push_async_callback(store.close)
        app = GameApp(store, Settings(rate_limit=0))
        stack.callback(app.close)
        server, port = create_grpc_server(app, "127.0.0.1", 0)
        await server.start()
        stack.push_async_callback(server.stop, None)
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        stack.push_async_callback(channel.close)
        base = await stack.enter_async_context(e2e.http_server(app))
        client = await stack.enter_async_context(
            httpx.AsyncClient(base_url=base, timeout=httpx.Timeout(30, read=60))
        )
        yield e2e.Instance(store, app, channel, client)  # type: ignore[arg-type]


def _client(one: e2e.Instance, transport: str) -> Client:
    return one.grpc if transport == "grpc" else one.rest


def _request(players: int, bots: dict[int, int], seed: str, **rules: Any) -> pb.CreateGameRequest:
    return e2e._request(players, bots, seed, **rules)


# ------------------------------------------------------------------ the view


def _t(tile: dict[str, int]) -> TileT:
    return tile.get("a", 0), tile.get("b", 0)


def _set_size(set_max: int) -> int:
    return (set_max + 1) * (set_max + 2) // 2


def check_view(view: dict[str, Any]) -> None:
    """API.md "Classic games and Chicken Foot": a Chicken Foot view lists only
    the station's lines, as Mexican trains, with branches as for MT-DBL-7;
    CL-CF-1: no personal trains, no markers, the round's station the double
    ``set_max - round + 1``; every tile of the set is in a hand, the
    boneyard, a line or the station, once."""
    rules = view["ruleset"]
    assert rules["game"] == GAME, rules
    assert rules["preset"] == PRESET
    set_max, lines = rules["setMax"], rules["centerLines"]
    assert lines in (6, 4)
    for absent in ("line", "teams", "targetScore"):
        assert absent not in view, f"a Chicken Foot view has {absent}"
    assert view["roundsTotal"] == rules["rounds"]
    station = set_max - view["round"] + 1  # CL-CF-1: one round per double, top down
    assert _t(view["engine"]) == (station, station), (view["round"], view["engine"])
    trains = view["trains"]
    assert [t["ref"] for t in trains] == [{"mexican": i} for i in range(lines)], [
        t["ref"] for t in trains
    ]
    assert not any(p.get("marker") for p in view["players"]), "CL-CF-1: no markers"
    played: list[TileT] = []
    for train in trains:
        assert not train.get("marker"), train
        trunk = [_t(t) for t in train.get("tiles", [])]
        _check_chain(trunk, station, train)
        played += trunk
        branches = train.get("branches")
        if branches is None:
            ends = train.get("openEnds", [])
            assert ends == [trunk[-1][1] if trunk else station], train
            continue
        # MT-DBL-7: branch 0 is the trunk; each later one grows from a double
        # that ends the branch it names, and tiles follow on from its number.
        assert [_t(t) for t in branches[0].get("tiles", [])] == trunk
        assert "parentEnd" not in branches[0]
        for number, branch in enumerate(branches):
            assert branch.get("end", 0) == number, branch
            if number == 0:
                continue
            parent = branch["parentEnd"]
            assert 0 <= parent < number, branch
            parent_tiles = [_t(t) for t in branches[parent].get("tiles", [])]
            double = parent_tiles[-1][1] if parent_tiles else station
            assert parent_tiles, branches
            assert parent_tiles[-1][0] == parent_tiles[-1][1], branches
            tiles = [_t(t) for t in branch.get("tiles", [])]
            _check_chain(tiles, double, train)
            played += tiles
        open_ends = [b["openEnd"] for b in branches if "openEnd" in b]
        assert train.get("openEnds", []) == open_ends, train
    assert len(set(map(_sorted, played))) == len(played), "a tile played twice"
    for double in view.get("openDoubles", []):
        assert set(double["train"]) <= {"mexican", "end"}, double
        assert double["train"]["mexican"] < lines
    counts = sum(p.get("handCount", 0) for p in view["players"])
    on_table = len(played) + 1  # the station, set aside before the deal (CL-CF-1)
    assert counts + view.get("boneyardCount", 0) + on_table == _set_size(set_max), view
    if "viewerSeat" in view:
        seat = view["viewerSeat"]
        assert len(view.get("hand", [])) == view["players"][seat].get("handCount", 0)
        assert not set(map(_sorted, map(_t, view.get("hand", [])))) & set(map(_sorted, played))


def _sorted(tile: TileT) -> TileT:
    return (tile[0], tile[1]) if tile[0] <= tile[1] else (tile[1], tile[0])


def _check_chain(tiles: list[TileT], start: int, train: dict[str, Any]) -> None:
    """Each tile {a: the end it touches, b: the new open end} (API.md GameView)."""
    end = start
    for a, b in tiles:
        assert a == end, (tiles, start, train["ref"])
        end = b


def _unstarted(view: dict[str, Any]) -> list[int]:
    return [t["ref"]["mexican"] for t in view["trains"] if not t.get("tiles")]


def check_legal(view: dict[str, Any], moves: list[dict[str, Any]]) -> None:
    """CL-CF-1: until every line has started, the only legal plays start a
    new line, with a tile carrying the station's number; every play names a
    line (``@m<line>``, a foot's branch ``@m<line>.<end>``), never a seat."""
    station = _t(view["engine"])[0]
    empty = _unstarted(view)
    for move in moves:
        play = move["move"].get("play")
        if play is None:
            continue
        assert set(play["train"]) <= {"mexican", "end"}, move
        assert "@m" in move["notation"], move
        if empty and not view.get("openDoubles"):
            assert play["train"]["mexican"] in empty, (empty, move)
            assert "end" not in play["train"], move
            assert station in _t(play["tile"]), move


def check_winners(view: dict[str, Any]) -> None:
    """CL-CF-1: the lowest total wins; ties as MT-SC-3 (most rounds scored 0,
    then the lowest single non-zero round score, else every tied player)."""
    players = view["players"]
    totals = [p.get("score", 0) for p in players]
    assert all(sum(p.get("roundScores", [])) == p.get("score", 0) for p in players)
    assert all(len(p.get("roundScores", [])) == view["roundsTotal"] for p in players)
    best = [s for s, t in enumerate(totals) if t == min(totals)]
    zeros = {s: players[s].get("roundScores", []).count(0) for s in best}
    best = [s for s in best if zeros[s] == max(zeros.values())]
    lowest = {s: min([r for r in players[s].get("roundScores", []) if r] or [0]) for s in best}
    best = [s for s in best if lowest[s] == min(lowest.values())]
    assert view["winners"] == best, (totals, view["winners"])


async def play_to_end(
    client: Client,
    game_id: str,
    tokens: dict[int, str],
    view: dict[str, Any],
    rng: random.Random,
    check: SchemaCheck | None = None,
) -> tuple[dict[str, Any], int]:
    """The people play legal moves at random until the game is over, every
    view and legal-move list checked; the last view and the moves made."""
    moves = 0
    phases = 0  # positions in the line-start phase after a line started
    feet = 0  # positions with a chicken foot's branches (MT-DBL-7)
    while not e2e._finished(view):
        seat = view["currentSeat"]
        legal = (await client.legal(game_id, tokens[seat])).ok()
        assert legal["moves"], f"seat {seat} to move has no legal move"
        assert e2e._version(legal) == e2e._version(view)
        check_legal(view, legal["moves"])
        if 0 < len(_unstarted(view)) < view["ruleset"]["centerLines"]:
            phases += 1
        choice = rng.choice(legal["moves"])
        answer = (
            await client.apply(game_id, tokens[seat], choice["move"], e2e._version(legal))
        ).ok()
        if check is not None:
            check("ListLegalMovesResponse", legal)
            check("ApplyMoveResponse", answer)
        view = answer["game"]
        assert view["viewerSeat"] == seat
        for event in answer["events"]:
            played = event.get("tilePlayed")
            if played is not None:  # API.md: a line is addressed as a Mexican train
                assert set(played["train"]) <= {"mexican", "end"}, event
        check_view(view)
        feet += any("branches" in t for t in view["trains"])
        moves += 1
    assert phases > 0, "no position of the line-start phase was checked"
    assert feet > 0, "no chicken foot's branches were checked"
    return view, moves


async def check_finished(client: Client, game_id: str, view: dict[str, Any], seed: str) -> None:
    check_view(view)
    check_winners(view)
    await e2e.check_finished(client, game_id, view, seed)
    log = (await client.log(game_id)).ok()
    starts = [e["roundStarted"] for e in log["events"] if "roundStarted" in e]
    set_max = view["ruleset"]["setMax"]
    # CL-CF-1: a round per double from the top down, each the round's station.
    assert [(s["round"], _t(s.get("engine", {}))) for s in starts] == [
        (r, (set_max - r + 1, set_max - r + 1)) for r in range(1, view["roundsTotal"] + 1)
    ]
    assert log["ruleset"] == view["ruleset"]


# ------------------------------------------------------------------ whole games

#: (store, transport, players, ruleset fields): the preset whole (ten rounds)
#: on Redis over each transport, and shorter games with overrides, every
#: option of Chicken Foot's among them (centerLines 4, double-12, seat 0
#: first, an explicit hand size, 0-0 counting 0), on either store.
WHOLE_GAMES = [
    pytest.param("redis", "grpc", 3, {"preset": PRESET}, id="redis-grpc-preset"),
    pytest.param("redis", "http", 2, {"preset": PRESET}, id="redis-http-preset-2p"),
    pytest.param(
        "redis",
        "http",
        4,
        {"game": pb.GAME_CHICKEN_FOOT, "center_lines": 4, "rounds": 3},
        id="redis-http-4-lines",
    ),
    pytest.param(
        "memory",
        "grpc",
        4,
        {
            "game": pb.GAME_CHICKEN_FOOT,
            "center_lines": 4,
            "rounds": 2,
            "set_max": 12,
            "first_player": pb.FIRST_PLAYER_SEAT0,
        },
        id="memory-grpc-d12-4-lines-seat0",
    ),
    pytest.param(
        "memory",
        "http",
        5,
        {"preset": PRESET, "rounds": 2, "hand_size": 7, "double_blank_value": 0},
        id="memory-http-5p",
    ),
]


@pytest.mark.parametrize(("kind", "transport", "players", "rules"), WHOLE_GAMES)
def test_whole_chicken_foot_game(
    request: pytest.FixtureRequest, kind: str, transport: str, players: int, rules: dict[str, Any]
) -> None:
    """CL-CF-1 whole through one transport and store: CreateGame by the preset
    or by the game with overrides, people moving at random to the end, every
    view, legal-move list and (HTTP) answer checked against the OpenAPI
    document."""
    redis_url = request.getfixturevalue("redis_url") if kind == "redis" else None

    async def go() -> None:
        async with replica(kind, redis_url) as one:
            client = _client(one, transport)
            check = None
            if transport == "http":
                check = SchemaCheck((await one.http.get("/openapi.json")).json())
            seed = e2e._seed(request.node.name)
            created = (await client.create(_request(players, {}, seed, **rules))).ok()
            if check is not None:
                check("CreateGameResponse", created)
            tokens = e2e._tokens(created)
            assert sorted(tokens) == list(range(players))
            view = created["game"]
            check_view(view)
            resolved = view["ruleset"]
            assert resolved["centerLines"] == rules.get("center_lines", 6)
            assert resolved["setMax"] == rules.get("set_max", 9)
            assert resolved["rounds"] == rules.get("rounds", resolved["setMax"] + 1)
            assert resolved.get("doubleBlankValue", 0) == rules.get("double_blank_value", 50)
            table = {2: 15, 3: 15, 4: 12, 5: 10, 6: 8, 7: 7, 8: 6}  # CL-CF-1's hand sizes
            assert resolved["handSize"] == rules.get("hand_size", table[players])
            if rules.get("first_player") == pb.FIRST_PLAYER_SEAT0:  # MT-ENG-1
                assert resolved["firstPlayer"] == "FIRST_PLAYER_SEAT0"
                assert view.get("currentSeat", 0) == 0
            for absent in ("handSizeTable", "mexicanTrains", "knockRule", "targetScore"):
                assert absent not in resolved, absent
            assert len(view["trains"]) == resolved["centerLines"]
            assert not any(t.get("tiles") for t in view["trains"])
            assert [p.get("handCount", 0) for p in view["players"]] == [
                resolved["handSize"]
            ] * players
            game_id = view["gameId"]
            view = (await client.get(game_id, tokens[view.get("currentSeat", 0)])).ok()
            check_view(view)
            final, moves = await play_to_end(
                client, game_id, tokens, view, random.Random(seed), check
            )
            assert moves > 10 * resolved["rounds"]
            await check_finished(client, game_id, final, seed)
            spectator = (await client.get(game_id, None)).ok()
            assert "hand" not in spectator
            assert spectator["seed"] == seed
            assert spectator["winners"] == final["winners"]

    run(go())


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_chicken_foot_with_bot_seats(redis_url: str, transport: str) -> None:
    """API.md Bots in Chicken Foot: a person against a random, a greedy and
    an expert bot (the bots' moves come with the person's answers, one
    version each); and a game of bots only, played whole by CreateGame."""

    async def go() -> None:
        async with e2e.instance(redis_url) as one:
            client = _client(one, transport)
            bots = {1: pb.BOT_LEVEL_RANDOM, 2: pb.BOT_LEVEL_GREEDY, 3: pb.BOT_LEVEL_EXPERT}
            seed = e2e._seed(f"cf-bots-{transport}")
            request = _request(4, bots, seed, preset=PRESET, rounds=2)
            created = (await client.create(request)).ok()
            tokens = e2e._tokens(created)
            assert sorted(tokens) == [0], "a token for the person only"
            view = created["game"]
            check_view(view)
            assert view["currentSeat"] == 0, "the bots moved until the person is to"
            game_id = view["gameId"]
            rng = random.Random(seed)
            bot_moves = 0
            while not e2e._finished(view):
                assert view["currentSeat"] == 0
                legal = (await client.legal(game_id, tokens[0])).ok()
                check_legal(view, legal["moves"])
                move = rng.choice(legal["moves"])["move"]
                answer = (await client.apply(game_id, tokens[0], move, e2e._version(view))).ok()
                movers = [
                    e[k]["seat"]
                    for e in answer["events"]
                    for k in ("tilePlayed", "passed")
                    if k in e and e[k].get("seat", 0)
                ]
                bot_moves += len(movers)
                view = answer["game"]
                check_view(view)
            assert bot_moves > 20
            await check_finished(client, game_id, view, seed)
            assert [p.get("bot") for p in view["players"]] == [
                None,
                "BOT_LEVEL_RANDOM",
                "BOT_LEVEL_GREEDY",
                "BOT_LEVEL_EXPERT",
            ]

            only = {0: pb.BOT_LEVEL_GREEDY, 1: pb.BOT_LEVEL_EXPERT, 2: pb.BOT_LEVEL_RANDOM}
            seed = e2e._seed(f"cf-bots-only-{transport}")
            created = (await client.create(_request(3, only, seed, preset=PRESET, rounds=1))).ok()
            assert "seats" not in created
            view = created["game"]
            assert e2e._finished(view)
            check_view(view)
            check_winners(view)
            log = (await client.log(view["gameId"])).ok()
            assert "gameEnded" in log["events"][-1]
            assert e2e._version(log["events"][-1]) == e2e._version(view) > 20

    run(go())


CROSSINGS = [
    pytest.param("http-then-grpc", {"preset": PRESET}, id="http-then-grpc"),
    pytest.param(
        "grpc-then-http",
        {"game": pb.GAME_CHICKEN_FOOT, "center_lines": 4, "rounds": 4},
        id="grpc-then-http",
    ),
]


@pytest.mark.parametrize(("direction", "rules"), CROSSINGS)
def test_chicken_foot_crosses_replicas_and_transports(
    redis_url: str, direction: str, rules: dict[str, Any]
) -> None:
    """Created through one transport on replica A, finished through the other
    on replica B (a greedy bot in seat 2): one game, the same views and log
    everywhere."""

    async def go() -> None:
        async with e2e.instance(redis_url) as a, e2e.instance(redis_url) as b:
            creator, player = (
                (a.rest, b.grpc) if direction == "http-then-grpc" else (a.grpc, b.rest)
            )
            seed = e2e._seed(f"cf-cross-{direction}")
            request = _request(3, {2: pb.BOT_LEVEL_GREEDY}, seed, **rules)
            created = (await creator.create(request)).ok()
            game_id = created["game"]["gameId"]
            tokens = e2e._tokens(created)
            assert (await player.get(game_id, None)).ok() == created["game"]
            seat = created["game"]["currentSeat"]
            assert seat != 2
            view = (await player.get(game_id, tokens[seat])).ok()
            check_view(view)
            # The first move through the creator, the rest through the other.
            rng = random.Random(seed)
            legal = (await creator.legal(game_id, tokens[seat])).ok()
            first = rng.choice(legal["moves"])["move"]
            view = (await creator.apply(game_id, tokens[seat], first, e2e._version(view))).ok()
            view = view["game"]
            final, _ = await play_to_end(player, game_id, tokens, view, rng)
            await check_finished(player, game_id, final, seed)
            views = [
                (await client.get(game_id, None)).ok()
                for client in (a.grpc, a.rest, b.grpc, b.rest)
            ]
            assert all(v == views[0] for v in views)
            logs = [(await client.log(game_id)).ok() for client in (a.grpc, b.rest)]
            assert logs[0] == logs[1]
            record = await a.store.load(game_id)
            assert record is not None
            assert record.version == e2e._version(final)

    run(go())


def test_list_rulesets_lists_chicken_foot_with_its_options(redis_url: str) -> None:
    """API.md ListRulesets: chicken_foot_game with its resolved options, on
    both transports, and only Chicken Foot's options (CL-SET-1); Mexican
    Train's own chicken_foot preset stays Mexican Train's."""

    async def go() -> None:
        async with e2e.instance(redis_url) as one:
            stub = pb_grpc.GameServiceStub(one.channel)
            by_grpc = json_format.MessageToDict(await stub.ListRulesets(pb.ListRulesetsRequest()))
            by_http = (await one.http.get("/v1/rulesets")).json()
            assert by_grpc == by_http
            presets = {r["preset"]: r for r in by_http["rulesets"]}
            assert presets[PRESET] == {
                "preset": PRESET,
                "game": GAME,
                "setMax": 9,
                "firstPlayer": "FIRST_PLAYER_DRAW",
                "doubleBlankValue": 50,
                "centerLines": 6,
            }
            assert presets["chicken_foot"]["game"] == "GAME_MEXICAN_TRAIN"
            assert presets["chicken_foot"]["doubleAnswer"] == "DOUBLE_ANSWER_CHICKEN_FOOT"
            assert "centerLines" not in presets["chicken_foot"]

    run(go())


# ------------------------------------------------------------------ hidden information

HIDDEN_GAMES = [
    pytest.param(3, {1: pb.BOT_LEVEL_GREEDY}, 2, {"preset": PRESET}, id="3p-greedy-2rounds"),
    pytest.param(
        4, {}, 1, {"game": pb.GAME_CHICKEN_FOOT, "center_lines": 4}, id="4p-4-lines-1round"
    ),
]


@pytest.mark.parametrize(("players", "bots", "rounds", "rules"), HIDDEN_GAMES)
def test_chicken_foot_hidden_information(
    redis_url: str, players: int, bots: dict[int, int], rounds: int, rules: dict[str, Any]
) -> None:
    """MT-VIS, MT-DR-3, MT-FAIR-1 in Chicken Foot: no view, event, legal-move
    list, move answer, error body, log or watch stream (every viewer, both
    transports), read raw off the wire, shows another hand's tile, a
    boneyard tile, or the seed before the game is over (the check of
    tests/test_service_e2e.py, on Chicken Foot games)."""
    seed = "SEED-" + e2e._seed(f"cf-hidden-{players}-{sorted(bots.items())}-{rounds}")

    async def go() -> list[str]:
        rng = random.Random(seed)
        async with e2e.instance(redis_url) as one:
            authority = RedisStore(redis_url)
            try:
                return await e2e._hidden_game(
                    one, authority, rng, seed, players, bots, rounds, rules
                )
            finally:
                await authority.close()

    found = run(go())
    assert not found, "\n".join(found[:40])


# ------------------------------------------------------------------ watching


def test_chicken_foot_watch_streams(redis_url: str) -> None:
    """API.md WatchGame on a Chicken Foot game: a snapshot with the lines as
    Mexican trains, then every later event in order to gameEnded, the same
    as the log but for the watcher's own drawn tiles (MT-DR-3); lines and
    branches addressed as ``{mexican, end}``; a late watcher gets it all."""

    async def go() -> None:
        async with e2e.instance(redis_url) as one:
            seed = e2e._seed("cf-watch")
            request = _request(3, {2: pb.BOT_LEVEL_GREEDY}, seed, preset=PRESET, rounds=2)
            created = (await one.grpc.create(request)).ok()
            game_id = created["game"]["gameId"]
            tokens = e2e._tokens(created)
            watchers: list[tuple[Client, int | None]] = [
                (one.grpc, None),
                (one.rest, None),
                (one.grpc, 0),
                (one.rest, 1),
            ]
            ready = [asyncio.Event() for _ in watchers]
            tasks = [
                asyncio.create_task(
                    client.watch(game_id, None if s is None else tokens[s], started=event)
                )
                for (client, s), event in zip(watchers, ready, strict=True)
            ]
            await asyncio.wait_for(asyncio.gather(*(e.wait() for e in ready)), 10)
            view = (await one.rest.get(game_id, tokens[created["game"]["currentSeat"]])).ok()
            final, _ = await play_to_end(one.rest, game_id, tokens, view, random.Random(seed))
            streams = await asyncio.wait_for(asyncio.gather(*tasks), 30)
            log = (await one.grpc.log(game_id)).ok()["events"]
            for (client, seat), items in zip(watchers, streams, strict=True):
                where = f"{client.name} viewer {seat}"
                snapshot = items[0][0]
                assert e2e._kind(snapshot) == "snapshot", where
                check_view(snapshot["snapshot"])
                assert snapshot["snapshot"].get("viewerSeat") == seat, where
                events = [e for e, _ in items[1:]]
                assert e2e._kind(events[-1]) == "gameEnded", where
                own_draws = 0
                for event in events:
                    drawn = event.get("tileDrawn")
                    if drawn is not None:
                        mine = drawn.get("seat", 0) == seat
                        assert ("tile" in drawn) == mine, (where, event)
                        own_draws += mine
                        drawn.pop("tile", None)
                    for key in ("tilePlayed", "doubleSatisfied"):
                        if key in event:
                            assert set(event[key]["train"]) <= {"mexican", "end"}, event
                start = e2e._version(snapshot)
                assert events == [e for e in log if e2e._version(e) > start], where
                assert seat is None or own_draws > 0, f"{where}: saw none of its own draws"
            assert any("doubleSatisfied" in e for e in log), "no chicken foot was answered"
            # A late watcher, from the very start: the whole history, then the end.
            items = await asyncio.wait_for(one.rest.watch(game_id, None, after=-1), 10)
            assert [e for e, _ in items[1:]] == log
            assert items[0][0]["snapshot"] == (await one.rest.get(game_id, None)).ok()
            assert final["winners"] == items[0][0]["snapshot"]["winners"]

    run(go())


# ------------------------------------------------------------------ refusals

#: (what, players, ruleset fields, reason, rule, words of the message): the
#: CreateGames CL-CF-1 and CL-SET-1 refuse.
CREATE_REFUSALS: Final[list[tuple[str, int, dict[str, Any], str, str, list[str]]]] = [
    *(
        (f"not an option: {option}", 2, {option: value}, "INVALID_ARGUMENT", "CL-SET-1", [option])
        for option, value in (
            ("knock_rule", pb.KNOCK_RULE_PENALTY),
            ("mexican_trains", 2),
            ("double_answer", pb.DOUBLE_ANSWER_ONE),
            ("target_score", 100),
            ("teams", False),  # refused even at a value that changes nothing
            ("boneyard_reserve", 0),
            ("opening", pb.OPENING_SEAT0_ANY),
        )
    ),
    ("centerLines 5", 2, {"center_lines": 5}, "INVALID_ARGUMENT", "CL-CF-1", ["6 or 4"]),
    ("9 players", 9, {}, "INVALID_ARGUMENT", "CL-CF-1", ["2 to 8", "9"]),
    ("1 player", 1, {}, "INVALID_ARGUMENT", "CL-CF-1", ["2 to 8"]),
    (
        "the deal does not fit",
        2,
        {"hand_size": 28},
        "DEAL_DOES_NOT_FIT",
        "MT-DEAL-2",
        ["56", "54", "station"],
    ),
    ("11 rounds", 2, {"rounds": 11}, "INVALID_ARGUMENT", "MT-RND-1", ["1 to 10"]),
    (
        "Mexican Train's preset",
        2,
        {"preset": "standard"},
        "INVALID_ARGUMENT",
        "CL-SET-1",
        ["standard", "mexican_train", "chicken_foot"],
    ),
]


def _refusal_body(n: int, fields: dict[str, Any]) -> pb.CreateGameRequest:
    ruleset = pb.Ruleset(**{"game": pb.GAME_CHICKEN_FOOT, **fields})
    return pb.CreateGameRequest(ruleset=ruleset, players=people(n))


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_chicken_foot_refusals(redis_url: str, transport: str) -> None:
    """API.md Errors in Chicken Foot, over one transport: the CreateGames it
    refuses store nothing; and every move refused in a whole game leaves the
    stored game exactly as it was, with its reason and rule: CL-CF-1's
    MUST_START_LINE (a started line during the line-start phase) and
    NO_SUCH_TRAIN (a personal train, the classic line), NOT_YOUR_TURN,
    MT-DBL-3 (a play away from an open chicken foot), MT-TURN-2 (a draw or a
    pass with a playable tile), bad and missing tokens, a stale version, and
    GAME_OVER after the end."""

    async def go() -> None:
        async with e2e.instance(redis_url) as one:
            client = _client(one, transport)
            for what, n, fields, reason, rule, words in CREATE_REFUSALS:
                reply = await client.create(_refusal_body(n, fields))
                assert (reply.code, reply.reason) == ("INVALID_ARGUMENT", reason), (what, reply)
                assert client.name == "grpc" or reply.http_status == 400
                assert reply.data["details"][0]["metadata"]["rule"] == rule, (what, reply.data)
                for word in [*words, "chicken_foot"] if rule == "CL-SET-1" else words:
                    assert word in reply.data["message"], (what, word, reply.data["message"])
            # Mexican Train refuses Chicken Foot's option, naming both (API.md;
            # Mexican Train's refusals of an option carry no rule id).
            mexican = pb.CreateGameRequest(
                ruleset=pb.Ruleset(preset="standard", center_lines=4), players=people(2)
            )
            reply = await client.create(mexican)
            assert reply.reason == "INVALID_ARGUMENT", reply.data
            assert "center_lines" in reply.data["message"]
            assert "mexican_train" in reply.data["message"]
            assert e2e._games_in_redis(redis_url) == 0, "a refused CreateGame stored a game"
            await _refused_moves(one, client)

    run(go())


async def _refused_moves(one: e2e.Instance, client: Client) -> None:
    seed = e2e._seed(f"cf-refusals-{client.name}")
    request = _request(3, {}, seed, preset=PRESET, rounds=2)
    created = (await client.create(request)).ok()
    game_id = created["game"]["gameId"]
    tokens = e2e._tokens(created)
    stranger = e2e._tokens((await client.create(request)).ok())[0]
    rng = random.Random(seed)
    seen: set[tuple[str, str, str]] = set()

    async def refused(
        token: str | None,
        move: dict[str, Any],
        reason: str,
        rule: str | tuple[str, ...] | None = None,
        detail: str | None = None,
        **kw: Any,
    ) -> None:
        """``move`` is refused with ``reason`` (and rule, or one of the rules,
        and detail, when given), and nothing in the store changes."""
        before = await one.store.load(game_id)
        reply = await client.apply(game_id, token, move, **kw)
        after = await one.store.load(game_id)
        assert before is not None
        assert after is not None
        assert reply.reason == reason, (move, reply.data)
        assert (after.version, after.state) == (before.version, before.state), (move, reason)
        meta = reply.data["details"][0].get("metadata", {})
        if reason in ("ILLEGAL_MOVE", "NOT_YOUR_TURN", "GAME_OVER"):
            assert reply.code == "FAILED_PRECONDITION"
            assert client.name == "grpc" or reply.http_status == 400
            seen.add((reason, meta["rule"], meta["detail"]))
        rules = (rule,) if isinstance(rule, str) else rule
        assert rules is None or meta.get("rule") in rules, (move, reply.data)
        assert detail is None or meta.get("detail") == detail, (move, reply.data)

    def play(tile: TileT, train: dict[str, Any]) -> dict[str, Any]:
        return {"play": {"tile": {"a": tile[0], "b": tile[1]}, "train": train}}

    async def hand_of(seat: int) -> list[TileT]:
        return [_t(t) for t in (await client.get(game_id, tokens[seat])).ok().get("hand", [])]

    view = created["game"]
    mover = view["currentSeat"]
    other = (mover + 1) % 3
    legal = (await client.legal(game_id, tokens[mover])).ok()["moves"]
    first = legal[0]["move"]
    tile = _t(first["play"]["tile"])
    # Tokens, versions and turns, before anything is played.
    for token in ("not-a-token", stranger):
        await refused(token, first, "BAD_SEAT_TOKEN")
    await refused(None, first, "UNAUTHENTICATED")
    await refused(tokens[mover], first, "VERSION_MISMATCH", expected=1)
    await refused(tokens[other], first, "NOT_YOUR_TURN", "MT-ENG-2", "NOT_YOUR_TURN")
    # CL-CF-1: no personal trains, no classic line; such a target is no line
    # or branch, which MT-TR-3 refuses.
    await refused(
        tokens[mover], play(tile, {"seat": mover}), "ILLEGAL_MOVE", "MT-TR-3", "NO_SUCH_TRAIN"
    )
    await refused(
        tokens[mover], play(tile, {"line": {}}), "ILLEGAL_MOVE", "MT-TR-3", "NO_SUCH_TRAIN"
    )
    await refused(tokens[mover], {"endTurn": {}}, "ILLEGAL_MOVE", "MT-FT-1", "CANNOT_END_TURN")
    # The first line starts; every other line must start before it is extended.
    view = (await client.apply(game_id, tokens[mover], first, e2e._version(view))).ok()["game"]
    started = first["play"]["train"].get("mexican", 0)
    mover = view["currentSeat"]
    hand = await hand_of(mover)
    end = next(t["openEnds"][0] for t in view["trains"] if t["ref"]["mexican"] == started)
    fits = [t for t in hand if end in t] or hand  # one that would fit, if the hand has one
    await refused(
        tokens[mover],
        play(fits[0], {"mexican": started}),
        "ILLEGAL_MOVE",
        "CL-CF-1",
        "MUST_START_LINE",
    )

    # The rest of the game at random, refusing on the way what each position forbids.
    while not e2e._finished(view):
        mover = view["currentSeat"]
        token = tokens[mover]
        legal = (await client.legal(game_id, token)).ok()["moves"]
        plays = {e2e._move_key(m["move"]) for m in legal}
        if rng.random() < 0.5 or view.get("openDoubles") or _unstarted(view):
            hand = await hand_of(mover)
            for tile in hand:
                for train in view["trains"]:
                    line = train["ref"]["mexican"]
                    if not train.get("tiles") or train.get("branches"):
                        continue  # the started, unbranched lines: one open end
                    move = play(tile, {"mexican": line})
                    if train["openEnds"][0] not in tile or e2e._move_key(move) in plays:
                        continue  # a play that would fit there, but is not legal now
                    if _unstarted(view) and not view.get("openDoubles"):
                        await refused(token, move, "ILLEGAL_MOVE", "CL-CF-1", "MUST_START_LINE")
                    elif view.get("turn", {}).get("drewThisTurn"):
                        # MT-DR-1: the drawn tile only; or the foot first (MT-DBL-3).
                        await refused(token, move, "ILLEGAL_MOVE", ("MT-DR-1", "MT-DBL-3"))
                    elif view.get("openDoubles"):  # MT-DBL-3 / MT-DBL-7: the foot first
                        await refused(token, move, "ILLEGAL_MOVE", "MT-DBL-3", "MUST_COVER_DOUBLE")
                    break
            drew = view.get("turn", {}).get("drewThisTurn", False)
            if not drew and any("play" in m["move"] for m in legal):
                for move in ({"pass": {}}, {"draw": {}}):
                    await refused(token, move, "ILLEGAL_MOVE", "MT-TURN-2", "MUST_PLAY")
            await refused(tokens[(mover + 1) % 3], {"draw": {}}, "NOT_YOUR_TURN", "MT-ENG-2")
        answer = await client.apply(game_id, token, rng.choice(legal)["move"], e2e._version(view))
        view = answer.ok()["game"]
    for token in tokens.values():
        await refused(token, {"draw": {}}, "GAME_OVER", "MT-RND-1")
        await refused(token, play((0, 0), {"mexican": 0}), "GAME_OVER", "MT-RND-1")
    await refused(stranger, {"draw": {}}, "BAD_SEAT_TOKEN")
    expected = {
        ("NOT_YOUR_TURN", "MT-ENG-2", "NOT_YOUR_TURN"),
        ("ILLEGAL_MOVE", "MT-TR-3", "NO_SUCH_TRAIN"),
        ("ILLEGAL_MOVE", "CL-CF-1", "MUST_START_LINE"),
        ("ILLEGAL_MOVE", "MT-FT-1", "CANNOT_END_TURN"),
        ("ILLEGAL_MOVE", "MT-DBL-3", "MUST_COVER_DOUBLE"),
        ("ILLEGAL_MOVE", "MT-TURN-2", "MUST_PLAY"),
        ("GAME_OVER", "MT-RND-1", "GAME_OVER"),
    }
    assert expected <= seen, f"not refused in this game: {sorted(expected - seen)}"


# ------------------------------------------------------------------ the terminal


def test_railyard_play_chicken_foot_in_the_terminal(tmp_path: Path) -> None:
    """``railyard-play --game chicken_foot`` (the Python client's command)
    against a real ``railyard serve``, from piped input: the table shows the
    station and its lines (no personal train, no Mexican train of Mexican
    Train's), each foot's branches with their open ends, sends a move on a
    personal train that the service refuses naming MT-TR-3, and plays to
    the end."""
    parser = argparse.ArgumentParser()
    play.options(parser)
    with serve(tmp_path, None, "play") as server:
        table = ["--game", "chicken_foot", "--players", "3", "--rounds", "2", "--seed", "cli-cf"]
        args = parser.parse_args(["--url", f"127.0.0.1:{server.grpc_port}", *table])
        answers = iter(["9-9@p0", "zz", *["0"] * 5000])
        out: list[str] = []
        assert play.play(args, read=lambda _: next(answers), write=out.append) == 0
    text = "\n".join(out)
    assert "chicken_foot_game rules, 3 players" in text
    assert "0-9@m2" in out[0], "the prompt's examples are Chicken Foot's moves"
    assert "Round 1 starts: station 9-9" in text
    assert "Round 2/2  station 8-8" in text
    assert "  m5   line" in text
    assert "Mexican" not in text
    assert not any("@p" in line for line in out if line.startswith("Moves:"))
    assert "Chicken Foot has no p0 train" in text
    lines = text.splitlines()
    assert any(line.lstrip().startswith(".3 from .0:") and "->" in line for line in lines), (
        "no chicken foot's branches were drawn"
    )
    assert out[-1].lstrip().startswith("Game over. Totals"), out[-3:]
