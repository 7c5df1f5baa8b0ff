"""`desk mistake add|list`: structured entries in MISTAKES.md, one commit each."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from desk.layout import DeskFolder
from desk.formats.mistakes import parse_mistakes
from desk.notes.mistakes import add_mistake, list_mistakes

from tests.conftest import DeskRunner, git, snapshot

ARGS = ["--what", "Answered in English", "--context", "weekly report", "--cause",
        "skipped the report-style memory", "--avoid", "check report-style before writing"]


def test_add_writes_an_entry_with_id_and_date_in_one_commit(desk: DeskFolder, run: DeskRunner) -> None:
    start = int(git(desk.root, "rev-list", "--count", "HEAD"))
    result = run("mistake", "add", *ARGS, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["status"] == "created" and data["id"] == "M-0001"
    assert data["date"] == dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    assert int(git(desk.root, "rev-list", "--count", "HEAD")) == start + 1
    assert git(desk.root, "show", "--name-only", "--format=", "HEAD").split() == ["MISTAKES.md"]
    assert "Desk-Mistake: M-0001" in git(desk.root, "log", "-1", "--format=%B")
    text = desk.path("MISTAKES.md").read_text()
    assert "## M-0001 · " in text and "- **Avoid:** check report-style before writing" in text
    lines = text.splitlines()
    assert lines[data["line"] - 1].startswith("## M-0001")


def test_same_lesson_again_is_unchanged_and_ids_increase(desk: DeskFolder, run: DeskRunner) -> None:
    run("mistake", "add", *ARGS)
    start = int(git(desk.root, "rev-list", "--count", "HEAD"))
    again = json.loads(run("mistake", "add", *[a.upper() if not a.startswith("--") else a for a in ARGS],
                           "--json").output)
    assert again["status"] == "unchanged" and again["id"] == "M-0001"
    assert int(git(desk.root, "rev-list", "--count", "HEAD")) == start
    other = json.loads(run("mistake", "add", "--what", "w", "--context", "c", "--cause", "c",
                           "--avoid", "a", "--json").output)
    assert other["id"] == "M-0002"
    listed = json.loads(run("mistake", "list", "--json").output)["mistakes"]
    assert [m["id"] for m in listed] == ["M-0001", "M-0002"]
    assert "M-0002" in run("mistake", "list").output


def test_memory_link_must_exist(desk: DeskFolder, run: DeskRunner) -> None:
    before = snapshot(desk.root)
    result = run("mistake", "add", *ARGS, "--memory", "report-style")
    assert result.exit_code == 2 and "report-style" in result.output
    assert snapshot(desk.root) == before
    assert run("remember", "report-style", "--type", "preference", "-d", "Report style",
               "-t", "report", "Reports in Chinese.").exit_code == 0
    data = json.loads(run("mistake", "add", *ARGS, "--memory", "report-style", "--json").output)
    assert data["memory"] == "report-style"
    assert "[report-style](memory/report-style.md)" in desk.path("MISTAKES.md").read_text()
    assert list_mistakes(desk)[0].memory == "report-style"


@pytest.mark.parametrize("typed", ["report-style.md", "memory/report-style.md"])
def test_memory_link_accepts_the_file_name(desk: DeskFolder, run: DeskRunner, typed: str) -> None:
    assert run("remember", "report-style", "--type", "preference", "-d", "Report style",
               "-t", "report", "Reports in Chinese.").exit_code == 0
    data = json.loads(run("mistake", "add", *ARGS, "--memory", typed, "--json").output)
    assert data["memory"] == "report-style"
    assert "[report-style](memory/report-style.md)" in desk.path("MISTAKES.md").read_text()


def test_empty_fields_and_dirty_file_are_refused(desk: DeskFolder, run: DeskRunner) -> None:
    before = snapshot(desk.root)
    assert run("mistake", "add", "--what", " ", "--context", "c", "--cause", "c", "--avoid", "a").exit_code == 2
    assert snapshot(desk.root) == before
    desk.path("MISTAKES.md").write_text(desk.path("MISTAKES.md").read_text() + "\nnote\n")
    assert run("mistake", "add", *ARGS).exit_code == 4


def test_multiline_fields_become_one_line_and_hand_entries_parse(desk: DeskFolder) -> None:
    result = add_mistake(desk, what="two\nlines", context="c", cause="c", avoid="a",
                         now=dt.datetime(2026, 1, 2, tzinfo=dt.timezone.utc))
    assert result.mistake.what == "two lines" and result.mistake.date == "2026-01-02"
    hand = "# book\n\n## M-0007 · 2025-05-05\n\n- What: by hand\n- Cause: x\n\n## Other\n\n- What: not an entry\n"
    entries = parse_mistakes(hand)
    assert [(e.id, e.date, e.what, e.cause) for e in entries] == [("M-0007", "2025-05-05", "by hand", "x")]
