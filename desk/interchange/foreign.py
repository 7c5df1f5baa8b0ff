"""Reading other tools' files tolerantly: python-frontmatter for their Markdown, limits for all.

desk's own files keep desk's strict framing (`desk.storage.frontmatter`, DESIGN §7): a memory
file that PyYAML or python-frontmatter would quietly reinterpret is refused. Foreign notes are
the opposite case: Obsidian, basic-memory and Letta write YAML, TOML (`+++`) or JSON frontmatter,
or none, and an import should read what is there. python-frontmatter does that, with quirks this
module closes: a BOM hides the frontmatter (stripped first), an unclosed block or a YAML list
comes back as empty metadata (refused, naming the file and line), and YAML errors carry their
line. python-frontmatter is imported here only, when an import runs.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from desk.errors import UsageError

MAX_FOREIGN_BYTES = 1024 * 1024  # one note; a memory file itself is limited to 64 KiB by the rules
MAX_SOURCE_BYTES = 2 * 1024 * 1024 * 1024  # a chat export's conversations.json
_HINT = "fix or remove that file and run the import again; nothing was written"


@dataclass(frozen=True)
class ForeignNote:
    """A foreign Markdown file: its metadata (plain JSON-like values) and body."""

    rel: str
    meta: dict[str, Any]
    body: str


def shown_name(path: Path, root: Path | None = None) -> str:
    """`path` (relative to `root`) as text desk can store: a byte of a file name that is not UTF-8
    (Python hands it over as a lone surrogate, which no UTF-8 writer accepts) becomes `\\xNN`, so an
    `origin:`, a skipped line or a trailer naming the file stays valid UTF-8 and says which byte."""
    text = (path.relative_to(root) if root is not None else path).as_posix()
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def refuse(where: str, problem: str, hint: str = _HINT) -> UsageError:
    """The error for a malformed source file: `where` is `path` or `path:line`."""
    return UsageError(f"{where}: {problem}", hint=hint)


def read_text(path: Path, rel: str, limit: int = MAX_FOREIGN_BYTES) -> str:
    """The file as text: UTF-8 (a BOM dropped), CRLF as LF; refused when too big or not UTF-8."""
    if path.is_symlink() or not path.is_file():
        raise refuse(rel, "not a regular file (symlinks are not followed)")
    size = path.stat().st_size
    if size > limit:
        raise refuse(rel, f"{size} bytes; the limit for one file is {limit}")
    data = path.read_bytes()
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
    import yaml

    text = read_text(path, rel)
    lines = text.split("\n")
    opener = lines[0].strip() if lines else ""
    if opener in ("---", "+++") and not any(line.strip() == opener for line in lines[1:]):
        raise refuse(f"{rel}:1", f"the frontmatter opened by `{opener}` is never closed")
    if opener == "+++":  # TOML: python-frontmatter needs the `toml` package; tomllib is in Python
        return _toml_note(text, rel)
    try:
        meta, body = frontmatter.parse(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1
        raise refuse(f"{rel}:{line}", f"frontmatter is not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    except (ValueError, TypeError) as exc:  # JSON or TOML frontmatter that does not parse
        raise refuse(f"{rel}:1", f"frontmatter does not parse ({exc})") from None
    if opener in ("---", "+++") and not meta:
        block = text.split("\n", 1)[1].split(f"\n{opener}", 1)[0] if "\n" in text else ""
        if block.strip():
            raise refuse(f"{rel}:2", "frontmatter is not a mapping of keys to values")
    if not isinstance(meta, dict):
        raise refuse(f"{rel}:1", "frontmatter is not a mapping of keys to values")
    return ForeignNote(rel, {str(k): _plain(v) for k, v in meta.items()}, body)


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
    """One line of a JSONL file; malformed or too deeply nested JSON (Python's decoder recurses:
    `[[[[...` 5,000 deep was an internal RecursionError) is refused naming `where`."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise refuse(where, f"not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise refuse(where, "JSON nested too deeply") from None


def read_json(path: Path, rel: str, limit: int = MAX_SOURCE_BYTES) -> Any:
    """A JSON document; malformed JSON is refused naming the line and column."""
    text = read_text(path, rel, limit)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise refuse(f"{rel}:{exc.lineno}", f"not valid JSON ({exc.msg}, column {exc.colno})") from None
    except RecursionError:
        raise refuse(rel, "JSON nested too deeply") from None
