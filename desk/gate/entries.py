"""The one entry loader: `load_entries` is how anything reads memory files into MEMORY.md entries.

Entries are cached by blob id in `.git/desk-cache/entries.sqlite` (a blob id hashes the bytes, so
an entry is never stale); only blobs the cache has not seen are parsed."""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import fields
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from desk.errors import DeskError, Finding, InvalidFileError
from desk.formats.memory_index import IndexEntry
from desk.layout import MEMORY_DIR, DeskFolder, memory_name
from desk.storage.git import blob_sha
from desk.storage.sqlite_cache import open_cache

_CACHE_FILE = "entries.sqlite"
# v6: a memory recording another scope's project is not an entry (parse_memory refuses it); v5:
# injected_tokens of the Markdown-escaped body (v4: a column per field)
_TABLE = "entries_v7"  # v7: valid_from, valid_to
_STATS = "worktree_v1"  # memory/ in the work tree as last read: path -> size, mtime, blob id
_RACY_NS = 3_000_000_000  # a file modified this close to being read is read again (git's racy rule)


class EntryCache:
    """Entries keyed by blob id, in SQLite. Derived: losing it costs a re-parse, nothing else."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / _CACHE_FILE
        self._db: sqlite3.Connection | None = None

    def connection(self) -> sqlite3.Connection:
        """The open SQLite connection (other derived tables live in the same file)."""
        if self._db is None:
            self._db = open_cache(self.path, f"CREATE TABLE IF NOT EXISTS {_TABLE} "
                                             f"(blob TEXT PRIMARY KEY, {', '.join(_FIELDS)}); "
                                             f"CREATE TABLE IF NOT EXISTS {_STATS} (path TEXT PRIMARY KEY, "
                                             "size INTEGER, mtime INTEGER, blob TEXT); ",
                                  wal=True)
            # Derived data: a write-ahead log synced at checkpoints, not at every commit (a power
            # cut may lose the last transactions, never corrupt the file; the mirror catches up).
            self._db.execute("PRAGMA synchronous=NORMAL")
        return self._db

    def get(self, blobs: Iterable[str]) -> dict[str, IndexEntry]:
        wanted = list(blobs)
        found: dict[str, IndexEntry] = {}
        db = self.connection()
        select = f"SELECT blob, {', '.join(_FIELDS)} FROM {_TABLE}"
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            rows = db.execute(f"{select} WHERE blob IN ({','.join('?' * len(chunk))})", chunk)
            found.update((row[0], _entry(row)) for row in rows)
        return found

    def stats(self) -> dict[str, tuple[int, int, str]]:
        """`{path: (size, mtime_ns, blob id)}` of the memory files as `entries_in_worktree` last read them."""
        return {path: (size, mtime, blob) for path, size, mtime, blob in
                self.connection().execute(f"SELECT path, size, mtime, blob FROM {_STATS}")}

    def put_stats(self, seen: list[tuple[str, int, int, str]], gone: Iterable[str]) -> None:
        db = self.connection()
        db.execute("BEGIN")
        db.executemany(f"DELETE FROM {_STATS} WHERE path = ?", [(p,) for p in gone])
        db.executemany(f"INSERT OR REPLACE INTO {_STATS} VALUES (?, ?, ?, ?)", seen)
        db.execute("COMMIT")

    def put(self, entries: Mapping[str, IndexEntry]) -> None:
        if not entries:
            return
        db = self.connection()
        rows = [(blob, *_row(e)) for blob, e in entries.items()]
        insert = f"INSERT OR REPLACE INTO {_TABLE} VALUES ({', '.join('?' * (len(_FIELDS) + 1))})"
        if db.in_transaction:  # part of the caller's transaction (desk.gate.mirror)
            db.executemany(insert, rows)
            return
        db.execute("BEGIN")
        db.executemany(insert, rows)
        db.execute("COMMIT")

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


# The table holds one column per field (no JSON to decode: `desk context` loads every entry);
# triggers, single lines each (desk.formats.memory_file), joined by newlines.
_FIELDS = tuple(f.name for f in fields(IndexEntry))
_TRIGGERS = _FIELDS.index("triggers")


def _row(entry: IndexEntry) -> list[object]:
    values: list[object] = [getattr(entry, name) for name in _FIELDS]
    values[_TRIGGERS] = "\n".join(entry.triggers)
    return values


def _entry(row: tuple[object, ...]) -> IndexEntry:
    values = list(row[1:])
    triggers = values[_TRIGGERS]
    values[_TRIGGERS] = tuple(str(triggers).split("\n")) if triggers else ()
    return IndexEntry(*values)  # type: ignore[arg-type]


ReadBlobs = Callable[[list[str]], Mapping[str, bytes]]


def load_entries(desk: DeskFolder, files: Mapping[str, str], read: ReadBlobs | None = None,
                 invalid: list[Finding] | None = None,
                 blobs: dict[str, str] | None = None) -> dict[str, IndexEntry]:
    """`{name: entry}` for `files` (`{path: blob id}`), parsing only blobs the cache lacks.

    `read(missing)` gives their bytes (default: git's object store); one it cannot give is left out.
    An unparsable file raises InvalidFileError, unless `invalid` collects its findings. `blobs`
    receives each returned entry's blob id."""
    named = {path: blob for path, blob in files.items() if memory_name(path) is not None}
    cache = EntryCache(desk.cache_dir)
    try:
        known = cache.get(set(named.values()))
        # A cached entry was parsed under its own file name: the same bytes under another name
        # are a name mismatch, which parsing that file reports.
        todo = {path: blob for path, blob in named.items()
                if blob not in known or known[blob].name != memory_name(path)}
        if todo:
            from desk.formats.memory_file import parse_memory  # PyYAML only when a blob is new to the cache

            data = (read or desk.git.objects.read_blobs)(sorted(set(todo.values())))
            fresh = {}
            for path, blob in sorted(todo.items()):
                if blob not in data:
                    continue
                try:
                    fresh[blob] = IndexEntry.of(parse_memory(data[blob], path, memory_name(path)))
                except InvalidFileError as exc:
                    if invalid is None:
                        raise
                    invalid.extend(exc.findings)
            cache.put(fresh)
            known.update(fresh)
    finally:
        cache.close()
    found = {entry.name: (entry, blob) for path, blob in named.items()
             if (entry := known.get(blob)) is not None and entry.name == memory_name(path)}
    if blobs is not None:
        blobs.update((name, blob) for name, (_, blob) in found.items())
    return {name: entry for name, (entry, _) in found.items()}


def committed_files(desk: DeskFolder) -> dict[str, str]:
    """`{path: blob id}` of the files in memory/ at HEAD."""
    head = desk.git.refs.head()
    return desk.git.worktree.ls_tree(head, MEMORY_DIR) if head else {}


def entries_in_worktree(desk: DeskFolder, invalid: list[Finding] | None = None,
                        blobs: dict[str, str] | None = None) -> dict[str, IndexEntry]:
    """The memories on disk now (hand edits included, symlinks not followed); `invalid` and `blobs` as
    in load_entries. A file whose size and mtime are as last read is not read again (git's racy rule
    applies: one modified within 3 s of the read is read next time)."""
    folder = desk.path(MEMORY_DIR)
    contents: dict[str, bytes] = {}
    files: dict[str, str] = {}
    cache = EntryCache(desk.cache_dir)
    try:
        known = cache.stats()
        seen: list[tuple[str, int, int, str]] = []
        now = time.time_ns()
        if folder.is_dir():
            with os.scandir(folder) as it:
                for item in sorted(it, key=lambda i: i.name):
                    if not (item.name.endswith(".md") and item.is_file(follow_symlinks=False)):
                        continue
                    path = f"{MEMORY_DIR}/{item.name}"
                    st = item.stat(follow_symlinks=False)
                    old = known.pop(path, None)
                    if old is not None and old[:2] == (st.st_size, st.st_mtime_ns):
                        files[path] = old[2]
                        continue
                    try:
                        data = desk.read(path)
                    except (OSError, DeskError):
                        continue  # gone, or swapped for a link since the listing
                    blob = blob_sha(data)
                    contents[blob] = data
                    files[path] = blob
                    racy = now - st.st_mtime_ns < _RACY_NS
                    seen.append((path, -1 if racy else st.st_size, st.st_mtime_ns, blob))
        if seen or known:
            cache.put_stats(seen, known)
    finally:
        cache.close()
    paths = {blob: path for path, blob in files.items()}

    def read(blobs: list[str]) -> dict[str, bytes]:
        out = {}
        for blob in blobs:
            data = contents.get(blob)
            if data is None:  # seen unchanged, but its entry is not cached (a file that does not parse)
                try:
                    data = desk.read(paths[blob])
                except (OSError, DeskError):
                    continue
                if blob_sha(data) != blob:
                    continue  # changed since: read again next time (its size or mtime differs)
            out[blob] = data
        return out

    return load_entries(desk, files, read, invalid, blobs)


def invalid_paths(invalid: Iterable[Finding]) -> list[str]:
    """The files named by `invalid`, sorted: what a reader left out because it does not parse."""
    return sorted({finding.path for finding in invalid})
