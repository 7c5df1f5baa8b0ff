"""Read memories back: show, list, history (across renames), diff, and the desk's log."""

from __future__ import annotations

import os
from dataclasses import dataclass

from desk.errors import Finding, InvalidFileError, UsageError
from desk.layout import DeskFolder
from desk.memory import follow
from desk.formats.memory_file import MemoryFile, parse_memory, require_read_name
from desk.formats.memory_index import IndexEntry, memory_path
from desk.gate.entries import entries_in_worktree
from desk.memory.operations import no_memory
from desk.storage.git import Commit


@dataclass
class Shown:
    """A memory file as it is on disk: parsed when valid, else its text and what is wrong."""

    path: str
    text: str
    memory: MemoryFile | None
    findings: list[Finding]


def show(desk: DeskFolder, name: str) -> Shown:
    """The memory file `name` as it is on disk; an invalid one comes with its findings."""
    require_read_name(name)
    path = memory_path(name)
    try:
        data = desk.read(path)  # never through a symlink (docs/guard.md)
    except (FileNotFoundError, NotADirectoryError):
        raise no_memory(desk, name) from None
    text = data.decode("utf-8", "replace")
    try:
        return Shown(path, text, parse_memory(data, path, name), [])
    except InvalidFileError as exc:  # exactly when a person wants to see it
        return Shown(path, text, None, exc.findings)


def list_memories(desk: DeskFolder, type: str | None = None) -> tuple[list[IndexEntry], list[Finding]]:
    """The memories on disk sorted by name (optionally of one type), and the files that do not parse."""
    invalid: list[Finding] = []
    entries = sorted(entries_in_worktree(desk, invalid).values(), key=lambda e: e.name)
    return [e for e in entries if type is None or e.type == type], invalid


def history(desk: DeskFolder, name: str) -> list[Commit]:
    """Every commit that touched memory `name`, newest first, forgotten revisions included, and
    across real renames (`desk rename`, or an unedited `git mv`; never git's similarity guess)."""
    require_read_name(name)
    commits = follow.history(desk.git, memory_path(name))
    if not commits:
        raise no_memory(desk, name)
    return commits


def diff(desk: DeskFolder, name: str, rev: str | None = None) -> tuple[str, str, str, str | None]:
    """What changed in memory `name`: from `rev` (default: before its last committed change) to
    the file as it is now, uncommitted edits included. Returns (path, from, unified diff, the
    path it had at `rev` when it was renamed since, else None): after `desk rename A B`, the diff
    of B follows the rename (desk.memory.follow) instead of showing B as a new file."""
    require_read_name(name)
    path = memory_path(name)
    if rev is None:
        commits = desk.git.log([path], limit=1)
        if not commits:
            raise no_memory(desk, name)
        parent = commits[0].sha + "^"
        rev = parent if desk.git.object_id(parent) else desk.git.empty_tree()
    elif rev.startswith("-") or desk.git.object_id(rev + "^{commit}") is None:
        raise UsageError(f"unknown revision {rev!r}",
                         hint=f"give a commit from `desk history {name}`, e.g. HEAD~1")
    old = path
    if desk.git.blob_at(rev, path) is None:
        old = next((p for p in follow.names(desk.git, path) if desk.git.blob_at(rev, p) is not None), path)
        if old != path and os.path.lexists(desk.path(old)):
            old = path  # the old name holds another file again: the diff stays with this one
    if not desk.path(path).exists() and desk.git.blob_at(rev, old) is None:
        raise no_memory(desk, name)
    return path, rev, desk.git.diff_worktree(rev, path, old), old if old != path else None


def log(desk: DeskFolder, limit: int | None = None) -> list[Commit]:
    """The desk's audit trail, newest first."""
    return desk.git.log(limit=limit)
