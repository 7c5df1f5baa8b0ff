"""The derived search cache behind `desk recall`: posting lists in `.git/desk-cache/search.sqlite`.

Why its own posting lists in stdlib sqlite3 and not FTS5: recall's terms are desk's own (NFKC +
casefold + whitespace, words, CJK character bigrams) and its score must be explainable term by term
(which query terms matched, how often, with which weight). FTS5 would re-tokenize the text its own
way and only hands back an opaque `bm25()`, so every candidate would be re-scored in Python anyway.
Here a posting list is two packed arrays per term (record numbers, term frequencies), read only for
the query's terms, and the per-record columns recall needs for every candidate (time, kind,
length) are packed arrays loaded once per process.

The cache is never the source of truth: records come from `memory/*.md` (keyed by git blob id, so a
changed file is re-read and a same-content file never is) and from `.system/archive/*.jsonl`
(read from the byte offset where the last refresh stopped). Every change to an archive file is
noticed: the cache keeps, per file, a SHA-256 of the whole consumed prefix and the file's stat
(size, mtime_ns, ctime_ns, inode). When the stat differs (an append, an edit, a `touch -d` that put
the mtime back: the ctime only the kernel sets moves anyway, a file replaced: a new inode), or
when HEAD's blob of the file changed (a checkpoint, a pull, a reset: for filesystems whose ctime is
not a change time), the consumed prefix is hashed again; a file whose prefix is not what was
consumed is read again whole, otherwise only its new bytes are read, feeding the same hash. An
unchanged stat costs no read. Records of changed or removed files are tombstoned and excluded
from every statistic, so the answers are exactly those of a cache built from scratch, which is
what deleting the file gives (tested).

A refresh streams: archive files are read in chunks, each record's postings go into a batch that
is merged into the file once it holds about `batch_bytes` (an upsert per term that appends to the
stored arrays, in term order), and snippet rows are written as they come, so memory stays bounded
whatever the size of the ingest (the first recall after a 100,000-record import, issue 17). An
archived event's snippet and provenance are its archive line itself, stored as is and decoded
only for a hit.
"""

from __future__ import annotations

import bisect
import json
import os
import sqlite3
import stat
import sys
import time
from array import array
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from desk.errors import DeskError
from desk.layout import ARCHIVE_DIR, MEMORY_DIR, PROJECTS_DIR, DeskFolder, project_problem
from desk.recall.records import (
    CONVERSATION,
    KIND_NAMES,
    MEMORY,
    conversation_side,
    conversation_terms,
    event_data,
    event_session,
    event_time,
    memory_record,
)
from desk.recall.git_state import search_git_state
from desk.storage.git import FolderState, blob_sha
from desk.storage.reading import open_regular
from desk.storage.sqlite_cache import open_cache, rollback

CACHE_FILE = "search.sqlite"
_SCHEMA = 7  # 5: archive prefix hashes; 6: stemmed words, CJK single characters, the speaker/meta field, sessions; 7: question turns
COMPACT_MIN_DEAD = 5000
# Postings held in memory during a refresh before they are merged into the file. Every merge
# writes one row per term it holds, so fewer, larger batches write less; this bounds the batch
# (estimated below) to well inside issue 17's 150 MiB for the whole process.
BATCH_BYTES = 48 * 1024 * 1024
# Estimated bytes held: a posting 5 (a record number and a term frequency in packed arrays), a
# term seen once ~110 (its str, an int and its dict slot), a term seen more often ~320 (two arrays
# and a tuple instead of the int). Measured with tracemalloc on a 100,000-event import.
POSTING_BYTES, TERM_BYTES, ARRAYS_BYTES = 5, 110, 210
_ID_SIZE = array("I").itemsize
DOCS_BATCH = 2000  # snippet rows written per executemany
READ_CHUNK = 1 << 20  # archive bytes read at a time
_NAN = float("nan")
_RACY_NS = 3_000_000_000  # a file modified this close to its stat is re-hashed next time (git's racy rule)

Progress = Callable[[int, int], None]


# Plain classes, not dataclasses: each dataclass costs ~0.2-0.4 ms to create at the start of
# every `desk recall` (issue 17.3), and these three need nothing a dataclass adds.
class _Columns:
    """Per-record columns, packed; loaded once per process and refreshed incrementally."""

    __slots__ = ("times", "lengths", "kinds", "sessions", "dead", "expires", "sum_len", "max_time", "generation")

    def __init__(self, generation: int = 0) -> None:
        self.times = array("d")  # NaN when unknown
        self.lengths = array("I")
        self.kinds = bytearray()
        self.sessions = array("I")  # `event_session`: 0 for a memory
        self.dead: set[int] = set()
        self.expires: dict[int, float] = {}
        self.sum_len = 0
        self.max_time = float("-inf")
        self.generation = generation

    @property
    def count(self) -> int:
        """Records ever numbered, tombstoned ones included."""
        return len(self.times)


class RefreshStats:
    """What the last refresh did: records added, postings merges, the most bytes a batch held."""

    __slots__ = ("records", "merges", "most_bytes_held")

    def __init__(self) -> None:
        self.records = 0
        self.merges = 0
        self.most_bytes_held = 0  # the estimate `BATCH_BYTES` bounds

    def __repr__(self) -> str:
        return f"RefreshStats(records={self.records}, merges={self.merges}, most_bytes_held={self.most_bytes_held})"


class _Batch:
    """A refresh's pending writes: postings per term and snippet rows, flushed when full.

    A term seen once in the batch maps to one int (record number << 8 | tf) rather than two
    arrays: most distinct terms of a large ingest are rare (ids, numbers, names).
    """

    __slots__ = ("postings", "held", "docs", "stats")

    def __init__(self) -> None:
        self.postings: dict[str, int | tuple[array[int], array[int]]] = {}
        self.held = 0  # estimated bytes
        self.docs: list[tuple[int, str, str, int | None, int | None, bytes | str]] = []
        self.stats = RefreshStats()


_SCHEMA_SQL = """
            CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB);
            CREATE TABLE IF NOT EXISTS docs (id INTEGER PRIMARY KEY, origin TEXT NOT NULL, rid TEXT NOT NULL,
                                             line INTEGER, offset INTEGER, data BLOB NOT NULL);
            CREATE INDEX IF NOT EXISTS docs_origin ON docs(origin);
            CREATE TABLE IF NOT EXISTS postings (term TEXT PRIMARY KEY, ids BLOB NOT NULL, tfs BLOB NOT NULL)
                WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS memfiles (path TEXT PRIMARY KEY, size INTEGER, mtime INTEGER,
                                                 blob TEXT, doc INTEGER);
            CREATE TABLE IF NOT EXISTS archfiles (path TEXT PRIMARY KEY, size INTEGER, mtime INTEGER,
                                                  ctime INTEGER, inode INTEGER, offset INTEGER,
                                                  lines INTEGER, prefix TEXT);
        """


def _check_schema(db: sqlite3.Connection) -> None:
    """An older cache layout is rebuilt, not migrated."""
    row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
    if row is not None and int(row[0]) != _SCHEMA:
        raise sqlite3.DatabaseError("old cache schema")


class SearchCache:
    """Posting lists and per-record columns over a desk's memories and conversation records.

    Derived and disposable: deleting the file only costs the next refresh a full read.
    """

    def __init__(self, desk: DeskFolder, *, batch_bytes: int = BATCH_BYTES) -> None:
        self.desk = desk
        self.batch_bytes = batch_bytes
        self.last_refresh = RefreshStats()
        self.path = desk.cache_dir / CACHE_FILE
        self._db: sqlite3.Connection | None = None
        self.columns = _Columns()
        self._loaded = -1
        self._postings: dict[str, tuple[array[int], array[int]]] = {}
        self._memory_records: tuple[_Columns | None, int, set[int]] = (None, -1, set())
        # (memory tree at HEAD, memory files changed in the work tree) as the last look saw them
        self._memory_state: tuple[str | None, list[str] | None] = (None, None)
        self._memory_seen: tuple[str | None, list[str] | None] = (None, None)  # as the cache has it
        self._asked: FolderState | None = None  # `ask_git`'s answer, taken by the next refresh
        # (HEAD's archive tree now, the one the cache last saw)
        self._archive_trees: tuple[str | None, str | None] = (None, None)

    # -- storage ----------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = open_cache(self.path, _SCHEMA_SQL, wal=True, check=_check_schema)
        return self._db

    def rebuild(self) -> None:
        """Drop the cache file; the next refresh reads every file again."""
        self.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self.columns, self._loaded = _Columns(), -1
        self._postings.clear()

    def close(self) -> None:
        if self._asked is not None:
            self._asked.close()  # asked for a refresh that did not come (a query refused)
            self._asked = None
        if self._db is not None:
            self._db.close()
            self._db = None

    def _meta(self, db: sqlite3.Connection) -> dict[str, Any]:
        return dict(db.execute("SELECT key, value FROM meta"))

    def _load(self, db: sqlite3.Connection) -> None:
        """Load the packed columns when another process (or nobody yet) changed them."""
        row = db.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
        generation = int(row[0]) if row else 0
        if generation == self._loaded:
            return
        meta = self._meta(db)
        columns = _Columns(generation=generation)
        if generation:
            columns.times.frombytes(meta["times"])
            columns.lengths.frombytes(meta["lengths"])
            columns.kinds = bytearray(meta["kinds"])
            columns.sessions.frombytes(meta["sessions"])
            columns.dead = set(array("I", meta["dead"]))
            columns.expires = {int(k): v for k, v in json.loads(meta["expires"]).items()}
            columns.sum_len = int(meta["sum_len"])
            columns.max_time = float(meta["max_time"])
        self.columns, self._loaded = columns, generation
        self._postings.clear()

    def _save(self, db: sqlite3.Connection) -> None:
        s = self.columns
        s.generation += 1
        tree, dirty = self._memory_state
        rows = {"schema": _SCHEMA, "generation": s.generation, "times": s.times.tobytes(),
                "mem_tree": tree or "", "mem_dirty": json.dumps(dirty or []),
                "arch_tree": self._archive_trees[0] or "",
                "lengths": s.lengths.tobytes(), "kinds": bytes(s.kinds), "sessions": s.sessions.tobytes(),
                "dead": array("I", sorted(s.dead)).tobytes(), "max_time": s.max_time,
                "expires": json.dumps(s.expires), "sum_len": s.sum_len}
        db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", rows.items())
        self._loaded = s.generation

    # -- reading ----------------------------------------------------------------------------

    def postings(self, term: str) -> tuple[array[int], array[int]]:
        """(record numbers ascending, term frequencies) of `term`; tombstoned records included."""
        hit = self._postings.get(term)
        if hit is None:
            row = self._connect().execute("SELECT ids, tfs FROM postings WHERE term=?", (term,)).fetchone()
            ids, tfs = array("I"), array("B")
            if row:
                ids.frombytes(row[0])
                tfs.frombytes(row[1])
                count = self.columns.count
                if ids and ids[-1] >= count:
                    # Another process refreshed the file since these columns were loaded: its
                    # records are not in this snapshot (they come with the next refresh).
                    cut = bisect.bisect_left(ids, count)
                    del ids[cut:], tfs[cut:]
            hit = self._postings[term] = (ids, tfs)
        return hit

    def rid(self, doc: int) -> str:
        """The record's id (`memory:<name>`, `event:<id>`): only needed to break exact ties."""
        row = self._connect().execute("SELECT rid FROM docs WHERE id=?", (doc,)).fetchone()
        return str(row[0])

    def rids(self, docs: Iterable[int]) -> dict[int, str]:
        """`{record number: id}` of `docs`, in one query per 500 (the ranker's tie-break)."""
        wanted = sorted(set(docs))
        found: dict[int, str] = {}
        db = self._connect()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            found.update(db.execute(f"SELECT id, rid FROM docs WHERE id IN ({','.join('?' * len(chunk))})", chunk))
        return found

    def record_data(self, doc: int) -> dict[str, Any]:
        """A hit's snippet source and provenance: `rid`, `kind`, `type`, `text`, `provenance`."""
        origin, rid, line, offset, data = self._connect().execute(
            "SELECT origin, rid, line, offset, data FROM docs WHERE id=?", (doc,)).fetchone()
        if line is None:
            memory: dict[str, Any] = json.loads(data)
            return memory
        return {"rid": rid, "kind": KIND_NAMES[CONVERSATION], **event_data(json.loads(data), origin, line, offset)}

    def holds_memories(self) -> bool:
        """Whether any record of the loaded columns is a memory (tombstoned ones too): one scan in C."""
        return self.columns.kinds.find(MEMORY) >= 0

    def memory_records(self) -> set[int]:
        """Numbers of the memory records (tombstoned included); few, so found with `find` and
        kept until the columns change (a reload or rebuild makes new columns)."""
        columns, generation, found = self._memory_records
        if columns is not self.columns or generation != self.columns.generation:
            kinds, found = self.columns.kinds, set()
            at = kinds.find(MEMORY)
            while at >= 0:
                found.add(at)
                at = kinds.find(MEMORY, at + 1)
            self._memory_records = (self.columns, self.columns.generation, found)
        return found

    # -- refreshing -------------------------------------------------------------------------

    def take_asked(self, asked: FolderState | None) -> None:
        """Use `asked` (`desk.recall.git_state.search_git_state`, started by the caller while it
        loaded the search modules) as the next refresh's answer from git."""
        if self._asked is not None:
            self._asked.close()
        self._asked = asked

    def refresh(self, progress: Progress | None = None,
                meanwhile: Callable[[SearchCache], None] | None = None) -> int:
        """Bring the cache up to date with memory/ and the archive; return the records added.
        `meanwhile(self)` runs once the stored columns are loaded and before git's answer is
        waited for: work that overlaps git's (a cold recall's imports)."""
        db = self._connect()
        self._load(db)
        dead = len(self.columns.dead)
        if dead > COMPACT_MIN_DEAD and dead * 4 > self.columns.count:
            self.rebuild()  # tombstones are a quarter of the cache: start over from the files
            db = self._connect()
        if meanwhile is not None:
            meanwhile(self)
        mem_todo, arch_todo = self._changes(db)
        if not mem_todo and not arch_todo:
            arch_tree, arch_seen = self._archive_trees
            if self._memory_state != self._memory_seen or arch_tree != arch_seen:
                tree, dirty = self._memory_state  # HEAD moved, nothing to read: note it
                with db:
                    db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                                   [("mem_tree", tree or ""), ("mem_dirty", json.dumps(dirty or [])),
                                    ("arch_tree", arch_tree or "")])
            return 0
        db.execute("BEGIN IMMEDIATE")  # one writer at a time; others wait, then see its work
        batch = _Batch()
        try:
            self._load(db)
            mem_todo, arch_todo = self._changes(db)
            self._refresh_memories(db, mem_todo, batch)
            self._refresh_archive(db, arch_todo, batch, progress)
            self._flush(db, batch)
            self._save(db)
            db.execute("COMMIT")
        except BaseException:
            rollback(db)
            self._loaded = -1
            raise
        self.last_refresh = batch.stats
        return batch.stats.records

    def _changes(self, db: sqlite3.Connection) -> tuple[dict[str, Any], dict[str, Any]]:
        """Files to look at again ({path: stat or None when removed}). git names HEAD's memory and
        archive trees and the memory files that differ from HEAD's (`WorkTree.folder_state`, asked
        by `ask_git` already or now)."""
        state, self._asked = self._asked, None
        if state is None:
            state = search_git_state(self.desk)
        try:
            found = state.result()
        finally:
            state.close()
        tree = state.ids.get(f"HEAD:{MEMORY_DIR}")
        dirty = found[1] if found is not None and tree is not None else None
        mem = {**self._memory_changes(db, tree, dirty), **self._project_changes(db)}
        return mem, self._archive_changes(db, state.ids.get(f"HEAD:{ARCHIVE_DIR}"))

    def _archive_changes(self, db: sqlite3.Connection, tree: str | None) -> dict[str, Any]:
        """The archive files whose stat (size, mtime_ns, ctime_ns, inode) differs from what the
        cache stored, and those whose blob at HEAD changed since the last refresh (`diff-tree`
        between the archive trees; every file when the old tree is gone). Their consumed prefix
        is checked in `_refresh_archive`."""
        row = db.execute("SELECT value FROM meta WHERE key='arch_tree'").fetchone()
        seen = str(row[0]) if row and row[0] else None
        self._archive_trees = (tree, seen)
        known = {p: (s, m, c, i) for p, s, m, c, i in db.execute(
            "SELECT path, size, mtime, ctime, inode FROM archfiles")}
        forced: set[str] | None = set()
        if tree != seen and known:
            try:
                moved = self.desk.git.worktree.diff_tree(seen, tree) if seen and tree else None
            except DeskError:
                moved = None  # the old tree is gone (gc after a rewrite): check every file
            forced = None if moved is None else {f"{ARCHIVE_DIR}/{c.path}" for c in moved}
        arch: dict[str, Any] = {}
        for path, st in _scan(self.desk.path(ARCHIVE_DIR), ".jsonl", ARCHIVE_DIR):
            stamp = known.pop(path, None)
            if stamp != _stamp(st) or forced is None or path in forced:
                arch[path] = st
        arch.update(dict.fromkeys(known))
        return arch

    def _project_changes(self, db: sqlite3.Connection) -> dict[str, Any]:
        """The project memory files to read again (docs/scopes.md): projects are small, so every
        `projects/<name>/memory/*.md` is stat'ed."""
        known = {p: (s, m) for p, s, m in db.execute(
            "SELECT path, size, mtime FROM memfiles WHERE path LIKE ?", (f"{PROJECTS_DIR}/%",))}
        mem: dict[str, Any] = {}
        for folder in (f"{PROJECTS_DIR}/{p}/{MEMORY_DIR}" for p in _projects(self.desk)):
            for path, st in _scan(self.desk.path(folder), ".md", folder):
                if known.pop(path, None) != (st.st_size, st.st_mtime_ns):
                    mem[path] = st
        mem.update(dict.fromkeys(known))
        return mem

    def _memory_changes(self, db: sqlite3.Connection, tree: str | None, dirty: list[str] | None) -> dict[str, Any]:
        """The memory files to read again ({path: stat or None when removed}).

        git narrows the search: a file that is the same blob in the memory tree the cache last
        saw and in HEAD's, and clean against HEAD now and then, is what the cache read. So only
        the files git names (`diff-tree` between the two trees, the work tree's changes against
        HEAD now and at the last refresh) are stat'ed; every file is, when the cache saw no tree
        (a new cache, no commit yet) or the old tree is gone.
        """
        git = self.desk.git
        meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('mem_tree', 'mem_dirty')"))
        self._memory_state = (tree, dirty)
        self._memory_seen = (meta.get("mem_tree") or None, json.loads(meta.get("mem_dirty") or "[]"))
        candidates: set[str] | None = None
        if tree is not None and dirty is not None and meta.get("mem_tree"):
            candidates = {*dirty, *json.loads(meta.get("mem_dirty") or "[]")}
            if meta["mem_tree"] != tree:
                try:
                    moved = git.worktree.diff_tree(str(meta["mem_tree"]), tree)
                except DeskError:
                    moved = None  # the old tree is gone (gc after a rewrite): look at everything
                candidates = None if moved is None else candidates | {f"{MEMORY_DIR}/{c.path}" for c in moved}
        if candidates is None:
            known = {p: (s, m) for p, s, m in db.execute(
                "SELECT path, size, mtime FROM memfiles WHERE path NOT LIKE ?", (f"{PROJECTS_DIR}/%",))}
            mem: dict[str, Any] = {}
            for path, st in _scan(self.desk.path(MEMORY_DIR), ".md", MEMORY_DIR):
                if known.pop(path, None) != (st.st_size, st.st_mtime_ns):
                    mem[path] = st
            mem.update(dict.fromkeys(known))
            return mem
        wanted = sorted(p for p in candidates if _memory_path(p))
        known = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            known.update({p: (s, m) for p, s, m in db.execute(
                f"SELECT path, size, mtime FROM memfiles WHERE path IN ({','.join('?' * len(chunk))})", chunk)})
        mem = {}
        for path in wanted:
            found = _regular_file(self.desk.path(path))
            if found is None:
                if path in known:
                    mem[path] = None
            elif known.get(path) != (found.st_size, found.st_mtime_ns):
                mem[path] = found
        return mem

    def _add(self, db: sqlite3.Connection, batch: _Batch, terms: dict[str, int], kind: int,
             time: float | None, expires: float | None,
             row: tuple[str, str, int | None, int | None, bytes | str], tags: dict[str, int] | None = None,
             session: int = 0) -> int:
        """Number a record, append its columns and postings to the batch; flush what is full.

        `tags` ({term: tf}) are posted like terms but never counted in the record's length (scope
        filters, an event's speaker and meta field, the time tag)."""
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

    def _kill(self, doc: int) -> None:
        s = self.columns
        if doc not in s.dead:
            s.dead.add(doc)
            s.sum_len -= s.lengths[doc]
            s.expires.pop(doc, None)

    def _refresh_memories(self, db: sqlite3.Connection, todo: dict[str, Any], batch: _Batch) -> None:
        known = {p: (b, d) for p, b, d in db.execute("SELECT path, blob, doc FROM memfiles")}
        for path, st in sorted(todo.items()):
            old_blob, old_doc = known.get(path, (None, None))
            if st is None:
                if old_doc is not None:
                    self._kill(old_doc)
                db.execute("DELETE FROM memfiles WHERE path=?", (path,))
                continue
            try:
                data = self.desk.read(path)
            except (OSError, DeskError):  # gone, or a symlink: never read through
                continue
            blob, doc = blob_sha(data), old_doc
            if blob != old_blob:
                if old_doc is not None:
                    self._kill(old_doc)
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

    def _refresh_archive(self, db: sqlite3.Connection, todo: dict[str, Any], batch: _Batch,
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
                    self._kill(doc)
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

    def _read_archive_file(self, db: sqlite3.Connection, batch: _Batch, path: str, size: int, offset: int,
                           lines: int, hasher: Any, progress: Progress | None, done: int,
                           total: int) -> tuple[int, int]:
        """Add the records of the complete lines of `path` from byte `offset` up to `size`, read in
        chunks, feeding the consumed bytes to `hasher` (the prefix's SHA-256 so far); return the
        new (offset, lines).

        Bytes past `size` (appended since the stat) wait for the next refresh, and so does a torn
        last line; a line that does not decode is skipped (`desk archive verify` reports damage).
        """
        desk_id = self.desk.desk_id
        start = offset
        with open_regular(self.desk, path) as handle:
            handle.seek(offset)
            pending = b""
            remaining = size - offset
            while remaining > 0:
                chunk = handle.read(min(READ_CHUNK, remaining))
                if not chunk:
                    break
                remaining -= len(chunk)
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
                                      conversation_side(rec, terms), event_session(rec))
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
        """(a SHA-256 fed with the first `offset` bytes of `path`, True) when they are still the
        bytes the cache consumed (append-only growth; `prefix` is their hex digest); (a fresh
        SHA-256, False) when they are not (a truncation, an edit of any earlier line, a rewritten
        file); None when the file cannot be read safely (a symlink now, or gone): its records go."""
        import hashlib  # OpenSSL, ~3 ms: only a recall whose archive files changed hashes them

        hasher = hashlib.sha256()
        if offset == 0 or st.st_size < offset:
            return (hasher, offset == 0) if _regular_file(self.desk.path(path)) is not None else None
        try:
            with open_regular(self.desk, path) as handle:
                remaining = offset
                while remaining > 0:
                    chunk = handle.read(min(READ_CHUNK, remaining))
                    if not chunk:
                        break
                    hasher.update(chunk)
                    remaining -= len(chunk)
        except (OSError, DeskError):  # a symlink or a folder now, or gone: never read through
            return None
        if remaining == 0 and hasher.hexdigest() == prefix:
            return hasher, True
        return hashlib.sha256(), False

    def _flush(self, db: sqlite3.Connection, batch: _Batch) -> None:
        self._flush_docs(db, batch)
        self._flush_postings(db, batch)

    def _flush_docs(self, db: sqlite3.Connection, batch: _Batch) -> None:
        if batch.docs:
            db.executemany("INSERT INTO docs VALUES (?, ?, ?, ?, ?, ?)", batch.docs)
            batch.docs = []

    def _flush_postings(self, db: sqlite3.Connection, batch: _Batch) -> None:
        """Merge the batch's postings into the file. A term's new record numbers are higher than
        every stored one, so a merge appends to the stored arrays: an upsert per term, in term
        order (the table's key order, so the B-tree is written front to back)."""
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

def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    """What the cache compares of an archive file's stat: a person can put the mtime back
    (`touch -d`), not the ctime, which the kernel sets on every change; a replaced file has a
    new inode."""
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


def _regular_file(path: Path) -> os.stat_result | None:
    """`path`'s stat when it is a regular file (a symlink is never followed), else None."""
    try:
        found = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return found if stat.S_ISREG(found.st_mode) else None


def _memory_path(path: str) -> bool:
    """A memory file's path as `_scan` finds them: `memory/<name>.md`, no deeper."""
    return path.startswith(f"{MEMORY_DIR}/") and path.endswith(".md") and "/" not in path[len(MEMORY_DIR) + 1:]


def _projects(desk: DeskFolder) -> list[str]:
    """The project folders whose memories recall indexes (valid names only)."""
    folder = desk.path(PROJECTS_DIR)
    if not folder.is_dir():
        return []
    return sorted(n for n in os.listdir(folder) if project_problem(n) is None)


def _scan(folder: Path, suffix: str, prefix: str) -> Iterable[tuple[str, os.stat_result]]:
    if not folder.is_dir():
        return
    with os.scandir(folder) as it:
        for item in it:
            if item.name.endswith(suffix) and item.is_file(follow_symlinks=False):
                yield f"{prefix}/{item.name}", item.stat(follow_symlinks=False)

