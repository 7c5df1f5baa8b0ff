"""Parsed files `desk context` shows (USER.md, injected memories), kept in `.git/desk-cache/context.sqlite`
(table `parsed_v1`, derived) by a hash of the bytes parsed and whatever else the answer depends on
(the scope, the path): PyYAML is not imported for a file parsed before. Only answers that parsed
are kept; the code that parses is the cache's fingerprint (desk.storage.derived).
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
        try:
            row = db.execute(f"SELECT value FROM {_TABLE} WHERE key = ?", (_key(kind, data, extra),)).fetchone() \
                if db is not None else None
        except sqlite3.Error:
            return None
        return json.loads(row[0]) if row is not None else None

    def put(self, kind: str, data: bytes, extra: tuple[str, ...], value: Any) -> None:
        """Keep `value` (JSON); a failure to write only costs the next run a parse."""
        db = self._open()
        try:
            if db is not None:
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
    return hashlib.sha1("\0".join((kind, *extra, "")).encode("utf-8", "surrogateescape") + data).hexdigest()
