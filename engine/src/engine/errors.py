"""The engine's errors: each carries a reason code and the rule id it enforces.

Every error the engine raises is a :class:`RailyardError`. The service maps the
class to a status code (one table in ``service``); the ``reason`` and ``rule``
travel to the client unchanged, so a front end can tell a player exactly which
rule of RULES.md their move broke.

============================  ==================  =====================================
class                         reason              when
============================  ==================  =====================================
:class:`RulesetError`         INVALID_ARGUMENT    unknown preset, option or value
:class:`DealDoesNotFitError`  DEAL_DOES_NOT_FIT   hand table has no entry / deal too big
:class:`MalformedMoveError`   MALFORMED_MOVE      text or value that is not a move
:class:`NotYourTurnError`     NOT_YOUR_TURN       a seat moves while another is to move
:class:`GameOverError`        GAME_OVER           any move once the game has ended
:class:`IllegalMoveError`     one of ILLEGAL_*    a well-formed move the rules forbid now
:class:`CorruptStateError`    CORRUPT_STATE       serialized bytes that are not a state
============================  ==================  =====================================

:class:`IllegalMoveError` has a finer ``reason`` (see :data:`ILLEGAL_REASONS`).
"""

from __future__ import annotations

from typing import Final

#: The finer reasons of :class:`IllegalMoveError`, with what each means.
ILLEGAL_REASONS: Final[dict[str, str]] = {
    "TILE_NOT_IN_HAND": "the tile is not in the mover's hand (MT-TURN-1)",
    "NO_SUCH_TRAIN": "the train or end named does not exist (MT-TR-3, MT-DBL-7)",
    "TRAIN_NOT_AVAILABLE": "the train is not one the mover may play on (MT-TR-3)",
    "FIRST_TURN_OWN_TRAIN": "a chain first turn is played on the own train only (MT-FT-2)",
    "TILE_DOES_NOT_MATCH": "the tile does not carry the open end's number (MT-TR-5)",
    "MUST_COVER_DOUBLE": "an open double blocks: it is the only place to play (MT-DBL-3)",
    "OLDEST_DOUBLE_FIRST": "unsatisfied doubles are satisfied oldest first (MT-DBL-4)",
    "MUST_COVER_OWN_DOUBLE": "the owed tile must cover the double just played (MT-DBL-2)",
    "ONE_DOUBLE_PER_TURN": "at most one double may be played in a turn (MT-DBL-4)",
    "MUST_PLAY_DRAWN_TILE": "the playable drawn tile must be played, and only it (MT-DR-1)",
    "MUST_PLAY": "a player holding a playable tile must play it (MT-TURN-2)",
    "CANNOT_DRAW": "drawing is only for a player with no legal play (MT-DR-1)",
    "CANNOT_PASS": "passing is only for a player who cannot play or draw (MT-DR-2)",
    "CANNOT_END_TURN": "ending the turn is only for a chain first turn (MT-FT-1)",
    "MUST_PAY_DOUBLE": "a chain cannot end while a tile is owed for a double (MT-FT-3)",
    "MUST_OPEN_WITH": "the hand's first tile is the one the opening rule names (CL-START-1)",
    "MUST_START_LINE": "until every line has started, only a play that starts a line is legal "
    "(CL-CF-1)",
    "EXPOSED_NUMBER": "a two-way matador names the number it leaves open, no other play does "
    "(CL-MAT-1)",
}


class RailyardError(Exception):
    """Base of every engine error: a reason code, a rule id and a sentence."""

    reason: str = "INVALID_ARGUMENT"

    def __init__(self, message: str, *, rule: str | None = None, reason: str | None = None):
        super().__init__(message)
        self.message = message
        self.rule = rule
        if reason is not None:
            self.reason = reason

    def __str__(self) -> str:
        return f"{self.message} [{self.rule}]" if self.rule else self.message


class RulesetError(RailyardError):
    """A ruleset option, preset or player count that cannot be played."""

    reason = "INVALID_ARGUMENT"


class DealDoesNotFitError(RulesetError):
    """MT-DEAL-1/2: the hands cannot be dealt from the set (names the numbers)."""

    reason = "DEAL_DOES_NOT_FIT"


class MoveError(RailyardError):
    """Base of the errors a move can raise; the state is unchanged after any."""


class MalformedMoveError(MoveError):
    """The input is not a move at all (bad text, a tile outside the set)."""

    reason = "MALFORMED_MOVE"


class NotYourTurnError(MoveError):
    """MT-ENG-2: a seat tried to move while another seat is to move."""

    reason = "NOT_YOUR_TURN"


class GameOverError(MoveError):
    """MT-RND-1: the last round has been played; no move is legal."""

    reason = "GAME_OVER"


class IllegalMoveError(MoveError):
    """A well-formed move the rules forbid in this position.

    ``reason`` is one of :data:`ILLEGAL_REASONS`; ``rule`` the rule id broken.
    """

    reason = "ILLEGAL_MOVE"


class CorruptStateError(RailyardError):
    """Bytes given to ``load`` that are not a state this engine wrote."""

    reason = "CORRUPT_STATE"
