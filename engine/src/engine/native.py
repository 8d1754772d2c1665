"""Whether the engine runs compiled (mypyc) or as pure Python, decided once at import.

``setup.py`` compiles every engine module but this one, ``errors.py`` and the
packages' ``__init__`` files when a C compiler is there, and writes
``engine/compiled.json`` with each compiled module's source hash. The
compiled modules are used when:

* ``RAILYARD_ENGINE`` is not ``pure`` (``auto``, the default, or
  ``compiled``, which fails the import when they cannot be used), and
* every module of the manifest has its compiled file and its source still
  hashes as it did at the build.

Otherwise every ``engine.*`` module is imported from its source (a finder
ahead of the others that knows only source files), so a module edited since
the last build never runs as its stale compiled copy, and the two are never
mixed. The pure-Python engine is the reference; both pass the same tests.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import json
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Final

_HERE: Final = Path(__file__).resolve().parent
MANIFEST: Final = _HERE / "compiled.json"
_SUFFIXES: Final = tuple(importlib.machinery.EXTENSION_SUFFIXES)


class _SourceOnly(importlib.abc.MetaPathFinder):
    """Finds ``engine.*`` modules among source files only (never a compiled one)."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("engine.") or path is None:
            return None
        for entry in path:
            finder = importlib.machinery.FileFinder(
                entry,
                (importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES),
            )
            spec = finder.find_spec(fullname, target)
            if spec is not None:
                return spec
        return None


def _compiled_file(module: str) -> Path | None:
    stem = _HERE.parent.joinpath(*module.split("."))
    for suffix in _SUFFIXES:
        candidate = stem.with_name(stem.name + suffix)
        if candidate.exists():
            return candidate
    return None


def _decide() -> tuple[bool, str, bool]:
    """(compiled, why, stale): whether the compiled modules can be used, in
    words, and whether a build is there but out of date (worth a warning)."""
    mode = os.environ.get("RAILYARD_ENGINE", "auto")
    if mode not in ("auto", "pure", "compiled"):
        raise ImportError(f"RAILYARD_ENGINE is auto, pure or compiled, not {mode!r}")
    if mode == "pure":
        return False, "pure Python (RAILYARD_ENGINE=pure)", False
    try:
        manifest = json.loads(MANIFEST.read_text())
        modules: dict[str, str] = manifest["modules"]
    except FileNotFoundError:
        return False, "pure Python (not compiled)", False
    except (ValueError, KeyError, TypeError) as exc:
        return False, f"pure Python ({MANIFEST.name} is unreadable: {exc!r})", True
    for module, digest in sorted(modules.items()):
        source = _HERE.parent.joinpath(*module.split(".")).with_suffix(".py")
        if _compiled_file(module) is None:
            return False, f"pure Python ({module} has no compiled file: rebuild it)", True
        try:
            current = hashlib.sha256(source.read_bytes()).hexdigest()
        except FileNotFoundError:
            continue  # an installed wheel may ship the compiled module alone
        if current != digest:
            why = (
                f"pure Python ({source.relative_to(_HERE.parent)} changed since the "
                "compiled build: `make` or scripts/build-engine compiles it again)"
            )
            return False, why, True
    return True, "compiled (mypyc)", False


COMPILED, DESCRIPTION, _STALE = _decide()
"""Whether the compiled modules are in use, and why (or why not) in words."""

if not COMPILED:
    if os.environ.get("RAILYARD_ENGINE") == "compiled":
        raise ImportError(f"RAILYARD_ENGINE=compiled, but the engine runs {DESCRIPTION}")
    if _STALE:
        warnings.warn(f"railyard engine: {DESCRIPTION}", RuntimeWarning, stacklevel=2)
    # Compiled files may be there (stale, or set aside): never import them.
    sys.meta_path.insert(0, _SourceOnly())
