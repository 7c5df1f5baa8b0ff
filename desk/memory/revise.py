"""Revise an existing memory without restating it: `desk set` (fields) and `desk rename`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Sequence

from desk.errors import UsageError
from desk.layout import INDEX_FILE, MISTAKES_FILE, DeskFolder
from desk.formats.memory_file import MemoryFile, build_meta, parse_memory, require_name
from desk.formats.memory_index import IndexEntry, memory_path
from desk.gate.mirror import head_mirror
from desk.memory.operations import (MutationResult, _commit_memory, _head_blobs, _list, _merged,
                                    _require_actor, _require_clearable, _require_future,
                                    _trigger_warnings, commit_entries)
from desk.memory.reads import no_memory
from desk.formats.mistakes import relink_mistakes
from desk.text.times import utc_now
from desk.transaction import commit_message, transaction


def set_fields(desk: DeskFolder, name: str, *, description: str | None = None, type: str | None = None,
               triggers: Sequence[str] | None = None, add_triggers: Sequence[str] = (),
               remove_triggers: Sequence[str] = (), importance: int | None = None,
               expires: dt.datetime | str | None = None, clear: Collection[str] = (),
               actor: str = "user", now: dt.datetime | None = None,
               valid_from: dt.datetime | str | None = None,
               valid_to: dt.datetime | str | None = None) -> MutationResult:
    """Change fields of memory `name` without restating its body (`desk set`); one commit, none when
    nothing differs. `triggers` replaces the list, `add_triggers`/`remove_triggers` edit it."""
    _require_actor(actor)
    require_name(name)
    now = (now or utc_now()).replace(microsecond=0)
    path = memory_path(name)
    given = dict(name=name, description=description, type=type, triggers=_list(triggers),
                 importance=importance, expires=expires, valid_from=valid_from, valid_to=valid_to)
    _require_clearable(clear, given)
    _require_future(name, path, given, now)
    with transaction(desk) as tx, head_mirror(desk) as mirror:
        tx.require_clean([path, INDEX_FILE], _head_blobs(mirror, name))
        if mirror.blob(name) is None:
            raise no_memory(desk, name)
        existing = parse_memory(desk.read(path), path, name)
        fields = _merged(existing, given, clear)
        current = list(fields.get("triggers") or [])
        absent = [t for t in remove_triggers if t not in current]
        if absent:
            raise UsageError(f"{name} has no trigger {absent[0]!r}",
                             hint="its triggers are: " + (", ".join(current) or "(none)"))
        current = [t for t in current if t not in remove_triggers]
        current += [t for t in dict.fromkeys(add_triggers) if t not in current]
        fields["triggers"] = current
        memory = MemoryFile(build_meta(path, **fields, created=existing.meta.created or now,
                                       updated=now), existing.body)
        if memory.meta.replace(updated=existing.meta.updated) == existing.meta:
            return MutationResult("unchanged", name, path)
        sha = _commit_memory(desk, tx, mirror, memory, f"set: {name}", {
            "Desk-Op": "set", "Desk-Memory": name, "Desk-Actor": actor})
    result = MutationResult("updated", name, path, sha)
    result.warnings = _trigger_warnings(existing, memory)
    return result


def rename(desk: DeskFolder, old: str, new: str, *, actor: str = "user") -> MutationResult:
    """Rename memory `old` to `new` in one commit (its `name:`, MEMORY.md and MISTAKES.md's links
    follow; nothing else changes, so git sees a rename)."""
    _require_actor(actor)
    require_name(old)
    require_name(new)
    if old == new:
        raise UsageError(f"{old!r} is already called {new!r}")
    old_path, new_path = memory_path(old), memory_path(new)
    with transaction(desk) as tx, head_mirror(desk) as mirror:
        tx.require_clean([old_path, new_path, INDEX_FILE],
                         {**_head_blobs(mirror, old), **_head_blobs(mirror, new)})
        if mirror.blob(old) is None:
            raise no_memory(desk, old)
        if mirror.blob(new) is not None or desk.path(new_path).exists():
            raise UsageError(f"a memory named {new!r} already exists",
                             hint=f"pick another name, or `desk forget {new}` first")
        existing = parse_memory(desk.read(old_path), old_path, old)
        memory = MemoryFile(existing.meta.replace(name=new), existing.body)
        changes: dict[str, bytes | None] = {old_path: None, new_path: memory.render()}
        mistakes = desk.read_if_present(MISTAKES_FILE)
        relinked = relink_mistakes(mistakes.decode("utf-8"), old, new) if mistakes is not None else None
        if relinked is not None:
            tx.require_clean([MISTAKES_FILE])
            changes[MISTAKES_FILE] = relinked.encode("utf-8")
        message = commit_message(f"rename: {old} -> {new}", {
            "Desk-Op": "rename", "Desk-Memory": new, "Desk-Renamed-From": old, "Desk-Actor": actor})
        sha = commit_entries(desk, tx, mirror, changes, {old: None, new: IndexEntry.of(memory)}, message)
    return MutationResult("renamed", new, new_path, sha)
