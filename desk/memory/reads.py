"""Read memories back: show, list, history (across renames), diff, and the desk's log."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from desk.errors import DeskError, Finding, InvalidFileError, UsageError, quoted
from desk.layout import MEMORY_DIR, PROJECTS_DIR, DeskFolder, memory_name, project_memory_path, project_problem
from desk.memory import follow
from desk.formats.memory_file import MemoryFile, parse_memory, require_name
from desk.formats.memory_index import IndexEntry, memory_path
from desk.gate.entries import entries_in_worktree
from desk.storage.git import Commit

if TYPE_CHECKING:
    from desk.memory.past import Past


@dataclass
class Shown:
    """A memory file as it is on disk: parsed when valid, else its text and what is wrong."""

    path: str
    text: str
    memory: MemoryFile | None
    findings: list[Finding]
    past: Past | None = None  # `--as-of`: the commit the revision was read from


def no_memory(desk: DeskFolder, name: str) -> DeskError:
    """`no memory named X`, with the nearest existing names as a "did you mean"."""
    import difflib

    names = sorted(memory_name(p) or "" for p in desk.git.worktree.ls_tree("HEAD", MEMORY_DIR)) \
        if desk.git.refs.head() else []
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    hint = ("did you mean " + " or ".join(f"`{c}`" for c in close) + "? " if close else "") + \
        "see the names with `desk list`"
    return DeskError(f"no memory named {name!r}", hint=hint)


def require_project(project: str) -> None:
    problem = project_problem(project)
    if problem:
        raise UsageError(f"--project {quoted(project)}: {problem}")


def read_project_memory(desk: DeskFolder, project: str, name: str) -> MemoryFile | None:
    """The memory `name` of `project`, None when absent; InvalidFileError when it does not parse."""
    path = project_memory_path(project, name)
    data = desk.read_checked(path, "a memory file")
    if data is None:
        return None
    try:
        return parse_memory(data, path, name)  # a memory recording another project: scope-mismatch
    except InvalidFileError as exc:
        if any(f.rule == "scope-mismatch" for f in exc.findings):
            exc.hint = f"remove it (`git rm {path}`) or move it to the project it records"
        raise


def project_memories(desk: DeskFolder, project: str,
                     problems: list[Finding] | None = None) -> dict[str, MemoryFile]:
    """Every readable memory of `project` by name; refused files go to `problems`."""
    folder = desk.path(f"{PROJECTS_DIR}/{project}/{MEMORY_DIR}")
    found: dict[str, MemoryFile] = {}
    for file in sorted(os.listdir(folder)) if folder.is_dir() else []:
        if not file.endswith(".md"):
            continue
        try:
            memory = read_project_memory(desk, project, file[:-3])
        except InvalidFileError as exc:
            if problems is not None:
                problems.extend(exc.findings)
            continue
        if memory is not None:
            found[memory.name] = memory
    return found


def show(desk: DeskFolder, name: str) -> Shown:
    """The memory file `name` as it is on disk; an invalid one comes with its findings."""
    require_name(name, read=True)
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
    """Every commit that touched memory `name`, newest first, across real renames (desk.memory.follow)."""
    require_name(name, read=True)
    commits = follow.history(desk.git, memory_path(name))
    if not commits:
        raise no_memory(desk, name)
    return commits


def diff(desk: DeskFolder, name: str, rev: str | None = None) -> tuple[str, str, str, str | None]:
    """What changed in memory `name` from `rev` (default: before its last change) to the work tree:
    (path, from, unified diff, the path it had at `rev` when renamed since, else None)."""
    require_name(name, read=True)
    path = memory_path(name)
    if rev is None:
        commits = desk.git.history.log([path], limit=1)
        if not commits:
            raise no_memory(desk, name)
        parent = commits[0].sha + "^"
        rev = parent if desk.git.refs.object_id(parent) else desk.git.objects.empty_tree()
    elif rev.startswith("-") or desk.git.refs.object_id(rev + "^{commit}") is None:
        raise UsageError(f"unknown revision {rev!r}",
                         hint=f"give a commit from `desk history {name}`, e.g. HEAD~1")
    old = path
    if desk.git.objects.blob_at(rev, path) is None:
        old = next((p for p in follow.names(desk.git, path) if desk.git.objects.blob_at(rev, p) is not None), path)
        if old != path and os.path.lexists(desk.path(old)):
            old = path  # the old name holds another file again: the diff stays with this one
    if not desk.path(path).exists() and desk.git.objects.blob_at(rev, old) is None:
        raise no_memory(desk, name)
    return path, rev, desk.git.worktree.diff_worktree(rev, path, old), old if old != path else None


def log(desk: DeskFolder, limit: int | None = None) -> list[Commit]:
    """The desk's audit trail, newest first."""
    return desk.git.history.log(limit=limit)
