"""remember / forget / show / list / history / reindex against real git repositories."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from desk.errors import ConflictError, InvalidFileError, RejectedError
from desk.errors import Finding
from desk.layout import DeskFolder
from desk.formats.memory_index import render_index
from desk.gate.entries import entries_in_worktree
from desk.memory.operations import forget, reindex, remember
from desk.memory.reads import history
from tests.conftest import DeskRunner, git, snapshot

T0 = dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.timezone.utc)
T1 = T0 + dt.timedelta(days=1)


def commits(desk: DeskFolder) -> int:
    return int(git(desk.root, "rev-list", "--count", "HEAD"))


def add(desk: DeskFolder, name: str, body: str = "Reports must be written in Chinese.", **kw: object) -> object:
    fields = {"type": "preference", "description": f"About {name}", "now": T0, **kw}
    return remember(desk, name, body=body, **fields)  # type: ignore[arg-type]


def test_created_updated_unchanged(desk: DeskFolder) -> None:
    start = commits(desk)
    created = add(desk, "report-style", triggers=["report"])
    assert created.status == "created" and created.commit == git(desk.root, "rev-parse", "HEAD").strip()
    assert git(desk.root, "show", "--name-only", "--format=", "HEAD").split() == ["MEMORY.md",
                                                                                 "memory/report-style.md"]
    same = add(desk, "report-style", triggers=["report"], now=T1)
    assert same.status == "unchanged" and same.commit is None
    assert commits(desk) == start + 1
    updated = add(desk, "report-style", body="Reports may be 800 characters.", triggers=["report"], now=T1)
    assert updated.status == "updated"
    text = (desk.root / "memory/report-style.md").read_text()
    assert "created: 2026-11-29T10:00:00Z" in text and "updated: 2026-11-30T10:00:00Z" in text
    assert "800 characters" in text and len(list((desk.root / "memory").glob("*.md"))) == 1
    assert commits(desk) == start + 2


def test_commit_subject_and_trailers(desk: DeskFolder) -> None:
    add(desk, "report-style", actor="assistant", source_event="evt_42")
    subject = git(desk.root, "log", "-1", "--format=%s").strip()
    trailers = git(desk.root, "log", "-1", "--format=%(trailers:only,unfold)").strip().splitlines()
    assert subject == "remember: report-style"
    assert trailers == ["Desk-Op: remember", "Desk-Memory: report-style", "Desk-Actor: assistant",
                        "Desk-Source-Event: evt_42"]


@pytest.mark.parametrize("kwargs, reason", [
    ({"scope": "session"}, "session_only"),
    ({"body": "reports MUST be written   in chinese."}, "already_recorded"),  # same as another memory
    ({"body": "The current conversation wins."}, "already_recorded"),  # already in AGENTS.md
])
def test_gate_rejections_change_nothing(desk: DeskFolder, kwargs: dict[str, object], reason: str) -> None:
    add(desk, "report-style")
    before = snapshot(desk.root)
    with pytest.raises(RejectedError) as info:
        add(desk, "other", **kwargs)
    assert getattr(info.value, "reason") == reason
    assert snapshot(desk.root) == before


@pytest.mark.parametrize("kwargs", [
    {"body": "   \n"}, {"description": ""}, {"description": "two\nlines"}, {"type": "feeling"},
    {"triggers": [""]}, {"expires": "2020-01-01T00:00:00Z"}, {"body": "x" * 70_000},
])
def test_structurally_broken_memories_are_rejected(desk: DeskFolder, kwargs: dict[str, object]) -> None:
    before = snapshot(desk.root)
    with pytest.raises(RejectedError):
        add(desk, "broken", **kwargs)
    assert snapshot(desk.root) == before


@pytest.mark.parametrize("name", ["", "../x", "CON", "a/b", "x" * 81])
def test_bad_names_rejected_before_anything_changes(desk: DeskFolder, name: str) -> None:
    before = snapshot(desk.root)
    with pytest.raises(RejectedError):
        add(desk, name)
    assert snapshot(desk.root) == before


def test_forget_removes_file_and_index_line(desk: DeskFolder) -> None:
    add(desk, "a-fact", body="Alpha fact.")
    add(desk, "b-fact", body="Beta fact.")
    result = forget(desk, "a-fact", reason="wrong")
    assert result.status == "deleted"
    assert not (desk.root / "memory/a-fact.md").exists()
    index = (desk.root / "MEMORY.md").read_text()
    assert "a-fact" not in index and "b-fact" in index
    assert "Desk-Reason: wrong" in git(desk.root, "log", "-1", "--format=%B")
    assert git(desk.root, "status", "--porcelain") == ""


def test_history_includes_forgotten_revisions(desk: DeskFolder) -> None:
    add(desk, "a-fact", body="Alpha fact.")
    add(desk, "a-fact", body="Alpha fact, revised.", now=T1)
    forget(desk, "a-fact")
    ops = [c.trailers["Desk-Op"][0] for c in history(desk, "a-fact")]
    assert ops == ["forget", "remember", "remember"]


def test_dirty_target_is_refused_with_exit_4(desk: DeskFolder) -> None:
    add(desk, "a-fact", body="Alpha fact.")
    path = desk.root / "memory/a-fact.md"
    path.write_text(path.read_text() + "person's unsaved thought\n")
    before = snapshot(desk.root)
    with pytest.raises(ConflictError) as info:
        add(desk, "a-fact", body="Alpha fact, from the assistant.")
    assert "memory/a-fact.md" in info.value.message
    assert snapshot(desk.root) == before


def test_persons_other_work_is_never_swept_in(desk: DeskFolder) -> None:
    (desk.root / "SOUL.md").write_text("# staged soul edit\n")
    git(desk.root, "add", "SOUL.md")
    (desk.root / "NOW.md").write_text("# unstaged now edit\n")
    (desk.root / "notes.txt").write_text("untracked\n")
    add(desk, "a-fact", body="Alpha fact.")
    assert git(desk.root, "show", "--name-only", "--format=", "HEAD").split() == ["MEMORY.md", "memory/a-fact.md"]
    status = git(desk.root, "status", "--porcelain").splitlines()
    assert sorted(status) == [" M NOW.md", "?? notes.txt", "M  SOUL.md"]


def test_index_is_sorted_and_shows_expiry(desk: DeskFolder) -> None:
    add(desk, "b", body="Beta.", description="second")
    add(desk, "a-b", body="Dash.", description="dash")
    add(desk, "a", body="Alpha.", description="first", expires="2027-01-01T00:00:00Z")
    lines = (desk.root / "MEMORY.md").read_text().splitlines()
    assert lines[2:] == ["- [a](memory/a.md) — first (expires 2027-01-01T00:00:00Z)",
                         "- [a-b](memory/a-b.md) — dash", "- [b](memory/b.md) — second"]
    assert lines[0].startswith("# MEMORY.md: generated") and "desk reindex" in lines[0]


def test_incremental_index_equals_full_rebuild_without_cache(desk: DeskFolder) -> None:
    for i in range(12):
        add(desk, f"m{i:02d}", body=f"Fact number {i}.", description=f"fact {i}")
    forget(desk, "m03")
    add(desk, "m05", body="Fact five, revised.", description="five again", now=T1)
    incremental = (desk.root / "MEMORY.md").read_bytes()
    for cached in desk.cache_dir.glob("*"):
        cached.unlink()
    assert render_index(entries_in_worktree(desk).values()) == incremental


def test_reindex_after_hand_edit_commits_only_memory_md(desk: DeskFolder) -> None:
    add(desk, "a-fact", body="Alpha fact.")
    path = desk.root / "memory/a-fact.md"
    path.write_text(path.read_text().replace("About a-fact", "Hand-edited description"))
    uncommitted = reindex(desk)
    assert uncommitted.status == "written" and uncommitted.pending == ["memory/a-fact.md"]
    assert "Hand-edited description" in (desk.root / "MEMORY.md").read_text()
    git(desk.root, "-c", "user.name=P", "-c", "user.email=p@x", "commit", "-qm", "hand edit", "--no-verify",
        "--", "memory/a-fact.md")
    (desk.root / "MEMORY.md").write_bytes(b"garbage\n")
    result = reindex(desk)
    assert result.status == "updated" and result.commit
    assert git(desk.root, "show", "--name-only", "--format=", "HEAD").split() == ["MEMORY.md"]
    assert reindex(desk).status == "unchanged"


def test_cli_remember_json_and_exit_codes(run: DeskRunner, desk: DeskFolder) -> None:
    result = run("remember", "report-style", "--type", "preference", "-d", "Report style", "-t", "report",
                 "--json", "Reports in Chinese.")
    data = json.loads(result.output)
    assert result.exit_code == 0
    assert set(data) == {"status", "name", "path", "commit", "reason"}
    assert data["status"] == "created" and data["path"] == "memory/report-style.md" and len(data["commit"]) == 40
    rejected = run("remember", "x", "--type", "fact", "-d", "x", "--scope", "session", "--json", "this time only")
    assert rejected.exit_code == 3
    data = json.loads(rejected.output)
    assert data["status"] == "rejected" and data["reason"] == "session_only" and data["commit"] is None
    assert run("remember", "x", "--type", "nope", "-d", "x", "body").exit_code == 2


def test_cli_body_from_stdin_and_file(run: DeskRunner, desk: DeskFolder, tmp_path: Path) -> None:
    assert run("remember", "from-stdin", "--type", "fact", "-d", "stdin", "-", input="From stdin.\n").exit_code == 0
    body = tmp_path / "body.md"
    body.write_text("From a file.\n")
    assert run("remember", "from-file", "--type", "fact", "-d", "file", "--body-file", str(body)).exit_code == 0
    shown = json.loads(run("show", "from-stdin", "--json").output)
    assert shown["body"] == "From stdin.\n" and shown["type"] == "fact"
    assert "From a file." in run("show", "from-file").output


def test_cli_list_history_log(run: DeskRunner, desk: DeskFolder) -> None:
    run("remember", "a", "--type", "fact", "-d", "first", "Alpha.")
    run("remember", "b", "--type", "decision", "-d", "second", "Beta.")
    listed = json.loads(run("list", "--type", "decision", "--json").output)["memories"]
    assert [m["name"] for m in listed] == ["b"]
    run("forget", "a")
    hist = json.loads(run("history", "a", "--json").output)["commits"]
    assert [c["trailers"]["Desk-Op"] for c in hist] == [["forget"], ["remember"]]
    log = json.loads(run("log", "-n", "2", "--json").output)["commits"]
    assert [c["subject"] for c in log] == ["forget: a", "remember: b"]


def test_cli_errors_have_no_traceback(run: DeskRunner) -> None:
    result = run("forget", "never-was")
    assert result.exit_code == 1
    assert "no memory named 'never-was'" in result.output and "Traceback" not in result.output
    assert "hint:" in result.output


def commit_by_hand(desk: DeskFolder, *paths: str) -> None:
    git(desk.root, "-c", "user.name=P", "-c", "user.email=p@x", "commit", "-qm", "by hand", "--no-verify",
        "--", *paths)


def test_hand_commits_between_mutations_reach_the_index(desk: DeskFolder) -> None:
    add(desk, "a-fact", body="Alpha fact.")
    path = desk.root / "memory/a-fact.md"
    path.write_text(path.read_text().replace("About a-fact", "Edited by a person"))
    commit_by_hand(desk, "memory/a-fact.md")  # MEMORY.md is now stale at HEAD
    add(desk, "b-fact", body="Beta fact.")
    index = (desk.root / "MEMORY.md").read_text()
    assert "Edited by a person" in index and "b-fact" in index
    with pytest.raises(RejectedError, match="already recorded in memory/a-fact.md"):
        add(desk, "c-fact", body="Alpha fact.")


def test_a_broken_committed_file_blocks_others_but_can_be_forgotten(desk: DeskFolder) -> None:
    add(desk, "a-fact", body="Alpha fact.")
    (desk.root / "memory/a-fact.md").write_text("---\nname: a-fact\ntype: fact\n---\nno description\n")
    commit_by_hand(desk, "memory/a-fact.md")
    before = snapshot(desk.root)
    with pytest.raises(RejectedError) as info:
        add(desk, "b-fact", body="Beta fact.")
    assert "memory/a-fact.md:" in info.value.message
    assert snapshot(desk.root) == before
    assert forget(desk, "a-fact").status == "deleted"
    assert add(desk, "b-fact", body="Beta fact.").status == "created"


def test_list_names_a_broken_file_and_lists_the_rest(run: DeskRunner, desk: DeskFolder) -> None:
    add(desk, "a-fact", body="Alpha fact.")
    (desk.root / "memory/b-fact.md").write_text("---\nname: b-fact\n")
    result = run("list", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert [m["name"] for m in data["memories"]] == ["a-fact"]
    assert data["invalid"][0]["path"] == "memory/b-fact.md" and data["invalid"][0]["line"] == 1
    assert "memory/b-fact.md:1: frontmatter-unclosed" in result.stderr


def test_a_copy_of_a_memory_under_another_name_is_reported_not_dropped(desk: DeskFolder) -> None:
    """The entry cache is keyed by content: the same bytes under a second name are that file's
    name mismatch, whichever file the cache saw first."""
    add(desk, "a-fact", body="Alpha fact.")
    assert set(entries_in_worktree(desk)) == {"a-fact"}  # cached under a-fact
    original = (desk.root / "memory/a-fact.md").read_bytes()
    (desk.root / "memory/0-copy.md").write_bytes(original)  # sorts first, same blob
    invalid: list[Finding] = []
    assert set(entries_in_worktree(desk, invalid)) == {"a-fact"}
    assert [(f.path, f.rule) for f in invalid] == [("memory/0-copy.md", "name-mismatch")]
    with pytest.raises(InvalidFileError, match="memory/0-copy.md"):
        entries_in_worktree(desk)
    for cached in desk.cache_dir.glob("*"):
        cached.unlink()
    invalid.clear()
    assert set(entries_in_worktree(desk, invalid)) == {"a-fact"}  # a cold cache answers the same
    assert [f.path for f in invalid] == ["memory/0-copy.md"]


def test_expires_reads_like_every_other_time(desk: DeskFolder) -> None:
    add(desk, "a", body="Alpha.", expires="2027-01-01")  # a bare date is midnight UTC
    add(desk, "b", body="Beta.", expires="2027-01-01T02:00:00+02:00")
    entries = entries_in_worktree(desk)
    assert entries["a"].expires == entries["b"].expires == "2027-01-01T00:00:00Z"
    last_second = dt.datetime(2026, 12, 31, 23, 59, 59, tzinfo=dt.timezone.utc)
    assert not entries["a"].is_expired(last_second)
    assert entries["a"].is_expired(last_second + dt.timedelta(seconds=1))
    with pytest.raises(RejectedError, match="expires: '2027-01-01T00:00' has no timezone"):
        add(desk, "c", body="Gamma.", expires="2027-01-01T00:00")
    with pytest.raises(RejectedError, match="expires 2026-11-29T00:00:00Z is already past"):
        add(desk, "c", body="Gamma.", expires="2026-11-29")


def test_reindex_puts_back_a_hand_edited_index_when_head_is_right(run: DeskRunner, desk: DeskFolder) -> None:
    add(desk, "a-fact", body="Alpha fact.")
    good = (desk.root / "MEMORY.md").read_bytes()
    (desk.root / "MEMORY.md").write_bytes(good + b"junk\n")
    start = commits(desk)
    result = reindex(desk)
    assert result.status == "restored" and result.commit is None
    assert (desk.root / "MEMORY.md").read_bytes() == good and commits(desk) == start
    assert add(desk, "b-fact", body="Beta fact.").status == "created"


@pytest.mark.parametrize("description", ["a\x85b", "a\u2028b", "a\x1b[31mred", "tab\there"])
def test_descriptions_with_line_breaks_or_control_characters_are_rejected(desk: DeskFolder, description: str) -> None:
    before = snapshot(desk.root)
    with pytest.raises(RejectedError, match="one line of text"):
        add(desk, "odd", description=description)
    assert snapshot(desk.root) == before


def test_a_git_process_holding_index_lock_is_waited_for(desk: DeskFolder) -> None:
    import threading

    lock = desk.root / ".git" / "index.lock"
    lock.write_bytes(b"")
    threading.Timer(0.5, lock.unlink).start()  # a person's `git commit` finishing
    assert add(desk, "a-fact", body="Alpha fact.").status == "created"
    assert git(desk.root, "status", "--porcelain") == ""


@pytest.mark.parametrize("expires", [None, dt.datetime(2026, 12, 24, 9, 30, tzinfo=dt.timezone.utc),
                                     dt.datetime(2027, 1, 1, 0, 0, 0, 123456, tzinfo=dt.timezone.utc)])
def test_the_gates_index_line_is_the_index_entrys_line(expires: dt.datetime | None) -> None:
    """`memory_line` (what a verdict keeps, without counting tokens) equals `IndexEntry.of(...).line()`."""
    from desk.formats.memory_file import MemoryFile, MemoryMeta
    from desk.formats.memory_index import IndexEntry, memory_line

    meta = MemoryMeta(name="a.b-c_1", description="Ünïcode — `ticks` [x](y) 报告", type="fact",
                      triggers=["x"], expires=expires)
    memory = MemoryFile(meta, "Body with 中文 and\n# a heading\n")
    assert memory_line(memory) == IndexEntry.of(memory).line()
    assert ("(expires " in memory_line(memory)) == (expires is not None)
