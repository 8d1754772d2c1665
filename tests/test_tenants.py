"""Tenants (issue 14): operator API keys that CreateGame requires once any is
configured, requestIds scoped per tenant, a per-tenant create rate and cap
on games in progress, over both transports against a real Redis (two
replicas sharing it where the count must be shared)."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from railyard_api import game_service_pb2 as pb
from service.app.tenants import ApiKeys, seat_token_of
from service.settings import Settings
from service.store import Reservation, Store
from service.store.memory import MemoryStore
from service.store.redis import RedisStore
from tests.service_helpers import bearer, expect_error, people, run
from tests.test_service_resilience import SHORT, instance, play_grpc, status_reason
from tests.test_trust import _stored_bytes

ACME_KEY = "acme-key-0123456789abcdef"
ACME_NEW_KEY = "acme-rotated-key-fedcba9876543210"
BETA_KEY = "beta-key-0123456789abcdef"
#: beta's key is configured by its hash only, as a manifest would hold it.
KEYS = f"acme:{ACME_KEY}, beta:sha256:{hashlib.sha256(BETA_KEY.encode()).hexdigest()}"


def keyed(key: str) -> tuple[tuple[str, str], ...]:
    return (("x-api-key", key),)


def tenant_settings(**more: Any) -> Settings:
    return Settings(bot_processes=0, api_keys=KEYS, **more)


BODY = {
    "players": [{"displayName": "Ann"}, {"bot": "BOT_LEVEL_GREEDY"}, {"displayName": "Bea"}],
    "ruleset": {"setMax": 6, "handSize": 7, "rounds": 1},
    "requestId": "table 7",
}
REQUEST = json_format.ParseDict(BODY, pb.CreateGameRequest())


# ------------------------------------------------------------------ configuration


def test_keys_are_configured_by_name_as_keys_or_their_hashes(tmp_path: Any) -> None:
    """Each entry is name:key or name:sha256:<hex>; only hashes are kept; a bare
    64-digit hex string is a key (openssl rand -hex 32 makes those), not a hash."""
    hexkey = "ab" * 32
    keys = ApiKeys.parse(f"acme:{ACME_KEY}\n# a comment\nbeta:sha256:{'0' * 64},hex:{hexkey}")
    assert [name for name, _ in keys.entries] == ["acme", "beta", "hex"]
    assert ACME_KEY not in repr(keys)
    assert keys.tenant_of(ACME_KEY) == "acme"
    assert keys.tenant_of(hexkey) == "hex"
    assert keys.tenant_of("0" * 64) is None  # a configured hash is no key
    assert keys.tenant_of("acme") is None
    assert not ApiKeys.parse("").required
    # Two keys of one name are one tenant: a key is rotated so.
    rotating = ApiKeys.parse(f"acme:{ACME_KEY},acme:{ACME_NEW_KEY}")
    assert rotating.tenant_of(ACME_NEW_KEY) == rotating.tenant_of(ACME_KEY) == "acme"
    file = tmp_path / "keys"
    file.write_text(f"beta:{BETA_KEY}\n")
    settings = Settings(api_keys=f"acme:{ACME_KEY}", api_keys_file=str(file))
    assert settings.api_key_set().tenant_of(BETA_KEY) == "beta"
    for bad, says in (
        ("acme", "entry 1: write name:key"),
        (f"acme:{ACME_KEY},a b:{ACME_KEY}", "entry 2: write name:key"),
        ("acme:short", "at least 16 characters"),
        ("acme:sha256:abc", "64 hex digits"),
    ):
        with pytest.raises(ValueError, match=says):
            Settings(api_keys=bad)
    with pytest.raises(ValueError, match="api_keys_file"):
        Settings(api_keys_file=str(tmp_path / "missing"))


def test_the_tenants_module_examples_hold() -> None:
    """service.app.tenants' doctests (make unit collects no doctests under service/)."""
    import doctest

    import service.app.identity
    import service.app.tenants

    for module in (service.app.tenants, service.app.identity):
        failed, tried = doctest.testmod(module)
        assert tried
        assert not failed


@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_the_live_game_count_is_checked_and_added_in_one_step(redis_url: str, kind: str) -> None:
    """reserve_live counts a game once (a retry finds it HELD), refuses past
    the cap, frees a place on release and when the place expires (game_ttl)."""

    now = [1000.0]

    async def elapse(seconds: float) -> None:
        # Redis expires by its own clock: there real time passes.
        if kind == "memory":
            now[0] += seconds
        else:
            await asyncio.sleep(seconds)

    async def go() -> None:
        store: Store = (
            MemoryStore(game_ttl=0.5, clock=lambda: now[0])
            if kind == "memory"
            else RedisStore(redis_url, game_ttl=0.5)
        )
        try:
            assert await store.reserve_live("acme", "g1", 2) is Reservation.ADDED
            assert await store.reserve_live("acme", "g1", 2) is Reservation.HELD
            assert await store.reserve_live("acme", "g2", 2) is Reservation.ADDED
            assert await store.reserve_live("acme", "g3", 2) is Reservation.FULL
            assert await store.reserve_live("beta", "g3", 2) is Reservation.ADDED
            await store.release_live("acme", "g1")
            await store.release_live("acme", "g1")  # idempotent
            assert await store.reserve_live("acme", "g3", 2) is Reservation.ADDED
            assert await store.reserve_live("acme", "g4", 2) is Reservation.FULL
            await elapse(0.7)  # g2 and g3 stop counting: left unfinished
            assert await store.reserve_live("acme", "g4", 2) is Reservation.ADDED
            assert await store.reserve_live("acme", "g5", 0) is Reservation.ADDED  # 0: no cap
        finally:
            await store.close()

    run(go())


# ------------------------------------------------------------------ keys


def test_create_game_needs_a_configured_api_key_on_both_transports(redis_url: str) -> None:
    """With keys configured: no key is UNAUTHENTICATED / 401 saying an API key
    is needed; a wrong key PERMISSION_DENIED / 403 BAD_API_KEY; a key
    configured as its hash works. Seat and spectator calls need no key."""

    async def go() -> None:
        async with instance(RedisStore(redis_url), tenant_settings()) as svc:
            request = pb.CreateGameRequest(players=people(2), ruleset=SHORT)
            code, reason, _ = await expect_error(lambda: svc.stub.CreateGame(request))
            assert (code, reason) == (grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED")
            response = await svc.http.post("/v1/games", json={"players": [{}, {}]})
            assert status_reason(response) == (401, "UNAUTHENTICATED")
            assert "API key" in response.json()["message"]
            assert "x-api-key" in response.json()["message"]
            for wrong in ("not-a-key-of-this-service", BETA_KEY.upper()):
                code, reason, _ = await expect_error(
                    lambda w=wrong: svc.stub.CreateGame(request, metadata=keyed(w))
                )
                assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "BAD_API_KEY")
                response = await svc.http.post(
                    "/v1/games", json={"players": [{}, {}]}, headers={"x-api-key": wrong}
                )
                assert status_reason(response) == (403, "BAD_API_KEY")
                assert wrong not in response.text
            # An empty key is none.
            response = await svc.http.post(
                "/v1/games", json={"players": [{}, {}]}, headers={"x-api-key": ""}
            )
            assert status_reason(response) == (401, "UNAUTHENTICATED")
            # The hash of a key is not the key.
            hashed = hashlib.sha256(BETA_KEY.encode()).hexdigest()
            response = await svc.http.post(
                "/v1/games", json={"players": [{}, {}]}, headers={"x-api-key": hashed}
            )
            assert status_reason(response) == (403, "BAD_API_KEY")
            # Sent twice: not a key.
            response = await svc.http.post(
                "/v1/games",
                json={"players": [{}, {}]},
                headers=[("x-api-key", BETA_KEY), ("x-api-key", BETA_KEY)],
            )
            assert status_reason(response) == (403, "BAD_API_KEY")
            # beta is configured by its hash; acme by its plain key.
            created = await svc.stub.CreateGame(request, metadata=keyed(BETA_KEY))
            response = await svc.http.post(
                "/v1/games", json={"players": [{}, {}]}, headers={"x-api-key": ACME_KEY}
            )
            assert response.status_code == 200, response.text
            # Seat calls and spectators as before: seat tokens, no key.
            game_id = created.game.game_id
            tokens = {s.seat: s.token for s in created.seats}
            assert (await svc.stub.GetGame(pb.GetGameRequest(game_id=game_id))).game_id == game_id
            view = await svc.stub.GetGame(
                pb.GetGameRequest(game_id=game_id), metadata=bearer(tokens[0])
            )
            assert view.viewer_seat == 0
            played = await play_grpc(svc.stub, game_id, tokens, moves=2)
            assert played.version >= 2
            assert (await svc.http.get(f"/v1/games/{game_id}/log")).status_code == 200

    run(go())


def test_without_keys_configured_a_sent_key_changes_nothing(redis_url: str) -> None:
    """The open embedded default: no key needed, one sent is ignored, and a
    repeated CreateGame is answered as before (the game, replayed, no tokens)."""

    async def go() -> None:
        async with instance(RedisStore(redis_url), Settings(bot_processes=0)) as svc:
            first = await svc.stub.CreateGame(REQUEST)
            again = await svc.stub.CreateGame(REQUEST, metadata=keyed(ACME_KEY))
            assert again == pb.CreateGameResponse(game=first.game, replayed=True)
            response = await svc.http.post("/v1/games", json=BODY, headers={"x-api-key": "x"})
            assert response.json() == {
                "game": json_format.MessageToDict(first.game),
                "replayed": True,
            }

    run(go())


# ------------------------------------------------------------------ requestId per tenant


def test_request_ids_are_scoped_per_tenant_and_only_the_key_recovers_its_tokens(
    redis_url: str,
) -> None:
    """Another tenant sending acme's body and requestId gets a game of its own
    (new id, new tokens), never acme's answer. acme's own retry, on either
    transport, gets its game back with its seat tokens (derived from its key:
    a retry after a lost answer can still play). A rotated key of acme (same
    name, another key) lands on the same game but gets no token. Tokens are
    at rest only as hashes."""

    async def go() -> None:
        keys = f"{KEYS}, acme:{ACME_NEW_KEY}"
        async with instance(RedisStore(redis_url), Settings(bot_processes=0, api_keys=keys)) as svc:
            first = await svc.stub.CreateGame(REQUEST, metadata=keyed(ACME_KEY))
            assert not first.replayed
            tokens = {s.seat: s.token for s in first.seats}
            assert sorted(tokens) == [0, 2]
            game_id = first.game.game_id

            other = await svc.stub.CreateGame(REQUEST, metadata=keyed(BETA_KEY))
            assert not other.replayed
            assert other.game.game_id != game_id
            assert not {s.token for s in other.seats} & set(tokens.values())
            response = await svc.http.post("/v1/games", json=BODY, headers={"x-api-key": BETA_KEY})
            assert response.json()["game"]["gameId"] == other.game.game_id  # beta's own retry
            for token in tokens.values():
                assert token not in response.text

            again = await svc.stub.CreateGame(REQUEST, metadata=keyed(ACME_KEY))
            assert again.replayed
            assert again.game == first.game
            assert {s.seat: s.token for s in again.seats} == tokens
            response = await svc.http.post("/v1/games", json=BODY, headers={"x-api-key": ACME_KEY})
            body = response.json()
            assert body["replayed"] is True
            assert body["game"]["gameId"] == game_id
            assert {int(s.get("seat", 0)): s["token"] for s in body["seats"]} == tokens

            rotated = await svc.stub.CreateGame(REQUEST, metadata=keyed(ACME_NEW_KEY))
            assert rotated == pb.CreateGameResponse(game=first.game, replayed=True)

            # The recovered tokens are the seats' own.
            for seat, token in tokens.items():
                assert token == seat_token_of(ACME_KEY, game_id, seat)
                view = await svc.stub.GetGame(
                    pb.GetGameRequest(game_id=game_id), metadata=bearer(token)
                )
                assert view.viewer_seat == seat
            at_rest = _stored_bytes(redis_url)
            assert game_id.encode() in at_rest
            for token in [*tokens.values(), *(s.token for s in other.seats)]:
                assert token.encode() not in at_rest
            for key in (ACME_KEY, ACME_NEW_KEY, BETA_KEY):
                assert key.encode() not in at_rest

    run(go())


# ------------------------------------------------------------------ limits


def test_the_live_game_cap_is_shared_by_replicas_and_a_finished_game_frees_its_place(
    redis_url: str,
) -> None:
    """tenant_max_live_games=2 over two replicas sharing one Redis: the third
    game in progress is RESOURCE_EXHAUSTED TOO_MANY_GAMES (HTTP 429 with
    Retry-After, the cap in the message and metadata) on either replica and
    transport, and creates nothing; another tenant is not held by it; the
    same key's retry of a counted game is answered; once a game is played to
    its end, a new one is created."""

    async def go() -> None:
        settings = tenant_settings(tenant_max_live_games=2)
        async with (
            instance(RedisStore(redis_url), settings) as a,
            instance(RedisStore(redis_url), settings) as b,
        ):
            create = pb.CreateGameRequest(players=people(2), ruleset=SHORT)
            first = await a.stub.CreateGame(create, metadata=keyed(ACME_KEY))
            await b.stub.CreateGame(REQUEST, metadata=keyed(ACME_KEY))
            code, reason, meta = await expect_error(
                lambda: a.stub.CreateGame(create, metadata=keyed(ACME_KEY))
            )
            assert (code, reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_GAMES")
            assert meta["maxLiveGames"] == "2"
            assert int(meta["retryAfterSeconds"]) >= 1
            response = await b.http.post(
                "/v1/games", json={"players": [{}, {}]}, headers={"x-api-key": ACME_KEY}
            )
            assert status_reason(response) == (429, "TOO_MANY_GAMES")
            assert int(response.headers["retry-after"]) >= 1
            assert "2 games in progress" in response.json()["message"]
            # A retry of a game already counted is no new game: answered.
            again = await a.stub.CreateGame(REQUEST, metadata=keyed(ACME_KEY))
            assert again.replayed
            # Another tenant has its own count.
            await b.stub.CreateGame(create, metadata=keyed(BETA_KEY))

            tokens = {s.seat: s.token for s in first.seats}
            final = await play_grpc(b.stub, first.game.game_id, tokens)
            assert final.status == pb.GAME_STATUS_FINISHED
            third = await a.stub.CreateGame(create, metadata=keyed(ACME_KEY))
            assert third.game.game_id
            code, reason, _ = await expect_error(
                lambda: b.stub.CreateGame(create, metadata=keyed(ACME_KEY))
            )
            assert reason == "TOO_MANY_GAMES"

    run(go())


def test_the_per_tenant_create_rate_is_shared_by_replicas(redis_url: str) -> None:
    """tenant_create_rate=1, burst 2: a tenant's third CreateGame within a
    second, on either replica, is RESOURCE_EXHAUSTED RATE_LIMITED (HTTP 429
    with Retry-After) and creates nothing; another tenant is not held; a
    second later the tenant may create again."""

    async def go() -> None:
        settings = tenant_settings(tenant_create_rate=1, tenant_create_burst=2)
        async with (
            instance(RedisStore(redis_url), settings) as a,
            instance(RedisStore(redis_url), settings) as b,
        ):
            create = pb.CreateGameRequest(players=people(2), ruleset=SHORT, request_id="r")
            await a.stub.CreateGame(create, metadata=keyed(ACME_KEY))
            await b.stub.CreateGame(
                pb.CreateGameRequest(players=people(2)), metadata=keyed(ACME_KEY)
            )
            refused = pb.CreateGameRequest(players=people(3), request_id="refused")
            code, reason, meta = await expect_error(
                lambda: a.stub.CreateGame(refused, metadata=keyed(ACME_KEY))
            )
            assert (code, reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED")
            assert int(meta["retryAfterSeconds"]) >= 1
            assert meta["tenant"] == "acme"
            response = await b.http.post(
                "/v1/games",
                json=json_format.MessageToDict(refused),
                headers={"x-api-key": ACME_KEY},
            )
            assert status_reason(response) == (429, "RATE_LIMITED")
            assert int(response.headers["retry-after"]) >= 1
            await a.stub.CreateGame(refused, metadata=keyed(BETA_KEY))
            await asyncio.sleep(1.1)  # one token back
            created = await b.stub.CreateGame(refused, metadata=keyed(ACME_KEY))
            assert not created.replayed  # the refused request had created nothing

    run(go())


def test_a_create_refused_after_it_was_counted_gives_its_place_back(redis_url: str) -> None:
    """The place under the cap is taken before the bots' first turns are
    played; a CreateGame refused there (the bot turns over bot_cpu_limit:
    INVALID_ARGUMENT, nothing stored) gives it back, so a cap of one still
    admits the next game, and only one."""

    async def go() -> None:
        strict = {"bot_cpu_limit": 1e-9}
        players = [pb.Player(bot=pb.BOT_LEVEL_GREEDY), pb.Player(display_name="Ann")]
        async with (
            instance(RedisStore(redis_url), Settings(bot_processes=0, **strict)) as open_svc,
            instance(
                RedisStore(redis_url), tenant_settings(tenant_max_live_games=1, **strict)
            ) as svc,
        ):
            # A deal where the bot moves first: its turn is over the CPU limit.
            for n in range(100):
                request = pb.CreateGameRequest(players=players, ruleset=SHORT, seed=f"bot{n}")
                try:
                    await open_svc.stub.CreateGame(request)
                except grpc.aio.AioRpcError:
                    break
            else:
                raise AssertionError("no deal of 100 lets the bot begin")
            code, reason, meta = await expect_error(
                lambda: svc.stub.CreateGame(request, metadata=keyed(ACME_KEY))
            )
            assert (code, reason, "limit" in meta) == (
                grpc.StatusCode.INVALID_ARGUMENT,
                "INVALID_ARGUMENT",
                True,
            )
            people_only = pb.CreateGameRequest(players=people(2), ruleset=SHORT)
            await svc.stub.CreateGame(people_only, metadata=keyed(ACME_KEY))
            _, reason, _ = await expect_error(
                lambda: svc.stub.CreateGame(people_only, metadata=keyed(ACME_KEY))
            )
            assert reason == "TOO_MANY_GAMES"

    run(go())
