"""GET /metrics: Prometheus metrics of every call, over both transports, and
of what happened to games (service/ops/telemetry.py), read back with
prometheus_client's own parser."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import httpx
from prometheus_client.parser import text_string_to_metric_families

from railyard_api import game_service_pb2 as pb
from railyard_api import game_service_pb2_grpc as pb_grpc
from service.app import GameApp
from service.settings import Settings
from service.store.memory import MemoryStore
from service.transports.grpc.server import create_grpc_server
from service.transports.http.server import create_http_app
from tests.service_helpers import bearer, expect_error, run

RULES = {"setMax": 6, "handSize": 7, "rounds": 1}


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition: (name, sorted labels) -> value."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return out


def value(found: dict[Any, float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_count_calls_games_moves_and_watches() -> None:
    async def go() -> None:
        # bots_only "request": the game of bots below is played by its
        # CreateGame (no background loop runs beside this app).
        app = GameApp(MemoryStore(), Settings(keepalive=10, bot_processes=0, bots_only="request"))
        server, port = create_grpc_server(app, "127.0.0.1", 0)
        await server.start()
        transport = httpx.ASGITransport(app=create_http_app(app))
        async with (
            httpx.AsyncClient(transport=transport, base_url="http://t") as http,
            grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel,
        ):
            stub = pb_grpc.GameServiceStub(channel)
            body = {"players": [{}, {}, {"bot": "BOT_LEVEL_RANDOM"}], "ruleset": RULES}
            created = (await http.post("/v1/games", json=body)).json()
            game_id = created["game"]["gameId"]
            # By seat: the people's seats 0 and 1 (the bot at seat 2 has no token).
            tokens = {s.get("seat", 0): s["token"] for s in created["seats"]}
            assert sorted(tokens) == [0, 1]
            mover = created["game"].get("currentSeat", 0)
            other = 1 - mover
            legal = await http.get(f"/v1/games/{game_id}/legal-moves", headers=auth(tokens[mover]))
            move = legal.json()["moves"][0]["move"]
            refused = await http.post(
                f"/v1/games/{game_id}/moves", json={"move": move}, headers=auth(tokens[other])
            )
            assert refused.status_code == 400  # NOT_YOUR_TURN
            applied = await http.post(
                f"/v1/games/{game_id}/moves", json={"move": move}, headers=auth(tokens[mover])
            )
            assert applied.status_code == 200
            assert (await http.get("/nowhere")).status_code == 404
            view = await stub.GetGame(pb.GetGameRequest(game_id=game_id))
            assert view.game_id == game_id
            code, _, _ = await expect_error(
                lambda: stub.GetGame(pb.GetGameRequest(game_id="0" * 20))
            )
            assert code == grpc.StatusCode.NOT_FOUND
            await stub.ListRulesets(pb.ListRulesetsRequest())
            # Every seat a bot: CreateGame plays the game to its end.
            await stub.CreateGame(
                pb.CreateGameRequest(
                    ruleset=pb.Ruleset(set_max=6, hand_size=7, rounds=1),
                    players=[pb.Player(bot=pb.BOT_LEVEL_GREEDY)] * 2,
                )
            )

            watch = stub.WatchGame(pb.WatchGameRequest(game_id=game_id))
            await watch.read()  # the snapshot: the stream is open
            during = samples((await http.get("/metrics")).text)
            watch.cancel()
            for _ in range(100):  # the server sees the cancel a moment later
                page = await http.get("/metrics")
                if value(samples(page.text), "railyard_watch_streams") == 0:
                    break
                await asyncio.sleep(0.05)
        await server.stop(None)

        assert page.headers["content-type"].startswith("text/plain")
        found = samples(page.text)
        assert value(during, "railyard_watch_streams") == 1
        assert value(found, "railyard_watch_streams") == 0
        http_calls = "railyard_http_requests_total"
        assert value(found, http_calls, operation="CreateGame", status="200") == 1
        assert value(found, http_calls, operation="ListLegalMoves", status="200") == 1
        assert value(found, http_calls, operation="ApplyMove", status="200") == 1
        assert value(found, http_calls, operation="ApplyMove", status="400") == 1
        assert value(found, http_calls, operation="unmatched", status="404") == 1
        assert value(found, http_calls, operation="Metrics", status="200") >= 1  # earlier reads
        apply_time = "railyard_http_request_duration_seconds_count"
        assert value(found, apply_time, operation="ApplyMove") == 2
        grpc_calls = "railyard_grpc_requests_total"
        assert value(found, grpc_calls, method="GetGame", code="OK") == 1
        assert value(found, grpc_calls, method="GetGame", code="NOT_FOUND") == 1
        assert value(found, grpc_calls, method="ListRulesets", code="OK") == 1
        assert value(found, grpc_calls, method="CreateGame", code="OK") == 1
        assert value(found, grpc_calls, method="WatchGame", code="CANCELLED") == 1
        # A stream's lifetime is not a latency.
        assert value(found, "railyard_grpc_request_duration_seconds_count", method="WatchGame") == 0
        assert value(found, "railyard_games_created_total") == 2
        assert value(found, "railyard_games_finished_total") == 1
        assert value(found, "railyard_moves_applied_total", player="person") == 1
        greedy = value(found, "railyard_bot_decision_seconds_count", level="greedy")
        random_ = value(found, "railyard_bot_decision_seconds_count", level="random")
        assert greedy > 0
        assert value(found, "railyard_moves_applied_total", player="bot") == greedy + random_

    run(go())


def auth(token: str) -> dict[str, str]:
    return dict(bearer(token))
