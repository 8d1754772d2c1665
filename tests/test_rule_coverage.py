"""Every rule id of RULES.md sections 1 and 2 is named by at least one test."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

RULES = Path(__file__).resolve().parents[2] / "shared" / "RULES.md"


@pytest.mark.skipif(not RULES.exists(), reason="../shared is not beside this checkout")
def test_every_rule_id_of_sections_1_and_2_has_a_test() -> None:
    mexican_train = RULES.read_text().split("## 3.")[0]
    ids = sorted(set(re.findall(r"\*\*((?:T|MT)-[A-Z]*-?\d+)\*\*", mexican_train)))
    assert len(ids) >= 40
    names: set[str] = set()
    for path in Path(__file__).parent.glob("test_*.py"):
        names |= set(re.findall(r"def (test_\w+)", path.read_text()))
    prefixes = {rule: "test_" + rule.lower().replace("-", "_") + "_" for rule in ids}
    missing = [r for r, p in prefixes.items() if not any(n.startswith(p) for n in names)]
    assert missing == []
