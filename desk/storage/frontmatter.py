"""Framing and YAML for Markdown files with frontmatter: the one module that owns them.

desk frames files itself (python-frontmatter loses data: docs/design.md §7): a file starts with
exactly `---\\n`, the closing `---` line is found explicitly, and YAML is loaded safely with
anchors, aliases, duplicate keys and deep nesting refused. Problems are `path:line: rule: message`."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from desk.errors import Finding, InvalidFileError
from desk.storage.conflict_markers import conflict_finding, conflict_markers

if TYPE_CHECKING:
    import yaml

MAX_FILE_BYTES = 64 * 1024
MAX_FRONTMATTER_BYTES = 8 * 1024
MAX_DEPTH = 3  # mapping -> list -> scalar is all desk's frontmatter ever needs
DELIMITER = "---"


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed file: metadata, the body after the closing delimiter, and where things are."""

    meta: dict[str, Any]
    body: str
    key_lines: dict[str, int]  # 1-based file line of each top-level key
    body_line: int  # 1-based file line where the body starts

    def line_of(self, key: str | None) -> int:
        return self.key_lines.get(key or "", 1)


def _fail(path: str, line: int, rule: str, message: str, column: int = 0) -> InvalidFileError:
    return InvalidFileError([Finding(path, line, rule, message, column=column)])


def _column(data: bytes, offset: int) -> int:
    """The 1-based character column of byte `offset` in its line."""
    start = data.rfind(b"\n", 0, offset) + 1
    return len(data[start:offset].decode("utf-8", "replace")) + 1


def decode(data: bytes, path: str) -> str:
    """The file as text, refusing what desk never stores: oversize, BOM, NUL bytes, bad UTF-8."""
    if len(data) > MAX_FILE_BYTES:
        raise _fail(path, 1, "file-size", f"file is {len(data)} bytes; the limit is {MAX_FILE_BYTES}")
    if data.startswith(b"\xef\xbb\xbf"):
        raise _fail(path, 1, "bom", "file starts with a UTF-8 byte order mark; save it without one")
    nul = data.find(b"\0")
    if nul >= 0:
        raise _fail(path, data.count(b"\n", 0, nul) + 1, "binary",
                    "file holds NUL bytes; desk stores text only", _column(data, nul))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(path, data.count(b"\n", 0, exc.start) + 1, "encoding",
                    f"invalid UTF-8 at byte {exc.start}; save the file as UTF-8", _column(data, exc.start)) from None


def parse(data: bytes, path: str) -> Document:
    """Split `data` into frontmatter and body and load the frontmatter as a YAML mapping."""
    markers = conflict_markers(data)
    if markers is not None:
        raise InvalidFileError([conflict_finding(path, markers)])
    text = decode(data, path)
    if text.startswith(DELIMITER + "\r\n"):
        raise _fail(path, 1, "line-endings", "file uses CRLF line endings; save it with LF (\\n)")
    if not text.startswith(DELIMITER + "\n"):
        raise _fail(path, 1, "frontmatter-missing",
                    "file must start with a `---` line that opens the frontmatter")
    end = _closing_line(text)
    if end is None:
        raise _fail(path, 1, "frontmatter-unclosed",
                    "frontmatter opened on line 1 is never closed by a `---` line")
    yaml_text = text[len(DELIMITER) + 1:end]
    if len(yaml_text.encode()) > MAX_FRONTMATTER_BYTES:
        raise _fail(path, 2, "frontmatter-size",
                    f"frontmatter is over {MAX_FRONTMATTER_BYTES} bytes; keep it to a few short fields")
    body_start = min(end + len(DELIMITER) + 1, len(text))
    meta, key_lines = load_mapping(yaml_text, path, first_line=2)
    body_line = text.count("\n", 0, body_start) + 1
    return Document(meta, text[body_start:], key_lines, body_line)


def _closing_line(text: str) -> int | None:
    """Offset of the closing `---` line, or None."""
    pos = len(DELIMITER) + 1
    while True:
        nl = text.find("\n" + DELIMITER, pos - 1)
        if nl < 0:
            return None
        after = nl + 1 + len(DELIMITER)
        if after == len(text) or text[after] == "\n":
            return nl + 1
        pos = after


def load_mapping(yaml_text: str, path: str, first_line: int = 1) -> tuple[dict[str, Any], dict[str, int]]:
    """Load `yaml_text` as a mapping with string keys; return it and each key's file line.

    Refused: anchors and aliases, nesting deeper than MAX_DEPTH, duplicate keys, non-string keys, a
    top level that is not a mapping. desk's own plain frontmatter is read without PyYAML
    (`plain_mapping`, so the pre-commit hook never imports it); the rest goes through `yaml_mapping`."""
    fast = plain_mapping(yaml_text, first_line)
    return fast if fast is not None else yaml_mapping(yaml_text, path, first_line)


# -- the fast path: desk's own plain frontmatter, exactly as PyYAML reads it ------------------
#
# Only a subset whose meaning under YAML 1.1 (PyYAML's resolver) is beyond doubt is read here;
# for anything else `plain_mapping` answers None and PyYAML decides (and reports). The subset:
# lines `key: value` at column 0 (`key` lowercase, not a YAML boolean or null), a value being a
# plain string that starts with a letter, a single-quoted string on one line, a decimal whole
# number, a `YYYY-MM-DDTHH:MM:SSZ` time, or a flow list `[a, b]` of plain words; or `key:` alone,
# followed by block list items `- value` (all at one indent of 0 or 2 spaces). No comments,
# blank lines, tabs, quotes of other kinds, anchors, tags, or characters Python does not call
# printable (PyYAML's line breaks, BOM and unprintable ones among them).
# tests/storage/test_frontmatter_plain.py checks, on hostile input, that whatever this reads
# equals what PyYAML reads.

_LINE = re.compile(r"([a-z][a-z0-9_]*):(?: (.*))?\Z|( *)- (.*)\Z", re.DOTALL)
_NOT_STRINGS = frozenset(("y", "n", "yes", "no", "true", "false", "on", "off", "null"))
_INT = re.compile(r"(?:0|[1-9][0-9]{0,17})\Z")
_TIME = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})Z\Z")
_QUOTED = re.compile(r"'((?:[^']|'')*)'\Z", re.DOTALL)
_FLOW_UNSAFE = frozenset(",?[]{}:#'\"")


class _Defer(Exception):
    """The text is outside the fast path's subset: PyYAML reads it."""


def _plain_string(value: str, flow: bool = False) -> bool:
    """Whether PyYAML reads `value` (a plain scalar in block, or with `flow` flow, context) as
    exactly this string."""
    return (value[:1].isalpha() and value[-1] not in " :" and ": " not in value and " #" not in value
            and value.lower() not in _NOT_STRINGS and not (flow and any(c in _FLOW_UNSAFE for c in value)))


def _scalar(value: str) -> Any:
    if _plain_string(value):
        return value
    quoted = _QUOTED.match(value)
    if quoted:
        return quoted.group(1).replace("''", "'")
    if _INT.match(value):
        return int(value)
    when = _TIME.match(value)
    if when:
        try:
            year, month, day, hour, minute, second = map(int, when.groups())
            return dt.datetime(year, month, day, hour, minute, second, tzinfo=dt.timezone.utc)
        except ValueError:
            raise _Defer from None  # no such day or hour: PyYAML's own error
    if value.startswith("[") and value.endswith("]"):
        inner = value[1:-1]
        if not inner:
            return []
        items = [item.strip(" ") for item in inner.split(",")]
        if all(item and _plain_string(item, flow=True) for item in items):
            return items
    raise _Defer


def plain_mapping(yaml_text: str, first_line: int = 1) -> tuple[dict[str, Any], dict[str, int]] | None:
    """`yaml_text` read as `yaml_mapping` reads it when it is desk's plain frontmatter (see above);
    None for anything else."""
    # Each line printable as Python says: that excludes tab, CR, NEL, the line and paragraph
    # separators, the BOM and zero-width characters (format characters), which PyYAML treats
    # specially, and everything PyYAML refuses as unprintable (and some it takes, like U+3000).
    if not yaml_text.endswith("\n"):
        return None
    meta: dict[str, Any] = {}
    key_lines: dict[str, int] = {}
    listed: str | None = None  # the last key when it has no value: the block list under it
    indent: str | None = None  # the indent of that list's items
    try:
        for number, line in enumerate(yaml_text[:-1].split("\n"), first_line):
            match = _LINE.match(line) if line.isprintable() else None
            if match is None:
                return None
            key, value, item_indent, item = match.groups()
            if key is None:  # `- item`: only under a `key:` without a value, all at one indent
                if listed is None or indent not in (None, item_indent) or len(item_indent) > 2:
                    return None
                indent = item_indent
                meta[listed].append(_scalar(item))
                continue
            if key in key_lines or key in _NOT_STRINGS:
                return None
            if listed is not None and not meta[listed]:
                meta[listed] = None  # `key:` with nothing under it is null
            key_lines[key] = number
            listed = indent = None
            if value is None:
                meta[key] = []
                listed = key
            else:
                meta[key] = _scalar(value)
    except _Defer:
        return None
    if listed is not None and not meta[listed]:
        meta[listed] = None
    return (meta, key_lines) if meta else None


def yaml_mapping(yaml_text: str, path: str, first_line: int = 1, loader: type | None = None
                 ) -> tuple[dict[str, Any], dict[str, int]]:
    """`load_mapping` through PyYAML's pure-Python SafeLoader (or `loader`), on every machine: libyaml
    disagrees with it on hostile text, and a verdict must not depend on how PyYAML was installed."""
    import yaml  # here: only frontmatter outside the plain subset pays for it

    _Loader = loader or yaml.SafeLoader
    offset = first_line - 1

    def at(mark: Any) -> int:
        return (mark.line if mark is not None else 0) + 1 + offset

    def col(mark: Any) -> int:
        return mark.column + 1 if mark is not None else 0

    try:
        depth = 0
        for event in yaml.parse(yaml_text, Loader=_Loader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise _fail(path, at(event.start_mark), "yaml-alias",
                            "YAML anchors and aliases are not allowed in frontmatter", column=col(event.start_mark))
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise _fail(path, at(event.start_mark), "yaml-depth",
                                f"frontmatter nests deeper than {MAX_DEPTH} levels", column=col(event.start_mark))
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
        reader: Any = _Loader(yaml_text)
        try:
            node = reader.get_single_node()
            if node is None:
                raise _fail(path, first_line, "frontmatter-empty", "frontmatter is empty")
            if not isinstance(node, yaml.MappingNode):
                raise _fail(path, at(node.start_mark), "frontmatter-not-mapping",
                            "frontmatter must be a mapping of `key: value` lines", column=col(node.start_mark))
            key_lines: dict[str, int] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
                    raise _fail(path, at(key_node.start_mark), "yaml-key",
                                "frontmatter keys must be plain words", column=col(key_node.start_mark))
                if key_node.value in key_lines:
                    raise _fail(path, at(key_node.start_mark), "yaml-duplicate-key",
                                f"{key_node.value}: key given twice (first on line "
                                f"{key_lines[key_node.value]})", column=col(key_node.start_mark))
                key_lines[key_node.value] = at(key_node.start_mark)
            meta = reader.construct_document(node)
        finally:
            reader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if "nesting depth" in problem:  # PyYAML >= 6.0.4 stops deep nesting in its own parser
            raise _fail(path, at(mark), "yaml-depth",
                        f"frontmatter nests deeper than {MAX_DEPTH} levels", column=col(mark)) from None
        raise _fail(path, at(mark), "yaml-syntax", f"invalid YAML: {problem}", column=col(mark)) from None
    except RecursionError:
        raise _fail(path, first_line, "yaml-depth", "frontmatter nests too deeply") from None
    return meta, key_lines


class Timestamp(str):
    """A time already spelled by `desk.text.times.format_time`, written as a plain YAML timestamp."""


@lru_cache(maxsize=1)
def _dumper() -> type:
    """PyYAML's SafeDumper in desk's style (built on first use: reading never imports PyYAML)."""
    import yaml

    class Dumper(yaml.SafeDumper):
        """Block style, keys in the caller's order, unicode as is, `Timestamp`s unquoted."""

        def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
            super().increase_indent(flow, False)  # indent list items under their key

        def ignore_aliases(self, data: Any) -> bool:
            return True  # the same object twice (created == updated) is written twice, never aliased

    def represent_timestamp(dumper: yaml.SafeDumper, value: Timestamp) -> yaml.Node:
        return dumper.represent_scalar("tag:yaml.org,2002:timestamp", str(value))

    def refuse_datetime(dumper: yaml.SafeDumper, value: dt.date) -> yaml.Node:
        # PyYAML would write its own spelling (`2026-11-29 10:00:00+00:00`); desk has one.
        raise TypeError(f"{value!r}: format times with desk.text.times.format_time and wrap them "
                        "in frontmatter.Timestamp")

    Dumper.add_representer(Timestamp, represent_timestamp)
    Dumper.add_representer(dt.datetime, refuse_datetime)
    Dumper.add_representer(dt.date, refuse_datetime)
    return Dumper


def dump_mapping(meta: dict[str, Any]) -> str:
    """YAML for `meta` in block style, keys in the given order, no line folding."""
    import yaml  # here: reading desk's plain frontmatter never needs it

    return yaml.dump(meta, Dumper=_dumper(), sort_keys=False, allow_unicode=True,
                     default_flow_style=False, width=1 << 30)


def render(meta: dict[str, Any], body: str) -> bytes:
    """A whole file: `---`, the frontmatter, `---`, the body."""
    return f"{DELIMITER}\n{dump_mapping(meta)}{DELIMITER}\n{body}".encode()
