"""How a refresh of the search cache writes what it reads, streamed: archive files in chunks, each
record's postings into a batch merged into the file at about `batch_bytes`, snippet rows (an
event's is its archive line, decoded only for a hit) as they come: memory stays bounded (issue 17).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from desk.errors import DeskError
from desk.layout import DeskFolder
from desk.recall.records import (
    CONVERSATION,
    KIND_NAMES,
    conversation_side,
    conversation_terms,
    event_session,
    event_time,
    memory_record,
)
from desk.recall.search_changes import RACY_NS as _RACY_NS
from desk.recall.search_changes import regular_file
from desk.storage.git import blob_sha
from desk.storage.reading import open_regular

BATCH_BYTES = 48 * 1024 * 1024  # postings held before a merge: well inside issue 17's 150 MiB
# Estimated bytes held by a posting, a term seen once, a term's two arrays (tracemalloc, 100,000 events)
POSTING_BYTES, TERM_BYTES, ARRAYS_BYTES = 5, 110, 210
_ID_SIZE = array("I").itemsize
DOCS_BATCH = 2000  # snippet rows written per executemany
READ_CHUNK = 1 << 20  # archive bytes read at a time
_NAN = float("nan")

Progress = Callable[[int, int], None]


@dataclass(slots=True)
class Columns:
    """Per-record columns, packed; loaded once per process and refreshed incrementally."""

    generation: int = 0
    times: array[float] = field(default_factory=lambda: array("d"))  # NaN when unknown
    lengths: array[int] = field(default_factory=lambda: array("I"))
    kinds: bytearray = field(default_factory=bytearray)
    sessions: array[int] = field(default_factory=lambda: array("I"))  # `event_session`: 0 for a memory
    dead: set[int] = field(default_factory=set)
    expires: dict[int, float] = field(default_factory=dict)
    sum_len: int = 0
    max_time: float = float("-inf")

    @property
    def count(self) -> int:
        """Records ever numbered, tombstoned ones included."""
        return len(self.times)

    def drop(self, doc: int) -> None:
        """Tombstone record `doc`: no longer a candidate, its length out of the average."""
        if doc not in self.dead:
            self.dead.add(doc)
            self.sum_len -= self.lengths[doc]
            self.expires.pop(doc, None)


@dataclass(slots=True)
class RefreshStats:
    """What the last refresh did: records added, postings merges, the most bytes a batch held."""

    records: int = 0
    merges: int = 0
    most_bytes_held: int = 0  # the estimate `BATCH_BYTES` bounds


@dataclass(slots=True)
class Batch:
    """A refresh's pending writes: postings per term and snippet rows, flushed when full. A term
    seen once maps to one int (record number << 8 | tf), not two arrays: most terms are rare."""

    postings: dict[str, int | tuple[array[int], array[int]]] = field(default_factory=dict)
    held: int = 0  # estimated bytes
    docs: list[tuple[int, str, str, int | None, int | None, bytes | str]] = field(default_factory=list)
    stats: RefreshStats = field(default_factory=RefreshStats)


class SearchWriter:
    """Numbers the records one refresh adds, tombstones the ones it replaces, and writes their rows
    and postings (`postings`: the cache's loaded lists, forgotten for every term a merge extends)."""

    def __init__(self, desk: DeskFolder, columns: Columns, batch_bytes: int,
                 postings: dict[str, tuple[array[int], array[int]]], meta_fields: tuple[str, ...]) -> None:
        self.desk = desk
        self.meta_fields = meta_fields
        self.columns = columns
        self.batch_bytes = batch_bytes
        self._postings = postings

    def _add(self, db: sqlite3.Connection, batch: Batch, terms: dict[str, int], kind: int,
             time: float | None, expires: float | None,
             row: tuple[str, str, int | None, int | None, bytes | str], tags: dict[str, int] | None = None,
             session: int = 0) -> int:
        """Number a record, append its columns and postings to the batch; flush what is full.
        `tags` ({term: tf}) are posted like terms, never counted in the record's length."""
        s = self.columns
        doc = s.count
        length = sum(terms.values())
        if tags:
            terms = {**terms, **tags}
        s.sessions.append(session)
        s.times.append(_NAN if time is None else time)
        s.lengths.append(length)
        s.kinds.append(kind)
        if time is not None and time > s.max_time:
            s.max_time = time
        s.sum_len += length
        if expires is not None:
            s.expires[doc] = expires
        batch.docs.append((doc, *row))
        postings = batch.postings
        held = POSTING_BYTES * len(terms)
        for term, tf in terms.items():  # the hot loop of a large refresh: one pass per posting
            if tf > 255:
                tf = 255
            entry = postings.get(term)
            if entry is None:
                postings[term] = doc << 8 | tf
                held += TERM_BYTES
            elif isinstance(entry, int):
                postings[term] = (array("I", (entry >> 8, doc)), array("B", (entry & 255, tf)))
                held += ARRAYS_BYTES
            else:
                entry[0].append(doc)
                entry[1].append(tf)
        batch.held += held
        batch.stats.records += 1
        if len(batch.docs) >= DOCS_BATCH:
            self._flush_docs(db, batch)
        if batch.held >= self.batch_bytes:
            self._flush_postings(db, batch)
        return doc

    def refresh_memories(self, db: sqlite3.Connection, todo: dict[str, Any], batch: Batch) -> None:
        known = {p: (b, d) for p, b, d in db.execute("SELECT path, blob, doc FROM memfiles")}
        for path, st in sorted(todo.items()):
            old_blob, old_doc = known.get(path, (None, None))
            if st is None:
                if old_doc is not None:
                    self.columns.drop(old_doc)
                db.execute("DELETE FROM memfiles WHERE path=?", (path,))
                continue
            try:
                data = self.desk.read(path)
            except (OSError, DeskError):  # gone, or a symlink: never read through
                continue
            blob, doc = blob_sha(data), old_doc
            if blob != old_blob:
                if old_doc is not None:
                    self.columns.drop(old_doc)
                record = memory_record(data, path)
                doc = None
                if record is not None:
                    shown = json.dumps({"rid": record.rid, "kind": KIND_NAMES[record.kind], **record.data},
                                       ensure_ascii=False)
                    doc = self._add(db, batch, record.terms, record.kind, record.time, record.expires,
                                    (path, record.rid, None, None, shown), dict.fromkeys(record.tags, 1))
            racy = time.time_ns() - st.st_mtime_ns < _RACY_NS
            db.execute("INSERT OR REPLACE INTO memfiles VALUES (?, ?, ?, ?, ?)",
                       (path, -1 if racy else st.st_size, st.st_mtime_ns, blob, doc))

    def refresh_archive(self, db: sqlite3.Connection, todo: dict[str, Any], batch: Batch,
                         progress: Progress | None) -> None:
        known = {p: (o, n, h) for p, o, n, h in db.execute("SELECT path, offset, lines, prefix FROM archfiles")}
        plan: list[tuple[str, os.stat_result, int, int, Any]] = []
        for path, st in sorted(todo.items()):
            offset, lines, prefix = known.get(path, (0, 0, ""))
            hasher = None if st is None else self._consumed_prefix(path, st, offset, prefix)
            if hasher is None or hasher[1] is False:
                # Removed (or now a link), or not grown by appends only: its records go, and it
                # is read again whole.
                for (doc,) in db.execute("SELECT id FROM docs WHERE origin=?", (path,)).fetchall():
                    self.columns.drop(doc)
                db.execute("DELETE FROM docs WHERE origin=?", (path,))
                db.execute("DELETE FROM archfiles WHERE path=?", (path,))
                if hasher is None:
                    continue
                offset, lines = 0, 0
            plan.append((path, st, offset, lines, hasher[0]))
        total = sum(st.st_size - offset for _, st, offset, _, _ in plan)
        if progress is not None and total:
            progress(0, total)  # before any reading: a big first build can say so at once
        done = 0
        for path, st, offset, lines, hasher in plan:
            new_offset, lines = self._read_archive_file(db, batch, path, st.st_size, offset, lines,
                                                        hasher, progress, done, total)
            done += st.st_size - offset
            # git's racy rule: a change in the same clock tick as this stat would leave the stat
            # as stored, so a file changed this recently is checked again by the next refresh.
            racy = time.time_ns() - st.st_ctime_ns < _RACY_NS
            db.execute("INSERT OR REPLACE INTO archfiles VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (path, -1 if racy else st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino,
                        new_offset, lines, hasher.hexdigest()))
        if progress is not None and total:
            progress(total, total)

    def _read_archive_file(self, db: sqlite3.Connection, batch: Batch, path: str, size: int, offset: int,
                           lines: int, hasher: Any, progress: Progress | None, done: int,
                           total: int) -> tuple[int, int]:
        """Add the records of the complete lines of `path` from byte `offset` up to `size`, feeding the
        consumed bytes to `hasher`; return the new (offset, lines). A torn last line waits for the
        next refresh; a line that does not decode is skipped (`desk archive verify` reports it)."""
        desk_id = self.desk.desk_id
        start = offset
        with open_regular(self.desk, path) as handle:
            handle.seek(offset)
            pending = b""
            for chunk in _chunks(handle, size - offset):
                data = pending + chunk if pending else chunk
                end = data.rfind(b"\n") + 1
                pos = 0
                while pos < end:
                    nl = data.index(b"\n", pos)
                    raw = data[pos:nl]
                    lines += 1
                    try:
                        rec = json.loads(raw)
                    except ValueError:
                        rec = None
                    if isinstance(rec, dict):
                        terms = conversation_terms(rec, desk_id)
                        if terms is not None:
                            self._add(db, batch, terms, CONVERSATION, event_time(rec), None,
                                      (path, f"event:{rec.get('id')}", lines, offset + pos, raw),
                                      conversation_side(rec, terms, self.meta_fields), event_session(rec))
                    pos = nl + 1
                    if progress is not None and (lines & 1023) == 0:
                        progress(done + offset + pos - start, total)
                hasher.update(memoryview(data)[:end])
                offset += end
                pending = data[end:]
                if progress is not None:
                    progress(done + offset - start, total)
        return offset, lines

    def _consumed_prefix(self, path: str, st: os.stat_result, offset: int,
                         prefix: str) -> tuple[Any, bool] | None:
        """(a SHA-256 fed with the first `offset` bytes of `path`, True) when they are still the bytes
        consumed (`prefix`, their digest); (a fresh SHA-256, False) when not; None when the file
        cannot be read safely (a symlink now, or gone): its records go."""
        import hashlib  # OpenSSL: only a recall whose archive files changed hashes them

        hasher = hashlib.sha256()
        if offset == 0 or st.st_size < offset:
            return (hasher, offset == 0) if regular_file(self.desk.path(path)) is not None else None
        consumed = 0
        try:
            with open_regular(self.desk, path) as handle:
                for chunk in _chunks(handle, offset):
                    hasher.update(chunk)
                    consumed += len(chunk)
        except (OSError, DeskError):  # a symlink or a folder now, or gone: never read through
            return None
        if consumed == offset and hasher.hexdigest() == prefix:
            return hasher, True
        return hashlib.sha256(), False

    def flush(self, db: sqlite3.Connection, batch: Batch) -> None:
        self._flush_docs(db, batch)
        self._flush_postings(db, batch)

    def _flush_docs(self, db: sqlite3.Connection, batch: Batch) -> None:
        if batch.docs:
            db.executemany("INSERT INTO docs VALUES (?, ?, ?, ?, ?, ?)", batch.docs)
            batch.docs = []

    def _flush_postings(self, db: sqlite3.Connection, batch: Batch) -> None:
        """Merge the batch's postings into the file: new record numbers are higher than every stored
        one, so an upsert per term, in key order, appends to the stored arrays."""
        fresh = batch.postings
        if not fresh:
            return
        stats = batch.stats
        stats.merges += 1
        stats.most_bytes_held = max(stats.most_bytes_held, batch.held)
        order = sys.byteorder

        def rows() -> Iterator[tuple[str, bytes, bytes]]:
            for term in sorted(fresh):
                entry = fresh[term]
                if isinstance(entry, int):
                    yield term, (entry >> 8).to_bytes(_ID_SIZE, order), bytes((entry & 255,))
                else:
                    yield term, entry[0].tobytes(), entry[1].tobytes()

        # `||` on two blobs joins their bytes (SQLite's concat keeps lengths, so NULs survive) and
        # types the result text; the CAST gives the blob back (tested against a cold build).
        db.executemany("INSERT INTO postings VALUES (?, ?, ?) ON CONFLICT(term) DO UPDATE SET "
                       "ids = CAST(ids || excluded.ids AS BLOB), tfs = CAST(tfs || excluded.tfs AS BLOB)",
                       rows())
        cached = self._postings
        if cached:
            for term in fresh:
                cached.pop(term, None)
        batch.postings = {}
        batch.held = 0


def _chunks(handle: BinaryIO, size: int) -> Iterator[bytes]:
    """The next `size` bytes of `handle` in chunks of at most `READ_CHUNK` (fewer at its end)."""
    while size > 0 and (chunk := handle.read(min(READ_CHUNK, size))):
        size -= len(chunk)
        yield chunk
