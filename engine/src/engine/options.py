"""What every game's rules type shares: reading options by name (CL-SET-1).

Each game has its own frozen rules type with only its own options
(``engine.game.Rules``); they all take options the same way, through
:func:`coerce_options`: an option the game does not have is refused naming
the option and the game, and an enum option also takes its value string.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from enum import StrEnum
from typing import Any

from engine.errors import RulesetError


def coerce_options(
    game: str,
    options: Mapping[str, Any],
    names: Collection[str],
    enums: Mapping[str, type[StrEnum]],
    rule: str | None,
) -> dict[str, Any]:
    """``options`` checked against ``game``'s option ``names`` (``preset`` and
    ``game`` pass too), each enum option as its member; refusals carry ``rule``."""
    out: dict[str, Any] = {}
    for name, value in options.items():
        if name not in names and name not in ("preset", "game"):
            raise RulesetError(
                f"'{name}' is not an option of {game}; its options are " + ", ".join(names),
                rule=rule,
            )
        enum = enums.get(name)
        if enum is not None and not isinstance(value, enum):
            try:
                value = enum(value)
            except ValueError:
                raise RulesetError(
                    f"{name} must be one of {[e.value for e in enum]}, not {value!r}", rule=rule
                ) from None
        out[name] = value
    return out
