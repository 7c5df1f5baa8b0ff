"""Reading other tools' files tolerantly (python-frontmatter: YAML, TOML or JSON frontmatter, or
none), with limits: a size budget per source, and YAML aliases capped at MAX_ALIAS_NODES (a
600-byte "billion laughs" note must not expand to gigabytes). desk's own files stay strict."""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from desk.errors import UsageError

MAX_FOREIGN_BYTES = 1024 * 1024  # one note; a memory file itself is limited to 64 KiB by the rules
MIB = 1024 * 1024
SOURCE_LIMIT_MIB = 256  # all of a source's files together (docs/import-export.md, Limits)
SOURCE_LIMIT_ENV = "DESK_IMPORT_MAX_MIB"
MAX_ALIAS_NODES = 10_000  # nodes that YAML aliases may add to a note's metadata, once expanded
_HINT = "fix or remove that file and run the import again; nothing was written"


@dataclass(frozen=True)
class ForeignNote:
    """A foreign Markdown file: its metadata (plain JSON-like values) and body."""

    rel: str
    meta: dict[str, Any]
    body: str


def shown_name(path: Path, root: Path | None = None) -> str:
    """`path` (relative to `root`) as valid UTF-8: a file name's byte that is not UTF-8 becomes `\\xNN`."""
    text = (path.relative_to(root) if root is not None else path).as_posix()
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def refuse(where: str, problem: str, hint: str = _HINT) -> UsageError:
    """The error for a malformed source file: `where` is `path` or `path:line`."""
    return UsageError(f"{where}: {problem}", hint=hint)


@dataclass
class SourceBudget:
    """The bytes one import may read from its source, all its files together."""

    limit: int
    used: int = 0


_budget: ContextVar[SourceBudget | None] = ContextVar("desk_import_source_budget", default=None)


def source_limit(limit: int | None = None) -> int:
    """The import limit in bytes: `limit`, else $DESK_IMPORT_MAX_MIB mebibytes, else 256 MiB."""
    if limit is not None:
        if limit < 1:
            raise UsageError(f"the import limit must be a positive number of bytes, not {limit}")
        return limit
    value = os.environ.get(SOURCE_LIMIT_ENV, "").strip()
    if not value:
        return SOURCE_LIMIT_MIB * MIB
    if not value.isdigit() or int(value) < 1:
        raise UsageError(f"${SOURCE_LIMIT_ENV} must be a whole number of MiB, not {value!r}",
                         hint=f"e.g. {SOURCE_LIMIT_ENV}=1024 for 1 GiB; unset it for the default, {SOURCE_LIMIT_MIB}")
    return int(value) * MIB


@contextmanager
def reading_source(limit: int) -> Iterator[SourceBudget]:
    """While a reader reads one source: every `read_text` in it draws on one budget of `limit` bytes."""
    budget = SourceBudget(limit)
    token = _budget.set(budget)
    try:
        yield budget
    finally:
        _budget.reset(token)


def read_bytes(path: Path, rel: str, limit: int | None = MAX_FOREIGN_BYTES) -> bytes:
    """The bytes of the regular file `path` (never through a link), refused before it is read past
    `limit` (None: none of its own) or the rest of the import's budget (`reading_source`)."""
    budget = _budget.get() or SourceBudget(source_limit())
    if path.is_symlink():
        raise refuse(rel, "not a regular file (symlinks are not followed)")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise refuse(rel, f"cannot be read ({exc.strerror})") from None
    with open(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # a FIFO, a device, a folder: opened without blocking
            raise refuse(rel, "not a regular file (symlinks are not followed)")
        own = limit if limit is not None else budget.limit
        room = min(own, budget.limit - budget.used)
        if info.st_size > room:
            raise _too_big(rel, info.st_size, own, budget)
        data = handle.read(room + 1)
    if len(data) > room:
        raise _too_big(rel, len(data), own, budget)
    budget.used += len(data)
    return data


def _too_big(rel: str, size: int, own: int, budget: SourceBudget) -> UsageError:
    if size > own and own < budget.limit:
        return refuse(rel, f"{size} bytes; the limit for one file is {own}")
    return refuse(rel, f"the source passes the import limit of {budget.limit // MIB} MiB at this file "
                       f"({size} bytes, after {budget.used} bytes of the source's other files)",
                  hint=f"import a smaller part of it, or raise the limit: desk import --max-mib N, "
                       f"or ${SOURCE_LIMIT_ENV}=N; nothing was written")


def read_text(path: Path, rel: str, limit: int | None = MAX_FOREIGN_BYTES) -> str:
    """The file as text: UTF-8 (a BOM dropped), CRLF as LF; refused when too big (`read_bytes`)
    or not UTF-8."""
    data = read_bytes(path, rel, limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise refuse(f"{rel}:{line}", f"not UTF-8 text (byte {data[exc.start]:#04x})") from None
    if "\x00" in text:
        raise refuse(f"{rel}:{text.count(chr(10), 0, text.index(chr(0))) + 1}", "contains a NUL byte")
    return text.removeprefix("\ufeff").replace("\r\n", "\n")


def read_note(path: Path, rel: str) -> ForeignNote:
    """A foreign Markdown note with YAML/TOML/JSON frontmatter, or none."""
    import frontmatter
    from frontmatter.default_handlers import YAMLHandler
    import yaml

    text = read_text(path, rel)
    lines = text.split("\n")
    opener = lines[0].strip() if lines else ""
    if opener in ("---", "+++") and not any(line.strip() == opener for line in lines[1:]):
        raise refuse(f"{rel}:1", f"the frontmatter opened by `{opener}` is never closed")
    if opener == "+++":  # TOML: python-frontmatter needs the `toml` package; tomllib is in Python
        return _toml_note(text, rel)
    stripped = text.strip()  # what python-frontmatter looks at
    handler = frontmatter.detect_format(stripped, frontmatter.handlers)
    if isinstance(handler, YAMLHandler):
        handler = _capped_yaml()
    try:
        meta, body = frontmatter.parse(text, handler=handler)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        # The YAML text starts on the opening `---` line, after the blank lines before it and
        # those the opener's pattern (`^-{3,}\s*$`) swallows; its line 0 is the rest of that line.
        opening = YAMLHandler.FM_BOUNDARY.match(stripped)
        first = text[:len(text) - len(text.lstrip())].count("\n") + 1 + (opening.group().count("\n") if opening else 0)
        line = first + mark.line if mark is not None else 1
        raise refuse(f"{rel}:{line}", f"frontmatter is not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    except (ValueError, TypeError) as exc:  # JSON or TOML frontmatter that does not parse
        raise refuse(f"{rel}:1", f"frontmatter does not parse ({exc})") from None
    except RecursionError:
        raise refuse(f"{rel}:1", "frontmatter nests too deeply") from None
    if opener in ("---", "+++") and not meta:
        block = text.split("\n", 1)[1].split(f"\n{opener}", 1)[0] if "\n" in text else ""
        if block.strip():
            raise refuse(f"{rel}:2", "frontmatter is not a mapping of keys to values")
    if not isinstance(meta, dict):
        raise refuse(f"{rel}:1", "frontmatter is not a mapping of keys to values")
    return ForeignNote(rel, {str(k): _plain(v) for k, v in meta.items()}, body)


@lru_cache(maxsize=1)
def _capped_yaml() -> Any:
    """python-frontmatter's YAML handler, its SafeLoader capped by _check_aliases."""
    import yaml
    from frontmatter.default_handlers import YAMLHandler

    class CappedLoader(yaml.SafeLoader):
        def get_single_node(self) -> Any:
            node = super().get_single_node()
            if node is not None:
                _check_aliases(node)
            return node

    class CappedYAML(YAMLHandler):
        def load(self, fm: str, **kwargs: object) -> Any:
            return yaml.load(fm, Loader=CappedLoader)  # noqa: S506 (a SafeLoader)

    return CappedYAML()


def _check_aliases(root: Any) -> None:
    """Refuse a YAML node graph that aliases expand past MAX_ALIAS_NODES extra nodes, or that contains
    itself (`&a [*a]`); each distinct node is measured once."""
    from yaml.composer import ComposerError

    sizes: dict[int, int] = {}
    inside: set[int] = set()

    def size(node: Any) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in inside:
            raise ComposerError(None, None, "an alias refers to the node that contains it",
                                node.start_mark)
        inside.add(key)
        total = 1
        if isinstance(node.value, list):
            for item in node.value:
                for child in item if isinstance(item, tuple) else (item,):
                    total += size(child)
        inside.discard(key)
        sizes[key] = total
        if total - len(sizes) > MAX_ALIAS_NODES:
            raise ComposerError(None, None, f"its aliases expand it past {MAX_ALIAS_NODES} extra "
                                "values (a YAML alias bomb?)", node.start_mark)
        return total

    size(root)


def _toml_note(text: str, rel: str) -> ForeignNote:
    import tomllib

    block, body = text.split("\n", 1)[1].split("\n+++", 1)
    try:
        meta = tomllib.loads(block)
    except tomllib.TOMLDecodeError as exc:
        raise refuse(f"{rel}:2", f"frontmatter is not valid TOML ({exc})") from None
    return ForeignNote(rel, {str(k): _plain(v) for k, v in meta.items()}, body.split("\n", 1)[-1].strip())


def _plain(value: Any) -> Any:
    """YAML's dates and times as ISO strings, so later code sees strings, numbers, lists."""
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def json_line(line: str, where: str) -> Any:
    """One line of a JSONL file; malformed or too deeply nested JSON is refused naming `where`."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise refuse(where, f"not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise refuse(where, "JSON nested too deeply") from None


def read_json(path: Path, rel: str, limit: int | None = None) -> Any:
    """A JSON document; malformed JSON is refused naming the line and column."""
    text = read_text(path, rel, limit)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise refuse(f"{rel}:{exc.lineno}", f"not valid JSON ({exc.msg}, column {exc.colno})") from None
    except RecursionError:
        raise refuse(rel, "JSON nested too deeply") from None
