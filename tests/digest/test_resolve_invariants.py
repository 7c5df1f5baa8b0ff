"""`desk resolve`'s adjudication promises (issue 35): a case is stale when evidence it counted no
longer counts, and the assistant may not adjudicate under any spelling of its name; the actor's
length limit pinned on both sides."""

from __future__ import annotations

import json

import pytest

import desk as desk_api
from desk.api import Desk
from desk.digest.resolve import ACTOR_MAX
from desk.errors import ConflictError, UsageError
from tests.conftest import git, snapshot
from tests.digest.test_resolve import AS_OF, d, decide, fact, tie_without_incumbent  # noqa: F401 (d: a fixture)
from tests.guard_helpers import add_commit


def test_evidence_that_no_longer_counts_makes_the_case_stale(d: Desk) -> None:  # noqa: F811
    fact(d, "Use Python 3.11.", "2026-10-20T10:00:00Z")  # old enough at AS_OF (30 days), each side twice
    fact(d, "Use Python 3.12.", "2026-10-20T10:00:00Z")
    case = tie_without_incumbent(d)
    assert len(case["observed_fact_ids"]) == 4
    # A person raises the policy's minimum age: the October facts stop counting, the tie stays.
    config = d.path(".system/desk.json")
    data = json.loads(config.read_text())
    data.setdefault("distill", {})["min_age_days"] = 60
    config.write_text(json.dumps(data, indent=2) + "\n")
    assert add_commit(d.root, "distill: older evidence only", ".system/desk.json").returncode == 0
    d = desk_api.open(d.root)  # noqa: F811 (the policy read again)
    before = snapshot(d.root)
    with pytest.raises(ConflictError) as err:
        decide(d, case, "Use Python 3.11.")
    assert "stale" in err.value.message and "no longer counted" in err.value.message
    assert snapshot(d.root) == before


@pytest.mark.parametrize("actor", ["Assistant", "ASSISTANT", " assistant", "assistant ", "\tassistant\n",
                                   "aSSistant", "Agent", "AGENT", " agent ", "Model", "MODEL", "model\r"])
def test_the_assistant_may_not_adjudicate_under_any_spelling(d: Desk, actor: str) -> None:  # noqa: F811
    case = tie_without_incumbent(d)
    before = snapshot(d.root)
    with pytest.raises(UsageError) as err:
        decide(d, case, "Use Python 3.11.", actor=actor)
    assert "--actor" in err.value.message + (err.value.hint or "")
    assert snapshot(d.root) == before


def test_the_actor_may_be_exactly_as_long_as_the_limit_and_no_longer(d: Desk) -> None:  # noqa: F811
    case = tie_without_incumbent(d)
    with pytest.raises(UsageError):
        decide(d, case, "Use Python 3.11.", actor="a" * (ACTOR_MAX + 1))
    longest = "r" * (ACTOR_MAX - len("@example.org")) + "@example.org"
    assert decide(d, case, "Use Python 3.11.", actor=longest).status == "resolved"
    assert f"Desk-Actor: {longest}" in git(d.root, "log", "-1", "--format=%B")
