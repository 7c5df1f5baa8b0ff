"""The committed memory/ folder at HEAD, mirrored in the cache and kept in step incrementally.

A mutation needs one file's blob, whether another memory holds the same body, and every index
line; so a table mirrors memory/ at a recorded commit, brought up to HEAD by `git log --raw
OLD..HEAD` (or rebuilt from `git ls-tree` when that commit is gone). Each row keeps the memory's
last commit and its time (what `git log -n1 -- PATH` shows, too slow per file: docs/design.md
§7); `ProjectHeads` does the same for project memories. When HEAD's MEMORY.md is known to be
what the rows render (`index_exact`), a new index is HEAD's bytes with the changed lines spliced in."""

from __future__ import annotations

import bisect
import functools
import sqlite3
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass, replace
from typing import TypeVar

from desk.errors import DeskError, GitError, InvalidFileError
from desk.layout import (CONFIG_PATH, INDEX_FILE, MEMORY_DIR, PROJECTS_DIR, DeskFolder, memory_name,
                         project_file)
from desk.formats.memory_index import IndexEntry, memory_path, render_sorted, splice_lines
from desk.gate.entries import EntryCache
from desk.gate.last_commits import first_parent_changes, last_commits, last_commits_since
from desk.storage.git import blob_sha
from desk.storage.sqlite_cache import rollback


_ROWS = "head_v2"
_META = "head_meta_v2"
_PROJECT_ROWS = "project_heads_v1"  # ProjectHeads: path -> blob, last commit, its time
_NOTE = "index_note:"  # meta keys of the notes about HEAD's MEMORY.md (`HeadMirror.note_index`)
_EXACT = "exact"  # the note that MEMORY.md is what the rows render, under `render_version()`


@dataclass(frozen=True, slots=True)
class Committed:
    """A memory as HEAD holds it: its blob, the commit that last changed it and that commit's time."""

    blob: str
    commit: str | None  # None only if history could not say (a shallow clone cut it off)
    time: int | None  # committer time, seconds since the epoch


class HeadMirror:
    """The memories committed at HEAD: `{name: (blob, entry, last commit)}` in SQLite, one row each."""

    def __init__(self, desk: DeskFolder, cache: EntryCache) -> None:
        self.desk = desk
        self.cache = cache
        self.db: sqlite3.Connection = cache.connection()
        self.db.execute(f"CREATE TABLE IF NOT EXISTS {_ROWS} (name TEXT PRIMARY KEY, blob TEXT NOT NULL, "
                        "body_key TEXT, line TEXT, last_commit TEXT, last_time INTEGER)")
        self.db.execute(f"CREATE INDEX IF NOT EXISTS {_ROWS}_body ON {_ROWS}(body_key)")
        # SQLite's NOCASE folds ASCII only, as git's `:(icase)` pathspecs do (the gate's name rule).
        self.db.execute(f"CREATE INDEX IF NOT EXISTS {_ROWS}_nocase ON {_ROWS}(name COLLATE NOCASE)")
        # The committed files that do not parse, found without a pass over every row.
        self.db.execute(f"CREATE INDEX IF NOT EXISTS {_ROWS}_broken ON {_ROWS}(name) WHERE line IS NULL")
        self.db.execute(f"CREATE TABLE IF NOT EXISTS {_META} (key TEXT PRIMARY KEY, value TEXT)")
        self.commit: str | None = None  # the HEAD the mirror was last brought to
        self.index_blob: str | None = None
        self._config_blob: str | None = None  # desk.json's blob at HEAD; "" none; None unknown
        # Notes that hold only while MEMORY.md at HEAD is a given blob (`index_note`): `_EXACT` (it
        # is what the rows render) and the callers' own (desk.memory.operations: clean of secrets).
        self._notes: dict[str, str] = {}
        self._rendered: tuple[frozenset[str], bytes, str] | None = None  # the last render_index
        self._committed: tuple[str, bytes] | None = None  # HEAD's MEMORY.md as last read: blob, bytes
        self.spliced = False  # the last render_index gave HEAD's MEMORY.md with the changed lines spliced in

    # -- reading ---------------------------------------------------------------------------

    def blob(self, name: str) -> str | None:
        row = self.db.execute(f"SELECT blob FROM {_ROWS} WHERE name = ?", (name,)).fetchone()
        return row[0] if row else None

    def committed(self, names: Iterable[str]) -> dict[str, Committed]:
        """`{name: Committed}` for those of `names` committed at HEAD; commit times desk did not record
        are asked of git once, for all, and kept."""
        found = _committed_rows(self.db, _ROWS, "name", names)
        untimed = {c.commit for c in found.values() if c.commit is not None and c.time is None}
        if untimed:
            try:
                times = self.desk.git.history.commit_times(untimed)
            except GitError:
                times = {}  # a commit gone from under us: shown without its time
            if times:
                with _write(self.db):
                    self.db.executemany(f"UPDATE {_ROWS} SET last_time = ? WHERE last_commit = ?",
                                        [(t, sha) for sha, t in times.items()])
                found = {name: replace(c, time=times.get(c.commit, c.time)) if c.commit else c
                         for name, c in found.items()}
        return found

    def like(self, paths: list[str]) -> list[str]:
        """HEAD's memory paths equal to one of `paths` ignoring (ASCII) case; other paths match none."""
        select = f"SELECT name FROM {_ROWS} WHERE name = ? COLLATE NOCASE"
        return [memory_path(row[0]) for name in map(memory_name, paths) if name is not None
                for row in self.db.execute(select, (name,))]

    def head_blobs(self, names: Iterable[str]) -> dict[str, str | None]:
        """HEAD's blob ids (None: no such file) of the memories `names`, MEMORY.md and, once known,
        desk.json: what the gate would otherwise ask git for (`desk.gate.validate.KnownHead`)."""
        blobs: dict[str, str | None] = {memory_path(name): self.blob(name) for name in names}
        blobs[INDEX_FILE] = self.index_blob
        if self._config_blob is not None:
            blobs[CONFIG_PATH] = self._config_blob or None
        return blobs

    def same_body(self, body_key: str, exclude: str) -> list[str]:
        """Names of other memories whose body has this content key."""
        rows = self.db.execute(f"SELECT name FROM {_ROWS} WHERE body_key = ? AND name != ? ORDER BY name",
                               (body_key, exclude))
        return [r[0] for r in rows]

    def render_index(self, changes: Mapping[str, IndexEntry | None], *, strict: bool = True) -> bytes:
        """MEMORY.md for HEAD's memories with `changes` applied (None deletes).

        A committed file that does not parse fails here, unless this change replaces it or `strict` is
        False (then it is left out). With `index_exact` the changed lines are spliced into HEAD's bytes,
        else every row is rendered: the same bytes (tests/memory/test_splice.py)."""
        from desk.formats.memory_file import parse_memory  # PyYAML only when a broken file is named

        broken = self.db.execute(f"SELECT name, blob FROM {_ROWS} WHERE line IS NULL").fetchall()
        for name, blob in broken:
            if strict and name not in changes:
                path = memory_path(name)
                try:
                    parse_memory(self.desk.git.objects.read_blobs([blob])[blob], path, name)
                except InvalidFileError as exc:
                    exc.hint = (f"the committed {path} is invalid and MEMORY.md cannot be regenerated: "
                                f"fix it (`desk edit {name}`) or remove it (`desk forget {name}`)")
                    raise
        lines = {name: (entry.line() if entry is not None else None) for name, entry in changes.items()}
        # HEAD's bytes are read for a splice, and for a mutation's render (`strict`) to tell
        # whether it is one anyway; the gate's own renders (not strict) need not read them.
        base = self.committed_index() if self.index_exact or strict else None
        spliced = splice_lines(base, lines) if base is not None else None
        index = spliced if spliced is not None and self.index_exact else self._render_rows(changes)
        # Rendered whole, it may still be HEAD's index with these lines spliced in (HEAD's was
        # exact, only the mirror did not know): what the gate's one-line scan needs.
        self.spliced = spliced == index
        self._rendered = (frozenset(changes), index, blob_sha(index))
        return index

    def _render_rows(self, changes: Mapping[str, IndexEntry | None]) -> bytes:
        """MEMORY.md rendered from every row, with `changes` applied."""
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

    @property
    def index_exact(self) -> bool:
        """Whether HEAD's MEMORY.md is known to be exactly what the rows render (by this code)."""
        return self.index_note(_EXACT) == render_version()

    def committed_index(self) -> bytes | None:
        """HEAD's MEMORY.md: from the work tree when it holds exactly HEAD's blob (it does after a
        mutation's clean check), else from git; None when HEAD has none."""
        blob = self.index_blob
        if blob is None:
            return None
        if self._committed is not None and self._committed[0] == blob:
            return self._committed[1]  # the bytes of that blob: content-addressed, never stale
        try:
            data: bytes | None = self.desk.read(INDEX_FILE)
        except (OSError, DeskError):
            data = None
        if data is None or blob_sha(data) != blob:
            data = self.desk.git.objects.read_blobs([blob]).get(blob)
        if data is not None:
            self._committed = (blob, data)
        return data

    def read_index(self) -> bytes | None:
        """HEAD's MEMORY.md if `committed_index` read it for the current HEAD, else None (nothing is read)."""
        committed = self._committed
        return committed[1] if committed is not None and committed[0] == self.index_blob else None

    def index_note(self, key: str) -> str | None:
        """A value a caller noted about HEAD's MEMORY.md (`note_index`), while it is still HEAD's."""
        value = self._notes.get(key)
        blob, _, note = (value or "").partition(" ")
        return note if value is not None and blob == self.index_blob else None

    def note_index(self, key: str, value: str) -> None:
        """Keep `value` about HEAD's MEMORY.md (e.g. that it was scanned clean, desk.guard) until
        MEMORY.md changes."""
        if self.index_blob is None:
            return
        self._notes[key] = f"{self.index_blob} {value}"
        with _write(self.db):
            self.db.execute(f"INSERT OR REPLACE INTO {_META} VALUES (?, ?)", (_NOTE + key, self._notes[key]))

    # -- keeping in step ---------------------------------------------------------------------

    def sync(self) -> None:
        """Bring the mirror to HEAD: the history since the recorded commit, or a rebuild."""
        head = self.desk.git.refs.head()
        # Read and write the mirror in one SQLite write transaction: a hook process syncing at the
        # same time as a desk mutation then applies whole catch-ups, one after the other.
        with _write(self.db):
            recorded = self._meta("commit")
            self.commit = head
            self.index_blob = self._meta("index_blob")
            self._config_blob = self._meta("config_blob")
            self._notes = {key[len(_NOTE):]: value for key, value in self.db.execute(
                f"SELECT key, value FROM {_META} WHERE key >= ? AND key < ?", (_NOTE, _NOTE + "\uffff"))}
            if head == recorded and (self._config_blob is not None or head is None):
                return
            if head != recorded and not (recorded and head and self._advance(recorded, head)):
                self._rebuild(head)
                self._forget_notes()
            if self._config_blob is None and head is not None:  # a mirror made before it was kept
                self._config_blob = self.desk.git.refs.object_id(f"{head}:{CONFIG_PATH}") or ""
            self._set_meta(head, self.index_blob)

    def record(self, commit: str, changes: Mapping[str, tuple[str, IndexEntry] | None],
               index_blob: str | None, *, committed: int | None = None, notes: Mapping[str, str] = {}) -> None:
        """After `commit` landed: apply `changes` (`{name: (blob, entry)}`, None deleted); `committed` is
        its committer time when known; `notes` the caller's notes on its MEMORY.md."""
        with _write(self.db):
            for name, change in changes.items():
                if change is None:
                    self.db.execute(f"DELETE FROM {_ROWS} WHERE name = ?", (name,))
                else:
                    blob, entry = change
                    self.db.execute(f"INSERT OR REPLACE INTO {_ROWS} VALUES (?, ?, ?, ?, ?, ?)",
                                    (name, blob, entry.body_key, entry.line(), commit, committed))
            self.commit = commit
            self.index_blob = index_blob
            self._set_meta(commit, index_blob)
            rendered, self._rendered = self._rendered, None
            self._forget_notes()
            kept = dict(notes)
            if rendered is not None and rendered[0] == frozenset(changes) and rendered[2] == index_blob:
                kept[_EXACT] = render_version()  # the MEMORY.md render_index made for exactly these changes
            if index_blob is not None:
                self._notes = {key: f"{index_blob} {value}" for key, value in kept.items()}
                self.db.executemany(f"INSERT INTO {_META} VALUES (?, ?)",
                                    [(_NOTE + key, value) for key, value in self._notes.items()])

    def _forget_notes(self) -> None:
        """MEMORY.md or the rows changed under the notes: nothing noted about it holds any more."""
        self._notes = {}
        self.db.execute(f"DELETE FROM {_META} WHERE key >= ? AND key < ?", (_NOTE, _NOTE + "\uffff"))

    def _rebuild(self, head: str | None) -> None:
        """The mirror from nothing: HEAD's files, and their last commits from one history walk."""
        self.db.execute(f"DELETE FROM {_ROWS}")
        if head is None:
            self.index_blob = None
            self._config_blob = ""
            return
        git = self.desk.git
        files = {path: blob for path, blob in git.worktree.ls_tree(head, MEMORY_DIR).items()
                 if memory_name(path) is not None}
        ids = git.objects.object_ids([f"{head}:{INDEX_FILE}", f"{head}:{CONFIG_PATH}"])
        self.index_blob = ids[f"{head}:{INDEX_FILE}"]
        self._config_blob = ids[f"{head}:{CONFIG_PATH}"] or ""
        self._put_files(files)
        with closing(git.history.walk([head])) as steps:
            found, _ = last_commits(git, steps, head, set(files))
        self._set_last(found)

    def _advance(self, old: str, new: str) -> bool:
        """Catch up from `old` to `new` with `git log --raw OLD..NEW`; False when only a rebuild can
        (`old` is gone, or `new` does not descend from it along first parents: history rewritten)."""
        git = self.desk.git
        caught = first_parent_changes(git, old, new, lambda p: p in (INDEX_FILE, CONFIG_PATH)
                                       or memory_name(p) is not None)
        if caught is None:
            return False
        steps, final = caught
        if any(path != CONFIG_PATH for path in final):  # memory/ or MEMORY.md changed
            self._forget_notes()
        if INDEX_FILE in final:
            self.index_blob = final[INDEX_FILE]
        if CONFIG_PATH in final and self._config_blob is not None:
            self._config_blob = final[CONFIG_PATH] or ""
        gone = [(name,) for path, blob in final.items() if blob is None and (name := memory_name(path))]
        self.db.executemany(f"DELETE FROM {_ROWS} WHERE name = ?", gone)
        self._put_files({path: blob for path, blob in final.items()
                         if blob is not None and memory_name(path) is not None})
        # Only a path some commit in between touched can have a new last commit; one that reaches
        # `old` unchanged keeps the row's.
        touched = {c.path for step in steps for c in step.changes if memory_name(c.path) is not None}
        names = (memory_name(p) or "" for p in touched)
        present = {memory_path(name) for name in _committed_rows(self.db, _ROWS, "name", names)}
        found = last_commits_since(git, steps, old, new, present)
        self._set_last(found)
        return True

    def _set_last(self, found: Mapping[str, tuple[str, int]]) -> None:
        self.db.executemany(f"UPDATE {_ROWS} SET last_commit = ?, last_time = ? WHERE name = ?",
                            [(sha, time, memory_name(path)) for path, (sha, time) in found.items()])

    def _put_files(self, files: Mapping[str, str]) -> None:
        """Rows for `{path: blob}`, parsing only blobs the blob cache has not seen. A row that
        exists keeps its last commit (the caller sets it)."""
        by_blob = {blob: path for path, blob in files.items() if memory_name(path) is not None}
        cached = self.cache.get(by_blob)
        missing = [b for b in by_blob if b not in cached]
        fresh: dict[str, IndexEntry] = {}
        rows: list[tuple[str, str, str | None, str | None]] = []
        if missing:
            from desk.formats.memory_file import parse_memory  # PyYAML only when a blob is new to the cache

            for blob, data in self.desk.git.objects.read_blobs(missing).items():
                path = by_blob[blob]
                try:
                    fresh[blob] = IndexEntry.of(parse_memory(data, path, memory_name(path)))
                except InvalidFileError:
                    rows.append((memory_name(path) or "", blob, None, None))
            self.cache.put(fresh)
        for blob, entry in {**cached, **fresh}.items():
            name = memory_name(by_blob[blob])
            assert name is not None
            rows.append((name, blob, entry.body_key, entry.line()))
        self.db.executemany(f"INSERT INTO {_ROWS} (name, blob, body_key, line) VALUES (?, ?, ?, ?) "
                            "ON CONFLICT(name) DO UPDATE SET blob = excluded.blob, "
                            "body_key = excluded.body_key, line = excluded.line", rows)

    def _meta(self, key: str) -> str | None:
        row = self.db.execute(f"SELECT value FROM {_META} WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def _set_meta(self, commit: str | None, index_blob: str | None) -> None:
        rows = [("commit", commit), ("index_blob", index_blob)]
        if self._config_blob is not None:
            rows.append(("config_blob", self._config_blob))
        self.db.executemany(f"INSERT OR REPLACE INTO {_META} VALUES (?, ?)", rows)


@contextmanager
def _write(db: sqlite3.Connection) -> Iterator[None]:
    """One SQLite write transaction (BEGIN IMMEDIATE: a concurrent writer waits)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        rollback(db)
        raise
    db.execute("COMMIT")


def is_project_memory(path: str) -> bool:
    found = project_file(path)
    return found is not None and found[0] == "memory"


class ProjectHeads:
    """Each project memory committed at HEAD with its blob and last commit, kept in step like
    HeadMirror's; only the cache in .git/ is written."""

    def __init__(self, desk: DeskFolder, cache: EntryCache) -> None:
        self.desk = desk
        self.db: sqlite3.Connection = cache.connection()
        self.db.execute(f"CREATE TABLE IF NOT EXISTS {_PROJECT_ROWS} (path TEXT PRIMARY KEY, "
                        "blob TEXT NOT NULL, last_commit TEXT, last_time INTEGER)")
        self.db.execute(f"CREATE TABLE IF NOT EXISTS {_META} (key TEXT PRIMARY KEY, value TEXT)")

    def committed(self, paths: Iterable[str]) -> dict[str, Committed]:
        """`{path: Committed}` for those of `paths` committed at HEAD."""
        return _committed_rows(self.db, _PROJECT_ROWS, "path", paths)

    def sync(self) -> None:
        head = self.desk.git.refs.head()
        with _write(self.db):
            row = self.db.execute(f"SELECT value FROM {_META} WHERE key = 'project_commit'").fetchone()
            recorded = row[0] if row else None
            if head == recorded:
                return
            if not (recorded and head and self._advance(recorded, head)):
                self._rebuild(head)
            self.db.execute(f"INSERT OR REPLACE INTO {_META} VALUES ('project_commit', ?)", (head,))

    def _rebuild(self, head: str | None) -> None:
        self.db.execute(f"DELETE FROM {_PROJECT_ROWS}")
        if head is None:
            return
        git = self.desk.git
        files = {p: b for p, b in git.worktree.ls_tree(head, PROJECTS_DIR, recursive=True).items()
                 if is_project_memory(p)}
        if not files:
            return
        with closing(git.history.walk([head])) as steps:
            found, _ = last_commits(git, steps, head, set(files))
        self._put(files, found)

    def _advance(self, old: str, new: str) -> bool:
        """Catch up from `old` to `new` (as HeadMirror._advance does); False when only a rebuild can."""
        git = self.desk.git
        caught = first_parent_changes(git, old, new, is_project_memory)
        if caught is None:
            return False
        steps, final = caught
        self.db.executemany(f"DELETE FROM {_PROJECT_ROWS} WHERE path = ?",
                            [(p,) for p, blob in final.items() if blob is None])
        present = {p: b for p, b in final.items() if b is not None}
        touched = {c.path for step in steps for c in step.changes if is_project_memory(c.path)}
        touched |= set(present)
        rows = self.committed(touched)  # a side branch may touch a file the first parents kept
        current = present | {p: c.blob for p, c in rows.items() if p not in final}
        found = last_commits_since(git, steps, old, new, set(current))
        self._put(current, found)
        return True

    def _put(self, files: Mapping[str, str], found: Mapping[str, tuple[str, int]]) -> None:
        """Rows for `{path: blob}`; a path without a new last commit keeps the one it has."""
        self.db.executemany(
            f"INSERT INTO {_PROJECT_ROWS} (path, blob, last_commit, last_time) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(path) DO UPDATE SET blob = excluded.blob, "
            "last_commit = COALESCE(excluded.last_commit, last_commit), "
            "last_time = COALESCE(excluded.last_time, last_time)",
            [(p, b, *(found.get(p) or (None, None))) for p, b in files.items()])


def project_heads(desk: DeskFolder) -> AbstractContextManager[ProjectHeads]:
    """The last commits of HEAD's project memories, synced (a reader may open it without the lock)."""
    return _synced(desk, ProjectHeads)


@functools.cache
def render_version() -> str:
    """The code an `exact` note holds under: the rows' table and desk.formats.memory_index's source (a new
    index format renders every row again)."""
    from desk.formats import memory_index as index

    with open(index.__file__, "rb") as source:
        code = source.read()
    return f"{_ROWS}:{len(code)}:{zlib.crc32(code):08x}"


def head_mirror(desk: DeskFolder, cache: EntryCache | None = None) -> AbstractContextManager[HeadMirror]:
    """The mirror of HEAD's memories, synced (in one SQLite transaction, so a reader may open it without
    the desk lock). `cache`: the desk's entry cache when already open (its owner closes it)."""
    return _synced(desk, HeadMirror, cache)


_Synced = TypeVar("_Synced", HeadMirror, ProjectHeads)


@contextmanager
def _synced(desk: DeskFolder, kind: Callable[[DeskFolder, EntryCache], _Synced],
            cache: EntryCache | None = None) -> Iterator[_Synced]:
    """A `kind` over the desk's entry cache (`cache`, or one opened here and closed after),
    brought to HEAD."""
    own = cache is None
    cache = EntryCache(desk.cache_dir) if cache is None else cache
    try:
        state = kind(desk, cache)
        state.sync()
        yield state
    finally:
        if own:
            cache.close()


def _committed_rows(db: sqlite3.Connection, table: str, column: str, keys: Iterable[str]) -> dict[str, Committed]:
    """`{key: Committed}` of the rows of `table` whose `column` is one of `keys` (500 a query:
    SQLite's bound-parameter limit)."""
    wanted = sorted(set(keys))
    found: dict[str, Committed] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        rows = db.execute(f"SELECT {column}, blob, last_commit, last_time FROM {table} "
                          f"WHERE {column} IN ({','.join('?' * len(chunk))})", chunk)
        found.update((key, Committed(blob, commit, time)) for key, blob, commit, time in rows)
    return found
