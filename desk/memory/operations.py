"""Remember, forget, show, list and reindex single-fact memories: one commit per change."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

from desk.errors import DeskError, Finding, InvalidFileError, RejectedError, UsageError
from desk.layout import INDEX_FILE, MEMORY_DIR, DeskFolder, memory_name
from desk.memory import gate
from desk.memory.file import MemoryFile, build_meta, normalize_body, parse_memory, require_name
from desk.memory.index import IndexEntry, entries_in_worktree, memory_path, render_index
from desk.memory.mirror import HeadMirror, head_mirror
from desk.storage.atomic import atomic_write
from desk.storage.git import Commit, blob_sha
from desk.storage.reading import SymlinkError
from desk.text.times import format_time, utc_now
from desk.transaction import Transaction, commit_message, transaction
from desk.vocabulary import ACTORS


@dataclass
class MutationResult:
    """The outcome of remember/forget/reindex, as docs/design.md §5's JSON shape."""

    status: str  # created | updated | unchanged | deleted | rejected
    name: str | None
    path: str
    commit: str | None = None
    reason: str | None = None
    pending: list[str] = field(default_factory=list)
    scopes: list[str] | None = None  # reindex: the scope projections repaired (docs/scopes.md)

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"status": self.status, "name": self.name, "path": self.path,
                                   "commit": self.commit, "reason": self.reason}
        if self.pending:
            data["pending"] = self.pending
        if self.scopes is not None:
            data["scopes"] = self.scopes
        return data


def _require_actor(actor: str) -> None:
    if actor not in ACTORS:
        raise UsageError(f"--actor must be one of {', '.join(ACTORS)}, not {actor!r}")


def remember(desk: DeskFolder, name: str, *, type: str, description: str, body: str,
             triggers: Sequence[str] = (), importance: int | None = None,
             expires: dt.datetime | str | None = None, source: str | None = None,
             source_event: str | None = None, actor: str = "user", scope: str = "durable",
             evidence: Sequence[str] = (), key: str | None = None,
             now: dt.datetime | None = None) -> MutationResult:
    """Create or update memory `name` through the write gate; one commit, none when unchanged.

    Raises RejectedError (exit 3) with nothing changed when the gate or validation refuses, and
    ConflictError (exit 4) when the memory file or MEMORY.md has uncommitted edits.
    """
    _require_actor(actor)
    require_name(name)
    now = (now or utc_now()).replace(microsecond=0)  # memory files keep whole seconds
    path = memory_path(name)
    body = normalize_body(body)
    if not body:
        raise RejectedError(f"{name}: the memory body is empty",
                            hint="give the fact as an argument, or `-` to read it from stdin")
    fields = dict(name=name, description=description, type=type, triggers=list(triggers),
                  importance=importance, source=source or ("user" if actor == "user" else "agent"),
                  source_event=source_event, evidence=list(evidence), key=key, expires=expires)
    meta = build_meta(path, **fields, created=now, updated=now)  # structural check before the lock
    if meta.expires is not None and meta.expires <= now:
        raise RejectedError(f"{name}: expires {format_time(meta.expires)} is already past",
                            hint="give a future time, or leave --expires out")
    with transaction(desk) as tx, head_mirror(desk) as mirror:
        tx.require_clean([path, INDEX_FILE], _head_blobs(mirror, name))
        committed = mirror.blob(name) is not None
        existing = _existing(desk, path) if committed else None
        created = existing.meta.created if existing and existing.meta.created else now
        # An imported memory keeps where it came from (`desk export claude-code` writes it back there).
        origin = existing.meta.origin if existing else None
        memory = MemoryFile(build_meta(path, **fields, origin=origin, created=created, updated=now), body)
        gate.check_memory(memory, scope, mirror.same_body, gate.rule_texts(desk))
        if existing is not None:
            same = MemoryFile(memory.meta.replace(updated=existing.meta.updated), body)
            if same.render() == existing.render():
                return MutationResult("unchanged", name, path)
        data = memory.render()
        if parse_memory(data, path, name) != memory:  # what desk writes must read back exactly
            raise RejectedError(f"{name}: the memory would not read back as written",
                                hint="remove unusual characters from the description and triggers")
        entry = IndexEntry.of(memory)
        message = commit_message(f"remember: {name}", {
            "Desk-Op": "remember", "Desk-Memory": name, "Desk-Actor": actor,
            "Desk-Source-Event": source_event})
        index = mirror.render_index({name: entry})
        sha = tx.commit(_with_index(desk, mirror, {path: data}, index), message)
        mirror.record(sha, {name: (blob_sha(data), entry)}, blob_sha(index))
    status = "updated" if committed else "created"
    return MutationResult(status, name, path, sha)


def forget(desk: DeskFolder, name: str, *, reason: str | None = None, actor: str = "user") -> MutationResult:
    """Delete memory `name` and its index line in one commit."""
    _require_actor(actor)
    require_name(name)
    path = memory_path(name)
    with transaction(desk) as tx, head_mirror(desk) as mirror:
        tx.require_clean([path, INDEX_FILE], _head_blobs(mirror, name))
        if mirror.blob(name) is None:
            raise DeskError(f"no memory named {name!r}", hint="see the names with `desk list`")
        message = commit_message(f"forget: {name}", {
            "Desk-Op": "forget", "Desk-Memory": name, "Desk-Actor": actor, "Desk-Reason": reason})
        index = mirror.render_index({name: None})
        sha = tx.commit(_with_index(desk, mirror, {path: None}, index), message)
        mirror.record(sha, {name: None}, blob_sha(index))
    return MutationResult("deleted", name, path, sha)


def reindex(desk: DeskFolder, *, actor: str = "user") -> MutationResult:
    """Regenerate MEMORY.md from the memory files on disk; commit it when it changed.

    When memory/ itself has uncommitted edits, MEMORY.md is rewritten but not committed: the
    person commits it together with their edits (desk never commits a person's work for them).
    """
    _require_actor(actor)
    with transaction(desk) as tx:
        return reindex_locked(tx, actor)


def reindex_locked(tx: Transaction, actor: str) -> MutationResult:
    """`reindex` for a caller that already holds the desk lock (doctor --repair)."""
    desk = tx.desk
    index = render_index(entries_in_worktree(desk).values())
    current = desk.read_if_present(INDEX_FILE)
    pending = [p for p in desk.git.dirty([MEMORY_DIR + "/"]) if p != INDEX_FILE]
    if pending:
        if current != index:
            atomic_write(desk.path(INDEX_FILE), index)
        return MutationResult("written", None, INDEX_FILE, pending=pending)
    if desk.git.blob_at("HEAD", INDEX_FILE) == index:
        if current == index:
            return MutationResult("unchanged", None, INDEX_FILE)
        atomic_write(desk.path(INDEX_FILE), index)  # a hand edit of the generated file: put HEAD back
        return MutationResult("restored", None, INDEX_FILE)
    message = commit_message("reindex: MEMORY.md", {"Desk-Op": "reindex", "Desk-Actor": actor})
    return MutationResult("updated", None, INDEX_FILE, tx.commit({INDEX_FILE: index}, message))


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
    """The committed memory at `path` (the work tree equals HEAD here), or None if unreadable.

    A file broken by a hand edit is simply replaced: its old bytes stay in git history.
    """
    try:
        return parse_memory(desk.read(path), path, memory_name(path))
    except (InvalidFileError, OSError, SymlinkError):
        return None


def show(desk: DeskFolder, name: str) -> tuple[str, MemoryFile]:
    """The memory file `name` as it is on disk."""
    require_name(name)
    path = memory_path(name)
    try:
        data = desk.read(path)
    except (FileNotFoundError, NotADirectoryError):
        raise DeskError(f"no memory named {name!r}", hint="see the names with `desk list`") from None
    return path, parse_memory(data, path, name)


def list_memories(desk: DeskFolder, type: str | None = None) -> tuple[list[IndexEntry], list[Finding]]:
    """The memories on disk sorted by name (optionally of one type), and the files that do not parse."""
    invalid: list[Finding] = []
    entries = sorted(entries_in_worktree(desk, invalid).values(), key=lambda e: e.name)
    return [e for e in entries if type is None or e.type == type], invalid


def history(desk: DeskFolder, name: str) -> list[Commit]:
    """Every commit that touched memory `name`, newest first, forgotten revisions included."""
    require_name(name)
    return desk.git.log([memory_path(name)])


def log(desk: DeskFolder, limit: int | None = None) -> list[Commit]:
    """The desk's audit trail, newest first."""
    return desk.git.log(limit=limit)
