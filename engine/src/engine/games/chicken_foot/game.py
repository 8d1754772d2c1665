"""Chicken Foot (RULES.md CL-CF-1), played by the Mexican Train engine.

As CL-CF-1 says it can be built: a :class:`ChickenFoot` is a
:class:`~engine.games.mexican_train.game.MexicanTrain` with no personal
trains (``own_trains``: so no markers either, MT-TR-4), ``center_lines``
shared lines in the Mexican trains' places (addressed ``@m<line>``, and a
foot's branches ``@m<line>.<end>``, API.md), and a double that owes nothing
more (``double_owes``). What is Chicken Foot's own is here:

* the line-start phase: until every line has started, the only legal plays
  start a new line (:meth:`_available_slots`), and a round blocked there is
  blocked for good once nobody holds the station's number and the boneyard
  is empty (:meth:`_is_blocked`);
* the refusals that name CL-CF-1 (:meth:`_explain`).

Everything else is the engine's, with the Mexican Train options of
:meth:`ChickenFootRules.engine_ruleset`: the station set aside and round 1's
first player drawn for (MT-ENG-1), every double a chicken foot answered by
three tiles and blocking until then (MT-DBL-3, MT-DBL-7, dead doubles
MT-DBL-5), draw one then pass (MT-DR-1/2), the blocked round (MT-END-3),
every hand scored with 0-0 at ``double_blank_value`` (MT-SC-1, T-3), the
lowest total winning with MT-SC-3's ties.
"""

from __future__ import annotations

import functools
from typing import Any

from engine.errors import MoveError, RulesetError
from engine.game import Rules
from engine.games.chicken_foot.rules import ChickenFootRules
from engine.games.mexican_train.game import MexicanTrain, _illegal
from engine.games.mexican_train.rules import Ruleset
from engine.moves import Move, MoveKind, TrainKind
from engine.mypyc_compat import mypyc_attr


@mypyc_attr(allow_interpreted_subclasses=True)  # tests' probes subclass it
class ChickenFoot(MexicanTrain):
    """A game of Chicken Foot from its rules, a player count and a seed.

    >>> g = ChickenFoot(ChickenFootRules(), 4, "railyard")
    >>> g.round, g.engine, g.hand_count(0), g.slot_count
    (1, Tile(a=9, b=9), 12, 6)
    >>> sorted({str(m.train) for m in g.legal_moves()})  # every line to start
    ['m0', 'm1', 'm2', 'm3', 'm4', 'm5']
    """

    name = "chicken_foot"
    own_trains = False
    double_owes = False

    @classmethod
    def _resolve(cls, rules: Rules, players: int) -> tuple[Rules, Ruleset, dict[str, Any]]:
        if not isinstance(rules, ChickenFootRules):
            raise RulesetError(
                f"Chicken Foot is played from ChickenFootRules, not {type(rules).__name__}",
                rule="CL-SET-1",
            )
        resolved = rules.resolve(players)
        return resolved, resolved.engine_ruleset(), resolved.to_dict()

    @classmethod
    def engine_ruleset_of(cls, rules: Rules) -> Ruleset | None:
        if not isinstance(rules, ChickenFootRules) or rules.hand_size is None:
            return None
        return rules.engine_ruleset()

    @classmethod
    def _saved_rules(
        cls, items: tuple[tuple[str, Any], ...]
    ) -> tuple[Rules, Ruleset, dict[str, Any]]:
        return _rules_of(items)

    # ------------------------------------------------------------ the lines

    def _unstarted(self) -> list[int]:
        """The lines no tile has started yet (CL-CF-1)."""
        codes = self.tile_codes
        return [slot for slot in range(self._slots) if not codes[slot][0]]

    def _available_slots(self, seat: int) -> list[int]:
        """CL-CF-1: the lines not started yet while any is, then every line."""
        return self._unstarted() or list(range(self._slots))

    def _play(self, move: Move, ev: Any) -> None:
        train = move.train
        assert train is not None
        starts = not self.tile_codes[train.number][0]
        super()._play(move, ev)
        if starts:
            self._available = [None] * self.players  # a line started: the targets change

    def _is_blocked(self) -> bool:
        """MT-END-3 as CL-CF-1 has it: with lines still to start, only a tile
        carrying the station's number could ever be placed."""
        if self._unstarted():
            value = self.engine_value
            return not any(hand[value] for hand in self.hands)
        return super()._is_blocked()

    def _explain(self, move: Move, legal: list[Move]) -> MoveError:
        train = move.train
        if move.kind is MoveKind.PLAY and train is not None:
            if train.kind is not TrainKind.MEXICAN:
                # RULES.md CL-CF-1: a target that is no line or branch breaks
                # MT-TR-3; CL-CF-1's own id is for the start phase.
                return _illegal(
                    "NO_SUCH_TRAIN",
                    "MT-TR-3",
                    f"Chicken Foot has no {train} train: play on a line, @m0 to "
                    f"@m{self._slots - 1}",
                )
            unstarted = self._unstarted()
            if (
                unstarted
                and 0 <= train.number < self._slots
                and train.number not in unstarted
                and not self.doubles
            ):
                return _illegal(
                    "MUST_START_LINE",
                    "CL-CF-1",
                    "every line must start before any is extended: play on "
                    + ", ".join(f"@m{s}" for s in unstarted),
                )
        return super()._explain(move, legal)


@functools.lru_cache(maxsize=64)
def _rules_of(items: tuple[tuple[str, Any], ...]) -> tuple[Rules, Ruleset, dict[str, Any]]:
    rules = ChickenFootRules.from_dict(dict(items))
    if rules.hand_size is None or rules.rounds is None:
        raise RulesetError("a saved state's rules are resolved", rule="CL-CF-1")
    return rules, rules.engine_ruleset(), rules.to_dict()
