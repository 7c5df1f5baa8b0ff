"""`desk setup claude-code | claude-desktop | cursor`: wire desk into an assistant's own config.

desk adds one `mcpServers` entry, `desk` (running `desk serve` on this desk with the Python running
now), and for Claude Code its hooks in `.claude/settings.json` (docs/agents.md says which files).
Every other entry is kept; desk's own are recognised by being exactly what it writes, so a second
run changes nothing and `remove` takes out exactly them. A file keeps its own JSON layout, so a
setup and its removal give back the same bytes.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from desk.errors import ConflictError, RejectedError, UsageError
from desk.storage.atomic import atomic_write

SERVER = "desk"
HOOK_ENTRY = "desk.cli.claude_hook"
AGENTS = ("claude-code", "claude-desktop", "cursor")


@dataclass(frozen=True, slots=True)
class FileChange:
    """One config file: `created`, `updated`, `unchanged` or `deleted` (and its unified diff)."""

    path: str
    status: str
    diff: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "status": self.status, "diff": self.diff}


@dataclass(frozen=True, slots=True)
class AgentSetup:
    """What `desk setup AGENT` did (or, with `dry_run`, would do)."""

    agent: str
    removed: bool
    dry_run: bool
    files: list[FileChange]
    memory_folder: str | None = None  # Claude Code's auto memory for the project, when it has one
    import_command: list[str] = field(default_factory=list)  # what imports it into the desk

    def to_json(self) -> dict[str, Any]:
        return {"agent": self.agent, "removed": self.removed, "dry_run": self.dry_run,
                "changed": any(f.status != "unchanged" for f in self.files),
                "files": [f.to_json() for f in self.files], "memory_folder": self.memory_folder,
                "import_command": shlex.join(self.import_command) if self.import_command else None}


def config_home(environ: Mapping[str, str], platform: str) -> Path:
    """Where a desktop app keeps its settings: `~/Library/Application Support` on macOS,
    `%APPDATA%` on Windows, else `$XDG_CONFIG_HOME` (default `~/.config`)."""
    if platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    if platform == "win32" and environ.get("APPDATA"):
        return Path(environ["APPDATA"])
    return Path(environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def auto_memory_folder(project_dir: Path) -> Path:
    """Claude Code's auto memory for `project_dir`: `~/.claude/projects/<path, each character
    other than a letter or digit made '-'>/memory`."""
    return Path.home() / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(project_dir)) / "memory"


def setup_agent(agent: str, desk_root: Path, *, project_dir: Path | None = None, user_config: bool = False,
                prompt_hook: bool = False, remove: bool = False, dry_run: bool = False,
                project: str | None = None, user: str | None = None, python: str = sys.executable,
                environ: Mapping[str, str] = os.environ, platform: str = sys.platform) -> AgentSetup:
    """Merge desk's server entry (and Claude Code's hooks) into `agent`'s config files, or with
    `remove` take them out; `dry_run` writes nothing. `project`/`user` are passed to every desk
    command written. ConflictError (exit 4) when the file already names a different `desk`
    server; RejectedError (exit 3) for a file that is not a JSON object. Nothing is written then."""
    if agent not in AGENTS:
        raise UsageError(f"unknown assistant {agent!r}; one of {', '.join(AGENTS)}")
    folder = (project_dir or Path.cwd()).absolute()
    scope = [*(["--project", project] if project else []), *(["--user", user] if user else [])]
    desk = [python, "-m", "desk", "--desk", str(desk_root), *scope]
    server = {"command": python, "args": desk[1:] + ["serve"]}
    plan: dict[Path, tuple[dict[str, Any], dict[str, Any]]]  # file -> (its server entry, its hooks)
    if agent == "claude-desktop":
        plan = {config_home(environ, platform) / "Claude" / "claude_desktop_config.json": (server, {})}
    elif agent == "cursor":
        plan = {(Path.home() if user_config else folder) / ".cursor" / "mcp.json": (server, {})}
    else:
        hook = [python, "-m", HOOK_ENTRY, "--desk", str(desk_root), *scope]
        hooks = {"SessionStart": _group(desk + ["context"], 30, "startup|resume|clear|compact"),
                 "PreCompact": _group(hook + ["archive"], 60, "manual|auto"),
                 "SessionEnd": _group(hook + ["archive"], 60)}
        if prompt_hook or remove:  # remove takes it out whether or not it was asked for now
            hooks["UserPromptSubmit"] = _group(hook + ["prompt"], 30)
        settings = (Path.home() if user_config else folder) / ".claude" / "settings.json"
        mcp = Path.home() / ".claude.json" if user_config else folder / ".mcp.json"
        plan = {mcp: (server, {}), settings: ({}, hooks)}
    planned = [_plan(path, entry, hooks, remove=remove) for path, (entry, hooks) in plan.items()]
    if not dry_run:  # every file planned before any is written: a refusal leaves all as they were
        for change, after in planned:
            if change.status != "unchanged":
                _write(Path(change.path), after)
    files = [change for change, _after in planned]
    memory, command = None, []
    if agent == "claude-code" and not remove:
        found = auto_memory_folder(folder)
        if found.is_dir() and any(found.glob("*.md")):
            memory = str(found)
            command = ["desk", "--desk", str(desk_root), *scope[:2], "import", "claude-code", memory]
    return AgentSetup(agent, remove, dry_run, files, memory, command)


def _group(argv: list[str], timeout: int, matcher: str | None = None) -> dict[str, Any]:
    """One Claude Code hook group running `argv` (a shell command line, each word quoted)."""
    hook = {"type": "command", "command": shlex.join(argv), "timeout": timeout}
    return {**({"matcher": matcher} if matcher else {}), "hooks": [hook]}


def _plan(path: Path, server: dict[str, Any], hooks: dict[str, Any], *, remove: bool) -> tuple[FileChange, bytes | None]:
    """What `path` becomes (None: deleted), and the change to report."""
    before = path.read_bytes() if path.is_file() else None
    data = _load(path, before)
    original = copy.deepcopy(data)
    (_take_out if remove else _add)(data, server, hooks, path)
    after = before if data == original else None if not data else _render(data, before)
    status = "unchanged" if after == before else "deleted" if after is None else \
        "created" if before is None else "updated"
    diff = "".join(difflib.unified_diff(_lines(before), _lines(after), str(path), str(path)))
    return FileChange(str(path), status, diff), after


def _write(path: Path, after: bytes | None) -> None:
    target = path.resolve()  # a symlinked config (a dotfiles repository) is written where it lives
    if after is None:
        target.unlink()
        return
    mode = target.stat().st_mode if target.exists() else None
    atomic_write(target, after)
    if mode is not None:
        os.chmod(target, mode)


def _load(path: Path, data: bytes | None) -> dict[str, Any]:
    """The file's JSON object ({} for no file or an empty one)."""
    if data is None or not data.strip():
        return {}
    try:
        loaded = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise RejectedError(f"{path}: not UTF-8 ({exc.reason})", hint="fix the file, then run desk setup again") from None
    except json.JSONDecodeError as exc:
        raise RejectedError(f"{path}:{exc.lineno}: not JSON: {exc.msg}",
                            hint="fix the file (comments and trailing commas are not JSON), then run desk setup again") from None
    if not isinstance(loaded, dict):
        raise RejectedError(f"{path}: not a JSON object", hint="fix the file, then run desk setup again")
    return loaded


def _object(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise RejectedError(f"{path}: {key} is not a JSON object", hint="fix the file, then run desk setup again")
    return value


def _add(data: dict[str, Any], server: dict[str, Any], hooks: dict[str, Any], path: Path) -> None:
    if server and _object(data, "mcpServers", path).setdefault(SERVER, server) != server:
        raise ConflictError(f"{path}: mcpServers.{SERVER} already runs another server: "
                            f"{json.dumps(data['mcpServers'][SERVER], ensure_ascii=False)}",
                            hint="remove or rename that entry, then run desk setup again")
    for event, group in hooks.items():
        groups = _object(data, "hooks", path).setdefault(event, [])
        if not isinstance(groups, list):
            raise RejectedError(f"{path}: hooks.{event} is not a list", hint="fix the file, then run desk setup again")
        if group not in groups:
            groups.append(group)


def _take_out(data: dict[str, Any], server: dict[str, Any], hooks: dict[str, Any], _path: Path) -> None:
    """Remove exactly desk's entries, and a container only when that left it empty."""
    servers = data.get("mcpServers")
    if server and isinstance(servers, dict) and servers.get(SERVER) == server:
        del servers[SERVER]
        if not servers:
            del data["mcpServers"]
    found = data.get("hooks")
    if not hooks or not isinstance(found, dict):
        return
    for event, group in hooks.items():
        groups = found.get(event)
        if isinstance(groups, list) and group in groups:
            groups.remove(group)
            if not groups:
                del found[event]
                if not found:
                    del data["hooks"]


def _render(data: dict[str, Any], like: bytes | None) -> bytes:
    """`data` as JSON in the layout of the file it replaces (its indent, or one line; its line
    ends, final newline and BOM; JSON.stringify's and json.dumps's layouts agree), else indented
    by two spaces: so `--remove` gives back a file desk rewrote byte for byte."""
    indent: str | None = "  "
    end, bom = "\n", ""
    if like is not None and like.strip():
        text = like.decode("utf-8-sig", "replace")
        found = re.search(r"\n([ \t]+)\S", text)
        indent = found.group(1) if found else None if "\n" not in text.strip() else indent
        end = "" if not text.endswith("\n") else "\r\n" if text.endswith("\r\n") else "\n"
        bom = "\ufeff" if like.startswith(b"\xef\xbb\xbf") else ""
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    return (bom + (text.replace("\n", "\r\n") if end == "\r\n" else text) + end).encode()


def _lines(data: bytes | None) -> list[str]:
    return [] if data is None else data.decode("utf-8", "replace").splitlines(keepends=True)
