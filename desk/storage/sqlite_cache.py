"""Derived caches under `.git/desk-cache/`: SQLite files that are rebuilt, never trusted, when broken
or made by other code (desk.storage.derived)."""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from desk.storage.atomic import nearly_full

_SIDE_FILES = ("", "-wal", "-shm")  # the cache and the files SQLite keeps beside it in WAL mode


def open_cache(path: Path, schema: str, *, wal: bool = False,
               check: Callable[[sqlite3.Connection], None] | None = None) -> sqlite3.Connection:
    """Open (creating) the cache at `path` with `schema` applied, in autocommit mode.

    A file SQLite cannot read, or that `check` rejects (sqlite3.DatabaseError), is made anew; a
    registered cache made by code with another fingerprint is emptied first. One desk may not write,
    or where a symlink stands for its folder or a file (SQLite would follow it), is made in memory."""
    if not _writable(path):
        return _open(":memory:", schema, False, check)
    try:
        return _open(path, schema, wal, check)
    except sqlite3.DatabaseError:
        try:
            for suffix in _SIDE_FILES:
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        except OSError:  # a broken cache desk may not replace: do without it
            return _open(":memory:", schema, False, check)
        return _open(path, schema, wal, check)


def _writable(path: Path) -> bool:
    """Whether SQLite can keep a cache at `path`: its folder and existing files writable, none a link."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    if not os.access(path.parent, os.W_OK) or os.path.islink(path.parent):
        return False
    for suffix in _SIDE_FILES:
        side = f"{path}{suffix}"
        if os.path.islink(side) or not os.access(side, os.W_OK) and os.path.lexists(side):
            return False
    return True


class _CacheConnection(sqlite3.Connection):
    """A cache's connection on which SQLite's "disk full" and "disk I/O error" are the OSError they are
    (ENOSPC or EIO, naming the cache file)."""

    cache_path = ""

    def execute(self, *args: Any) -> sqlite3.Cursor:
        return self._run(super().execute, args)

    def executemany(self, *args: Any) -> sqlite3.Cursor:
        return self._run(super().executemany, args)

    def executescript(self, *args: Any) -> sqlite3.Cursor:
        return self._run(super().executescript, args)

    def _run(self, method: Callable[..., sqlite3.Cursor], args: tuple[Any, ...]) -> sqlite3.Cursor:
        try:
            return method(*args)
        except sqlite3.OperationalError as exc:
            raise _disk_full(exc, self.cache_path) from exc


def _disk_full(exc: sqlite3.OperationalError, path: str) -> Exception:
    """The OSError SQLite's error stands for: SQLITE_FULL, or SQLITE_IOERR on a (nearly) full disk (a
    short write to its journal), is ENOSPC; other SQLITE_IOERR is EIO."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code == sqlite3.SQLITE_FULL or code == sqlite3.SQLITE_IOERR and nearly_full(os.path.dirname(path) or "."):
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
    if code == sqlite3.SQLITE_IOERR:
        return OSError(errno.EIO, f"{os.strerror(errno.EIO)} ({exc})", path)
    return exc


def rollback(db: sqlite3.Connection) -> None:
    """Roll back the open transaction unless SQLite ended it already (it does on a full disk)."""
    if db.in_transaction:
        db.execute("ROLLBACK")


def _same_code(db: sqlite3.Connection, path: Path) -> None:
    """Empty the cache at `path` unless its recorded fingerprint is the running code's; record it."""
    from desk.storage.derived import registered

    try:
        code = registered(path.name).fingerprint(path.parent.parent)
    except KeyError:
        return  # not a registered cache (a test's)
    try:
        if db.execute("SELECT code FROM desk_code").fetchone() == (code,):
            return
    except sqlite3.OperationalError:
        pass  # no fingerprint yet: made by an older desk, or new
    db.execute("BEGIN IMMEDIATE")
    try:
        tables = db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        for (table,) in tables.fetchall():
            db.execute(f'DROP TABLE "{table}"')
        db.execute("CREATE TABLE desk_code (code TEXT NOT NULL)")
        db.execute("INSERT INTO desk_code VALUES (?)", (code,))
        db.execute("COMMIT")
    except BaseException:
        rollback(db)
        raise


def _open(path: Path | str, schema: str, wal: bool,
          check: Callable[[sqlite3.Connection], None] | None) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=60, isolation_level=None, factory=_CacheConnection)
    db.cache_path = str(path)
    try:
        if wal:
            db.execute("PRAGMA journal_mode=WAL")
        if isinstance(path, Path):
            _same_code(db, path)
        db.executescript(schema)
        if check is not None:
            check(db)
    except (sqlite3.DatabaseError, OSError):
        db.close()
        raise
    return db
