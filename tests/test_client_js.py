"""The JavaScript client (``clients/js``) against the real service.

Starts the service as a replica would run (GameApp over RedisStore, HTTP
served by uvicorn on a free loopback port), then runs the client's own
``node --test`` suite against it with ``RAILYARD_URL`` set, and the example
CLI, which must play a whole game. A second HTTP server over the same store,
with a rate limit, lets the suite see a real 429.

Node is required, not optional: ``scripts/install-node`` (run by ``make
unit``) installs it, and without it these tests fail rather than skip.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from railyard_api import game_service_pb2 as pb
from railyard_api.fields import message_of
from service.app import Caller, GameApp
from service.settings import Settings
from service.store.redis import RedisStore
from service.transports.http.jsonwire import to_dict
from tests.service_helpers import run
from tests.test_service_e2e import http_server

ROOT = Path(__file__).resolve().parent.parent
NODE_MIN_MAJOR = 20
# Generous: the suite takes a few seconds; a hung stream must still end the test.
NODE_TIMEOUT = 120.0


def node() -> str:
    """The node executable, checked to be new enough."""
    path = shutil.which("node")
    assert path is not None, "node is not installed: run ./scripts/install-node (or `make unit`)"
    version = subprocess.run([path, "--version"], capture_output=True, text=True, check=True)
    found = re.fullmatch(r"v(\d+)\..*", version.stdout.strip())
    assert found, f"node --version said {version.stdout!r}"
    assert int(found[1]) >= NODE_MIN_MAJOR, (
        f"node {version.stdout.strip()} is too old; {NODE_MIN_MAJOR}+ is needed"
    )
    return path


@asynccontextmanager
async def services(redis_url: str) -> AsyncIterator[tuple[GameApp, str, str]]:
    """The app, its HTTP URL, and the URL of a rate-limited replica beside it."""
    store = RedisStore(redis_url)
    # No bot worker processes: the tests' bots are random and greedy, which
    # decide on the event loop anyway.
    # bots_only "request": the suite's games of bots only are played by their
    # CreateGame (API.md's Bots; no background loop runs beside these apps).
    app = GameApp(store, Settings(rate_limit=0, bot_processes=0, bots_only="request"))
    limited = GameApp(
        store, Settings(rate_limit=1, rate_burst=3, bot_processes=0, bots_only="request")
    )
    try:
        async with http_server(app) as url, http_server(limited) as limited_url:
            yield app, url, limited_url
    finally:
        app.close()
        limited.close()
        await store.close()


async def run_node(*args: str, env: dict[str, str]) -> tuple[int, str]:
    """Runs node without blocking the event loop that serves it; exit code and output."""
    proc = await asyncio.create_subprocess_exec(
        node(),
        *args,
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), NODE_TIMEOUT)
    except TimeoutError:
        proc.kill()
        out, _ = await proc.communicate()
        raise AssertionError(f"node {' '.join(args)} did not finish:\n{out.decode()}") from None
    assert proc.returncode is not None
    return proc.returncode, out.decode()


def test_js_client_suite(redis_url: str) -> None:
    async def main() -> tuple[int, str]:
        async with services(redis_url) as (_, url, limited_url):
            return await run_node(
                "--test",
                "clients/js/test/",
                env={"RAILYARD_URL": url, "RAILYARD_RATE_LIMITED_URL": limited_url},
            )

    code, output = run(main())
    assert code == 0, output
    # Every test ran: none skipped for want of a service.
    counts = dict(re.findall(r"^# (pass|fail|skipped|cancelled) (\d+)$", output, re.MULTILINE))
    assert counts.get("fail") == "0", output
    assert counts.get("cancelled") == "0", output
    assert counts.get("skipped") == "0", output
    # node counts a skipped describe() block in neither number: look for its mark.
    assert "# SKIP" not in output, output
    assert int(counts.get("pass", "0")) >= 30, output


def test_js_example_plays_a_game(redis_url: str) -> None:
    async def main() -> tuple[int, str, dict[str, Any] | None]:
        async with services(redis_url) as (app, url, _):
            code, output = await run_node(
                "clients/js/examples/play.mjs",
                "--url",
                url,
                "--players",
                "3",
                "--bots",
                "greedy",
                "--rounds",
                "1",
                "--quiet",
                env={},
            )
            found = re.search(r"^game (\w+) over at version \d+", output, re.MULTILINE)
            view = (
                to_dict(message_of(pb.GameView, await app.get_game(found[1], Caller())))
                if found
                else None
            )
            return code, output, view

    code, output, view = run(main())
    assert code == 0, output
    assert view is not None, output
    # The service agrees the game is over, and the script printed its winners.
    assert view["status"] == "GAME_STATUS_FINISHED", output
    names = {p.get("seat", 0): p["displayName"] for p in view["players"]}
    winners = ", ".join(names[s] for s in view["winners"])
    assert f"winners: {winners}; status GAME_STATUS_FINISHED" in output, output


def test_js_example_says_in_one_line_that_the_service_is_down() -> None:
    # A port that nothing listens on: bound, then closed.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    code, output = run(run_node("clients/js/examples/play.mjs", "--url", url, env={}))
    assert code == 1, output
    # One line that says what and where, and no stack trace.
    assert output.strip() == f"play.mjs: cannot reach the service at {url} (ECONNREFUSED)", output
