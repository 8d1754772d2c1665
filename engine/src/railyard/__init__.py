"""Railyard's games as reinforcement-learning environments (docs/rl.md).

Every game and preset of ``engine.PRESETS`` as a PettingZoo AEC environment
(:func:`env`, :func:`raw_env`: one agent per seat), and one seat of it as a
Gymnasium environment against the engine's bots (:func:`gym_env`). Actions
are one fixed ``Discrete(n)`` per game (:class:`ActionLayout` converts an
index to an engine move and back); an observation is exactly what
``engine.build_view`` shows the seat (:class:`ObservationEncoder`), plus its
action mask.

It needs the ``rl`` extra: ``pip install 'railyard-engine[rl]'``. The
engine itself (package ``engine``) stays the standard library alone.

>>> import railyard
>>> e = railyard.env("mexican_train", players=4)
>>> e.reset(seed=1)
>>> e.unwrapped.actions.size, e.unwrapped.game.seed
(458, '1')
"""

from __future__ import annotations

try:
    import gymnasium
    import numpy  # noqa: F401
    import pettingzoo  # type: ignore[import-untyped]  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        f"railyard needs PettingZoo, Gymnasium and numpy ({exc.name or exc} is missing): "
        "pip install 'railyard-engine[rl]'"
    ) from exc

from railyard.actions import (
    SPECIAL_MOVES,
    ActionLayout,
    TrainShape,
    action_layout,
    branch_ends,
    train_shape,
)
from railyard.aec import IllegalActionError, env, raw_env
from railyard.observations import Observation, ObservationEncoder
from railyard.single import Opponent, SeatEnv, bot, gym_env
from railyard.table import DEFAULT_MAX_CYCLES, REWARD_MODES, Scorer, Table, episode_seed

#: ``gymnasium.make(GYM_ID, game=..., ...)`` builds :class:`SeatEnv` with
#: Gymnasium's own wrappers (its env checker, order enforcing).
GYM_ID = "railyard/Seat-v0"
gymnasium.register(id=GYM_ID, entry_point="railyard.single:SeatEnv")

__all__ = [
    "DEFAULT_MAX_CYCLES",
    "GYM_ID",
    "REWARD_MODES",
    "SPECIAL_MOVES",
    "ActionLayout",
    "IllegalActionError",
    "Observation",
    "ObservationEncoder",
    "Opponent",
    "Scorer",
    "SeatEnv",
    "Table",
    "TrainShape",
    "action_layout",
    "bot",
    "branch_ends",
    "env",
    "episode_seed",
    "gym_env",
    "raw_env",
    "train_shape",
]
