"""railyard: every game as a PettingZoo AEC environment and one seat of it as a
Gymnasium environment (docs/rl.md).

PettingZoo's own ``api_test`` and ``seed_test`` on every game's default
preset and on the largest set a preset deals (``by_set`` at 13 players:
double-18, MT-SET-1); Gymnasium's ``check_env`` on the single-seat wrapper
of every game. PettingZoo's ``max_cycles_test`` is written for parallel
environments that accept any action: it steps a parallel env and samples
actions without their mask, which in a turn-based game with legal moves
ends the game at the first illegal one (PettingZoo's classic games are not
run through it either). ``test_truncation_after_max_cycles`` checks the
same contract for a turn-based game: truncation at exactly ``max_cycles``
cycles of moves, every agent's one last step, the turn-based parallel
conversion stopping at the same move.

Then the env's own promises, on whole games played at random: no
observation carries a tile of another hand or of the boneyard (MT-VIS-3,
CL-VIS-1); the action index and the engine's move convert both ways over
every legal move; the same seed replays the same game; rewards add up to
the engine's scores.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test, seed_test
from pettingzoo.utils.conversions import turn_based_aec_to_parallel

import engine
import railyard
from engine import MoveKind, Tile

ROOT = Path(__file__).resolve().parents[1]

#: Each game's own preset, at the env's default player count.
DEFAULTS = [(spec.default_preset, 4) for spec in engine.GAMES.values()]
#: The largest set a preset deals: ``by_set`` follows the player count
#: (MT-SET-1: 13-14 players play double-18).
LARGE = ("by_set", 13)

#: What ``api_test`` says of every env whose observation is a dict with an
#: action mask (PettingZoo's own chess, go, connect_four get the same).
DICT_OBSERVATION_WARNINGS = {
    "Observation is not a NumPy array",
    "Observation space for each agent probably should be gymnasium.spaces.box or "
    "gymnasium.spaces.discrete",
}


def _ids(cases: list[tuple[str, int]]) -> list[str]:
    return [f"{preset}-{players}p" for preset, players in cases]


# ------------------------------------------------ PettingZoo's and Gymnasium's own tests


@pytest.mark.parametrize(("preset", "players"), [*DEFAULTS, LARGE], ids=_ids([*DEFAULTS, LARGE]))
def test_pettingzoo_api_test(preset: str, players: int) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        api_test(railyard.env(preset=preset, players=players), num_cycles=1000)
    assert {str(w.message) for w in caught} <= DICT_OBSERVATION_WARNINGS


@pytest.mark.parametrize(("preset", "players"), [*DEFAULTS, LARGE], ids=_ids([*DEFAULTS, LARGE]))
def test_pettingzoo_seed_test(preset: str, players: int) -> None:
    # 500 cycles (the default) play every default game to its end or far into it;
    # 200 cycles of 13 players are 2,600 moves.
    cycles = 200 if players > 4 else 500
    seed_test(lambda: railyard.env(preset=preset, players=players), num_cycles=cycles)


@pytest.mark.parametrize("game", list(engine.GAMES))
def test_gymnasium_check_env(game: str) -> None:
    # Through gymnasium.make, so that check_env also renders every render mode.
    made = gymnasium.make(railyard.GYM_ID, game=game, disable_env_checker=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(made.unwrapped)
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize(("preset", "players"), DEFAULTS, ids=_ids(DEFAULTS))
def test_truncation_after_max_cycles(preset: str, players: int) -> None:
    """max_cycles_test's contract for a turn-based game: ``max_cycles`` cycles
    of ``players`` moves, then every agent truncated at once, each stepping
    once more (with None) before it leaves; the turn-based parallel
    conversion stops after the same number of moves."""
    cycles = 3
    env = railyard.env(preset=preset, players=players, max_cycles=cycles)
    env.reset(seed=5)
    rng = np.random.default_rng(0)
    moves, dead_steps = 0, dict.fromkeys(env.possible_agents, 0)
    for agent in env.agent_iter():
        obs, _, terminated, truncated, _ = env.last()
        assert not terminated
        if truncated:
            assert all(env.truncations.values())
            dead_steps[agent] += 1
            env.step(None)
            continue
        env.step(_random_action(obs, rng))
        moves += 1
    assert moves == cycles * players
    assert dead_steps == dict.fromkeys(env.possible_agents, 1)
    assert env.agents == []

    parallel = turn_based_aec_to_parallel(
        railyard.env(preset=preset, players=players, max_cycles=cycles)
    )
    observations, _ = parallel.reset(seed=5)
    steps = 0
    while parallel.agents:
        # The turn-based conversion reads the action of the agent to move only.
        actions = {
            agent: _random_action(obs, rng) if obs["action_mask"].any() else 0
            for agent, obs in observations.items()
        }
        observations, _, terminations, truncations, _ = parallel.step(actions)
        steps += 1
    assert steps == cycles * players
    assert all(truncations.values())
    assert not any(terminations.values())


# ---------------------------------------------------------------- helpers


def _random_games(
    preset: str, players: int, games: int, **options: Any
) -> Iterator[tuple[Any, np.random.Generator]]:
    """A raw env reset for each of ``games`` whole games (seeds 0, 1, ...)."""
    for seed in range(games):
        env = railyard.raw_env(preset=preset, players=players, **options)
        env.reset(seed=seed)
        yield env, np.random.default_rng(seed)


def _hidden_tiles(game: Any, seat: int) -> set[Tile]:
    """What ``seat`` may not see: the other hands and the boneyard (sleeping
    and reserved tiles included)."""
    hidden = set(game.boneyard_tiles())
    for other in range(game.players):
        if other != seat:
            hidden |= set(game.hand(other))
    return hidden


def _random_action(obs: dict[str, Any], rng: np.random.Generator) -> int:
    """A uniformly random legal action of an observation's mask."""
    return int(rng.choice(np.flatnonzero(obs["action_mask"])))


def _indices(encoder: railyard.ObservationEncoder, tiles: set[Tile] | list[Tile]) -> list[int]:
    return sorted(encoder.tile_index(t) for t in tiles)


# ---------------------------------------------------------------- visibility


HIDDEN_CASES = [
    *[(name, 4, {}) for name in engine.PRESETS],
    ("block", 2, {}),  # 14 sleeping tiles (CL-DEAL-1)
    ("draw", 2, {"boneyard_reserve": 2}),  # a reserve that is never drawn
    ("by_set", 13, {"rounds": 2}),  # double-18
]


@pytest.mark.parametrize(
    ("preset", "players", "options"),
    HIDDEN_CASES,
    ids=[f"{p}-{n}p{'-' + '-'.join(o) if o else ''}" for p, n, o in HIDDEN_CASES],
)
def test_mt_vis_3_no_observation_carries_a_hidden_tile(
    preset: str, players: int, options: dict[str, Any]
) -> None:
    """MT-VIS-3 / CL-VIS-1: at every position of whole random games, every
    agent's observation shows its own hand exactly, the table, and nothing
    of another hand or of the boneyard: own hand + table + hidden tiles are
    the whole set, each tile once."""
    games = 1 if engine.preset(preset).game in ("mexican_train", "chicken_foot") else 3
    positions = 0
    for env, rng in _random_games(preset, players, games, **options):
        game, encoder = env.game, env.table.observations
        set_size = len(env.actions.tiles)
        while not game.over:
            for seat, agent in enumerate(env.possible_agents):
                full = env.observe(agent)
                obs = full["observation"]
                hand = _indices(encoder, game.hand(seat))
                hidden = _indices(encoder, _hidden_tiles(game, seat))
                assert np.flatnonzero(obs["hand"]).tolist() == hand
                assert not obs["hand"][hidden].any()
                assert not obs["table"][hidden].any()
                # Every tile is in exactly one place: the seat's hand, the table, hidden.
                covered = obs["hand"].astype(int) + obs["table"]
                covered[hidden] += 1
                assert covered.tolist() == [1] * set_size
                if encoder.is_line:
                    # The line as it lies, left to right (CL-LINE-1).
                    rows = [(int(a), int(b)) for a, b in obs["line"] if a >= 0]
                    assert rows == [(t.a, t.b) for t in game.line_tiles()]
                else:
                    assert (obs["tile_train"][hidden] == -1).all()
                    assert (obs["tile_end"][hidden] == -1).all()
                assert obs["hand_counts"].tolist() == [game.hand_count(s) for s in range(players)]
                assert obs["boneyard_count"].tolist() == [len(game.boneyard_tiles())]
                # Only the seat to move has legal actions; the others see an empty mask.
                if seat == game.current_seat:
                    expected = env.actions.mask(game.legal_moves())
                    assert (full["action_mask"] == expected).all()
                else:
                    assert not full["action_mask"].any()
            env.step(_random_action(env.observe(env.agent_selection), rng))
            positions += 1
    assert positions > 0


# ---------------------------------------------------------------- actions


BIJECTION_CASES = [
    *[(name, 4, {}) for name in engine.PRESETS],
    ("standard", 6, {"mexican_trains": 2}),
    ("standard", 2, {"set_max": 6, "hand_size_table": "double6"}),
    ("by_set", 9, {"rounds": 2}),  # double-15
    ("chicken_foot", 3, {"set_max": 9, "hand_size": 10, "rounds": 4}),
    ("chicken_foot_game", 3, {"center_lines": 4}),
    ("chicken_foot_game", 8, {}),
    ("matador", 5, {"set_max": 9}),
    ("matador", 2, {}),
    ("bergen", 3, {"set_max": 12}),
]


def _wants(preset: str, options: dict[str, Any], players: int) -> set[str]:
    """What the random games of this case must meet, so that the test covers
    every part of the layout: branch ends (MT-DBL-7), knock announcements
    (MT-KNOCK-1), two-way matadors (CL-MAT-1), chain first turns (MT-FT-1)."""
    rules = engine.ruleset(preset, **options).resolve(players)
    wants = {"play"}
    if getattr(rules, "double_answer", None) is engine.DoubleAnswer.CHICKEN_FOOT or (
        rules.game == "chicken_foot"
    ):
        wants.add("branch")
    if getattr(rules, "knock_rule", None) is engine.KnockRule.PENALTY:
        wants.add("announce")
    if rules.game == "matador":
        wants.add("exposed")
    if getattr(rules, "first_turn", None) is engine.FirstTurn.CHAIN:
        wants.add("end")
    return wants


@pytest.mark.parametrize(
    ("preset", "players", "options"),
    BIJECTION_CASES,
    ids=[f"{p}-{n}p{'-' + '-'.join(o) if o else ''}" for p, n, o in BIJECTION_CASES],
)
def test_action_index_and_move_convert_both_ways(
    preset: str, players: int, options: dict[str, Any]
) -> None:
    """Every legal move of many random positions has one index of its own,
    which decodes to it; the mask marks exactly those; and every index of
    the space decodes to a move that encodes back to it."""
    rules = engine.ruleset(preset, **options)
    layout = railyard.action_layout(rules, players)
    for index in range(layout.size):
        assert layout.encode(layout.decode(index)) == index
    assert [layout.decode(i) for i in range(3)] == [engine.DRAW, engine.PASS, engine.END_TURN]
    wants, seen, positions = _wants(preset, options, players), set(), 0
    for seed in range(6 if rules.game in ("mexican_train", "chicken_foot") else 40):
        game = engine.new_game(rules, players, f"bijection-{seed}")
        rng = np.random.default_rng(seed)
        while not game.over:
            legal = game.legal_moves()
            indices = [layout.encode(m) for m in legal]
            assert len(set(indices)) == len(legal)
            assert [layout.decode(i) for i in indices] == legal
            assert np.flatnonzero(layout.mask(legal)).tolist() == sorted(indices)
            for move in legal:
                if move.kind is MoveKind.PLAY:
                    assert move.train is not None
                    seen.add("play")
                    seen |= {"branch"} if move.train.end else set()
                    seen |= {"announce"} if move.announce else set()
                    seen |= {"exposed"} if move.exposed is not None else set()
                elif move.kind is MoveKind.END_TURN:
                    seen.add("end")
            game.push(legal[int(rng.integers(len(legal)))])
            positions += 1
    assert positions > 100
    assert wants <= seen, f"the random games never met {wants - seen}"


def test_action_layout_refuses_what_it_does_not_hold() -> None:
    layout = railyard.action_layout(engine.ruleset("standard"), 4)
    with pytest.raises(ValueError, match=r"outside 0\.\.457"):
        layout.decode(458)
    with pytest.raises(ValueError, match="not a move"):
        layout.encode(engine.Move.parse("3-4@p4"))  # seat 4 of a 4-player game
    with pytest.raises(ValueError, match="no such variant"):
        layout.encode(engine.Move.parse("3-4@p1!"))  # no knock rule (MT-KNOCK-1)


def test_mt_dbl_7_branch_ends_are_the_rules_bound() -> None:
    """MT-DBL-7: each of the N playable doubles of a round opens three
    branches, so a train has at most 1 + 3N ends; the layout holds them."""
    layout = railyard.action_layout(engine.preset("chicken_foot"), 4)
    assert railyard.branch_ends(12) == 37
    assert layout.encode(engine.Move.parse("12-11@m0.36")) < layout.size
    with pytest.raises(ValueError, match="not a move"):
        layout.encode(engine.Move.parse("12-11@m0.37"))


# ---------------------------------------------------------------- seeds


@pytest.mark.parametrize("game_name", list(engine.GAMES))
def test_mt_fair_1_same_seed_replays_the_same_game(game_name: str) -> None:
    """MT-FAIR-1: ``reset(seed=N)`` deals the engine seed ``"N"``, so the same
    seed and the same actions give the same game, move for move; another
    seed deals another game; an unseeded reset follows the last seed."""

    def play(env: Any, seed: int | None) -> tuple[list[engine.Move], list[list[int]]]:
        env.reset(seed=seed)
        rng = np.random.default_rng(0)
        hands = [np.flatnonzero(env.observe(a)["observation"]["hand"]).tolist() for a in env.agents]
        for _ in range(60):
            if env.game.over:
                break
            env.step(_random_action(env.observe(env.agent_selection), rng))
        return list(env.game.history), hands

    env = railyard.raw_env(game_name, players=4)
    first = play(env, 11)
    assert env.game.seed == "11"
    # The engine's own game of seed "11": the same deal, and the moves replay it.
    dealt = engine.new_game(env.table.rules, 4, "11")
    encoder = env.table.observations
    assert [_indices(encoder, dealt.hand(s)) for s in range(4)] == first[1]
    assert engine.replay(env.table.rules, 4, "11", first[0]).to_dict() == env.game.to_dict()
    assert play(railyard.raw_env(game_name, players=4), 11) == first
    assert play(env, 12)[1] != first[1]
    env.reset(seed=3)
    after_seed = [play(env, None) for _ in range(2)]
    env.reset(seed=3)
    assert [play(env, None) for _ in range(2)] == after_seed

    single = railyard.gym_env(game_name, players=4)
    obs_a, _ = single.reset(seed=11)
    obs_b, _ = railyard.gym_env(game_name, players=4).reset(seed=11)
    assert single.game.seed == "11"
    assert gymnasium.utils.env_checker.data_equivalence(obs_a, obs_b)


# ---------------------------------------------------------------- rewards


def _final_measure(env: Any, mode: str) -> list[float]:
    """What a whole game's rewards must add up to, from the engine's own result."""
    game = env.game
    if mode == "win":
        return [1.0 if s in game.winners else -1.0 for s in range(game.players)]
    totals = list(game.totals)
    if getattr(env.table.resolved, "teams", False):
        totals = [totals[s % 2] + totals[s % 2 + 2] for s in range(4)]  # CL-TEAM-1
    sign = -1 if env.table.spec.low_score_wins else 1  # MT-SC-2: lower wins
    return [float(sign * t) for t in totals]


REWARD_CASES = [*DEFAULTS, ("block_teams", 4), ("all_fives_teams", 4), ("block", 2)]


@pytest.mark.parametrize("mode", railyard.REWARD_MODES)
@pytest.mark.parametrize(("preset", "players"), REWARD_CASES, ids=_ids(REWARD_CASES))
def test_rewards_add_up_to_the_engine_scores(preset: str, players: int, mode: str) -> None:
    """MT-SC-1/2, CL-SC-1/2, CL-TEAM-1: over a whole game each agent's rewards
    add up to its final score in the game's own measure (minus the pips
    where lower wins; the team's points with teams), or +1/-1 for a win."""
    env = railyard.raw_env(preset=preset, players=players, reward=mode)
    env.reset(seed=21)
    rng = np.random.default_rng(21)
    sums = dict.fromkeys(env.possible_agents, 0.0)
    paid_before_the_end = False
    while not env.game.over:
        env.step(_random_action(env.observe(env.agent_selection), rng))
        for agent, reward in env.rewards.items():
            sums[agent] += reward
            paid_before_the_end |= reward != 0 and not env.game.over
    assert list(sums.values()) == _final_measure(env, mode)
    assert all(env.terminations.values())
    if mode != "hand":
        assert not paid_before_the_end  # paid once, at the end

    # The single-seat wrapper: the seat's rewards over the opponents' moves too.
    single = railyard.gym_env(preset=preset, players=players, seat=1, reward=mode)
    obs, _ = single.reset(seed=22)
    total, terminated, truncated = 0.0, False, False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, _ = single.step(_random_action(obs, rng))
        total += reward
    assert terminated
    assert total == _final_measure(single, mode)[1]


# ---------------------------------------------------------------- illegal actions


def test_an_illegal_action_is_refused_or_ends_the_game_with_a_penalty() -> None:
    raw = railyard.raw_env("mexican_train", players=4)
    raw.reset(seed=4)
    version = raw.game.version
    with pytest.raises(railyard.IllegalActionError, match=r"action 0 \(draw\) is not legal"):
        raw.step(0)  # MT-TURN-2: a player who can play must play
    assert raw.game.version == version
    # Below anything a whole game can give: 13 rounds of every pip of double-12.
    assert raw.illegal_reward == -(13 * 1092) - 1

    env = railyard.env("block", players=2)
    env.reset(seed=4)
    offender = env.agent_selection
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's "Illegal move made" warning
        env.step(0)  # draw: never legal in Block (CL-BLOCK-1)
    assert all(env.terminations.values())
    assert env.rewards == {a: (-1.0 if a == offender else 0.0) for a in env.possible_agents}

    single = railyard.gym_env("all_fives", players=2, reward="win")
    obs, _ = single.reset(seed=4)
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    _, reward, terminated, truncated, info = single.step(illegal)
    assert (reward, terminated, truncated, info) == (-2.0, True, False, {"illegal_action": illegal})
    with pytest.raises(RuntimeError, match="call reset"):
        single.step(illegal)


def test_observation_fields_have_the_documented_shapes() -> None:
    standard = railyard.raw_env("mexican_train", players=4).observation_space("player_0")
    shapes = {k: v.shape for k, v in standard["observation"].items()}
    assert shapes == {
        "hand": (91,),
        "table": (91,),
        "seat": (4,),
        "current_seat": (4,),
        "hand_counts": (4,),
        "scores": (4,),
        "boneyard_count": (1,),
        "round": (1,),
        "turn": (3,),
        "engine": (1,),
        "open_ends": (5, 1),
        "markers": (4,),
        "tile_train": (91,),
        "tile_end": (91,),
        "open_doubles": (12, 4),
        "round_scores": (4, 13),
    }
    feet = railyard.raw_env("chicken_foot", players=4).observation_space("player_0")
    assert feet["observation"]["open_ends"].shape == (6, 28)  # CL-CF-1, MT-DBL-7
    block = railyard.raw_env("block", players=2).observation_space("player_0")
    assert {k: v.shape for k, v in block["observation"].items() if k.startswith("line")} == {
        "line_ends": (2,),
        "line": (28, 2),
    }


def test_docs_list_each_default_presets_action_space_size() -> None:
    """docs/rl.md's table of sizes is the layouts' own."""
    text = (ROOT / "docs" / "rl.md").read_text()
    for preset, players in DEFAULTS:
        size = railyard.action_layout(engine.preset(preset), players).size
        assert re.search(rf"\| `{preset}` \|[^\n]*\| {size:,} \|", text), (preset, size)


def test_docs_quick_start_runs_as_written() -> None:
    page = (ROOT / "docs" / "rl.md").read_text()
    quick_start = page.split("## Quick start", 1)[1]
    (block,) = re.findall(r"```python\n(.*?)```", quick_start.split("\n## ", 1)[0], re.S)
    scope: dict[str, Any] = {}
    exec(compile(block, "docs/rl.md", "exec"), scope)
    assert scope["env"].agents == []  # the loop played the game to its end
    assert scope["terminated"] is False  # one step of Block is not a whole game


def test_render_shows_the_public_table() -> None:
    env = railyard.raw_env("block", players=2, render_mode="ansi")
    env.reset(seed=2)
    text = env.render()
    assert isinstance(text, str)
    assert "player_0: 7 tiles" in text
    assert "player_1: 7 tiles" in text
    assert "line: (empty)" in text


# ---------------------------------------------------------------- packaging


def test_import_without_pettingzoo_names_the_extra() -> None:
    code = "import sys; sys.modules['pettingzoo'] = None; import railyard"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode != 0
    assert "ImportError" in run.stderr
    assert "pip install 'railyard-engine[rl]'" in run.stderr


def test_the_engine_imports_no_rl_package() -> None:
    """The engine stays the standard library alone: numpy, Gymnasium and
    PettingZoo are railyard's (its ``rl`` extra)."""
    found = []
    for path in sorted((ROOT / "engine" / "src" / "engine").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            for name in names:
                if name.split(".")[0] in ("numpy", "gymnasium", "pettingzoo", "railyard"):
                    found.append(f"{path.relative_to(ROOT)}: {name}")
    assert found == []


def test_the_training_example_runs() -> None:
    run = subprocess.run(
        [sys.executable, "examples/train_block.py", "--episodes", "20", "--eval-games", "6"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert re.search(r"trained policy vs random bot: win rate \d\.\d{3} \(95% CI", run.stdout)
    assert "random policy vs random bot" in run.stdout
