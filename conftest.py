"""Collection for the whole tree: doctests of compiled engine modules.

With the compiled engine (engine.native), a module built by mypyc has no
Python source behind its functions: its doctests are not collected (pytest
would import the compiled module under the source file's name and refuse
the mismatch). They run in the pure-Python pass of ``make test``
(``RAILYARD_ENGINE=pure``), which imports every module from its source.
"""

from __future__ import annotations

import json
from pathlib import Path

import engine.native

_ROOT = Path(__file__).resolve().parent


def _compiled_sources() -> frozenset[Path]:
    if not engine.native.COMPILED:
        return frozenset()
    modules = json.loads(engine.native.MANIFEST.read_text())["modules"]
    sources = _ROOT / "engine" / "src"
    return frozenset(sources.joinpath(*m.split(".")).with_suffix(".py") for m in modules)


_COMPILED = _compiled_sources()


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    return True if collection_path.resolve() in _COMPILED else None
