"""Global options: `--desk` before or after the subcommand; which desk is used and said (issue 9.11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from desk.cli.main import cli, hoist_global_options
from desk.setup.init import init_desk


def _runner() -> CliRunner:
    return CliRunner()


def test_desk_is_accepted_after_the_subcommand(tmp_path: Path) -> None:
    init_desk(tmp_path / "d")
    for args in (["list", "--desk", str(tmp_path / "d")], ["list", f"--desk={tmp_path / 'd'}"],
                 ["remember", "x", "--desk", str(tmp_path / "d"), "--type", "fact", "-d", "X.",
                  "-t", "x", "Body of x."]):
        result = _runner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
    assert (tmp_path / "d" / "memory" / "x.md").is_file()


def test_what_follows_a_double_dash_is_not_a_global_option() -> None:
    assert hoist_global_options(["remember", "x", "--desk", "D", "--", "--desk"]) == \
        ["--desk", "D", "remember", "x", "--", "--desk"]


def test_the_enclosing_desk_wins_over_desk_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    init_desk(tmp_path / "here")
    init_desk(tmp_path / "home")
    monkeypatch.setenv("DESK_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path / "here" / "memory")
    result = _runner().invoke(cli, ["remember", "x", "--type", "fact", "-d", "X.", "-t", "x", "Body."],
                              catch_exceptions=False)
    assert result.exit_code == 0
    assert (tmp_path / "here" / "memory" / "x.md").is_file()
    assert not (tmp_path / "home" / "memory" / "x.md").exists()
    assert "DESK_HOME" not in result.stderr


def test_a_desk_from_desk_home_is_named_with_verbose_in_human_output_only(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    init_desk(tmp_path / "home")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.setenv("DESK_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path / "elsewhere")
    quiet = _runner().invoke(cli, ["list"], catch_exceptions=False)
    assert quiet.exit_code == 0 and "DESK_HOME" not in quiet.stderr  # not on every command (issue 32)
    human = _runner().invoke(cli, ["list", "--verbose"], catch_exceptions=False)
    assert human.exit_code == 0
    assert f"desk: using {(tmp_path / 'home').resolve()} ($DESK_HOME)" in human.stderr
    data = _runner().invoke(cli, ["list", "--json"], catch_exceptions=False)
    assert data.stderr == "" and json.loads(data.stdout)
