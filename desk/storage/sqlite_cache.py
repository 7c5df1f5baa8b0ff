"""Derived caches under `.system/cache/`: SQLite files that are rebuilt, never trusted, when broken."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path


def open_cache(path: Path, schema: str, *, wal: bool = False,
               check: Callable[[sqlite3.Connection], None] | None = None) -> sqlite3.Connection:
    """Open (creating) the cache at `path` with `schema` applied, in autocommit mode.

    A file SQLite cannot read, or that `check` rejects by raising sqlite3.DatabaseError (an old
    schema), is deleted and made anew: it is derived data, so losing it costs only a rebuild.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return _open(path, schema, wal, check)
    except sqlite3.DatabaseError:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        return _open(path, schema, wal, check)


def _open(path: Path, schema: str, wal: bool,
          check: Callable[[sqlite3.Connection], None] | None) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=60, isolation_level=None)
    try:
        if wal:
            db.execute("PRAGMA journal_mode=WAL")
        db.executescript(schema)
        if check is not None:
            check(db)
    except sqlite3.DatabaseError:
        db.close()
        raise
    return db
