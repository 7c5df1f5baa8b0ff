"""The digest follows review mode by type: what the policy proposes becomes one proposal, never
written by the run, and is not proposed again while pending or once rejected."""

from __future__ import annotations

from desk.digest.facts import add_fact
from desk.digest.run import digest
from desk.layout import DeskFolder
from tests.conftest import DeskRunner, git
from tests.review.test_review import as_json, enable

AS_OF = "2026-11-29T12:00:00Z"


def facts(desk: DeskFolder) -> None:
    add_fact(desk, "SQLite must run in WAL mode.", kind="decision", importance=5,
             key="storage.sqlite.journal-mode", at="2026-09-01T10:00:00Z")
    add_fact(desk, "Never log tokens.", kind="pitfall", importance=5, key="security.tokens",
             at="2026-09-02T10:00:00Z")


def test_the_digest_proposes_what_the_policy_says_and_writes_the_rest(desk: DeskFolder, run: DeskRunner) -> None:
    enable(desk, {"decision": "propose"})
    facts(desk)
    result = digest(desk, as_of=AS_OF)
    assert result.promoted == ["security.tokens"] and result.proposed == ["storage.sqlite.journal-mode"]
    assert result.proposal is not None
    assert not (desk.root / "memory/storage.sqlite.journal-mode.md").exists()
    assert "storage.sqlite.journal-mode" not in (desk.root / "MEMORY.md").read_text()
    assert git(desk.root, "status", "--porcelain") == ""
    again = digest(desk, as_of=AS_OF)  # still pending: not proposed a second time
    assert again.proposal is None and again.proposed == ["storage.sqlite.journal-mode"]
    assert [p["id"] for p in as_json(run("review", "list", "--json"))["proposals"]] == [result.proposal]
    assert run("review", "accept", result.proposal).exit_code == 0
    assert "storage.sqlite.journal-mode" in (desk.root / "MEMORY.md").read_text()
    assert run("validate", "--all").exit_code == 0


def test_a_rejected_digest_proposal_is_not_made_again(desk: DeskFolder, run: DeskRunner) -> None:
    enable(desk, {"*": "propose"})
    facts(desk)
    first = digest(desk, as_of=AS_OF)
    assert first.proposal is not None and first.promoted == []
    assert run("review", "reject", first.proposal, "--reason", "not yet").exit_code == 0
    assert digest(desk, as_of=AS_OF).proposal is None
