"""Rulesets as data (RULES.md options), the presets of API.md, and resolution.

A :class:`Ruleset` holds every option of RULES.md section 2. Options a preset
leaves to the player count (``set_max``, ``hand_size``, ``rounds``,
``first_engine``) may be ``None``; :meth:`Ruleset.resolve` fills them for a
player count and refuses what cannot be dealt. A game keeps only the resolved
value, and reads each option in one place.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from engine.errors import DealDoesNotFitError, RulesetError
from engine.options import coerce_options
from engine.tiles import MAX_SET, MIN_SET, set_size

MIN_PLAYERS: Final = 2
MAX_PLAYERS: Final = 14


class HandSizeTable(StrEnum):
    """MT-DEAL-1: which published table gives the hand size."""

    STANDARD = "standard"
    BY_SET = "by_set"
    PUREMCO_DOUBLE9 = "puremco_double9"
    DOUBLE6 = "double6"


class EnginePlacement(StrEnum):
    """MT-ENG-1: how the round's engine reaches the station."""

    SET_ASIDE = "set_aside"
    HOLDER_PLAYS = "holder_plays"


class FirstPlayer(StrEnum):
    """MT-ENG-1: who starts round 1 under ``set_aside``."""

    DRAW = "draw"
    SEAT0 = "seat0"


class FirstTurn(StrEnum):
    """MT-FT-1: one tile, or a chain onto the own train, on a player's first turn."""

    SINGLE = "single"
    CHAIN = "chain"


class DoubleFollowup(StrEnum):
    """MT-DBL-2: where the tile owed for a double may go."""

    ANY_TRAIN = "any_train"
    COVER_OWN = "cover_own"


class DoubleAnswer(StrEnum):
    """MT-DBL-7: one tile satisfies a double, or three (a chicken foot)."""

    ONE = "one"
    CHICKEN_FOOT = "chicken_foot"


class KnockRule(StrEnum):
    """MT-KNOCK-1: whether an unannounced last-but-one tile is penalised."""

    NONE = "none"
    PENALTY = "penalty"


_ENUMS: Final[dict[str, type[StrEnum]]] = {
    "hand_size_table": HandSizeTable,
    "engine_placement": EnginePlacement,
    "first_player": FirstPlayer,
    "first_turn": FirstTurn,
    "double_followup": DoubleFollowup,
    "double_answer": DoubleAnswer,
    "knock_rule": KnockRule,
}
_BOOLS: Final = ("open_doubles_block", "end_on_double")
_OPTIONAL_INTS: Final = ("set_max", "hand_size", "rounds", "first_engine")
_INTS: Final = ("mexican_trains", "max_doubles_per_turn", "knock_penalty", "double_blank_value")

#: MT-DEAL-1 tables keyed by player count alone.
_BY_PLAYERS: Final[dict[HandSizeTable, dict[int, int]]] = {
    HandSizeTable.STANDARD: {2: 15, 3: 15, 4: 15, 5: 12, 6: 12, 7: 10, 8: 10},
    HandSizeTable.PUREMCO_DOUBLE9: {2: 15, 3: 13, 4: 10},
    HandSizeTable.DOUBLE6: {2: 5, 3: 5},
}

# Bounds that keep a game's trains addressable (n + m slots); far above any table.
MIN_MEXICAN_TRAINS: Final = 1
MAX_MEXICAN_TRAINS: Final = 16
# The other bounds of Ruleset._check, named for the service's OpenAPI schema.
MIN_HAND_SIZE: Final = 1  # MT-DEAL-1
MIN_ROUNDS: Final = 1  # MT-RND-1
MAX_KNOCK_PENALTY: Final = 10  # MT-KNOCK-1
#: MT-DBL-4: 0 (unlimited) or 1.
DOUBLES_PER_TURN_VALUES: Final = (0, 1)
#: T-3: what the 0-0 tile is worth.
DOUBLE_BLANK_VALUES: Final = (0, 25, 50)


def auto_set(players: int) -> int:
    """MT-SET-1: the set that follows the player count under ``set: auto``."""
    if players <= 3:
        return 9
    if players <= 8:
        return 12
    if players <= 12:
        return 15
    return 18


def table_hand_size(table: HandSizeTable, set_max: int, players: int) -> int | None:
    """MT-DEAL-1: the table's hand size, or ``None`` when it has no entry."""
    if table is HandSizeTable.BY_SET:
        if set_max == 9:
            return 8
        if set_max == 12:
            return {4: 12, 5: 12, 6: 12, 7: 10, 8: 10}.get(players)
        if set_max in (15, 18):
            return 11
        return None
    return _BY_PLAYERS[table].get(players)


@dataclass(frozen=True)
class Ruleset:
    """Every option of RULES.md section 2; defaults are the ``standard`` preset.

    >>> r = preset("pagat").with_options(mexican_trains=2)
    >>> r.first_turn, r.mexican_trains
    (<FirstTurn.CHAIN: 'chain'>, 2)
    >>> r.resolve(4).hand_size
    15
    """

    preset: str = "standard"
    game: str = "mexican_train"
    set_max: int | None = 12
    hand_size: int | None = None
    hand_size_table: HandSizeTable = HandSizeTable.STANDARD
    rounds: int | None = None
    first_engine: int | None = None
    engine_placement: EnginePlacement = EnginePlacement.SET_ASIDE
    first_player: FirstPlayer = FirstPlayer.DRAW
    first_turn: FirstTurn = FirstTurn.SINGLE
    mexican_trains: int = 1
    double_followup: DoubleFollowup = DoubleFollowup.ANY_TRAIN
    open_doubles_block: bool = True
    max_doubles_per_turn: int = 0
    double_answer: DoubleAnswer = DoubleAnswer.ONE
    end_on_double: bool = True
    knock_rule: KnockRule = KnockRule.NONE
    knock_penalty: int = 2
    double_blank_value: int = 0

    def __post_init__(self) -> None:
        self._check()

    def _check(self) -> None:
        for name, enum in _ENUMS.items():
            if not isinstance(getattr(self, name), enum):
                raise RulesetError(f"{name} must be one of {[e.value for e in enum]}")
        for name in _BOOLS:
            if not isinstance(getattr(self, name), bool):
                raise RulesetError(f"{name} must be true or false")
        for name in _OPTIONAL_INTS + _INTS:
            value = getattr(self, name)
            if value is None and name in _OPTIONAL_INTS:
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                raise RulesetError(f"{name} must be a whole number, not {value!r}")
        if self.game != "mexican_train":
            raise RulesetError(f"game {self.game!r} is not available", rule="MT-SET-1")
        if self.set_max is not None and not MIN_SET <= self.set_max <= MAX_SET:
            raise RulesetError(
                f"set_max must be from {MIN_SET} to {MAX_SET}, not {self.set_max}", rule="T-1"
            )
        if self.hand_size is not None and self.hand_size < MIN_HAND_SIZE:
            raise RulesetError(
                f"hand_size must be at least {MIN_HAND_SIZE}, not {self.hand_size}",
                rule="MT-DEAL-1",
            )
        if self.rounds is not None and self.rounds < MIN_ROUNDS:
            raise RulesetError(
                f"rounds must be at least {MIN_ROUNDS}, not {self.rounds}", rule="MT-RND-1"
            )
        if self.first_engine is not None and not 0 <= self.first_engine <= MAX_SET:
            raise RulesetError(
                f"first_engine must be from 0 to {MAX_SET}, not {self.first_engine}",
                rule="MT-RND-1",
            )
        if not MIN_MEXICAN_TRAINS <= self.mexican_trains <= MAX_MEXICAN_TRAINS:
            raise RulesetError(
                f"mexican_trains must be from {MIN_MEXICAN_TRAINS} to {MAX_MEXICAN_TRAINS}, "
                f"not {self.mexican_trains}",
                rule="MT-TR-2",
            )
        if self.max_doubles_per_turn not in DOUBLES_PER_TURN_VALUES:
            raise RulesetError(
                f"max_doubles_per_turn must be 0 (unlimited) or 1, not {self.max_doubles_per_turn}",
                rule="MT-DBL-4",
            )
        if not 0 <= self.knock_penalty <= MAX_KNOCK_PENALTY:
            raise RulesetError(
                f"knock_penalty must be from 0 to {MAX_KNOCK_PENALTY}, not {self.knock_penalty}",
                rule="MT-KNOCK-1",
            )
        if self.double_blank_value not in DOUBLE_BLANK_VALUES:
            raise RulesetError(
                f"double_blank_value must be 0, 25 or 50, not {self.double_blank_value}",
                rule="T-3",
            )

    def with_options(self, **options: Any) -> Ruleset:
        """A copy with ``options`` replaced; enum options also take their value string."""
        return dataclasses.replace(self, **_coerce(options))

    def resolve(self, players: int) -> Ruleset:
        """Fill every automatic option for ``players`` and refuse what cannot be dealt.

        Raises :class:`RulesetError` (bad count or option) or
        :class:`DealDoesNotFitError` (MT-DEAL-1/2), naming the numbers.
        """
        if isinstance(players, int) and not isinstance(players, bool):
            return _resolve(self, players)
        return self._resolve(players)

    def _resolve(self, players: int) -> Ruleset:
        if (
            not isinstance(players, int)
            or isinstance(players, bool)
            or not MIN_PLAYERS <= players <= MAX_PLAYERS
        ):
            raise RulesetError(
                f"a game has {MIN_PLAYERS} to {MAX_PLAYERS} players, not {players}",
                rule="MT-SET-2",
            )
        set_max = self.set_max if self.set_max is not None else auto_set(players)
        first_engine = set_max if self.first_engine is None else self.first_engine
        if first_engine > set_max:
            raise RulesetError(
                f"first_engine {first_engine} is above the set's highest double {set_max}",
                rule="MT-RND-1",
            )
        most_rounds = first_engine + 1
        rounds = most_rounds if self.rounds is None else self.rounds
        if rounds > most_rounds:
            raise RulesetError(
                f"rounds {rounds} is more than the {most_rounds} engines from "
                f"{first_engine}-{first_engine} down to 0-0",
                rule="MT-RND-1",
            )
        hand = self.hand_size
        if hand is None:
            hand = table_hand_size(self.hand_size_table, set_max, players)
            if hand is None:
                raise DealDoesNotFitError(
                    f"hand size table {self.hand_size_table.value!r} has no entry for "
                    f"{players} players with a double-{set_max} set",
                    rule="MT-DEAL-1",
                )
        tiles = set_size(set_max)
        dealable = tiles - 1 if self.engine_placement is EnginePlacement.SET_ASIDE else tiles
        if players * hand > dealable:
            raise DealDoesNotFitError(
                f"{players} players x {hand} tiles = {players * hand} is more than the "
                f"{dealable} tiles a double-{set_max} set can deal "
                f"({self.engine_placement.value})",
                rule="MT-DEAL-2",
            )
        return dataclasses.replace(
            self, set_max=set_max, hand_size=hand, rounds=rounds, first_engine=first_engine
        )

    @property
    def is_resolved(self) -> bool:
        return None not in (self.set_max, self.hand_size, self.rounds, self.first_engine)

    def to_dict(self) -> dict[str, Any]:
        """Every option by its snake_case name; enums as their value strings."""
        return {
            f.name: (v.value if isinstance(v, StrEnum) else v)
            for f in dataclasses.fields(self)
            for v in (getattr(self, f.name),)
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Ruleset:
        """The inverse of :meth:`to_dict`; unknown names are refused."""
        return cls(**_coerce(data))


_FIELDS: Final = frozenset(f.name for f in dataclasses.fields(Ruleset))
#: The options, in the order RULES.md section 2 gives them (the fields but
#: ``preset`` and ``game``), for the refusal of one Mexican Train lacks.
_OPTIONS: Final = tuple(
    f.name for f in dataclasses.fields(Ruleset) if f.name not in ("preset", "game")
)


@functools.lru_cache(maxsize=1024)
def _resolve(ruleset: Ruleset, players: int) -> Ruleset:
    # Rulesets are frozen values and a game is dealt for every round of a
    # playout: resolving once per (ruleset, players) keeps it off the hot path.
    return ruleset._resolve(players)


def _coerce(options: Mapping[str, Any]) -> dict[str, Any]:
    # API.md: an option a game does not have (a classic game's, say) is
    # refused naming the option and the game.
    return coerce_options("mexican_train", options, _OPTIONS, _ENUMS, None)


_STANDARD: Final = Ruleset()

#: The presets of API.md, by name.
PRESETS: Final[dict[str, Ruleset]] = {
    "standard": _STANDARD,
    "pagat": dataclasses.replace(_STANDARD, preset="pagat", first_turn=FirstTurn.CHAIN),
    "university_games": dataclasses.replace(
        _STANDARD, preset="university_games", first_turn=FirstTurn.CHAIN, open_doubles_block=False
    ),
    "cover_own": dataclasses.replace(
        _STANDARD, preset="cover_own", double_followup=DoubleFollowup.COVER_OWN
    ),
    "by_set": dataclasses.replace(
        _STANDARD, preset="by_set", set_max=None, hand_size_table=HandSizeTable.BY_SET
    ),
    "house": dataclasses.replace(
        _STANDARD,
        preset="house",
        end_on_double=False,
        max_doubles_per_turn=1,
        knock_rule=KnockRule.PENALTY,
        knock_penalty=2,
        double_blank_value=50,
    ),
    "chicken_foot": dataclasses.replace(
        _STANDARD, preset="chicken_foot", double_answer=DoubleAnswer.CHICKEN_FOOT
    ),
}


def preset(name: str) -> Ruleset:
    """The preset called ``name``; :class:`RulesetError` names the known ones."""
    try:
        return PRESETS[name]
    except KeyError:
        raise RulesetError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}") from None
