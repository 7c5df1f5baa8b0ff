"""Parsed files `desk context` shows, kept by their bytes (issue 17).

A cold `desk context` parsed the YAML frontmatter of USER.md (the user sections) and of every
memory it injects; importing PyYAML alone is a large part of a run that must stay near `desk --help`. So
the answers are kept in `.git/desk-cache/context.sqlite` (table `parsed_v1`; derived, never committed
like the kept view of memory/ beside it), keyed by a hash of

- what was parsed: the file's bytes, and whatever else the answer depends on (the scope and desk
  id a USER.md is checked against, a memory's path and name);
- and the code that parses and renders it (the sections that call this module, what they import,
  PyYAML's install) is the cache's fingerprint (desk.storage.derived), known from the files' stat
  without importing them: another desk or PyYAML version makes its own answers.

Same bytes and same code, same answer: a hit is exactly what parsing gives. Only answers that
parsed are kept; a file that does not is parsed (and reported) every time, as before.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from typing import Any

from desk.layout import DeskFolder
from desk.storage.sqlite_cache import open_cache

_CACHE_FILE = "context.sqlite"
_TABLE = "parsed_v1"


class ParsedCache:
    """The parsed answers of one desk; opened on first use, closed by `close`."""

    def __init__(self, desk: DeskFolder) -> None:
        self.desk = desk
        self._db: sqlite3.Connection | None = None
        self._opened = False

    def get(self, kind: str, data: bytes, *extra: str) -> Any | None:
        db = self._open()
        if db is None:
            return None
        try:
            row = db.execute(f"SELECT value FROM {_TABLE} WHERE key = ?", (_key(kind, data, extra),)).fetchone()
        except sqlite3.Error:
            return None
        return json.loads(row[0]) if row is not None else None

    def put(self, kind: str, data: bytes, extra: tuple[str, ...], value: Any) -> None:
        """Keep `value` (JSON); a failure to write only costs the next run a parse."""
        db = self._open()
        if db is None:
            return
        try:
            db.execute(f"INSERT OR REPLACE INTO {_TABLE} VALUES (?, ?)", (_key(kind, data, extra), json.dumps(value)))
        except (sqlite3.Error, UnicodeError):
            pass

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _open(self) -> sqlite3.Connection | None:
        if not self._opened:
            self._opened = True
            try:
                self._db = open_cache(self.desk.cache_dir / _CACHE_FILE,
                                      f"CREATE TABLE IF NOT EXISTS {_TABLE} (key TEXT PRIMARY KEY, value TEXT)")
            except (OSError, sqlite3.Error):
                self._db = None  # a read-only desk: parsed every time
        return self._db


def _key(kind: str, data: bytes, extra: tuple[str, ...]) -> str:
    digest = hashlib.sha1()
    digest.update("\0".join((kind, *extra)).encode("utf-8", "surrogateescape") + b"\0")
    digest.update(data)
    return digest.hexdigest()

