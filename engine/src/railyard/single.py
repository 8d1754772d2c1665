"""One seat of a game as a Gymnasium environment, the other seats played by
the engine's bots (``engine.choose``, each from its own seat's view).

The observation and action spaces are the AEC environment's for that seat.
A step plays the agent's move, then the opponents' until the agent is to
move again or the game is over; its reward is everything the seat scored
in between (:mod:`railyard.table`'s modes). Points a partner makes before
the seat's first move (All Fives with teams, CL-TEAM-1) come with the first
step. A game can end before the seat's first move (a one-hand game,
``target_score=1``, blocked at its opening, CL-END-1): ``reset`` then
returns an all-zero mask, and the next step ends the episode whatever its
action, with what the seat scored.

An illegal action (one the mask does not mark) ends the episode:
``terminated`` with the reward ``illegal_reward`` (default: below the worst
return a whole game can give, so that ending a game so never pays) and
``info["illegal_action"]`` the action; the game is left as it was.

>>> import railyard
>>> env = gym_env("block", players=2, seat=0, opponents="greedy")
>>> obs, info = env.reset(seed=3)
>>> obs, reward, terminated, truncated, info = env.step(int(obs["action_mask"].argmax()))
>>> terminated, truncated
(False, False)
>>> env.step(0)[2:]  # draw, never legal in Block: the episode ends
(True, False, {'illegal_action': 0})
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, Final

import gymnasium
import numpy as np
from gymnasium import spaces

import engine
from engine import GameState, GameView, Move
from railyard.actions import ActionLayout
from railyard.aec import RENDER_MODES
from railyard.table import DEFAULT_MAX_CYCLES, Scorer, Table, episode_seed, render_text

#: An opponent: from a seat's view and its legal moves, the move it makes
#: (``engine.choose``'s arguments; ``view.viewer_seat`` says which seat).
Opponent = Callable[[GameView, Sequence[Move]], Move]


def bot(level: str) -> Opponent:
    """The engine's bot ``level`` (``random``, ``greedy``, ``expert``) as an
    opponent; deterministic, seeded by the public ``engine.bot_key``."""
    if level not in engine.BOT_LEVELS:
        raise ValueError(f"unknown bot level {level!r}; known: {', '.join(engine.BOT_LEVELS)}")

    def choose(view: GameView, legal: Sequence[Move]) -> Move:
        return engine.choose(level, view, legal, engine.bot_key(view))

    return choose


class SeatEnv(gymnasium.Env[dict[str, Any], np.int64]):
    """One seat of a game against bots. Arguments as :func:`gym_env`'s."""

    metadata: dict[str, Any] = {"render_modes": list(RENDER_MODES), "render_fps": 1}  # noqa: RUF012

    def __init__(
        self,
        game: str | None = None,
        preset: str | None = None,
        players: int = 4,
        *,
        seat: int = 0,
        opponents: str | Opponent = "random",
        reward: str = "hand",
        max_cycles: int = DEFAULT_MAX_CYCLES,
        illegal_reward: float | None = None,
        render_mode: str | None = None,
        **options: Any,
    ) -> None:
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(
                f"render_mode must be one of {RENDER_MODES} or None, not {render_mode!r}"
            )
        if max_cycles < 1:
            raise ValueError(f"max_cycles must be at least 1, not {max_cycles}")
        self.table: Final = Table(game, preset, players, options)
        if not 0 <= seat < players:
            raise ValueError(f"no seat {seat} in a {players}-player game")
        self.seat: Final = seat
        self.opponent: Final = bot(opponents) if isinstance(opponents, str) else opponents
        self._scorer: Final = Scorer(self.table, reward)
        self.illegal_reward: Final = (
            self._scorer.illegal_reward if illegal_reward is None else float(illegal_reward)
        )
        self.max_cycles: Final = max_cycles
        self.render_mode = render_mode
        size = self.table.actions.size
        self.observation_space = spaces.Dict(
            {
                "observation": self.table.observations.space,
                "action_mask": spaces.Box(0, 1, (size,), dtype=np.int8),
            }
        )
        self.action_space = spaces.Discrete(size)
        self._game: GameState | None = None
        self._steps = 0
        self._pending = 0.0
        self._done = True

    @property
    def actions(self) -> ActionLayout:
        """The action layout: :meth:`ActionLayout.decode` an index into a move."""
        return self.table.actions

    @property
    def game(self) -> GameState:
        """The engine's state (every hand in it: not for the agent's eyes)."""
        if self._game is None:
            raise RuntimeError("call reset() first")
        return self._game

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Deal a new game (``seed`` N: the engine seed ``"N"``, as the AEC
        environment deals it) and play the opponents up to the seat's turn."""
        super().reset(seed=seed)
        if seed is not None:
            self.action_space.seed(seed)
            self.observation_space.seed(seed)
        game = self._game = self.table.new_game(episode_seed(seed, self.np_random))
        self._scorer.reset(game)
        self._steps = 0
        self._done = False
        self._pending = self._play_opponents()
        if self.render_mode == "human":
            self.render()
        return self._observation(), {}

    def step(
        self, action: np.int64 | int
    ) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if self._done:
            raise RuntimeError("the episode is over: call reset()")
        game = self.game
        index = operator.index(action)
        reward, self._pending = self._pending, 0.0
        if game.over:
            # The game ended before the seat's first move: the step ends it as it is.
            self._done = True
            return self._observation(), reward, True, False, {}
        actions = self.table.actions
        legal = game.legal_moves()
        move = actions.decode(index) if 0 <= index < actions.size else None
        if move is None or move not in legal:
            self._done = True
            return (
                self._observation(),
                reward + self.illegal_reward,
                True,
                False,
                {"illegal_action": index},
            )
        game.push(move, seat=self.seat)
        self._steps += 1
        reward += self._scorer.rewards(game)[self.seat]
        reward += self._play_opponents()
        terminated = game.over
        truncated = not terminated and self._steps >= self.max_cycles
        if truncated:
            reward += self._scorer.truncation_rewards(game)[self.seat]
        self._done = terminated or truncated
        if self.render_mode == "human":
            self.render()
        return self._observation(), reward, terminated, truncated, {}

    def _play_opponents(self) -> float:
        """The other seats' moves up to the seat's turn; what the seat scored meanwhile."""
        game, seat, reward = self.game, self.seat, 0.0
        while not game.over and game.current_seat != seat:
            mover = game.current_seat
            legal = game.legal_moves()
            game.push(self.opponent(engine.build_view(game, mover), legal), seat=mover)
            reward += self._scorer.rewards(game)[seat]
        return reward

    def _observation(self) -> dict[str, Any]:
        game = self.game
        actions = self.table.actions
        acting = not self._done and not game.over and game.current_seat == self.seat
        return {
            "observation": self.table.observations.encode(engine.build_view(game, self.seat)),
            "action_mask": actions.mask(game.legal_moves())
            if acting
            else np.zeros(actions.size, np.int8),
        }

    def render(self) -> str | None:
        if self.render_mode is None:
            return None
        text = render_text(self.game)
        if self.render_mode == "ansi":
            return text
        print(text)
        return None


def gym_env(
    game: str | None = None,
    preset: str | None = None,
    players: int = 4,
    *,
    seat: int = 0,
    opponents: str | Opponent = "random",
    reward: str = "hand",
    max_cycles: int = DEFAULT_MAX_CYCLES,
    illegal_reward: float | None = None,
    render_mode: str | None = None,
    **options: Any,
) -> SeatEnv:
    """Seat ``seat`` of the game (rules as :func:`railyard.env`'s) against
    ``opponents``: a bot level for every other seat, or an :data:`Opponent`.
    ``max_cycles``: truncation after the seat's ``max_cycles``-th move."""
    return SeatEnv(
        game,
        preset,
        players,
        seat=seat,
        opponents=opponents,
        reward=reward,
        max_cycles=max_cycles,
        illegal_reward=illegal_reward,
        render_mode=render_mode,
        **options,
    )
