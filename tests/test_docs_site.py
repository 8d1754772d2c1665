"""The documentation site (mkdocs.yml, docs/) builds strict and works offline.

``mkdocs build --strict`` (the venv's mkdocs, as ``make docs`` runs it) must
pass: no broken link or anchor, no page left out of the nav, every included
file found. The built folder is then served on a free loopback port and three
pages are opened in headless Chromium (Debian's, through ``executable_path``,
as tests/test_web_table.py does: ``scripts/install-chromium``), with every
request to a host other than 127.0.0.1 recorded and aborted: none may be
attempted (no font, script or style from a CDN). Each page must show its
title, be styled by the theme, and load every file it asks for. Screenshots of
the three pages are saved in the test's temporary folder; the test prints
where. Without Chromium the browser test fails rather than skips.

The Architecture page's folder tree names folders that exist, and every
Python package of the repository's distributions.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

playwright_sync = pytest.importorskip("playwright.sync_api")  # a dev dependency: always there

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
MKDOCS = Path(sys.executable).parent / "mkdocs"
TIMEOUT_MS = 60_000  # generous: CI's two cores run the rest of the suite beside it
#: The pages opened in the browser, and the title each shows.
PAGES = {
    "index.html": "Railyard",
    "getting-started.html": "Getting started",
    "architecture.html": "Architecture",
}
#: Where the repository's Python packages live (their folders must be in the tree).
PACKAGE_ROOTS = ("api/python", "engine/src", "service", "clients/python")


def chromium() -> str:
    path = os.environ.get("RAILYARD_CHROMIUM") or next(
        filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None
    )
    assert path, "chromium is not installed: run ./scripts/install-chromium (or `make unit`)"
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built as `make docs` builds it, into a temporary folder."""
    out = tmp_path_factory.mktemp("docs-site") / "site"
    built = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--config-file", "mkdocs.yml", "--site-dir", str(out)],
        cwd=ROOT,
        # (the theme's notice of its end of life, printed on every build: not ours to read)
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    assert "WARNING" not in built.stderr, built.stderr
    return out


def test_the_site_builds_strict_with_a_page_for_every_doc(site: Path) -> None:
    pages = sorted(p.relative_to(DOCS).with_suffix(".html") for p in DOCS.rglob("*.md"))
    missing = [str(p) for p in pages if not (site / p).is_file()]
    assert missing == [], missing
    for name in PAGES:
        assert name in map(str, pages), name
    # Included when built, from the repository root (pymdownx.snippets).
    assert "GameService" in (site / "reference" / "proto.html").read_text()
    changelog = (ROOT / "CHANGELOG.md").read_text().splitlines()[0].lstrip("# ")
    assert changelog in (site / "changelog.html").read_text()
    # Offline: search's index as a script, links to .html files (no directory URLs).
    assert (site / "search" / "search_index.js").is_file()
    assert 'href="getting-started.html"' in (site / "index.html").read_text()
    assert (site / "architecture.svg").is_file()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def served(folder: Path) -> Iterator[str]:
    """``folder`` over HTTP on a free loopback port, from a thread."""
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="docs-site", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_pages_render_in_chromium_with_nothing_from_outside(site: Path, tmp_path: Path) -> None:
    outside: list[str] = []
    failed: list[str] = []
    errors: list[str] = []

    def only_loopback(route: Any) -> None:
        url = route.request.url
        # data: and blob: URLs never leave the page; anything else must stay on 127.0.0.1.
        if urlsplit(url).scheme in ("data", "blob") or urlsplit(url).hostname == "127.0.0.1":
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    def on_response(response: Any) -> None:
        if response.status >= 400:
            failed.append(f"{response.status} {response.url}")

    with served(site) as base, playwright_sync.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium(),
            headless=True,
            # As root (CI) Chromium will not start with its sandbox.
            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
        )
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.route("**/*", only_loopback)
            page = context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("response", on_response)
            for name, title in PAGES.items():
                page.goto(f"{base}/{name}", wait_until="networkidle")
                heading = page.locator("article h1").first
                heading.wait_for(state="visible")
                assert heading.inner_text().strip().rstrip("¶").strip() == title, name
                assert page.title().startswith(title), (name, page.title())
                # The theme's stylesheet applied: its header sticks to the top.
                header = page.evaluate(
                    "getComputedStyle(document.querySelector('.md-header')).position"
                )
                assert header == "sticky", (name, header)
                if name == "architecture.html":
                    loaded = page.evaluate(
                        "document.querySelector('img[src$=\"architecture.svg\"]').naturalWidth"
                    )
                    assert loaded > 0, "architecture.svg did not load"
                page.screenshot(path=str(tmp_path / f"{Path(name).stem}.png"), full_page=True)
            # Search runs from the built files (the offline plugin's index),
            # typed key by key: the theme searches on key presses.
            page.locator("input.md-search__input").click()
            page.keyboard.type("Chicken Foot")
            page.locator(".md-search-result__item").first.wait_for(state="visible")
            assert "matching" in page.locator(".md-search-result__meta").inner_text()
        finally:
            browser.close()
    print(f"\ndocs site screenshots: {' '.join(sorted(map(str, tmp_path.glob('*.png'))))}")
    assert outside == [], outside
    assert failed == [], failed
    assert errors == [], errors


def _drawn_tree() -> list[str]:
    """The folders of docs/architecture.md's tree, as paths from the root: a
    line indented two spaces more than the one above it names a subfolder."""
    text = (DOCS / "architecture.md").read_text()
    section = text[text.index("## The repository") :]
    (tree,) = re.findall(r"```text\n(.*?)```", section, re.S)[:1]
    parents: list[str] = []
    drawn = []
    for line in tree.rstrip().splitlines():
        depth, rest = divmod(len(line) - len(line.lstrip(" ")), 2)
        assert rest == 0, f"misindented: {line!r}"
        assert depth <= len(parents), f"misindented: {line!r}"
        parents = [*parents[:depth], line.split()[0]]
        drawn.append("".join(parents))
    return drawn


def test_the_architecture_tree_names_existing_folders_and_every_package() -> None:
    drawn = _drawn_tree()
    assert len(drawn) == len(set(drawn)), drawn
    stale = [d for d in drawn if not d.endswith("/") or not (ROOT / d).is_dir()]
    assert stale == [], f"docs/architecture.md draws folders that are not there: {stale}"
    packages = sorted(
        f"{p.parent.relative_to(ROOT).as_posix()}/"
        for root in PACKAGE_ROOTS
        for p in (ROOT / root).rglob("__init__.py")
        if "__pycache__" not in p.parts and "build" not in p.relative_to(ROOT).parts
    )
    undrawn = [p for p in packages if p not in drawn]
    assert undrawn == [], f"docs/architecture.md's tree lacks: {undrawn}"
