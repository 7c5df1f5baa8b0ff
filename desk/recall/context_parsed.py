"""Parsed files `desk context` shows, kept by their bytes (issue 17).

A cold `desk context` parsed the YAML frontmatter of USER.md (the user sections) and of every
memory it injects; importing PyYAML alone is ~5 ms of a run that must stay near `desk --help`. So
the answers are kept in `.git/desk-cache/context.sqlite` (table `parsed_v1`; derived, never committed
like the kept view of memory/ beside it), keyed by a hash of

- what was parsed: the file's bytes, and whatever else the answer depends on (the scope and desk
  id a USER.md is checked against, a memory's path and name);
- the code that parses and renders it (`_CODE_FILES`: the profile and memory file formats, the
  frontmatter reader, time formatting, these sections) and PyYAML's own version, known by the
  files' stat without importing them (`desk.recall.context_cache.code_fingerprint`), so another
  desk or PyYAML version keeps its own answers.

Same bytes and same code, same answer: a hit is exactly what parsing gives. Only answers that
parsed are kept; a file that does not is parsed (and reported) every time, as before.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

from desk.layout import DeskFolder
from desk.storage.sqlite_cache import open_cache

_CACHE_FILE = "context.sqlite"
_TABLE = "parsed_v1"
_DESK = Path(__file__).resolve().parents[1]
_CODE_FILES = ("formats/scope_files.py", "storage/frontmatter.py", "formats/memory_file.py", "text/times.py",
               "text/escape.py", "recall/context_scopes.py", "recall/context_memories.py", "recall/context_parsed.py")
_CODE_CACHE: list[str] = []


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
    digest.update("\0".join((kind, _code(), *extra)).encode("utf-8", "surrogateescape") + b"\0")
    digest.update(data)
    return digest.hexdigest()


def _code() -> str:
    """A fingerprint of the parsing code and of PyYAML (its `__init__.py`, which names its
    version), from the files' stat (`desk.recall.context_cache.code_fingerprint`): importing
    them is what a hit saves."""
    if not _CODE_CACHE:
        from importlib.util import find_spec

        from desk.recall.context_cache import code_fingerprint

        try:
            spec = find_spec("yaml")
        except (ImportError, ValueError):
            spec = None
        paths = [_DESK / name for name in _CODE_FILES]
        paths.append(Path(spec.origin) if spec is not None and spec.origin else Path("yaml"))
        _CODE_CACHE.append(code_fingerprint(b"parsed v1", paths))
    return _CODE_CACHE[0]
