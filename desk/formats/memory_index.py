"""MEMORY.md, the index of memory/ (a pure function of the memory files), and the one entry loader.

Sorted by name, no clock, no locale: the same bytes on every run and every machine. An expiring
memory shows its expiry instead of vanishing with the clock.

`load_entries` is how anything reads memory files into entries (MEMORY.md, the write gate, the
validator, the digest, `desk context`, `desk stats`). Mutations must not re-parse the desk, so
entries are cached by git blob id in `.git/desk-cache/entries.sqlite` (derived, never committed, rebuilt
when missing or broken). A blob id is a hash of the file's bytes, so a cached entry can never be
stale; the set of files comes from one `git ls-tree` or a folder scan, and only blobs the cache has
not seen are parsed.
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from desk.errors import DeskError, Finding, InvalidFileError
from desk.frozen import Frozen
from desk.layout import INDEX_FILE, MEMORY_DIR, DeskFolder, memory_name
from desk.storage.git import blob_sha
from desk.storage.sqlite_cache import open_cache
from desk.text.escape import injected_body
from desk.text.normalize import content_key
from desk.text.times import format_time, parse_time
from desk.text.tokens import estimate_tokens

if TYPE_CHECKING:
    from desk.formats.memory_file import MemoryFile

HEADER = (f"# {INDEX_FILE}: generated from {MEMORY_DIR}/ by desk; do not edit by hand, "
          "run `desk reindex` after editing memory files\n")
EMPTY = "_No memories yet: add one with `desk remember`._\n"
_CACHE_FILE = "entries.sqlite"
# v6: a memory recording another scope's project is not an entry (parse_memory refuses it); v5:
# injected_tokens of the Markdown-escaped body (v4: a column per field)
_TABLE = "entries_v6"
_RETIRED = ("entries_v2", "entries_v3", "entries_v4", "entries_v5")  # earlier layouts: dropped
_STATS = "worktree_v1"  # memory/ in the work tree as last read: path -> size, mtime, blob id
_RACY_NS = 3_000_000_000  # a file modified this close to being read is read again (git's racy rule)
_SCAN_ALL = 2000  # from this many blobs, one pass over the table beats IN (...) lookups


class IndexEntry(Frozen):
    """What MEMORY.md, the write gate, `desk context` and `desk stats` need from one memory file.

    A plain class with what `@dataclass(frozen=True)` would make (the `__init__`, `__eq__`,
    `__hash__` and `__repr__` over every field, no assignment): the pre-commit hook loads this
    module on every commit of a memory, and `dataclasses` (with `inspect`) costs ~6 ms to import.
    """

    name: str
    type: str
    description: str
    expires: str | None
    body_key: str
    triggers: tuple[str, ...]
    updated: str | None  # the later of `updated` and `created`
    body_tokens: int
    # What `desk context` shows of a recalled memory, so it can tell which fit its budget before
    # reading any body: the fields it prints and the body's tokens as it injects them.
    importance: int | None
    source: str | None
    source_event: str | None
    updated_field: str | None  # the `updated` field itself (None when the file has none)
    injected_tokens: int

    __match_args__ = ("name", "type", "description", "expires", "body_key", "triggers", "updated", "body_tokens",
                      "importance", "source", "source_event", "updated_field", "injected_tokens")

    def __init__(self, name: str, type: str, description: str, expires: str | None, body_key: str,
                 triggers: tuple[str, ...] = (), updated: str | None = None, body_tokens: int = 0,
                 importance: int | None = None, source: str | None = None, source_event: str | None = None,
                 updated_field: str | None = None, injected_tokens: int = 0) -> None:
        self.__dict__.update(name=name, type=type, description=description, expires=expires,
                             body_key=body_key, triggers=triggers, updated=updated, body_tokens=body_tokens,
                             importance=importance, source=source, source_event=source_event,
                             updated_field=updated_field, injected_tokens=injected_tokens)

    def _values(self) -> tuple[object, ...]:
        return (self.name, self.type, self.description, self.expires, self.body_key, self.triggers,
                self.updated, self.body_tokens, self.importance, self.source, self.source_event,
                self.updated_field, self.injected_tokens)

    @classmethod
    def of(cls, memory: MemoryFile) -> IndexEntry:
        meta = memory.meta
        stamps = [t for t in (meta.created, meta.updated) if t is not None]
        return cls(meta.name, meta.type, meta.description,
                   format_time(meta.expires) if meta.expires else None,
                   content_key(memory.body), tuple(meta.triggers),
                   format_time(max(stamps)) if stamps else None, estimate_tokens(memory.body),
                   meta.importance, meta.source, meta.source_event,
                   format_time(meta.updated) if meta.updated else None,
                   estimate_tokens(injected_body(memory.body)))

    def is_expired(self, now: dt.datetime) -> bool:
        """Expired at `now`: still on disk and in MEMORY.md, never injected or recalled."""
        return self.expires is not None and parse_time(self.expires) <= now

    def line(self) -> str:
        return index_line(self.name, self.description, self.expires)


def index_line(name: str, description: str, expires: str | None) -> str:
    """A memory's MEMORY.md line."""
    line = f"- [{name}]({MEMORY_DIR}/{name}.md) — {description}"
    if expires:
        line += f" (expires {expires})"
    return line


def memory_line(memory: MemoryFile) -> str:
    """`IndexEntry.of(memory).line()` without the rest of the entry (the body's key and token
    counts): the gate's per-file verdict needs only the line."""
    meta = memory.meta
    return index_line(meta.name, meta.description, format_time(meta.expires) if meta.expires else None)


def render_index(entries: Iterable[IndexEntry]) -> bytes:
    """MEMORY.md for `entries`: the header, then one line per memory sorted by name."""
    return render_lines({entry.name: entry.line() for entry in entries})


def render_lines(lines: Mapping[str, str]) -> bytes:
    """MEMORY.md from `{name: index line}`: sorted by name (code points, never the locale)."""
    return render_sorted([lines[name] for name in sorted(lines)])


def render_sorted(lines: list[str]) -> bytes:
    """MEMORY.md from index lines already sorted by name."""
    body = "\n".join(lines) + "\n" if lines else EMPTY
    return (HEADER + "\n" + body).encode()


def splice_lines(index: bytes, lines: Mapping[str, str | None]) -> bytes | None:
    """`index` (a MEMORY.md as `render_sorted` writes it) with each `{name: line}` put at its sorted
    place, replacing the name's line if it has one (None: the name's line taken out); None when
    `index` is not laid out as desk writes it. A few bisections of the bytes: the cost grows with
    the change, not with the desk, but for copying the result once (one line), or the index into a
    buffer and out of it (more lines): a fresh copy of a 3 MB index costs ~0.5 ms."""
    head = (HEADER + "\n").encode()
    empty = EMPTY.encode()
    if not index.startswith(head):
        return None
    skip = len(head)  # the body is index[skip:], searched in place: bisection offsets shifted alike
    if len(index) - skip == len(empty) and index.endswith(empty):
        index = head
    elif len(index) == skip or not index.endswith(b"\n"):
        return None
    body: bytes | bytearray = index
    edits = sorted(lines.items())
    for name, line in edits:
        key = name.encode()
        start, found = _find_line(body, key, skip)
        if start is None:
            return None
        end = body.index(b"\n", start) + 1 if found else start
        new = b"" if line is None else line.encode() + b"\n"
        if line is not None and not line.startswith(f"- [{name}]("):
            raise ValueError(f"{line!r} is not {name}'s index line")
        if len(body) - (end - start) + len(new) == skip:
            body = head  # the last line taken out
        elif len(edits) == 1:  # one copy, from the pieces in place
            view = memoryview(body)
            return b"".join((view[:start], new, view[end:]))
        else:
            if not isinstance(body, bytearray):
                body = bytearray(body)
            body[start:end] = new
    return bytes(body) if len(body) > skip else head + empty


def _find_line(body: bytes | bytearray, key: bytes, skip: int = 0) -> tuple[int | None, bool]:
    """Where in `body[skip:]` (index lines, each ending in a newline, sorted by name) the line of
    `key` starts, or would be inserted (an offset into `body`); and whether it is there. (None,
    False) for a line that is not an index line."""
    lo, hi = skip, len(body)  # offsets of line starts: the answer lies in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        start = body.rfind(b"\n", lo, mid) + 1 if mid > lo else lo
        if start < lo:
            start = lo
        end = body.index(b"\n", start)
        close = body.find(b"](", start, end)
        if not body.startswith(b"- [", start) or close < 0:
            return None, False
        name = body[start + 3:close]
        if name == key:
            return start, True
        if name < key:
            lo = end + 1
        else:
            hi = start
    return lo, False


def memory_path(name: str) -> str:
    return f"{MEMORY_DIR}/{name}.md"


class EntryCache:
    """Entries keyed by blob id, in SQLite. Derived: losing it costs a re-parse, nothing else."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / _CACHE_FILE
        self._db: sqlite3.Connection | None = None

    def connection(self) -> sqlite3.Connection:
        """The open SQLite connection (other derived tables live in the same file)."""
        return self._connect()

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = open_cache(self.path, f"CREATE TABLE IF NOT EXISTS {_TABLE} "
                                             f"(blob TEXT PRIMARY KEY, {', '.join(_FIELDS)}); "
                                             f"CREATE TABLE IF NOT EXISTS {_STATS} (path TEXT PRIMARY KEY, "
                                             "size INTEGER, mtime INTEGER, blob TEXT); "
                                             + "".join(f"DROP TABLE IF EXISTS {t};" for t in _RETIRED),
                                  wal=True)
            # Derived data: a write-ahead log synced at checkpoints, not at every commit (a power
            # cut may lose the last transactions, never corrupt the file; the mirror catches up).
            self._db.execute("PRAGMA synchronous=NORMAL")
        return self._db

    def get(self, blobs: Iterable[str]) -> dict[str, IndexEntry]:
        wanted = list(blobs)
        found: dict[str, IndexEntry] = {}
        db = self._connect()
        select = f"SELECT blob, {', '.join(_FIELDS)} FROM {_TABLE}"
        if len(wanted) >= _SCAN_ALL:
            want = set(wanted)
            found.update((row[0], _entry(row)) for row in db.execute(select) if row[0] in want)
            return found
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            rows = db.execute(f"{select} WHERE blob IN ({','.join('?' * len(chunk))})", chunk)
            found.update((row[0], _entry(row)) for row in rows)
        return found

    def stats(self) -> dict[str, tuple[int, int, str]]:
        """`{path: (size, mtime_ns, blob id)}` of the memory files as `entries_in_worktree` last read them."""
        return {path: (size, mtime, blob) for path, size, mtime, blob in
                self._connect().execute(f"SELECT path, size, mtime, blob FROM {_STATS}")}

    def put_stats(self, seen: list[tuple[str, int, int, str]], gone: Iterable[str]) -> None:
        db = self._connect()
        db.execute("BEGIN")
        db.executemany(f"DELETE FROM {_STATS} WHERE path = ?", [(p,) for p in gone])
        db.executemany(f"INSERT OR REPLACE INTO {_STATS} VALUES (?, ?, ?, ?)", seen)
        db.execute("COMMIT")

    def put(self, entries: Mapping[str, IndexEntry]) -> None:
        if not entries:
            return
        db = self._connect()
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
_FIELDS = IndexEntry.__match_args__
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

    `read(missing_blob_ids)` returns their bytes; by default they come from git's object store.
    A blob `read` cannot give (a file changed while it was read) is left out. A file that does
    not parse raises InvalidFileError, unless `invalid` is given: then its findings are added
    there and the file is left out. `blobs`, when given, receives each returned entry's blob id
    (`{name: blob id}`).
    """
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

            data = (read or desk.git.read_blobs)(sorted(set(todo.values())))
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
    head = desk.git.head()
    return desk.git.ls_tree(head, MEMORY_DIR) if head else {}


def entries_in_worktree(desk: DeskFolder, invalid: list[Finding] | None = None,
                        blobs: dict[str, str] | None = None) -> dict[str, IndexEntry]:
    """The memories as they are on disk now (hand edits included); `invalid` and `blobs` as in
    load_entries.

    Symlinks are not followed: a memory is a regular file in memory/. A file whose size and
    mtime are those it had when last read is not read again (its blob id is kept in the cache);
    one modified within 3 s of being read is read again next time, as git does for its index.
    """
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
