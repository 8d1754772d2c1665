"""Expert against greedy in games of bots only played by the service's
background player (issue 14: at the bots' full strength, no cut budget).

Each game seats one expert and three greedy bots (the expert's seat turns
with the game, so no seat's place in the order favours it), is created
through GameApp.create_game and played by service.app.background.BackgroundPlayer
over the in-process store, exactly as ``railyard serve`` plays it. Per round
(lower is better in Mexican Train): the expert's score against the greedy
seats' mean, and rounds won (the round's lowest score; a tie shares it).

    .venv/bin/python bench/background.py [--games 36] [--rounds 3] [--parallel 4]
                                         [--bot-processes 1]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

# Run as a script, bench/ comes first on sys.path and bench/service.py would
# shadow the ``service`` package: put the repository root there instead.
_HERE: Final = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

from railyard_api import game_service_pb2 as pb  # noqa: E402
from railyard_api.fields import message_of  # noqa: E402
from service.app import Caller, GameApp  # noqa: E402
from service.app.background import BackgroundPlayer  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.store.memory import MemoryStore  # noqa: E402


def interval(values: list[float]) -> str:
    """Mean ± the half-width of a normal 95% confidence interval."""
    mean = statistics.fmean(values)
    half = 1.96 * statistics.stdev(values) / math.sqrt(len(values))
    return f"{mean:6.2f} ± {half:4.2f}"


async def main(games: int, rounds: int, parallel: int, processes: int = 1) -> None:
    settings = Settings(background_games=parallel, background_poll=0.02, bot_processes=processes)
    app = GameApp(MemoryStore(), settings)
    player = BackgroundPlayer(app)
    player.start()
    began = time.perf_counter()
    ids: list[tuple[str, int]] = []
    for i in range(games):
        expert = i % 4
        players = [
            pb.Player(bot=pb.BOT_LEVEL_EXPERT if seat == expert else pb.BOT_LEVEL_GREEDY)
            for seat in range(4)
        ]
        request = pb.CreateGameRequest(
            ruleset=pb.Ruleset(preset="standard", rounds=rounds),
            players=players,
            seed=f"background-bench-{i}",
        )
        created = await app.create_game(request, Caller())
        assert created.game.version == 0
        ids.append((created.game.game_id, expert))
    views: list[pb.GameView] = []
    while True:
        views = [
            message_of(pb.GameView, await app.get_game(game_id, Caller())) for game_id, _ in ids
        ]
        done = sum(v.status == pb.GAME_STATUS_FINISHED for v in views)
        print(f"\r{done}/{games} finished, {time.perf_counter() - began:.0f} s", end="", flush=True)
        if done == games:
            break
        await asyncio.sleep(1)
    print()
    await player.stop()
    app.close()
    expert_scores: list[float] = []
    greedy_scores: list[float] = []
    margins: list[float] = []  # per round: greedy mean minus expert (positive: expert better)
    won = {"expert": 0.0, "greedy": 0.0}
    for view, (_, expert) in zip(views, ids, strict=True):
        for r in range(rounds):
            scores = [p.round_scores[r] for p in view.players]
            best = min(scores)
            winners = [s for s in range(4) if scores[s] == best]
            for s in winners:
                won["expert" if s == expert else "greedy"] += 1 / len(winners)
            greedy = [scores[s] for s in range(4) if s != expert]
            expert_scores.append(scores[expert])
            greedy_scores.extend(greedy)
            margins.append(statistics.fmean(greedy) - scores[expert])
    total = games * rounds
    print(f"{games} games x {rounds} rounds (standard, double-12), one expert vs three greedy")
    print(f"round score, expert:        {interval(expert_scores)}")
    print(f"round score, greedy (each): {interval(greedy_scores)}")
    print(f"greedy minus expert:        {interval(margins)}  (per round)")
    p = won["expert"] / total
    half = 1.96 * math.sqrt(p * (1 - p) / total)
    print(
        f"rounds won: expert {won['expert']:.1f}/{total} ({p:.1%} ± {half:.1%}; "
        f"an equal share is 25%), greedy {won['greedy'] / 3:.1f} each"
    )
    print(f"wall time {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=36)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--bot-processes", type=int, default=1, help="the bots' worker processes")
    args = parser.parse_args()
    asyncio.run(main(args.games, args.rounds, args.parallel, args.bot_processes))
