"""`desk export`: every format reads back through `desk import` unchanged, and a Claude Code folder
round-trips through desk with a change visible to Claude Code's reader."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import frontmatter
import pytest

import desk as desk_api
from desk.errors import DeskError
from desk.layout import DeskFolder
from desk.memory.operations import remember
from desk.formats.memory_file import MemoryFile
from desk.memory.reads import show as show_file
from tests.conftest import snapshot
from tests.interchange.test_importing import FIXTURES, NOW


def show(desk: DeskFolder, name: str) -> tuple[str, MemoryFile]:
    """The memory `name` as (path, parsed file); the file must be valid."""
    shown = show_file(desk, name)
    assert shown.memory is not None, shown.findings
    return shown.path, shown.memory


EXPORTS = {"claude-code": "claude", "openclaw": "workspace", "markdown": "notes", "jsonl": "memories.jsonl"}


def fill(desk: DeskFolder) -> None:
    for name, type_, triggers, importance in (
            ("report-style", "preference", ["report", "报告"], 4), ("use-postgres", "decision", [], None),
            ("tabs.v2_rule", "convention", ["tabs"], None), ("no-friday-deploys", "pitfall", ["deploy"], 5),
            ("team-size", "fact", ["team"], None), ("api-docs", "reference", ["api"], 2)):
        remember(desk, name, type=type_, description=f"About {name}", triggers=triggers, importance=importance,
                 body=f"The fact of {name}.\n\nWith a second paragraph: a: colon, #hash, 'quotes'.")


@pytest.mark.parametrize("fmt", sorted(EXPORTS))
def test_export_then_import_brings_every_memory_back_unchanged(desk: DeskFolder, identity: None,
                                                               tmp_path: Path, fmt: str) -> None:
    fill(desk)
    before = snapshot(desk.root)
    dest = tmp_path / EXPORTS[fmt]
    exported = desk_api.open(desk.root).export(fmt, dest).to_json()
    assert exported["memories"] == 6 and exported["written"]
    assert snapshot(desk.root) == before  # exporting does not touch the desk
    again = desk_api.open(desk.root).export(fmt, dest).to_json()
    assert again["written"] == [] and again["unchanged"]
    back = desk_api.open(desk.root).import_(fmt, dest, now=NOW).to_json()
    assert {m["name"]: m["action"] for m in back["memories"]} == {
        n: "unchanged" for n in ("report-style", "use-postgres", "tabs.v2_rule", "no-friday-deploys",
                                 "team-size", "api-docs")}
    assert back["status"] == "unchanged" and snapshot(desk.root) == before


def test_only_desk_s_own_format_carries_the_memory_file_version(desk: DeskFolder, identity: None,
                                                               tmp_path: Path) -> None:
    fill(desk)
    assert all(b"\nschema: 2\n---\n" in data for path, data in snapshot(desk.root).items()
               if path.startswith("memory/") and path.endswith(".md"))
    for fmt in ("claude-code", "openclaw", "markdown"):
        desk_api.open(desk.root).export(fmt, tmp_path / fmt)
        files = [p for p in (tmp_path / fmt).rglob("*.md") if p.name != "MEMORY.md"]
        assert len(files) >= 6 and not any("schema" in frontmatter.load(p).metadata for p in files), fmt
    markdown = (tmp_path / "markdown" / "report-style.md").read_bytes()
    assert markdown == desk.path("memory/report-style.md").read_bytes().replace(b"\nschema: 2\n", b"\n")
    desk_api.open(desk.root).export("jsonl", tmp_path / "m.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert [line["meta"]["schema"] for line in lines] == [2] * 6  # desk's own format says its version
    newer = json.dumps({**lines[0], "meta": {**lines[0]["meta"], "schema": 3}})
    (tmp_path / "newer.jsonl").write_text(newer + "\n")
    before = snapshot(desk.root)
    with pytest.raises(DeskError) as info:
        desk_api.open(desk.root).import_("jsonl", tmp_path / "newer.jsonl", now=NOW)
    assert "newer.jsonl:1" in info.value.message and "3 was written by a newer desk" in info.value.message
    assert snapshot(desk.root) == before


def test_the_export_imports_into_a_new_desk_as_the_same_memories(desk: DeskFolder, identity: None,
                                                                 tmp_path: Path) -> None:
    fill(desk)
    desk_api.open(desk.root).export("jsonl", tmp_path / "m.jsonl")
    other = desk_api.init(tmp_path / "other")
    other.import_("jsonl", tmp_path / "m.jsonl", now=NOW)
    for name in ("report-style", "no-friday-deploys", "tabs.v2_rule"):
        mine, theirs = show(desk, name)[1], show(DeskFolder(other.root), name)[1]
        assert (theirs.body, theirs.meta.type, theirs.meta.triggers, theirs.meta.importance) == \
            (mine.body, mine.meta.type, mine.meta.triggers, mine.meta.importance)
        assert theirs.meta.source == "import" and theirs.meta.origin.startswith("jsonl:m.jsonl:")
        assert theirs.meta.schema == 2  # an import is a desk write: stamped


def test_jsonl_carries_each_memory_s_commit_history(desk: DeskFolder, identity: None, tmp_path: Path) -> None:
    remember(desk, "alpha", type="fact", description="Alpha", body="First version.")
    remember(desk, "alpha", type="fact", description="Alpha", body="Second version.")
    desk_api.open(desk.root).export("jsonl", tmp_path / "m.jsonl")
    (line,) = (tmp_path / "m.jsonl").read_text().splitlines()
    data = json.loads(line)
    assert data["body"] == "Second version.\n" and data["path"] == "memory/alpha.md"
    assert [h["subject"] for h in data["history"]] == ["remember: alpha", "remember: alpha"]
    assert data["history"][0]["trailers"]["Desk-Op"] == ["remember"]


def test_a_claude_code_folder_imported_changed_and_exported_back_shows_the_change(
        desk: DeskFolder, identity: None, tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "claude-code" / "project", project)
    desk_api.open(desk.root).import_("claude-code", project, now=NOW)
    remember(desk, "testing-feedback", type="convention", description="Integration tests use a real database",
             body="Integration tests use a real Postgres in a container; never mocks.", triggers=["testing"])
    desk_api.open(desk.root).export("claude-code", project / "memory")
    # The topic file it came from is updated in place, as Claude Code's reader sees it.
    post = frontmatter.load(str(project / "memory" / "feedback_testing.md"))
    assert post.metadata["type"] == "feedback" and post.metadata["name"] == "testing-feedback"
    assert post.metadata["description"] == "Integration tests use a real database"
    assert post.content == "Integration tests use a real Postgres in a container; never mocks."
    assert not (project / "memory" / "testing-feedback.md").exists()
    index = (project / "memory" / "MEMORY.md").read_text()
    assert "- [testing-feedback](feedback_testing.md) — Integration tests use a real database" in index
    assert "[Testing feedback](feedback_testing.md)" not in index  # its old line is replaced
    assert "- [always-answer-in-english-unless-asked-otherwise](always-answer-in-english-unless-asked-otherwise.md)" \
        in index
    back = desk_api.open(desk.root).import_("claude-code", project, now=NOW).to_json()
    assert back["counts"]["create"] == 0 and back["counts"]["update"] == 0


def test_claude_code_export_keeps_desk_types_the_mapping_would_lose(desk: DeskFolder, identity: None,
                                                                    tmp_path: Path) -> None:
    fill(desk)
    desk_api.open(desk.root).export("claude-code", tmp_path / "c")
    pitfall = frontmatter.load(str(tmp_path / "c" / "no-friday-deploys.md")).metadata
    assert (pitfall["type"], pitfall["desk_type"], pitfall["importance"]) == ("feedback", "pitfall", 5)
    preference = frontmatter.load(str(tmp_path / "c" / "report-style.md")).metadata
    assert preference["type"] == "user" and "desk_type" not in preference


def test_openclaw_export_keeps_the_workspace_s_own_files(desk: DeskFolder, identity: None, tmp_path: Path) -> None:
    fill(desk)
    workspace = tmp_path / "ws"
    shutil.copytree(FIXTURES / "openclaw" / "workspace", workspace)
    report = desk_api.open(desk.root).export("openclaw", workspace).to_json()
    text = (workspace / "MEMORY.md").read_text()
    assert text.startswith("# MEMORY.md\n\n## Decisions\n- 2026-01-01: the project uses TypeScript")
    assert "- About team-size (memory/desk/team-size.md)" in text
    assert (workspace / "SOUL.md").read_text().startswith("# SOUL.md - Who You Are")
    assert "SOUL.md: the workspace has its own; not overwritten" in report["skipped"]
    desk_api.open(desk.root).export("openclaw", workspace)
    assert (workspace / "MEMORY.md").read_text() == text  # the block is replaced, not appended again


def test_export_refuses_a_file_for_a_folder_and_symlinks(desk: DeskFolder, identity: None, tmp_path: Path) -> None:
    from desk.errors import UsageError

    fill(desk)
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="not a folder"):
        desk_api.open(desk.root).export("markdown", tmp_path / "file")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "team-size.md").symlink_to(tmp_path / "file")
    with pytest.raises(UsageError, match="symlink"):
        desk_api.open(desk.root).export("markdown", tmp_path / "out")
    assert (tmp_path / "file").read_text() == "x"


@pytest.mark.parametrize("fmt, inside", [("markdown", "memory"), ("claude-code", "."), ("openclaw", ".system"),
                                         ("jsonl", "export.jsonl"), ("markdown", "link-to-memory")])
def test_export_refuses_a_destination_inside_the_desk(desk: DeskFolder, identity: None, tmp_path: Path,
                                                      fmt: str, inside: str) -> None:
    """`desk export markdown memory` once overwrote memory/*.md without their `schema:` line, and
    `desk export claude-code .` replaced MEMORY.md with Claude Code's index: export is read-only."""
    from desk.errors import UsageError

    fill(desk)
    link = tmp_path / "link-to-memory"
    link.symlink_to(desk.root / "memory")
    before = snapshot(desk.root)
    dest = link if inside == "link-to-memory" else desk.root / inside
    with pytest.raises(UsageError, match="inside the desk") as caught:
        desk_api.open(desk.root).export(fmt, dest)
    assert caught.value.exit_code == 2 and "outside the desk" in str(caught.value.hint)
    assert snapshot(desk.root) == before
