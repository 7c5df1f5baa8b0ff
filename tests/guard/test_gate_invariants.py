"""The write gate's "already recorded" rule against AGENTS.md and SOUL.md (issue 35): a memory body
the rules already hold is refused from exactly MIN_RULE_MATCH normalised characters, and a shorter
one is let through (it would match by accident); both sides of the boundary, in both files, with
the rules' own spacing and case (normalised as the body is).

(MEMORY.md treated as spliced only when it is HEAD's index with the changed lines spliced in:
tests/guard/test_index_scan.py::test_a_claimed_clean_index_that_is_not_a_splice_is_scanned_whole.)
"""

from __future__ import annotations

import pytest

from desk.gate.memory_gate import MIN_RULE_MATCH, GateRejection
from desk.layout import DeskFolder
from desk.memory.operations import remember
from desk.text.normalize import normalize
from tests.guard_helpers import add_commit

RULES = "# Rules\n\n- Always USE   Tabs\u3000NOW, in every file we touch.\n"  # odd spacing, case, an ideographic space
AT_LIMIT = "use tabs now"
BELOW = "use tabs no"


@pytest.mark.parametrize("rules_file", ["AGENTS.md", "SOUL.md"])
def test_a_body_the_rules_hold_is_refused_from_exactly_the_minimum_length(desk: DeskFolder, rules_file: str) -> None:
    assert len(normalize(AT_LIMIT)) == MIN_RULE_MATCH and len(normalize(BELOW)) == MIN_RULE_MATCH - 1
    path = desk.root / rules_file
    path.write_text(path.read_text() + RULES if path.exists() else RULES)
    proc = add_commit(desk.root, f"rules: tabs ({rules_file})", rules_file)
    assert proc.returncode == 0, proc.stderr
    with pytest.raises(GateRejection) as refused:
        remember(desk, "tabs", type="convention", description="indentation", body=AT_LIMIT.upper())
    assert refused.value.reason == "already_recorded" and rules_file in refused.value.message
    assert not (desk.root / "memory/tabs.md").exists()
    remember(desk, "tabs", type="convention", description="indentation", body=BELOW)  # too short to judge
    assert (desk.root / "memory/tabs.md").exists()
