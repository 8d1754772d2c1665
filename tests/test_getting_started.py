"""docs/getting-started.md's API walk-through, run as written against a real
``railyard serve``: every curl command of "The API in one minute" in a
shell, and what the page shows of each answer is what the service answers
(its seed deals the game the page shows)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from tests.test_service_resilience import serve

PAGE = Path(__file__).resolve().parents[1] / "docs" / "getting-started.md"


def _section() -> str:
    return PAGE.read_text().split("## The API in one minute", 1)[1].split("\n## ", 1)[0]


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", _section(), re.S)


def _sh(script: str, env: dict[str, str], seconds: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["timeout", str(seconds), "bash", "-euo", "pipefail", "-c", script],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=seconds + 10,
        check=False,
    )


def _run(script: str, env: dict[str, str]) -> Any:
    done = _sh(script, env)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_the_walk_through_answers_as_the_page_shows(tmp_path: Path, redis_url: str) -> None:
    sh = _blocks("sh")
    shown = _blocks("json")
    text = _blocks("text")
    # The page's order: API=, create, ID/TOKEN, legal moves, move, watch, resume.
    api, create, ids, legal, move, watch, resume = sh
    assert api.strip().startswith("API=http://127.0.0.1:8080")
    assert "ID=" in ids
    assert "TOKEN=" in ids
    with serve(tmp_path, redis_url, "getting-started") as server:
        env = {"API": f"http://127.0.0.1:{server.http_port}"}

        created = _run(create, env)
        game = created["game"]
        assert game["status"] == "GAME_STATUS_IN_PROGRESS"
        assert game["currentSeat"] == 0  # (optional: written at 0)
        for name in ("round", "roundsTotal", "engine", "boneyardCount"):
            assert f'"{name}": {json.dumps(game[name])}' in shown[0], name
        assert "version" not in game  # version 0: the bot is seat 1, after you
        assert len(created["seats"]) == 1
        assert "seat" not in created["seats"][0]
        env |= {"ID": game["gameId"], "TOKEN": created["seats"][0]["token"]}

        moves = _run(legal, env)
        notations = [m["notation"] for m in moves["moves"]]
        for notation in re.findall(r'"notation": "([^"]+)"', shown[1]):
            assert notation in notations, (notation, notations)
        assert "version" not in moves

        answer_text = _sh(move, env)
        assert answer_text.returncode == 0, answer_text.stderr
        answer = json.loads(answer_text.stdout)
        page_events = json.loads(shown[2][shown[2].index("[") : shown[2].rindex("]") + 1])
        assert answer["events"] == page_events
        assert answer["game"]["version"] == "2"
        # The same request again: the very answer, nothing applied again.
        again = _sh(move, env)
        assert again.stdout == answer_text.stdout

        # A move at a version that has passed: the 409 body the page shows.
        stale = _sh(
            'curl -s -w "\\n%{http_code}" "$API/v1/games/$ID/moves" '
            '-H "authorization: Bearer $TOKEN" -H "content-type: application/json" '
            """-d '{"move": {"draw": {}}, "expectedVersion": "0"}'""",
            env,
        )
        body, status = stale.stdout.rsplit("\n", 1)
        assert status == "409"
        assert json.loads(body) == json.loads(shown[3])

        # The stream (live until the game ends: cut after a few seconds).
        streamed = _sh(watch, env, seconds=3)
        assert streamed.returncode == 124, streamed.stderr  # cut by timeout, as Ctrl-C
        got = [line for line in streamed.stdout.splitlines() if line.startswith(("id:", "data:"))]
        expected = [line for line in text[0].splitlines() if line.strip()]
        assert len(got) == len(expected), (got, expected)
        for line, page_line in zip(got, expected, strict=True):
            if '"snapshot":' in page_line:
                # (The page's game id is the one it was written with.)
                prefix = re.sub(r'"gameId":"\w+"', f'"gameId":"{env["ID"]}"', page_line)
                assert line.startswith(prefix.split(" ...", 1)[0]), (line, page_line)
            else:
                assert line == page_line

        # Resumed after version 1: the snapshot, then version 2's events.
        resumed = _sh(resume, env, seconds=3)
        data = [
            json.loads(line[len("data: ") :])
            for line in resumed.stdout.splitlines()
            if line.startswith("data: ")
        ]
        assert "snapshot" in data[0]
        assert [e.get("version") for e in data[1:]] == ["2", "2"]
