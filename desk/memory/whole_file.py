"""Remember a memory from a whole file's text, as a file-editing agent (the memory tool) writes it:
the same path as `remember`, and provenance (`source_event`, `evidence`, `key`) must stay as committed.
"""

from __future__ import annotations

import datetime as dt

from desk.errors import InvalidFileError, RejectedError
from desk.layout import DeskFolder, project_memory_path
from desk.formats.memory_file import MemoryFile, parse_memory, require_name, written_by_newer_desk
from desk.formats.memory_index import memory_path
from desk.memory.operations import MutationResult, remember
from desk.memory.reads import require_project

HEADER = """---
name: {name}
description: One line (at most 150 characters) shown in MEMORY.md
type: fact            # preference, decision, convention, pitfall, fact or reference
triggers: [word, another phrase]
---
The fact itself, in a few sentences."""
PROVENANCE = ("source_event", "evidence", "key")


def remember_file(desk: DeskFolder, name: str, data: bytes, *, actor: str = "assistant",
                  now: dt.datetime | None = None, project: str | None = None) -> MutationResult:
    """Create or update memory `name` (of `project`) from `data`, the whole file, through the gate;
    RejectedError (exit 3) when it does not parse, changes provenance or is refused."""
    require_name(name)
    if project is not None:
        require_project(project)
    path = memory_path(name) if project is None else project_memory_path(project, name)
    try:
        memory = parse_memory(data, path, name)
    except InvalidFileError as exc:
        header = HEADER.format(name=name)
        if project is not None:  # a project's memory file records its project
            header = header.replace("\ntype:", f"\nproject: {project}\ntype:", 1)
        raise InvalidFileError(exc.findings, hint="a memory file starts with its frontmatter:\n" + header) from None
    committed = _committed(desk, path, name)
    meta = memory.meta
    for field in PROVENANCE:
        before = getattr(committed.meta, field) if committed else ([] if field == "evidence" else None)
        if getattr(meta, field) != before:
            raise RejectedError(
                f"{path}: {field} is provenance the harness attaches; the model may not set or "
                "change it", hint=f"keep the `{field}:` line as it was (or leave it out of a new memory)")
    return remember(desk, name, type=meta.type, description=meta.description, body=memory.body,
                    triggers=meta.triggers, importance=meta.importance, expires=meta.expires,
                    source=meta.source, source_event=meta.source_event, evidence=meta.evidence,
                    key=meta.key, actor=actor, now=now, project=project,
                    valid_from=meta.valid_from, valid_to=meta.valid_to,
                    # the whole file is the new state: a field it leaves out is removed, not kept
                    clear=[f for f in ("importance", "expires", "valid_from", "valid_to") if getattr(meta, f) is None])


def _committed(desk: DeskFolder, path: str, name: str) -> MemoryFile | None:
    data = desk.git.objects.blob_at("HEAD", path) if desk.git.refs.head() else None
    if data is None:
        return None
    try:
        return parse_memory(data, path, name)
    except InvalidFileError as exc:
        if written_by_newer_desk(exc):  # never replaced as if it were broken
            raise
        return None
