"""The example harness loop keeps working (it is documentation people will copy)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "harness_loop.py"


def test_harness_loop_runs_and_leaves_an_audit_trail(tmp_path: Path) -> None:
    root = tmp_path / "desk"
    out = subprocess.run([sys.executable, str(EXAMPLE), str(root)], capture_output=True, text=True, check=True)
    assert "remember report-style: created" in out.stdout
    assert "gate refused a session-only note" in out.stdout
    assert "the current conversation wins" in out.stdout
    assert "remember report-style again: updated" in out.stdout
    subjects = git(root, "log", "--format=%s").splitlines()
    assert subjects.count("remember: report-style") == 2 and subjects[0].startswith("checkpoint:")
    assert len(list((root / "memory").glob("*.md"))) == 1
    assert git(root, "status", "--porcelain") == ""


def test_the_memory_tool_example_replays_offline_and_commits_through_the_gate(tmp_path: Path) -> None:
    root = tmp_path / "desk"
    example = EXAMPLE.parent / "anthropic_memory_tool.py"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC")}  # no key needed
    out = subprocess.run([sys.executable, str(example), str(root)], capture_output=True, text=True, check=True,
                         env=env).stdout
    assert "toolu_02 create /memories/report-style.md: error" in out and "frontmatter-missing" in out
    assert "toolu_06 create /memories/SOUL.md: error" in out and "never changes it" in out
    assert "toolu_07 view /memories/../.git/config: error" in out
    assert "keep the body under 500 characters" in (root / "memory/report-style.md").read_text()
    assert git(root, "log", "--format=%s").splitlines() == ["remember: report-style"] * 2 + ["init: new desk"]
    assert git(root, "log", "-1", "--format=%(trailers:key=Desk-Client,valueonly)").strip() == "memory-tool"
    assert (root / "SOUL.md").read_text() == git(root, "show", "HEAD:SOUL.md")


CLAUDE_CODE = EXAMPLE.parent / "claude-code"


def test_the_claude_code_settings_are_valid_and_run_commands_that_exist() -> None:
    settings = json.loads((CLAUDE_CODE / "settings.json").read_text())
    commands = [hook["command"] for event in ("SessionStart", "Stop", "PreCompact")
                for group in settings["hooks"][event] for hook in group["hooks"]]
    assert commands[0] == "desk context"
    for command in commands:
        words = shlex.split(command)
        if words[0] == "desk":
            desk_cli = [sys.executable, "-m", "desk", *words[1:], "--help"]
            assert subprocess.run(desk_cli, capture_output=True).returncode == 0, command
        else:
            assert words[0] == "python3" and (CLAUDE_CODE / Path(words[1]).name).is_file(), command
    readme = (CLAUDE_CODE / "README.md").read_text()
    assert "claude mcp add" in readme and "desk_archive_transcript.py" in readme


def test_the_transcript_hook_archives_each_message_once(tmp_path: Path) -> None:
    root = tmp_path / "desk"
    subprocess.run([sys.executable, "-m", "desk", "init", str(root)], check=True, capture_output=True)
    transcript = tmp_path / "6f1c-session.jsonl"

    def line(kind: str, uuid: str, content: object) -> str:
        return json.dumps({"type": kind, "uuid": uuid, "sessionId": "s1", "timestamp": "2026-11-30T10:00:00Z",
                           "message": {"role": kind, "content": content}}) + "\n"

    transcript.write_text(line("user", "u1", "where do we deploy from?")
                          + line("assistant", "a1", [{"type": "text", "text": "From the release branch."},
                                                     {"type": "tool_use", "id": "t", "name": "x", "input": {}}]))
    hook = json.dumps({"session_id": "s1", "transcript_path": str(transcript), "hook_event_name": "Stop"})
    bin_dir = Path(sys.executable).parent  # the `desk` the hook calls is this environment's
    env = {**os.environ, "DESK_HOME": str(root), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}

    def run_hook() -> str:
        proc = subprocess.run([sys.executable, str(CLAUDE_CODE / "desk_archive_transcript.py")], input=hook,
                              capture_output=True, text=True, env=env)
        assert proc.returncode == 0
        return proc.stderr

    assert run_hook() == ""
    with transcript.open("a") as file:
        file.write(line("user", "u2", "and the tests?"))
    assert run_hook() == "" and run_hook() == ""
    listed = subprocess.run([sys.executable, "-m", "desk", "--desk", str(root), "archive", "list", "--json"],
                            capture_output=True, text=True, check=True).stdout
    events = json.loads(listed)["events"]
    assert [(e["kind"], e["actor"], e["content"]) for e in events] == [
        ("inbound", "user", "where do we deploy from?"), ("outbound", "assistant", "From the release branch."),
        ("inbound", "user", "and the tests?")]
    assert {e["session"] for e in events} == {"s1"}
    assert subprocess.run(["git", "-C", str(root), "status", "--porcelain", "memory/"], capture_output=True,
                          text=True).stdout == ""  # a transcript brings no memories
    transcript.write_text("{not json\n")
    refused = run_hook()  # reported on stderr, exit 0: the session goes on
    assert refused.startswith("desk_archive_transcript: desk: ")  # desk's own message, not an exit status
    assert f"{transcript.name}:1" in refused and "hint:" in refused and "exit status" not in refused


# -- the README's tour, command by command (issue 9: the tour is run, so it cannot rot) ----------

README = Path(__file__).resolve().parents[1] / "README.md"


def tour_commands(doc: Path = README) -> list[str]:
    """The shell lines of the README's "A short tour" block (or of every sh block of a docs/ page
    that is a tour): continuations joined, comments cut."""
    import re

    text = doc.read_text("utf-8")
    if doc == README:
        block = text.split("## A short tour", 1)[1].split("```sh\n", 1)[1].split("\n```", 1)[0]
    else:
        block = "\n".join(re.findall(r"```sh\n(.*?)\n```", text, re.S))
    joined = re.sub(r"\\\n\s*", "", block)
    lines = []
    for line in joined.splitlines():
        line = re.sub(r"\s{2,}#.*$", "", line).strip()  # a comment after two spaces, as the tour writes them
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def test_the_readme_tour_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, identity: None) -> None:
    import json
    import shlex

    from click.testing import CliRunner

    from desk.cli.main import cli

    import os
    import shutil

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EDITOR", "true")  # `desk edit`: saved unchanged, nothing to commit
    # What the tour imports, where it looks (HOME is the test's own: see tests/conftest.py).
    fixtures = Path(__file__).resolve().parent / "interchange" / "fixtures"
    home = Path(os.environ["HOME"])
    shutil.copytree(fixtures / "claude-code" / "project", home / ".claude" / "projects" / "my-app")
    shutil.copytree(fixtures / "chat-export" / "chatgpt", home / "Downloads" / "chatgpt")
    server = tmp_path / "server" / "desk.git"  # the tour's `me@server:desk.git`, as a local bare repo
    server.parent.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(server)], check=True)
    commands = tour_commands()
    assert len(commands) >= 20 and commands[0].startswith("desk init")
    runner = CliRunner()
    for line in commands:
        argv = [str(server) if a == "me@server:desk.git" else os.path.expanduser(a)  # `~`, as a shell
                for a in shlex.split(line)]
        if argv[0] == "cd":
            monkeypatch.chdir(argv[1])
            continue
        if argv[0] == "git":
            subprocess.run(argv, check=True, capture_output=True)
            continue
        if argv[0] == "cat":
            assert Path(argv[1]).is_file(), line
            continue
        assert argv[0] == "desk", line
        result = runner.invoke(cli, argv[1:], catch_exceptions=False)
        assert result.exit_code == 0, (line, result.output)
        if argv[1:2] == ["history"]:
            subjects = [c["subject"] for c in json.loads(
                runner.invoke(cli, [*argv[1:], "--json"]).output)["commits"]]
            assert subjects[0].startswith("rename:") and subjects[-1] == "remember: report-style"
    dirty = git(tmp_path / "my-desk", "status", "--porcelain").splitlines()
    # only archive growth may wait (for the next `desk checkpoint`): every other change is committed
    assert all(line[3:].startswith(".system/archive/") for line in dirty), dirty


# -- every `desk ...` line in README.md and docs/ names real commands and options -----------------

DOCS = [README, *sorted((README.parent / "docs").glob("*.md"))]


def doc_command_lines() -> list[tuple[str, list[str]]]:
    """(file, argv) for each `desk` command in the sh/console blocks of the README and docs/:
    split as a shell would (quotes, comments, `&&`, `|`, `;`, `<`), prompts and output cut."""
    import re
    import shlex

    found = []
    for doc in DOCS:
        for _lang, block in re.findall(r"```(sh|console)\n(.*?)\n```", doc.read_text("utf-8"), re.S):
            joined = re.sub(r"\\\n\s*", "", block)
            for line in joined.splitlines():
                line = line.removeprefix("$ ")
                if not re.match(r"\S*desk |.*(&&|\|) *desk ", line):
                    continue  # output, or a line that runs no desk command
                line = re.sub(r"\[(-[^\]]*)\]", r"\1", line)  # `[--section next]`: an optional part
                lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
                lexer.whitespace_split = True
                command: list[str] = []
                for token in [*lexer, ";"]:
                    if token in ("&&", "||", ";", "|", "<", ">", "&"):
                        if command[:1] == ["desk"]:
                            found.append((doc.name, command[1:]))
                        command = [] if token != "<" else ["<"]
                    else:
                        command.append(token)
    return found


@pytest.mark.parametrize("doc,argv", doc_command_lines(),
                         ids=lambda v: v if isinstance(v, str) else " ".join(v)[:50])
def test_documented_commands_and_options_exist(doc: str, argv: list[str]) -> None:
    """Parsed with `--help` appended: an unknown command or option fails (exit 2), values are not
    checked (the README tour, run above, checks those). `[--opt v]` is an optional part: kept."""
    from click.testing import CliRunner

    from desk.cli.main import cli

    result = CliRunner().invoke(cli, [*argv, "--help"], catch_exceptions=False)
    assert result.exit_code == 0 and "Usage:" in result.output, (doc, argv, result.output)


def test_the_memories_page_runs(desk_root_cwd: Path) -> None:
    """docs/memories.md's examples, in order, on a fresh desk (shell completion aside)."""
    import shlex

    from click.testing import CliRunner

    from desk.cli.main import cli

    commands = [c for c in tour_commands(README.parent / "docs" / "memories.md") if "_DESK_COMPLETE" not in c]
    assert len(commands) >= 8
    for line in commands:
        result = CliRunner().invoke(cli, shlex.split(line)[1:], catch_exceptions=False)
        assert result.exit_code == 0, (line, result.output)


@pytest.fixture
def desk_root_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, identity: None) -> Path:
    from desk.setup.init import init_desk

    init_desk(tmp_path / "d")
    monkeypatch.chdir(tmp_path / "d")
    return tmp_path / "d"
