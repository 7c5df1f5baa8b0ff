"""What each imported memory becomes: `remember`'s rules, decided up front.

Per item: a name (the source's slug or one from the title); a taken name with the same body is
`unchanged` or `updated`, else the next free `<name>-N`; then the write gate, the schema and the
read-back check (a refusal rejects that item only). With `project`, the project's scope.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from desk.errors import DeskError, InvalidFileError, RejectedError
from desk.interchange.items import MemoryItem, slugify
from desk.layout import DeskFolder, project_memory_path
from desk.gate import memory_gate as gate
from desk.formats.memory_file import NAME_MAX, MemoryFile, build_meta, normalize_body, parse_memory
from desk.formats.memory_index import memory_path
from desk.gate.mirror import HeadMirror
from desk.text.normalize import content_key

MAX_SUFFIX = 1000


class Committed(Protocol):
    """What the plan asks of the memories committed in its scope (HeadMirror for memory/)."""

    def blob(self, name: str) -> str | None: ...

    def same_body(self, body_key: str, exclude: str) -> list[str]: ...


class FolderMemories:
    """A project's memories read from its folder (a project is small: no mirror), as Committed."""

    def __init__(self, memories: Mapping[str, MemoryFile]) -> None:
        self.memories = dict(memories)

    def blob(self, name: str) -> str | None:
        return name if name in self.memories else None

    def same_body(self, body_key: str, exclude: str) -> list[str]:
        return sorted(n for n, m in self.memories.items() if n != exclude and content_key(m.body) == body_key)


def scoped_path(name: str, project: str | None) -> str:
    return memory_path(name) if project is None else project_memory_path(project, name)


@dataclass
class PlanLine:
    """One memory of the plan: `action` is create, update, unchanged or rejected."""

    action: str
    name: str | None
    origin: str
    reason: str | None = None  # why rejected, or a note (a collision's new name, a duplicate)
    memory: MemoryFile | None = field(default=None, repr=False)
    project: str | None = None

    @property
    def path(self) -> str | None:
        return scoped_path(self.name, self.project) if self.name else None

    def to_json(self) -> dict[str, object]:
        return {"action": self.action, "name": self.name, "path": self.path,
                "origin": self.origin, "reason": self.reason}


def plan_memories(desk: DeskFolder, mirror: HeadMirror | Committed, items: list[MemoryItem], prefix: str,
                  now: dt.datetime, project: str | None = None) -> list[PlanLine]:
    """The plan for `items` against the desk as it is (HEAD through `mirror`, and the work tree),
    in `project`'s memory folder when given."""
    rules = gate.rule_texts(desk)
    planned: dict[str, MemoryFile] = {}  # name -> what this import writes (create or update)
    planned_keys: dict[str, list[str]] = {}
    existing_cache: dict[str, MemoryFile | None | bool] = {}

    def existing(name: str) -> MemoryFile | None | bool:
        """The memory `name` on disk; False when there is none; None when it does not parse."""
        if name not in existing_cache:
            where = scoped_path(name, project)
            path = desk.path(where)
            if mirror.blob(name) is None and not path.exists() and not path.is_symlink():
                existing_cache[name] = False
            else:
                try:
                    existing_cache[name] = parse_memory(desk.read(where), where, name)
                except (InvalidFileError, OSError, DeskError):  # DeskError: a symlink, never read
                    existing_cache[name] = None
        return existing_cache[name]

    def same_body(key: str, name: str) -> list[str]:
        others = [n for n in mirror.same_body(key, name) if n not in planned or content_key(planned[n].body) == key]
        return sorted({*others, *(n for n in planned_keys.get(key, []) if n != name)})

    lines = []
    for item in items:
        line = _plan_one(item, prefix, now, rules, planned, planned_keys, existing, same_body, project)
        line.project = project
        lines.append(line)
    return lines


def _plan_one(item: MemoryItem, prefix: str, now: dt.datetime, rules: dict[str, str],
              planned: dict[str, MemoryFile], planned_keys: dict[str, list[str]],
              existing: Callable[[str], MemoryFile | None | bool],
              same_body: Callable[[str, str], list[str]], project: str | None) -> PlanLine:
    body = normalize_body(item.body)
    if not body:
        return PlanLine("rejected", None, item.origin, "empty: the note has no text to remember")
    key = content_key(body)
    base = item.name or slugify(item.title, item.origin, prefix)
    name, current, note = base, existing(base), None
    for n in range(2, MAX_SUFFIX):
        if name in planned:
            if content_key(planned[name].body) == key:
                return PlanLine("unchanged", name, item.origin, "the same fact appears earlier in this source")
        elif current is False:
            break
        elif isinstance(current, MemoryFile) and content_key(current.body) == key:
            break
        stem = base[:NAME_MAX - len(str(n)) - 1].rstrip("-.")
        name, current = f"{stem}-{n}", existing(f"{stem}-{n}")
    else:
        return PlanLine("rejected", None, item.origin, f"{base}: no free name up to -{MAX_SUFFIX}")
    if name != base:
        note = f"{base} holds a different fact: imported as {name}"
    path = scoped_path(name, project)
    old = current if isinstance(current, MemoryFile) else None
    fields = dict(name=name, description=item.description, type=item.type, triggers=list(item.triggers),
                  importance=item.importance, project=project, source="import", origin=item.origin,
                  created=now, updated=now)
    try:
        if old is not None:
            same = (old.meta.description, old.meta.type, old.meta.triggers) == (item.description, item.type,
                                                                             list(item.triggers))
            if same and (item.importance is None or item.importance == old.meta.importance):
                return PlanLine("unchanged", name, item.origin, note)
            if item.importance is None:
                fields["importance"] = old.meta.importance
            fields["created"] = old.meta.created or now
        meta = build_meta(path, **fields)
        memory = MemoryFile(meta, body)
        gate.check_memory(memory, "durable", same_body, rules)
        if parse_memory(memory.render(), path, name) != memory:
            raise RejectedError(f"{name}: the memory would not read back as written",
                                hint="remove unusual characters from the description and triggers")
    except InvalidFileError as exc:
        return PlanLine("rejected", name, item.origin, "; ".join(f"{f.rule}: {f.message}" for f in exc.findings))
    except RejectedError as exc:
        reason = getattr(exc, "reason", None)
        return PlanLine("rejected", name, item.origin, f"{reason}: {exc.message}" if reason else exc.message)
    planned[name] = memory
    planned_keys.setdefault(key, []).append(name)
    return PlanLine("update" if old is not None else "create", name, item.origin, note, memory)
