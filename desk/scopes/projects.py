"""Project scopes: memories under `projects/<name>/memory/` with their own MEMORY.md
(docs/scopes.md). A memory whose `project` field does not match its folder is refused. Projects
are small, so their files are read from the folder (no HEAD mirror)."""

from __future__ import annotations

import os

from desk.errors import DeskError, Finding, InvalidFileError
from desk.layout import PROJECTS_DIR, DeskFolder, project_index_path, project_memory_path, project_problem
from desk.memory import follow
from desk.formats.memory_file import require_name
from desk.formats.memory_index import IndexEntry, render_index
from desk.memory.operations import MutationResult, restore_command
from desk.memory.reads import Shown, project_memories, read_project_memory, require_project
from desk.storage.git import Commit
from desk.transaction import commit_message, transaction


def all_projects(desk: DeskFolder) -> list[str]:
    """The project folders on disk with a valid name."""
    folder = desk.path(PROJECTS_DIR)
    return sorted(n for n in os.listdir(folder) if project_problem(n) is None
                  and (folder / n).is_dir()) if folder.is_dir() else []


def project_entries(desk: DeskFolder, project: str,
                    problems: list[Finding] | None = None) -> dict[str, IndexEntry]:
    return {n: IndexEntry.of(m) for n, m in project_memories(desk, project, problems).items()}


def _no_memory(name: str, project: str) -> DeskError:
    return DeskError(f"no memory named {name!r} in project {project!r}",
                     hint=f"see the names with `desk list --project {project}`")


def forget_in_project(desk: DeskFolder, project: str, name: str, *, reason: str | None = None,
                      actor: str = "user") -> MutationResult:
    """`desk forget --project`: delete memory `name` of `project` and its index line, one commit."""
    require_project(project)
    require_name(name)
    path, index = project_memory_path(project, name), project_index_path(project)
    with transaction(desk) as tx:
        tx.require_clean([path, index])
        if read_project_memory(desk, project, name) is None:
            raise _no_memory(name, project)
        memories = project_memories(desk, project)
        memories.pop(name, None)
        message = commit_message(f"forget: {name} (project {project})", {
            "Desk-Op": "forget", "Desk-Memory": name, "Desk-Project": project, "Desk-Actor": actor,
            "Desk-Reason": reason})
        sha = tx.commit({path: None, index: render_index(IndexEntry.of(m) for m in memories.values())},
                        message)
    return MutationResult("deleted", name, path, sha, reason, restore=restore_command(name, project))


def show_in_project(desk: DeskFolder, project: str, name: str) -> Shown:
    """Memory `name` of `project` as it is on disk; one that does not parse or records another
    project comes with its findings (as desk-wide `show` does), so a person can see what to fix."""
    require_project(project)
    require_name(name, read=True)
    path = project_memory_path(project, name)
    try:
        data = desk.read(path)  # never through a symlink (docs/guard.md)
    except (FileNotFoundError, NotADirectoryError):
        raise _no_memory(name, project) from None
    text = data.decode("utf-8", "replace")
    try:
        memory = read_project_memory(desk, project, name)
    except InvalidFileError as exc:
        return Shown(path, text, None, exc.findings)
    assert memory is not None  # it was just read
    return Shown(path, text, memory, [])


def list_in_project(desk: DeskFolder, project: str, type: str | None = None
                    ) -> tuple[list[IndexEntry], list[Finding]]:
    require_project(project)
    problems: list[Finding] = []
    entries = sorted(project_entries(desk, project, problems).values(), key=lambda e: e.name)
    return [e for e in entries if type is None or e.type == type], problems


def history_in_project(desk: DeskFolder, project: str, name: str) -> list[Commit]:
    """Every commit that touched memory `name` of `project`, newest first (forgotten revisions
    too); DeskError when none did."""
    require_project(project)
    require_name(name, read=True)
    commits = follow.history(desk.git, project_memory_path(project, name))
    if not commits:
        raise _no_memory(name, project)
    return commits
