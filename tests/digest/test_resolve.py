"""`desk conflicts` and `desk resolve` end to end: real ties from real digests, real commits, the hook."""

from __future__ import annotations

import datetime
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import desk as desk_api
from desk.api import Desk
from desk.digest.facts import add_fact
from desk.errors import ConflictError, DeskError, InvalidFileError, UsageError
from desk.layout import DeskFolder
from desk.formats.memory_file import parse_memory
from desk.formats.audit import parse_audit
from tests.conftest import DeskRunner, git, snapshot

AS_OF = "2026-11-29T20:00:00Z"
NOW = "2026-11-30T09:00:00Z"  # a fixed clock, passed to every resolve: never today's date


def fact(d: DeskFolder, text: str, at: str, *, importance: int = 5, key: str = "runtime.python") -> str:
    return str(add_fact(d, text, kind="decision", importance=importance, key=key, at=at)["id"])


def tie_without_incumbent(d: Desk) -> dict[str, Any]:
    """Two equally supported values, no memory yet: one open case of two challengers."""
    fact(d, "Use Python 3.11.", "2026-09-01T10:00:00Z")
    fact(d, "Use Python 3.12.", "2026-09-01T10:00:00Z")
    d.digest(as_of=AS_OF)
    [case] = d.conflicts_list().cases
    return case


def tie_against_incumbent(d: Desk) -> dict[str, Any]:
    """storage.db holds SQLite; MySQL and Postgres, both newer and confirmed twice, tie."""
    fact(d, "Use SQLite.", "2026-08-01T10:00:00Z", key="storage.db")
    for day in ("2026-09-01", "2026-09-02"):
        fact(d, "Use Postgres.", f"{day}T10:00:00Z", importance=2, key="storage.db")
        fact(d, "Use MySQL.", f"{day}T10:00:00Z", importance=2, key="storage.db")
    d.digest(as_of=AS_OF)
    [case] = d.conflicts_list().cases
    return case


def pick(case: dict[str, Any], content: str) -> str:
    return str(next(c["id"] for c in case["candidates"] if c["content"] == content))


def decide(d: Desk, case: dict[str, Any], content: str, event: str = "review:1", **kw: Any) -> Any:
    args: dict[str, Any] = dict(expected_revision=case["revision"], event_id=event, actor="ada@example.org",
                                rationale="Production needs it.", now=NOW)
    args.update(kw)
    return d.resolve(case["id"], pick(case, content), **args).value


def audit_records(d: DeskFolder) -> list[dict[str, Any]]:
    records = []
    for path in sorted(d.path(".system").glob("adjudications.*.jsonl")):
        found, problems = parse_audit(path.name, path.read_bytes())
        assert problems == []
        records += found
    return records


def commits(d: DeskFolder, op: str = "resolve") -> list[str]:
    out = git(d.root, "log", "--format=%H %(trailers:key=Desk-Op,valueonly,separator=)")
    return [line.split()[0] for line in out.splitlines() if line.split()[1:] == [op]]


def memory(d: DeskFolder, name: str):  # type: ignore[no-untyped-def]
    return parse_memory(d.path(f"memory/{name}.md").read_bytes(), f"memory/{name}.md", name)


@pytest.fixture
def d(desk: DeskFolder) -> Desk:
    git(desk.root, "config", "user.name", "Ada Lovelace")  # for the person's own `git commit`
    git(desk.root, "config", "user.email", "ada@example.org")
    return desk_api.open(desk.root)


# -- deciding ------------------------------------------------------------------------------------

def test_choosing_a_challenger_writes_the_memory_the_case_and_the_audit_in_one_commit(d: Desk) -> None:
    case = tie_without_incumbent(d)
    result = decide(d, case, "Use Python 3.12.")
    assert (result.status, result.outcome, result.memory) == ("resolved", "replaced", "runtime.python")
    assert memory(d, "runtime.python").body == "Use Python 3.12.\n"
    changed = git(d.root, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(changed) == sorted([".system/conflicts.json", "MEMORY.md", "memory/runtime.python.md",
                                      result.audit])
    trailers = git(d.root, "log", "-1", "--format=%(trailers:only,unfold)")
    for line in ("Desk-Op: resolve", f"Desk-Case: {case['id']} r1", "Desk-Event: review:1",
                 "Desk-Actor: ada@example.org"):
        assert line in trailers
    [record] = audit_records(d)
    assert record["event"] == "review:1" and record["before"] is None
    assert record["after"]["blob"] == git(d.root, "rev-parse", "HEAD:memory/runtime.python.md").strip()
    assert record["evidence"] == memory(d, "runtime.python").meta.evidence
    [closed] = d.conflicts_list(include_closed=True).cases
    assert closed["status"] == "resolved" and closed["resolution"]["event"] == "review:1"
    assert d.conflicts_list().cases == []
    assert git(d.root, "status", "--porcelain") == ""
    assert d.validate("all").exit_code == 0
    assert d.digest(as_of=AS_OF).value.status == "unchanged"  # the decision stands: no case reopens


def test_choosing_a_challenger_over_the_incumbent_writes_the_next_revision(d: Desk) -> None:
    case = tie_against_incumbent(d)
    old_blob = git(d.root, "rev-parse", "HEAD:memory/storage.db.md").strip()
    result = decide(d, case, "Use Postgres.")
    assert result.outcome == "replaced" and memory(d, "storage.db").body == "Use Postgres.\n"
    assert memory(d, "storage.db").meta.evidence == next(
        c["evidence"] for c in case["candidates"] if c["content"] == "Use Postgres.")
    [record] = audit_records(d)
    assert record["before"] == {"name": "storage.db", "blob": old_blob}
    assert git(d.root, "show", f"HEAD~1:memory/storage.db.md").count("Use SQLite.") == 2  # history keeps it
    assert d.digest(as_of=AS_OF).value.status == "unchanged"


def test_keeping_the_incumbent_records_kept_and_writes_no_revision(d: Desk) -> None:
    case = tie_against_incumbent(d)
    before = d.path("memory/storage.db.md").read_bytes()
    result = decide(d, case, "Use SQLite.")
    assert result.outcome == "kept" and d.path("memory/storage.db.md").read_bytes() == before
    changed = git(d.root, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(changed) == sorted([".system/conflicts.json", result.audit])
    [record] = audit_records(d)
    assert record["outcome"] == "kept" and record["before"] == record["after"]
    assert d.digest(as_of=AS_OF).value.status == "unchanged"  # the same tie does not reopen


def test_retrying_the_same_event_returns_the_first_result_and_writes_nothing(d: Desk) -> None:
    case = tie_without_incumbent(d)
    first = decide(d, case, "Use Python 3.11.")
    before = snapshot(d.root)
    again = decide(d, case, "Use Python 3.11.")
    assert again.status == "unchanged" and again.commit == first.commit and again.outcome == "replaced"
    assert snapshot(d.root) == before and len(audit_records(d)) == 1 and len(commits(d)) == 1


def test_reusing_an_event_id_for_another_choice_is_refused(d: Desk, run: DeskRunner) -> None:
    case = tie_without_incumbent(d)
    decide(d, case, "Use Python 3.11.")
    before = snapshot(d.root)
    result = run("resolve", case["id"], pick(case, "Use Python 3.12."), "--expected-revision", "1",
                 "--event-id", "review:1", "--actor", "ada@example.org", "--rationale", "Production needs it.")
    assert result.exit_code == 4 and "already recorded a different decision" in result.output
    assert snapshot(d.root) == before


def test_a_stale_revision_is_refused_with_nothing_written(d: Desk, run: DeskRunner) -> None:
    case = tie_without_incumbent(d)
    before = snapshot(d.root)
    result = run("resolve", case["id"], pick(case, "Use Python 3.11."), "--expected-revision", "2",
                 "--event-id", "e1", "--actor", "ada", "--rationale", "why", "--json")
    assert result.exit_code == 4 and "revision 1, not 2" in json.loads(result.output)["message"]
    assert snapshot(d.root) == before


def test_new_evidence_between_show_and_resolve_makes_the_case_stale(d: Desk) -> None:
    case = tie_without_incumbent(d)
    late = fact(d, "Use Python 3.12.", "2026-09-05T10:00:00Z")  # imported late, already old enough
    before = snapshot(d.root)
    with pytest.raises(ConflictError) as err:
        decide(d, case, "Use Python 3.11.")
    assert err.value.exit_code == 4 and "stale" in err.value.message and late in err.value.message
    assert snapshot(d.root) == before
    result = d.digest(as_of=AS_OF).value  # the next digest decides (3.12 now leads), closing the case
    assert result.promoted == ["runtime.python"] and case["id"] in result.conflicts_closed


def test_a_young_fact_is_not_evidence_yet(d: Desk) -> None:
    """A fact too young for the policy does not count for the case until the digest would count it."""
    case = tie_without_incumbent(d)
    fact(d, "Use Python 3.13.", "2026-11-29T10:00:00Z")
    assert decide(d, case, "Use Python 3.11.").status == "resolved"


def test_resolving_a_superseded_case_is_refused_naming_its_successor(d: Desk) -> None:
    case = tie_without_incumbent(d)
    fact(d, "Use Python 3.11.", "2026-09-02T10:00:00Z", importance=5)
    fact(d, "Use Python 3.12.", "2026-09-02T10:00:00Z", importance=5)
    d.digest(as_of=AS_OF)  # new evidence, still tied: revision 2
    [successor] = d.conflicts_list().cases
    assert successor["revision"] == 2
    with pytest.raises(ConflictError) as err:
        decide(d, case, "Use Python 3.11.")
    assert "superseded" in err.value.message and successor["id"] in err.value.message
    assert decide(d, successor, "Use Python 3.11.", event="review:2").status == "resolved"


def test_a_changed_active_memory_makes_the_case_stale(d: Desk) -> None:
    case = tie_against_incumbent(d)
    d.remember("storage.db", "Use DuckDB.", type="decision", description="Edited by hand", triggers=["db"],
               source="digest")  # a person changed the domain's memory: not the one the case saw
    with pytest.raises(ConflictError) as err:
        decide(d, case, "Use MySQL.")
    assert "active memory" in err.value.message


def test_a_candidate_outside_the_case_or_a_missing_case_is_refused(d: Desk) -> None:
    case = tie_without_incumbent(d)
    with pytest.raises(UsageError):
        d.resolve(case["id"], "cand-000000000000", expected_revision=1, event_id="e", actor="a",
                  rationale="r", now=NOW)
    with pytest.raises(DeskError) as err:
        d.resolve("case-0000000000000000", "cand-000000000000", expected_revision=1, event_id="e",
                  actor="a", rationale="r", now=NOW)
    assert err.value.exit_code == 1 and "no conflict case" in err.value.message


def test_a_bad_event_id_actor_or_rationale_is_a_usage_error(d: Desk) -> None:
    case = tie_without_incumbent(d)
    before = snapshot(d.root)
    for bad in ({"event": ""}, {"event": "a b"}, {"event": "e\n"}, {"event": "-x"}, {"event": "x" * 201},
                {"actor": " \n"}, {"actor": "assistant"}, {"rationale": ""}, {"rationale": "x" * 2001}):
        with pytest.raises(UsageError):
            decide(d, case, "Use Python 3.11.", **bad)
    assert snapshot(d.root) == before


def test_a_tampered_audit_line_is_refused_fail_closed(d: Desk) -> None:
    case = tie_against_incumbent(d)
    decide(d, case, "Use SQLite.")
    path = next(d.path(".system").glob("adjudications.*.jsonl"))
    path.write_bytes(path.read_bytes().replace(b"ada@example.org", b"eve@example.org"))
    git(d.root, "commit", "-qam", "tamper", "--no-verify")
    with pytest.raises(InvalidFileError) as err:
        decide(d, case, "Use SQLite.")
    assert err.value.findings[0].rule == "audit-chain" or "audit" in err.value.findings[0].rule


# -- the review queue ------------------------------------------------------------------------

def test_conflicts_show_gives_the_evidence_text_and_the_resolve_commands(d: Desk, run: DeskRunner) -> None:
    case = tie_against_incumbent(d)
    shown = run("conflicts", "show", case["id"])
    assert shown.exit_code == 0
    for text in ("Use SQLite.", "Use MySQL.", "Use Postgres.", "incumbent", "challenger",
                 f"accept: desk resolve {case['id']} {pick(case, 'Use MySQL.')}\n"):
        assert text in shown.output
    assert "ACTOR" not in shown.output and "WHY" not in shown.output  # a command a person can paste
    data = json.loads(run("conflicts", "show", case["id"], "--json").output)["case"]
    records = [r for c in data["candidates"] for r in c["evidence_records"]]
    assert len(records) == 5 and all(r["content"] for r in records)
    listed = json.loads(run("conflicts", "list", "--json").output)["cases"]
    assert [c["id"] for c in listed] == [case["id"]] and all("resolve" in c for c in listed[0]["candidates"])
    assert run("conflicts", "show", "case-0").exit_code == 1


def test_the_cli_resolves_and_reports_json(d: Desk, run: DeskRunner) -> None:
    case = tie_without_incumbent(d)
    result = run("resolve", case["id"], pick(case, "Use Python 3.11."), "--expected-revision", "1",
                 "--event-id", "review:cli", "--actor", "ada@example.org", "--rationale", "LTS", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["status"] == "resolved" and data["commit"] == git(d.root, "rev-parse", "HEAD").strip()
    assert "review:cli" in run("log").output or "resolve" in run("log").output


# -- the gate over the queue and the audit (the hook, validate --all) ----------------------------

def commit_by_hand(root: Path, message: str = "by hand") -> subprocess.CompletedProcess[str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k.startswith("GIT_CONFIG")}
    return subprocess.run(["git", "commit", "-qam", message], cwd=root, env=env, capture_output=True, text=True)


def test_the_hook_refuses_a_hand_broken_case_chain(d: Desk) -> None:
    tie_without_incumbent(d)
    path = d.path(".system/conflicts.json")
    queue = json.loads(path.read_text())
    queue["cases"][0]["revision"] = 3  # revisions must run 1, 2, ...
    path.write_text(json.dumps(queue, indent=2))
    proc = commit_by_hand(d.root)
    assert proc.returncode != 0 and ".system/conflicts.json:" in proc.stderr and "conflicts-chain" in proc.stderr


def test_the_hook_refuses_an_edited_audit_line(d: Desk) -> None:
    case = tie_against_incumbent(d)
    decide(d, case, "Use SQLite.")
    path = next(d.path(".system").glob("adjudications.*.jsonl"))
    path.write_bytes(path.read_bytes().replace(b"Production", b"Convenience"))
    proc = commit_by_hand(d.root)
    assert proc.returncode != 0 and "audit-append-only" in proc.stderr


@pytest.mark.parametrize("broken", [  # more shapes in tests/review/test_formats.py
    b'{"schema_version": 2, "cases": [}\n',
    b'{"schema_version": 2, "cases": [{"id": "x"}]}\n',
    b'\xff\xfe',
])
def test_a_corrupted_queue_is_found_by_the_hook_and_validate_all(d: Desk, run: DeskRunner, broken: bytes) -> None:
    case = tie_without_incumbent(d)
    good = git(d.root, "rev-parse", "HEAD").strip()
    d.path(".system/conflicts.json").write_bytes(broken)
    proc = commit_by_hand(d.root)
    restore = f"git checkout {good[:12]} -- .system/conflicts.json"
    assert proc.returncode != 0 and ".system/conflicts.json" in proc.stderr and restore in proc.stderr
    report = d.validate("all")
    assert report.exit_code == 3
    assert any(f.path == ".system/conflicts.json" and f.rule.startswith(("conflicts-", "encoding"))
               and restore in f.message for f in report.report.findings)
    git(d.root, "commit", "-qam", "broken", "--no-verify")  # committed anyway: HEAD is bad now
    listed = run("conflicts")
    assert listed.exit_code == 3 and f"git checkout {good[:12]} -- .system/conflicts.json" in listed.output
    with pytest.raises(InvalidFileError) as err:
        decide(d, case, "Use Python 3.11.")
    assert err.value.hint and good[:12] in err.value.hint


# -- the keyed state as a whole ------------------------------------------------------------------

def second_holder(d: Desk) -> Path:
    """A hand-made second digest memory of key storage.db, where the digest's alternate name is."""
    text = d.path("memory/storage.db.md").read_text().replace("name: storage.db", "name: storage.db-0000abcd")
    path = d.path("memory/storage.db-0000abcd.md")
    path.write_text(text)
    return path


def test_the_hook_refuses_a_second_active_revision_of_a_key(d: Desk) -> None:
    tie_against_incumbent(d)
    second_holder(d)
    d.reindex()  # MEMORY.md written; the commit of the memory is refused
    git(d.root, "add", "-A")
    proc = commit_by_hand(d.root)
    assert proc.returncode != 0 and "memory/storage.db-0000abcd.md:" in proc.stderr
    assert "keyed-duplicate" in proc.stderr


def test_validate_all_checks_the_keyed_state_as_a_whole(d: Desk) -> None:
    case = tie_against_incumbent(d)
    path = d.path("memory/storage.db.md")
    evidence = case["active"]["evidence"][0]
    path.write_text(path.read_text().replace(evidence, "20260101T000000000000Z-abcdef123456-20260101-000009"))
    second_holder(d)
    findings = d.validate("all").report.findings
    rules = {(f.path, f.rule) for f in findings}
    assert ("memory/storage.db-0000abcd.md", "keyed-duplicate") in rules
    assert ("memory/storage.db.md", "keyed-evidence") in rules
    assert (".system/conflicts.json", "conflicts-stale-case") in rules  # its active memory moved on
    line = next(f.line for f in findings if f.rule == "keyed-evidence")
    assert path.read_text().splitlines()[line - 1].strip().endswith("000009")


# -- cases a merge opened (desk sync) ------------------------------------------------------------

def merge_case(d: Desk, path: str, domain: str, theirs: str | None) -> dict[str, Any]:
    """The case `desk sync` opens when `path` changed on both clones (desk.sync.cases), committed by
    hand through the hook, as the merge commit would carry it."""
    from desk.formats.queue import render_queue
    from desk.sync.cases import sync_case

    ours = d.path(path).read_text()
    if domain.startswith("now:"):
        from desk.formats.now import NowNote
        ours = NowNote.parse(ours).section(domain.split(":", 1)[1]) or ""
    case = sync_case({"path": path, "domain": domain, "kept": "ours",
                      "versions": {"ours": ours, "theirs": theirs}}, d.desk_id, [],
                     datetime.datetime(2026, 11, 30, tzinfo=datetime.timezone.utc))
    d.path(".system/conflicts.json").write_bytes(render_queue([case]))
    git(d.root, "add", ".system/conflicts.json")
    proc = commit_by_hand(d.root, "merge: a case")
    assert proc.returncode == 0, proc.stderr
    return case


def test_a_merge_case_over_a_memory_is_decided_like_any_other(d: Desk) -> None:
    d.remember("deploy", "Deploy on Tuesdays.", type="convention", description="Deploy day", triggers=["deploy"])
    theirs = d.path("memory/deploy.md").read_text().replace("Tuesdays", "Thursdays")
    case = merge_case(d, "memory/deploy.md", "memory:deploy", theirs)
    [listed] = d.conflicts_list().cases
    assert listed["origin"] == "sync"
    other = next(c["id"] for c in case["candidates"] if c["role"] == "challenger")
    result = d.resolve(case["id"], other, expected_revision=1, event_id="m1", actor="ada",
                       rationale="Thursdays now", now=NOW).value
    assert result.outcome == "replaced" and "Thursdays" in d.path("memory/deploy.md").read_text()
    assert "Deploy day" in d.path("MEMORY.md").read_text()
    assert d.validate("all").exit_code == 0 and git(d.root, "status", "--porcelain") == ""


def test_a_merge_case_over_a_now_section_and_a_stale_one(d: Desk) -> None:
    d.now_set("Writing the report.\n", section="doing")
    case = merge_case(d, "NOW.md", "now:doing", "Reviewing the report.\n")
    other = next(c["id"] for c in case["candidates"] if c["role"] == "challenger")
    d.now_append("and the slides", section="doing")  # the kept version changed since
    with pytest.raises(ConflictError):
        d.resolve(case["id"], other, expected_revision=1, event_id="n1", actor="ada", rationale="r", now=NOW)
    git(d.root, "reset", "-q", "--hard", "HEAD~1")
    d.resolve(case["id"], other, expected_revision=1, event_id="n1", actor="ada", rationale="r", now=NOW)
    assert "Reviewing the report." in d.path("NOW.md").read_text()
    assert "Writing the report." not in d.path("NOW.md").read_text()
