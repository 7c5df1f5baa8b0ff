"""The derived search cache behind `desk recall`: posting lists in `.git/desk-cache/search.sqlite`.

Its own posting lists, not FTS5: recall's terms are desk's own and its score is explained term by
term, which FTS5's opaque `bm25()` cannot give. A posting list is two packed arrays per term
(record numbers, term frequencies), read only for the query's terms; the per-record columns are
packed arrays loaded once per process. Records come from `memory/*.md` (keyed by blob id) and
`.system/archive/*.jsonl` (read on from where the last refresh stopped, a changed prefix read
again whole: desk.recall.search_changes, search_writer). Records of changed or removed files are
tombstoned and left out of every statistic, so the answers are a cold build's (tested).
"""

from __future__ import annotations

import bisect
import json
import sqlite3
from array import array
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from desk.layout import ARCHIVE_DIR, MEMORY_DIR, DeskFolder
from desk.recall.git_state import search_git_state
from desk.recall.records import CONVERSATION, KIND_NAMES, MEMORY, event_data, searchable_meta
from desk.recall.search_changes import archive_changes, memory_changes, project_changes, select_in
from desk.recall.search_writer import BATCH_BYTES, Batch, Columns, RefreshStats, SearchWriter
from desk.recall.search_writer import Progress as Progress  # re-exported: desk.recall.search names it here
from desk.storage.git import FolderState
from desk.storage.sqlite_cache import open_cache, rollback

CACHE_FILE = "search.sqlite"
COMPACT_MIN_DEAD = 5000
_SCHEMA_SQL = """
            CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB);
            CREATE TABLE IF NOT EXISTS docs (id INTEGER PRIMARY KEY, origin TEXT NOT NULL, rid TEXT NOT NULL,
                                             line INTEGER, offset INTEGER, data BLOB NOT NULL);
            CREATE INDEX IF NOT EXISTS docs_origin ON docs(origin);
            CREATE TABLE IF NOT EXISTS postings (term TEXT PRIMARY KEY, ids BLOB NOT NULL, tfs BLOB NOT NULL)
                WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS memfiles (path TEXT PRIMARY KEY, size INTEGER, mtime INTEGER,
                                                 blob TEXT, doc INTEGER);
            CREATE TABLE IF NOT EXISTS pastrecs (key TEXT PRIMARY KEY, record TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS pastviews (commit_id TEXT PRIMARY KEY, generation INTEGER, view TEXT);
            CREATE TABLE IF NOT EXISTS archfiles (path TEXT PRIMARY KEY, size INTEGER, mtime INTEGER,
                                                  ctime INTEGER, inode INTEGER, offset INTEGER,
                                                  lines INTEGER, prefix TEXT);
        """


class SearchCache:
    """Posting lists and per-record columns over a desk's memories and conversation records (disposable)."""

    def __init__(self, desk: DeskFolder, *, batch_bytes: int = BATCH_BYTES) -> None:
        self.desk = desk
        self.batch_bytes = batch_bytes
        self.last_refresh = RefreshStats()
        self.path = desk.cache_dir / CACHE_FILE
        self._db: sqlite3.Connection | None = None
        self.columns = Columns()
        self._loaded = -1
        self._postings: dict[str, tuple[array[int], array[int]]] = {}
        self._memory_records: tuple[Columns | None, int, set[int]] = (None, -1, set())
        # (memory tree at HEAD, memory files changed in the work tree) as the last look saw them
        self._memory_state: tuple[str | None, list[str] | None] = (None, None)
        self._memory_seen: tuple[str | None, list[str] | None] = (None, None)  # as the cache has it
        self._asked: FolderState | None = None  # `ask_git`'s answer, taken by the next refresh
        # (HEAD's archive tree now, the one the cache last saw)
        self._archive_trees: tuple[str | None, str | None] = (None, None)
        self._fields = "[]"  # the searchable meta keys (JSON) the refresh under way indexes

    # -- storage ----------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = open_cache(self.path, _SCHEMA_SQL, wal=True)
        return self._db

    def rebuild(self) -> None:
        """Drop the cache file; the next refresh reads every file again."""
        self.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self.columns, self._loaded = Columns(), -1
        self._postings.clear()

    def close(self) -> None:
        if self._asked is not None:
            self._asked.close()  # asked for a refresh that did not come (a query refused)
            self._asked = None
        if self._db is not None:
            self._db.close()
            self._db = None

    def _load(self, db: sqlite3.Connection) -> None:
        """Load the packed columns when another process (or nobody yet) changed them."""
        row = db.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
        generation = int(row[0]) if row else 0
        if generation == self._loaded:
            return
        meta = dict(db.execute("SELECT key, value FROM meta"))
        columns = Columns(generation=generation)
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
        rows = {"generation": s.generation, "times": s.times.tobytes(), **self._trees(),
                "lengths": s.lengths.tobytes(), "kinds": bytes(s.kinds), "sessions": s.sessions.tobytes(),
                "dead": array("I", sorted(s.dead)).tobytes(), "max_time": s.max_time,
                "expires": json.dumps(s.expires), "sum_len": s.sum_len, "meta_fields": self._fields}
        db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", rows.items())
        self._loaded = s.generation

    def _trees(self) -> dict[str, str]:
        """HEAD's memory tree, the memory files dirty against it and HEAD's archive tree, as stored."""
        tree, dirty = self._memory_state
        return {"mem_tree": tree or "", "mem_dirty": json.dumps(dirty or []), "arch_tree": self._archive_trees[0] or ""}

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
        return dict(select_in(self._connect(), "SELECT id, rid FROM docs WHERE id IN ({})", sorted(set(docs))))

    def record_data(self, doc: int) -> dict[str, Any]:
        """A hit's snippet source and provenance: `rid`, `kind`, `type`, `text`, `provenance`."""
        origin, rid, line, offset, data = self._connect().execute(
            "SELECT origin, rid, line, offset, data FROM docs WHERE id=?", (doc,)).fetchone()
        if line is None:
            return dict(json.loads(data))
        return {"rid": rid, "kind": KIND_NAMES[CONVERSATION], **event_data(json.loads(data), origin, line, offset)}

    def memory_docs(self) -> dict[str, tuple[str, int | None]]:
        """`{path: (blob id, record number or None when it does not parse)}` of the memory files held."""
        return {p: (b, d) for p, b, d in self._connect().execute("SELECT path, blob, doc FROM memfiles")}

    def past_records(self, keys: list[str]) -> dict[str, str]:
        """The records kept for past commits' memory files (`path NUL blob` -> JSON: desk.recall.past_view)."""
        return dict(select_in(self._connect(), "SELECT key, record FROM pastrecs WHERE key IN ({})", keys))

    def keep_past_records(self, records: dict[str, str]) -> None:
        if records:
            with self._connect() as db:
                db.executemany("INSERT OR REPLACE INTO pastrecs VALUES (?, ?)", records.items())

    def past_view(self, commit: str) -> str | None:
        """What desk.recall.past_view kept of `commit` at this generation of the cache, if it did."""
        row = self._connect().execute("SELECT view FROM pastviews WHERE commit_id=? AND generation=?",
                                      (commit, self.columns.generation)).fetchone()
        return None if row is None else str(row[0])

    def keep_past_view(self, commit: str, view: str) -> None:
        """Keep `view` of `commit` for this generation (those of other generations are dropped)."""
        with self._connect() as db:
            db.execute("DELETE FROM pastviews WHERE generation != ?", (self.columns.generation,))
            db.execute("INSERT OR REPLACE INTO pastviews VALUES (?, ?, ?)", (commit, self.columns.generation, view))

    def holds_memories(self) -> bool:
        """Whether any record of the loaded columns is a memory (tombstoned ones too): one scan in C."""
        return self.columns.kinds.find(MEMORY) >= 0

    def memory_records(self) -> set[int]:
        """Numbers of the memory records (tombstoned included), kept until the columns change."""
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
        """Use `asked` (`search_git_state`, started by the caller) as the next refresh's answer from git."""
        if self._asked is not None:
            self._asked.close()
        self._asked = asked

    def refresh(self, progress: Progress | None = None,
                meanwhile: Callable[[SearchCache], None] | None = None) -> int:
        """Bring the cache up to date with memory/ and the archive; return the records added.
        `meanwhile(self)` runs before git's answer is waited for (a cold recall's imports)."""
        db = self._connect()
        self._load(db)
        dead = len(self.columns.dead)
        self._fields = json.dumps(searchable_meta(self.desk))
        built = db.execute("SELECT value FROM meta WHERE key='meta_fields'").fetchone()
        if (dead > COMPACT_MIN_DEAD and dead * 4 > self.columns.count) or (
                self.columns.generation and (built is None or built[0] != self._fields)):
            # tombstones are a quarter of the cache, or the searchable meta keys changed (desk.json):
            # start over from the files
            self.rebuild()
            db = self._connect()
        if meanwhile is not None:
            meanwhile(self)
        mem_todo, arch_todo = self._changes(db)
        if not mem_todo and not arch_todo:
            arch_tree, arch_seen = self._archive_trees
            if self._memory_state != self._memory_seen or arch_tree != arch_seen:
                with db:  # HEAD moved, nothing to read: note it
                    db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", self._trees().items())
            return 0
        db.execute("BEGIN IMMEDIATE")  # one writer at a time; others wait, then see its work
        batch = Batch()
        try:
            self._load(db)
            mem_todo, arch_todo = self._changes(db)
            writer = SearchWriter(self.desk, self.columns, self.batch_bytes, self._postings,
                                  tuple(json.loads(self._fields)))
            writer.refresh_memories(db, mem_todo, batch)
            writer.refresh_archive(db, arch_todo, batch, progress)
            writer.flush(db, batch)
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
        archive trees and the memory files that differ from HEAD's (`FolderState`, asked
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
        mem, self._memory_seen = memory_changes(self.desk, db, tree, dirty)
        self._memory_state = (tree, dirty)
        mem.update(project_changes(self.desk, db))
        archive_tree = state.ids.get(f"HEAD:{ARCHIVE_DIR}")
        arch, seen = archive_changes(self.desk, db, archive_tree)
        self._archive_trees = (archive_tree, seen)
        return mem, arch
