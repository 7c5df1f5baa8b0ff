"""Helpers for the tests of desk.guard: real `git commit` through the installed hooks, files written by hand."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

IDENTITY = {"GIT_AUTHOR_NAME": "Ada Lovelace", "GIT_AUTHOR_EMAIL": "ada@example.org",
            "GIT_COMMITTER_NAME": "Ada Lovelace", "GIT_COMMITTER_EMAIL": "ada@example.org"}


def git_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k.startswith("GIT_CONFIG")}
    env.pop("DESK_VALIDATED", None)
    return {**env, **IDENTITY, **extra}


def sh(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run git in `root` without raising: the test looks at the exit code and the output."""
    return subprocess.run(["git", *args], cwd=root, env=env or git_env(), capture_output=True,
                          text=True)


def commit(root: Path, message: str, *args: str, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    """`git commit -m MESSAGE ARGS` through the installed hooks."""
    return sh(root, "commit", "-q", "-m", message, *args, env=env)


def add_commit(root: Path, message: str, *paths: str) -> subprocess.CompletedProcess[str]:
    sh(root, "add", "-f", "--", *paths)  # -f: a new archive file is ignored until desk commits it
    return commit(root, message)


def write(root: Path, rel: str, data: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def memory_text(name: str, *, description: str | None = None, body: str | None = None,
                triggers: str = "[alpha]", extra: str = "") -> str:
    trig = f"triggers: {triggers}\n" if triggers else ""
    return (f"---\nname: {name}\ndescription: {description or 'About ' + name}\ntype: fact\n"
            f"{trig}{extra}---\n{body or 'The fact about ' + name + '.'}\n")


def reindex_text(root: Path) -> None:
    """Write the MEMORY.md the work tree's memory/ should have (as `desk reindex` would)."""
    from desk.layout import DeskFolder
    from desk.errors import InvalidFileError
    from desk.formats.memory_index import render_index
    from desk.gate.entries import entries_in_worktree

    try:
        (root / "MEMORY.md").write_bytes(render_index(entries_in_worktree(DeskFolder(root)).values()))
    except InvalidFileError:
        pass  # an invalid memory: the test is about the hook refusing it


def head(root: Path) -> str:
    return sh(root, "rev-parse", "HEAD").stdout.strip()
