"""The options of the line games (RULES.md 3.1-3.3), their presets, and what
each game is.

One :class:`LineRules` type serves Block, Draw, All Fives, Bergen and
Matador. What differs between the games is data, in :data:`GAMES`: whether
a player who cannot place draws (CL-BLOCK-1, CL-DRAW-1), how a tile joins
an end (CL-LINE-1, CL-MAT-1), what is scored during play (CL-A5-1,
CL-BERGEN-1), the default target (CL-SC-2), and which options the game has
(CL-SET-1). An option a game does not have is ``None`` in its rules and is
refused when given, by name:

>>> r = PRESETS["all_fives"].with_options(boneyard_reserve=2)
>>> r.target_score, r.boneyard_reserve, r.teams
(250, 2, False)
>>> sorted(PRESETS["bergen"].to_dict())
['game', 'hand_size', 'opening', 'preset', 'set_max', 'target_score']
>>> PRESETS["bergen"].with_options(teams=True)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
engine.errors.RulesetError: 'teams' is not an option of bergen; its options are ... [CL-SET-1]
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
from engine.tiles import MIN_SET, set_size

#: CL-SET-1: the line games play double-six up to double-twelve.
MAX_LINE_SET: Final = 12
MIN_PLAYERS: Final = 2
#: CL-SET-1: with double-six, 2 to 4 players.
DOUBLE_SIX_MAX_PLAYERS: Final = 4
#: The most players any deal fits: every tile of the largest set, one each.
MAX_PLAYERS: Final = set_size(MAX_LINE_SET)
#: CL-TEAM-1: teams are two partnerships of two.
TEAM_PLAYERS: Final = 4


class Opening(StrEnum):
    """CL-START-1: who opens the first hand, and with what."""

    HIGHEST_DOUBLE = "highest_double"
    SEAT0_ANY = "seat0_any"


class BlockedScoring(StrEnum):
    """CL-SC-1: what the lowest hand scores after a block."""

    DIFFERENCE = "difference"
    OPPONENTS_TOTAL = "opponents_total"


class Matching(StrEnum):
    """How a tile joins an end."""

    SAME = "same"  # CL-LINE-1: the tile carries the end's number
    SEVENS = "sevens"  # CL-MAT-1: the touching number and the end's add up to 7


class InPlay(StrEnum):
    """What a placement scores during play."""

    NONE = "none"
    FIVES = "fives"  # CL-A5-1
    HEADERS = "headers"  # CL-BERGEN-1


@dataclass(frozen=True, slots=True)
class LineGameFacts:
    """What one line game is: the rules that are not options."""

    name: str
    #: CL-DRAW-1 (True) or CL-BLOCK-1 (False).
    draws: bool
    matching: Matching
    in_play: InPlay
    #: CL-SC-2: the default target score.
    target_score: int
    #: Every option of the game, in the order ``to_dict`` writes them (CL-SET-1).
    options: tuple[str, ...]


_COMMON: Final = ("set_max", "hand_size", "opening")

#: The five line games by name.
GAMES: Final[dict[str, LineGameFacts]] = {
    "block": LineGameFacts(
        "block",
        False,
        Matching.SAME,
        InPlay.NONE,
        100,
        (*_COMMON, "blocked_scoring", "target_score", "teams"),
    ),
    "draw": LineGameFacts(
        "draw",
        True,
        Matching.SAME,
        InPlay.NONE,
        100,
        (*_COMMON, "boneyard_reserve", "blocked_scoring", "target_score", "teams"),
    ),
    "all_fives": LineGameFacts(
        "all_fives",
        True,
        Matching.SAME,
        InPlay.FIVES,
        250,
        (*_COMMON, "boneyard_reserve", "blocked_scoring", "target_score", "teams"),
    ),
    "bergen": LineGameFacts(
        "bergen", False, Matching.SAME, InPlay.HEADERS, 15, (*_COMMON, "target_score")
    ),
    "matador": LineGameFacts(
        "matador",
        True,
        Matching.SEVENS,
        InPlay.NONE,
        100,
        (*_COMMON, "boneyard_reserve", "blocked_scoring", "target_score"),
    ),
}

#: Every preset of API.md's line games and the game it plays.
PRESET_GAMES: Final[dict[str, str]] = {
    "block": "block",
    "draw": "draw",
    "all_fives": "all_fives",
    "bergen": "bergen",
    "matador": "matador",
    "block_teams": "block",
    "draw_teams": "draw",
    "all_fives_teams": "all_fives",
}

_ENUMS: Final[dict[str, type[StrEnum]]] = {
    "opening": Opening,
    "blocked_scoring": BlockedScoring,
}
#: Options only some games have: ``None`` in the others' rules.
_GAME_OPTIONS: Final = ("boneyard_reserve", "blocked_scoring", "target_score", "teams")
#: CL-DRAW-1: the tiles that are never drawn.
RESERVES: Final = (0, 2)
#: CL-SET-1 / CL-SC-2: any target score from 1 up.
MIN_TARGET_SCORE: Final = 1


def _not_an_option(option: str, game: str) -> RulesetError:
    facts = GAMES[game]
    return RulesetError(
        f"'{option}' is not an option of {game}; its options are {', '.join(facts.options)}",
        rule="CL-SET-1",
    )


def _whole(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise RulesetError(f"{name} must be a whole number, not {value!r}", rule="CL-SET-1")
    return value


@dataclass(frozen=True)
class LineRules:
    """The options of one line game; each game has only the options RULES.md
    names for it (CL-SET-1). After construction every option the game has
    is set (``None`` given means the game's default) and every other is
    ``None``; giving one the game does not have is refused, even at its
    default value.

    >>> LineRules(game="draw").blocked_scoring
    <BlockedScoring.DIFFERENCE: 'difference'>
    >>> LineRules(game="bergen").blocked_scoring is None
    True
    """

    #: The preset these options came from ("": the game's own).
    preset: str = ""
    game: str = "block"
    #: CL-SET-1: 6 to 12.
    set_max: int = 6
    #: CL-DEAL-1: tiles dealt to each player.
    hand_size: int = 7
    opening: Opening = Opening.HIGHEST_DOUBLE
    #: CL-DRAW-1: 0 or 2 tiles never drawn (Draw, All Fives, Matador).
    boneyard_reserve: int | None = None
    #: CL-SC-1 (Block, Draw, All Fives, Matador).
    blocked_scoring: BlockedScoring | None = None
    #: CL-SC-2: the score that wins the game (every game; default per game).
    target_score: int | None = None
    #: CL-TEAM-1: two partnerships (Block, Draw, All Fives).
    teams: bool | None = None

    def __post_init__(self) -> None:
        facts = GAMES.get(self.game) if isinstance(self.game, str) else None
        if facts is None:
            raise RulesetError(
                f"game {self.game!r} is not a line game; known: {', '.join(GAMES)}",
                rule="CL-SET-1",
            )
        if self.preset == "":
            object.__setattr__(self, "preset", self.game)
        if PRESET_GAMES.get(self.preset) != self.game:
            if self.preset in PRESET_GAMES:
                raise RulesetError(
                    f"preset {self.preset!r} is a preset of {PRESET_GAMES[self.preset]}, "
                    f"not of {self.game}",
                    rule="CL-SET-1",
                )
            raise RulesetError(
                f"unknown preset {self.preset!r} of {self.game}; known: "
                + ", ".join(p for p, g in PRESET_GAMES.items() if g == self.game),
                rule="CL-SET-1",
            )
        for name in _GAME_OPTIONS:
            if name not in facts.options and getattr(self, name) is not None:
                raise _not_an_option(name, self.game)
        set_max = _whole("set_max", self.set_max)
        if not MIN_SET <= set_max <= MAX_LINE_SET:
            raise RulesetError(
                f"set_max must be from {MIN_SET} to {MAX_LINE_SET}, not {set_max}",
                rule="CL-SET-1",
            )
        if _whole("hand_size", self.hand_size) < 1:
            raise RulesetError(
                f"hand_size must be at least 1, not {self.hand_size}", rule="CL-SET-1"
            )
        if not isinstance(self.opening, Opening):
            raise RulesetError(
                f"opening must be one of {[e.value for e in Opening]}", rule="CL-START-1"
            )
        have = facts.options
        fill = object.__setattr__  # frozen: the defaults are filled once, here
        if "boneyard_reserve" in have:
            if self.boneyard_reserve is None:
                fill(self, "boneyard_reserve", 0)
            elif _whole("boneyard_reserve", self.boneyard_reserve) not in RESERVES:
                raise RulesetError(
                    f"boneyard_reserve must be {' or '.join(map(str, RESERVES))}, "
                    f"not {self.boneyard_reserve}",
                    rule="CL-DRAW-1",
                )
        if "blocked_scoring" in have:
            if self.blocked_scoring is None:
                fill(self, "blocked_scoring", BlockedScoring.DIFFERENCE)
            elif not isinstance(self.blocked_scoring, BlockedScoring):
                raise RulesetError(
                    f"blocked_scoring must be one of {[e.value for e in BlockedScoring]}",
                    rule="CL-SC-1",
                )
        if self.target_score is None:
            fill(self, "target_score", facts.target_score)
        elif _whole("target_score", self.target_score) < MIN_TARGET_SCORE:
            raise RulesetError(
                f"target_score must be at least {MIN_TARGET_SCORE}, not {self.target_score}",
                rule="CL-SET-1",
            )
        if "teams" in have:
            if self.teams is None:
                fill(self, "teams", False)
            elif not isinstance(self.teams, bool):
                raise RulesetError("teams must be true or false", rule="CL-TEAM-1")

    @property
    def facts(self) -> LineGameFacts:
        """What this game is (the rules that are not options)."""
        return GAMES[self.game]

    @property
    def options(self) -> tuple[str, ...]:
        """This game's option names (CL-SET-1)."""
        return GAMES[self.game].options

    def with_options(self, **options: Any) -> LineRules:
        """A copy with ``options`` replaced (enum options also take their value
        string); an option this game does not have is refused by name."""
        changes = _coerce(self.game, options)
        if changes.get("game", self.game) != self.game:
            raise RulesetError(
                f"the game is {self.game}; take {changes['game']}'s own preset to play it",
                rule="CL-SET-1",
            )
        return dataclasses.replace(self, **changes)

    def resolve(self, players: int) -> LineRules:
        """The rules for ``players`` (nothing is left to the player count), or
        the error that says why they cannot be dealt: a player count out of
        range (CL-SET-1), teams without four players (CL-TEAM-1), a deal that
        does not fit (:class:`DealDoesNotFitError`, CL-DEAL-1)."""
        if not isinstance(players, int) or isinstance(players, bool):
            raise RulesetError(f"players is a whole number, not {players!r}", rule="CL-SET-1")
        return _resolve(self, players)

    def _resolve(self, players: int) -> LineRules:
        if players < MIN_PLAYERS:
            raise RulesetError(
                f"a game of {self.game} has at least {MIN_PLAYERS} players, not {players}",
                rule="CL-SET-1",
            )
        if self.set_max == 6 and players > DOUBLE_SIX_MAX_PLAYERS:
            raise RulesetError(
                f"with double-six a game of {self.game} has {MIN_PLAYERS} to "
                f"{DOUBLE_SIX_MAX_PLAYERS} players, not {players}; take a larger set",
                rule="CL-SET-1",
            )
        if self.teams and players != TEAM_PLAYERS:
            raise RulesetError(
                f"teams need exactly {TEAM_PLAYERS} players, not {players}", rule="CL-TEAM-1"
            )
        tiles = set_size(self.set_max)
        if players * self.hand_size > tiles:
            raise DealDoesNotFitError(
                f"{players} players x {self.hand_size} tiles = {players * self.hand_size} is "
                f"more than the {tiles} tiles of a double-{self.set_max} set",
                rule="CL-DEAL-1",
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        """``preset``, ``game`` and this game's options, by their snake_case
        names (enums as their value strings); :meth:`from_dict` inverts it."""
        out: dict[str, Any] = {"preset": self.preset, "game": self.game}
        for name in GAMES[self.game].options:
            value = getattr(self, name)
            out[name] = value.value if isinstance(value, StrEnum) else value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LineRules:
        """The inverse of :meth:`to_dict`; names the game does not have are refused."""
        if not isinstance(data, Mapping):
            raise RulesetError("line rules are a mapping of option names", rule="CL-SET-1")
        game = data.get("game", "block")
        if not isinstance(game, str) or game not in GAMES:
            raise RulesetError(f"game {game!r} is not a line game", rule="CL-SET-1")
        return cls(**_coerce(game, data))


@functools.lru_cache(maxsize=1024)
def _resolve(rules: LineRules, players: int) -> LineRules:
    # Rules are frozen values and every hand is dealt from them: once per pair.
    return rules._resolve(players)


def _coerce(game: str, options: Mapping[str, Any]) -> dict[str, Any]:
    return coerce_options(game, options, GAMES[game].options, _ENUMS, "CL-SET-1")


def _preset(name: str, **options: Any) -> LineRules:
    return LineRules(preset=name, game=PRESET_GAMES[name], **options)


#: The line games' presets of API.md, by name: each game's own, and the teams.
PRESETS: Final[dict[str, LineRules]] = {
    "block": _preset("block"),
    "draw": _preset("draw"),
    "all_fives": _preset("all_fives"),
    "bergen": _preset("bergen"),
    "matador": _preset("matador"),
    "block_teams": _preset("block_teams", teams=True),
    "draw_teams": _preset("draw_teams", teams=True),
    "all_fives_teams": _preset("all_fives_teams", teams=True),
}


def line_rules(game: str, preset: str | None = None, **options: Any) -> LineRules:
    """The rules of ``game``: its own preset, or ``preset`` (which must be one
    of this game's), with ``options`` over it (CL-SET-1).

    >>> line_rules("block", "block_teams").teams
    True
    >>> line_rules("block", "bergen")
    Traceback (most recent call last):
    ...
    engine.errors.RulesetError: preset 'bergen' is a preset of bergen, not of block [CL-SET-1]
    """
    if game not in GAMES:
        raise RulesetError(
            f"game {game!r} is not a line game; known: {', '.join(GAMES)}", rule="CL-SET-1"
        )
    name = game if preset is None else preset
    if name not in PRESETS:
        raise RulesetError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}", rule="CL-SET-1")
    rules = PRESETS[name]
    if rules.game != game:
        raise RulesetError(
            f"preset {name!r} is a preset of {rules.game}, not of {game}", rule="CL-SET-1"
        )
    return rules.with_options(**options) if options else rules
