"""What `desk context` needs of every memory in the work tree, kept between runs (issue 17).

A wake-up read shows MEMORY.md's lines of the active memories and, with a query, looks at every
active memory's triggers. On a 10,000-memory desk building that from the entry cache (10,000
entries loaded, 10,000 index lines escaped, 30,000 triggers normalised) was most of a cold
`desk context`. This cache keeps the result (`MemoryView`): the escaped index text, the expiry
times, the invalid files and each normalised trigger with the memories that have it, in
`.git/desk-cache/context.sqlite` (derived, never committed; deleted and rebuilt when unreadable).

It is keyed by the memory folder as the file system shows it: every `memory/*.md` regular file's
name, size, mtime, ctime and inode (one `scandir`, no file read); the rendering code is the
cache's fingerprint (desk.storage.derived), so a desk opened by another desk version builds its
own. A file changed
since the view was built changes its stat, and the view is built again. As git does for its
index, a view is stored only when no file was modified within `_RACY_NS` of the scan: a file
written in the same clock tick as the scan could change without its stat showing it. The view
also records the set of memories expired at the time it was built (`--as-of` included); another
set builds it again. The trigger table only narrows the candidates: a candidate's triggers are
matched by `trigger_hits` itself, so the memories recalled are exactly those the uncached path
finds.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import os
import sqlite3
import sys
import time
from array import array
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
from desk.storage.hashing import sha1_hex
from desk.storage.sqlite_cache import open_cache
from desk.text.normalize import normalize
from desk.text.times import parse_time

_CACHE_FILE = "context.sqlite"
_TABLE = "memory_view_v4"  # v3: names, blobs and the trigger table's positions with their starts;
# v4: the MEMORY.md section's line count (a read loads only the head of its text: `INDEX_HEAD`)
INDEX_HEAD = 32_768  # characters of the section's text a kept view loads (its budget shows a few dozen lines)
_BLOBS = "file_blobs_v1"  # FileBlobs
_LAYOUT = f"{sys.byteorder} {array('L').itemsize}"  # how the stored starts are laid out (`_Joined`)
_RACY_NS = 3_000_000_000  # as desk.formats.memory_index: a file this close to the scan may change unseen
IndexRenderer = Callable[[Mapping[str, IndexEntry], int, list[str]], str]


def scan_memory_folder(desk: DeskFolder, state: FolderState | None = None) -> tuple[str, bool]:
    """A fingerprint of `memory/`'s regular `.md` files, and whether every file it `lstat`ed is
    older than `_RACY_NS` (only then may a view be stored).

    With `state` (`FolderState` of MEMORY_DIR, started by the caller so git works while it
    reads other files) the fingerprint is HEAD's tree of memory/ and the name and stat (size,
    mtime, ctime, inode) of each file git cannot vouch is that tree's blob (changed, deleted,
    untracked or ignored), or that it is missing or not a regular file: at 10,000 memories git
    compares the files' stat with its index in C, where one `lstat` per file from Python costs
    far more. Without a HEAD commit, when git fails or memory/ is not a plain folder (a link: git
    would not look inside it), every file is `lstat`ed: name, size, mtime, ctime and inode.

    Files are `lstat`ed by their name relative to the open folder (~40 % faster than a `scandir`
    entry's stat, which resolves the whole path again); the full scan takes them in the
    directory's own order (no sort: a reordered listing only builds the view again)."""
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
    """Hash `kind` and the stat of `wanted` (None: every `.md` name in the folder) as the
    class docstring of `scan_memory_folder` says; whether all of them are settled."""
    now = time.time_ns()
    settled = True
    names: list[str] = []
    others: list[str] = []  # wanted names that are missing or not regular files
    numbers = array("Q")
    mask = (1 << 64) - 1
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        fd = -1  # no memory folder (or not a readable one): nothing is read from it either
    if fd >= 0:
        try:
            for name in os.listdir(fd) if wanted is None else wanted:
                if not name.endswith(".md"):
                    continue
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    others.append(name)
                    continue  # gone since the listing
                if not S_ISREG(st.st_mode):
                    others.append(name)
                    continue  # a link, a folder: memories are regular files
                names.append(name)
                numbers.extend((st.st_size, st.st_mtime_ns & mask, st.st_ctime_ns & mask, st.st_ino))
                if now - st.st_mtime_ns < _RACY_NS:
                    settled = False
        finally:
            os.close(fd)
    elif wanted is not None:
        others = list(wanted)
    digest = hashlib.sha1()
    digest.update(f"{kind}\0".encode())
    digest.update("\0".join(names).encode("utf-8", "surrogateescape"))
    digest.update(numbers.tobytes())
    if others and wanted is not None:
        digest.update(("\1" + "\0".join(others)).encode("utf-8", "surrogateescape"))
    return digest.hexdigest(), settled


class MemoryView:
    """The desk-wide memories as `desk context` reads them at one `as_of`.

    Its names, blobs and trigger table are kept as joined text with the start of each item
    (`_Joined`): a read looks up only the items it needs, where splitting the 10,000 names, blobs
    and positions of a kept view was paid by every cold read."""

    def __init__(self, desk: DeskFolder, count: int, broken: list[str], expired: list[str],
                 index_text: str, names: _Joined, blobs: _Joined, needles: list[str],
                 needle_at: _Joined, index_lines: int | None = None,
                 index_rest: Callable[[MemoryView], str] | None = None) -> None:
        self.desk = desk
        self.count = count  # memories parsed (active and expired)
        self.broken = broken  # files left out: they do not parse
        self.expired = set(expired)
        # The MEMORY.md section's text, escaped (markdown_block): whole, or (`index_rest` given)
        # its first `INDEX_HEAD` characters, the whole loaded by `index_rest` when asked for
        self.index_head = index_text
        self._index_rest = index_rest
        self.index_lines = index_lines if index_lines is not None else _lines(index_text)
        self._names = names  # every parsed memory's name, sorted
        self._blobs = blobs  # their blob ids, in the same order
        # The trigger table: each normalised trigger, and beside it (same position) the positions
        # in `names` of the memories with it, as comma-joined text (parsed only for a hit).
        self.needles = needles
        self._needle_at = needle_at
        self._at: dict[str, int] = {}  # names found by `candidates`: their positions
        self._cache: EntryCache | None = None  # `entry_cache`, open until `close`

    @property
    def index_whole(self) -> bool:
        """Whether `index_head` is the section's whole text."""
        return self._index_rest is None

    @property
    def index_text(self) -> str:
        """The MEMORY.md section's whole text (loaded now if only its head was)."""
        if self._index_rest is not None:
            self.index_head, self._index_rest = self._index_rest(self), None
        return self.index_head

    @property
    def names(self) -> list[str]:
        """Every parsed memory's name, sorted."""
        return self._names.items()

    def candidates(self, normalized_query: str) -> list[str]:
        """Names of the active memories with a trigger whose normalised form occurs in the query
        (what `trigger_hits` needs before it looks at word boundaries), sorted."""
        at = self._needle_at
        found = {int(i) for k, needle in enumerate(self.needles) if needle in normalized_query
                 for i in at[k].split(",")}
        for i in found:
            self._at[self._names[i]] = i
        return sorted(n for n in (self._names[i] for i in found) if n not in self.expired)

    def entries(self, names: list[str]) -> dict[str, IndexEntry]:
        """The index entries of `names` (from the entry cache, by blob id)."""
        if not names:
            return {}
        wanted = {n: self._blobs[self._position(n)] for n in names}
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

    def _position(self, name: str) -> int:
        at = self._at.get(name)
        return at if at is not None else bisect_left(self.names, name)

    def active(self) -> Mapping[str, IndexEntry]:
        """Every active memory's entry, loaded when first looked at (the recent facts section
        asks only when the archive holds a fact)."""
        return _LazyEntries(self)


class _Joined:
    """Items joined by NUL (`text`) with each item's start (`starts`, an array of offsets): item
    `i` without splitting them all. Made from a list (`of`) or from the stored text (`stored`)."""

    def __init__(self, text: str, starts: array[int]) -> None:
        self._text = text
        self._starts = starts
        self._items: list[str] | None = None

    @classmethod
    def of(cls, items: list[str]) -> _Joined:
        joined = cls("\0".join(items), array("L"))
        joined._items = items
        return joined

    @classmethod
    def stored(cls, text: str | None, starts: bytes | None) -> _Joined:
        offsets = array("L")
        if starts:
            offsets.frombytes(starts)
        return cls(text or "", offsets)

    def starts(self) -> bytes:
        """The starts as stored (computed from the items when made from a list)."""
        offsets = array("L")
        at = 0
        for item in self.items():
            offsets.append(at)
            at += len(item) + 1
        return offsets.tobytes()

    def text(self) -> str | None:
        return self._text if self.items() else None  # None: no items ("" is one empty item)

    def items(self) -> list[str]:
        if self._items is None:
            self._items = self._text.split("\0") if self._starts else []
        return self._items

    def __len__(self) -> int:
        return len(self._items) if self._items is not None else len(self._starts)

    def __getitem__(self, i: int) -> str:
        if self._items is not None:
            return self._items[i]
        starts = self._starts
        end = starts[i + 1] - 1 if i + 1 < len(starts) else len(self._text)
        return self._text[starts[i]:end]


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
    scanned, settled = scan_memory_folder(desk, state) if past is None else ("", False)
    key = sha1_hex(f"{scanned}\0{_LAYOUT}".encode())
    db = _open(desk) if past is None else None
    try:
        view = _cached(desk, db, key, as_of, render_index) if db is not None else None
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
                          render_index(active, len(entries) - len(active), broken), _Joined.of(names),
                          _Joined.of([blob_of[n] for n in names]), list(needles),
                          _Joined.of([",".join(map(str, where)) for where in needles.values()]))
        if settled and state is not None and db is not None:
            # git vouched for files the build then read: keep the view only if memory/ is still
            # as it was scanned (a file edited and put back meanwhile would pair this key with
            # the edit), which a second look at git's state shows.
            settled = scan_memory_folder(desk, start_folder_state(desk)) == (scanned, True)
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
                          "broken TEXT, expired TEXT, expires TEXT, index_text TEXT, names TEXT, names_at BLOB, "
                          "blobs TEXT, blobs_at BLOB, needles TEXT, needle_at TEXT, needle_at_at BLOB, "
                          "index_lines INTEGER); "
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


def _cached(desk: DeskFolder, db: sqlite3.Connection, key: str, as_of: dt.datetime,
            render_index: IndexRenderer) -> MemoryView | None:
    try:
        row = db.execute(f"SELECT count, broken, expired, expires, substr(index_text, 1, ?), names, names_at, "
                         f"blobs, blobs_at, needles, needle_at, needle_at_at, index_lines FROM {_TABLE} "
                         "WHERE key = ?", (INDEX_HEAD, key)).fetchone()
    except sqlite3.Error:
        return None
    if row is None:
        return None
    (count, broken, expired, expires, index_head, names, names_at, blobs, blobs_at, needles, needle_at, needle_at_at,
     index_lines) = row
    now_expired = sorted(n for n, at in json.loads(expires).items() if parse_time(at) <= as_of)
    if now_expired != json.loads(expired):
        return None  # another set of memories is expired at this `as_of`: build the view for it
    # NUL-joined text: the trigger needles split in C (~4x faster than decoding JSON lists at
    # 10,000 memories); names, blobs and positions looked up by their starts when needed
    found_needles = _split(needles)
    name_list, blob_list = _Joined.stored(names, names_at), _Joined.stored(blobs, blobs_at)
    positions = _Joined.stored(needle_at, needle_at_at)
    if (len(name_list), len(blob_list), len(positions)) != (count, count, len(found_needles)):
        return None  # not as stored (another machine's byte order): build it again
    # MEMORY.md's section at 10,000 memories is ~560 kB, of which its budget shows a few dozen
    # lines: the rest is read only if a read needs it (SQLite's copy and decoding)
    if not isinstance(index_lines, int) or not isinstance(index_head, str):
        return None  # not as this code stores it: build it again
    rest = None if len(index_head) < INDEX_HEAD else functools.partial(_index_text, key, render_index)
    return MemoryView(desk, count, json.loads(broken), now_expired, index_head, name_list, blob_list,
                      found_needles, positions, index_lines, rest)


def _index_text(key: str, render_index: IndexRenderer, view: MemoryView) -> str:
    """The whole section text of the kept view `key`, whose head `view` holds; rendered from the
    view's entries if another read replaced the kept view meanwhile (the same text: the key
    names the files and the code that rendered it)."""
    row = None
    db = _open(view.desk)
    if db is not None:
        try:
            row = db.execute(f"SELECT index_text FROM {_TABLE} WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:
            pass
        finally:
            db.close()
    if row is not None and isinstance(row[0], str) and row[0].startswith(view.index_head):
        return row[0]
    return render_index(dict(view.active()), len(view.expired), view.broken)


def _lines(text: str) -> int:
    """The lines `desk.recall.context.sections._trim_lines` counts in `text`."""
    return text.rstrip("\n").count("\n") + 1


def _split(text: str | None) -> list[str]:
    return text.split("\0") if text is not None else []


def _join(items: list[str]) -> str | None:
    return "\0".join(items) if items else None  # None: no items ("" is one empty item)


def _store(db: sqlite3.Connection, key: str, view: MemoryView, expires: Mapping[str, str | None]) -> None:
    """Keep one view (the newest); a failure to write only costs the next run a rebuild."""
    try:
        db.execute("BEGIN IMMEDIATE")
        db.execute(f"DELETE FROM {_TABLE}")
        db.execute(f"INSERT INTO {_TABLE} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (key, view.count, json.dumps(view.broken), json.dumps(sorted(view.expired)),
                    json.dumps(dict(expires)), view.index_text, view._names.text(), view._names.starts(),
                    view._blobs.text(), view._blobs.starts(), _join(view.needles), view._needle_at.text(),
                    view._needle_at.starts(), view.index_lines))
        db.execute("COMMIT")
    except (sqlite3.Error, UnicodeError):  # UnicodeError: a name sqlite cannot store as UTF-8
        if db.in_transaction:
            db.execute("ROLLBACK")
