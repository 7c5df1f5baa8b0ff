"""Project scopes: memories under `projects/<name>/memory/` with their own `projects/<name>/MEMORY.md`.

A project memory is a memory file like any other (desk.formats.memory_file) whose `project` field names
the project it sits in; a file whose `project` does not match its folder (copied from another
project, or into the desk-wide memory/) is refused by `desk validate` and by these readers. The
write gate is the desk-wide one: durable facts only, no second memory with the same body in the
same project, nothing AGENTS.md or SOUL.md already says. Projects are small, so the files are read
from the folder (no HEAD mirror of entries as for memory/; each project memory's last commit is
kept beside the mirror, desk.gate.mirror.ProjectHeads, for recall and context).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Collection, Sequence

from desk.errors import DeskError, Finding, InvalidFileError, RejectedError, UsageError, quoted
from desk.layout import (MEMORY_DIR, PROJECTS_DIR, DeskFolder, project_index_path, project_memory_path,
                         project_problem)
from desk.gate import memory_gate as gate
from desk.memory import follow
from desk.formats.memory_file import (MemoryFile, build_meta, normalize_body, parse_memory, require_name,
                              require_read_name)
from desk.formats.memory_index import IndexEntry, render_index
from desk.memory.operations import (MutationResult, _list, _merged, _require_actor, _require_clearable,
                                    _require_future, _trigger_warnings)
from desk.memory.reads import Shown
from desk.storage.git import Commit
from desk.text.normalize import content_key
from desk.text.times import utc_now
from desk.transaction import commit_message, transaction


def all_projects(desk: DeskFolder) -> list[str]:
    """The project folders on disk with a valid name."""
    folder = desk.path(PROJECTS_DIR)
    return sorted(n for n in os.listdir(folder) if project_problem(n) is None
                  and (folder / n).is_dir()) if folder.is_dir() else []


def require_project(project: str) -> None:
    problem = project_problem(project)
    if problem:
        raise UsageError(f"--project {quoted(project)}: {problem}")


def read_project_memory(desk: DeskFolder, project: str, name: str) -> MemoryFile | None:
    """The memory `name` of `project`, None when absent; InvalidFileError when it does not parse,
    is a symlink, or records another project."""
    from desk.storage.reading import SymlinkError

    path = project_memory_path(project, name)
    try:
        data = desk.read_if_present(path)  # never through a symlink, of the file or a folder
    except (SymlinkError, IsADirectoryError):
        raise InvalidFileError([Finding(path, 1, "symlink", "memory files must be regular files, "
                                        "not symlinks or inside a linked folder")]) from None
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


def project_entries(desk: DeskFolder, project: str,
                    problems: list[Finding] | None = None) -> dict[str, IndexEntry]:
    return {n: IndexEntry.of(m) for n, m in project_memories(desk, project, problems).items()}


def remember_in_project(desk: DeskFolder, project: str, name: str, *, type: str | None,
                        description: str | None, body: str, triggers: Sequence[str] | None = None,
                        importance: int | None = None, expires: dt.datetime | str | None = None,
                        source: str | None = None, source_event: str | None = None,
                        actor: str = "user", scope: str = "durable", clear: Collection[str] = (),
                        now: dt.datetime | None = None) -> MutationResult:
    """`desk remember --project`: create or update memory `name` of `project`, with its index, in
    one commit (none when unchanged). Same statuses, refusals and field rules as desk-wide
    `remember`: on an update a field given as None keeps its value, `clear` empties one."""
    require_project(project)
    _require_actor(actor)
    require_name(name)
    now = (now or utc_now()).replace(microsecond=0)
    path, index = project_memory_path(project, name), project_index_path(project)
    body = normalize_body(body)
    if not body:
        raise RejectedError(f"{name}: the memory body is empty",
                            hint="give the fact as an argument, or `-` to read it from stdin")
    given = dict(name=name, description=description, type=type, triggers=_list(triggers),
                 importance=importance, source=source, source_event=source_event, project=project,
                 expires=expires)
    _require_clearable(clear, given)
    if type is not None and description is not None:  # a structural check before the lock
        build_meta(path, **{**given, "source": source or "agent"}, created=now, updated=now)
    _require_future(name, path, given, now)
    with transaction(desk) as tx:
        tx.require_clean([path, index])
        memories = project_memories(desk, project)
        existing = memories.get(name)  # the work tree equals HEAD here
        if existing is None:
            read_project_memory(desk, project, name)  # a foreign file in the way is refused, not replaced
            missing = [opt for opt, value in (("--type", type), ("--description", description))
                       if value is None]
            if missing:
                raise UsageError(f"a new memory needs {' and '.join(missing)}: {name!r} does not exist "
                                 f"yet in project {project!r}",
                                 hint=f"`desk remember {name} --project {project} --type fact "
                                      "--description \"one line\" BODY`")
            fields = {**given, "source": source or ("user" if actor == "user" else "agent")}
            created = now
        else:
            fields = _merged(existing, given, clear)
            created = existing.meta.created or now
        memory = MemoryFile(build_meta(path, **fields, created=created, updated=now), body)

        def same_body(key: str, exclude: str) -> list[str]:
            return sorted(n for n, m in memories.items() if n != exclude and content_key(m.body) == key)

        gate.check_memory(memory, scope, same_body, gate.rule_texts(desk))
        if existing is not None:
            same = MemoryFile(memory.meta.replace(updated=existing.meta.updated), body)
            if same.render() == existing.render():
                return MutationResult("unchanged", name, path)
        data = memory.render()
        if parse_memory(data, path, name) != memory:
            raise RejectedError(f"{name}: the memory would not read back as written",
                                hint="remove unusual characters from the description and triggers")
        memories[name] = memory
        message = commit_message(f"remember: {name} (project {project})", {
            "Desk-Op": "remember", "Desk-Memory": name, "Desk-Project": project, "Desk-Actor": actor,
            "Desk-Source-Event": source_event})
        sha = tx.commit({path: data, index: render_index(IndexEntry.of(m) for m in memories.values())},
                        message)
    result = MutationResult("updated" if existing else "created", name, path, sha)
    result.warnings = _trigger_warnings(existing, memory)
    return result


def forget_in_project(desk: DeskFolder, project: str, name: str, *, reason: str | None = None,
                      actor: str = "user") -> MutationResult:
    """`desk forget --project`: delete memory `name` of `project` and its index line, one commit."""
    require_project(project)
    require_name(name)
    path, index = project_memory_path(project, name), project_index_path(project)
    with transaction(desk) as tx:
        tx.require_clean([path, index])
        if read_project_memory(desk, project, name) is None:
            raise DeskError(f"no memory named {name!r} in project {project!r}",
                            hint=f"see the names with `desk list --project {project}`")
        memories = project_memories(desk, project)
        memories.pop(name, None)
        message = commit_message(f"forget: {name} (project {project})", {
            "Desk-Op": "forget", "Desk-Memory": name, "Desk-Project": project, "Desk-Actor": actor,
            "Desk-Reason": reason})
        sha = tx.commit({path: None, index: render_index(IndexEntry.of(m) for m in memories.values())},
                        message)
    return MutationResult("deleted", name, path, sha)


def show_in_project(desk: DeskFolder, project: str, name: str) -> Shown:
    """Memory `name` of `project` as it is on disk; one that does not parse or records another
    project comes with its findings (as desk-wide `show` does), so a person can see what to fix."""
    require_project(project)
    require_read_name(name)
    path = project_memory_path(project, name)
    try:
        data = desk.read(path)  # never through a symlink (docs/guard.md)
    except (FileNotFoundError, NotADirectoryError):
        raise DeskError(f"no memory named {name!r} in project {project!r}",
                        hint=f"see the names with `desk list --project {project}`") from None
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
    require_read_name(name)
    commits = follow.history(desk.git, project_memory_path(project, name))
    if not commits:
        raise DeskError(f"no memory named {name!r} in project {project!r}",
                        hint=f"see the names with `desk list --project {project}`")
    return commits
