"""Which files a refresh of the search cache reads again: git narrows the look (HEAD's trees against
the ones the cache last saw, the files that differ from HEAD), and each candidate's stat decides."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from desk.errors import DeskError
from desk.layout import ARCHIVE_DIR, MEMORY_DIR, PROJECTS_DIR, DeskFolder, project_problem

RACY_NS = 3_000_000_000  # a file modified this close to its stat is re-hashed next time (git's racy rule)


def archive_changes(desk: DeskFolder, db: sqlite3.Connection, tree: str | None) -> tuple[dict[str, Any], str | None]:
    """The archive files whose stat (size, mtime_ns, ctime_ns, inode) differs from what the
    cache stored, and those whose blob at HEAD changed since the last refresh (`diff-tree`
    between the archive trees; every file when the old tree is gone). Their consumed prefix
    is checked by desk.recall.search_writer. Also returns the tree the cache last saw."""
    row = db.execute("SELECT value FROM meta WHERE key='arch_tree'").fetchone()
    seen = str(row[0]) if row and row[0] else None
    known = {p: (s, m, c, i) for p, s, m, c, i in db.execute(
        "SELECT path, size, mtime, ctime, inode FROM archfiles")}
    forced: set[str] | None = set()
    if tree != seen and known:
        try:
            moved = desk.git.worktree.diff_tree(seen, tree) if seen and tree else None
        except DeskError:
            moved = None  # the old tree is gone (gc after a rewrite): check every file
        forced = None if moved is None else {f"{ARCHIVE_DIR}/{c.path}" for c in moved}
    arch: dict[str, Any] = {}
    for path, st in _scan(desk.path(ARCHIVE_DIR), ".jsonl", ARCHIVE_DIR):
        stamp = known.pop(path, None)
        if stamp != _stamp(st) or forced is None or path in forced:
            arch[path] = st
    arch.update(dict.fromkeys(known))
    return arch, seen

def project_changes(desk: DeskFolder, db: sqlite3.Connection) -> dict[str, Any]:
    """The project memory files to read again (docs/scopes.md): projects are small, so every
    `projects/<name>/memory/*.md` is stat'ed."""
    return _changed(desk, db, "LIKE", [f"{PROJECTS_DIR}/{p}/{MEMORY_DIR}" for p in _projects(desk)])


def _changed(desk: DeskFolder, db: sqlite3.Connection, like: str, folders: list[str]) -> dict[str, Any]:
    """The memory files in `folders` whose size or mtime is not the stored one, and the stored
    ones (`path [NOT] LIKE projects/%`) that are gone (None)."""
    known = {p: (s, m) for p, s, m in db.execute(
        f"SELECT path, size, mtime FROM memfiles WHERE path {like} ?", (f"{PROJECTS_DIR}/%",))}
    mem: dict[str, Any] = {}
    for folder in folders:
        for path, st in _scan(desk.path(folder), ".md", folder):
            if known.pop(path, None) != (st.st_size, st.st_mtime_ns):
                mem[path] = st
    return {**mem, **dict.fromkeys(known)}

def memory_changes(desk: DeskFolder, db: sqlite3.Connection, tree: str | None,
                   dirty: list[str] | None) -> tuple[dict[str, Any], tuple[str | None, list[str]]]:
    """The memory files to read again ({path: stat or None when removed}), and the (tree, dirty
    files) the cache last saw. Only the files git names (`diff-tree` of the two trees, the files
    dirty now or then) are stat'ed; every file is when the cache saw no tree or it is gone."""
    git = desk.git
    meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('mem_tree', 'mem_dirty')"))
    seen = (meta.get("mem_tree") or None, json.loads(meta.get("mem_dirty") or "[]"))
    candidates: set[str] | None = None
    if tree is not None and dirty is not None and meta.get("mem_tree"):
        candidates = {*dirty, *json.loads(meta.get("mem_dirty") or "[]")}
        if meta["mem_tree"] != tree:
            try:
                moved = git.worktree.diff_tree(str(meta["mem_tree"]), tree)
            except DeskError:
                moved = None  # the old tree is gone (gc after a rewrite): look at everything
            candidates = None if moved is None else candidates | {f"{MEMORY_DIR}/{c.path}" for c in moved}
    if candidates is None:
        return _changed(desk, db, "NOT LIKE", [MEMORY_DIR]), seen
    wanted = sorted(p for p in candidates if _memory_path(p))
    known = {p: (s, m) for p, s, m in select_in(db, "SELECT path, size, mtime FROM memfiles WHERE path IN ({})", wanted)}
    mem: dict[str, Any] = {}
    for path in wanted:
        found = regular_file(desk.path(path))
        if found is None:
            if path in known:
                mem[path] = None
        elif known.get(path) != (found.st_size, found.st_mtime_ns):
            mem[path] = found
    return mem, seen


def select_in(db: sqlite3.Connection, sql: str, keys: list[Any]) -> list[Any]:
    """The rows of `sql` whose `IN ({})` names each of `keys`, asked 500 at a time."""
    return [row for start in range(0, len(keys), 500)
            for row in db.execute(sql.format(",".join("?" * len(keys[start:start + 500]))), keys[start:start + 500])]


def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    """An archive file's stat as compared: the ctime moves even when a person puts the mtime back."""
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


def regular_file(path: Path) -> os.stat_result | None:
    """`path`'s stat when it is a regular file (a symlink is never followed), else None."""
    try:
        found = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return found if stat.S_ISREG(found.st_mode) else None


def _memory_path(path: str) -> bool:
    """A memory file's path as `_scan` finds them: `memory/<name>.md`, no deeper."""
    return path.startswith(f"{MEMORY_DIR}/") and path.endswith(".md") and "/" not in path[len(MEMORY_DIR) + 1:]


def _projects(desk: DeskFolder) -> list[str]:
    """The project folders whose memories recall indexes (valid names only)."""
    folder = desk.path(PROJECTS_DIR)
    if not folder.is_dir():
        return []
    return sorted(n for n in os.listdir(folder) if project_problem(n) is None)


def _scan(folder: Path, suffix: str, prefix: str) -> Iterable[tuple[str, os.stat_result]]:
    if not folder.is_dir():
        return
    with os.scandir(folder) as it:
        for item in it:
            if item.name.endswith(suffix) and item.is_file(follow_symlinks=False):
                yield f"{prefix}/{item.name}", item.stat(follow_symlinks=False)

