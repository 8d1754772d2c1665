"""The four distributions of this repository, as a user installs them.

- railyard-engine (``engine/``): no dependency; it plays a game in a venv
  holding nothing else.
- railyard-api (``api/python/``): the generated messages and stubs, shared.
- railyard-client (``clients/python/``): with ``[bots]``, ``railyard-bot
  --level expert`` plays a seat to the end of a game.
- railyard (the root): ``pip install .`` works, and serves that game.

Each wheel is built from this tree and installed into its own fresh venv
(dependencies from the package index, at requirements.lock's versions); and
no import crosses between the client and the service (nor from the engine
or the API into either).
"""

from __future__ import annotations

import ast
import json
import os
import re
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

#: Package -> the folder of its sources, and the packages it may not import.
FORBIDDEN: dict[str, tuple[Path, set[str]]] = {
    "engine": (ROOT / "engine" / "src" / "engine", {"service", "railyard_client", "railyard_api"}),
    "railyard_api": (ROOT / "api" / "python" / "railyard_api", {"service", "railyard_client"}),
    "railyard_client": (ROOT / "clients" / "python" / "railyard_client", {"service"}),
    "service": (ROOT / "service", {"railyard_client"}),
}


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, top-level package) of every import in ``path``, wherever it is
    (a function's lazy import included)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module.split(".")[0]


def test_no_import_between_the_client_and_the_service() -> None:
    crossing = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for package, (folder, forbidden) in FORBIDDEN.items()
        for path in sorted(folder.rglob("*.py"))
        for line, name in _imports(path)
        if name in forbidden
    ]
    assert crossing == []


def test_the_import_check_sees_an_import() -> None:
    """The walk above finds a crossing import, lazy ones included."""
    probe = ROOT / "build" / "probe_import.py"
    probe.parent.mkdir(exist_ok=True)
    probe.write_text("def f():\n    from service.app import GameApp\n")
    try:
        assert list(_imports(probe)) == [(2, "service")]
    finally:
        probe.unlink()


def test_the_packages_share_one_version_the_changelog_names() -> None:
    """The four are versioned together (and require each other at that
    version); the changelog's newest release is that version."""
    projects = {
        folder: tomllib.loads((ROOT / folder / "pyproject.toml").read_text())["project"]
        for folder in (".", "engine", "api/python", "clients/python")
    }
    versions = {project["version"] for project in projects.values()}
    assert len(versions) == 1, versions
    (version,) = versions
    ours = re.compile(r"(railyard-[a-z]+)(\[[a-z]+\])?==(.+)")
    for project in projects.values():
        requirements = [
            *project.get("dependencies", []),
            *(r for extra in project.get("optional-dependencies", {}).values() for r in extra),
        ]
        for requirement in requirements:
            found = ours.fullmatch(requirement)
            if requirement.startswith("railyard"):
                assert found, requirement
                assert found.group(3) == version, requirement
    # The newest release (Keep a Changelog's "Unreleased" above it gathers
    # what the next one will hold).
    newest = re.search(
        r"^## \[(?!Unreleased\])([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(), re.M
    )
    assert newest is not None
    assert newest.group(1) == version


# ------------------------------------------------------------------ wheels


def _run(
    *argv: str | Path, cwd: Path = ROOT, timeout: float = 600, env: dict[str, str] | None = None
) -> str:
    done = subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, f"{argv}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheels of the engine (pure Python), the API and the client."""
    out = tmp_path_factory.mktemp("wheels")
    for folder in ("engine", "api/python", "clients/python"):
        # The engine pure: the mypyc build is tests/test_engine_build.py's.
        _run(PY, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
             "-w", out, ROOT / folder, env={"RAILYARD_MYPYC": "0"})  # fmt: skip
    names = sorted(p.name.split("-")[0] for p in out.glob("*.whl"))
    assert names == ["railyard_api", "railyard_client", "railyard_engine"]
    return out


@pytest.fixture(scope="module")
def constraints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """requirements.lock's pins, as constraints of every install here."""
    path = tmp_path_factory.mktemp("constraints") / "constraints.txt"
    path.write_text(_run(PY, ROOT / "scripts" / "lock-constraints", ROOT / "requirements.lock"))
    return path


def _venv(where: Path) -> Path:
    """A fresh venv (no system packages), its Python."""
    _run(PY, "-m", "venv", where)
    return where / "bin" / "python"


def test_the_engine_alone_plays_a_game(wheels: Path, tmp_path: Path) -> None:
    python = _venv(tmp_path / "engine")
    (wheel,) = wheels.glob("railyard_engine-*.whl")
    _run(python, "-m", "pip", "install", "-q", "--no-index", wheel)
    # Nothing but the engine (and what python -m venv puts in every venv).
    installed = json.loads(_run(python, "-m", "pip", "list", "--format", "json"))
    assert {p["name"] for p in installed} - {"pip", "setuptools"} == {"railyard-engine"}
    script = (
        "import engine, engine.bots\n"
        "game = engine.new_game(engine.preset('standard'), 3, 'packages')\n"
        "while not game.over:\n"
        "    view = engine.build_view(game, game.current_seat)\n"
        "    game.apply(engine.bots.choose('greedy', view, game.legal_moves()))\n"
        "print(engine.__file__, engine.build_view(game).winners)\n"
    )
    out = _run(python, "-c", script, cwd=tmp_path)
    assert str(tmp_path / "engine") in out  # the installed engine, not this tree's


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _post(url: str, body: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return dict(json.load(answer))


def test_the_service_and_the_client_with_bots_play_a_game(
    wheels: Path, constraints: Path, tmp_path: Path
) -> None:
    """``pip install .`` at the root (the engine and the API from their
    wheels), its ``railyard serve``; then ``railyard-bot --level expert``
    from a venv of ``railyard-client[bots]`` alone plays the person seat of
    a game against a service bot to its end."""
    index = ["--find-links", wheels, "--constraint", constraints]
    service_python = _venv(tmp_path / "service")
    _run(service_python, "-m", "pip", "install", "-q", *index, ROOT, timeout=900)
    client_python = _venv(tmp_path / "client")
    (client_wheel,) = wheels.glob("railyard_client-*.whl")
    _run(client_python, "-m", "pip", "install", "-q", *index, f"{client_wheel}[bots]", timeout=900)
    installed = json.loads(_run(client_python, "-m", "pip", "list", "--format", "json"))
    assert "railyard" not in {p["name"] for p in installed}  # the client needs no service

    grpc_port, http_port = _free_port(), _free_port()
    argv = ["serve", "--host", "127.0.0.1", "--grpc-port", str(grpc_port)]
    serve = subprocess.Popen(
        [tmp_path / "service" / "bin" / "railyard", *argv, "--http-port", str(http_port)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{http_port}"
    try:
        deadline = time.monotonic() + 60  # a cold start of a fresh venv on a loaded machine
        while True:
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=1) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                if serve.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        created = _post(
            f"{url}/v1/games",
            {
                "players": [{"displayName": "Bot author"}, {"bot": "BOT_LEVEL_GREEDY"}],
                "ruleset": {"preset": "standard", "rounds": 1},
                "seed": "packages",
            },
        )
        game = created["game"]
        seats = created["seats"]
        assert isinstance(game, dict)
        assert isinstance(seats, list)
        seat = ["--game", game["gameId"], f"--token={seats[0]['token']}"]
        bot = subprocess.run(
            [
                tmp_path / "client" / "bin" / "railyard-bot",
                "--url",
                url,
                *seat,
                "--level",
                "expert",
                "--budget",
                "200",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert bot.returncode == 0, bot.stdout[-2000:] + bot.stderr[-2000:]
        with urllib.request.urlopen(f"{url}/v1/games/{game['gameId']}", timeout=10) as answer:
            assert json.load(answer)["status"] == "GAME_STATUS_FINISHED"
    finally:
        serve.terminate()
        serve.wait(30)
