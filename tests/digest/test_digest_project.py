"""`desk digest --project`: a project's facts distilled into its own memory folder, conflict cases
that carry the project, and `desk resolve` writing into the project (docs/scopes.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import desk as desk_api
from desk.api import Desk
from desk.errors import UsageError
from desk.layout import DeskFolder, project_index_path, project_memory_path
from desk.formats.memory_file import parse_memory
from tests.conftest import DeskRunner, git

AS_OF = "2026-11-29T20:00:00Z"
NOW = "2026-11-30T09:00:00Z"
KEY = "runtime.python"


def fact(d: Desk, text: str, at: str, project: str | None, *, importance: int = 5) -> str:
    return str(d.fact_add(text, kind="decision", importance=importance, key=KEY, at=at,
                          project=project).id)


def project_memory(d: DeskFolder, project: str, name: str = KEY) -> Any:
    path = project_memory_path(project, name)
    return parse_memory(d.path(path).read_bytes(), path, name)


@pytest.fixture
def d(desk: DeskFolder) -> Desk:
    return desk_api.open(desk.root)


def test_a_project_digest_distils_only_that_projects_facts_into_its_folder(d: Desk, run: DeskRunner) -> None:
    fact(d, "Use Python 3.12.", "2026-09-01T10:00:00Z", "billing")
    fact(d, "Use Python 3.11.", "2026-09-01T10:00:00Z", "search")
    fact(d, "Use Python 3.10.", "2026-09-01T10:00:00Z", None)
    out = json.loads(run("digest", "--project", "billing", "--as-of", AS_OF, "--json").output)
    assert (out["status"], out["project"], out["promoted"], out["journal"]) == (
        "committed", "billing", [KEY], None)
    assert out["facts"] == 1  # search's and the desk-wide fact are not this scope's
    memory = project_memory(d, "billing")
    assert memory.meta.project == "billing" and memory.body == "Use Python 3.12.\n"
    assert memory.meta.source == "digest" and memory.meta.key == KEY
    index = d.path(project_index_path("billing")).read_text()
    assert f"- [{KEY}](memory/{KEY}.md)" in index
    changed = git(d.root, "show", "--name-only", "--format=", "HEAD").split()
    assert project_memory_path("billing", KEY) in changed and project_index_path("billing") in changed
    assert not any(p.startswith(("memory/", "journal/")) or p == "MEMORY.md" for p in changed)
    assert "Desk-Project: billing" in git(d.root, "log", "-1", "--format=%B")
    assert not d.path(f"memory/{KEY}.md").exists() and not d.path("projects/search").exists()
    assert run("digest", "--project", "billing", "--as-of", AS_OF, "--json").exit_code == 0
    assert git(d.root, "log", "-1", "--format=%s").startswith("digest: 2026-11-29 (project billing)")
    # the same key in another project and desk-wide: each its own memory, nothing superseded
    assert d.digest(as_of=AS_OF, project="search").value.promoted == [KEY]
    assert d.digest(as_of=AS_OF).value.promoted == [KEY]
    assert project_memory(d, "billing").body == "Use Python 3.12.\n"
    assert project_memory(d, "search").body == "Use Python 3.11.\n"
    assert "3.10" in d.path(f"memory/{KEY}.md").read_text()
    assert d.validate("all").exit_code == 0
    listed = json.loads(run("list", "--project", "billing", "--json").output)
    assert [m["name"] for m in listed["memories"]] == [KEY]


def test_newer_confirmations_in_one_project_never_supersede_another(d: Desk) -> None:
    fact(d, "Use Python 3.11.", "2026-08-01T10:00:00Z", "billing")
    fact(d, "Use Python 3.11.", "2026-08-01T10:00:00Z", "search")
    d.digest(as_of=AS_OF, project="billing")
    d.digest(as_of=AS_OF, project="search")
    for day in ("2026-09-01", "2026-09-02"):  # two newer confirmations, in search only
        fact(d, "Use Python 3.13.", f"{day}T10:00:00Z", "search", importance=2)
    billing = d.digest(as_of=AS_OF, project="billing").value  # commits only the archive's growth
    assert (billing.superseded, billing.conflicts, billing.paths) == ([], [], billing.archive)
    assert d.digest(as_of=AS_OF, project="search").value.superseded == [KEY]
    assert project_memory(d, "billing").body == "Use Python 3.11.\n"
    assert project_memory(d, "search").body == "Use Python 3.13.\n"


def tie_in_project(d: Desk, project: str = "billing") -> dict[str, Any]:
    fact(d, "Use Python 3.11.", "2026-09-01T10:00:00Z", project)
    fact(d, "Use Python 3.12.", "2026-09-01T10:00:00Z", project)
    result = d.digest(as_of=AS_OF, project=project).value
    [case_id] = result.conflicts
    return next(c for c in d.conflicts_list().cases if c["id"] == case_id)


def test_a_project_tie_opens_a_case_carrying_the_project(d: Desk, run: DeskRunner) -> None:
    case = tie_in_project(d)
    assert case["project"] == "billing" and case["domain"] == f"project:billing/key:{KEY}"
    assert case["key"] == KEY
    fact(d, "Use Python 3.11.", "2026-09-01T10:00:00Z", None)  # desk-wide: the same key, no tie
    fact(d, "Use Python 3.12.", "2026-09-01T10:00:00Z", None)
    desk_case = d.digest(as_of=AS_OF).value.conflicts
    assert len(desk_case) == 1 and desk_case != [case["id"]]  # a case of its own, the first one kept
    cases = {c["id"]: c for c in d.conflicts_list().cases}
    assert len(cases) == 2 and "project" not in cases[desk_case[0]]
    assert "project billing" in run("conflicts").output
    shown = run("conflicts", "show", case["id"])
    assert "(project billing)" in shown.output and shown.exit_code == 0
    assert d.validate("all").exit_code == 0


def test_resolving_a_project_case_writes_into_the_projects_memory_folder(d: Desk, run: DeskRunner) -> None:
    case = tie_in_project(d)
    chosen = next(c["id"] for c in case["candidates"] if c["content"] == "Use Python 3.12.")
    result = d.resolve(case["id"], chosen, expected_revision=1, event_id="review:billing:1",
                       actor="ada@example.org", rationale="Billing needs 3.12.", now=NOW).value
    assert (result.status, result.outcome, result.memory) == ("resolved", "replaced", KEY)
    assert project_memory(d, "billing").body == "Use Python 3.12.\n"
    assert project_memory(d, "billing").meta.project == "billing"
    changed = git(d.root, "show", "--name-only", "--format=", "HEAD").split()
    assert project_memory_path("billing", KEY) in changed and project_index_path("billing") in changed
    assert "MEMORY.md" not in changed and not d.path(f"memory/{KEY}.md").exists()
    assert d.conflicts_list().cases == []
    assert d.validate("all").exit_code == 0
    assert d.digest(as_of=AS_OF, project="billing").value.status == "unchanged"  # the decision stands


def test_a_hand_copied_project_memory_in_the_way_is_skipped_not_overwritten(d: Desk) -> None:
    fact(d, "Use Python 3.12.", "2026-09-01T10:00:00Z", "billing")
    d.digest(as_of=AS_OF, project="billing")
    data = d.path(project_memory_path("billing", KEY)).read_bytes()
    d.path("projects/search/memory").mkdir(parents=True)
    d.path(project_memory_path("search", KEY)).write_bytes(data)  # records project billing
    git(d.root, "add", "projects/search")
    git(d.root, "-c", "user.name=Ada", "-c", "user.email=ada@example.org", "commit", "-q",
        "--no-verify", "-m", "a copy by mistake")
    fact(d, "Use Python 3.11.", "2026-09-01T10:00:00Z", "search")
    result = d.digest(as_of=AS_OF, project="search").value
    assert result.promoted == [] and result.skipped[0]["reason"].startswith("scope_mismatch:")
    assert d.path(project_memory_path("search", KEY)).read_bytes() == data


def test_project_digest_refuses_journal_options_and_bad_names(d: Desk, run: DeskRunner) -> None:
    with pytest.raises(UsageError):
        d.digest(project="billing", date="2026-11-29", as_of=AS_OF)
    assert run("digest", "--project", "Bad!").exit_code == 2
    assert run("digest", "--project", "billing", "--summarizer", "cat").exit_code == 2


def test_an_open_project_case_against_an_incumbent_is_not_stale_to_the_desk_wide_rules(d: Desk) -> None:
    """desk validate's keyed rules weigh desk-wide memories: a project case's incumbent lives in the
    project, so it is not reported as a stale case (and a desk-wide memory of the same key is not it)."""
    fact(d, "Use SQLite.", "2026-08-01T10:00:00Z", "billing")
    fact(d, "Use SQLite.", "2026-08-01T10:00:00Z", None)
    for day in ("2026-09-01", "2026-09-02"):
        fact(d, "Use Postgres.", f"{day}T10:00:00Z", "billing", importance=2)
        fact(d, "Use MySQL.", f"{day}T10:00:00Z", "billing", importance=2)
    d.digest(as_of=AS_OF)
    [case_id] = d.digest(as_of=AS_OF, project="billing").value.conflicts
    case = next(c for c in d.conflicts_list().cases if c["id"] == case_id)
    assert case["active"]["name"] == KEY and case["project"] == "billing"
    report = d.validate("all").to_json()
    assert report["errors"] == 0 and not [f for f in report["findings"] if f["rule"] == "conflicts-stale-case"]
    kept = next(c["id"] for c in case["candidates"] if c["role"] == "incumbent")
    result = d.resolve(case_id, kept, expected_revision=1, event_id="review:billing:kept",
                       actor="ada@example.org", rationale="SQLite is enough", now=NOW).value
    assert result.outcome == "kept" and project_memory(d, "billing").body == "Use SQLite.\n"
