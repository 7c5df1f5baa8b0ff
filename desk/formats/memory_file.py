"""Single-fact memory files (`memory/<name>.md`): the frontmatter model, names, parsing and rendering.

`render(parse(f)) == f` for every file desk writes. The optional `schema` key (no key: version 1)
is stamped by every write; a version newer than MEMORY_SCHEMA is refused, never read as older.
"""

from __future__ import annotations

import os
import datetime as dt
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from desk.errors import Finding, InvalidFileError, RejectedError, quoted
from desk.storage import frontmatter
from desk.text.names import path_name_problem
from desk.text.times import TimeFormatError, format_time, parse_time
from desk.vocabulary import MEMORY_SOURCES, MEMORY_TYPES

NAME_MAX = 80
DESCRIPTION_MAX = 150
TRIGGER_MAX = 64
ORIGIN_MAX = 300
MEMORY_SCHEMA = 2  # version 2 reads as version 1: the key is all it adds
READABLE_MEMORY_SCHEMAS = (1, 2)
SCHEMA_KEY = "schema"
# The order keys are written in; `schema` last, so stamping a person's file adds one line at the end.
FIELD_ORDER = ("name", "description", "type", "triggers", "importance", "source", "source_event",
               "origin", "evidence", "key", "project", "expires", "valid_from", "valid_to", "created",
               "updated", SCHEMA_KEY)


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a memory name, or None when it can (desk.text.names' path rule)."""
    return path_name_problem(name, limit=NAME_MAX)


class _FieldError(ValueError):
    """One field's problem: `loc` is the key (and list index), the message says what to do."""

    def __init__(self, loc: str, message: str, rule: str = "frontmatter-field") -> None:
        super().__init__(message)
        self.loc = loc
        self.rule = rule


def _schema(value: Any) -> int:
    """The format version a file declares: a whole number this desk reads."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise _FieldError(SCHEMA_KEY, f"expected a whole number (the memory file format version, "
                                      f"{MEMORY_SCHEMA} today), got {type(value).__name__} {value!r}")
    if value < 1:
        raise _FieldError(SCHEMA_KEY, f"must be 1 or more, not {value}")
    if value > MEMORY_SCHEMA:
        raise _FieldError(SCHEMA_KEY, f"{value} was written by a newer desk (this desk reads memory schema "
                                      f"{', '.join(map(str, READABLE_MEMORY_SCHEMAS))}); upgrade desk "
                                      "(`pip install -U desk`) to read or change this file", "memory-schema")
    return value


def line_problem(value: str, limit: int) -> str | None:
    """Why `value` cannot be a one-line stored value, or None."""
    if not value.strip():
        return "is empty"
    if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in value):  # every line break included
        return "must be one line of text without control characters"
    if value != value.strip():
        return "has leading or trailing spaces"
    if len(value) > limit:
        return f"is {len(value)} characters; the limit is {limit}"
    return None


def _line(value: Any, loc: str, limit: int) -> str:
    problem = line_problem(_text(value, loc), limit)
    if problem:
        raise _FieldError(loc, problem)
    return str(value)


def _text(value: Any, loc: str, optional: bool = False) -> Any:
    """A string, strictly: YAML's `yes`, `012` and bare dates are not strings here."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        message = f"expected a string, got {type(value).__name__} {value!r}"
        if isinstance(value, (bool, int, float, dt.date)):
            message += " (YAML read it as a non-string: quote the value)"
        raise _FieldError(loc, message)
    return value


def _texts(value: Any, loc: str) -> list[str]:
    if not isinstance(value, list):
        raise _FieldError(loc, f"expected a list of strings, got {type(value).__name__} {value!r}")
    return [_text(item, f"{loc}.{i}") for i, item in enumerate(value)]


def _choice(value: Any, loc: str, choices: tuple[str, ...], optional: bool = False) -> Any:
    value = _text(value, loc, optional)
    if value is not None and value not in choices:
        raise _FieldError(loc, f"must be one of {', '.join(choices)}, not {value!r}")
    return value


def _importance(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _FieldError("importance", f"expected a whole number 1-5, got {type(value).__name__} {value!r}")
    if not 1 <= value <= 5:
        raise _FieldError("importance", f"must be 1 to 5, not {value}")
    return value


def _utc(value: Any, loc: str) -> dt.datetime | None:
    """A UTC time in whole seconds, from a string with a zone, YAML's timestamp or a date."""
    if value is None:
        return None
    if not isinstance(value, (str, dt.date)):
        raise _FieldError(loc, f"expected a UTC time like 2026-11-29T10:00:00Z, got {value!r}")
    try:
        return parse_time(value, loc).replace(microsecond=0)
    except TimeFormatError as exc:
        raise _FieldError(loc, exc.reason) from None


@dataclass(frozen=True, slots=True)
class MemoryMeta:
    """The frontmatter of a memory file (docs/design.md §2); build it with `validate`.

    A hand-written validator, not pydantic: the pre-commit hook cannot afford pydantic's import.
    """

    name: str
    description: str
    type: str
    triggers: list[str] = field(default_factory=list)
    importance: int | None = None
    source: str | None = None
    source_event: str | None = None
    origin: str | None = None  # where an imported memory came from: `<format>:<path or id>`
    evidence: list[str] = field(default_factory=list)
    key: str | None = None
    project: str | None = None  # the project scope a memory under projects/<name>/memory/ belongs to
    expires: dt.datetime | None = None
    valid_from: dt.datetime | None = None
    valid_to: dt.datetime | None = None
    created: dt.datetime | None = None
    updated: dt.datetime | None = None
    # The version the file declares (None: no key); not compared: the same memory in either version.
    schema: int | None = field(default=None, compare=False)

    @property
    def schema_version(self) -> int:
        """The format version this memory was read in (1 when the file has no `schema` key)."""
        return self.schema or 1

    @classmethod
    def validate(cls, data: Mapping[str, Any]) -> MemoryMeta:
        """Check every field of `data`; raise MetaErrors listing each problem by field."""
        values: dict[str, Any] = {}
        errors = [_FieldError(key, f"unknown key; allowed keys are {', '.join(FIELD_ORDER)}")
                  for key in data if key not in FIELD_ORDER]
        errors += [_FieldError(key, "required field is missing")
                   for key in ("name", "description", "type") if key not in data]
        checks: dict[str, tuple[Any, ...]] = {
            "name": (_name, ), "description": (_line, "description", DESCRIPTION_MAX),
            "type": (_choice, "type", MEMORY_TYPES), "triggers": (_triggers, ), "importance": (_importance, ),
            "source": (_choice, "source", MEMORY_SOURCES, True), "source_event": (_text, "source_event", True),
            "origin": (_line, "origin", ORIGIN_MAX),
            "evidence": (_texts, "evidence"), "key": (_text, "key", True),
            "project": (_text, "project", True), "expires": (_utc, "expires"),
            "valid_from": (_utc, "valid_from"), "valid_to": (_utc, "valid_to"),
            "created": (_utc, "created"), "updated": (_utc, "updated"), SCHEMA_KEY: (_schema, ),
        }
        for key, (check, *args) in checks.items():
            try:
                if key in data:
                    values[key] = check(data[key], *args)
            except _FieldError as exc:
                errors.append(exc)
        problem = validity_problem(values.get("valid_from"), values.get("valid_to"))
        if problem:
            errors.append(_FieldError("valid_to", problem, "validity"))
        if errors:
            raise MetaErrors(errors)
        return cls(**values)

    def replace(self, **changes: Any) -> MemoryMeta:
        """A copy with `changes` (already valid values: used for desk's own derived updates)."""
        return replace(self, **changes)

    def to_yaml_dict(self, schema: int | None = MEMORY_SCHEMA) -> dict[str, Any]:
        """Set fields in FIELD_ORDER, times by `format_time`; `schema`: the version stamped (None: no key)."""
        out: dict[str, Any] = {}
        for key in FIELD_ORDER:
            value = schema if key == SCHEMA_KEY else getattr(self, key)
            if value is None or value == []:
                continue
            if isinstance(value, dt.datetime):
                value = frontmatter.Timestamp(format_time(value))
            out[key] = list(value) if isinstance(value, list) else value
        return out

    def to_json(self) -> dict[str, Any]:
        """Every set field, times as `YYYY-MM-DDTHH:MM:SSZ` (`schema` only when the file has it)."""
        return {key: format_time(v) if isinstance(v, dt.datetime) else v
                for key, v in ((k, getattr(self, k)) for k in FIELD_ORDER) if v is not None}


def _name(value: Any) -> str:
    value = _text(value, "name")
    problem = name_problem(value)
    if problem:
        raise _FieldError("name", problem)
    return str(value)


def _triggers(value: Any) -> list[str]:
    return [_line(trigger, f"triggers.{i}", TRIGGER_MAX) for i, trigger in enumerate(_texts(value, "triggers"))]


class MetaErrors(ValueError):
    """All the field problems of one frontmatter."""

    def __init__(self, errors: list[_FieldError]) -> None:
        super().__init__("; ".join(f"{e.loc}: {e}" for e in errors))
        self.errors = errors

    def findings(self, path: str, line_of: Callable[[str], int]) -> list[Finding]:
        return [Finding(path, line_of(e.loc.split(".")[0]), e.rule, f"{e.loc}: {e}") for e in self.errors]


@dataclass(frozen=True, slots=True)
class MemoryFile:
    """One memory: its metadata and its body (ending in exactly one newline)."""

    meta: MemoryMeta
    body: str

    @property
    def name(self) -> str:
        return self.meta.name

    def render(self, schema: int | None = MEMORY_SCHEMA) -> bytes:
        """The file's bytes; `schema`: the version stamped (MemoryMeta.to_yaml_dict)."""
        return frontmatter.render(self.meta.to_yaml_dict(schema), self.body)

    def is_expired(self, now: dt.datetime) -> bool:
        return self.meta.expires is not None and self.meta.expires <= now


def validity_problem(start: dt.datetime | None, end: dt.datetime | None) -> str | None:
    """Why an interval cannot be one (it ends before it starts), or None."""
    if start is not None and end is not None and end < start:
        return (f"{format_time(end)} is before valid_from {format_time(start)}; "
                "a fact stops being true after it starts")
    return None


def normalize_body(body: str) -> str:
    """The body as desk stores it: surrounding blank space removed, one trailing newline."""
    return body.strip() + "\n" if body.strip() else ""


def build_meta(path: str, **fields: Any) -> MemoryMeta:
    """A MemoryMeta from arguments (None and [] left out); a bad field is rejected naming its option (exit 3)."""
    given = {k: v for k, v in fields.items()
             if k in ("name", "description", "type") or (v is not None and v != [])}
    try:
        return MemoryMeta.validate(given)
    except MetaErrors as exc:  # from arguments, not a file: no line to name, the option instead
        options = {"description": "--description", "type": "--type", "triggers": "--trigger",
                   "importance": "--importance", "expires": "--expires", "name": "NAME",
                   "valid_from": "--valid-from", "valid_to": "--valid-to"}
        named = [e.loc.split(".")[0] for e in exc.errors]
        raise InvalidFileError(exc.findings(path, lambda key: 0), hint="fix " + ", ".join(
            dict.fromkeys(options.get(n, n) for n in named)) + " and run the command again") from None


def written_by_newer_desk(error: InvalidFileError) -> bool:
    """Whether `error` refuses a file a newer desk wrote: never replaced as broken (a downgrade)."""
    return any(f.rule == "memory-schema" for f in error.findings)


NEWER_HINT = ("this memory file was written by a newer desk: upgrade desk (`pip install -U desk`); "
              "nothing was changed")


def stamp_schema(data: bytes, path: str) -> bytes:
    """`data` (a valid memory file) declaring MEMORY_SCHEMA, every other byte kept (`desk migrate`).
    InvalidFileError when `data` is not a memory this desk reads (a newer one included)."""
    doc = frontmatter.parse(data, path)
    memory = parse_memory(data, path)
    if memory.meta.schema == MEMORY_SCHEMA:
        return data
    lines = data.decode("utf-8").split("\n")
    line = f"{SCHEMA_KEY}: {MEMORY_SCHEMA}"
    if memory.meta.schema is None:
        lines.insert(doc.body_line - 2, line)  # before the closing `---` (file line body_line - 1)
    else:
        lines[doc.line_of(SCHEMA_KEY) - 1] = line
    stamped = "\n".join(lines).encode()
    try:
        again: MemoryFile | None = parse_memory(stamped, path)
    except InvalidFileError:
        again = None
    if again is None or again != memory or again.meta.schema != MEMORY_SCHEMA:
        raise InvalidFileError([Finding(path, doc.line_of(SCHEMA_KEY), "memory-schema",
                                        f"{SCHEMA_KEY}: cannot be set to {MEMORY_SCHEMA} without rewriting "
                                        "other lines")],
                               hint=f"write `{line}` as one line at the end of the frontmatter by hand")
    return stamped


def parse_memory(data: bytes, path: str, expected_name: str | None = None) -> MemoryFile:
    """Parse and validate a memory file; every problem names `path:line` and the field."""
    doc = frontmatter.parse(data, path)
    try:
        meta = MemoryMeta.validate(doc.meta)
    except MetaErrors as exc:
        error = InvalidFileError(exc.findings(path, doc.line_of))
        error.hint = NEWER_HINT if written_by_newer_desk(error) else None
        raise error from None
    problems = []
    if expected_name is not None and meta.name != expected_name:
        problems.append(Finding(path, doc.line_of("name"), "name-mismatch",
                                f"name: {meta.name!r} differs from the file name "
                                f"{expected_name + '.md'!r}; set `name: {expected_name}` or rename "
                                "the file to match"))
    if not doc.body.strip():
        problems.append(Finding(path, doc.body_line, "body-empty",
                                "the memory has no body; write the fact below the closing `---`"))
    problem = scope_problem(path, meta.project)
    if problem:
        problems.append(Finding(path, doc.line_of("project") if meta.project else 1, "scope-mismatch",
                                problem))
    if problems:
        raise InvalidFileError(problems)
    return MemoryFile(meta, doc.body)


def scope_problem(path: str, recorded: str | None) -> str | None:
    """Why a memory recording project `recorded` must not be read at `path` (docs/scopes.md): every
    reader parses through here, so none injects a memory copied into another scope."""
    parts = path.split("/")
    if len(parts) == 2 and parts[0] == "memory":
        project = None
    elif len(parts) == 4 and parts[0] == "projects" and parts[2] == "memory":
        project = parts[1]
    else:
        return None  # a file read from outside a desk: no scope to check
    if recorded == project:
        return None
    where = f"project {project!r}" if project else "the desk-wide memory/"
    return (f"records project {recorded!r} but sits in {where}: a memory copied from another "
            "scope is never read; move it back or remove it")


def require_name(name: str, read: bool = False) -> None:
    """Refuse a bad memory name up front, before anything is touched: exit 3, or given to a read
    (`show`, `history`, `diff`, `read=True`) a usage error (exit 2)."""
    from desk.errors import UsageError

    problem = name_problem(name)
    if problem:
        raise (UsageError if read else RejectedError)(
            f"invalid memory name {quoted(name)}: {problem}",
            hint="memory names are lowercase slugs like report-style (see `desk list`)" if read
            else "use a short lowercase slug like report-style")


def memory_name_arg(value: str, memory_dir: Path | None = None) -> str:
    """The memory name in what a person typed: `x`, `x.md`, `memory/x.md`, or a path into `memory_dir`."""
    text = value
    if memory_dir is not None and ("/" in text or os.sep in text):
        try:
            text = Path(text).expanduser().resolve().relative_to(memory_dir.resolve()).as_posix()
        except ValueError:
            pass  # not a path into this desk's memory/: the name rule will say what is wrong
    text = text.removeprefix("./").removeprefix("memory/")
    return text.removesuffix(".md") if text.endswith(".md") else text
