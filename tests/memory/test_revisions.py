"""`desk.memory_revisions`: a memory's history with each commit's diff, across a rename."""

from __future__ import annotations

from pathlib import Path

import pytest

import desk


def test_each_revision_carries_its_own_diff_and_trailers(tmp_path: Path, identity: None) -> None:
    d = desk.init(tmp_path / "desk")
    d.remember("style", "Reports in Chinese.\n", type="preference", description="Report style")
    d.with_trailers({"Desk-Client": "ui"}).remember("style", "Reports in English.\n")
    d.rename("style", "report-style")
    d.forget("report-style", reason="moved to USER.md")
    revisions = desk.memory_revisions(d, "report-style").revisions
    forgot, renamed, edited, created = revisions
    assert [r.path for r in revisions] == ["memory/report-style.md"] * 2 + ["memory/style.md"] * 2
    assert forgot.diff.startswith("--- a/memory/report-style.md\n+++ /dev/null\n") and "-Reports in English." in forgot.diff
    assert "-name: style\n+name: report-style\n" in renamed.diff and "+Reports" not in renamed.diff  # a rename, not an add
    assert "-Reports in Chinese.\n+Reports in English.\n" in edited.diff
    assert edited.commit.trailers["Desk-Client"] == ["ui"]
    assert created.diff.startswith("--- /dev/null\n+++ b/memory/style.md\n")
    shown = desk.memory_revisions(d, "report-style", limit=1).to_json()
    assert [r["commit"] for r in shown["revisions"]] == [forgot.commit.sha] and shown["name"] == "report-style"


def test_an_unknown_memory_is_an_error(tmp_path: Path, identity: None) -> None:
    d = desk.init(tmp_path / "desk")
    with pytest.raises(desk.DeskError):
        desk.memory_revisions(d, "never-there")
