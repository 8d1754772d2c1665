"""Every rule id of RULES.md is named by at least one test: sections 1 and 2
(Mexican Train), the line games of section 3 (3.1-3.3 and the bots of 3.5),
and Chicken Foot (3.4, a game of its own with its own tests:
``tests/test_chicken_foot_*.py``)."""

from __future__ import annotations

import re
from pathlib import Path

# The copy that ships with the repository, so that a clone checks it too;
# tests/test_contract_copy.py keeps it equal to ../shared's where that is there.
RULES = Path(__file__).resolve().parents[1] / "docs" / "RULES.md"


def _test_names() -> set[str]:
    names: set[str] = set()
    for path in Path(__file__).parent.glob("test_*.py"):
        names |= set(re.findall(r"def (test_\w+)", path.read_text()))
    return names


def _missing(ids: list[str]) -> list[str]:
    names = _test_names()
    prefixes = {rule: "test_" + rule.lower().replace("-", "_") + "_" for rule in ids}
    return [r for r, p in prefixes.items() if not any(n.startswith(p) for n in names)]


def test_every_rule_id_of_sections_1_and_2_has_a_test() -> None:
    mexican_train = RULES.read_text().split("## 3.")[0]
    ids = sorted(set(re.findall(r"\*\*((?:T|MT)-[A-Z]*-?\d+)\*\*", mexican_train)))
    assert len(ids) >= 40
    assert _missing(ids) == []


def test_every_rule_id_of_the_line_games_has_a_test() -> None:
    text = RULES.read_text()
    classic = text.split("\n## 3. ")[1]
    line_games = classic.split("\n### 3.4")[0] + classic.split("\n### 3.5")[1]
    ids = sorted(set(re.findall(r"\*\*(CL-[A-Z0-9]+-\d+)\*\*", line_games)))
    assert "CL-MAT-1" in ids
    assert "CL-BOT-1" in ids
    assert "CL-CF-1" not in ids
    assert len(ids) >= 16
    assert _missing(ids) == []


def test_every_rule_id_of_chicken_foot_has_a_test() -> None:
    text = RULES.read_text()
    chicken_foot = text.split("\n### 3.4")[1].split("\n### 3.5")[0]
    ids = sorted(set(re.findall(r"\*\*(CL-[A-Z0-9]+-\d+)\*\*", chicken_foot)))
    assert ids == ["CL-CF-1"]
    assert _missing(ids) == []
