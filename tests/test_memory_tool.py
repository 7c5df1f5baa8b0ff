"""desk.memory_tool: Anthropic's memory tool (memory_20250818) over a real desk, one commit per change."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import desk as desk_api
from desk.layout import DeskFolder
from desk.memory_tool import MemoryTool, ToolResult
from tests.conftest import git

pytestmark = pytest.mark.usefixtures("identity")

REPORT = """---
name: report-style
description: Report language and length
type: preference
triggers: [report, writing]
---
Reports must be written in Chinese.
"""


@pytest.fixture
def tool(desk: DeskFolder) -> MemoryTool:
    return MemoryTool(desk_api.open(desk.root))


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def ok(result: ToolResult) -> str:
    assert not result.is_error, result.content
    return result.content


def refused(tool: MemoryTool, call: dict[str, object]) -> str:
    before = head(tool.desk.root)
    result = tool.run(call)
    assert result.is_error, result.content
    assert head(tool.desk.root) == before  # nothing was committed
    assert git(tool.desk.root, "status", "--porcelain") == ""  # nor written
    return result.content


def test_create_view_edit_delete_each_one_commit_by_the_assistant(tool: MemoryTool) -> None:
    root = tool.desk.root
    assert ok(tool.run({"command": "create", "path": "/memories/report-style.md", "file_text": REPORT})) \
        == "File created successfully at: /memories/report-style.md"
    assert git(root, "log", "-1", "--format=%s%n%(trailers)").startswith("remember: report-style\n")
    assert "Desk-Actor: assistant\nDesk-Client: memory-tool\n" in git(root, "log", "-1", "--format=%(trailers)")

    listing = ok(tool.run({"command": "view", "path": "/memories"}))
    size = (root / "memory/report-style.md").stat().st_size
    assert f"{size}\t/memories/report-style.md" in listing.splitlines()
    assert "/memories/SOUL.md (read-only)" in listing

    shown = ok(tool.run({"command": "view", "path": "/memories/report-style.md"}))
    lines = shown.splitlines()
    assert lines[0] == "Here's the content of /memories/report-style.md with line numbers:"
    assert lines[2] == "     2\tname: report-style"
    body_line = next(n for n, line in enumerate(lines) if "Reports must" in line)
    assert ok(tool.run({"command": "view", "path": "/memories/report-style.md",
                        "view_range": [body_line, -1]})).splitlines()[1:] == [lines[body_line]]

    commits = int(git(root, "rev-list", "--count", "HEAD"))
    ok(tool.run({"command": "str_replace", "path": "/memories/report-style.md",
                 "old_str": "in Chinese.", "new_str": "in Chinese, under 500 characters."}))
    ok(tool.run({"command": "insert", "path": "/memories/report-style.md", "insert_line": body_line,
                 "insert_text": "Put numbers in tables."}))
    text = (root / "memory/report-style.md").read_text()
    assert text.endswith("Reports must be written in Chinese, under 500 characters.\nPut numbers in tables.\n")
    assert int(git(root, "rev-list", "--count", "HEAD")) == commits + 2

    assert ok(tool.run({"command": "delete", "path": "/memories/report-style.md"})) \
        == "Successfully deleted /memories/report-style.md"
    assert not (root / "memory/report-style.md").exists()
    assert "report-style" not in (root / "MEMORY.md").read_text()
    assert git(root, "log", "-1", "--format=%s") == "forget: report-style\n"


def test_a_text_without_frontmatter_is_refused_with_the_header_it_needs(tool: MemoryTool) -> None:
    text = refused(tool, {"command": "create", "path": "/memories/note.md", "file_text": "just a note"})
    assert "frontmatter-missing" in text and "name: note\n" in text and "type: fact" in text


def test_edits_that_break_the_file_or_the_gate_change_nothing(tool: MemoryTool) -> None:
    ok(tool.run({"command": "create", "path": "/memories/report-style.md", "file_text": REPORT}))
    path = "/memories/report-style.md"
    assert "did not appear verbatim" in refused(tool, {"command": "str_replace", "path": path,
                                                       "old_str": "nowhere", "new_str": "x"})
    assert "Multiple occurrences" in refused(tool, {"command": "str_replace", "path": path,
                                                    "old_str": "re", "new_str": "x"})
    assert "type" in refused(tool, {"command": "str_replace", "path": path,
                                    "old_str": "type: preference", "new_str": "type: mood"})
    assert "Invalid `insert_line`" in refused(tool, {"command": "insert", "path": path, "insert_line": 99,
                                                     "insert_text": "x"})
    assert "frontmatter" in refused(tool, {"command": "insert", "path": path, "insert_line": 0,
                                           "insert_text": "oops"})
    duplicate = REPORT.replace("name: report-style", "name: copy")
    assert "hint:" in refused(tool, {"command": "create", "path": "/memories/copy.md", "file_text": duplicate})


def test_the_file_the_model_writes_is_stamped_and_a_newer_version_refused(tool: MemoryTool) -> None:
    ok(tool.run({"command": "create", "path": "/memories/report-style.md", "file_text": REPORT}))
    path = "/memories/report-style.md"
    stored = (tool.desk.root / "memory/report-style.md").read_text()
    assert "\nschema: 2\n---\n" in stored  # the model's text had no version; desk's write has it
    assert "schema: 2" in ok(tool.run({"command": "view", "path": path}))
    assert "newer desk" in refused(tool, {"command": "str_replace", "path": path,
                                          "old_str": "schema: 2", "new_str": "schema: 9"})
    ok(tool.run({"command": "str_replace", "path": path, "old_str": "schema: 2\n", "new_str": ""}))
    assert (tool.desk.root / "memory/report-style.md").read_text() == stored  # the same memory: unchanged


def test_provenance_is_the_harness_s_not_the_model_s(tool: MemoryTool) -> None:
    forged = REPORT.replace("type: preference", "type: preference\nsource_event: evt-123")
    assert "source_event is provenance" in refused(
        tool, {"command": "create", "path": "/memories/report-style.md", "file_text": forged})


@pytest.mark.parametrize("file", ["SOUL.md", "AGENTS.md", "MEMORY.md", "NOW.md"])
def test_desk_files_are_readable_never_writable(tool: MemoryTool, file: str) -> None:
    assert ok(tool.run({"command": "view", "path": f"/memories/{file}"})).startswith("Here's the content")
    why = refused(tool, {"command": "create", "path": f"/memories/{file}", "file_text": "# mine now\n"})
    assert "read-only" in why
    if file == "SOUL.md":
        assert "never changes it" in why
    refused(tool, {"command": "delete", "path": f"/memories/{file}"})


@pytest.mark.parametrize("path", [
    "/memories/../AGENTS.md", "/memories/../../etc/passwd", "/etc/passwd", "memories/x.md", "x.md",
    "/memories/%2e%2e/x.md", "/memories/..%2fx.md", "/memories/sub/x.md", "/memories//x.md", "/memories/./x.md",
    "/memoriesx/a.md", "\\memories\\x.md", "/memories/x.md\n", "/memories/x\x00.md", "/memories/\u200bx.md",
    "/memories/X.md", "/memories/x.txt", "/memories/.md", "/memories/.git",
])
def test_paths_outside_the_memory_directory_are_refused(tool: MemoryTool, path: str) -> None:
    for call in ({"command": "create", "path": path, "file_text": REPORT},
                 {"command": "delete", "path": path},
                 {"command": "rename", "old_path": path, "new_path": "/memories/y.md"}):
        refused(tool, call)
    assert tool.run({"command": "view", "path": path}).is_error


def test_symlinks_are_never_followed(tool: MemoryTool, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text(REPORT)
    os.symlink(secret, tool.desk.root / "memory" / "report-style.md")
    git(tool.desk.root, "add", "memory/report-style.md")  # even a committed symlink is not followed
    assert "symlink" in tool.run({"command": "view", "path": "/memories/report-style.md"}).content
    for call in ({"command": "create", "path": "/memories/report-style.md", "file_text": REPORT},
                 {"command": "str_replace", "path": "/memories/report-style.md", "old_str": "Chinese",
                  "new_str": "English"},
                 {"command": "delete", "path": "/memories/report-style.md"}):
        assert "symlink" in tool.run(call).content
    assert secret.read_text() == REPORT


def test_bad_calls_are_error_results_not_crashes(tool: MemoryTool) -> None:
    assert tool.run({"command": "chmod", "path": "/memories"}).is_error
    assert tool.run({"command": "create", "path": "/memories/a.md"}).is_error  # file_text missing
    assert tool.run({"command": "create", "path": 7, "file_text": REPORT}).is_error
    assert tool.run({"command": "view", "path": "/memories/none.md"}).content \
        == "The path /memories/none.md does not exist. Please provide a valid path."


def test_rename_is_one_commit_that_history_follows(tool: MemoryTool) -> None:
    ok(tool.run({"command": "create", "path": "/memories/report-style.md", "file_text": REPORT}))
    before = int(git(tool.desk.root, "rev-list", "--count", "HEAD"))
    ok(tool.run({"command": "rename", "old_path": "/memories/report-style.md", "new_path": "/memories/reports.md"}))
    assert int(git(tool.desk.root, "rev-list", "--count", "HEAD")) == before + 1
    assert "name: reports\n" in (tool.desk.root / "memory/reports.md").read_text()
    ok(tool.run({"command": "create", "path": "/memories/other.md",
                 "file_text": REPORT.replace("report-style", "other").replace("Chinese", "French")}))
    assert "already exists" in refused(
        tool, {"command": "rename", "old_path": "/memories/reports.md", "new_path": "/memories/other.md"})


def test_the_cli_reads_one_call_on_stdin_and_prints_the_result(desk: DeskFolder) -> None:
    def run(data: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "desk", "--desk", str(desk.root), "memory-tool"],
                              input=data, capture_output=True, text=True)

    made = run(json.dumps({"command": "create", "path": "/memories/report-style.md", "file_text": REPORT}))
    assert made.returncode == 0 and json.loads(made.stdout) == {
        "content": "File created successfully at: /memories/report-style.md", "is_error": False}
    refusal = run(json.dumps({"command": "view", "path": "/etc/passwd"}))
    assert refusal.returncode == 0 and json.loads(refusal.stdout)["is_error"] is True
    bad = run("{not json")
    assert bad.returncode == 2 and "hint:" in bad.stderr
    assert run("[1, 2]").returncode == 2


def test_a_project_scoped_tool_writes_and_sees_only_that_projects_memories(desk: DeskFolder) -> None:
    root = desk.root
    alpha = MemoryTool(desk_api.open(root), project="alpha")
    ok(MemoryTool(desk_api.open(root)).run({"command": "create", "path": "/memories/report-style.md",
                                            "file_text": REPORT}))
    deploy = REPORT.replace("report-style", "deploy").replace("Chinese", "French")
    assert "project: alpha\ntype:" in refused(alpha, {"command": "create", "path": "/memories/deploy.md",
                                                       "file_text": deploy})  # the header it needs
    ok(alpha.run({"command": "create", "path": "/memories/deploy.md",
                  "file_text": deploy.replace("type:", "project: alpha\ntype:")}))
    assert (root / "projects/alpha/memory/deploy.md").is_file() and not (root / "memory/deploy.md").exists()
    listing = ok(alpha.run({"command": "view", "path": "/memories"}))
    assert "/memories/deploy.md" in listing and "report-style" not in listing
    assert "French" in ok(alpha.run({"command": "view", "path": "/memories/deploy.md"}))
    assert "does not exist" in refused(alpha, {"command": "view", "path": "/memories/report-style.md"})
    ok(alpha.run({"command": "str_replace", "path": "/memories/deploy.md", "old_str": "French", "new_str": "Korean"}))
    assert "Korean" in (root / "projects/alpha/memory/deploy.md").read_text()
    assert "rename is not available" in refused(alpha, {"command": "rename", "old_path": "/memories/deploy.md",
                                                        "new_path": "/memories/ship.md"})
    ok(alpha.run({"command": "delete", "path": "/memories/deploy.md"}))
    assert not (root / "projects/alpha/memory/deploy.md").exists() and (root / "memory/report-style.md").is_file()
    made = subprocess.run([sys.executable, "-m", "desk", "--desk", str(root), "--project", "beta", "memory-tool"],
                          input=json.dumps({"command": "create", "path": "/memories/x.md", "file_text":
                                            REPORT.replace("report-style", "x").replace("type:", "project: beta\ntype:")}),
                          capture_output=True, text=True)
    assert json.loads(made.stdout)["is_error"] is False and (root / "projects/beta/memory/x.md").is_file()
    assert "../x" in refused(MemoryTool(desk_api.open(root), project="../x"),  # no way out of the desk
                                {"command": "create", "path": "/memories/y.md",
                                 "file_text": REPORT.replace("report-style", "y")})
