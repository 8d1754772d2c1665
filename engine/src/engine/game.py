"""The protocol every game implements, and the facts it declares.

In the spirit of OpenSpiel's ``Game``/``State`` and python-chess's variants:
a :class:`GameSpec` is what a game declares up front (its name, how many
players, the options it accepts and its presets, how to make or load a
state); a :class:`GameState` is one game in progress. ``engine.registry``
finds specs by name, and everything outside a game's own package (the
service, the bots, the arena, replay) reaches a game only through these two.

A state is mutable: :meth:`GameState.apply` plays a legal move for the seat
to move and returns its events (API.md's kinds, unfiltered: see
``engine.events.for_seat``), :meth:`GameState.push` does the same without
building events (for search). Every state serializes to plain JSON values
(:meth:`GameState.to_dict`, which names its game under ``"game"``) that its
spec's ``load`` rebuilds exactly.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from engine.events import Event
from engine.moves import Move
from engine.mypyc_compat import mypyc_attr
from engine.tiles import Tile

if TYPE_CHECKING:
    from engine.view import GameView


class GameStatus(StrEnum):
    IN_PROGRESS = "in_progress"
    FINISHED = "finished"


# Its compiled subclasses that admit interpreted ones (MexicanTrain) need it to.
@mypyc_attr(allow_interpreted_subclasses=True)
class StateBase(ABC):
    """What every game's state shares, one implementation for all: the
    legal-move cache (each game's ``_generate`` fills it; a move clears it)
    and the move log. Moves applied since the last save wait in
    ``_history_tail`` (one ``append`` on the hot path); ``_history_text`` is
    the saved text form (API.md's notation, space-separated), parsed into
    ``_history_moves`` only when asked for. A state's ``to_dict`` writes
    :meth:`_history_string`."""

    _legal: list[Move] | None
    _history_text: str
    _history_moves: list[Move] | None
    _history_tail: list[Move]

    @abstractmethod
    def _generate(self) -> list[Move]:
        """The legal moves, computed (each game's own rules)."""

    def legal_moves(self) -> list[Move]:
        """Every legal move of the seat to move, in a fixed order (empty once over).

        The list is shared until the next move: do not change it.
        """
        moves = self._legal
        if moves is None:
            moves = self._legal = self._generate()
        return moves

    @property
    def history(self) -> list[Move]:
        """Every move applied since the first deal, in order."""
        if self._history_moves is None:
            text = self._history_text
            self._history_moves = [Move.parse(t) for t in text.split(" ")] if text else []
        return self._history_moves + self._history_tail

    def _history_string(self) -> str:
        if self._history_tail:
            tail = " ".join(map(str, self._history_tail))
            head = self._history_text
            if self._history_moves is not None:
                self._history_moves.extend(self._history_tail)
            self._history_text = f"{head} {tail}" if head else tail
            self._history_tail = []
        return self._history_text


class Rules(Protocol):
    """A game's options (frozen). Each game has its own type, which refuses
    an option its game does not have, naming the option and the game."""

    @property
    def preset(self) -> str: ...

    @property
    def game(self) -> str: ...

    @property
    def set_max(self) -> int | None:
        """The set's highest double (``None`` until resolved, where the
        player count decides)."""
        ...

    def __hash__(self) -> int: ...

    def resolve(self, players: int) -> Rules:
        """Every option filled for ``players``; refuses a deal that does not fit."""
        ...

    def with_options(self, **options: Any) -> Rules: ...

    def to_dict(self) -> dict[str, Any]: ...


class GameState(Protocol):
    """One game in progress (or over)."""

    @property
    def name(self) -> str:
        """The game's registry name (``mexican_train``, ``block`` ...)."""
        ...

    @property
    def rules(self) -> Rules: ...

    @property
    def players(self) -> int: ...

    @property
    def seed(self) -> str: ...

    @property
    def seed_sha256(self) -> str: ...

    #: +1 for every applied move.
    version: int
    #: The seat to move (meaningless once over).
    current_seat: int
    over: bool
    #: Seats that won, once over.
    winners: tuple[int, ...]
    #: What dealing the game caused, before any move (version 0).
    opening_events: list[Event]

    def legal_moves(self) -> list[Move]: ...

    def apply(self, move: Move, seat: int | None = None) -> list[Event]:
        """Play ``move`` for the seat to move (``seat``, when given, must be it)
        and return what it caused; raises ``engine.MoveError`` and changes
        nothing when the move is not legal now."""
        ...

    def push(self, move: Move, seat: int | None = None) -> None:
        """:meth:`apply` without building events."""
        ...

    def is_over(self) -> bool: ...

    def hand(self, seat: int) -> list[Tile]: ...

    @property
    def totals(self) -> list[int]:
        """Each seat's score so far."""
        ...

    def view(self, seat: int | None) -> GameView:
        """What ``seat`` (``None``: a spectator) may see."""
        ...

    @property
    def history(self) -> list[Move]:
        """Every move applied, in order (``replay`` plays them again)."""
        ...

    def to_dict(self) -> dict[str, Any]: ...

    def to_bytes(self) -> bytes: ...


class Worlds(Protocol):
    """Full positions consistent with one seat's view (determinizations), for
    search under hidden information: the tiles the seat has not seen dealt at
    random to the other hands (at their public counts) and the boneyard."""

    @property
    def seat(self) -> int: ...

    def sample(self, rng: random.Random) -> dict[str, Any]:
        """One position, in the game's ``to_dict`` form, at version 0 (the
        search counts the moves a playout makes by its version), whose game
        ends with the view's round (a hand, in the classic games)."""
        ...


@dataclass(frozen=True)
class BotHooks:
    """What a game gives the bots of ``engine.bots`` and the search of
    ``engine.expert``, which are written once for every game (CL-BOT-1)."""

    #: The greedy bot's heuristic: one score per move (higher is better),
    #: from the seat's view alone.
    scores: Callable[[GameView, Sequence[Move]], list[int]]
    #: The legal moves a sensible player considers (all, unless a game says).
    sensible: Callable[[Sequence[Move]], list[Move]]
    #: Sampled positions for the seat of a view; raises ValueError when the
    #: view cannot be one (not a seat's view of its own turn).
    worlds: Callable[[GameView, Sequence[Move]], Worlds]
    #: The playouts' policy for a state and the searching seat: a function
    #: from its legal moves to a move (the heuristics, read from the state
    #: for speed; the searching seat may play by the expert's own).
    playout_policy: Callable[[GameState, int], Callable[[Sequence[Move]], Move]]
    #: The seat's outcome of a playout that ended (its round or hand over).
    reward: Callable[[GameState, int], float]
    #: How sure the search must be to overrule the greedy choice, in standard
    #: errors of the paired differences (``None``: ``engine.expert.SWITCH_MARGIN``).
    switch_margin: float | None = None
    #: The expert's own heuristic, to rank its candidates and to fall back on
    #: (``None``: the greedy bot's ``scores``).
    expert_scores: Callable[[GameView, Sequence[Move]], list[int]] | None = None
    #: The expert's budget for a number of players, in playout moves
    #: (``None``: ``engine.expert.DEFAULT_BUDGET``): a game sizes it to what
    #: its moves cost, so that a decision stays within its time.
    budget: Callable[[int], int] | None = None


@dataclass(frozen=True)
class HandResult:
    """How one round (a hand) of a finished game came out, for the arena:
    each seat's share of its win (the shares add up to 1; ties and teams
    split it) and each seat's score in it."""

    shares: tuple[float, ...]
    scores: tuple[int, ...]


@dataclass(frozen=True)
class GameSpec:
    """What a game declares: its name, its players, its rules type and
    presets, and how to make, load and search it."""

    name: str
    min_players: int
    max_players: int
    #: The preset ``game`` alone plays.
    default_preset: str
    #: This game's presets by name (API.md ListRulesets).
    presets: Mapping[str, Rules]
    #: The options this game accepts, by their snake_case names.
    options: frozenset[str]
    new: Callable[[Any, int, str], GameState]
    load: Callable[[dict[str, Any]], GameState]
    #: The bots' and the search's hooks (CL-BOT-1).
    bots: BotHooks
    #: A finished game's rounds (hands), for the arena's statistics.
    results: Callable[[GameState], list[HandResult]]
    #: Whether a lower score is the better one (Mexican Train: pips held).
    low_score_wins: bool
    #: The arena's one-line description of a resolved ruleset.
    describe: Callable[[Any], str]
