"""``mypyc_attr`` where mypy-extensions is installed, else a no-op.

The decorator only tells mypyc how to compile a class; run as pure Python it
does nothing, so the engine needs no package at run time (railyard-engine
has no dependency). mypyc, which has mypy-extensions in its build, sees the
real one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

try:
    from mypy_extensions import mypyc_attr
except ImportError:  # pragma: no cover - a venv of the engine alone

    def mypyc_attr(*attrs: str, **kwattrs: object) -> Callable[[T], T]:
        def keep(cls: T) -> T:
            return cls

        return keep


__all__ = ["mypyc_attr"]
