"""Train a small Block policy against the random bot, numpy only, then measure it.

REINFORCE with a baseline over a linear softmax policy: each legal action
gets a score ``theta . features(observation, action)``, the policy is the
softmax of those scores over the action mask. The features are read from
the observation alone (the seat's view: its hand, the line, the tiles on
the table), so the policy sees nothing a player at the table would not:

* the tile's pips (a hand that blocks counts against its holder, CL-SC-1),
* whether it is a double (a double fits one number only),
* how many tiles left in the hand fit the ends it leaves (options kept),
* how many unseen tiles fit them (the opponent's options),
* how many tiles left in the hand carry the number it exposes,
* whether both ends end up showing the same number.

Training plays single hands (``target_score=1``: a hand won ends the game)
with the ``win`` reward, seats alternating; evaluation plays whole games to
Block's 100 points against the same bot and compares with a uniformly
random policy over the same deals, with Wilson 95% intervals.

    .venv/bin/python examples/train_block.py            # ~1 minute on one core
    .venv/bin/python examples/train_block.py --episodes 20 --eval-games 10
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import numpy as np
import numpy.typing as npt

import railyard
from engine import MoveKind

FEATURES = 6


def features(
    env: railyard.SeatEnv, obs: dict[str, Any], actions: npt.NDArray[np.intp]
) -> npt.NDArray[np.float64]:
    """One row of features per legal action, from the observation alone."""
    view = obs["observation"]
    hand = view["hand"].astype(bool)
    unseen = ~hand & ~view["table"].astype(bool)  # other hands and the sleeping tiles
    left, right = (int(x) for x in view["line_ends"])
    layout = env.actions
    rows = np.zeros((len(actions), FEATURES))  # a pass keeps zeros: it is the only legal action
    tiles = layout.tiles
    for row, action in enumerate(actions):
        move = layout.decode(action)
        if move.kind is not MoveKind.PLAY or move.tile is None or move.train is None:
            continue
        a, b = move.tile
        if left < 0:
            ends = (a, b)  # the opening leaves both numbers open (CL-LINE-1)
        else:
            shown = right if move.train.end else left
            kept = left if move.train.end else right
            ends = (b if a == shown else a, kept)
        rest = hand.copy()
        rest[tiles.index(move.tile)] = False
        fits = np.array([ends[0] in t or ends[1] in t for t in tiles])
        carries = np.array([ends[0] in t for t in tiles])
        rows[row] = (
            (a + b) / 12,
            float(a == b),
            (rest & fits).sum() / 7,
            (unseen & fits).sum() / 7,
            (rest & carries).sum() / 7,
            float(ends[0] == ends[1]),
        )
    return rows


def softmax(scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    exp = np.exp(scores - scores.max())
    probabilities: npt.NDArray[np.float64] = exp / exp.sum()
    return probabilities


def play(
    env: railyard.SeatEnv,
    theta: npt.NDArray[np.float64] | None,
    rng: np.random.Generator,
    seed: int,
    learn: list[tuple[npt.NDArray[np.float64], int]] | None = None,
) -> float:
    """One episode; ``theta`` None plays uniformly at random. Returns its return;
    with ``learn``, appends each decision's (features, chosen row)."""
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        legal = np.flatnonzero(obs["action_mask"])
        if not legal.size:  # the hand ended before the seat's first move
            obs, reward, terminated, truncated, _ = env.step(0)
            total += float(reward)
            break
        if theta is None:
            choice = int(rng.integers(len(legal)))
        else:
            rows = features(env, obs, legal)
            choice = int(rng.choice(len(legal), p=softmax(rows @ theta)))
            if learn is not None:
                learn.append((rows, choice))
        obs, reward, terminated, truncated, _ = env.step(legal[choice])
        total += float(reward)
        done = terminated or truncated
    return total


def wilson(wins: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% with z = 1.96)."""
    if n == 0:
        return 0.0, 1.0
    p = wins / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def train(episodes: int, lr: float, seed: int) -> npt.NDArray[np.float64]:
    rng = np.random.default_rng(seed)
    envs = [
        railyard.gym_env(
            "block", players=2, seat=s, opponents="random", reward="win", target_score=1
        )
        for s in (0, 1)
    ]
    theta = np.zeros(FEATURES)
    baseline = 0.0
    for episode in range(episodes):
        trajectory: list[tuple[npt.NDArray[np.float64], int]] = []
        ret = play(envs[episode % 2], theta, rng, seed=10_000_000 + episode, learn=trajectory)
        baseline += 0.02 * (ret - baseline)
        grad = np.zeros(FEATURES)
        for rows, choice in trajectory:
            grad += rows[choice] - softmax(rows @ theta) @ rows  # d log pi / d theta
        theta += lr * (ret - baseline) * grad
    return theta


def evaluate(theta: npt.NDArray[np.float64] | None, games: int, seed: int) -> tuple[float, int]:
    """Wins (a tie, which a game to 100 never has, would count a half) in
    ``games`` whole games, seats alternating, on deals 0 .. games - 1."""
    rng = np.random.default_rng(seed)
    envs = [
        railyard.gym_env("block", players=2, seat=s, opponents="random", reward="win")
        for s in (0, 1)
    ]
    wins = 0.0
    for game in range(games):
        ret = play(envs[game % 2], theta, rng, seed=game)
        wins += (ret + 1) / 2  # win: +1, loss: -1
    return wins, games


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=3000, help="training hands")
    parser.add_argument("--eval-games", type=int, default=400, help="whole games per policy")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    start = time.perf_counter()
    theta = train(args.episodes, args.lr, args.seed)
    trained = time.perf_counter() - start
    print(f"trained on {args.episodes} hands in {trained:.0f}s; theta = {np.round(theta, 2)}")
    for name, policy in (("trained policy", theta), ("random policy", None)):
        wins, n = evaluate(policy, args.eval_games, args.seed)
        low, high = wilson(wins, n)
        print(
            f"{name:>14} vs random bot: win rate {wins / n:.3f} "
            f"(95% CI {low:.3f}-{high:.3f}) over {n} games"
        )
    print(f"total {time.perf_counter() - start:.0f}s")


if __name__ == "__main__":
    main()
