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
import functools
import hashlib
import json
import os
import sqlite3
import time
from bisect import bisect_left
from pathlib import Path
from stat import S_ISDIR, S_ISREG
from collections.abc import Iterator, Mapping

from desk.errors import DeskError, Finding
from desk.layout import MEMORY_DIR, DeskFolder
from desk.formats.memory_index import IndexEntry
from desk.gate.entries import EntryCache, entries_in_worktree, invalid_paths
from desk.recall.context.lists import index_text
from desk.recall.git_state import start_folder_state
from desk.storage.git import FolderState
from desk.storage.sqlite_cache import open_cache
from desk.text.escape import markdown_block
from desk.text.normalize import normalize
from desk.text.times import parse_time

_CACHE_FILE = "context.sqlite"
_TABLE = "memory_view_v4"
_RACY_NS = 3_000_000_000  # as desk.formats.memory_index: a file this close to the scan may change unseen


def scan_memory_folder(desk: DeskFolder, state: FolderState | None = None) -> tuple[str, bool]:
    """A fingerprint of `memory/`'s `.md` files, and whether each one `lstat`ed is older than `_RACY_NS`.
    With `state` (git's view, started by the caller): HEAD's memory tree and the stat of each file git
    cannot vouch for. Else (no HEAD, git fails, memory/ not a plain folder) the stat of every file."""
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
        out = {n: e for n, b in wanted.items() if (e := found.get(b)) is not None and e.name == n}
        if len(out) < len(wanted):  # the entry cache lost one: read the files
            every = entries_in_worktree(self.desk, [])
            return {n: every[n] for n in names if n in every}
        return out

    def entry_cache(self) -> EntryCache:
        """The desk's entry cache (the HEAD mirror's too), opened once; `close` closes it."""
        if self._cache is None:
            self._cache = EntryCache(self.desk.cache_dir)
        return self._cache

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def active(self) -> Mapping[str, IndexEntry]:
        """Every active memory's entry, loaded when first looked at (by the recent facts, if any)."""
        return _LazyEntries(self)


class _LazyEntries(Mapping[str, IndexEntry]):
    def __init__(self, view: MemoryView) -> None:
        self._view = view

    @functools.cached_property
    def _all(self) -> dict[str, IndexEntry]:
        return self._view.entries([n for n in self._view.names if n not in self._view.expired])

    def __getitem__(self, key: str) -> IndexEntry:
        return self._all[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)


def memory_view(desk: DeskFolder, as_of: dt.datetime, state: FolderState | None = None,
                past: Mapping[str, str] | None = None) -> MemoryView:
    """The view at `as_of`: kept, or built from the entries and kept when it may be. `state`: memory/
    as git sees it. `past` (`--as-of`): the commit's memory files (`{path: blob}`), never kept. A
    memory past its `valid_to` keeps its index line (no longer true) but is never injected."""
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
                          markdown_block(index_text(active, len(entries) - len(active), broken, as_of)), names,
                          [blob_of[n] for n in names], list(needles),
                          [",".join(map(str, where)) for where in needles.values()])
        if settled and state is not None and db is not None:
            # git vouched for files the build then read: keep the view only if a second look
            # finds memory/ as scanned (not edited and put back meanwhile)
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
                          "needles TEXT, needle_at TEXT)")
    except (OSError, sqlite3.Error):
        return None  # a read-only desk still gets its context, built every time


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
