"""The web table for everyone (issue 26): axe-core on its pages, a whole
Block hand played by the keyboard alone, the setup form's errors in sight,
and the summaries between hands and at the end.

Like tests/test_web_table.py (whose service, browser and page helpers these
reuse): the real service on a real Redis, Debian's Chromium driven by
Playwright through ``executable_path``. axe-core is the copy the
``axe-playwright-python`` package bundles (a dev dependency), injected into
the page: nothing is fetched from a CDN at test time. Screenshots go to
``tests/artifacts/web-table/`` (git-ignored).
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any
from xml.etree import ElementTree

import httpx

from tests.test_web_table import (
    ARTIFACTS,
    MAX_MOVES,
    READY_JS,
    ROOT,
    STATE_JS,
    browser_page,
    click_a_move,
    create_table,
    hash_params,
    service,
)

WEB = ROOT / "service" / "transports" / "http" / "web"

#: axe-core as axe-playwright-python ships it (read as a file: the package's
#: Python side is not needed, and has no type information).
AXE_JS = (resources.files("axe_playwright_python") / "axe.min.js").read_text(encoding="utf-8")

#: What fails these tests: axe's two worst impacts. (Minor and moderate ones,
#: best practices mostly, are printed by the failure message's neighbours.)
BLOCKING = ("serious", "critical")


def axe_violations(page: Any) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now,
    each with the elements it names."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE_JS)  # (evaluated by the DevTools protocol: the page's CSP allows it)
    result: dict[str, Any] = page.evaluate(
        "async () => await axe.run(document, {resultTypes: ['violations']})"
    )
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at "
        + "; ".join(" ".join(node["target"]) for node in v["nodes"][:5])
        for v in result["violations"]
        if v["impact"] in BLOCKING
    ]


def assert_accessible(page: Any, where: str) -> None:
    found = axe_violations(page)
    assert not found, f"axe-core on the {where} page:\n" + "\n".join(found)


def play_until(page: Any, done_js: str, limit: int = MAX_MOVES) -> None:
    """Clicks moves (test_web_table's way) until ``done_js`` holds."""
    for _ in range(limit):
        page.wait_for_function(READY_JS)
        if page.evaluate(done_js):
            return
        click_a_move(page, page.evaluate(STATE_JS))
    raise AssertionError(f"{done_js} never held in {limit} moves")


# ------------------------------------------------------------------ the page's head


def test_head_has_a_title_a_favicon_and_no_debug_version(redis_url: str) -> None:
    """The tab reads "Railyard", the favicon is the SVG file the table ships,
    and the header names the game, not the game's version: that stays
    readable by testers in body[data-version] and the status line's title."""
    root = ElementTree.parse(WEB / "favicon.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
    with service(redis_url) as url, browser_page() as (page, _):
        page.goto(url + "/")
        page.wait_for_selector("#preset option[value='block']", state="attached")
        assert "Railyard" in page.title()
        icon = page.locator("link[rel='icon']")
        assert icon.get_attribute("href") == "/web/favicon.svg"
        assert icon.get_attribute("type") == "image/svg+xml"
        create_table(page, url, "block", target=15)
        page.wait_for_function(READY_JS)
        status = page.inner_text("#status-line")
        assert "Block" in status, status
        assert not re.search(r"\bv\d+\b", status), f"a debug version in the header: {status}"
        version = page.evaluate("() => document.body.dataset.version")
        assert re.fullmatch(r"\d+", version), version
        title = page.get_attribute("#status-line", "title") or ""
        assert f"version {version}" in title, title
        assert "Railyard" in page.title()


# ------------------------------------------------------------------ axe-core


def test_axe_finds_nothing_serious_on_the_setup_table_and_end_pages(redis_url: str) -> None:
    """No serious or critical axe-core violation on the setup page (also with
    a refusal shown), the table mid-game (a tile chosen, its targets on the
    board), a hand's summary, and the end (with the deals verified and every
    hand's tiles shown)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with service(redis_url) as url, browser_page() as (page, _):
        page.goto(url + "/")
        page.wait_for_selector("#preset option[value='block']", state="attached")
        assert_accessible(page, "setup")
        page.select_option("#preset", "all_fives")
        page.fill("#target", "0")
        page.click("#create")
        page.locator("#create-error").wait_for(state="visible")
        assert_accessible(page, "setup (a refusal shown)")

        create_table(page, url, "block", target=20)
        play_until(page, "() => Number(document.body.dataset.version) >= 4")
        if page.locator("#hand button.playable:not([disabled])").count():
            page.click("#hand button.playable:not([disabled])")
            page.wait_for_selector("button.target")
        page.screenshot(path=str(ARTIFACTS / "a11y-mid-game.png"), full_page=True)
        assert_accessible(page, "table (mid-game)")
        page.keyboard.press("Escape")  # the chosen tile goes back

        # A Block game to 20 can end in its first hand (a 20-pip win), so
        # the wait also ends at the game's end.
        play_until(
            page,
            "() => document.body.dataset.round !== '1'"
            " || document.body.dataset.status === 'finished'",
        )
        if page.evaluate("() => document.body.dataset.status") != "finished":
            page.locator("#round-summary").wait_for(state="visible")
            assert_accessible(page, "table (a hand's summary)")

        play_until(page, "() => document.body.dataset.status === 'finished'")
        assert_accessible(page, "end")
        page.click("#verify")
        page.wait_for_function(
            "() => /^verified/.test(document.getElementById('verify-result').textContent)"
        )
        page.screenshot(path=str(ARTIFACTS / "a11y-end.png"), full_page=True)
        assert_accessible(page, "end (deals verified)")


# ------------------------------------------------------------------ the keyboard alone

FOCUSED_JS = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return {tag: "body"};
  return {
    tag: el.tagName.toLowerCase(), id: el.id, text: el.textContent.trim().slice(0, 40),
    tile: el.dataset.tile || "", notation: el.dataset.notation || "",
    action: el.dataset.action || "",
    playable: el.matches("#hand button.playable:not([disabled])"),
    target: el.matches("button.target"),
    ring: getComputedStyle(el).outlineStyle !== "none" || getComputedStyle(el).boxShadow !== "none",
  };
}"""


def focused(page: Any) -> dict[str, Any]:
    found: dict[str, Any] = page.evaluate(FOCUSED_JS)
    return found


def tab_to(page: Any, selector: str, limit: int = 80) -> dict[str, Any]:
    """Presses Tab until the focus is on ``selector`` (Shift+Tab would do as
    well); the focused element, which shows a focus ring."""
    for _ in range(limit):
        if page.evaluate("s => document.activeElement?.matches(s) === true", selector):
            now = focused(page)
            assert now["ring"], f"no visible focus ring on {now}"
            return now
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {selector}; the focus is on {focused(page)}")


def replace_text(page: Any, text: str) -> None:
    """Types ``text`` over the focused field's value."""
    page.keyboard.press("Control+A")
    page.keyboard.type(text)


KEYBOARD_READY_JS = (
    "() => !document.getElementById('cover').hidden"
    " || document.body.dataset.round !== '1' || (" + READY_JS.removeprefix("() => ") + ")"
)


def test_the_keyboard_alone_plays_a_whole_block_hand(redis_url: str) -> None:
    """Two people on one screen (pass and play) and a bot: the table is set up
    and a whole Block hand played with Tab, Enter, Space and the arrow keys
    only. A chosen tile hands the focus to its first target, a move hands it
    to the next thing to do, the cover's "Show my hand" included; at the
    hand's end its summary is on screen."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with service(redis_url) as url, browser_page() as (page, _):
        page.goto(url + "/")
        page.wait_for_selector("#preset option[value='block']", state="attached")
        # The game: typed on the focused menu ("Block" is the first game of that name).
        tab_to(page, "#preset")
        page.keyboard.type("Block")
        assert page.input_value("#preset") == "block"
        # Seats: Ann and Bea here, and a greedy bot.
        tab_to(page, ".seat-row:nth-child(1) .seat-name")
        replace_text(page, "Ann")
        tab_to(page, ".seat-row:nth-child(2) .seat-name")
        replace_text(page, "Bea")
        page.keyboard.press("Tab")  # the seat's kind: a person ("person here")
        page.keyboard.type("person")
        assert page.input_value(".seat-row:nth-child(2) .seat-kind") == ""
        tab_to(page, "#add-seat")
        page.keyboard.press("Enter")
        assert page.locator(".seat-row").count() == 3
        assert page.input_value(".seat-row:nth-child(3) .seat-kind") == "BOT_LEVEL_GREEDY"
        tab_to(page, "#create")
        page.keyboard.press("Enter")
        page.wait_for_function("() => document.body.dataset.status === 'playing'")
        names = page.locator(".player strong").all_inner_texts()
        assert names[:2] == ["Ann", "Bea"], names

        moves = {"tile": 0, "arrow": 0, "action": 0, "cover": 0}
        for _ in range(MAX_MOVES):
            page.wait_for_function(KEYBOARD_READY_JS)
            if page.evaluate("() => document.body.dataset.round") != "1":
                break
            version = page.evaluate("() => document.body.dataset.version")
            if page.locator("#cover").is_visible():
                tab_to(page, "#cover-show")
                page.keyboard.press("Space")
                moves["cover"] += 1
                page.wait_for_function(READY_JS)
                continue
            if page.locator("#hand button.playable:not([disabled])").count():
                tab_to(page, "#hand button.playable:not([disabled])")
                if page.locator("#hand button.playable:not([disabled])").count() > 1:
                    # The arrows move along the hand's playable tiles (and wrap round).
                    before = focused(page)["tile"]
                    page.keyboard.press("ArrowRight")
                    assert focused(page)["tile"] not in ("", before), focused(page)
                    page.keyboard.press("ArrowLeft")
                    assert focused(page)["tile"] == before, focused(page)
                    moves["arrow"] += 1
                page.keyboard.press("Enter" if moves["tile"] % 2 else "Space")
                now = focused(page)
                assert now["target"], f"a chosen tile did not pass the focus to a target: {now}"
                page.keyboard.press("Enter")
                moves["tile"] += 1
            else:
                tab_to(page, "#actions button:not([disabled])")
                page.keyboard.press("Space")
                moves["action"] += 1
            page.wait_for_function(
                "v => document.body.dataset.version !== v"
                " || !document.getElementById('error').hidden",
                arg=version,
            )
            assert page.locator("#error").is_hidden(), page.inner_text("#error")
        else:
            raise AssertionError(f"the hand did not end in {MAX_MOVES} moves")

        assert moves["tile"] >= 2, moves
        assert moves["cover"] >= 2, moves  # both people were handed the screen
        summary = page.locator("#round-summary")
        summary.wait_for(state="visible")
        assert re.match(r"Hand 1 is over: (domino|blocked)", page.inner_text("#summary-title"))
        page.screenshot(path=str(ARTIFACTS / "keyboard-hand-over.png"), full_page=True)
        # The summary is put away by the keyboard too.
        tab_to(page, "#summary-close")
        page.keyboard.press("Enter")
        assert summary.is_hidden()
    print(f"\nkeyboard moves: {moves}")


# ------------------------------------------------------------------ the setup form


def test_the_setup_form_follows_the_preset_and_shows_its_errors(redis_url: str) -> None:
    """Issue 26's case: block_teams with two seats used to do nothing
    visible. Now the form switches to four seats (CL-TEAM-1) and keeps them;
    a page whose seats were cut anyway says why beside the Create button;
    and the service's own refusal (a target score of 0) shows there too,
    naming the problem and its rule, with the field marked invalid."""
    with service(redis_url) as url, browser_page() as (page, _):
        page.goto(url + "/")
        page.wait_for_selector("#preset option[value='block_teams']", state="attached")
        # Friendly names only: no preset id in the menu.
        labels = page.eval_on_selector_all("#preset option", "os => os.map(o => o.textContent)")
        ids = page.eval_on_selector_all("#preset option", "os => os.map(o => o.value)")
        assert not [label for label in labels if "_" in label or label in ids], labels
        assert page.locator("#preset optgroup").count() >= 7, "one group per game"
        assert page.locator(".seat-row").count() == 2

        page.select_option("#preset", "block_teams")
        assert page.locator(".seat-row").count() == 4
        assert "Two teams of two" in page.inner_text("#seat-note")
        assert "4 seats" in page.inner_text("#seat-note")
        assert "Four players" in page.inner_text("#preset-note")
        assert page.locator("#add-seat").is_disabled()
        assert all(button.is_disabled() for button in page.locator(".seat-remove").all())
        # Back to Block (2 to 4): the seats can go again, down to two.
        page.select_option("#preset", "block")
        page.locator(".seat-remove").last.click()
        page.locator(".seat-remove").last.click()
        assert page.locator(".seat-row").count() == 2
        assert page.locator(".seat-remove").first.is_disabled()
        page.select_option("#preset", "block_teams")
        assert page.locator(".seat-row").count() == 4

        # A page whose seats were cut below the preset's (by hand, or a stale
        # page): refused beside the form, before any request.
        page.evaluate(
            "() => document.querySelectorAll('.seat-row').forEach((r, i) => i > 1 && r.remove())"
        )
        page.click("#create")
        error = page.locator("#create-error")
        error.wait_for(state="visible")
        text = error.inner_text()
        assert "Block for two teams seats 4 players, not 2" in text, text
        assert error.get_attribute("role") == "alert"
        assert page.evaluate("() => document.body.dataset.status || ''") == ""

        # The service's refusal: shown in the same place, the message and the rule id.
        page.select_option("#preset", "all_fives")  # (back to at least two seats)
        page.select_option("#preset", "block_teams")
        assert page.locator(".seat-row").count() == 4
        page.fill("#target", "0")
        page.click("#create")
        page.wait_for_function(
            "() => /target_score/.test(document.getElementById('create-error').textContent)"
        )
        text = error.inner_text()
        assert text.startswith("The table was not created: "), text
        assert "target_score must be at least 1, not 0" in text, text
        assert "INVALID_ARGUMENT" in text, text
        assert "CL-SET-1" in text, text
        assert error.is_visible()
        box, form = error.bounding_box(), page.locator("#create").bounding_box()
        assert box is not None
        assert form is not None
        assert 0 <= box["y"] - form["y"] < 200, (box, form)  # right under Create
        assert page.get_attribute("#target", "aria-invalid") == "true"
        page.screenshot(path=str(ARTIFACTS / "setup-error.png"), full_page=True)

        # Put right, it creates the four-seat team table.
        page.fill("#target", "")
        page.click("#create")
        page.wait_for_function("() => document.body.dataset.status === 'playing'")
        assert page.locator(".player").count() == 4
        assert page.locator(".team").count() == 2


# ------------------------------------------------------------------ summaries and the end


def test_each_hand_ends_in_a_summary_and_the_game_in_its_winners(redis_url: str) -> None:
    """Block against two bots, to 50: at every hand's end the summary says
    how it ended (domino or blocked, as roundEnded does), each seat's tiles
    left and points, and the totals so far; at the end the result names the
    winners the service names, and the verified deals show every hand's
    tiles left, as many hands as were played."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    seats = [("Ann", ""), ("Bot 1", "BOT_LEVEL_GREEDY"), ("Bot 2", "BOT_LEVEL_RANDOM")]
    with service(redis_url) as url, browser_page() as (page, _):
        create_table(page, url, "block", seats=seats, target=50)
        game_id = hash_params(page)["game"]
        hands = 0
        for _ in range(MAX_MOVES):
            page.wait_for_function(READY_JS)
            now = page.evaluate(STATE_JS)
            if now["round"] > hands + 1 or now["status"] == "finished":
                # A hand ended since the last move: its summary is up.
                summary = page.locator("#round-summary")
                summary.wait_for(state="visible")
                hand = int(page.get_attribute("#round-summary", "data-round") or 0)
                assert hand == now["round"] - (0 if now["status"] == "finished" else 1), hand
                reason = page.get_attribute("#round-summary", "data-reason")
                title = page.inner_text("#summary-title")
                assert title.startswith(f"Hand {hand} is over: {reason}"), title
                rows = page.locator("#summary-body tbody tr")
                assert rows.count() == 3
                assert "Ann" in rows.first.inner_text()
                if hands == 0:
                    page.screenshot(path=str(ARTIFACTS / "block-hand-summary.png"), full_page=True)
                hands = hand
            if now["status"] == "finished":
                break
            click_a_move(page, now)
        else:
            raise AssertionError(f"the game did not end in {MAX_MOVES} moves")

        view = httpx.get(f"{url}/v1/games/{game_id}").json()
        log = httpx.get(f"{url}/v1/games/{game_id}/log").json()
        ended = [e["roundEnded"] for e in log["events"] if "roundEnded" in e]
        assert hands == len(ended) >= 1, (hands, len(ended))
        last = ended[-1]
        assert page.get_attribute("#round-summary", "data-reason") == (
            "blocked" if last.get("reason") == "ROUND_END_REASON_BLOCKED" else "domino"
        )
        names = [p.get("displayName", "") for p in view["players"]]
        winners = [names[s] for s in view.get("winners", [])]
        assert winners, view
        assert page.locator("#ending").is_visible()
        result = page.inner_text("#ending-title")
        assert result.startswith("Game over: "), result
        for name in winners:
            assert name in result, (name, result)
        assert "★ winner" in page.inner_text(".standings")

        page.click("#verify")
        page.wait_for_function(
            "() => /^(verified|mismatch|could not)/.test("
            "document.getElementById('verify-result').textContent)"
        )
        assert page.inner_text("#verify-result").startswith("verified")
        assert page.locator("#leftovers details").count() == len(ended)
        assert page.locator("#leftovers details[open] li").count() == 3
        page.screenshot(path=str(ARTIFACTS / "block-end.png"), full_page=True)
    print(f"\nhands played: {hands}; winners: {json.dumps(winners)}")
