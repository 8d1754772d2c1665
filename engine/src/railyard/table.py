"""What the PettingZoo environment and the Gymnasium wrapper share: the rules
they play, an episode's engine seed, the rewards, the text rendering.

Rewards are the game's own measure (``reward=``):

``"hand"`` (default)
    points as the engine scores them: in Mexican Train and Chicken Foot
    (lower wins, MT-SC-2) minus each round's pips when the round ends
    (MT-SC-1), so that more is better; in the line games the points a seat
    is credited when they are made (end of a hand, CL-SC-1; All Fives and
    Bergen also during play, CL-A5-1, CL-BERGEN-1); with teams (CL-TEAM-1)
    each seat gets its team's points. An episode's rewards add up to the
    seat's final score (negated where lower wins).
``"game"``
    that sum paid once, at the end of the game (or at truncation).
``"win"``
    at the end of the game, +1 to each seat in ``winners`` (ties: every tied
    seat, MT-SC-3; teams: both partners) and -1 to every other; 0 on
    truncation.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

import engine
from engine import GameState, GameView, Ruleset
from engine.games.chicken_foot.rules import ChickenFootRules
from engine.games.line.rules import LineRules
from engine.tiles import set_size
from railyard.actions import ActionLayout, action_layout
from railyard.observations import ObservationEncoder

#: The ``reward=`` modes.
REWARD_MODES: Final = ("hand", "game", "win")
#: Truncation after this many cycles (``players`` moves each) by default: far
#: beyond any game's length (Mexican Train, double-12, 4 players: ~300).
DEFAULT_MAX_CYCLES: Final = 10_000


def agent_name(seat: int) -> str:
    """PettingZoo's naming: seat 0 is ``player_0``."""
    return f"player_{seat}"


def episode_seed(seed: int | None, rng: np.random.Generator) -> str:
    """The engine seed of an episode: ``reset(seed=N)`` plays the engine seed
    ``str(N)`` (``engine.new_game(rules, players, "N")`` is the same deal);
    ``reset()`` draws one from the env's generator, so a seeded reset fixes
    every later one too (MT-FAIR-1: the seed is the whole deal)."""
    if seed is not None:
        return str(seed)
    return str(int(rng.integers(0, 2**63 - 1)))


class Table:
    """One game's configuration: its rules (a preset with options) and players,
    with the action layout and observation encoder they give."""

    def __init__(
        self, game: str | None, preset: str | None, players: int, options: dict[str, Any]
    ) -> None:
        # A preset names its game; ``game`` alone plays that game's own preset.
        self.rules: Final = engine.ruleset(preset, game, **options)
        self.spec: Final = engine.game_spec(self.rules.game)
        #: Every option filled for the player count (refuses a deal that does not fit).
        self.resolved: Final = self.rules.resolve(players)
        self.players: Final = players
        self.actions: Final[ActionLayout] = action_layout(self.rules, players)
        self.observations: Final = ObservationEncoder(self.rules, players)
        self.agents: Final = tuple(agent_name(seat) for seat in range(players))

    @property
    def game_name(self) -> str:
        return self.rules.game

    def new_game(self, seed: str) -> GameState:
        return engine.new_game(self.rules, self.players, seed)


class Scorer:
    """Each seat's reward after each move, in one of :data:`REWARD_MODES`."""

    def __init__(self, table: Table, mode: str) -> None:
        if mode not in REWARD_MODES:
            raise ValueError(f"reward must be one of {', '.join(REWARD_MODES)}, not {mode!r}")
        self.mode: Final = mode
        self._players = table.players
        # MT-SC-2, CL-CF-1: the lowest total wins, so points count against.
        self._sign = -1 if table.spec.low_score_wins else 1
        resolved = table.resolved
        self._teams = isinstance(resolved, LineRules) and bool(resolved.teams)  # CL-TEAM-1
        self._worst = self._worst_return(table)
        self._last: list[int] = [0] * table.players

    def _worst_return(self, table: Table) -> float:
        if self.mode == "win":
            return -1.0
        if self._sign > 0:
            return 0.0  # line games: points are only ever added
        # A round scores at most every pip of the set, 0-0 at its value (T-3).
        resolved = table.resolved
        assert isinstance(resolved, Ruleset | ChickenFootRules), "lower wins: MT-SC-2, CL-CF-1"
        n, rounds = resolved.set_max, resolved.rounds
        assert n is not None
        assert rounds is not None
        # Each number is on N + 1 tiles, twice on its double: the set holds N(N+1)(N+2)/2 pips.
        pips = n * set_size(n)
        return -float(rounds * (pips + resolved.double_blank_value))

    @property
    def worst_return(self) -> float:
        """The lowest return a whole game can give a seat in this mode."""
        return self._worst

    @property
    def illegal_reward(self) -> float:
        """The default reward of an illegal action, which ends the episode:
        below any return a game can give, so that ending it so never pays."""
        return self._worst - 1.0

    def measure(self, game: GameState) -> list[int]:
        """Each seat's score so far in the game's own measure (more is better)."""
        totals = game.totals
        if self._teams:
            # CL-TEAM-1: seats 0+2 and 1+3 share a score.
            totals = [totals[s % 2] + totals[s % 2 + 2] for s in range(self._players)]
        return [self._sign * t for t in totals]

    def reset(self, game: GameState) -> None:
        self._last = self.measure(game)

    def rewards(self, game: GameState) -> list[float]:
        """Each seat's reward for the move just made."""
        if self.mode == "hand":
            now = self.measure(game)
            deltas = [float(x - y) for x, y in zip(now, self._last, strict=True)]
            self._last = now
            return deltas
        if game.over:
            if self.mode == "game":
                return [float(x) for x in self.measure(game)]
            return [1.0 if s in game.winners else -1.0 for s in range(self._players)]
        return [0.0] * self._players

    def truncation_rewards(self, game: GameState) -> list[float]:
        """What a truncated episode pays on top: ``"game"`` pays the scores so
        far (``"hand"`` has paid them as they came; ``"win"`` has no winner)."""
        if self.mode == "game":
            return [float(x) for x in self.measure(game)]
        return [0.0] * self._players


def render_text(game: GameState) -> str:
    """The table as a spectator sees it (no hand, no boneyard tile: MT-VIS-3)."""
    view: GameView = engine.build_view(game, None)
    head = f"{game.name} ({game.rules.preset}) round {view.round}"
    if view.rounds_total:
        head += f"/{view.rounds_total}"
    lines = [head + (", over" if view.over else "") + f", boneyard {view.boneyard_count}"]
    if view.line is not None:
        lines.append("line: " + (" ".join(map(str, view.line.tiles)) or "(empty)"))
    else:
        lines.append(f"engine {view.engine}")
        for train in view.trains:
            tiles = " ".join(map(str, train.tiles)) or "-"
            branches = "".join(
                f" | .{b.end}: {' '.join(map(str, b.tiles))}" for b in train.branches if b.end
            )
            ends = ",".join(map(str, train.open_ends)) or "closed"
            marker = " [marker]" if train.marker else ""
            lines.append(f"{train.ref}: {tiles}{branches} (open {ends}){marker}")
        for double in view.open_doubles:
            lines.append(f"open double {double.value}-{double.value} on {double.train}")
    for player in view.players:
        turn = "  <- to move" if player.seat == view.current_seat else ""
        lines.append(
            f"{agent_name(player.seat)}: {player.hand_count} tiles, score {player.score}{turn}"
        )
    if view.over:
        lines.append("winners: " + ", ".join(map(agent_name, view.winners)))
    return "\n".join(lines)
