"""Framing and YAML for Markdown files with frontmatter: the one module that owns them.

desk does its own framing instead of python-frontmatter, whose 1.3 release strips trailing
newlines, returns empty metadata for an unclosed block, drops a top-level YAML list and misses
frontmatter behind a BOM (docs/design.md §7). Here a file must start with exactly `---\\n`, the closing
`---` line is found explicitly, and YAML is loaded safely with anchors, aliases, duplicate keys and
deep nesting refused. Every problem is reported as `path:line: rule: message`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import yaml

from desk.errors import Finding, InvalidFileError
from desk.storage.conflict_markers import conflict_finding, conflict_markers

MAX_FILE_BYTES = 64 * 1024
MAX_FRONTMATTER_BYTES = 8 * 1024
MAX_DEPTH = 3  # mapping -> list -> scalar is all desk's frontmatter ever needs
DELIMITER = "---"

_Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Document:
    """A parsed file: metadata, the body after the closing delimiter, and where things are."""

    meta: dict[str, Any]
    body: str
    key_lines: dict[str, int]  # 1-based file line of each top-level key
    body_line: int  # 1-based file line where the body starts

    def line_of(self, key: str | None) -> int:
        return self.key_lines.get(key or "", 1)


def _fail(path: str, line: int, rule: str, message: str) -> InvalidFileError:
    return InvalidFileError([Finding(path, line, rule, message)])


def decode(data: bytes, path: str) -> str:
    """The file as text, refusing what desk never stores: oversize, BOM, NUL bytes, bad UTF-8."""
    if len(data) > MAX_FILE_BYTES:
        raise _fail(path, 1, "file-size", f"file is {len(data)} bytes; the limit is {MAX_FILE_BYTES}")
    if data.startswith(b"\xef\xbb\xbf"):
        raise _fail(path, 1, "bom", "file starts with a UTF-8 byte order mark; save it without one")
    nul = data.find(b"\0")
    if nul >= 0:
        raise _fail(path, data.count(b"\n", 0, nul) + 1, "binary",
                    "file holds NUL bytes; desk stores text only")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(path, data.count(b"\n", 0, exc.start) + 1, "encoding",
                    f"invalid UTF-8 at byte {exc.start}; save the file as UTF-8") from None


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
    start_of_yaml = len(DELIMITER) + 1
    yaml_text = text[start_of_yaml:end]
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

    Refused: anchors and aliases (an alias bomb loads fast and explodes later), nesting deeper than
    MAX_DEPTH, duplicate keys (YAML lets the last one win silently), non-string keys, a top level
    that is not a mapping.
    """
    offset = first_line - 1

    def at(mark: Any) -> int:
        return (mark.line if mark is not None else 0) + 1 + offset

    try:
        depth = 0
        for event in yaml.parse(yaml_text, Loader=_Loader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise _fail(path, at(event.start_mark), "yaml-alias",
                            "YAML anchors and aliases are not allowed in frontmatter")
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise _fail(path, at(event.start_mark), "yaml-depth",
                                f"frontmatter nests deeper than {MAX_DEPTH} levels")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
        loader = _Loader(yaml_text)
        try:
            node = loader.get_single_node()
            if node is None:
                raise _fail(path, first_line, "frontmatter-empty", "frontmatter is empty")
            if not isinstance(node, yaml.MappingNode):
                raise _fail(path, at(node.start_mark), "frontmatter-not-mapping",
                            "frontmatter must be a mapping of `key: value` lines")
            key_lines: dict[str, int] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
                    raise _fail(path, at(key_node.start_mark), "yaml-key",
                                "frontmatter keys must be plain words")
                if key_node.value in key_lines:
                    raise _fail(path, at(key_node.start_mark), "yaml-duplicate-key",
                                f"{key_node.value}: key given twice (first on line "
                                f"{key_lines[key_node.value]})")
                key_lines[key_node.value] = at(key_node.start_mark)
            meta = loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if "nesting depth" in problem:  # PyYAML >= 6.0.4 stops deep nesting in its own parser
            raise _fail(path, at(mark), "yaml-depth",
                        f"frontmatter nests deeper than {MAX_DEPTH} levels") from None
        raise _fail(path, at(mark), "yaml-syntax", f"invalid YAML: {problem}") from None
    except RecursionError:
        raise _fail(path, first_line, "yaml-depth", "frontmatter nests too deeply") from None
    return meta, key_lines


class Timestamp(str):
    """A time already spelled by `desk.text.times.format_time`: written as a plain YAML timestamp.

    Storage sits beside desk.text, not above it, so the caller formats and this module only keeps
    the scalar unquoted (a plain `str` that looks like a time would be quoted).
    """


class _Dumper(yaml.SafeDumper):
    """Block style, keys in the caller's order, unicode as is, `Timestamp`s unquoted."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)  # indent list items under their key

    def ignore_aliases(self, data: Any) -> bool:
        return True  # the same object twice (created == updated) is written twice, never aliased


def _represent_timestamp(dumper: yaml.SafeDumper, value: Timestamp) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:timestamp", str(value))


def _refuse_datetime(dumper: yaml.SafeDumper, value: dt.date) -> yaml.Node:
    # PyYAML would write its own spelling (`2026-11-29 10:00:00+00:00`); desk has one.
    raise TypeError(f"{value!r}: format times with desk.text.times.format_time and wrap them "
                    "in frontmatter.Timestamp")


_Dumper.add_representer(Timestamp, _represent_timestamp)
_Dumper.add_representer(dt.datetime, _refuse_datetime)
_Dumper.add_representer(dt.date, _refuse_datetime)


def dump_mapping(meta: dict[str, Any]) -> str:
    """YAML for `meta` in block style, keys in the given order, no line folding."""
    return yaml.dump(meta, Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                     default_flow_style=False, width=1 << 30)


def render(meta: dict[str, Any], body: str) -> bytes:
    """A whole file: `---`, the frontmatter, `---`, the body."""
    return f"{DELIMITER}\n{dump_mapping(meta)}{DELIMITER}\n{body}".encode()
