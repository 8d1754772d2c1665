"""Every Railyard game as a PettingZoo AEC environment: one agent per seat.

Built as PettingZoo's classic games are (``connect_four``, ``chess``):
:class:`raw_env` is the game, :func:`env` adds the standard wrappers
(an illegal action ends the game with a penalty, an action outside the
space is refused, the API's call order is enforced). An agent is
``player_<seat>``; the agent to act is the seat to move, which may act
several times in a row (a double owes a tile, MT-DBL-1; a drawn tile that
fits must be played, MT-DR-1; a draw that does not fit draws again,
CL-DRAW-1).

>>> import railyard
>>> e = railyard.env("block", players=2)
>>> e.reset(seed=7)
>>> obs, reward, terminated, truncated, info = e.last()
>>> sorted(obs), int(e.action_space(e.agent_selection).n)
(['action_mask', 'observation'], 59)
>>> e.step(int(obs["action_mask"].argmax()))  # the first legal action
>>> e.agent_selection == f"player_{e.unwrapped.game.current_seat}"
True
"""

from __future__ import annotations

import copy
import operator
from typing import Any, Final

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle, seeding
from pettingzoo import AECEnv  # type: ignore[import-untyped]  # PettingZoo ships no types
from pettingzoo.utils import wrappers  # type: ignore[import-untyped]

import engine
from engine import GameState, Move
from railyard.actions import ActionLayout
from railyard.table import DEFAULT_MAX_CYCLES, Scorer, Table, episode_seed, render_text

#: ``render_mode`` values: ``"ansi"`` returns the table as text, ``"human"``
#: prints it after every move; both show what a spectator sees, no hand.
RENDER_MODES: Final = ("human", "ansi")


class IllegalActionError(ValueError):
    """:class:`raw_env` was given an action that is not legal now (the
    wrapped :func:`env` ends the game with a penalty instead)."""


def env(
    game: str | None = None,
    preset: str | None = None,
    players: int = 4,
    *,
    render_mode: str | None = None,
    max_cycles: int = DEFAULT_MAX_CYCLES,
    reward: str = "hand",
    illegal_reward: float | None = None,
    **options: Any,
) -> Any:
    """The game as an AEC environment with PettingZoo's standard wrappers.

    ``game`` (a registry name) and ``preset`` pick the rules as
    ``engine.ruleset`` does (a preset names its game; a game alone plays its
    own preset; neither: Mexican Train ``standard``); ``options`` override
    the preset's, by their RULES.md names. ``reward``: ``"hand"``,
    ``"game"`` or ``"win"`` (:mod:`railyard.table`). An illegal action ends
    the game for every agent, ``illegal_reward`` to the offender (default:
    below the worst return a game can give, so that it never pays) and 0 to
    the others. ``max_cycles``: truncation after ``max_cycles * players``
    moves.
    """
    raw = raw_env(
        game,
        preset,
        players,
        render_mode=render_mode,
        max_cycles=max_cycles,
        reward=reward,
        **options,
    )
    penalty = raw.illegal_reward if illegal_reward is None else float(illegal_reward)
    wrapped = wrappers.TerminateIllegalWrapper(raw, illegal_reward=penalty)
    wrapped = wrappers.AssertOutOfBoundsWrapper(wrapped)
    return wrappers.OrderEnforcingWrapper(wrapped)


# PettingZoo's name (N801); AECEnv is untyped, so Any to mypy (misc).
class raw_env(AECEnv, EzPickle):  # type: ignore[misc]  # noqa: N801
    """The game as an AEC environment, unwrapped: an illegal action raises
    :class:`IllegalActionError` and changes nothing.

    Arguments as :func:`env`'s (but ``illegal_reward``).
    """

    metadata: dict[str, Any] = {  # noqa: RUF012  # PettingZoo's convention: a class attribute
        "render_modes": list(RENDER_MODES),
        "name": "railyard_v0",
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(
        self,
        game: str | None = None,
        preset: str | None = None,
        players: int = 4,
        *,
        render_mode: str | None = None,
        max_cycles: int = DEFAULT_MAX_CYCLES,
        reward: str = "hand",
        **options: Any,
    ) -> None:
        EzPickle.__init__(
            self,
            game,
            preset,
            players,
            render_mode=render_mode,
            max_cycles=max_cycles,
            reward=reward,
            **options,
        )
        super().__init__()
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(
                f"render_mode must be one of {RENDER_MODES} or None, not {render_mode!r}"
            )
        if max_cycles < 1:
            raise ValueError(f"max_cycles must be at least 1, not {max_cycles}")
        self.table: Final = Table(game, preset, players, options)
        self.metadata = {**raw_env.metadata, "name": f"railyard_{self.table.game_name}_v0"}
        self.render_mode = render_mode
        self.max_cycles: Final = max_cycles
        self._scorer: Final = Scorer(self.table, reward)
        self.possible_agents: list[str] = list(self.table.agents)
        self._seats: Final = {agent: seat for seat, agent in enumerate(self.possible_agents)}
        size = self.table.actions.size
        # One space object per agent, so that seeding one leaves the others be.
        self.observation_spaces = {
            agent: spaces.Dict(
                {
                    "observation": copy.deepcopy(self.table.observations.space),
                    "action_mask": spaces.Box(0, 1, (size,), dtype=np.int8),
                }
            )
            for agent in self.possible_agents
        }
        self.action_spaces = {agent: spaces.Discrete(size) for agent in self.possible_agents}
        self._np_random, _ = seeding.np_random(None)
        self._game: GameState | None = None
        self._moves = 0

    # ------------------------------------------------------------------ facts

    @property
    def actions(self) -> ActionLayout:
        """The action layout: :meth:`ActionLayout.decode` an index into a move."""
        return self.table.actions

    @property
    def illegal_reward(self) -> float:
        """:func:`env`'s default penalty for an illegal action."""
        return self._scorer.illegal_reward

    @property
    def game(self) -> GameState:
        """The engine's state (every hand in it: not for the agents' eyes)."""
        if self._game is None:
            raise RuntimeError("call reset() first")
        return self._game

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ the API

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Deal a new game: ``seed`` N deals the engine seed ``"N"`` and seeds
        each agent's spaces with N + its seat; no seed draws one from the
        generator the last seed started."""
        if seed is not None:
            self._np_random, _ = seeding.np_random(seed)
            for seat, agent in enumerate(self.possible_agents):
                self.action_spaces[agent].seed(seed + seat)
                self.observation_spaces[agent].seed(seed + seat)
        game = self._game = self.table.new_game(episode_seed(seed, self._np_random))
        self._moves = 0
        self._scorer.reset(game)
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {agent: {} for agent in self.agents}
        self.agent_selection = self.possible_agents[game.current_seat]
        if self.render_mode == "human":
            self.render()

    def observe(self, agent: str) -> dict[str, Any]:
        """``agent``'s own view (MT-VIS-2: its hand, the public table), and its
        legal actions when it is the one to act (else an all-zero mask)."""
        game = self.game
        seat = self._seats[agent]
        view = engine.build_view(game, seat)
        acting = (
            not game.over
            and game.current_seat == seat
            and not self.truncations.get(agent, False)
            and not self.terminations.get(agent, False)
        )
        actions = self.table.actions
        mask = actions.mask(game.legal_moves()) if acting else np.zeros(actions.size, np.int8)
        return {"observation": self.table.observations.encode(view), "action_mask": mask}

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        game = self.game
        move = self.legal_move(action)
        self._cumulative_rewards[agent] = 0.0
        game.push(move)
        self._moves += 1
        truncated = not game.over and self._moves >= self.max_cycles * self.table.players
        rewards = self._scorer.rewards(game)
        if truncated:
            rewards = [
                r + t for r, t in zip(rewards, self._scorer.truncation_rewards(game), strict=True)
            ]
        self.rewards = {a: rewards[self._seats[a]] for a in self.agents}
        if game.over:
            self.terminations = dict.fromkeys(self.agents, True)
        elif truncated:
            self.truncations = dict.fromkeys(self.agents, True)
        else:
            self.agent_selection = self.possible_agents[game.current_seat]
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def legal_move(self, action: Any) -> Move:
        """The move ``action`` stands for, if it is legal for the agent to act;
        else :class:`IllegalActionError`, naming the action, the move and the
        legal actions."""
        agent = self.agent_selection
        try:
            index = operator.index(action)
        except TypeError:
            raise IllegalActionError(f"{agent}: an action is an integer, not {action!r}") from None
        actions = self.table.actions
        try:
            move = actions.decode(index)
        except ValueError as exc:
            raise IllegalActionError(f"{agent}: {exc}") from None
        legal = self.game.legal_moves()
        if move not in legal:
            allowed = sorted(actions.encode(m) for m in legal)
            raise IllegalActionError(
                f"{agent}: action {index} ({move}) is not legal now; legal: {allowed}"
            )
        return move

    def render(self) -> str | None:
        if self.render_mode is None:
            return None
        text = render_text(self.game)
        if self.render_mode == "ansi":
            return text
        print(text)
        return None

    def close(self) -> None:
        """Nothing to release: the game is in memory."""
