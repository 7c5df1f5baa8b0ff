"""Issue 32 point 4: the small errors a first hour with desk met, each through the real CLI on a
real desk (CliRunner, or a subprocess where git or a server runs desk)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from desk.cli.main import cli
from desk.layout import DeskFolder
from tests.conftest import DeskRunner
from tests.guard_helpers import sh

# What a Python repr looks like where a person reads: None, a dict or list literal, a quoted string
# with an escaped newline.
REPR_MARKERS = ("None", "{'", "['", "\\n", "'\n")


def no_repr(text: str) -> str:
    assert not [m for m in REPR_MARKERS if m in text], text
    return text


def test_pref_archive_list_and_resolve_subjects_show_no_python_repr(desk: DeskFolder, run: DeskRunner) -> None:
    said = [run("pref", "set", "response.language", "Chinese").output,
            run("pref", "set", "response.language", "English").output,
            run("pref", "delete", "response.language").output]
    assert '(none) -> "Chinese"' in said[0] and '"Chinese" -> "English"' in said[1]
    assert '(was "English")' in said[2]
    assert run("archive", "append", "-k", "tool", "--payload", '{"cmd": "pytest"}').exit_code == 0
    listed = run("archive", "list").output
    assert '{"cmd": "pytest"}' in listed
    for text in ("Use Python 3.11.", "Use Python 3.12."):
        assert run("fact", "add", text, "--kind", "decision", "--importance", "5", "--key", "runtime.python",
                   "--at", "2026-09-01T10:00:00Z").exit_code == 0
    assert run("digest", "--as-of", "2026-11-29T20:00:00Z").exit_code == 0
    (case,) = json.loads(run("conflicts", "list", "--json").output)["cases"]
    shown = json.loads(run("conflicts", "show", case["id"], "--json").output)["case"]
    chosen = next(c for c in shown["candidates"] if "3.12" in (c["content"] or ""))
    said.append(run("conflicts", "show", case["id"]).output)
    done = run("resolve", case["id"], chosen["id"], "--expected-revision", str(shown["revision"]),
               "--event-id", "e-1", "--actor", "ada", "--rationale", "newer")
    assert done.exit_code == 0, done.output
    subject = sh(desk.root, "log", "-1", "--format=%s").stdout
    assert subject.startswith('resolve: runtime.python: replaced "Use Python 3.12."'), subject
    for text in [*said, listed, done.output, subject, run("log", "-n", "3").output]:
        no_repr(text)


def test_forget_json_carries_the_reason(run: DeskRunner) -> None:
    assert run("remember", "tea", "--type", "preference", "-d", "Tea", "-t", "tea", "Green tea.").exit_code == 0
    data = json.loads(run("forget", "tea", "--reason", "because", "--json").output)
    assert data["status"] == "deleted" and data["reason"] == "because"


def _editor(tmp_path: Path, text: str | None) -> str:
    """An editor script that saves `text` (None: saves the file as it was opened)."""
    script = tmp_path / "ed.sh"
    if text is None:
        script.write_text("#!/bin/sh\nexit 0\n")
    else:
        (tmp_path / "saved").write_text(text)
        script.write_text(f"#!/bin/sh\ncat {tmp_path / 'saved'} > \"$1\"\n")
    script.chmod(0o755)
    return str(script)


def test_edit_of_a_new_name_saved_unchanged_says_nothing_was_created(
        desk: DeskFolder, run: DeskRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDITOR", _editor(tmp_path, None))
    head = sh(desk.root, "rev-parse", "HEAD").stdout
    result = run("edit", "newname")
    assert result.exit_code == 0 and "not created: memory/newname.md" in result.output
    assert not result.output.startswith("unchanged") and not (desk.root / "memory" / "newname.md").exists()
    assert json.loads(run("edit", "newname", "--json").output)["status"] == "not-created"
    assert sh(desk.root, "rev-parse", "HEAD").stdout == head


def test_edit_refuses_a_new_memory_that_keeps_the_templates_placeholder(
        desk: DeskFolder, run: DeskRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from desk.memory.edit import TEMPLATE

    appended = TEMPLATE.format(name="tea").replace("description: One line (at most 150 characters) shown in "
                                                   "MEMORY.md", "description: Tea") + "Green tea, no sugar.\n"
    monkeypatch.setenv("EDITOR", _editor(tmp_path, appended))
    head = sh(desk.root, "rev-parse", "HEAD").stdout
    result = CliRunner().invoke(cli, ["--desk", str(desk.root), "edit", "tea"], input="n\n")
    assert result.exit_code == 3
    assert ('memory/tea.md:11: template: still holds the template\'s placeholder "The fact itself, in a few '
            'sentences."') in result.output  # line 11: desk stamped created, updated and schema above it
    assert sh(desk.root, "rev-parse", "HEAD").stdout == head and not (desk.root / "memory" / "tea.md").exists()


def test_recall_refuses_all_scopes_with_a_project(run: DeskRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run("recall", "tea", "--all-scopes", "--project", "foo")
    assert result.exit_code == 2 and "--all-scopes" in result.output and "--project" in result.output
    assert "hint:" in result.output
    monkeypatch.setenv("DESK_PROJECT", "foo")  # a project from the environment yields to --all-scopes
    assert run("recall", "tea", "--all-scopes").exit_code == 0


def test_init_below_a_file_is_a_usage_error_naming_the_path(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    target = tmp_path / "afile" / "sub"
    result = CliRunner().invoke(cli, ["init", str(target)])
    assert result.exit_code == 2
    assert f"{target.resolve()}: {(tmp_path / 'afile').resolve()} is a file, not a folder" in result.output
    assert "Not a directory" not in result.output and "desk leaves the desk as it was" not in result.output
    assert "hint:" in result.output


@pytest.mark.parametrize("args,command", [
    (["list", "--bogus"], "desk list"),
    (["--bogus"], "desk"),
    (["remember"], "desk remember"),
    (["remmeber"], "desk"),
    (["archive", "lst"], "desk archive"),
    (["recall", "x", "--limit", "many"], "desk recall"),
    (["remember", "x", "--type", "user", "body"], "desk remember"),
])
def test_clicks_own_usage_errors_end_with_a_hint(desk: DeskFolder, args: list[str], command: str) -> None:
    result = CliRunner().invoke(cli, ["--desk", str(desk.root), *args], prog_name="desk")
    assert result.exit_code == 2
    assert result.stderr.rstrip("\n").splitlines()[-1] == f"hint: run `{command} --help` to see what it accepts"


def test_a_usage_error_under_json_is_one_json_object_with_its_hint(desk: DeskFolder) -> None:
    result = CliRunner().invoke(cli, ["--desk", str(desk.root), "show", "--json"], prog_name="desk")
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert data["error"] == "UsageError" and "NAME" in data["message"] and "desk show --help" in data["hint"]


def test_a_broken_memory_is_one_finding_not_also_a_stale_index(desk: DeskFolder, run: DeskRunner) -> None:
    assert run("remember", "tea", "--type", "preference", "-d", "Tea", "-t", "tea", "Green tea.").exit_code == 0
    path = desk.root / "memory" / "tea.md"
    path.write_text(path.read_text().replace("type: preference", "type: bogus"))
    for _ in range(2):  # the second run answers from the verdict cache
        result = run("validate", "--all")
        assert result.exit_code == 3 and "memory/tea.md:4: frontmatter-field" in result.output
        assert "index-stale" not in result.output and "1 error," in result.output
    sh(desk.root, "add", "memory/tea.md")
    hooked = sh(desk.root, "commit", "-m", "by hand")  # through desk's pre-commit hook
    assert hooked.returncode != 0 and "frontmatter-field" in hooked.stderr and "index-stale" not in hooked.stderr
    doctor = run("doctor")
    assert "index-stale" not in doctor.output
    # a MEMORY.md that is stale for another reason is still found beside the broken memory
    index = desk.root / "MEMORY.md"
    index.write_text(index.read_text() + "- [zz](memory/zz.md) — gone\n")
    result = run("validate", "--all")
    assert "index-stale" in result.output and "2 errors," in result.output


def test_fact_add_defaults_importance_to_3(run: DeskRunner) -> None:
    result = run("fact", "add", "Use WAL mode.", "--kind", "decision", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["payload"]["importance"] == 3


def test_a_new_archive_file_stays_out_of_git_status_and_diffs_as_text(desk: DeskFolder, run: DeskRunner) -> None:
    assert run("archive", "append", "-k", "tool", "ran the tests").exit_code == 0
    assert sh(desk.root, "status", "--porcelain").stdout == ""  # no `?? .system/archive/...`
    assert run("validate", "--all").exit_code == 0  # desk's own listing still sees it
    assert "committed 1 event in 1 file" in run("checkpoint").output
    assert sh(desk.root, "ls-files", ".system/archive").stdout.count(".jsonl") == 1
    assert run("archive", "append", "-k", "tool", "ran them again").exit_code == 0
    diff = sh(desk.root, "diff").stdout
    assert "Binary files" not in diff and '"content":"ran them again"' in diff


def test_an_older_desks_binary_archive_diff_becomes_text_after_hooks_install(desk: DeskFolder,
                                                                             run: DeskRunner) -> None:
    attributes = desk.root / ".gitattributes"
    older = attributes.read_text().replace(" linguist-generated=true\n.system/adjudications",
                                           " -diff linguist-generated=true\n.system/adjudications")
    older = older.replace(".system/archive/*.jsonl diff=desk-archive\n", "")
    attributes.write_text(older)
    sh(desk.root, "commit", "-qam", "attributes as an older desk wrote them")
    assert run("archive", "append", "-k", "tool", "one").exit_code == 0
    assert run("checkpoint").exit_code == 0
    assert run("archive", "append", "-k", "tool", "two").exit_code == 0
    assert "Binary files" in sh(desk.root, "diff").stdout
    assert run("hooks", "install").exit_code == 0
    assert "Binary files" not in sh(desk.root, "diff").stdout and '"content":"two"' in sh(desk.root, "diff").stdout


def test_the_servers_failed_calls_are_one_plain_line_each_on_stderr(desk: DeskFolder) -> None:
    pytest.importorskip("mcp")
    calls = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "show_memory", "arguments": {"name": "nope"}}},
             {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "forget", "arguments": {"name": "gone"}}}]
    proc = subprocess.run([sys.executable, "-m", "desk", "--desk", str(desk.root), "serve"],
                          input="".join(json.dumps(c) + "\n" for c in calls), capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "80"})
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [a["result"].get("isError") for a in answers[1:]] == [True, True]
    lines = proc.stderr.splitlines()
    assert len(lines) == 2, proc.stderr
    assert lines[0].startswith("desk serve: Tool 'show_memory' failed") and "nope" in lines[0]
    assert lines[1].startswith("desk serve: Tool 'forget' failed") and "gone" in lines[1]
    assert not any(box in proc.stderr for box in "│╭╰─")
