"""The web table's boards (service/transports/http/web/board.js and tiles.js)
in a real headless Chromium, on a real service over Redis.

As in tests/test_web_table.py (whose service, browser and driving helpers
this file reuses): Debian's Chromium through Playwright's
``executable_path``, the HTTP service on a real redis-server. One game of
each kind is played to its end through the page at 1400 by 1000 px, seat 0 a
person clicking a tile then a target on the board, the other seats bots:
Mexican Train, Chicken Foot, Block, All Fives, Bergen, Matador and Block
for two teams of two.

At the start, mid-game and at the end the board's structure is read from the
DOM (the hooks documented at the top of board.js) and compared with the view
the API gives for the same version: one arm per player's train and per
Mexican train (Chicken Foot: per line), each arm's tiles and branches, every
branch drawn from its double, train markers and open doubles, the line's
tiles and its two ends. In All Fives and Bergen the ends' count and the points
every target offers for the selected tile are checked against the rules
(CL-A5-1, CL-BERGEN-1) as computed here. Mid-game, with a tile chosen, axe-core
finds no serious or critical violation, and the page is narrowed to a 412 px
phone (nothing wider than the screen; the board drawn again, axe-core again)
and its motion checked off under ``prefers-reduced-motion: reduce``.

Screenshots (start, mid-game, phone, end) are saved under
``tests/artifacts/web-table/`` (git-ignored). With ``RAILYARD_DOCS_SHOTS=1``
(``scripts/web-screenshots``) the mid-game board and hand of each game are
also saved as docs/web-table/<game>.png, the pictures of docs/web-table.md.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image

from tests.test_web_a11y import assert_accessible
from tests.test_web_table import (
    ARTIFACTS,
    MAX_MOVES,
    READY_JS,
    ROOT,
    STATE_JS,
    browser_page,
    check_game,
    choose_a_tile,
    click_a_move,
    create_table,
    hash_params,
    service,
    tile_key,
)

DESK = {"width": 1400, "height": 1000}
PHONE = {"width": 412, "height": 915}
DOCS_SHOTS = ROOT / "docs" / "web-table"
#: A docs picture stays small enough for the site and the repository.
DOCS_SHOT_MAX_BYTES = 150_000
GREEDY = "BOT_LEVEL_GREEDY"
#: How a tile's accessible name joins its halves ("6\u201311").
EN_DASH = "\u2013"


@dataclass(frozen=True)
class Game:
    slug: str
    preset: str
    seats: int
    #: The setup form's limits (rounds for the train games, a target score for the others).
    limits: dict[str, int] = field(default_factory=dict)
    #: After how many of the person's moves the mid-game checks run.
    mid: int = 4


GAMES = [
    Game("mexican-train", "standard", 3, {"rounds": 1}, mid=10),
    Game("chicken-foot", "chicken_foot_game", 2, {"rounds": 1}, mid=12),
    Game("block", "block", 2, {"target": 30}),
    Game("all-fives", "all_fives", 2, {"target": 40}),
    Game("bergen", "bergen", 3),
    Game("matador", "matador", 2, {"target": 25}),
    Game("block-teams", "block_teams", 4, {"target": 30}, mid=3),
]

# ------------------------------------------------------------------ the board as the DOM shows it

BOARD_JS = """() => {
  const root = document.querySelector("#board > .board");
  if (!root) return null;
  const tiles = (run) => [...run.querySelectorAll(":scope > .tile")]
    .map(t => ({ key: t.dataset.tile, a: Number(t.dataset.a), b: Number(t.dataset.b),
                 label: t.getAttribute("aria-label") }));
  const arms = [...root.querySelectorAll(".arm[data-arm]")].map(arm => ({
    id: arm.dataset.arm,
    marker: arm.dataset.marker === "true",
    markerIcon: arm.querySelector("svg.marker[role=img]")?.getAttribute("aria-label") ?? null,
    branches: [...arm.querySelectorAll(".branch[data-branch]")].map(b => {
      const parent = b.parentElement.closest(".branch");
      const parentRun = parent ? [...parent.querySelectorAll(":scope > .run > .tile")] : [];
      return {
        end: Number(b.dataset.branch),
        parent: b.dataset.parent === undefined ? null : Number(b.dataset.parent),
        fromDouble: b.dataset.fromDouble ?? null,
        nestedIn: parent ? Number(parent.dataset.branch) : null,
        parentLast: parentRun.length ? parentRun.at(-1).dataset.tile : null,
        tiles: tiles(b.querySelector(":scope > .run")),
      };
    }),
  }));
  const line = root.querySelector(".line");
  const end = (side) => {
    const e = root.querySelector(`.line-end[data-end="${side}"]`);
    return e ? Number(e.dataset.value) : null;
  };
  const count = root.querySelector(".ends-count");
  return {
    kind: root.dataset.board,
    layout: root.dataset.layout,
    engine: root.querySelector(".hub")?.dataset.engine ?? null,
    arms,
    openDoubles: [...root.querySelectorAll(".tile.open-double")].map(t => t.dataset.tile),
    lines: root.querySelectorAll(".line").length,
    lineTiles: line ? [...line.querySelectorAll(".tile")]
      .sort((x, y) => Number(x.dataset.index) - Number(y.dataset.index))
      .map(t => ({ key: t.dataset.tile, a: Number(t.dataset.a), b: Number(t.dataset.b) })) : [],
    ends: { left: end("left"), right: end("right") },
    count: count?.dataset.count === undefined ? null : Number(count.dataset.count),
    header: count?.dataset.header ?? null,
    targets: [...root.querySelectorAll("button.target")].map(b => ({
      notation: b.dataset.notation, target: b.dataset.target,
      points: b.dataset.points === undefined ? null : Number(b.dataset.points),
      name: b.getAttribute("aria-label"),
    })),
    fresh: root.querySelectorAll(".tile.fresh").length,
  };
}"""


def halves(tile: dict[str, Any]) -> tuple[int, int]:
    return tile.get("a", 0), tile.get("b", 0)


def train_id(ref: dict[str, Any]) -> str:
    return f"m{ref.get('mexican', 0)}" if "mexican" in ref else f"p{ref.get('seat', 0)}"


def branches_of(train: dict[str, Any]) -> list[dict[str, Any]]:
    """A train's branches (MT-DBL-7), or its tiles as the one trunk."""
    if train.get("branches"):
        return list(train["branches"])
    return [{"end": 0, "tiles": train.get("tiles", [])}]


def check_train_board(board: dict[str, Any], view: dict[str, Any], kind: str) -> None:
    """One arm per personal train and per Mexican train (Chicken Foot: per
    line), each with the view's tiles as laid, every foot's branch drawn from
    the double it leaves, nested in the branch that double ends."""
    rules = view["ruleset"]
    assert board["kind"] == kind, board["kind"]
    assert board["engine"] == tile_key(view.get("engine", {})), board["engine"]
    if kind == "train":
        expected_arms = len(view["players"]) + rules.get("mexicanTrains", 1)
    else:
        expected_arms = rules.get("centerLines", 6)  # CL-CF-1
    assert len(board["arms"]) == expected_arms, [a["id"] for a in board["arms"]]
    by_id = {arm["id"]: arm for arm in board["arms"]}
    assert sorted(by_id) == sorted(train_id(t["ref"]) for t in view["trains"]), sorted(by_id)
    for train in view["trains"]:
        arm = by_id[train_id(train["ref"])]
        assert arm["marker"] == bool(train.get("marker")), (arm["id"], train.get("marker"))
        if train.get("marker"):
            assert arm["markerIcon"] == "marker: open to all", arm
        drawn = {b["end"]: b for b in arm["branches"]}
        branches = branches_of(train)
        assert sorted(drawn) == sorted(b.get("end", 0) for b in branches), (
            arm["id"],
            sorted(drawn),
        )
        by_end = {b.get("end", 0): b for b in branches}
        for branch in branches:
            end = branch.get("end", 0)
            shown = drawn[end]
            assert [(t["a"], t["b"]) for t in shown["tiles"]] == [
                halves(t) for t in branch.get("tiles", [])
            ], (arm["id"], end)
            if end == 0:
                assert shown["parent"] is None, shown
                assert shown["fromDouble"] is None, shown
                continue
            parent = branch.get("parentEnd", 0)
            double = by_end[parent]["tiles"][-1]
            assert halves(double)[0] == halves(double)[1], f"branch {end} leaves a non-double"
            assert shown["parent"] == parent, shown
            assert shown["fromDouble"] == tile_key(double), shown
            assert shown["nestedIn"] == parent, shown
            assert shown["parentLast"] == tile_key(double), shown
    open_doubles = view.get("openDoubles") or []
    assert sorted(board["openDoubles"]) == sorted(
        f"{d.get('value', 0)}-{d.get('value', 0)}" for d in open_doubles
    ), (board["openDoubles"], open_doubles)


# ------------------------------------------------------------------ line scoring, as the rules say


def line_after(
    tiles: list[tuple[int, int]], tile: dict[str, Any], end: int
) -> list[tuple[int, int]]:
    """The line (left to right, each tile as (left half, right half)) once
    ``tile`` is placed at ``end`` (CL-LINE-1)."""
    a, b = halves(tile)
    if not tiles:
        return [(min(a, b), max(a, b))]
    value = tiles[0][0] if end == 0 else tiles[-1][1]
    other = b if a == value else a
    return [(other, value), *tiles] if end == 0 else [*tiles, (value, other)]


def fives_count(tiles: list[tuple[int, int]]) -> int:
    """CL-A5-1: a double at an end counts both halves; a lone tile both its numbers."""
    if len(tiles) == 1:
        return sum(tiles[0])
    left, right = tiles[0], tiles[-1]
    return left[0] * (2 if left[0] == left[1] else 1) + right[1] * (
        2 if right[0] == right[1] else 1
    )


def fives_points(tiles: list[tuple[int, int]]) -> int:
    count = fives_count(tiles)
    return count if count > 0 and count % 5 == 0 else 0


def bergen_points(tiles: list[tuple[int, int]]) -> int:
    """CL-BERGEN-1: 2 for a double header (a lone opening double is one), 3 for a triple header."""
    if len(tiles) == 1:
        return 2 if tiles[0][0] == tiles[0][1] else 0
    left, right = tiles[0], tiles[-1]
    if left[0] != right[1]:
        return 0
    return 3 if left[0] == left[1] or right[0] == right[1] else 2


def check_line_board(board: dict[str, Any], view: dict[str, Any]) -> None:
    """One line, its tiles as laid, its two ends those of the view; All Fives'
    ends count and Bergen's header as the rules compute them."""
    game = view["ruleset"]["game"]
    assert board["kind"] == "line", board["kind"]
    assert board["lines"] == 1
    line = view.get("line", {})
    tiles = [halves(t) for t in line.get("tiles", [])]
    assert [(t["a"], t["b"]) for t in board["lineTiles"]] == tiles
    ends = line.get("openEnds", [])
    if ends:
        assert board["ends"] == {"left": ends[0], "right": ends[1]}, (board["ends"], ends)
        assert ends == [tiles[0][0], tiles[-1][1]]
    else:
        assert board["ends"] == {"left": None, "right": None}, board["ends"]
    if game == "GAME_ALL_FIVES" and tiles:
        assert board["count"] == fives_count(tiles), (board["count"], tiles)
    if game == "GAME_BERGEN" and tiles:
        header = {0: "none", 2: "double", 3: "triple"}[bergen_points(tiles)]
        assert board["header"] == header, (board["header"], tiles)


def check_target_points(board: dict[str, Any], view: dict[str, Any], legal: list[Any]) -> int:
    """Every target of the selected tile offers what the play scores (All
    Fives, Bergen); how many targets were checked."""
    game = view["ruleset"]["game"]
    tiles = [halves(t) for t in view.get("line", {}).get("tiles", [])]
    moves = {m["notation"]: m["move"] for m in legal}
    for target in board["targets"]:
        play = moves[target["notation"]]["play"]
        after = line_after(tiles, play["tile"], play["train"].get("end", 0))
        points = fives_points(after) if game == "GAME_ALL_FIVES" else bergen_points(after)
        assert target["points"] == points, (target, tiles)
        assert f"+{points} points" in target["name"], target
        side = "left" if play["train"].get("end", 0) == 0 else "right"
        assert target["name"].startswith("play "), target
        if tiles:
            assert f"the {side} end" in target["name"], target
    return len(board["targets"])


# ------------------------------------------------------------------ driving a game


def view_at(http: httpx.Client, game_id: str, page: Any) -> dict[str, Any]:
    """The public view, once the page shows its version."""
    view: dict[str, Any] = http.get(f"/v1/games/{game_id}").json()
    page.wait_for_function("v => document.body.dataset.version === v", arg=view.get("version", "0"))
    return view


def check_board(page: Any, view: dict[str, Any]) -> dict[str, Any]:
    page.wait_for_selector("#board > .board")
    board: dict[str, Any] = page.evaluate(BOARD_JS)
    game = view["ruleset"]["game"]
    if game == "GAME_MEXICAN_TRAIN":
        check_train_board(board, view, "train")
    elif game == "GAME_CHICKEN_FOOT":
        check_train_board(board, view, "chicken-foot")
    else:
        check_line_board(board, view)
    return board


REDUCED_MOTION_JS = """() => {
  const tile = document.querySelector("#board .tile");
  tile.classList.add("arrive");
  const arrive = getComputedStyle(tile).animationName;
  tile.classList.remove("arrive");
  const target = document.querySelector("#board button.target");
  return { arrive, target: target ? getComputedStyle(target).animationName : null };
}"""


def check_phone_and_motion(page: Any, game: Game, view: dict[str, Any]) -> None:
    """At 412 px the page is no wider than the screen and the board is drawn
    again (the train boards on one side of the station); under
    prefers-reduced-motion nothing on the board moves."""
    page.set_viewport_size(PHONE)
    if view["ruleset"]["game"] in ("GAME_MEXICAN_TRAIN", "GAME_CHICKEN_FOOT"):
        page.wait_for_function(
            "() => document.querySelector('#board > .board')?.dataset.layout === 'one-sided'"
        )
    page.wait_for_timeout(300)  # the redraw's rails, after layout
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page is {width} px wide on a {PHONE['width']} px phone"
    check_board(page, view)
    assert_accessible(page, "phone")
    page.screenshot(
        path=str(ARTIFACTS / f"board-{game.slug}-phone.png"), full_page=True, animations="disabled"
    )
    moving = page.evaluate(REDUCED_MOTION_JS)
    assert moving["arrive"] == "tile-arrive", moving
    page.emulate_media(reduced_motion="reduce")
    still = page.evaluate(REDUCED_MOTION_JS)
    assert still == {"arrive": "none", "target": None if moving["target"] is None else "none"}, (
        still
    )
    page.emulate_media(reduced_motion="no-preference")
    page.set_viewport_size(DESK)
    if view["ruleset"]["game"] in ("GAME_MEXICAN_TRAIN", "GAME_CHICKEN_FOOT"):
        page.wait_for_function(
            "() => document.querySelector('#board > .board')?.dataset.layout === 'two-sided'"
        )


def docs_shot(page: Any, game: Game) -> None:
    """The board and the hand below it, for docs/web-table.md, in 256
    colours: a person cannot tell them from the screenshot's on a page of
    the docs, at a fraction of its size."""
    DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
    board = page.locator("#board").bounding_box()
    hand = page.locator("#hand-area").bounding_box()
    assert board
    assert hand
    bottom = max(board["y"] + board["height"], hand["y"] + hand["height"])
    clip = {
        "x": board["x"] - 8,
        "y": board["y"] - 8,
        "width": board["width"] + 16,
        "height": bottom - board["y"] + 16,
    }
    png = page.screenshot(full_page=True, animations="disabled", clip=clip)
    path = DOCS_SHOTS / f"{game.slug}.png"
    with Image.open(io.BytesIO(png)) as picture:
        picture.convert("RGB").quantize(256).save(path, optimize=True)
    size = path.stat().st_size
    assert size <= DOCS_SHOT_MAX_BYTES, f"{path} is {size} bytes"
    print(f"\ndocs picture: {path} ({size} bytes)")


def choose_by_keyboard(page: Any) -> None:
    """Enter on a playable hand tile takes the focus to its first target on
    the board, named for a person; Escape there puts the tile back and the
    focus on it."""
    tile = page.locator("#hand button.playable:not([disabled])").first
    key = tile.get_attribute("data-tile")
    tile.focus()
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.activeElement?.matches('#board button.target')")
    name = page.evaluate("() => document.activeElement.getAttribute('aria-label')")
    assert name.startswith(f"play {key.replace('-', EN_DASH)} "), name
    page.keyboard.press("Escape")
    page.wait_for_function(
        "k => document.activeElement?.matches(`#hand button[data-tile='${k}']`)"
        " && !document.querySelector('#board button.target')",
        arg=key,
    )


def seeded(game: Game) -> Any:
    """A route handler giving CreateGame the game's seed: the same deal, and
    the same bot moves, on every run."""

    def handle(route: Any) -> None:
        request = route.request
        if request.method != "POST":
            route.continue_()
            return
        body = json.loads(request.post_data or "{}")
        body["seed"] = f"railyard-board-{game.slug}"
        route.continue_(post_data=json.dumps(body))

    return handle


def play_game(url: str, game: Game) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    seats = [("Ann", "")] + [(name, GREEDY) for name in ("Bob", "Cy", "Dee")[: game.seats - 1]]

    def shot(moment: str) -> Path:
        return ARTIFACTS / f"board-{game.slug}-{moment}.png"

    with browser_page() as (page, network), httpx.Client(base_url=url, timeout=30) as http:
        page.set_viewport_size(DESK)
        page.route("**/v1/games", seeded(game))
        create_table(page, url, game.preset, seats=seats, **game.limits)
        page.unroute("**/v1/games")
        params = hash_params(page)
        game_id, token = params["game"], params["token"]
        seen: list[tuple[int, str]] = []
        fresh_seen = points_checked = feet_seen = markers_seen = 0
        mid_at: int | None = None
        for moves in range(MAX_MOVES):
            page.wait_for_function(READY_JS)
            view = view_at(http, game_id, page)
            now = page.evaluate(STATE_JS)
            seen.extend((now["round"], tile) for tile in now["hand"] + now["offBoard"])
            if now["status"] == "finished":
                break
            board = check_board(page, view)
            fresh_seen += board["fresh"]
            feet_seen += sum(
                b["fromDouble"] is not None for a in board["arms"] for b in a["branches"]
            )
            markers_seen += sum(a["marker"] for a in board["arms"])
            if moves == 0:
                page.screenshot(path=str(shot("start")), full_page=True, animations="disabled")
            scoring = view["ruleset"]["game"] in ("GAME_ALL_FIVES", "GAME_BERGEN")
            # Mid-game: the first turn from game.mid on with a tile to play
            # (its targets in the pictures).
            is_mid = (
                mid_at is None and moves >= game.mid and (now["playable"] or moves >= game.mid + 8)
            )
            if is_mid:
                mid_at = moves
            if now["playable"] and is_mid:
                choose_by_keyboard(page)
            if now["playable"] and (is_mid or scoring):
                # A tile chosen: its targets on the board, named and (All Fives, Bergen) scored.
                choose_a_tile(page)
                board = check_board(page, view)
                assert board["targets"], "the chosen tile has no target on the board"
                assert all(t["name"].startswith("play ") for t in board["targets"]), board[
                    "targets"
                ]
                if scoring:
                    legal = http.get(
                        f"/v1/games/{game_id}/legal-moves",
                        headers={"authorization": f"Bearer {token}"},
                    ).json()["moves"]
                    points_checked += check_target_points(board, view, legal)
            if is_mid:
                page.screenshot(path=str(shot("mid-game")), full_page=True, animations="disabled")
                if os.environ.get("RAILYARD_DOCS_SHOTS") == "1":
                    docs_shot(page, game)
                assert_accessible(page, f"{game.slug} mid-game, a tile chosen")
                check_phone_and_motion(page, game, view)
            click_a_move(page, page.evaluate(STATE_JS))
        else:
            raise AssertionError(f"the game did not end in {MAX_MOVES} moves")
        assert mid_at is not None, f"the game ended after {moves} moves, before mid-game"
        view = http.get(f"/v1/games/{game_id}").json()
        assert view["status"] == "GAME_STATUS_FINISHED"
        check_board(page, view)
        # Bots played between the person's moves: their tiles were ringed as new.
        assert fresh_seen, "no tile another player placed was ever marked as new"
        if view["ruleset"]["game"] in ("GAME_ALL_FIVES", "GAME_BERGEN"):
            assert points_checked, "no target's points were checked"
        # The seeds are chosen so that these were there to check.
        if view["ruleset"]["game"] == "GAME_CHICKEN_FOOT":
            assert feet_seen, "no foot was drawn"
        if view["ruleset"]["game"] == "GAME_MEXICAN_TRAIN":
            assert markers_seen, "no train marker was drawn"
        check_game(page, url, network, seen)
        page.screenshot(path=str(shot("end")), full_page=True, animations="disabled")
    print(f"\nboard screenshots: {ARTIFACTS}/board-{game.slug}-*.png")


@pytest.mark.parametrize("game", GAMES, ids=[g.slug for g in GAMES])
def test_web_board_plays_a_game_to_the_end(redis_url: str, game: Game) -> None:
    """A whole game of each kind through the page, its board checked against the view as it goes."""
    with service(redis_url) as url:
        play_game(url, game)
