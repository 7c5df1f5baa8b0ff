"""The committed memory/ folder at HEAD, mirrored in the cache and kept in step incrementally.

A mutation needs three things about the committed memories: the blob of one file, whether another
memory already holds the same body (the write gate), and the index lines of all of them. Reading
every cache row per mutation made `remember` grow with the desk, so the cache keeps a table that
mirrors memory/ at a recorded commit. Each mutation brings it up to HEAD with one
`git diff-tree` from that commit (proportional to what changed since) and records its own change
after committing. The mirror is derived: when the recorded commit is gone it is rebuilt from
`git ls-tree` and the blob cache, and a crash between commit and record only costs that diff.
"""

from __future__ import annotations

import bisect
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from desk.errors import GitError, InvalidFileError
from desk.layout import INDEX_FILE, MEMORY_DIR, DeskFolder, memory_name
from desk.memory.file import parse_memory
from desk.memory.index import EntryCache, IndexEntry, memory_path, render_sorted
from desk.storage.git import RawChange

_ROWS = "head_v1"
_META = "head_meta_v1"


class HeadMirror:
    """The memories committed at HEAD: `{name: (blob, entry)}` in SQLite, one row per memory."""

    def __init__(self, desk: DeskFolder, cache: EntryCache) -> None:
        self.desk = desk
        self.cache = cache
        self.db: sqlite3.Connection = cache.connection()
        self.db.execute(f"CREATE TABLE IF NOT EXISTS {_ROWS} (name TEXT PRIMARY KEY, blob TEXT NOT NULL, "
                        "body_key TEXT, line TEXT)")
        self.db.execute(f"CREATE INDEX IF NOT EXISTS {_ROWS}_body ON {_ROWS}(body_key)")
        self.db.execute(f"CREATE TABLE IF NOT EXISTS {_META} (key TEXT PRIMARY KEY, value TEXT)")
        self.index_blob: str | None = None

    # -- reading ---------------------------------------------------------------------------

    def blob(self, name: str) -> str | None:
        row = self.db.execute(f"SELECT blob FROM {_ROWS} WHERE name = ?", (name,)).fetchone()
        return row[0] if row else None

    def same_body(self, body_key: str, exclude: str) -> list[str]:
        """Names of other memories whose body has this content key."""
        rows = self.db.execute(f"SELECT name FROM {_ROWS} WHERE body_key = ? AND name != ? ORDER BY name",
                               (body_key, exclude))
        return [r[0] for r in rows]

    def render_index(self, changes: Mapping[str, IndexEntry | None], *, strict: bool = True) -> bytes:
        """MEMORY.md for HEAD's memories with `changes` applied (None deletes).

        A committed file that does not parse fails here, naming its path and line, unless this
        change replaces or removes it; with `strict=False` it is left out (the validator reports
        invalid files by their own rule).
        """
        broken = self.db.execute(f"SELECT name, blob FROM {_ROWS} WHERE line IS NULL").fetchall()
        for name, blob in broken:
            if strict and name not in changes:
                path = memory_path(name)
                try:
                    parse_memory(self.desk.git.read_blobs([blob])[blob], path, name)
                except InvalidFileError as exc:
                    exc.hint = (f"the committed {path} is invalid and MEMORY.md cannot be regenerated: "
                                f"fix it (`desk edit {name}`) or remove it (`desk forget {name}`)")
                    raise
        # SQLite's BINARY order on names equals Python's code-point order: no re-sort needed.
        rows = self.db.execute(f"SELECT name, line FROM {_ROWS} WHERE line IS NOT NULL ORDER BY name")
        lines = [line for name, line in rows if name not in changes]
        added = sorted((name, entry.line()) for name, entry in changes.items() if entry is not None)
        if added:
            names = [line[3:line.index("](")] for line in lines]
            for name, line in added:
                at = bisect.bisect_left(names, name)
                names.insert(at, name)
                lines.insert(at, line)
        return render_sorted(lines)

    # -- keeping in step ---------------------------------------------------------------------

    def sync(self) -> None:
        """Bring the mirror to HEAD: a diff from the recorded commit, or a rebuild."""
        head = self.desk.git.head()
        # Read and write the mirror in one SQLite write transaction: a hook process syncing at the
        # same time as a desk mutation then applies whole diffs, one after the other.
        with self._write():
            recorded = self._meta("commit")
            self.index_blob = self._meta("index_blob")
            if head == recorded:
                return
            diff = self._diff(recorded, head) if recorded and head else None
            if diff is None:
                self.db.execute(f"DELETE FROM {_ROWS}")
                files = self.desk.git.ls_tree(head, MEMORY_DIR) if head else {}
                self.index_blob = self.desk.git.object_id(f"{head}:{INDEX_FILE}") if head else None
                self._put_files(files)
            else:
                upserts: dict[str, str] = {}
                for change in diff:
                    if change.path == INDEX_FILE:
                        self.index_blob = change.new_blob
                    elif (name := memory_name(change.path)) is not None:
                        if change.new_blob is None:
                            self.db.execute(f"DELETE FROM {_ROWS} WHERE name = ?", (name,))
                        else:
                            upserts[change.path] = change.new_blob
                self._put_files(upserts)
            self._set_meta(head, self.index_blob)

    def record(self, commit: str, changes: Mapping[str, tuple[str, IndexEntry] | None],
               index_blob: str | None) -> None:
        """After `commit` landed: apply `changes` (`{name: (blob, entry)}`, None deleted)."""
        with self._write():
            for name, change in changes.items():
                if change is None:
                    self.db.execute(f"DELETE FROM {_ROWS} WHERE name = ?", (name,))
                else:
                    blob, entry = change
                    self.db.execute(f"INSERT OR REPLACE INTO {_ROWS} VALUES (?, ?, ?, ?)",
                                    (name, blob, entry.body_key, entry.line()))
            self.index_blob = index_blob
            self._set_meta(commit, index_blob)

    def _put_files(self, files: Mapping[str, str]) -> None:
        """Insert rows for `{path: blob}`, parsing only blobs the blob cache has not seen."""
        by_blob = {blob: path for path, blob in files.items() if memory_name(path) is not None}
        cached = self.cache.get(by_blob)
        missing = [b for b in by_blob if b not in cached]
        fresh: dict[str, IndexEntry] = {}
        if missing:
            for blob, data in self.desk.git.read_blobs(missing).items():
                path = by_blob[blob]
                try:
                    fresh[blob] = IndexEntry.of(parse_memory(data, path, memory_name(path)))
                except InvalidFileError:
                    name = memory_name(path)
                    self.db.execute(f"INSERT OR REPLACE INTO {_ROWS} VALUES (?, ?, NULL, NULL)", (name, blob))
            self.cache.put(fresh)
        rows = []
        for blob, entry in {**cached, **fresh}.items():
            name = memory_name(by_blob[blob])
            rows.append((name, blob, entry.body_key, entry.line()))
        self.db.executemany(f"INSERT OR REPLACE INTO {_ROWS} VALUES (?, ?, ?, ?)", rows)

    def _diff(self, old: str, new: str) -> list[RawChange] | None:
        """What changed in memory/ and MEMORY.md between two commits, or None when `old` is gone."""
        try:
            return self.desk.git.diff_tree(old, new, [MEMORY_DIR + "/", INDEX_FILE])
        except GitError:
            return None  # the recorded commit is gone (gc, a re-clone): rebuild

    def _meta(self, key: str) -> str | None:
        row = self.db.execute(f"SELECT value FROM {_META} WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def _set_meta(self, commit: str | None, index_blob: str | None) -> None:
        self.db.executemany(f"INSERT OR REPLACE INTO {_META} VALUES (?, ?)",
                            [("commit", commit), ("index_blob", index_blob)])

    @contextmanager
    def _write(self) -> Iterator[None]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")


@contextmanager
def head_mirror(desk: DeskFolder) -> Iterator[HeadMirror]:
    """The mirror of HEAD's memories, synced; call only under the desk lock."""
    cache = EntryCache(desk.cache_dir)
    try:
        state = HeadMirror(desk, cache)
        state.sync()
        yield state
    finally:
        cache.close()
