"""docs/ ships the contract (RULES.md, API.md) with the repository, so that a
clone has what the README links; where the contract's home (../shared)
stands beside this checkout, the copies must be current."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


@pytest.mark.parametrize("name", ["API.md", "RULES.md"])
def test_the_contract_ships_with_the_repository(name: str) -> None:
    text = (ROOT / "docs" / name).read_text()
    assert text.startswith("# ")


@pytest.mark.skipif(not SHARED.exists(), reason="../shared is not beside this checkout")
@pytest.mark.parametrize("name", ["API.md", "RULES.md"])
def test_the_contract_copy_is_current(name: str) -> None:
    assert (ROOT / "docs" / name).read_text() == (SHARED / name).read_text(), (
        f"docs/{name} drifted from ../shared/{name}: copy it again"
    )
