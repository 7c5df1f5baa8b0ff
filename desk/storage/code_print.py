"""A fingerprint of the code that builds a derived cache, taken from its real import graph.

`code_print(modules, memo)` hashes the source of every desk module `modules` import (directly or
not, at module level or in a function; never under `if TYPE_CHECKING:`), their packages, the
outside libraries' installs and the Python version. The graph is read from the ASTs, never a
hand list. `<memo>/code-prints.json` keeps each file's imports and hash under its stat, so a cold
command stats the sources instead of parsing them (a file changed in the last seconds is parsed
again next time: git's racy rule)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parents[1]  # the desk package these modules are read from
MEMO_FILE = "code-prints.json"
_FORMAT = 1  # of the memo's rows
_RACY_NS = 3_000_000_000
_OUTSIDE: dict[str, str] = {}  # an outside library's stamp, per process
Row = list[Any]  # [size, mtime_ns, ctime_ns, sha1 of the source, [imported modules]]


def code_print(modules: Iterable[str], memo: Path | None = None, package: Path = PACKAGE) -> str:
    """The fingerprint of `modules` (`desk.x.y` names) and everything they import (see above);
    `memo`: the folder whose `code-prints.json` keeps the parsed files (None: parse them all)."""
    found, outside = import_graph(modules, memo, package)
    digest = hashlib.sha1(f"code print {_FORMAT} {sys.version}".encode())
    for name in sorted(found):
        digest.update(f"\0{name} {found[name]}".encode())
    for library in sorted(outside):
        digest.update(f"\0{library} {_library_stamp(library)}".encode())
    return digest.hexdigest()


def import_graph(modules: Iterable[str], memo: Path | None = None,
                 package: Path = PACKAGE) -> tuple[dict[str, str], set[str]]:
    """Every desk module `modules` load when they run, with its source's hash ("missing" when it
    has none), and the outside libraries (top-level names) they import."""
    rows = _Memo(memo, package)
    found: dict[str, str] = {}
    outside: set[str] = set()
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        row = rows.row(name)
        found[name] = row[3] if row is not None else "missing"
        parts = name.split(".")
        todo.extend(".".join(parts[:end]) for end in range(1, len(parts)))  # its packages run first
        for imported in row[4] if row is not None else ():
            if imported.split(".")[0] == package.name:
                todo.append(imported)
            else:
                outside.add(imported)
    rows.save()
    return found, outside


def module_path(name: str, package: Path = PACKAGE) -> tuple[str, os.stat_result] | None:
    """The source file of desk module `name` (module or package `__init__.py`) and its stat, or None."""
    parts = name.split(".")
    if parts[0] != package.name:
        return None
    base = os.path.join(package, *parts[1:])
    for path in [f"{base}.py"] * (len(parts) > 1) + [os.path.join(base, "__init__.py")]:
        with contextlib.suppress(OSError):
            return path, os.stat(path)
    return None


class _Memo:
    """The rows of `<folder>/code-prints.json`, read on first use and written back when one changed."""

    def __init__(self, folder: Path | None, package: Path) -> None:
        self.path = folder / MEMO_FILE if folder is not None else None
        self.package = package
        self.rows: dict[str, Row] = {}
        self.changed = False
        if self.path is not None:
            try:
                data = json.loads(self.path.read_bytes())
                if data.get("format") == _FORMAT and isinstance(data.get("files"), dict):
                    self.rows = data["files"]
            except (OSError, ValueError, AttributeError):
                pass  # no memo, or one cut short: parsed again

    def row(self, name: str) -> Row | None:
        """What module `name`'s source imports and its hash; None when it has none."""
        found = module_path(name, self.package)
        if found is None:
            return None
        key, st = found
        row = self.rows.get(key)
        if isinstance(row, list) and len(row) == 5 and row[:3] == [st.st_size, st.st_mtime_ns, st.st_ctime_ns]:
            return row
        try:
            with open(key, "rb") as file:
                source = file.read()
            imports = sorted(_imports(source, self.package))
        except (OSError, SyntaxError, ValueError):
            return None
        row = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, hashlib.sha1(source).hexdigest(), imports]
        if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) >= _RACY_NS:
            self.rows[key] = row
            self.changed = True
        return row

    def save(self) -> None:
        if self.changed and self.path is not None:
            from desk.storage.atomic import write_derived

            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError:
                return  # a desk this process cannot write: parsed again next time
            write_derived(self.path, json.dumps({"format": _FORMAT, "files": self.rows}).encode())
            self.changed = False


def _imports(source: bytes, package: Path) -> set[str]:
    """The desk modules and the outside libraries (top-level names) `source` imports when it runs."""
    import ast  # only when a source is new or changed: a memo hit never parses

    names: set[str] = set()
    stack: list[ast.AST] = [ast.parse(source)]
    while stack:
        node = stack.pop()
        test = node.test if isinstance(node, ast.If) else None  # `TYPE_CHECKING`, `typing.TYPE_CHECKING`
        if isinstance(node, ast.If) and getattr(test, "id", getattr(test, "attr", None)) == "TYPE_CHECKING":
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        stack.extend(ast.iter_child_nodes(node))
    found = set()
    for name in names:
        top = name.split(".")[0]
        if top == package.name:
            if module_path(name, package) is not None:
                found.add(name)
        elif top not in sys.stdlib_module_names and top != "__future__":
            found.add(top)
    return found


def _library_stamp(name: str) -> str:
    """Where outside library `name` is installed and its `__init__`'s size and mtime."""
    if name not in _OUTSIDE:
        from importlib.util import find_spec

        try:
            spec = find_spec(name)
            origin = spec.origin if spec is not None else None
            st = os.stat(origin) if origin else None
            _OUTSIDE[name] = f"{origin} {st.st_size} {st.st_mtime_ns}" if st else f"{origin}"
        except (ImportError, ValueError, OSError):
            _OUTSIDE[name] = "absent"
    return _OUTSIDE[name]
