"""What `desk context` needs of every memory in the work tree (`MemoryView`: the escaped index text,
the expiry times, the invalid files, each normalised trigger with the memories that have it), kept
in `.git/desk-cache/context.sqlite` between runs (derived, never committed).

The view is keyed by memory/ as git and the file system show it (`scan_memory_folder`), and is
stored only when no file was modified within `_RACY_NS` of the scan, as git does for its index. It
also records the memories expired at its `as_of`; another set builds it again. The trigger table
only narrows the candidates: `trigger_hits` decides, so the memories recalled are the uncached path's.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import sqlite3
import time
from bisect import bisect_left
from pathlib import Path
from stat import S_ISDIR, S_ISREG
from collections.abc import Callable, Iterator, Mapping

from desk.errors import DeskError, Finding
from desk.layout import MEMORY_DIR, DeskFolder
from desk.formats.memory_index import IndexEntry
from desk.gate.entries import EntryCache, entries_in_worktree, invalid_paths
from desk.recall.git_state import start_folder_state
from desk.storage.git import FolderState
from desk.storage.sqlite_cache import open_cache
from desk.text.normalize import normalize
from desk.text.times import parse_time

_CACHE_FILE = "context.sqlite"
_TABLE = "memory_view_v4"
_BLOBS = "file_blobs_v1"  # FileBlobs
_RACY_NS = 3_000_000_000  # as desk.formats.memory_index: a file this close to the scan may change unseen
IndexRenderer = Callable[[Mapping[str, IndexEntry], int, list[str]], str]


def scan_memory_folder(desk: DeskFolder, state: FolderState | None = None) -> tuple[str, bool]:
    """A fingerprint of `memory/`'s regular `.md` files, and whether every file it `lstat`ed is
    older than `_RACY_NS` (only then may a view be stored).

    With `state` (git's view of memory/, started by the caller) it is HEAD's memory tree and the
    stat of each file git cannot vouch for (changed, untracked, ignored): git compares the stats
    with its index in C. Without a HEAD commit, when git fails or memory/ is not a plain folder (a
    link: git would not look inside it), it is the stat of every file, in the directory's order."""
    folder = desk.path(MEMORY_DIR)
    if state is not None:
        try:
            found = state.result()
        except DeskError:
            found = None
        if found is not None and _plain_folder(folder):
            tree, paths = found
            prefix = MEMORY_DIR + "/"
            names = [p[len(prefix):] for p in paths if p.startswith(prefix) and p.endswith(".md")
                     and "/" not in p[len(prefix):]]
            return _fingerprint(folder, names, f"git {tree}")
    return _fingerprint(folder, None, "scan")


def _plain_folder(folder: Path) -> bool:
    try:
        return S_ISDIR(os.lstat(folder).st_mode)
    except OSError:
        return False


def _fingerprint(folder: Path, wanted: list[str] | None, kind: str) -> tuple[str, bool]:
    """Hash `kind` and the name and stat of `wanted` (None: every `.md` file in the folder), each
    `lstat`ed relative to the open folder; whether all of them are settled."""
    now, settled, seen = time.time_ns(), True, [kind]
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        fd = -1  # no memory folder (or not a readable one): nothing is read from it either
    try:
        for name in wanted if wanted is not None else os.listdir(fd) if fd >= 0 else ():
            if not name.endswith(".md"):
                continue
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False) if fd >= 0 else None
            except OSError:
                st = None  # gone since the listing
            if st is None or not S_ISREG(st.st_mode):  # memories are regular files, never links
                seen.append(f"{name}\0-")
                continue
            seen.append(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}")
            settled = settled and now - st.st_mtime_ns >= _RACY_NS
    finally:
        if fd >= 0:
            os.close(fd)
    return hashlib.sha1("\1".join(seen).encode("utf-8", "surrogateescape")).hexdigest(), settled


class MemoryView:
    """The desk-wide memories as `desk context` reads them at one `as_of`."""

    def __init__(self, desk: DeskFolder, count: int, broken: list[str], expired: list[str], index_text: str,
                 names: list[str], blobs: list[str], needles: list[str], needle_at: list[str]) -> None:
        self.desk = desk
        self.count = count  # memories parsed (active and expired)
        self.broken = broken  # files left out: they do not parse
        self.expired = set(expired)
        self.index_text = index_text  # the MEMORY.md section's text, escaped (markdown_block)
        self.names = names  # every parsed memory's name, sorted
        self.blobs = blobs  # their blob ids, in the same order
        # The trigger table: each normalised trigger, and at the same position the positions in
        # `names` of the memories with it, comma-joined (parsed only for a hit).
        self.needles = needles
        self.needle_at = needle_at
        self._cache: EntryCache | None = None  # `entry_cache`, open until `close`

    def candidates(self, normalized_query: str) -> list[str]:
        """Names of the active memories with a trigger whose normalised form occurs in the query
        (what `trigger_hits` needs before it looks at word boundaries), sorted."""
        found = {int(i) for needle, at in zip(self.needles, self.needle_at) if needle in normalized_query
                 for i in at.split(",")}
        return sorted(n for n in (self.names[i] for i in found) if n not in self.expired)

    def entries(self, names: list[str]) -> dict[str, IndexEntry]:
        """The index entries of `names` (from the entry cache, by blob id)."""
        if not names:
            return {}
        wanted = {n: self.blobs[bisect_left(self.names, n)] for n in names}
        found = self.entry_cache().get(set(wanted.values()))
        out = {}
        for name, blob in wanted.items():
            entry = found.get(blob)
            if entry is None or entry.name != name:  # the entry cache lost it: read the files
                every = entries_in_worktree(self.desk, [])
                return {n: every[n] for n in names if n in every}
            out[name] = entry
        return out

    def entry_cache(self) -> EntryCache:
        """The desk's entry cache, opened once for this view (the HEAD mirror beside the entries
        is read through it too: `desk.gate.mirror.head_mirror`); `close` closes it."""
        if self._cache is None:
            self._cache = EntryCache(self.desk.cache_dir)
        return self._cache

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def active(self) -> Mapping[str, IndexEntry]:
        """Every active memory's entry, loaded when first looked at (the recent facts section
        asks only when the archive holds a fact)."""
        return _LazyEntries(self)


class _LazyEntries(Mapping[str, IndexEntry]):
    def __init__(self, view: MemoryView) -> None:
        self._view = view
        self._loaded: dict[str, IndexEntry] | None = None

    def _all(self) -> dict[str, IndexEntry]:
        if self._loaded is None:
            view = self._view
            self._loaded = view.entries([n for n in view.names if n not in view.expired])
        return self._loaded

    def __getitem__(self, key: str) -> IndexEntry:
        return self._all()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


def memory_view(desk: DeskFolder, as_of: dt.datetime, render_index: IndexRenderer,
                state: FolderState | None = None, past: Mapping[str, str] | None = None) -> MemoryView:
    """The view at `as_of`, from the cache when memory/ and the expired set are as it was built
    for, else built from the entries (`entries_in_worktree`) and stored when it may be. `state`:
    memory/ as git sees it (`scan_memory_folder`). `past` (`--as-of`, docs/time.md): the memory
    files (`{path: blob}`) of the commit read instead of the work tree, never kept. A memory past
    its `valid_to` keeps its index line (rendered as no longer true) but is never injected."""
    key, settled = scan_memory_folder(desk, state) if past is None else ("", False)
    db = _open(desk) if past is None else None
    try:
        view = _cached(desk, db, key, as_of) if db is not None else None
        if view is not None:
            return view
        invalid: list[Finding] = []
        blob_of: dict[str, str] = {}
        if past is None:
            entries = entries_in_worktree(desk, invalid, blob_of)
        else:  # what was committed then and had begun to be true by `as_of`
            from desk.gate.entries import load_entries

            entries = {n: e for n, e in load_entries(desk, past, None, invalid, blob_of).items()
                       if e.has_begun(as_of)}
        broken = invalid_paths(invalid)
        active = {n: e for n, e in entries.items() if not e.is_expired(as_of)}
        hidden = set(entries) - set(active) | {n for n, e in active.items() if e.has_ended(as_of)}
        names = sorted(entries)
        needles: dict[str, list[int]] = {}
        for i, name in enumerate(names):
            for trigger in entries[name].triggers:
                # A NUL would end the needle in the stored text: each of its pieces is kept
                # instead (every piece is in a query the whole is in: still a superset).
                for needle in normalize(trigger).split("\0"):
                    if needle or "\0" in trigger:
                        where = needles.setdefault(needle, [])
                        if not where or where[-1] != i:
                            where.append(i)
        view = MemoryView(desk, len(entries), broken, sorted(hidden),
                          render_index(active, len(entries) - len(active), broken), names,
                          [blob_of[n] for n in names], list(needles),
                          [",".join(map(str, where)) for where in needles.values()])
        if settled and state is not None and db is not None:
            # git vouched for files the build then read: keep the view only if memory/ is still
            # as it was scanned (a file edited and put back meanwhile would pair this key with
            # the edit), which a second look at git's state shows.
            settled = scan_memory_folder(desk, start_folder_state(desk)) == (key, True)
        if settled and db is not None:
            _store(db, key, view, {n: min(filter(None, (e.expires, e.valid_to)))
                                   for n, e in entries.items() if e.expires or e.valid_to})
        return view
    finally:
        if db is not None:
            db.close()


def _open(desk: DeskFolder) -> sqlite3.Connection | None:
    try:
        return open_cache(desk.cache_dir / _CACHE_FILE,
                          f"CREATE TABLE IF NOT EXISTS {_TABLE} (key TEXT PRIMARY KEY, count INTEGER, "
                          "broken TEXT, expired TEXT, expires TEXT, index_text TEXT, names TEXT, blobs TEXT, "
                          "needles TEXT, needle_at TEXT); "
                          f"CREATE TABLE IF NOT EXISTS {_BLOBS} (path TEXT PRIMARY KEY, size INTEGER, "
                          "mtime INTEGER, ctime INTEGER, inode INTEGER, blob TEXT)")
    except (OSError, sqlite3.Error):
        return None  # a read-only desk still gets its context, built every time


class FileBlobs:
    """Desk files' blob ids by their stat, kept in context.sqlite beside the memory view.

    A read names each file it shows with its blob (`desk.recall.context._stamp_sources`), and
    MEMORY.md is 600 kB at 10,000 memories: reading and hashing it (with OpenSSL's import)
    was paid by every `desk context`, for a file whose text the memory view
    already holds. git's rule for its index: a file's stat (size, mtime, ctime, inode) vouches for
    the bytes hashed under it. A blob is kept only when the stat was the same before and after the
    file was read and the file was last modified `_RACY_NS` or more before that (a change in the
    same clock tick can leave the stat as it was). Anything not a regular file is never vouched for.
    """

    def __init__(self, desk: DeskFolder) -> None:
        self.desk = desk
        self._db: sqlite3.Connection | None = None
        self._opened = False
        self._before: dict[str, os.stat_result] = {}

    def known(self, rel: str) -> str | None:
        """`rel`'s blob when its stat is the one it was hashed under; else None: read it, then `keep`."""
        try:
            st = os.lstat(self.desk.path(rel))
        except OSError:
            return None
        if not S_ISREG(st.st_mode):
            return None
        self._before[rel] = st
        db = self._connection()
        try:
            row = db.execute(f"SELECT size, mtime, ctime, inode, blob FROM {_BLOBS} WHERE path = ?",
                             (rel,)).fetchone() if db is not None else None
        except sqlite3.Error:
            return None
        return str(row[4]) if row is not None and tuple(row[:4]) == _file_stamp(st) else None

    def keep(self, rel: str, data: bytes, blob: str) -> None:
        """Keep `blob`, the blob of `data` as `rel` was read after `known`, when its stat vouches for it."""
        before = self._before.pop(rel, None)
        if before is None or len(data) != before.st_size or time.time_ns() - before.st_mtime_ns < _RACY_NS:
            return
        try:
            if _file_stamp(os.lstat(self.desk.path(rel))) != _file_stamp(before):
                return  # changed while it was read
        except OSError:
            return
        db = self._connection()
        try:
            if db is not None:
                with db:
                    db.execute(f"INSERT OR REPLACE INTO {_BLOBS} VALUES (?, ?, ?, ?, ?, ?)",
                               (rel, *_file_stamp(before), blob))
        except (sqlite3.Error, UnicodeError):
            pass  # not kept: the next read hashes the file again

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _connection(self) -> sqlite3.Connection | None:
        if not self._opened:
            self._opened = True
            self._db = _open(self.desk)
        return self._db


def _file_stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


def _cached(desk: DeskFolder, db: sqlite3.Connection, key: str, as_of: dt.datetime) -> MemoryView | None:
    try:
        row = db.execute(f"SELECT count, broken, expired, expires, index_text, names, blobs, needles, needle_at "
                         f"FROM {_TABLE} WHERE key = ?", (key,)).fetchone()
    except sqlite3.Error:
        return None
    if row is None:
        return None
    count, broken, expired, expires, index_text, *joined = row
    now_expired = sorted(n for n, at in json.loads(expires).items() if parse_time(at) <= as_of)
    if now_expired != json.loads(expired):
        return None  # another set of memories is expired at this `as_of`: build the view for it
    names, blobs, needles, needle_at = map(_split, joined)  # NUL-joined: split in C, not decoded as JSON
    if (len(names), len(blobs), len(needle_at)) != (count, count, len(needles)):
        return None  # not as this code stores it: build it again
    return MemoryView(desk, count, json.loads(broken), now_expired, index_text, names, blobs, needles, needle_at)


def _split(text: str | None) -> list[str]:
    return text.split("\0") if text is not None else []


def _join(items: list[str]) -> str | None:
    return "\0".join(items) if items else None  # None: no items ("" is one empty item)


def _store(db: sqlite3.Connection, key: str, view: MemoryView, expires: Mapping[str, str | None]) -> None:
    """Keep one view (the newest); a failure to write only costs the next run a rebuild."""
    try:
        db.execute("BEGIN IMMEDIATE")
        db.execute(f"DELETE FROM {_TABLE}")
        db.execute(f"INSERT INTO {_TABLE} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (key, view.count, json.dumps(view.broken), json.dumps(sorted(view.expired)),
                    json.dumps(dict(expires)), view.index_text, *map(_join, (view.names, view.blobs, view.needles,
                                                                            view.needle_at))))
        db.execute("COMMIT")
    except (sqlite3.Error, UnicodeError):  # UnicodeError: a name sqlite cannot store as UTF-8
        if db.in_transaction:
            db.execute("ROLLBACK")
