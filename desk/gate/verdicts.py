"""The gate's memory: verdicts cached by blob id, and the history check's findings by commit id.

A row is keyed by what a `FileVerdict` is a function of: `(rules, path, mode, blob, old)`, where
`rules` hashes the code fingerprint and the desk id; the allow-list and the clock apply when it is
read. `desk doctor`'s look for temporary files keeps, per empty folder, its inode, mtime and
subfolders. Derived data: when SQLite fails, the rules simply run."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from desk.errors import Finding
from desk.gate.rules import FileVerdict
from desk.storage.git import sha1_hex
from desk.storage.derived import registered
from desk.storage.sqlite_cache import open_cache

CACHE_FILE = "verdicts.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    rules TEXT NOT NULL, path TEXT NOT NULL, mode TEXT NOT NULL, blob TEXT NOT NULL,
    old TEXT NOT NULL, findings TEXT, name TEXT, line TEXT, keyed INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (rules, path, mode, blob, old)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS states (
    rules TEXT NOT NULL, state TEXT NOT NULL, checked INTEGER NOT NULL, findings TEXT,
    PRIMARY KEY (rules, state)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS folders (
    path TEXT PRIMARY KEY, ino INTEGER NOT NULL, mtime INTEGER NOT NULL, subdirs TEXT NOT NULL
    ) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS commits (
    rules TEXT NOT NULL, sha TEXT NOT NULL, subject TEXT NOT NULL, findings TEXT,
    PRIMARY KEY (rules, sha)) WITHOUT ROWID;
"""

FileKey = tuple[str, str, str, str]  # path, mode, blob id, blob id of the content it replaces ("")


@lru_cache(maxsize=4)
def rules_version(folder: Path | None = None) -> str:
    """The code version of every verdict (desk.storage.derived's fingerprint of this cache);
    `folder`: the cache folder that keeps the fingerprint's parsed sources."""
    return registered(CACHE_FILE).fingerprint(folder.parent if folder is not None else None)


def _encode(verdict: FileVerdict) -> str | None:
    if not verdict.findings:
        return None
    return json.dumps([[*f, c] for f, c in zip(verdict.findings, verdict.conditions)],
                      ensure_ascii=False)


def _decode(findings: str | None, entry: tuple[str, str] | None = None, keyed: bool = False) -> FileVerdict:
    if findings is None:
        return FileVerdict((), (), entry, keyed)
    rows = json.loads(findings)
    return FileVerdict(tuple(Finding(*row[:-1]) for row in rows), tuple(row[-1] for row in rows), entry, keyed)


class VerdictCache:
    """The verdicts of one desk under one rules version and desk id; `computed` and `reused`
    count the verdicts the caller ran the rules for and the ones it found here."""

    def __init__(self, folder: Path, desk_id: str) -> None:
        self.path = folder / CACHE_FILE
        version = rules_version(folder)
        self.rules = (sha1_hex(f"{version}\0{desk_id}".encode())
                      if version else None)
        self._db: sqlite3.Connection | None = None
        self.computed = 0
        self.reused = 0

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is None and self.rules is not None:
            try:
                self._db = open_cache(self.path, _SCHEMA, wal=True)
                self._db.execute("PRAGMA synchronous=NORMAL")  # derived: losing the last rows is fine
            except (sqlite3.Error, OSError):
                self.rules = None  # no cache this time: the rules just run
        return self._db

    def _query(self, sql: str, args: Iterable[object]) -> list[tuple[Any, ...]]:
        db = self._connect()
        if db is None:
            return []
        try:
            return db.execute(sql, tuple(args)).fetchall()
        except sqlite3.Error:
            return []

    def _write(self, sql: str, rows: list[tuple[object, ...]], *, clear: str | None = None) -> None:
        """`sql` for each of `rows`, in one transaction; `clear`: a table emptied first (the rows
        replace what it held, none leaves it empty)."""
        db = self._connect()
        if db is None or not (rows or clear):
            return
        try:
            db.execute("BEGIN")
            if clear is not None:
                db.execute(f"DELETE FROM {clear}")
            db.executemany(sql, rows)
            db.execute("COMMIT")
        except sqlite3.Error:
            if db.in_transaction:
                db.rollback()

    # -- per-file verdicts ------------------------------------------------------------------

    def files(self, keys: Iterable[FileKey]) -> dict[FileKey, FileVerdict]:
        """The cached verdicts among `keys` (a few: one lookup each)."""
        found = {}
        for key in keys:
            rows = self._query("SELECT findings, name, line, keyed FROM files WHERE rules = ? AND path = ? "
                               "AND mode = ? AND blob = ? AND old = ?", (self.rules, *key))
            for findings, name, line, keyed in rows:
                verdict = self._row(findings, name, line, keyed)
                if verdict is not None:
                    found[key] = verdict
        return found

    def all_files(self) -> dict[FileKey, FileVerdict]:
        """Every cached verdict of this rules version (the whole desk: one pass over the table)."""
        found = {}
        for path, mode, blob, old, findings, name, line, keyed in self._query(
                "SELECT path, mode, blob, old, findings, name, line, keyed FROM files WHERE rules = ?",
                (self.rules,)):
            verdict = self._row(findings, name, line, keyed)
            if verdict is not None:
                found[(path or "", mode or "", blob or "", old or "")] = verdict
        return found

    @staticmethod
    def _row(findings: str | None, name: str | None, line: str | None, keyed: object = 0
             ) -> FileVerdict | None:
        try:
            return _decode(findings, (name, line) if name is not None and line is not None else None,
                           keyed == 1)
        except (ValueError, TypeError, IndexError):
            return None  # a damaged row is a miss

    def put_files(self, verdicts: Mapping[FileKey, FileVerdict]) -> None:
        self._write("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(self.rules, *key, _encode(v), *(v.entry or (None, None)), int(v.keyed))
                     for key, v in verdicts.items()])

    def forget_files(self, keys: Iterable[FileKey], *, others: bool = True) -> None:
        """Drop `keys` (verdicts on content the desk no longer holds) and, with `others`, every
        other version's rows (a look through the whole table)."""
        self._write("DELETE FROM files WHERE rules = ? AND path = ? AND mode = ? AND blob = ? "
                    "AND old = ?", [(self.rules, *key) for key in keys])
        if others and self._query("SELECT 1 FROM files WHERE rules != ? LIMIT 1", (self.rules,)):
            self._write("DELETE FROM files WHERE rules != ?", [(self.rules,)])
            self._write("DELETE FROM commits WHERE rules != ?", [(self.rules,)])

    # -- the whole desk -----------------------------------------------------------------------

    def state(self, state: str) -> tuple[int, FileVerdict] | None:
        """What `validate --all` found (files checked, every finding) in the desk state `state`."""
        for checked, findings in self._query("SELECT checked, findings FROM states WHERE rules = ? "
                                             "AND state = ?", (self.rules, f"states:{state}")):
            verdict = self._row(findings, None, None)
            if isinstance(checked, int) and verdict is not None:
                return checked, verdict
        return None

    def put_state(self, state: str, checked: int, verdict: FileVerdict) -> None:
        """Remember the findings of one state of the desk (only the latest is kept)."""
        self._write("INSERT INTO states VALUES (?, ?, ?, ?)",
                    [(self.rules, f"states:{state}", checked, _encode(verdict))], clear="states")

    # -- what the history rules found in a commit -------------------------------------------

    def commits(self, shas: list[str]) -> dict[str, tuple[str, FileVerdict]]:
        """`{commit: (subject, verdict)}` for those of `shas` the cache has."""
        found = {}
        for start in range(0, len(shas), 500):
            chunk = shas[start:start + 500]
            for sha, subject, findings in self._query(
                    f"SELECT sha, subject, findings FROM commits WHERE rules = ? AND sha IN "
                    f"({','.join('?' * len(chunk))})", (self.rules, *chunk)):
                verdict = self._row(findings, None, None)
                if sha is not None and subject is not None and verdict is not None:
                    found[sha] = (subject, verdict)
        return found

    def put_commits(self, verdicts: Mapping[str, tuple[str, FileVerdict]]) -> None:
        self._write("INSERT OR REPLACE INTO commits VALUES (?, ?, ?, ?)",
                    [(self.rules, sha, subject, _encode(v)) for sha, (subject, v) in verdicts.items()])

    # -- folders without temporary files (desk doctor) ---------------------------------------

    def folders(self) -> dict[str, tuple[int, int, list[str]]]:
        """`{folder: (inode, mtime in ns, subfolders)}` as the last look found them."""
        found = {}
        for path, ino, mtime, subdirs in self._query("SELECT path, ino, mtime, subdirs FROM folders", ()):
            try:
                names = json.loads(subdirs)
            except (ValueError, TypeError):
                continue
            if isinstance(ino, int) and isinstance(mtime, int) and isinstance(names, list):
                found[str(path)] = (ino, mtime, [str(n) for n in names])
        return found

    def put_folders(self, folders: Mapping[str, tuple[int, int, list[str]]]) -> None:
        """Replace the looks kept with `folders`."""
        self._write("INSERT INTO folders VALUES (?, ?, ?, ?)",
                    [(path, ino, mtime, json.dumps(subdirs, ensure_ascii=False))
                     for path, (ino, mtime, subdirs) in folders.items()], clear="folders")

    def close(self) -> None:
        if self._db is not None:
            if _LEFT_OPEN is not None:
                _LEFT_OPEN.append(self._db)  # see leave_open_at_exit
            else:
                self._db.close()
            self._db = None


_LEFT_OPEN: list[sqlite3.Connection] | None = None


def leave_open_at_exit() -> None:
    """From now on `VerdictCache.close` leaves the connection open, for a process that ends with
    `os._exit` (the hooks): closing would checkpoint the WAL, with its fsyncs, on every commit."""
    global _LEFT_OPEN
    if _LEFT_OPEN is None:
        _LEFT_OPEN = []
