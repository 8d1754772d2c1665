"""``railyard ladder`` (service/ladder/pool.py, service/ladder/remote.py).

What is checked:

- the tables: every pair of bots meets equally often, every bot holds every
  place of every deal it plays, a team is one bot;
- the ratings' order on built-in levels and a deliberately weak module bot
  (greedy above random above ``tests.ladder_bots:lightest``), the head to
  head, the JSON output's shape, and that the same arguments give the same
  output (one process or two);
- a remote game's results, read from the service's log, are the engine's
  own (``GameSpec.results``) for every game, teams and hands ended by
  points included;
- against a real ``railyard serve`` over a real redis-server: a remote bot
  (railyard-bot running a module) plays the very games its module plays on
  the engine; one that never moves is timed out by the service and the
  ladder says so; ``--game-timeout`` stops a ladder whose game cannot end,
  and a program that dies is named with its output, none left running;
- bad input gets a clear error and no traceback.
"""

from __future__ import annotations

import doctest
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import engine
from engine.arena import sides
from engine.registry import game_spec
from railyard_api import convert
from service.cli import main
from service.ladder import pool as ladder_module
from service.ladder.pool import LadderConfig, RemoteBot, rate, run, schedule
from service.ladder.remote import hands_from_log
from tests.test_service_resilience import Serve, serve

BOT = Path(sys.executable).with_name("railyard-bot")
PYTHON = sys.executable
LIGHTEST = "tests.ladder_bots:lightest"
#: A short game: double-6, hands of 7, one round (MT-SET-1, MT-RND-1).
SHORT = ["--option", "set_max=6", "--option", "hand_size=7", "--rounds", "1"]
SHORT_RULES = engine.preset("standard").with_options(set_max=6, hand_size=7, rounds=1)
#: One replica, bots played in a thread of it (the machine has two cores, shared).
ENV = {"RAILYARD_BOT_PROCESSES": "0"}


def ladder_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["ladder", *argv, "--json"]) == 0, capsys.readouterr().err
    found: dict[str, Any] = json.loads(capsys.readouterr().out)
    return found


# ------------------------------------------------------------------ tables


def test_every_pair_meets_equally_often_and_every_bot_holds_every_place() -> None:
    bots = ("random", "greedy", LIGHTEST, "tests.ladder_bots:first_move", "expert")
    config = LadderConfig(bots, SHORT_RULES, 3, deals=2, seed="t")
    games = schedule(config)
    assert len(config.tables) == 10  # C(5, 3)
    assert len(games) == 2 * 10 * 3  # deals x tables x rotations
    meetings = {(a, b): 0 for a in bots for b in bots if a < b}
    for game in games:
        for a in game.places:
            for b in game.places:
                if a < b:
                    meetings[(a, b)] += 1
    assert set(meetings.values()) == {2 * 3 * 3}  # C(3, 1) tables, 3 rotations, 2 deals
    for deal in range(2):
        for table in range(10):
            seated = [g for g in games if (g.deal, g.table) == (deal, table)]
            assert {g.seed for g in seated} == {f"t:{deal}"}  # one deal in every seating
            for place in range(3):
                assert sorted(g.places[place] for g in seated) == sorted(seated[0].places)


def test_a_team_is_one_bot_holding_both_of_its_seats() -> None:
    config = LadderConfig(("random", "greedy"), engine.preset("block_teams"), 4, deals=1)
    assert config.sides == ((0, 2), (1, 3))  # CL-TEAM-1
    assert [g.seats for g in schedule(config)] == [
        ("random", "greedy", "random", "greedy"),
        ("greedy", "random", "greedy", "random"),
    ]


# ------------------------------------------------------------------ on the engine


def test_ratings_put_greedy_above_random_and_a_weak_module_bot() -> None:
    # Double-12, one round: the lightest-first bot keeps 12s and 11s in hand
    # (MT-SC-1). 12 deals: greedy wins about 3 rounds in 4 against either;
    # random and the lightest-first bot are too close to order with so few.
    rules = engine.preset("standard").with_options(rounds=1)
    config = LadderConfig(("random", "greedy", LIGHTEST), rules, 2, deals=12, seed="ladder")
    ladder = rate(config, run(config))
    greedy = ladder.standings[0]
    rand, weak = sorted(ladder.standings[1:], key=lambda s: s.bot != "random")
    assert (greedy.bot, rand.bot, weak.bot) == ("greedy", "random", LIGHTEST)
    assert (greedy.kind, rand.kind, weak.kind) == ("level", "level", "module")
    assert greedy.ordinal > rand.ordinal
    assert greedy.ordinal > weak.ordinal
    # 2 tables each x 2 seatings x 12 deals x 1 round.
    assert {s.rounds for s in ladder.standings} == {48}
    for (a, b), (won, met) in ladder.head_to_head.items():
        assert met == 24
        assert won + ladder.head_to_head[(b, a)][0] == met  # ties count half to each
    assert ladder.head_to_head[("greedy", "random")][0] > 12
    assert ladder.head_to_head[("greedy", LIGHTEST)][0] > 12


def test_a_team_ladder_rates_each_team_s_bot(capsys: pytest.CaptureFixture[str]) -> None:
    found = ladder_json(
        ["--preset", "block_teams", "--bots", "random,greedy", "--deals", "3"], capsys
    )
    assert (found["players"], found["places"], found["seatings"]) == (4, [[0, 2], [1, 3]], 2)
    assert [s["bot"] for s in found["standings"]] == ["greedy", "random"]
    assert "winning team first" in found["rating"]["ranked_by"]


def test_the_json_output_s_shape(capsys: pytest.CaptureFixture[str]) -> None:
    found = ladder_json(["--bots", f"random,greedy,{LIGHTEST}", *SHORT, "--deals", "2"], capsys)
    assert set(found) == {
        "game",
        "ruleset",
        "players",
        "places",
        "pool",
        "tables",
        "deals",
        "seed",
        "seatings",
        "games",
        "rounds",
        "score_unit",
        "rating",
        "standings",
        "head_to_head",
    }
    assert found["game"] == "mexican_train"
    assert found["ruleset"]["set_max"] == 6
    assert found["pool"][2] == {"bot": LIGHTEST, "kind": "module"}
    assert found["tables"] == [["random", "greedy"], ["random", LIGHTEST], ["greedy", LIGHTEST]]
    assert (found["deals"], found["seatings"], found["games"], found["rounds"]) == (2, 2, 12, 12)
    assert found["score_unit"] == "pips a round (lower is better)"
    assert found["rating"]["model"] == "openskill PlackettLuce"
    assert found["rating"]["tau"] == 0.0
    line = found["standings"][0]
    assert set(line) == {
        "rank",
        "bot",
        "kind",
        "mu",
        "sigma",
        "low",
        "high",
        "ordinal",
        "rounds",
        "won",
        "won_share",
        "mean_score",
        "timeouts",
    }
    assert line["rank"] == 1
    assert line["low"] == pytest.approx(line["mu"] - 2 * line["sigma"])
    assert line["ordinal"] == pytest.approx(line["mu"] - 3 * line["sigma"])
    assert len(found["head_to_head"]) == 6
    assert set(found["head_to_head"][0]) == {"bot", "against", "won", "rounds", "share"}


def test_the_same_arguments_give_the_same_table(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["ladder", "--bots", f"greedy,random,{LIGHTEST}", *SHORT, "--deals", "3"]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert main(argv) == 0
    assert capsys.readouterr().out == first
    # Two spawned processes finish the games in any order: the ratings are
    # updated in the schedule's order all the same.
    assert main([*argv, "--jobs", "2"]) == 0
    assert capsys.readouterr().out == first
    assert "head to head" in first
    assert "mu ± 2 sigma" in first


def test_the_ladder_s_doctests() -> None:
    failures, tried = doctest.testmod(ladder_module)
    assert tried > 0
    assert failures == 0


@pytest.mark.parametrize(
    ("preset", "players"),
    [
        ("standard", 3),
        ("chicken_foot_game", 3),
        ("block", 2),
        ("draw_teams", 4),
        ("all_fives", 2),
        ("all_fives_teams", 4),
        ("bergen", 3),
        ("matador", 2),
    ],
)
def test_results_read_from_a_log_are_the_engine_s(preset: str, players: int) -> None:
    # What the ladder reads from GetGameLog, given the events the service
    # writes (railyard_api.convert), against GameSpec.results of the state.
    rules = engine.preset(preset)
    if rules.game == "mexican_train":
        rules = rules.with_options(rounds=2)
    spec = game_spec(rules.game)
    for seed in ("log-a", "log-b", "log-c", "log-d"):
        game = engine.new_game(rules, players, seed)
        events = [convert.event_to_proto(e, 0) for e in game.opening_events]
        while not game.over:
            seat = game.current_seat
            view = engine.build_view(game, seat)
            move = engine.choose("greedy", view, game.legal_moves(), engine.bot_key(view))
            events += [convert.event_to_proto(e, game.version + 1) for e in game.apply(move, seat)]
        scores, shares, timeouts = hands_from_log(
            events, players, sides(rules, players), spec.low_score_wins
        )
        results = spec.results(game)
        assert scores == tuple(h.scores for h in results)
        assert shares == tuple(h.shares for h in results)
        assert timeouts == (0,) * players


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--bots", "random,genius"], "unknown bot level 'genius'"),
        (["--bots", "random,random"], "bot 'random' is in the pool twice"),
        (["--bots", "random,greedy", "--players", "3"], "the pool has 2 bot(s)"),
        (["--bots", "random,nowhere:choose"], "cannot import 'nowhere'"),
        (["--url", "http://127.0.0.1:1"], "--url is for remote bots"),
        (["--remote", f"mine={PYTHON} {{token}}"], "give its --url"),
        (["--remote", "mine"], "write NAME=COMMAND"),
        (["--remote", "greedy=my-bot {token}"], "not a level"),
        (["--remote", "mine=my-bot --game {gmae} {token}"], "unknown placeholder {gmae}"),
        (["--remote", "mine=my-bot --game {game}"], "must take the seat's {token}"),
        (["--remote", "mine=no-such-program-here {token}", "--url", "x:1"], "no program"),
        (["--remote", "mine=my-bot 'unclosed {token}"], "cannot split its command"),
        (["--preset", "block_teams", "--players", "2"], "CL-TEAM-1"),
        (["--deals", "0"], "must be more than 0"),
        (["--players", "two"], "invalid int value"),
    ],
)
def test_bad_input_gets_a_clear_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main(["ladder", *argv])
    except SystemExit as exc:  # argparse's own refusals
        code = int(str(exc.code))
    assert code == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


# ------------------------------------------------------------------ through a service


@pytest.fixture(scope="module")
def service(redis_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    """One real ``railyard serve`` over the session's real redis-server."""
    redis_server.start()
    with serve(tmp_path_factory.mktemp("ladder"), redis_server.url, "ladder", **ENV) as server:
        yield server


def remote_heaviest(name: str) -> RemoteBot:
    return RemoteBot.parse(
        f"{name}={BOT} --url {{url}} --game {{game}} --token={{token}} "
        "--module railyard_client.bot:heaviest --quiet"
    )


def test_a_remote_bot_plays_the_games_its_module_plays_on_the_engine(service: Serve) -> None:
    # heaviest twice: as a module bot on the engine, and as a remote program
    # (railyard-bot --module) through the service, beside the service's own
    # greedy seats (and, at their table, the module bot, which plays through
    # the service as railyard-bot too); two games through the service at once.
    config = LadderConfig(
        ("greedy", "railyard_client.bot:heaviest"),
        SHORT_RULES,
        2,
        deals=1,
        seed="remote",
        remotes=(remote_heaviest("heavy"),),
        url=service.base_url,
    )
    games = run(config, remote_jobs=2)
    assert [g.seated.index for g in games] == list(range(3 * 2))
    by_table = {g.seated.places: g.record.round_scores for g in games}
    for here, there in [
        (("greedy", "railyard_client.bot:heaviest"), ("greedy", "heavy")),
        (("railyard_client.bot:heaviest", "greedy"), ("heavy", "greedy")),
    ]:
        assert by_table[here] == by_table[there]
    assert all(g.timeouts == (0, 0) for g in games if "heavy" in g.seated.places)
    ladder = rate(config, games)
    heavy = next(s for s in ladder.standings if s.bot == "heavy")
    assert (heavy.kind, heavy.rounds, heavy.timeouts) == ("remote", 4, 0)


def idle_bot(name: str, pid_file: Path) -> str:
    """A remote program that never moves (and says where it runs)."""
    code = 'import os, sys, time; open(sys.argv[1], "w").write(str(os.getpid())); time.sleep(600)'
    return f"{name}={PYTHON} -c '{code}' {pid_file} {{token}}"


def test_a_remote_bot_that_never_moves_is_played_by_the_service_s_timer(
    service: Serve, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--bots", "random", "--remote", idle_bot("idle", tmp_path / "idle.pid")]
    argv += ["--url", service.target, "--option", "set_max=6", "--option", "hand_size=3"]
    found = ladder_json([*argv, "--rounds", "1", "--deals", "1", "--turn-timeout", "1"], capsys)
    idle = next(s for s in found["standings"] if s["bot"] == "idle")
    assert idle["kind"] == "remote"
    assert idle["timeouts"] > 0  # each of its turns, played as greedy would
    assert idle["rounds"] == 2
    assert not _running(int((tmp_path / "idle.pid").read_text()))


def test_the_game_timeout_stops_a_ladder_whose_game_cannot_end(
    service: Serve, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["ladder", "--bots", "random", "--remote", idle_bot("idle", tmp_path / "idle.pid")]
    argv += ["--url", service.base_url, *SHORT, "--deals", "1", "--turn-timeout", "0"]
    start = time.monotonic()
    assert main([*argv, "--game-timeout", "1"]) == 1
    assert time.monotonic() - start < 30
    err = capsys.readouterr().err
    assert "was not over after 1 s (--game-timeout)" in err
    assert "Traceback" not in err
    assert not _running(int((tmp_path / "idle.pid").read_text()))


def test_a_remote_bot_that_dies_is_named_with_its_output(
    service: Serve, capsys: pytest.CaptureFixture[str]
) -> None:
    crash = f"crash={PYTHON} -c 'import sys; print(\"no model file\"); sys.exit(3)' {{token}}"
    argv = ["ladder", "--bots", "greedy", "--remote", crash, "--url", service.base_url, *SHORT]
    assert main([*argv, "--deals", "1"]) == 1
    err = capsys.readouterr().err
    assert "crash (seat" in err
    assert "exited with status 3 before game" in err
    assert "no model file" in err


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize(
    ("url", "message"), [("127.0.0.1:1", "UNAVAILABLE"), ("http://127.0.0.1:1", "ConnectError")]
)
def test_an_unreachable_service_is_a_clear_error(
    url: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["ladder", "--bots", "greedy", "--remote", f"mine={PYTHON} {{token}}", "--url", url]
    assert main([*argv, *SHORT, "--deals", "1"]) == 1
    err = capsys.readouterr().err
    assert f"the service at {url}: {message}" in err
    assert "Traceback" not in err
