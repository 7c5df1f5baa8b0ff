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
    assert "a stale index.lock." in " ".join(out.split())


def test_counts_agree_with_their_nouns(run: DeskRunner) -> None:
    assert run("remember", "x", "--type", "fact", "-d", "X", "-t", "x", "The x fact.").exit_code == 0
    out = run("validate", "--all").output
    assert "file(s)" not in out and "error(s)" not in out and ", 0 errors, 0 warnings" in out
    assert run("archive", "append", "--kind", "note", "--at", "2026-11-29T10:00:00Z", "hi").exit_code == 0
    assert "committed 1 event in 1 file " in run("checkpoint").output
