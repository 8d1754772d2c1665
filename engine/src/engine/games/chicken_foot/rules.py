"""Chicken Foot's options (RULES.md CL-CF-1) and its preset.

Chicken Foot is played by the Mexican Train engine (see
:mod:`engine.games.chicken_foot.game`), so its rules are also a Mexican
Train :class:`~engine.games.mexican_train.rules.Ruleset`
(:meth:`ChickenFootRules.engine_ruleset`): the station set aside, the lines
as Mexican trains, every double a chicken foot that blocks. But a Chicken
Foot ruleset carries only Chicken Foot's options, and refuses any other by
name (CL-SET-1).

Readings where RULES.md leaves a choice:

* The hand-size table of CL-CF-1 (2-3 players 15, 4 12, 5 10, 6 8, 7 7,
  8 6) is given for double-nine; it is used for every set, and a deal that
  does not fit (the station set aside) is refused, naming the numbers
  (MT-DEAL-2). An explicit ``hand_size`` is always allowed where it fits.
* ``rounds`` shortens the game from the top: round ``r`` is played with
  the station ``set_max - r + 1`` (MT-RND-1).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from engine.errors import DealDoesNotFitError, RulesetError
from engine.games.mexican_train.rules import (
    DOUBLE_BLANK_VALUES,
    DoubleAnswer,
    EnginePlacement,
    FirstPlayer,
    FirstTurn,
    Ruleset,
)
from engine.options import coerce_options
from engine.tiles import MAX_SET, MIN_SET, set_size

GAME: Final = "chicken_foot"
#: CL-CF-1: 2 to 8 players.
MIN_PLAYERS: Final = 2
MAX_PLAYERS: Final = 8
#: CL-CF-1: the station's lines.
CENTER_LINES: Final = (6, 4)
#: CL-CF-1: hand sizes by player count.
HAND_SIZES: Final = {2: 15, 3: 15, 4: 12, 5: 10, 6: 8, 7: 7, 8: 6}
#: The options of Chicken Foot (CL-CF-1; API.md), by their snake_case names.
OPTIONS: Final = (
    "set_max",
    "hand_size",
    "rounds",
    "first_player",
    "double_blank_value",
    "center_lines",
)
_ENUMS: Final[dict[str, type[StrEnum]]] = {"first_player": FirstPlayer}


@dataclass(frozen=True)
class ChickenFootRules:
    """Every option of CL-CF-1; the defaults are the ``chicken_foot_game`` preset.

    >>> r = ChickenFootRules().resolve(4)
    >>> r.set_max, r.hand_size, r.rounds, r.center_lines, r.double_blank_value
    (9, 12, 10, 6, 50)
    >>> try:
    ...     ChickenFootRules().with_options(knock_rule="penalty")
    ... except RulesetError as exc:
    ...     print(exc.rule, str(exc).split(";")[0])
    CL-SET-1 'knock_rule' is not an option of chicken_foot
    """

    preset: str = "chicken_foot_game"
    game: str = GAME
    #: CL-CF-1: double-nine by default, any set from 6 to 18.
    set_max: int = 9
    #: CL-CF-1: ``None`` takes the table by player count.
    hand_size: int | None = None
    #: MT-RND-1: one round per double from the top down; fewer shorten the game.
    rounds: int | None = None
    #: MT-ENG-1: who starts round 1 (later rounds: the next seat).
    first_player: FirstPlayer = FirstPlayer.DRAW
    #: T-3: what 0-0 counts in a hand (50 here, CL-CF-1).
    double_blank_value: int = 50
    #: CL-CF-1: the station's lines, 6 or 4.
    center_lines: int = 6

    def __post_init__(self) -> None:
        if self.game != GAME:
            raise RulesetError(f"game {self.game!r} is not chicken_foot", rule="CL-SET-1")
        if self.preset != "chicken_foot_game":
            raise RulesetError(
                f"unknown preset {self.preset!r} of chicken_foot; known: chicken_foot_game",
                rule="CL-SET-1",
            )
        set_max = _whole("set_max", self.set_max)
        if not MIN_SET <= set_max <= MAX_SET:
            raise RulesetError(
                f"set_max must be from {MIN_SET} to {MAX_SET}, not {set_max}", rule="CL-CF-1"
            )
        if self.hand_size is not None and _whole("hand_size", self.hand_size) < 1:
            raise RulesetError(
                f"hand_size must be at least 1, not {self.hand_size}", rule="CL-CF-1"
            )
        if self.rounds is not None and not 1 <= _whole("rounds", self.rounds) <= set_max + 1:
            raise RulesetError(
                f"rounds must be from 1 to {set_max + 1} (one per double from "
                f"{set_max}-{set_max} down to 0-0), not {self.rounds}",
                rule="MT-RND-1",
            )
        if not isinstance(self.first_player, FirstPlayer):
            raise RulesetError(
                f"first_player must be one of {[e.value for e in FirstPlayer]}", rule="MT-ENG-1"
            )
        if _whole("double_blank_value", self.double_blank_value) not in DOUBLE_BLANK_VALUES:
            raise RulesetError(
                f"double_blank_value must be 0, 25 or 50, not {self.double_blank_value}",
                rule="T-3",
            )
        if _whole("center_lines", self.center_lines) not in CENTER_LINES:
            raise RulesetError(
                f"center_lines must be 6 or 4, not {self.center_lines}", rule="CL-CF-1"
            )

    @property
    def options(self) -> tuple[str, ...]:
        """Chicken Foot's option names (CL-SET-1)."""
        return OPTIONS

    def with_options(self, **options: Any) -> ChickenFootRules:
        """A copy with ``options`` replaced (``first_player`` also takes its
        value string); an option Chicken Foot does not have is refused by name."""
        changes = _coerce(options)
        if changes.get("game", GAME) != GAME:
            raise RulesetError(
                f"the game is chicken_foot; take {changes['game']}'s own preset to play it",
                rule="CL-SET-1",
            )
        return dataclasses.replace(self, **changes)

    def resolve(self, players: int) -> ChickenFootRules:
        """The rules for ``players``: the hand size and the rounds filled in,
        or the error that says why they cannot be dealt (CL-CF-1, MT-DEAL-2)."""
        if not isinstance(players, int) or isinstance(players, bool):
            raise RulesetError(f"players is a whole number, not {players!r}", rule="CL-CF-1")
        return _resolve(self, players)

    def _resolve(self, players: int) -> ChickenFootRules:
        if not MIN_PLAYERS <= players <= MAX_PLAYERS:
            raise RulesetError(
                f"Chicken Foot has {MIN_PLAYERS} to {MAX_PLAYERS} players, not {players}",
                rule="CL-CF-1",
            )
        hand = HAND_SIZES[players] if self.hand_size is None else self.hand_size
        dealable = set_size(self.set_max) - 1  # the station is set aside
        if players * hand > dealable:
            raise DealDoesNotFitError(
                f"{players} players x {hand} tiles = {players * hand} is more than the "
                f"{dealable} tiles a double-{self.set_max} set deals with its station "
                "set aside",
                rule="MT-DEAL-2",
            )
        rounds = self.set_max + 1 if self.rounds is None else self.rounds
        return dataclasses.replace(self, hand_size=hand, rounds=rounds)

    def engine_ruleset(self) -> Ruleset:
        """The Mexican Train options these rules play as (resolved rules only):
        the station set aside (MT-ENG-1), the lines as Mexican trains, every
        double a blocking chicken foot (MT-DBL-3, MT-DBL-7), a double as the
        last tile a domino (MT-END-2)."""
        if self.hand_size is None or self.rounds is None:
            raise RulesetError("resolve the rules for a player count first", rule="CL-CF-1")
        return _engine_ruleset(self)

    def to_dict(self) -> dict[str, Any]:
        """Every option by its snake_case name; enums as their value strings."""
        return {
            f.name: (v.value if isinstance(v, StrEnum) else v)
            for f in dataclasses.fields(self)
            for v in (getattr(self, f.name),)
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChickenFootRules:
        """The inverse of :meth:`to_dict`; unknown names are refused."""
        return cls(**_coerce(data))


@functools.lru_cache(maxsize=256)
def _resolve(rules: ChickenFootRules, players: int) -> ChickenFootRules:
    return rules._resolve(players)


@functools.lru_cache(maxsize=256)
def _engine_ruleset(rules: ChickenFootRules) -> Ruleset:
    return Ruleset(
        preset="standard",
        set_max=rules.set_max,
        hand_size=rules.hand_size,
        rounds=rules.rounds,
        first_engine=rules.set_max,
        engine_placement=EnginePlacement.SET_ASIDE,
        first_player=rules.first_player,
        first_turn=FirstTurn.SINGLE,
        mexican_trains=rules.center_lines,
        open_doubles_block=True,
        double_answer=DoubleAnswer.CHICKEN_FOOT,
        end_on_double=True,
        double_blank_value=rules.double_blank_value,
    )


def _whole(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise RulesetError(f"{name} must be a whole number, not {value!r}", rule="CL-SET-1")
    return value


def _coerce(options: Mapping[str, Any]) -> dict[str, Any]:
    return coerce_options(GAME, options, OPTIONS, _ENUMS, "CL-SET-1")


#: API.md ListRulesets: Chicken Foot's preset.
PRESETS: Final[dict[str, ChickenFootRules]] = {"chicken_foot_game": ChickenFootRules()}
