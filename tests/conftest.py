"""Shared test settings: hypothesis profiles (CI runs the default one)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


# --- Redis: one throw-away server per pytest process (each xdist worker has its own) ---


@pytest.fixture(scope="session")
def redis_server():
    """A real redis-server on a free loopback port for the whole session."""
    from tests.redis_harness import RedisServer

    server = RedisServer()
    yield server
    server.close()


@pytest.fixture
def redis_url(redis_server):
    """The session's server, running and empty (FLUSHALL) for this test."""
    redis_server.start()  # in case a test left it stopped
    redis_server.flushall()
    return redis_server.url


# A service test over both stores: ``url`` is None for the in-process store,
# a real redis-server's URL for Redis.
@pytest.fixture(params=["memory", "redis"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def url(store_kind: str, request: pytest.FixtureRequest) -> str | None:
    return str(request.getfixturevalue("redis_url")) if store_kind == "redis" else None
