"""railyard-engine compiled with mypyc, when it can be (everything else is in pyproject.toml).

``RAILYARD_MYPYC`` decides, as black and charset-normalizer build theirs:

* ``auto`` (the default): compiled when mypyc imports and a C compiler is
  found, pure Python otherwise (said in one line);
* ``1``: compiled, and a build that cannot compile fails;
* ``0``: pure Python (the editable install of ``scripts/bootstrap``, where
  ``scripts/build-engine`` compiles in place instead).

The pure-Python engine is the reference: the compiled one is the same source,
and ``make test`` runs the engine's tests against both (``RAILYARD_ENGINE``).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import shlex
import shutil
import sys
import sysconfig
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent

#: Left interpreted (``fnmatch`` patterns):
#:
#: * ``errors.py``: a compiled subclass of an exception loses its class-level
#:   ``reason``;
#: * ``checks.py``: it says what is wrong with a caller's move, where a
#:   compiled function would only raise a ``TypeError`` naming a type;
#: * each game's ``rules.py``: its frozen dataclasses take an option as its
#:   text and coerce it after ``__init__`` (a compiled field refuses what its
#:   type does not say); read once a game, off the hot path;
#: * ``arena.py``: its frozen dataclasses travel to worker processes, and a
#:   compiled frozen dataclass cannot be unpickled (its ``__setstate__``
#:   assigns the fields); it only drives the bots and the games;
#: * ``native.py``: it decides at import whether the compiled modules are used;
#: * ``mypyc_compat.py``: it only finds ``mypyc_attr``, or stands in for it;
#: * the packages' ``__init__`` files, which only re-export.
#:
#: Everything else under ``engine/`` is compiled.
INTERPRETED = (
    "src/engine/errors.py",
    "src/engine/checks.py",
    "src/engine/games/*/rules.py",
    "src/engine/arena.py",
    "src/engine/native.py",
    "src/engine/mypyc_compat.py",
    "*/__init__.py",
)

#: The compiled modules' shared library: ``engine/compiled__mypyc*.so``, inside
#: the package (a top-level one would need the source root on ``sys.path``).
GROUP = "engine.compiled"


def compiled_sources() -> list[str]:
    """Every engine module mypyc compiles, as paths relative to this file."""
    return sorted(
        path.relative_to(HERE).as_posix()
        for path in (HERE / "src" / "engine").rglob("*.py")
        if not any(fnmatch.fnmatch(path.relative_to(HERE).as_posix(), p) for p in INTERPRETED)
    )


def _compiler() -> str | None:
    """The C compiler the build would call, if it is there."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    words = shlex.split(cc)
    return shutil.which(words[0]) if words else None


def _ext_modules() -> list[object]:
    mode = os.environ.get("RAILYARD_MYPYC", "auto")
    if mode not in ("auto", "0", "1"):
        sys.exit(f"RAILYARD_MYPYC is auto, 0 or 1, not {mode!r}")
    if mode == "0":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        if mode == "1":
            raise
        print("railyard: mypyc is not installed: the engine is pure Python", file=sys.stderr)
        return []
    if _compiler() is None:
        if mode == "1":
            sys.exit("railyard: RAILYARD_MYPYC=1 but no C compiler was found (set CC)")
        print("railyard: no C compiler found: the engine is pure Python", file=sys.stderr)
        return []
    # mypyc reads the paths as given, and this folder's pyproject.toml as
    # mypy's configuration (the service's names plugins a build lacks).
    os.chdir(HERE)
    return list(mypycify(compiled_sources(), opt_level="3", group_name=GROUP))


class BuildWithManifest(build_ext):
    """``build_ext``, then ``engine/compiled.json``: each compiled module's
    source hash, which ``engine.native`` checks at import, so a module edited
    since the build runs from its source instead of a stale compiled copy."""

    def run(self) -> None:
        super().run()
        if not self.extensions:
            return
        manifest = {
            "mypyc_group": GROUP,
            "modules": {
                path.removeprefix("src/").removesuffix(".py").replace("/", "."): hashlib.sha256(
                    (HERE / path).read_bytes()
                ).hexdigest()
                for path in compiled_sources()
            },
        }
        root = HERE / "src" if self.inplace else Path(self.build_lib)
        target = root / "engine" / "compiled.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


setup(ext_modules=_ext_modules(), cmdclass={"build_ext": BuildWithManifest})
