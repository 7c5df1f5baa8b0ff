"""Single-fact memory files: the frontmatter model, names, parsing and rendering.

A memory is `memory/<name>.md`: YAML frontmatter (fields below, unknown keys refused, strict
types) and a Markdown body. `render(parse(f)) == f` for every file desk writes.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from desk import frontmatter
from desk.errors import Finding, InvalidFileError, RejectedError

MEMORY_TYPES = ("preference", "decision", "convention", "pitfall", "fact", "reference")
SOURCES = ("user", "agent", "digest", "import")
NAME_MAX = 80
DESCRIPTION_MAX = 150
TRIGGER_MAX = 64
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
# Device names Windows refuses as file stems: a desk must check out on every machine.
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
# The order keys are written in, so diffs stay small.
FIELD_ORDER = ("name", "description", "type", "triggers", "importance", "source", "source_event",
               "evidence", "key", "expires", "created", "updated")


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a memory name, or None when it can."""
    if not name:
        return "name is empty"
    if len(name) > NAME_MAX:
        return f"name is {len(name)} characters; the limit is {NAME_MAX}"
    if not NAME_RE.match(name):
        return "name must be a lowercase slug: a-z, 0-9, '.', '_', '-', starting with a letter or digit"
    if name.endswith("."):
        return "name must not end with '.'"
    if name.split(".")[0] in _RESERVED:
        return f"{name!r} is a reserved device name on Windows"
    return None


def _single_line(value: str, field: str, limit: int) -> str:
    if not value.strip():
        raise ValueError(f"{field} is empty")
    if "\n" in value or "\r" in value:
        raise ValueError(f"{field} must be one line")
    if value != value.strip():
        raise ValueError(f"{field} has leading or trailing spaces")
    if len(value) > limit:
        raise ValueError(f"{field} is {len(value)} characters; the limit is {limit}")
    return value


def _utc(value: Any) -> Any:
    """Accept a timezone-aware datetime, an ISO-8601 string with a zone, or a date (midnight UTC)."""
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            raise ValueError("not an ISO-8601 time like 2026-11-29T10:00:00Z") from None
    elif isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            raise ValueError("time has no timezone; write it in UTC with a Z, e.g. 2026-11-29T10:00:00Z")
        return value.astimezone(dt.timezone.utc).replace(microsecond=0)
    return value


Text = Annotated[str, Field(strict=True)]


class MemoryMeta(BaseModel):
    """The frontmatter of a memory file (DESIGN.md §2)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    name: Text
    description: Text
    type: Literal["preference", "decision", "convention", "pitfall", "fact", "reference"]
    triggers: list[Text] = []
    importance: int | None = Field(default=None, ge=1, le=5)
    source: Literal["user", "agent", "digest", "import"] | None = None
    source_event: Text | None = None
    evidence: list[Text] = []
    key: Text | None = None
    expires: dt.datetime | None = None
    created: dt.datetime | None = None
    updated: dt.datetime | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        problem = name_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("description")
    @classmethod
    def _description(cls, value: str) -> str:
        return _single_line(value, "description", DESCRIPTION_MAX)

    @field_validator("triggers")
    @classmethod
    def _triggers(cls, value: list[str]) -> list[str]:
        for trigger in value:
            _single_line(trigger, "trigger", TRIGGER_MAX)
        return value

    @field_validator("expires", "created", "updated", mode="before")
    @classmethod
    def _times(cls, value: Any) -> Any:
        return _utc(value)

    def to_yaml_dict(self) -> dict[str, Any]:
        """Fields in FIELD_ORDER, empty optional fields left out."""
        data = self.model_dump()
        out: dict[str, Any] = {}
        for key in FIELD_ORDER:
            value = data[key]
            if value is None or value == []:
                continue
            out[key] = value
        return out


@dataclass(frozen=True)
class MemoryFile:
    """One memory: its metadata and its body (ending in exactly one newline)."""

    meta: MemoryMeta
    body: str

    @property
    def name(self) -> str:
        return self.meta.name

    def render(self) -> bytes:
        return frontmatter.render(self.meta.to_yaml_dict(), self.body)

    def is_expired(self, now: dt.datetime) -> bool:
        return self.meta.expires is not None and self.meta.expires <= now


def normalize_body(body: str) -> str:
    """The body as desk stores it: surrounding blank space removed, one trailing newline."""
    return body.strip() + "\n" if body.strip() else ""


def build_meta(path: str, **fields: Any) -> MemoryMeta:
    """A MemoryMeta from arguments; a bad field is rejected naming the field (exit 3)."""
    try:
        return MemoryMeta(**fields)
    except ValidationError as exc:
        raise InvalidFileError(_findings(exc, path, lambda key: 0)) from None


def parse_memory(data: bytes, path: str, expected_name: str | None = None) -> MemoryFile:
    """Parse and validate a memory file; every problem names `path:line` and the field."""
    doc = frontmatter.parse(data, path)
    try:
        meta = MemoryMeta(**doc.meta)
    except ValidationError as exc:
        raise InvalidFileError(_findings(exc, path, doc.line_of)) from None
    problems = []
    if expected_name is not None and meta.name != expected_name:
        problems.append(Finding(path, doc.line_of("name"), "name-mismatch",
                                f"name: {meta.name!r} differs from the file name {expected_name!r}.md; "
                                "rename the file or fix the name"))
    if not doc.body.strip():
        problems.append(Finding(path, doc.body_line, "body-empty",
                                "the memory has no body; write the fact below the closing `---`"))
    if problems:
        raise InvalidFileError(problems)
    return MemoryFile(meta, doc.body)


def _findings(exc: ValidationError, path: str, line_of: Any) -> list[Finding]:
    findings = []
    for error in exc.errors():
        loc = error["loc"]
        key = str(loc[0]) if loc else ""
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = f"unknown key; allowed keys are {', '.join(FIELD_ORDER)}"
        elif error["type"] == "missing":
            message = "required field is missing"
        elif error["type"] in ("string_type", "int_type") and "input" in error:
            found = type(error["input"]).__name__
            message = f"{error['msg']}, got {found} {error['input']!r}"
            if isinstance(error["input"], (bool, int, dt.date)):
                message += " (YAML read it as a non-string: quote the value)"
        field = ".".join(str(part) for part in loc) if loc else "frontmatter"
        findings.append(Finding(path, line_of(key), "frontmatter-field", f"{field}: {message}"))
    return findings


def require_name(name: str) -> None:
    """Refuse a bad memory name up front (exit 3), before anything is touched."""
    problem = name_problem(name)
    if problem:
        raise RejectedError(f"invalid memory name {name!r}: {problem}",
                            hint="use a short lowercase slug like report-style")
