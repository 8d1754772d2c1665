"""The optional compiled engine (engine/setup.py, scripts/build-engine, engine.native).

``make unit`` runs the engine's tests twice: against the build in the tree
(compiled when a C compiler is there) and with ``RAILYARD_ENGINE=pure``.
These tests check that each pass really runs what it says, that an edited
module never runs as its stale compiled copy, that the build falls back to
pure Python without a compiler, and that a wheel holds the whole engine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import engine
import engine.native

ROOT = Path(__file__).resolve().parent.parent
_PY = sys.executable


def _engine_modules() -> dict[str, str]:
    return {
        name: str(getattr(module, "__file__", "") or "")
        for name, module in sys.modules.items()
        if name == "engine" or name.startswith("engine.")
    }


def _run(
    code: str, *, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "RAILYARD_ENGINE"}
    full_env["PYTHONPATH"] = str(cwd)
    full_env.update(env or {})
    return subprocess.run(
        [_PY, "-c", code], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=120
    )


def test_this_pass_runs_the_engine_it_says() -> None:
    engine.new_game("standard", players=2, seed="mode")  # every game module imported
    files = _engine_modules()
    mode = os.environ.get("RAILYARD_ENGINE", "auto")
    if mode == "pure" or not engine.native.MANIFEST.exists():
        assert not engine.native.COMPILED, engine.native.DESCRIPTION
        compiled = [n for n, f in files.items() if not f.endswith(".py")]
        assert not compiled, f"pure Python, yet compiled modules were imported: {compiled}"
        return
    # A build is in the tree and this pass did not ask for pure Python:
    # `make` rebuilt it before the tests, so it is current and in use.
    assert engine.native.COMPILED, engine.native.DESCRIPTION
    assert files["engine.games.mexican_train.game"].endswith(tuple(engine.native._SUFFIXES))
    assert files["engine.games.line.game"].endswith(tuple(engine.native._SUFFIXES))
    assert files["engine.errors"].endswith(".py")  # left interpreted (engine/setup.py)
    assert files["engine.checks"].endswith(".py")


@pytest.fixture(scope="module")
def built_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the tree's compiled engine (sources, compiled files, manifest)."""
    # `make` builds it wherever a C compiler is: fail, saying so, rather than skip.
    assert engine.native.MANIFEST.exists(), (
        "no compiled engine in the tree: `make` compiles it with mypyc when a C compiler is "
        "there (scripts/build-engine); install one (gcc) or set CC, then run `make engine`"
    )
    where = tmp_path_factory.mktemp("built")
    shutil.copytree(
        ROOT / "engine" / "src" / "engine",
        where / "engine",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return where


_PROBE = (
    "import engine, engine.native as n, engine.games.line.game as g; "
    "print(n.COMPILED, g.__file__.endswith('.py'))"
)


def test_a_copy_of_the_build_runs_compiled(built_copy: Path) -> None:
    done = _run(_PROBE, cwd=built_copy)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]


def test_a_source_edited_since_the_build_runs_from_source_with_a_warning(
    tmp_path: Path, built_copy: Path
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(built_copy, tree)
    source = tree / "engine" / "tiles.py"
    source.write_text(source.read_text() + "\n# edited after the build\n")
    done = _run(_PROBE, cwd=tree)
    assert done.returncode == 0, done.stderr
    # Every module from its source, not only the edited one: never a mix.
    assert done.stdout.split() == ["False", "True"]
    assert "engine/tiles.py changed since the compiled build" in done.stderr
    refused = _run(_PROBE, cwd=tree, env={"RAILYARD_ENGINE": "compiled"})
    assert refused.returncode != 0
    assert "RAILYARD_ENGINE=compiled, but the engine runs pure Python" in refused.stderr


def test_pure_is_chosen_by_the_environment(built_copy: Path) -> None:
    done = _run(_PROBE, cwd=built_copy, env={"RAILYARD_ENGINE": "pure"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]
    assert not done.stderr  # asked for: no warning
    bad = _run(_PROBE, cwd=built_copy, env={"RAILYARD_ENGINE": "fast"})
    assert "RAILYARD_ENGINE is auto, pure or compiled, not 'fast'" in bad.stderr


def _source_tree(where: Path, *folders: str) -> Path:
    """A copy of the sources of ``folders`` (engine/, the service's files) at
    ``where``, without a build."""
    where.mkdir(parents=True, exist_ok=True)
    for name in folders:
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name,
                where / name,
                ignore=shutil.ignore_patterns("__pycache__", "*.so", "compiled.json"),
            )
        else:
            shutil.copy(ROOT / name, where / name)
    return where


def test_without_a_compiler_the_build_is_pure_python(tmp_path: Path) -> None:
    tree = _source_tree(tmp_path, "engine") / "engine"
    env = {**os.environ, "CC": str(tmp_path / "no-such-cc")}
    build = [_PY, "setup.py", "--quiet", "build_ext", "--inplace"]
    auto = subprocess.run(
        build, cwd=tree, env={**env, "RAILYARD_MYPYC": "auto"}, capture_output=True, text=True
    )
    assert auto.returncode == 0, auto.stderr
    assert "no C compiler found: the engine is pure Python" in auto.stderr
    assert not list(tree.rglob("*.so"))
    assert not (tree / "src" / "engine" / "compiled.json").exists()
    forced = subprocess.run(
        build, cwd=tree, env={**env, "RAILYARD_MYPYC": "1"}, capture_output=True, text=True
    )
    assert forced.returncode != 0
    assert "RAILYARD_MYPYC=1 but no C compiler was found" in forced.stderr


def _wheel(tree: Path, out: Path) -> set[str]:
    done = subprocess.run(
        [
            _PY,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            out,
            tree,
        ],
        env={**os.environ, "RAILYARD_MYPYC": "0"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = out.glob("*.whl")
    return set(zipfile.ZipFile(wheel).namelist())


def test_the_wheels_hold_every_engine_and_service_module(tmp_path: Path) -> None:
    """A wheel once shipped engine/ without its games (a fixed package list)."""
    engine_tree = _source_tree(tmp_path / "e", "engine") / "engine"
    sources = engine_tree / "src"
    wanted = {p.relative_to(sources).as_posix() for p in sources.rglob("*.py")}
    shipped = _wheel(engine_tree, tmp_path / "engine-wheel")
    assert wanted - shipped == set()
    assert "engine/py.typed" in shipped
    assert not [name for name in shipped if name.startswith("setup")]

    service_tree = _source_tree(tmp_path / "s", "pyproject.toml", "README.md", "LICENSE", "service")
    wanted = {p.relative_to(service_tree).as_posix() for p in service_tree.rglob("*.py")}
    shipped = _wheel(service_tree, tmp_path / "service-wheel")
    assert wanted - shipped == set()
    assert "service/transports/http/web/index.html" in shipped
    assert not [name for name in shipped if name.startswith("engine/")]
