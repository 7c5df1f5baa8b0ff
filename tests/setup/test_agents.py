"""`desk setup claude-code | claude-desktop | cursor` (issue 31): merged into a temporary HOME and
project twice, then removed, every file compared byte for byte with what was there before; the
commands it writes are run for real (the server through the MCP SDK's client, the hooks with
Claude Code's hook input on stdin)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from desk.layout import DeskFolder
from desk.setup.agents import auto_memory_folder, config_home
from tests.conftest import DeskRunner, git

pytestmark = pytest.mark.usefixtures("identity")
FIXTURES = Path(__file__).resolve().parents[1] / "interchange" / "fixtures" / "claude-code" / "project"
# Foreign entries the way their tools lay them out: Claude Code's JSON.stringify(..., 2), a person's
# one-line file, a four-space one; each must come back byte for byte.
FOREIGN_MCP = json.dumps({"mcpServers": {"github": {"command": "npx", "args": ["-y", "gh"]}}}, indent=2) + "\n"
FOREIGN_SETTINGS = ('{"permissions": {"allow": ["Bash(ls)"]}, "hooks": {"Stop": [{"hooks": '
                    '[{"type": "command", "command": "echo done"}]}]}}')
FOREIGN_CLAUDE_JSON = '{\n    "numStartups": 3,\n    "projects": {\n        "/x": {\n            "allowedTools": []\n        }\n    }\n}\n'


def snapshot(*roots: Path) -> dict[str, bytes]:
    """Every file under `roots` (relative path -> bytes)."""
    return {str(p): p.read_bytes() for root in roots for p in sorted(root.rglob("*")) if p.is_file()}


def hooks_of(settings: Path) -> dict[str, list[str]]:
    data = json.loads(settings.read_text())
    return {event: [h["command"] for g in groups for h in g["hooks"]] for event, groups in data["hooks"].items()}


def test_claude_code_twice_then_remove_gives_every_file_back_byte_for_byte(
        run: DeskRunner, desk: DeskFolder, tmp_path: Path, isolated_home: Path) -> None:
    project = tmp_path / "app"
    (project / ".claude").mkdir(parents=True)
    (project / ".mcp.json").write_text(FOREIGN_MCP)
    (project / ".claude/settings.json").write_text(FOREIGN_SETTINGS)
    before = snapshot(project, isolated_home)

    first = run("setup", "claude-code", str(project), "--prompt-hook", "--json")
    assert first.exit_code == 0, first.output
    assert [f["status"] for f in json.loads(first.output)["files"]] == ["updated", "updated"]
    servers = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert set(servers) == {"github", "desk"} and servers["github"] == {"command": "npx", "args": ["-y", "gh"]}
    assert servers["desk"] == {"command": sys.executable, "args": ["-m", "desk", "--desk", str(desk.root), "serve"]}
    hooks = hooks_of(project / ".claude/settings.json")
    assert hooks["Stop"] == ["echo done"]  # the foreign hook stays, first
    assert shlex.split(hooks["SessionStart"][0])[-1] == "context"
    assert [shlex.split(c)[-1] for e in ("PreCompact", "SessionEnd", "UserPromptSubmit") for c in hooks[e]] == \
        ["archive", "archive", "prompt"]
    assert json.loads((project / ".claude/settings.json").read_text())["permissions"] == {"allow": ["Bash(ls)"]}
    after_first = snapshot(project, isolated_home)

    second = run("setup", "claude-code", str(project), "--prompt-hook")
    assert second.exit_code == 0 and "nothing to change" in second.output
    assert snapshot(project, isolated_home) == after_first  # idempotent: not a byte moved

    removed = run("setup", "claude-code", str(project), "--remove")
    assert removed.exit_code == 0, removed.output
    assert snapshot(project, isolated_home) == before
    again = run("setup", "claude-code", str(project), "--remove")
    assert "nothing to change" in again.output and snapshot(project, isolated_home) == before


def test_claude_code_user_config_writes_the_home_files_and_removes_only_its_own(
        run: DeskRunner, isolated_home: Path, tmp_path: Path) -> None:
    (isolated_home / ".claude.json").write_text(FOREIGN_CLAUDE_JSON)
    before = snapshot(isolated_home)
    assert run("setup", "claude-code", "--user-config").exit_code == 0
    claude = json.loads((isolated_home / ".claude.json").read_text())
    assert claude["numStartups"] == 3 and "desk" in claude["mcpServers"]
    assert (isolated_home / ".claude/settings.json").is_file()
    assert (isolated_home / ".claude.json").read_text().startswith('{\n    "numStartups"')  # its own indent
    assert run("setup", "claude-code", "--user-config", "--remove").exit_code == 0
    assert snapshot(isolated_home) == before  # the settings file desk made is gone again


def test_dry_run_prints_the_diff_and_writes_nothing(run: DeskRunner, tmp_path: Path, isolated_home: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    result = run("setup", "claude-code", str(project), "--dry-run")
    assert result.exit_code == 0
    assert f"+++ {project}/.mcp.json" in result.output and '+    "desk": {' in result.output
    assert f"{project}/.claude/settings.json: would be created" in result.output
    assert snapshot(project, isolated_home) == {}


def test_claude_desktop_and_cursor_write_where_their_documentation_says(
        run: DeskRunner, tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    assert run("setup", "claude-desktop").exit_code == 0
    desktop = xdg / "Claude" / "claude_desktop_config.json"
    assert "desk" in json.loads(desktop.read_text())["mcpServers"]
    project = tmp_path / "app"
    project.mkdir()
    assert run("--project", "web", "setup", "cursor", str(project)).exit_code == 0
    args = json.loads((project / ".cursor/mcp.json").read_text())["mcpServers"]["desk"]["args"]
    assert args[-3:] == ["--project", "web", "serve"]  # --project reaches the server it writes
    assert run("setup", "cursor", "--user-config").exit_code == 0
    assert (isolated_home / ".cursor/mcp.json").is_file()
    for command in (["setup", "claude-desktop"], ["--project", "web", "setup", "cursor", str(project)],
                    ["setup", "cursor", "--user-config"]):
        assert run(*command, "--remove").exit_code == 0
    assert not desktop.exists() and not (project / ".cursor/mcp.json").exists()
    assert not (isolated_home / ".cursor/mcp.json").exists()
    env = {"APPDATA": "C:/Users/ada/AppData/Roaming"}
    assert config_home(env, "win32") == Path("C:/Users/ada/AppData/Roaming")
    assert config_home({}, "darwin") == isolated_home / "Library" / "Application Support"


@pytest.mark.parametrize("text, code, words", [
    ('{"mcpServers": {"desk": {"command": "old-desk", "args": ["serve"]}}}', 4, "already runs another server"),
    ('{"mcpServers": {\n  "x": 1,\n}}', 3, ".mcp.json:3: not JSON"),
    ('["a list"]', 3, "not a JSON object"),
    ('{"mcpServers": "npx"}', 3, "mcpServers is not a JSON object"),
])
def test_a_foreign_desk_entry_or_a_broken_file_is_refused_and_nothing_is_written(
        run: DeskRunner, tmp_path: Path, isolated_home: Path, text: str, code: int, words: str) -> None:
    project = tmp_path / "app"
    project.mkdir()
    (project / ".mcp.json").write_text(text)
    result = run("setup", "claude-code", str(project))
    assert result.exit_code == code and words in result.output
    assert snapshot(project, isolated_home) == {str(project / ".mcp.json"): text.encode()}


def test_the_written_server_and_hooks_run_and_a_refusal_shows_desks_own_message(
        run: DeskRunner, desk: DeskFolder, tmp_path: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from tests.serve.mcp_client import server_env

    project = tmp_path / "app"
    project.mkdir()
    run("remember", "deploy-day", "We deploy on Fridays.", "--type", "decision", "-d", "Deploy day", "-t", "deploy")
    assert run("setup", "claude-code", str(project), "--prompt-hook").exit_code == 0
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["desk"]

    async def main() -> set[str]:
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=server_env())
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return {t.name for t in (await session.list_tools()).tools}
    assert "remember" in anyio.run(main)

    hooks = hooks_of(project / ".claude/settings.json")

    def hook(event: str, given: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(hooks[event][0], shell=True, input=json.dumps(given), capture_output=True,
                              text=True, env={**os.environ, "PATH": os.environ["PATH"]})

    start = hook("SessionStart", {"hook_event_name": "SessionStart", "source": "startup"})
    assert start.returncode == 0 and "# Desk context" in start.stdout and "deploy-day" in start.stdout
    prompt = hook("UserPromptSubmit", {"prompt": "when do we deploy?"})
    assert prompt.returncode == 0 and "We deploy on Fridays." in prompt.stdout and "# Desk context" not in prompt.stdout
    assert hook("UserPromptSubmit", {"prompt": "unrelated words"}).stdout == ""
    transcript = tmp_path / "s1.jsonl"
    transcript.write_text(json.dumps({"type": "user", "uuid": "u1", "sessionId": "s1", "timestamp":
                                      "2026-11-30T10:00:00Z", "message": {"role": "user", "content": "hello"}}) + "\n")
    for event in ("PreCompact", "SessionEnd"):
        done = hook(event, {"transcript_path": str(transcript)})
        assert done.returncode == 0, done.stderr
    events = run("archive", "list", "--json")
    assert [e["content"] for e in json.loads(events.output)["events"]] == ["hello"]  # once, however often
    transcript.write_text("{not json\n")
    refused = hook("PreCompact", {"transcript_path": str(transcript)})
    assert refused.returncode == 1 and refused.stderr.startswith("desk: archive hook: ")
    assert "s1.jsonl:1" in refused.stderr  # desk's own message, naming the file and line
    assert git(desk.root, "status", "--porcelain", "memory") == ""


def test_setup_offers_the_projects_claude_code_memory_and_imports_it_on_request(
        run: DeskRunner, desk: DeskFolder, tmp_path: Path) -> None:
    project = tmp_path / "my-app"
    project.mkdir()
    assert "import" not in run("setup", "claude-code", str(project)).output  # no auto memory yet
    folder = auto_memory_folder(project)
    shutil.copytree(FIXTURES / "memory", folder)
    offered = run("setup", "claude-code", str(project))
    assert f"import claude-code {folder}" in offered.output and not (desk.root / "memory/user_role.md").exists()
    imported = run("setup", "claude-code", str(project), "--import", "--json")
    assert imported.exit_code == 0 and json.loads(imported.output)["imported"]
    assert len(list((desk.root / "memory").glob("*.md"))) >= 2


def test_a_symlinked_file_with_a_bom_crlf_and_tabs_comes_back_byte_for_byte(
        run: DeskRunner, tmp_path: Path, isolated_home: Path) -> None:
    """A dotfiles repository's symlink stays a symlink and is written where it points; a BOM, CRLF
    line ends, tab indents and a zero-width character in a foreign value all survive setup and
    removal (hostile layouts a hand-edited file may have)."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    text = json.dumps({"mcpServers": {"odd\u200bname": {"command": "a\nb", "args": ["\r"]}}}, indent="\t",
                      ensure_ascii=False)  # as JSON.stringify writes it
    original = b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode() + b"\r\n"
    (dotfiles / "mcp.json").write_bytes(original)
    (isolated_home / ".cursor").mkdir()
    (isolated_home / ".cursor/mcp.json").symlink_to(dotfiles / "mcp.json")
    assert run("setup", "cursor", "--user-config").exit_code == 0
    assert (isolated_home / ".cursor/mcp.json").is_symlink()
    merged = (dotfiles / "mcp.json").read_bytes()
    assert merged.startswith(b"\xef\xbb\xbf{\r\n\t\"mcpServers\"") and b'"desk"' in merged
    assert run("setup", "cursor", "--user-config").output.endswith("nothing to change: desk is set up already\n")
    assert run("setup", "cursor", "--user-config", "--remove").exit_code == 0
    assert (dotfiles / "mcp.json").read_bytes() == original and (isolated_home / ".cursor/mcp.json").is_symlink()


def test_a_refusal_in_the_second_file_leaves_the_first_unwritten(
        run: DeskRunner, tmp_path: Path, isolated_home: Path) -> None:
    project = tmp_path / "app"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude/settings.json").write_text('{"hooks": {"SessionStart": "not a list"}}\n')
    before = snapshot(project, isolated_home)
    result = run("setup", "claude-code", str(project))
    assert result.exit_code == 3 and "hooks.SessionStart is not a list" in result.output
    assert snapshot(project, isolated_home) == before  # no .mcp.json either
