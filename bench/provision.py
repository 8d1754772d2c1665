"""Scripted games sized to the rate a server answers them.

A load generator that replays scripted games stops when it runs out of them
(wrk's threads stop, boardgame.io's clients.mjs exits), and the rest of that
measurement is a lighter load than the one asked for: such a run *ran dry*,
and its figure is not valid. bench/workers.py and bench/peers/service.py
provision each measurement for ``margin`` times the fastest rate that side
has shown so far (at least ``--capacity`` moves/s), so the games follow the
machine; a run that runs dry anyway is said to have, its figure is left out
of the medians, and it is measured again with twice the games.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

#: Games for this many times the fastest rate a side has shown.
MARGIN: Final = 1.5


@dataclass
class Provision:
    """The rate (moves/s) to size each side's scripted games for."""

    #: At least this many moves/s (``--capacity``), before any rate is known.
    floor: float
    margin: float = MARGIN
    #: The fastest rate each side has shown, or been shown to exceed.
    rates: dict[str, float] = field(default_factory=dict)

    def capacity(self, side: str) -> float:
        return max(self.floor, self.margin * self.rates.get(side, 0.0))

    def seen(self, side: str, rate: float) -> None:
        """A run of ``side`` that did not run dry answered ``rate`` moves/s."""
        self.rates[side] = max(self.rates.get(side, 0.0), rate)

    def ran_dry(self, side: str, capacity: float) -> float:
        """A run of ``side`` with games for ``capacity`` moves/s ran dry: the
        next are sized for twice that; returns that capacity."""
        self.rates[side] = max(self.rates.get(side, 0.0), 2 * capacity / self.margin)
        return self.capacity(side)


def dry_note(capacity: float, again: float | None) -> str:
    """What a run that ran dry says after its figures."""
    head = f"RAN DRY with games for {capacity:,.0f} moves/s: this figure is not valid"
    if again is None:
        return head + "; no retry left (raise --capacity or --retries)"
    return head + f"; measured again with games for {again:,.0f} moves/s"
