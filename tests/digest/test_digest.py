"""`desk fact add` and `desk digest` end to end: real archive files, real git commits."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import pytest

from desk.layout import DeskFolder
from desk.digest.run import digest
from desk.digest.facts import add_fact
from desk.formats.memory_file import parse_memory

from tests.conftest import DeskRunner, git, snapshot

AS_OF = "2026-11-29T20:00:00Z"
LATER = "2027-01-15T20:00:00Z"


def head(desk: DeskFolder) -> str:
    return git(desk.root, "rev-parse", "HEAD").strip()


def trailers(desk: DeskFolder, rev: str = "HEAD") -> dict[str, str]:
    out = git(desk.root, "log", "-1", "--format=%(trailers:only,unfold)", rev)
    pairs = [line.split(": ", 1) for line in out.splitlines() if ": " in line]
    return {k: v for k, v in pairs if k != "Desk-Archive-Head"}


def memory(desk: DeskFolder, name: str):  # type: ignore[no-untyped-def]
    path = f"memory/{name}.md"
    return parse_memory(desk.path(path).read_bytes(), path, name)


def fact(desk: DeskFolder, text: str, at: str, *, kind: str = "decision", importance: int = 3,
         key: str | None = None, session: str | None = None) -> str:
    return str(add_fact(desk, text, kind=kind, importance=importance, key=key, at=at,
                        session=session)["id"])


# -- desk fact add -----------------------------------------------------------------------------

def test_fact_add_appends_a_fact_event(desk: DeskFolder, run: DeskRunner) -> None:
    result = run("fact", "add", "SQLite must run in WAL mode.", "--kind", "decision",
                 "--importance", "5", "--key", "storage.sqlite.journal-mode", "--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert record["kind"] == "fact" and record["content"] == "SQLite must run in WAL mode."
    assert record["payload"] == {"kind": "decision", "importance": 5,
                                 "key": "storage.sqlite.journal-mode", "schema_version": 2}
    lines = [json.loads(line) for path in desk.path(".system/archive").glob("*.jsonl")
             for line in path.read_text().splitlines()]
    assert [r["id"] for r in lines] == [record["id"]]


@pytest.mark.parametrize("args, code", [
    (["x", "--kind", "decision", "--importance", "3", "--key", "Not A Key"], 3),
    (["  ", "--kind", "decision", "--importance", "3"], 3),
    (["x", "--kind", "decision", "--importance", "6"], 2),
    (["x", "--kind", "opinion", "--importance", "3"], 2),
])
def test_invalid_fact_changes_nothing(desk: DeskFolder, run: DeskRunner, args: list[str], code: int) -> None:
    before = snapshot(desk.root)
    result = run("fact", "add", *args)
    assert result.exit_code == code
    assert not list(desk.path(".system/archive").glob("*.jsonl"))
    assert snapshot(desk.root) == before


# -- promotion, idempotence ----------------------------------------------------------------------

def test_digest_promotes_old_important_facts_in_one_commit(desk: DeskFolder) -> None:
    wal = fact(desk, "SQLite must run in WAL mode.", "2026-09-01T10:00:00Z", importance=5,
               key="storage.sqlite.journal-mode")
    a = fact(desk, "Never log tokens.", "2026-09-02T10:00:00Z", kind="pitfall", importance=1)
    b = fact(desk, "never  LOG tokens.", "2026-09-03T10:00:00Z", kind="pitfall", importance=2)
    fact(desk, "Tests pass.", "2026-09-03T11:00:00Z", kind="outcome", importance=5)
    fact(desk, "Too young to count.", "2026-11-20T10:00:00Z", importance=5)
    before = int(git(desk.root, "rev-list", "--count", "HEAD"))
    result = digest(desk, as_of=AS_OF)
    assert result.status == "committed"
    assert int(git(desk.root, "rev-list", "--count", "HEAD")) == before + 1
    assert sorted(result.promoted) == ["pitfall-never-log-tokens-" + result.promoted[0][-8:],
                                       "storage.sqlite.journal-mode"]
    keyed = memory(desk, "storage.sqlite.journal-mode")
    assert (keyed.meta.source, keyed.meta.key, keyed.meta.evidence) == (
        "digest", "storage.sqlite.journal-mode", [wal])
    assert keyed.meta.type == "decision" and keyed.body == "SQLite must run in WAL mode.\n"
    plain = memory(desk, result.promoted[0])
    assert plain.meta.key is None and plain.meta.evidence == sorted([a, b])
    index = desk.path("MEMORY.md").read_text()
    assert "storage.sqlite.journal-mode" in index and result.promoted[0] in index
    assert trailers(desk) == {"Desk-Op": "digest", "Desk-Date": "2026-11-29", "Desk-As-Of": AS_OF,
                              "Desk-Promoted": "2", "Desk-Merged": "0", "Desk-Superseded": "0",
                              "Desk-Conflicts": "0", "Desk-Stale": "0"}
    committed = git(desk.root, "show", "--name-only", "--format=", "HEAD").split()
    assert "journal/2026-11-29.md" in committed
    assert any(p.startswith(".system/archive/") for p in committed)  # evidence is committed too
    assert git(desk.root, "status", "--porcelain") == ""


def test_rerun_commits_nothing(desk: DeskFolder) -> None:
    fact(desk, "Use WAL.", "2026-09-01T10:00:00Z", importance=5, key="storage.mode")
    digest(desk, as_of=AS_OF)
    sha = head(desk)
    again = digest(desk, as_of=AS_OF)
    later = digest(desk, as_of="2026-11-29T23:00:00Z", date="2026-11-29")
    assert again.status == later.status == "unchanged" and again.commit is None
    assert head(desk) == sha


def test_digest_of_an_empty_day_writes_the_journal_once(desk: DeskFolder) -> None:
    first = digest(desk, as_of=AS_OF)
    assert first.status == "committed" and first.paths == ["journal/2026-11-29.md"]
    assert "No events were archived" in desk.path("journal/2026-11-29.md").read_text()
    assert digest(desk, as_of=AS_OF).status == "unchanged"


def test_long_unspaced_text_still_makes_a_valid_memory(desk: DeskFolder) -> None:
    text = "数据库必须启用预写日志模式" * 8  # one "word" longer than any trigger may be
    fact(desk, text, "2026-09-01T10:00:00Z", kind="convention", importance=5)
    fact(desk, "Keep it.", "2026-09-01T10:00:00Z", importance=5, key="x" * 70 + ".y")
    result = digest(desk, as_of=AS_OF)
    assert len(result.promoted) == 2
    for name in result.promoted:
        assert all(len(t) <= 64 for t in memory(desk, name).meta.triggers)


# -- an active memory over time -------------------------------------------------------------------

def test_same_content_only_adds_evidence(desk: DeskFolder) -> None:
    first = fact(desk, "Use WAL.", "2026-09-01T10:00:00Z", importance=5, key="storage.mode")
    digest(desk, as_of=AS_OF)
    created = memory(desk, "storage.mode").meta.created
    again = fact(desk, "use  wal.", "2026-11-01T10:00:00Z", importance=2, key="storage.mode")
    result = digest(desk, as_of=LATER, date="2027-01-15")
    assert result.merged == ["storage.mode"] and result.superseded == []
    merged = memory(desk, "storage.mode")
    assert merged.meta.evidence == sorted([first, again]) and merged.body == "Use WAL.\n"
    assert merged.meta.created == created
    assert trailers(desk)["Desk-Merged"] == "1"


def test_one_confirmation_does_not_supersede_two_do(desk: DeskFolder) -> None:
    fact(desk, "Use SQLite.", "2026-08-01T10:00:00Z", importance=5, key="storage.db")
    digest(desk, as_of=AS_OF)
    fact(desk, "Use Postgres.", "2026-11-01T10:00:00Z", importance=5, key="storage.db")
    one = digest(desk, as_of=LATER, date="2027-01-15")
    assert one.superseded == [] and one.unconfirmed == 1
    assert memory(desk, "storage.db").body == "Use SQLite.\n"
    second = fact(desk, "Use Postgres.", "2026-11-02T10:00:00Z", importance=2, key="storage.db")
    two = digest(desk, as_of=LATER, date="2027-01-15")
    assert two.superseded == ["storage.db"]
    replaced = memory(desk, "storage.db")
    assert replaced.body == "Use Postgres.\n" and second in replaced.meta.evidence
    assert trailers(desk)["Desk-Superseded"] == "1"
    assert 'storage.db: "Use SQLite." -> "Use Postgres."' in git(desk.root, "log", "-1", "--format=%b")
    history = git(desk.root, "log", "--format=%s", "--", "memory/storage.db.md").splitlines()
    assert len(history) == 2  # the superseded revision stays in git history
    assert "Use SQLite." in git(desk.root, "show", "HEAD~1:memory/storage.db.md")


def test_stale_challenger_never_rolls_back(desk: DeskFolder) -> None:
    fact(desk, "Use Postgres.", "2026-08-10T10:00:00Z", importance=5, key="storage.db")
    digest(desk, as_of=AS_OF)
    fact(desk, "Use SQLite.", "2026-08-01T10:00:00Z", importance=5, key="storage.db")
    fact(desk, "Use SQLite.", "2026-08-02T10:00:00Z", importance=5, key="storage.db")
    result = digest(desk, as_of=LATER, date="2027-01-15")
    assert result.superseded == [] and result.stale == 1
    assert memory(desk, "storage.db").body == "Use Postgres.\n"
    assert trailers(desk)["Desk-Stale"] == "1"


# -- conflicts -----------------------------------------------------------------------------------

def test_tie_opens_one_case_and_a_rerun_no_duplicate(desk: DeskFolder, run: DeskRunner) -> None:
    fact(desk, "Use Python 3.11.", "2026-09-01T10:00:00Z", importance=5, key="runtime.python")
    fact(desk, "Use Python 3.12.", "2026-09-01T10:00:00Z", importance=5, key="runtime.python")
    result = digest(desk, as_of=AS_OF)
    assert result.promoted == [] and len(result.conflicts) == 1
    assert not desk.path("memory/runtime.python.md").exists()
    queue = json.loads(desk.path(".system/conflicts.json").read_text())
    assert [c["id"] for c in queue["cases"]] == result.conflicts
    assert trailers(desk)["Desk-Conflicts"] == "1"
    sha = head(desk)
    assert digest(desk, as_of=AS_OF).status == "unchanged" and head(desk) == sha
    listed = run("conflicts", "--json")
    assert [c["id"] for c in json.loads(listed.output)["cases"]] == result.conflicts
    assert "Python 3.1" not in desk.path("MEMORY.md").read_text()  # never injected
    for args in (("context", "--query", "Use Python runtime"), ("recall", "Python 3.11")):
        shown = run(*args)
        assert "Python 3.1" not in shown.output, args


def test_a_tie_behind_a_new_value_promotes_it_and_opens_a_case_against_it(desk: DeskFolder) -> None:
    fact(desk, "Use SQLite.", "2026-08-01T10:00:00Z", importance=5, key="storage.db")
    for day in ("2026-09-01", "2026-09-02"):
        fact(desk, "Use Postgres.", f"{day}T10:00:00Z", importance=2, key="storage.db")
        fact(desk, "Use MySQL.", f"{day}T10:00:00Z", importance=2, key="storage.db")
    result = digest(desk, as_of=AS_OF)
    assert result.promoted == ["storage.db"] and len(result.conflicts) == 1
    assert memory(desk, "storage.db").body == "Use SQLite.\n"
    case = json.loads(desk.path(".system/conflicts.json").read_text())["cases"][0]
    assert case["active"]["name"] == "storage.db"
    assert [(c["role"], c["content"]) for c in case["candidates"]] == [
        ("incumbent", "Use SQLite."), ("challenger", "Use MySQL."), ("challenger", "Use Postgres.")]
    sha = head(desk)
    assert digest(desk, as_of=AS_OF).status == "unchanged" and head(desk) == sha


def test_a_persons_edit_of_a_digest_memory_stands(desk: DeskFolder) -> None:
    from desk.memory.operations import remember

    fact(desk, "Never log tokens.", "2026-09-01T10:00:00Z", kind="pitfall", importance=5)
    name = digest(desk, as_of=AS_OF).promoted[0]
    remember(desk, name, type="pitfall", description="Edited", body="Never log tokens or passwords.",
             triggers=["tokens"], source="digest")
    result = digest(desk, as_of=AS_OF)  # the journal may list the edit; no memory changes
    assert result.paths in ([], ["journal/2026-11-29.md"]) and result.stale == 1
    assert sorted(p.name for p in desk.path("memory").glob("*.md")) == [f"{name}.md"]
    assert memory(desk, name).body == "Never log tokens or passwords.\n"


def test_a_forgotten_digest_memory_comes_back_only_with_facts_after_the_forget(desk: DeskFolder) -> None:
    from desk.memory.operations import forget

    fact(desk, "Use WAL.", "2026-09-01T10:00:00Z", importance=5, key="storage.mode")
    digest(desk, as_of=AS_OF)
    forget(desk, "storage.mode", reason="wrong")  # forgotten now, i.e. after every fact so far
    fact(desk, "Use WAL.", "2026-09-02T10:00:00Z", importance=5, key="storage.mode")
    again = digest(desk, as_of=AS_OF)
    assert again.promoted == [] and not desk.path("memory/storage.mode.md").exists()
    later = dt.datetime(2099, 1, 1, 10, tzinfo=dt.timezone.utc)  # added then: an event is never 24 h ahead of now
    add_fact(desk, "Use WAL.", kind="decision", importance=5, key="storage.mode", at="2099-01-01T10:00:00Z", now=later)
    back = digest(desk, as_of="2099-03-01T00:00:00Z")
    assert back.promoted == ["storage.mode"]


# -- boundaries ----------------------------------------------------------------------------------

def test_digest_never_touches_now_md(desk: DeskFolder) -> None:
    desk.path("NOW.md").write_text("# NOW\n\n## Doing\n- my own uncommitted note\n")
    fact(desk, "Use WAL.", "2026-09-01T10:00:00Z", importance=5, key="storage.mode", session="s1")
    add_fact(desk, "Update NOW.md with the plan.", kind="outcome", importance=3, at="2026-11-29T10:00:00Z")
    now_before = desk.path("NOW.md").read_bytes()
    committed_before = git(desk.root, "show", "HEAD:NOW.md")
    result = digest(desk, as_of=AS_OF)
    assert result.status == "committed" and "NOW.md" not in result.paths
    assert desk.path("NOW.md").read_bytes() == now_before
    assert git(desk.root, "show", "HEAD:NOW.md") == committed_before
    assert git(desk.root, "status", "--porcelain").strip() == "M NOW.md"
    touched = git(desk.root, "log", "--format=", "--name-only", "--grep=Desk-Op: digest")
    assert "NOW.md" not in touched.split()


def test_dirty_memory_file_is_refused_with_nothing_changed(desk: DeskFolder) -> None:
    fact(desk, "Use WAL.", "2026-09-01T10:00:00Z", importance=5, key="storage.mode")
    desk.path("memory/storage.mode.md").write_text("a person's draft\n")
    before = snapshot(desk.root)
    from desk.errors import ConflictError

    with pytest.raises(ConflictError, match="memory/storage.mode.md"):
        digest(desk, as_of=AS_OF)
    assert snapshot(desk.root) == before


def test_a_persons_memory_keeps_its_name_and_its_content_is_not_duplicated(desk: DeskFolder) -> None:
    from desk.memory.operations import remember

    remember(desk, "storage.mode", type="decision", description="Mine", body="Something else.",
             triggers=["storage"])
    remember(desk, "wal-rule", type="decision", description="Also mine", body="Always use WAL mode.",
             triggers=["wal"])
    fact(desk, "Use rollback journal.", "2026-09-01T10:00:00Z", importance=5, key="storage.mode")
    fact(desk, "Always use WAL   mode.", "2026-09-01T10:00:00Z", importance=5)
    result = digest(desk, as_of=AS_OF)
    assert len(result.promoted) == 1 and result.promoted[0].startswith("storage.mode-")
    assert memory(desk, "storage.mode").body == "Something else.\n"
    assert [s["reason"] for s in result.skipped] == ["already_recorded"]


def test_a_fact_with_a_direction_control_is_skipped_not_a_digest_that_fails_forever(
        desk: DeskFolder, run: DeskRunner) -> None:
    """The archive takes a fact holding U+202E (it is exempt from the bidi-control rule), but the
    memory promoted from it is not: every `desk digest` then failed with exit 3 naming files it had
    not written, and nobody can edit the append-only archive. The fact is skipped, with its reason."""
    fact(desk, "Deploy on Tuesdays \u202eyadirf", "2026-09-01T10:00:00Z", kind="convention", importance=5,
         key="deploy.day")
    fact(desk, "Use tabs for indentation.", "2026-09-01T10:00:00Z", kind="convention", importance=5,
         key="editor.indent")
    result = digest(desk, as_of=AS_OF)
    assert result.promoted == ["editor.indent"]
    assert result.skipped == [{"domain": "deploy.day", "reason": "bidi_control"}]
    assert not desk.path("memory/deploy.day.md").exists()
    assert run("validate", "--all").exit_code == 0
    assert digest(desk, as_of=AS_OF).status == "unchanged"


def test_journal_lists_the_days_events_and_names_the_log_of_its_commits(desk: DeskFolder, monkeypatch: pytest.MonkeyPatch) -> None:
    from desk.memory.operations import remember

    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-11-29T09:30:00Z")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2026-11-29T09:30:00Z")
    remember(desk, "report-style", type="preference", description="Reports", body="Reports in Chinese.",
             triggers=["report"])
    add_fact(desk, "Chose SQLite.", kind="decision", importance=4, key="storage.db",
             at="2026-11-29T08:00:00Z", session="s1")
    from desk.archive.store import append_event

    append_event(desk, "failure", "pip install timed out", session="s1", at="2026-11-29T08:05:00Z")
    append_event(desk, "inbound", "hello", session="s2", at="2026-11-29T11:00:00Z")
    append_event(desk, "inbound", "next day", session="s2", at="2026-11-30T11:00:00Z")
    digest(desk, as_of=AS_OF)
    text = desk.path("journal/2026-11-29.md").read_text()
    assert "- 3 events in 2 sessions" in text
    assert "- `s1`: 2 events, 08:00–08:05 (fact 1, failure 1)" in text
    assert "## Decisions\n\n- 08:00 **storage.db** Chose SQLite." in text
    assert "## Failures\n\n- 08:05 `s1`: pip install timed out" in text
    assert "next day" not in text
    # The day's commits are not copied from git history (a clone that has not synced sees others):
    # the page names the command that lists them.
    assert "remember: report-style" not in text and "digest:" not in text
    assert "`git log --since=2026-11-29T00:00:00Z --until=2026-11-29T23:59:59Z -- memory/ MISTAKES.md`" in text


# -- the summarizer ------------------------------------------------------------------------------

def _script(tmp_path: Path, body: str) -> str:
    script = tmp_path / "summarize.py"
    script.write_text("import sys\n" + body)
    return f"{sys.executable} {script}"


def test_summarizer_reads_jsonl_and_writes_the_narrative(desk: DeskFolder, tmp_path: Path) -> None:
    add_fact(desk, "Chose SQLite.", kind="decision", importance=4, at="2026-11-29T08:00:00Z")
    cmd = _script(tmp_path, "import json, os\nrows=[json.loads(l) for l in sys.stdin]\n"
                            "assert os.environ['DESK_DIGEST_DATE'] == '2026-11-29'\n"
                            "print(f'A quiet day: {len(rows)} event, {rows[0][\"kind\"]}.')\n")
    digest(desk, as_of=AS_OF, summarizer=cmd)
    text = desk.path("journal/2026-11-29.md").read_text()
    assert "## Narrative\n\nA quiet day: 1 event, fact.\n\n## Overview" in text
    sha = head(desk)
    assert digest(desk, as_of=AS_OF).status == "unchanged" and head(desk) == sha  # narrative kept
    add_fact(desk, "Chose WAL.", kind="decision", importance=4, at="2026-11-29T09:00:00Z")
    digest(desk, as_of=AS_OF)
    text = desk.path("journal/2026-11-29.md").read_text()
    assert "A quiet day" in text and "Chose WAL." in text


@pytest.mark.parametrize("body, error", [
    ("sys.exit(3)\n", "exited with 3"),
    ("print('token: ghp_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8')\n", "secret"),
    ("print('x' * 20000)\n", "limit"),
])
def test_bad_summary_writes_nothing(desk: DeskFolder, tmp_path: Path, body: str, error: str) -> None:
    from desk.errors import DeskError

    before = snapshot(desk.root)
    with pytest.raises(DeskError, match=error):
        digest(desk, as_of=AS_OF, summarizer=_script(tmp_path, body))
    assert snapshot(desk.root) == before


def test_digest_cli_reports_and_json(desk: DeskFolder, run: DeskRunner) -> None:
    fact(desk, "Use WAL.", "2026-09-01T10:00:00Z", importance=5, key="storage.mode")
    result = run("digest", "--as-of", AS_OF)
    assert result.exit_code == 0 and "promoted: storage.mode" in result.output
    again = run("digest", "--as-of", AS_OF, "--json")
    data = json.loads(again.output)
    assert data["status"] == "unchanged" and data["commit"] is None
    day_after = (dt.date.fromisoformat(AS_OF[:10]) + dt.timedelta(days=1)).isoformat()
    bad = run("digest", "--date", day_after, "--as-of", AS_OF)  # a day that starts after --as-of
    assert bad.exit_code == 2


def test_digest_while_the_harness_appends_loses_nothing(desk: DeskFolder) -> None:
    import subprocess

    from desk.archive.verify import verify_archive

    n = 400
    code = ("import sys\nfrom desk.layout import DeskFolder\nfrom desk.archive.store import append_event\n"
            "d = DeskFolder(__import__('pathlib').Path(sys.argv[1]))\n"
            f"for i in range({n}):\n"
            "    append_event(d, 'inbound', f'msg {i}', session='s', at='2026-11-29T10:00:00Z')\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(desk.root)])
    try:
        while proc.poll() is None:
            digest(desk, as_of=AS_OF)
    finally:
        proc.wait()
    assert proc.returncode == 0
    digest(desk, as_of=AS_OF)
    assert git(desk.root, "status", "--porcelain") == ""  # everything appended is committed
    report = verify_archive(desk)
    assert report.ok and report.lines == n
    assert f"- {n} events in 1 session" in desk.path("journal/2026-11-29.md").read_text()


def test_a_broken_conflict_queue_is_reported_not_overwritten(desk: DeskFolder) -> None:
    from desk.errors import InvalidFileError

    desk.path(".system/conflicts.json").write_text('{"schema_version": 1,\n "cases": [}\n')
    git(desk.root, "add", ".system/conflicts.json")
    git(desk.root, "-c", "core.hooksPath=/dev/null", "-c", "user.name=A", "-c", "user.email=a@x",
        "commit", "-q", "-m", "hand edit")
    fact(desk, "Use WAL.", "2026-09-01T10:00:00Z", importance=5, key="storage.mode")
    before = snapshot(desk.root)
    with pytest.raises(InvalidFileError) as err:
        digest(desk, as_of=AS_OF)
    assert err.value.findings[0].path == ".system/conflicts.json" and err.value.findings[0].line == 2
    assert snapshot(desk.root) == before


def test_a_fact_repeated_hundreds_of_times_keeps_a_small_memory(desk: DeskFolder) -> None:
    from desk.archive.store import ArchiveWriter, build_event
    from desk.digest.policy import EVIDENCE_MAX

    import datetime as dt

    recorded = dt.datetime(2026, 11, 29, tzinfo=dt.timezone.utc)
    with ArchiveWriter(desk, batch=True) as writer:
        ids = [writer.append(build_event("fact", "Use WAL.", at=f"2026-09-01T10:{i // 60:02d}:{i % 60:02d}Z",
                                         payload={"kind": "decision", "importance": 2, "key": None}),
                             recorded)["id"] for i in range(300)]
    result = digest(desk, as_of=AS_OF)
    kept = memory(desk, result.promoted[0]).meta.evidence
    assert len(kept) == EVIDENCE_MAX and ids[0] in kept and ids[-1] in kept
    sha = head(desk)
    assert digest(desk, as_of=AS_OF).status == "unchanged" and head(desk) == sha
    newer = fact(desk, "use wal.", "2026-10-01T10:00:00Z", importance=1)
    merged = digest(desk, as_of=AS_OF)
    assert merged.merged == result.promoted
    kept = memory(desk, result.promoted[0]).meta.evidence
    assert len(kept) == EVIDENCE_MAX and ids[0] in kept and newer in kept and ids[1] not in kept


def test_two_digests_at_once_commit_once(desk: DeskFolder) -> None:
    import subprocess

    fact(desk, "Use WAL.", "2026-09-01T10:00:00Z", importance=5, key="storage.mode")
    cmd = [sys.executable, "-m", "desk", "--desk", str(desk.root), "digest", "--as-of", AS_OF, "--json"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE) for _ in range(2)]
    outputs = [json.loads(p.communicate()[0]) for p in procs]
    assert sorted(o["status"] for o in outputs) == ["committed", "unchanged"]
    subjects = git(desk.root, "log", "--format=%s").splitlines()
    assert subjects.count("digest: 2026-11-29") == 1
