"""Remember, forget and reindex single-fact memories: one commit per change (and the helpers
`desk.memory.revise` and `desk.memory.restore` share)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from desk.errors import InvalidFileError, RejectedError, UsageError
from desk.gate.validate import KnownHead
from desk.layout import INDEX_FILE, MEMORY_DIR, DeskFolder, memory_name, project_index_path, project_memory_path
from desk.gate import memory_gate as gate
from desk.formats.memory_file import (MemoryFile, build_meta, normalize_body, parse_memory, require_name,
                                      written_by_newer_desk)
from desk.formats.memory_index import IndexEntry, memory_path, render_index
from desk.gate.entries import entries_in_worktree
from desk.gate.mirror import HeadMirror, head_mirror
from desk.memory.reads import no_memory, project_memories, read_project_memory, require_project
from desk.storage.atomic import atomic_write
from desk.storage.git import blob_sha
from desk.storage.reading import SymlinkError
from desk.text.normalize import content_key
from desk.text.times import format_time, utc_now
from desk.transaction import Transaction, commit_message, transaction
from desk.vocabulary import ACTORS


@dataclass
class MutationResult:
    """The outcome of remember/forget/reindex, as docs/design.md §5's JSON shape."""

    status: str  # created | updated | unchanged | deleted | renamed | proposed | rejected
    name: str | None
    path: str
    commit: str | None = None
    reason: str | None = None
    pending: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    scopes: list[str] | None = None  # reindex: the scope projections repaired (docs/scopes.md)
    restore: str | None = None  # forget: the command that brings the memory back (desk.memory.restore)
    proposal: str | None = None  # status `proposed`: the proposal's id (docs/review.md)

    def to_json(self) -> dict[str, object]:
        data = {k: v for k, v in self.__dict__.items() if k in _ALWAYS or v is not None}
        return {k: v for k, v in data.items() if k not in ("pending", "warnings") or v}


_ALWAYS = ("status", "name", "path", "commit", "reason")  # the rest only when set


def _require_actor(actor: str) -> None:
    if actor not in ACTORS:
        raise UsageError(f"--actor must be one of {', '.join(ACTORS)}, not {actor!r}")


# Fields a caller may clear explicitly (`--no-triggers`...): on an update, one not given keeps its value.
CLEARABLE = ("triggers", "importance", "expires", "valid_from", "valid_to")
NO_TRIGGERS_WARNING = ("{name} has no triggers: it is listed in MEMORY.md but never injected by a "
                       "query's words; add some with `desk set {name} --add-trigger WORD`")


def remember(desk: DeskFolder, name: str, *, type: str | None, description: str | None, body: str,
             triggers: Sequence[str] | None = None, importance: int | None = None,
             expires: dt.datetime | str | None = None, source: str | None = None,
             source_event: str | None = None, actor: str = "user", scope: str = "durable",
             evidence: Sequence[str] | None = None, key: str | None = None,
             clear: Collection[str] = (), now: dt.datetime | None = None,
             project: str | None = None, valid_from: dt.datetime | str | None = None,
             valid_to: dt.datetime | str | None = None) -> MutationResult:
    """Create or update memory `name` (of `project`, when given) through the write gate; one commit,
    none when unchanged. On an update a field given as None keeps its value (`clear` empties it).
    RejectedError (exit 3) when refused, ConflictError (exit 4) over uncommitted edits.
    """
    if project is not None:
        require_project(project)
    _require_actor(actor)
    require_name(name)
    now = (now or utc_now()).replace(microsecond=0)  # memory files keep whole seconds
    path = memory_path(name) if project is None else project_memory_path(project, name)
    body = normalize_body(body)
    if not body:
        raise RejectedError(f"{name}: the memory body is empty",
                            hint="give the fact as an argument, or `-` to read it from stdin")
    given = dict(name=name, description=description, type=type, triggers=_list(triggers),
                 importance=importance, source=source, source_event=source_event,
                 evidence=_list(evidence), key=key, project=project, expires=expires,
                 valid_from=valid_from, valid_to=valid_to)
    _require_clearable(clear, given)
    if type is not None and description is not None:  # a structural check before the lock
        build_meta(path, **{**given, "source": source or "agent"}, created=now, updated=now)
    _require_future(name, path, given, now)
    with transaction(desk) as tx, head_mirror(desk) if project is None else nullcontext() as mirror:
        if mirror is None:
            assert project is not None
            memories, same_body = project_state(desk, tx, project, name, path)
            existing = memories.get(name)
            committed = existing is not None
        else:
            tx.require_clean([path, INDEX_FILE], _head_blobs(mirror, name))
            committed = mirror.blob(name) is not None
            existing = _existing(desk, path) if committed else None
            same_body = mirror.same_body
        if existing is None:
            missing = [opt for opt, value in (("--type", type), ("--description", description))
                       if value is None]
            if missing:
                within, flag = ("", "") if project is None else (f" in project {project!r}", f" --project {project}")
                raise UsageError(f"a new memory needs {' and '.join(missing)}: {name!r} does not exist yet{within}",
                                 hint=f"`desk remember {name}{flag} --type fact --description \"one line\" BODY`")
            fields = {**given, "source": source or ("user" if actor == "user" else "agent")}
            created = now
        else:
            fields = _merged(existing, given, clear)
            created = existing.meta.created or now
        memory = MemoryFile(build_meta(path, **fields, created=created, updated=now), body)
        gate.check_memory(memory, scope, same_body, gate.rule_texts(desk))
        if existing is not None:
            same = MemoryFile(memory.meta.replace(updated=existing.meta.updated), body)
            if same.render() == existing.render():
                return MutationResult("unchanged", name, path)
        subject = f"remember: {name}" + ("" if project is None else f" (project {project})")
        trailers = {"Desk-Op": "remember", "Desk-Memory": name, "Desk-Project": project, "Desk-Actor": actor,
                    "Desk-Source-Event": source_event}
        if mirror is None:
            assert project is not None
            sha = commit_project(tx, memories, project, memory, _rendered(memory, path), subject, trailers)
        else:
            sha = _commit_memory(desk, tx, mirror, memory, subject, trailers)
    result = MutationResult("updated" if committed else "created", name, path, sha)
    result.warnings = _trigger_warnings(existing, memory)
    return result


SameBody = Callable[[str, str], list[str]]


def project_state(desk: DeskFolder, tx: Transaction, project: str, name: str, path: str
                  ) -> tuple[dict[str, MemoryFile], SameBody]:
    """A project's memories (small: read from its folder, the work tree equals HEAD under the lock)
    and the gate's same-body lookup over them; a foreign file at `path` is refused, not replaced."""
    tx.require_clean([path, project_index_path(project)])
    memories = project_memories(desk, project)
    if name not in memories:
        read_project_memory(desk, project, name)

    def same_body(body_key: str, exclude: str) -> list[str]:
        return sorted(n for n, m in memories.items() if n != exclude and content_key(m.body) == body_key)
    return memories, same_body


def commit_project(tx: Transaction, memories: dict[str, MemoryFile], project: str, memory: MemoryFile,
                   data: bytes, subject: str, trailers: dict[str, str | None]) -> str:
    """Write a project's `memory` as `data` and regenerate the project's MEMORY.md, in one commit."""
    memories[memory.name] = memory
    index = render_index(IndexEntry.of(m) for m in memories.values())
    return tx.commit({project_memory_path(project, memory.name): data, project_index_path(project): index},
                     commit_message(subject, trailers))


def _commit_memory(desk: DeskFolder, tx: Transaction, mirror: HeadMirror, memory: MemoryFile,
                   subject: str, trailers: dict[str, str | None], data: bytes | None = None) -> str:
    """Write `memory` (as `data`, a restored version's bytes, else rendered) and its MEMORY.md line."""
    path = memory_path(memory.name)
    data = _rendered(memory, path) if data is None else data
    return commit_entries(desk, tx, mirror, {path: data}, {memory.name: IndexEntry.of(memory)},
                          commit_message(subject, trailers))


def commit_entries(desk: DeskFolder, tx: Transaction, mirror: HeadMirror, writes: dict[str, bytes | None],
                   entries: Mapping[str, IndexEntry | None], message: str) -> str:
    """Commit `writes` and MEMORY.md with desk-wide `entries` changed (None: gone); the mirror records it."""
    index = mirror.render_index(entries)
    known = known_head(mirror, sorted(entries), index)
    sha = tx.commit(_with_index(desk, mirror, writes, index), message, known)
    record(mirror, known, sha, {name: None if entry is None else (blob_sha(writes[memory_path(name)] or b""), entry)
                                for name, entry in entries.items()}, index)
    return sha


def _rendered(memory: MemoryFile, path: str) -> bytes:
    """The file's bytes, which must read back exactly as `memory`."""
    data = memory.render()
    if parse_memory(data, path, memory.name) != memory:
        raise RejectedError(f"{memory.name}: the memory would not read back as written",
                            hint="remove unusual characters from the description and triggers")
    return data


def record(mirror: HeadMirror, known: KnownHead, sha: str,
           changes: Mapping[str, tuple[str, IndexEntry] | None], index: bytes) -> None:
    """`mirror.record` of a landed commit, and its MEMORY.md's cleanliness note (clean when HEAD's was
    and only clean lines were spliced in)."""
    notes = {}
    if known.index_clean and mirror.spliced:
        from desk.text.secrets import clean_lines, scanner_version

        if all(clean_lines(entry.line()) for _, entry in filter(None, changes.values())):
            notes[CLEAN_NOTE] = f"{scanner_version()} 1"
    try:
        mirror.record(sha, changes, blob_sha(index), notes=notes)
    except OSError:
        pass  # the commit landed; the mirror (a cache: a full disk) catches up with HEAD next time


def _list(values: Sequence[str] | None) -> list[str] | None:
    return None if values is None else list(values)


def _require_clearable(clear: Collection[str], given: dict[str, Any]) -> None:
    unknown = sorted(set(clear) - set(CLEARABLE))
    if unknown:
        raise UsageError(f"cannot clear {unknown[0]!r}; clearable fields: {', '.join(CLEARABLE)}",
                         hint="--no-triggers, --no-importance and --no-expires clear a field")
    both = [key for key in CLEARABLE if key in clear and given.get(key) is not None]
    if both:
        flag = {"triggers": "--trigger"}.get(both[0], f"--{both[0]}")
        raise UsageError(f"give {flag} or --no-{both[0]}, not both",
                         hint=f"{flag} sets the field, --no-{both[0]} empties it")


def _require_future(name: str, path: str, given: dict[str, Any], now: dt.datetime) -> None:
    """Refuse an --expires that is malformed or already past, before the lock."""
    if given.get("expires") is None:
        return
    expires = build_meta(path, name=name, description="-", type="fact", expires=given["expires"]).expires
    if expires is not None and expires <= now:
        raise RejectedError(f"{name}: expires {format_time(expires)} is already past",
                            hint="give a future time, or leave --expires out")


def _merged(existing: MemoryFile, given: dict[str, Any], clear: Collection[str]) -> dict[str, Any]:
    """The committed fields, overlaid with what the caller gave, less what it cleared."""
    meta = existing.meta
    fields: dict[str, Any] = {key: getattr(meta, key) for key in (*given, "source", "source_event", "origin",
                              "evidence", "key", "triggers", "importance", "expires", "valid_from", "valid_to")}
    fields.update({key: value for key, value in given.items() if value is not None})
    for key in clear:
        fields[key] = [] if key == "triggers" else None
    return fields


def _trigger_warnings(existing: MemoryFile | None, memory: MemoryFile) -> list[str]:
    """A memory without triggers is never injected by trigger: say so when one is made so."""
    if memory.meta.triggers or (existing is not None and not existing.meta.triggers):
        return []
    return [NO_TRIGGERS_WARNING.format(name=memory.name)]


def forget(desk: DeskFolder, name: str, *, reason: str | None = None, actor: str = "user") -> MutationResult:
    """Delete memory `name` and its index line in one commit."""
    _require_actor(actor)
    require_name(name)
    path = memory_path(name)
    with transaction(desk) as tx, head_mirror(desk) as mirror:
        tx.require_clean([path, INDEX_FILE], _head_blobs(mirror, name))
        if mirror.blob(name) is None:
            raise no_memory(desk, name)
        sha = commit_entries(desk, tx, mirror, {path: None}, {name: None}, commit_message(f"forget: {name}", {
            "Desk-Op": "forget", "Desk-Memory": name, "Desk-Actor": actor, "Desk-Reason": reason}))
    return MutationResult("deleted", name, path, sha, reason, restore=restore_command(name))


def restore_command(name: str, project: str | None = None) -> str:
    """The command that brings a memory just forgotten back (`desk restore`, desk.memory.restore)."""
    return f"desk restore {name}" + ("" if project is None else f" --project {project}")


def reindex(desk: DeskFolder, *, actor: str = "user") -> MutationResult:
    """Regenerate MEMORY.md from the memory files on disk; commit it when it changed (only written
    when memory/ has uncommitted edits: desk never commits a person's work for them)."""
    _require_actor(actor)
    with transaction(desk) as tx:
        return reindex_locked(tx, actor)


def reindex_locked(tx: Transaction, actor: str) -> MutationResult:
    """`reindex` for a caller that already holds the desk lock (doctor --repair)."""
    desk = tx.desk
    index = render_index(entries_in_worktree(desk).values())
    current = desk.read_if_present(INDEX_FILE)
    pending = [p for p in desk.git.worktree.dirty([MEMORY_DIR + "/"]) if p != INDEX_FILE]
    if pending:
        if current != index:
            atomic_write(desk.path(INDEX_FILE), index)
        return MutationResult("written", None, INDEX_FILE, pending=pending)
    if desk.git.objects.blob_at("HEAD", INDEX_FILE) == index:
        if current == index:
            return MutationResult("unchanged", None, INDEX_FILE)
        atomic_write(desk.path(INDEX_FILE), index)  # a hand edit of the generated file: put HEAD back
        return MutationResult("restored", None, INDEX_FILE)
    message = commit_message("reindex: MEMORY.md", {"Desk-Op": "reindex", "Desk-Actor": actor})
    return MutationResult("updated", None, INDEX_FILE, tx.commit({INDEX_FILE: index}, message))


def known_head(mirror: HeadMirror, names: Sequence[str], index: bytes | None = None) -> KnownHead:
    """What the mirror knows of HEAD for a commit of memories `names` and MEMORY.md (`index`, as the
    mirror rendered it): the gate's reads of HEAD, answered without git."""
    return KnownHead(mirror.commit, mirror.head_blobs(names), mirror.like, index, index_clean(mirror),
                     mirror.read_index())


CLEAN_NOTE = "clean"  # the mirror's note on HEAD's MEMORY.md: `<scanner version> 1|0`


def index_clean(mirror: HeadMirror) -> bool:
    """Whether every line of HEAD's MEMORY.md is clean of secrets (desk.text.secrets.clean_lines):
    then the gate scans only the lines a commit splices in. The mirror keeps the answer per blob
    and scanner version; it is computed only when the commit splices lines into HEAD's index."""
    from desk.text.secrets import clean_lines, scanner_version

    version = scanner_version()
    note = mirror.index_note(CLEAN_NOTE)
    if note is not None and note.rpartition(" ")[0] == version:
        return note.endswith(" 1")
    if not mirror.spliced:
        return False
    base = mirror.committed_index()
    if base is None:
        return False
    try:
        clean = clean_lines(base.decode("utf-8"))
    except UnicodeDecodeError:
        clean = False
    mirror.note_index(CLEAN_NOTE, f"{version} {int(clean)}")
    return clean


def _head_blobs(mirror: HeadMirror, name: str) -> dict[str, str]:
    """HEAD's blobs of memory `name` and MEMORY.md, from the mirror (no git call)."""
    known = {memory_path(name): mirror.blob(name), INDEX_FILE: mirror.index_blob}
    return {path: blob for path, blob in known.items() if blob is not None}


def _with_index(desk: DeskFolder, mirror: HeadMirror, writes: dict[str, bytes | None],
                index: bytes) -> dict[str, bytes | None]:
    """Add MEMORY.md to `writes` unless HEAD and the work tree already hold exactly `index`."""
    if mirror.index_blob != blob_sha(index) or not desk.path(INDEX_FILE).is_file():
        writes[INDEX_FILE] = index
    return writes


def _existing(desk: DeskFolder, path: str) -> MemoryFile | None:
    """The committed memory at `path`, or None if unreadable (a broken file is replaced; a newer
    desk's is refused: InvalidFileError)."""
    try:
        return parse_memory(desk.read(path), path, memory_name(path))
    except InvalidFileError as exc:
        if written_by_newer_desk(exc):
            raise
        return None
    except (OSError, SymlinkError):
        return None
