"""What a new user hits on the command surface (issue 9.7, 9.9, 9.12, 9.14, 9.16)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from desk.cli.main import cli
from desk.layout import DeskFolder
from tests.conftest import DeskRunner, git, snapshot


def test_validate_refuses_staged_and_all_together(run: DeskRunner) -> None:
    result = run("validate", "--staged", "--all")
    assert result.exit_code == 2 and "not both" in result.output and "hint:" in result.output


def test_a_project_agents_path_that_does_not_exist_is_a_usage_error(run: DeskRunner, tmp_path: Path) -> None:
    result = run("context", "--project-agents", str(tmp_path / "typo" / "AGENTS.md"))
    assert result.exit_code == 2 and "no such file" in result.output and "hint:" in result.output


def test_the_command_list_is_never_cut_short() -> None:
    out = CliRunner(env={"COLUMNS": "80"}).invoke(cli, ["-h"]).output
    assert "…" not in out
    assert "when git's housekeeping is overdue)." in " ".join(out.split())  # doctor's summary, whole


def test_counts_agree_with_their_nouns(run: DeskRunner) -> None:
    assert run("remember", "x", "--type", "fact", "-d", "X", "-t", "x", "The x fact.").exit_code == 0
    out = run("validate", "--all").output
    assert "file(s)" not in out and "error(s)" not in out and ", 0 errors, 0 warnings" in out
    assert run("archive", "append", "--kind", "note", "--at", "2026-11-29T10:00:00Z", "hi").exit_code == 0
    assert "committed 1 event in 1 file " in run("checkpoint").output


@pytest.mark.parametrize("args", [
    ["recall", ""],
    ["recall", "?!"],
    ["archive", "show", "nosuch"],
    ["archive", "show", "20261129T100000000000Z-abcd-20261129-000001"],
    ["remember", "x", "--type", "fact", "-d", "", "-t", "x", "body"],
    ["remember", "x", "--type", "fact", "-d", "X", "-t", "x", "--expires", "tomorrow", "body"],
    ["history", "nosuch"],
    ["show", "nosuch"],
    ["archive", "append", "--kind", "Bad Kind", "text"],
])
def test_every_error_ends_with_a_hint_and_no_made_up_location(desk: DeskFolder, run: DeskRunner,
                                                              args: list[str]) -> None:
    before = snapshot(desk.root)
    result = run(*args)
    assert result.exit_code in (1, 2, 3)
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("desk: ") and lines[-1].startswith("hint: ") and len(lines[-1]) > 10
    assert ":0:" not in result.stderr
    assert snapshot(desk.root) == before


def test_a_bad_import_line_names_file_and_line_with_a_hint(run: DeskRunner, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "inbound", "content": "ok"}\n{"kind": "inbound", "oops": 1}\n')
    result = run("archive", "import", str(bad))
    assert result.exit_code == 2 and f"{bad}:2: unknown field" in result.stderr
    assert "hint: fix that line" in result.stderr


def test_an_argument_error_names_the_option_not_a_line(run: DeskRunner) -> None:
    result = run("remember", "x", "--type", "fact", "-d", "", "body")
    assert "memory/x.md: frontmatter-field: description: is empty" in result.stderr
    assert "hint: fix --description" in result.stderr
    data = __import__("json").loads(run("remember", "x", "--type", "fact", "-d", "", "--json", "body").stdout)
    assert data["hint"] and data["status"] == "rejected"


def test_init_without_a_git_identity_says_what_desk_commits_as(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["init", str(tmp_path / "d")], catch_exceptions=False)
    assert result.exit_code == 0
    assert "desk commits as desk <desk@localhost>" in result.output
    assert "git config --global user.name" in result.output
    data = __import__("json").loads(CliRunner().invoke(cli, ["init", str(tmp_path / "e"), "--json"]).output)
    assert data["fallback_identity"] == "desk <desk@localhost>"


def test_init_with_a_git_identity_says_nothing_about_it(tmp_path: Path, identity: None) -> None:
    result = CliRunner().invoke(cli, ["init", str(tmp_path / "d")], catch_exceptions=False)
    assert result.exit_code == 0 and "user.name" not in result.output


def test_init_in_a_fresh_git_repository_needs_no_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "d"
    root.mkdir()
    git(root, "init", "-q")
    monkeypatch.chdir(root)
    result = CliRunner().invoke(cli, ["init", "."], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert (root / ".system" / "desk.json").is_file() and git(root, "log", "--format=%s") == "init: new desk\n"
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    assert CliRunner().invoke(cli, ["init", str(tmp_path / "busy")]).exit_code == 1


def _complete(args: list[str], incomplete: str) -> list[str]:
    from click.shell_completion import BashComplete

    return [c.value for c in BashComplete(cli, {}, "desk", "_DESK_COMPLETE").get_completions(args, incomplete)]


def test_completion_offers_memory_names_types_and_sections(desk: DeskFolder, run: DeskRunner,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("report-style", "report-zh", "tea"):
        assert run("remember", name, "--type", "fact", "-d", name, "-t", name, f"About {name}.").exit_code == 0
    assert _complete(["--desk", str(desk.root), "show"], "rep") == ["report-style", "report-zh"]
    assert _complete(["show", "--desk", str(desk.root)], "t") == ["tea"]  # --desk after the command too
    monkeypatch.chdir(desk.root / "memory")
    assert _complete(["set"], "") == ["report-style", "report-zh", "tea"]
    assert "preference" in _complete(["remember", "x", "--type"], "")
    assert _complete(["now", "show", "--section"], "b") == ["blocked"]
    assert _complete(["rem"], "") == [] or "remember" in _complete([], "rem")


def test_completion_looks_inside_projects(desk: DeskFolder, run: DeskRunner,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    args = ("--type", "fact", "-d", "d", "-t", "t")
    assert run("remember", "house", *args, "Desk-wide.").exit_code == 0
    assert run("--project", "billing", "remember", "runtime", *args, "Billing.").exit_code == 0
    assert run("--project", "bistro", "remember", "menu", *args, "Bistro.").exit_code == 0
    root = ["--desk", str(desk.root)]
    assert _complete([*root, "--project", "billing", "show"], "") == ["runtime"]
    assert _complete([*root, "show", "--project", "bistro"], "") == ["menu"]  # after the command too
    assert _complete([*root, "show"], "") == ["house"]
    assert _complete([*root, "--project"], "bi") == ["billing", "bistro"]
    assert _complete([*root, "list", "--project"], "bil") == ["billing"]
    assert _complete([*root, "--project", "../..", "show"], "") == []  # never a path outside
    monkeypatch.setenv("DESK_PROJECT", "billing")
    assert _complete([*root, "forget"], "") == ["runtime"]


def test_completion_outside_a_desk_offers_no_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert _complete(["show"], "") == []


def test_the_bash_completion_script_is_generated(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, [], prog_name="desk", env={"_DESK_COMPLETE": "bash_source"})
    assert "_desk_completion" in result.output and "complete " in result.output


@pytest.mark.parametrize("args,suggestion", [
    (["remmeber"], "Did you mean 'remember'?"),
    (["archive", "lst"], "Did you mean 'list'?"),
    (["now", "shw"], "Did you mean 'show'?"),
])
def test_a_mistyped_command_gets_a_did_you_mean(args: list[str], suggestion: str) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and suggestion in result.output


def test_a_mistyped_memory_name_gets_a_did_you_mean(run: DeskRunner) -> None:
    assert run("remember", "report-style", "--type", "fact", "-d", "R", "-t", "r", "Short.").exit_code == 0
    for verb in ("show", "forget", "diff", "history"):
        result = run(verb, "report-styel")
        assert result.exit_code == 1 and "did you mean `report-style`?" in result.stderr, verb


def test_the_documented_multi_line_now_set_writes_two_lines(desk: DeskFolder) -> None:
    """docs/working-desk.md's `now set` example, run by bash as a reader would (issue 9.12)."""
    import re
    import shutil
    import subprocess

    doc = (Path(__file__).resolve().parents[1] / "docs" / "working-desk.md").read_text()
    line = next(l for l in doc.splitlines() if l.startswith("desk now set --section next"))
    command = re.sub(r"\s{2,}#.*$", "", line).replace("desk ", f"{shutil.which('desk')} --desk {desk.root} ", 1)
    subprocess.run(["bash", "-c", command], check=True, capture_output=True)
    now = desk.path("NOW.md").read_text()
    assert "send the report\nreview MISTAKES.md" in now and "\\n" not in now


def test_a_memory_name_or_recall_project_of_120_kb_is_not_echoed_whole(desk: DeskFolder, run: DeskRunner,
                                                                       identity: None) -> None:
    """A 120 KB memory name (any verb) or `recall --project` was repeated whole in the error; it
    is cut as a 120 KB preference key is (desk.errors.quoted), with its length; `forget --reason`
    is held to resolve's --rationale limit (2,000 characters) and not echoed either."""
    huge = "a" * 120_000 + "!"
    assert run("remember", "keep", "--type", "fact", "-d", "d", "-t", "keep", "Kept.").exit_code == 0
    before = snapshot(desk.root)
    for args, code in ((["remember", huge, "--type", "fact", "-d", "d", "body"], 3), (["forget", huge], 3),
                       (["set", huge, "-d", "x"], 3), (["rename", "keep", huge], 3), (["show", huge], 2),
                       (["history", huge], 2), (["diff", huge], 2), (["recall", "x", "--project", huge], 2)):
        result = run(*args)
        assert result.exit_code == code and len(result.output) < 1000, (args[0], result.output[:300])
        assert "(120,001 characters)" in result.output and "hint:" in result.output, args[0]
    result = run("forget", "keep", "--reason", huge)
    assert result.exit_code == 2 and len(result.output) < 1000, result.output[:300]
    assert "--reason is 120,001 characters; the limit is 2,000" in result.output and "hint:" in result.output
    assert snapshot(desk.root) == before
    assert run("forget", "keep", "--reason", "r" * 2000).exit_code == 0
