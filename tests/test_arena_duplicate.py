"""The arena's duplicate deals and module bots (engine/arena.py,
service/ladder/module_bots.py, ``railyard arena --duplicate``).

What is checked:

- duplicate seating pairs deals: the seatings of a deal share its seed,
  every bot sits in every seat of every deal once, and a list that repeats
  itself is not played twice;
- the statistics under duplicate play on a hand-checked case: each bot's
  won share and round score with the deal as the unit, and the paired
  comparison (per seat; per team when each team is one bot);
- a ``module:function`` bot (railyard-bot's ``--module`` contract) plays in
  the arena as the same bot written against the engine would, from its
  seat's view alone, in this process and in spawned workers;
- bad input gets a clear error and no traceback; a failing bot is named.
"""

from __future__ import annotations

import dataclasses
import time

import pytest

import engine
from engine.arena import (
    Z95,
    ArenaConfig,
    BotError,
    GameRecord,
    paired,
    play_deal,
    ratio_interval,
    run,
    seatings,
    summarize,
)
from service.cli import main
from service.ladder.module_bots import module_bot

ONE_ROUND = engine.preset("standard").with_options(rounds=1)
LIGHTEST = "tests.ladder_bots:lightest"


def test_duplicate_seatings_share_the_deal_and_rotate_every_bot_through_every_seat() -> None:
    bots = ("greedy", "random", "expert")
    config = ArenaConfig(bots, ONE_ROUND, 6, seed="dup", budget=40, duplicate=True)
    records = run(config, clock=time.perf_counter)
    assert (config.seatings, config.deals) == (3, 2)
    assert [(r.index, r.deal, r.seed) for r in records] == [
        (0, 0, "dup:0"),
        (1, 0, "dup:0"),
        (2, 0, "dup:0"),
        (3, 1, "dup:1"),
        (4, 1, "dup:1"),
        (5, 1, "dup:1"),
    ]
    for deal in (records[:3], records[3:]):
        for seat in range(3):
            assert sorted(r.levels[seat] for r in deal) == sorted(bots)
    # The same seed deals the same tiles to a seat, whoever holds it (MT-FAIR-1).
    hands = {s: engine.new_game(ONE_ROUND, 3, "dup:0").hand(s) for s in range(3)}
    assert all(engine.new_game(ONE_ROUND, 3, r.seed).hand(0) == hands[0] for r in records[:3])


def test_a_list_that_repeats_itself_has_fewer_seatings() -> None:
    assert seatings(("greedy", "random", "greedy", "random")) == [
        ("greedy", "random", "greedy", "random"),
        ("random", "greedy", "random", "greedy"),
    ]
    assert seatings(("greedy", "greedy")) == [("greedy", "greedy")]
    assert len(seatings(("expert", "greedy", "greedy", "greedy"))) == 4


def test_duplicate_games_must_fill_whole_deals() -> None:
    with pytest.raises(ValueError, match=r"multiple of 3 \(e.g. 3 or 6\), not 4"):
        ArenaConfig(("greedy", "random", "random"), ONE_ROUND, 4, duplicate=True)
    assert ArenaConfig(("greedy", "random"), ONE_ROUND, 3).deals == 3  # no duplicate: any count


def _record(index: int, deal: int, levels: tuple[str, ...], scores: tuple[int, ...]) -> GameRecord:
    """One round of Mexican Train: the lowest score wins (MT-END-1)."""
    shares = tuple(1.0 if s == min(scores) else 0.0 for s in scores)
    return GameRecord(index, levels, (scores,), (shares,), ((), ()), deal, f"hand:{deal}")


#: Three deals of bots A and B, each in both seatings. Per deal, A's and B's
#: won share and mean round score over their two seat-rounds:
#: deal 0: A won 1 of 2, held 0 and 6 (3.0); B won 1 of 2, held 10 and 0 (5.0)
#: deal 1: A 1 of 2, 4 and 0 (2.0);   B 1 of 2, 0 and 8 (4.0)
#: deal 2: A 2 of 2, 0 and 0 (0.0);   B 0 of 2, 12 and 5 (8.5)
HAND_CHECKED = [
    _record(0, 0, ("A", "B"), (0, 10)),
    _record(1, 0, ("B", "A"), (0, 6)),
    _record(2, 1, ("A", "B"), (4, 0)),
    _record(3, 1, ("B", "A"), (8, 0)),
    _record(4, 2, ("A", "B"), (0, 12)),
    _record(5, 2, ("B", "A"), (5, 0)),
]


def test_the_paired_comparison_on_a_hand_checked_case() -> None:
    p = paired(HAND_CHECKED, "A", "B")
    assert (p.first, p.second, p.per, p.deals) == ("A", "B", "seat", 3)
    # Won share differences 0, 0, 1: mean 1/3, sample sd sqrt(1/3), n = 3.
    assert p.won_diff == pytest.approx(1 / 3)
    assert p.won_half == pytest.approx(Z95 * (1 / 3) ** 0.5 / 3**0.5)
    # Score differences -2, -2, -8.5: mean -25/6, sample variance 169/12.
    assert p.score_diff == pytest.approx(-25 / 6)
    assert p.score_half == pytest.approx(Z95 * 13 / 6)


def test_duplicate_statistics_take_the_deal_as_the_unit() -> None:
    a, b = summarize(HAND_CHECKED)  # not levels: in the order they first sat
    assert (a.level, a.duplicate, a.deals, a.seat_rounds, a.wins) == ("A", True, 3, 6, 4.0)
    # Per-deal shares 1/2, 1/2, 1: mean 2/3, sample sd sqrt(1/12).
    assert a.won_share == pytest.approx(2 / 3)
    assert (a.won_low, a.won_high) == pytest.approx((2 / 3 - Z95 / 6, 2 / 3 + Z95 / 6))
    # Per-deal means 3, 2, 0 (sums 6, 4, 0 over 2 seat-rounds each).
    assert a.mean_score == pytest.approx(5 / 3)
    assert a.score_half == pytest.approx(Z95 * (7 / 3) ** 0.5 / 3**0.5)
    assert (b.mean_score, b.won_share) == (pytest.approx(35 / 6), pytest.approx(1 / 3))
    # Unequal deals weigh by their seat-rounds: (2 + 9) / (1 + 3), and the
    # interval of the linearized ratio.
    assert ratio_interval([2.0, 9.0], [1, 3]) == pytest.approx(
        (11 / 4, Z95 * (2 * ((2 - 11 / 4) ** 2 + (9 - 33 / 4) ** 2)) ** 0.5 / 4)
    )


def test_without_duplicate_every_game_is_its_own_deal() -> None:
    independent = [dataclasses.replace(r, deal=None) for r in HAND_CHECKED]
    a, _ = summarize(independent)
    assert not a.duplicate
    assert a.deals == a.games == 6  # the same figures, with Wilson's interval over seat-rounds
    assert a.won_share == pytest.approx(2 / 3)


def test_the_paired_comparison_is_per_team_when_each_team_is_one_bot() -> None:
    rules = engine.preset("block_teams")
    config = ArenaConfig(
        ("greedy", "random", "greedy", "random"), rules, 4, "teams", duplicate=True
    )
    records = run(config, clock=time.perf_counter)
    assert all(r.sides == ((0, 2), (1, 3)) for r in records)
    team = paired(records, "greedy", "random")
    assert team.per == "team"
    # A team's hand share is both partners': each seat's is half of it.
    seat = paired([dataclasses.replace(r, sides=()) for r in records], "greedy", "random")
    assert seat.per == "seat"
    assert team.won_diff == pytest.approx(2 * seat.won_diff)


def test_a_module_bot_plays_as_the_same_bot_on_the_engine_would() -> None:
    # tests/ladder_bots.py's lightest, written against the engine: same games.
    def lightest(game: engine.GameState) -> engine.Move:
        def pips(move: engine.Move) -> int:
            tile = move.tile
            return 1000 if tile is None else tile.a + tile.b

        return min(game.legal_moves(), key=pips)

    record = play_deal(
        ONE_ROUND, (LIGHTEST, "greedy"), "module:0", clock=time.perf_counter, maker=module_bot
    )
    game = engine.new_game(ONE_ROUND, 2, "module:0")
    while not game.over:
        seat = game.current_seat
        if seat == 0:
            move = lightest(game)
        else:
            view = engine.build_view(game, seat)
            move = engine.choose("greedy", view, game.legal_moves(), engine.bot_key(view))
        game.push(move)
    assert record.round_scores == tuple(zip(*game.round_scores, strict=True))
    assert len(record.decision_seconds[0]) > 0  # its decisions are timed too


def test_module_bots_answer_with_a_legal_move_a_move_or_a_notation() -> None:
    for bot in (LIGHTEST, "tests.ladder_bots:first_move"):
        record = play_deal(
            ONE_ROUND, (bot, "random"), "forms", clock=time.perf_counter, maker=module_bot
        )
        assert record.round_scores


@pytest.mark.parametrize(
    ("bot", "message"),
    [
        ("tests.ladder_bots:illegal", "chose '13-13@p9', which is not a legal move now"),
        ("tests.ladder_bots:broken", "ZeroDivisionError: a bug in the bot"),
    ],
)
def test_a_failing_module_bot_is_named(bot: str, message: str) -> None:
    with pytest.raises(BotError, match="game 'fail:0', seat") as failure:
        play_deal(ONE_ROUND, (bot, "random"), "fail:0", clock=time.perf_counter, maker=module_bot)
    assert bot in str(failure.value)
    assert message in str(failure.value)


def test_railyard_arena_duplicate_prints_the_paired_comparison(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["arena", "--duplicate", "--bots", f"greedy,{LIGHTEST}", "--games", "4"]
    # Two spawned workers: the module bot is imported in each.
    assert main([*argv, "--rounds", "1", "--seed", "cli", "--jobs", "2"]) == 0
    out, _ = capsys.readouterr()
    assert "duplicate: 2 deals x 2 seatings = 4 games, 4 rounds" in out
    assert "95% normal interval over deals" in out
    assert f"paired by deal, greedy minus {LIGHTEST}, per seat (2 deals" in out
    assert any(line.startswith(f"{LIGHTEST} ") for line in out.splitlines())


def test_railyard_arena_shows_the_expert_s_decision_time_against_its_target(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["arena", "--duplicate", "--bots", "expert,random", "--games", "2", "--rounds", "1"]
    assert main([*argv, "--budget", "40", "--option", "set_max=6", "--option", "hand_size=7"]) == 0
    out, _ = capsys.readouterr()
    assert "decision time target: the expert's p99 at most 100 ms" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--duplicate", "--bots", "greedy,random,random", "--games", "4"], "multiple of 3"),
        (["--bots", "greedy,no_such_module:choose"], "cannot import 'no_such_module'"),
        (["--bots", "greedy,tests.ladder_bots:missing"], "has no function 'missing'"),
        (["--bots", "greedy,tests.ladder_bots:NOT_A_FUNCTION"], "has no function"),
        (["--bots", "greedy,:choose"], "write a module bot as module:function"),
        (["--bots", "greedy,genius"], "unknown bot level 'genius'"),
    ],
)
def test_railyard_arena_refuses_bad_bots_clearly(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["arena", "--rounds", "1", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_railyard_arena_names_a_bot_that_fails(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["arena", "--bots", "tests.ladder_bots:broken,greedy", "--games", "2", "--rounds", "1"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "railyard arena: bot 'tests.ladder_bots:broken' (game 'arena:0', seat" in err
    assert "Traceback" not in err
