"""The README's quick start and layout, and the docs' Python examples,
are as they say."""

from __future__ import annotations

import contextlib
import io
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The docs pages whose Python examples are run as written.
EXAMPLE_PAGES = (ROOT / "docs" / "engine.md", ROOT / "docs" / "bots.md")


@pytest.mark.parametrize("page", EXAMPLE_PAGES, ids=lambda p: p.name)
def test_docs_python_examples_run(page: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    assert blocks, f"{page.name} has no python example"
    for block in blocks:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            exec(compile(block, str(page), "exec"), {})
        assert "TilePlayed" in out.getvalue()


def test_readme_quick_start_runs_as_typed(tmp_path: Path, redis_url: str) -> None:
    """The shell quick start works pasted as it is, against a running
    service on the port given as PORT: it creates a game, captures its id,
    token and version, lists the legal moves, plays one at that version,
    shows the seat's view and watches."""
    import subprocess

    from tests.test_service_resilience import serve

    section = README.read_text().split("## The API in one minute", 1)[1]
    (script,) = re.findall(r"```sh\n(.*?)```", section, re.S)[:1]
    # The port is the script's one setting, defaulting to make run's.
    assert "PORT=${PORT:-8080}" in script
    with serve(tmp_path, redis_url, "quickstart") as server:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            # python3 as the user has it: this interpreter's, then the system's.
            env={
                "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
                "PORT": str(server.http_port),
            },
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert done.stderr == "", done.stderr
    created = re.search(r"^game (\w+), version (\d+), seat (\d+) to move$", out, re.M)
    assert created, out
    assert re.search(r"^\['[^\]]+'\]$", out, re.M), out  # the legal moves' notations
    events = re.search(r"^events: \[(.*)\]$", out, re.M)
    assert events, out
    # The move played, then the bot's turn inside the same request.
    assert re.match(r"'(tilePlayed|tileDrawn|passed)'", events[1]), out
    assert "'turnStarted'" in events[1], out
    moved = re.search(r"^now at version (\d+)$", out, re.M)
    assert moved, out
    assert int(moved[1]) > int(created[2]), out
    assert f'"gameId": "{created[1]}"' in out  # the view
    assert '"hand": [' in out  # with the seat's own hand
    assert '"viewerSeat": 0' in out  # seat 0's view, not a spectator's
    assert "data: " in out  # the SSE stream


def test_the_layout_shows_every_folder_of_the_service_once() -> None:
    """README's Layout draws service/ as a tree, one line a folder: every
    package folder under service/ is there once, and nothing that is not."""
    text = README.read_text()
    tree = text[text.index("The service's folders:") :]
    tree = tree[tree.index("```") + 3 :]
    tree = tree[: tree.index("```")]
    drawn = [line.split()[0] for line in tree.strip().splitlines()]
    service = ROOT / "service"
    folders = sorted(
        f"{p.parent.relative_to(ROOT).as_posix()}/"
        for p in service.rglob("__init__.py")
        if "__pycache__" not in p.parts
    )
    assert sorted(drawn) == folders
    assert len(drawn) == len(set(drawn))


def test_relative_links_of_the_readme_and_docs_resolve() -> None:
    """The README is short and sends the rest to docs/: every relative link
    there and between the docs pages names a file or folder that exists."""
    pages = [README, *sorted((ROOT / "docs").rglob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken
