"""The command surface: help everywhere, the installed script, exit codes, index determinism."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from desk.cli.main import cli
from desk.layout import DeskFolder
from desk.formats.memory_index import IndexEntry, render_index


def subcommands(group: click.Group) -> list[tuple[str, click.Command]]:
    """A group's commands as click finds them (desk's top level loads each module on demand)."""
    ctx = click.Context(group)
    return [(name, cmd) for name in group.list_commands(ctx) if (cmd := group.get_command(ctx, name))]


def all_commands(group: click.Group = cli, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, command in subcommands(group):
        found.append((*prefix, name))
        if isinstance(command, click.Group):
            found += all_commands(command, (*prefix, name))
    return found


def test_core_commands_exist() -> None:
    names = {c[0] for c in all_commands()}
    assert {"init", "remember", "forget", "show", "list", "history", "log", "reindex"} <= names


@pytest.mark.parametrize("path", all_commands(), ids=" ".join)
def test_every_command_has_help(path: tuple[str, ...]) -> None:
    command: click.Command = cli
    for part in path:
        assert isinstance(command, click.Group)
        command = dict(subcommands(command))[part]
    assert command.help and command.help.strip(), f"desk {' '.join(path)} has no help text"
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            assert param.help, f"desk {' '.join(path)} {param.opts[0]} has no help text"
    result = CliRunner().invoke(cli, [*path, "-h"], catch_exceptions=False)
    assert result.exit_code == 0 and "Usage:" in result.output


def test_outside_a_desk_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["list"], catch_exceptions=False)
    assert result.exit_code == 1 and "no desk in" in result.output and "desk init" in result.output


def test_installed_script_runs_end_to_end(tmp_path: Path) -> None:
    """The console script and `python -m desk`, as a person would run them, with DESK_HOME."""
    script = shutil.which("desk")
    assert script, "the desk console script is not installed"
    env = {**os.environ, "DESK_HOME": str(tmp_path / "d")}
    subprocess.run([script, "init", str(tmp_path / "d")], check=True, env=env, capture_output=True)
    done = subprocess.run([script, "remember", "tea", "--type", "preference", "-d", "Drink of choice",
                           "--json", "-"], input="Green tea, no sugar.\n", env=env, capture_output=True,
                          text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "created"
    bad = subprocess.run([sys.executable, "-m", "desk", "remember", "Bad/Name", "--type", "fact", "-d", "x",
                          "body"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 3 and "invalid memory name" in bad.stderr and "Traceback" not in bad.stderr
    version = subprocess.run([script, "--version"], capture_output=True, text=True, check=True)
    assert "desk, version" in version.stdout


_entry = st.builds(IndexEntry, name=st.from_regex(r"[a-z0-9][a-z0-9._-]{0,12}", fullmatch=True),
                   type=st.just("fact"), description=st.text(min_size=1, max_size=30).map(
                       lambda s: " ".join(s.split()) or "x"),
                   expires=st.none() | st.just("2027-01-01T00:00:00Z"), body_key=st.just("k"))


@settings(max_examples=100, deadline=None)
@given(st.lists(_entry, unique_by=lambda e: e.name), st.randoms())
def test_index_is_a_pure_function_of_the_entries(entries: list[IndexEntry], rnd: object) -> None:
    shuffled = list(entries)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert render_index(shuffled) == render_index(entries)
    lines = render_index(entries).decode().splitlines()[2:]
    names = [line.split("](")[0][3:] for line in lines if line.startswith("- [")]
    assert names == sorted(e.name for e in entries)


def test_cli_help_imports_no_library_module() -> None:
    """`desk --help` builds its choices from desk.vocabulary alone: no YAML, pydantic or git code."""
    code = ("import sys; from desk.cli.main import cli; "
            "heavy = sorted(m for m in sys.modules if m in ('yaml', 'pydantic') or m.startswith("
            "('desk.memory', 'desk.digest', 'desk.recall', 'desk.guard', 'desk.archive', 'desk.storage'))); "
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"



def test_the_lazy_command_table_matches_the_commands() -> None:
    """desk.cli.main.COMMANDS names each command's module and help without importing it: check both,
    and that `desk --help` reads exactly as click renders the loaded commands."""
    import inspect

    from desk.cli import (digest, guard, interchange, main, memory, read, review, scopes, serve, setup, sync, ui,
                          working)

    declared = {c.name: (m.__name__.rsplit(".", 1)[1], c)
                for m in (memory, guard, read, digest, working, interchange, sync, serve, scopes, ui, review, setup)
                for c in m.COMMANDS}
    assert set(declared) == set(main.COMMANDS)
    for name, (module, command) in declared.items():
        assert main.COMMANDS[name][0] == module, name
        first = inspect.cleandoc(command.help or "").split("\n\n")[0].replace("\n", " ")
        assert main.COMMANDS[name][1] == first, name
    listing = CliRunner().invoke(cli, ["--help"]).output.split("Commands:\n")[1]
    assert "…" not in listing and "..." not in listing  # issue 9.12: nothing cut short
    flat = "".join(listing.split())  # wrapping may break a line at a space or after a hyphen
    for name, (_module, first) in main.COMMANDS.items():
        assert name + "".join(first.split()) in flat, name


# -- the contract under hostile input (issue 15.11): a clear error, the right exit code, nothing written


def _tree_state(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}


@pytest.mark.parametrize("args", [
    ("digest", "--as-of", "9999-12-31T23:59:59Z"),  # its next day overflowed: a traceback
    ("recall", "x", "--as-of", "9999-12-31T23:59:59Z"),
    ("context", "--as-of", "0001-01-01T00:00:00Z"),
    ("archive", "append", "-k", "inbound", "--at", "9999-12-31T23:59:59Z", "late"),
])
def test_times_at_the_edge_of_the_calendar_are_usage_errors(desk: DeskFolder, run: DeskRunner,
                                                            args: tuple[str, ...]) -> None:
    before = _tree_state(desk.root)
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert "outside the range of UTC times" in result.output and "hint:" not in result.output.split("outside")[0]
    assert _tree_state(desk.root) == before


@pytest.mark.parametrize("payload", ['{"a": NaN}', '{"a": Infinity}', '{"a": [-Infinity]}'])
def test_nan_is_never_written_as_json(desk: DeskFolder, run: DeskRunner, payload: str) -> None:
    before = _tree_state(desk.root)
    result = run("archive", "append", "-k", "inbound", "--payload", payload, "text")
    assert result.exit_code == 2 and "NaN or Infinity" in result.output, result.output
    assert _tree_state(desk.root) == before


def test_a_record_over_the_limit_is_refused_whole(desk: DeskFolder, run: DeskRunner) -> None:
    from desk.formats.archive import MAX_RECORD_BYTES

    before = _tree_state(desk.root)
    result = run("archive", "append", "-k", "inbound", "-", input="x" * (MAX_RECORD_BYTES + 1))
    assert result.exit_code == 2 and "at most 1,048,576 bytes" in result.output, result.output
    assert "hint:" in result.output
    assert _tree_state(desk.root) == before
    assert run("archive", "append", "-k", "inbound", "-", input="x" * 1000).exit_code == 0


def test_an_oversized_record_written_by_hand_is_a_finding() -> None:
    from desk.formats.archive import MAX_RECORD_BYTES, check_lines, record_json

    record = {"actor": None, "at": "2026-01-02T00:00:00.000000Z", "content": "x" * MAX_RECORD_BYTES,
              "desk_id": "desk-1", "id": "20260102T000000000000Z-0123456789ab-20260102-000001",
              "kind": "inbound", "meta": {}, "payload": None, "prev": None,
              "recorded_at": "2026-01-02T00:00:00.000000Z", "session": None}
    findings = check_lines("a.jsonl", record_json(record).encode() + b"\n", 0, "desk-1", "2026-01-02")
    assert [(f.line, f.rule) for f in findings] == [(1, "archive-record")]
    assert "at most 1,048,576" in findings[0].message


def test_a_bug_is_one_clear_line_and_exit_1_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    from desk.cli.main import DeskGroup

    class Broken(DeskGroup):
        def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
            @click.command(name)
            def boom() -> None:
                raise KeyError("a desk bug")
            return boom

    group = click.Group.__new__(Broken)
    click.Group.__init__(group, "desk")
    monkeypatch.delenv("DESK_DEBUG", raising=False)
    result = CliRunner().invoke(group, ["boom"])
    assert result.exit_code == 1
    assert result.output.startswith("desk: error: internal error: KeyError: 'a desk bug'"), result.output
    assert "Traceback" not in result.output and "DESK_DEBUG=1" in result.output
    monkeypatch.setenv("DESK_DEBUG", "1")
    assert isinstance(CliRunner().invoke(group, ["boom"]).exception, KeyError)


def test_git_errors_name_the_git_command_not_its_options() -> None:
    from desk.storage.git.run import _command

    assert _command(("-c", "user.name=desk", "-c", "user.email=x", "commit-tree", "abc")) == "commit-tree"
    assert _command(("--no-pager", "log")) == "log"
    assert _command(("-C", "/tmp", "status")) == "status"


@pytest.mark.parametrize("argv", [
    [b"recall", b"ab\xff"],
    [b"remember", b"x\xff", b"--type", b"fact", b"-d", b"d", b"body"],
    [b"context", b"--query", b"q\xfe"],
    [b"now", b"append", b"doing", b"caf\xe9"],  # Latin-1, not UTF-8
])
def test_arguments_that_are_not_utf8_are_usage_errors(desk: DeskFolder, argv: list[bytes]) -> None:
    before = _tree_state(desk.root)
    proc = subprocess.run([sys.executable.encode(), b"-m", b"desk", b"--desk", bytes(desk.root), *argv],
                          capture_output=True, cwd=desk.root)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, err
    assert "is not valid UTF-8" in err and "hint:" in err and "Traceback" not in err
    assert _tree_state(desk.root) == before


def test_stdin_that_is_not_utf8_is_a_usage_error(desk: DeskFolder) -> None:
    before = _tree_state(desk.root)
    for argv in ([b"remember", b"zz", b"--type", b"fact", b"-d", b"d", b"-t", b"zz", b"-"],
                 [b"archive", b"append", b"-k", b"inbound", b"-"]):
        proc = subprocess.run([sys.executable, "-m", "desk", "--desk", str(desk.root), *argv],
                              input=b"caf\xe9\n", capture_output=True, cwd=desk.root)
        assert proc.returncode == 2 and b"stdin is not valid UTF-8" in proc.stderr, proc.stderr
    assert _tree_state(desk.root) == before


def test_a_ctrl_c_python_wrapped_in_a_runtime_error_is_an_interrupt_not_a_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """Python 3.11 wraps an exception raised in a class's `__set_name__` (a dataclass field while a
    module loads) in RuntimeError: a Ctrl-C landing there is still a Ctrl-C, never "internal error"."""
    from desk.cli.main import DeskGroup

    class Loading(DeskGroup):
        def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
            @click.command(name)
            def load() -> None:
                raise RuntimeError("Error calling __set_name__ on 'Field' instance") from KeyboardInterrupt()
            return load

    group = click.Group.__new__(Loading)
    click.Group.__init__(group, "desk")
    monkeypatch.delenv("DESK_DEBUG", raising=False)
    result = CliRunner().invoke(group, ["load"])
    assert "internal error" not in result.output and "interrupted" in result.output, result.output
