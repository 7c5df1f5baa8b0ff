"""Structured facts (docs/design.md §8.0's MemoryFact): validated, then appended to the archive as kind `fact`.

A fact is not a free-form summary: it says what kind of thing it is (`decision`, `convention`,
`pitfall`, `outcome`), how much it matters (1-5) and, optionally, which question it answers
(`key`, a stable conflict domain such as `runtime.python-version`: `Use Python 3.11` and
`Use Python 3.12` share it). Facts are raw evidence; `desk digest` distils them into memories.
Each new fact says its format version (`payload.schema_version`, desk.digest.fact_version): a fact
without it is version 1, one newer than this desk reads is refused, never misread.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from desk.archive.store import append_event
from desk.digest.fact_version import FACT_SCHEMA, VERSION_KEY, fact_version
from desk.errors import RejectedError
from desk.text.times import TimeFormatError, format_time, parse_time
from desk.vocabulary import FACT_KINDS

FACT_EVENT = "fact"
KEY_MAX = 80
CONTENT_MAX = 4000
# Lowercase words joined by single `.`, `_` or `-`: a key names a question, never its answer.
KEY_RE = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*")


def key_problem(key: str) -> str | None:
    """Why `key` cannot be a memory key, or None when it can."""
    if not key:
        return "key is empty"
    if len(key) > KEY_MAX:
        return f"key is {len(key)} characters; the limit is {KEY_MAX}"
    if not KEY_RE.fullmatch(key):
        return ("key must be lowercase words (a-z, 0-9) joined by single '.', '_' or '-', "
                "e.g. runtime.python-version")
    return None


class MemoryFact(BaseModel):
    """The fields a fact must carry before it is written (docs/design.md §8.0)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    content: str
    kind: Literal["decision", "convention", "pitfall", "outcome"]
    importance: int = Field(ge=1, le=5)
    key: str | None = None
    project: str | None = None  # the project scope the fact belongs to (docs/scopes.md)
    # When the fact was true (docs/time.md), UTC times as `format_time` writes them; optional.
    valid_from: str | None = None
    valid_to: str | None = None

    @field_validator("valid_from", "valid_to")
    @classmethod
    def _time(cls, value: str | None) -> str | None:
        try:
            return None if value is None else format_time(parse_time(value, "time"))
        except TimeFormatError as exc:
            raise ValueError(exc.reason) from None

    @model_validator(mode="after")
    def _interval(self) -> MemoryFact:
        from desk.formats.memory_file import validity_problem

        problem = validity_problem(*(parse_time(t) if t else None for t in (self.valid_from, self.valid_to)))
        if problem:
            raise ValueError(f"valid_to: {problem}")
        return self

    @field_validator("project")
    @classmethod
    def _project(cls, value: str | None) -> str | None:
        if value is not None:
            from desk.layout import project_problem

            problem = project_problem(value)
            if problem:
                raise ValueError(problem)
        return value

    @field_validator("content")
    @classmethod
    def _content(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("content is empty")
        if len(value) > CONTENT_MAX:
            raise ValueError(f"content is {len(value)} characters; the limit is {CONTENT_MAX}")
        if "\0" in value:
            raise ValueError("content holds a NUL character")
        return value

    @field_validator("key")
    @classmethod
    def _key(cls, value: str | None) -> str | None:
        if value is not None:
            problem = key_problem(value)
            if problem:
                raise ValueError(problem)
        return value

    def payload(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind, "importance": self.importance, "key": self.key}
        if self.project is not None:  # desk-wide facts keep the payload they always had
            data["project"] = self.project
        data.update({k: v for k, v in (("valid_from", self.valid_from), ("valid_to", self.valid_to)) if v})
        data[VERSION_KEY] = FACT_SCHEMA
        return data


def validate_fact(content: str, *, kind: str, importance: int, key: str | None = None,
                  project: str | None = None, valid_from: str | None = None,
                  valid_to: str | None = None) -> MemoryFact:
    """A MemoryFact, or RejectedError (exit 3) naming each bad field; nothing is written."""
    try:
        return MemoryFact.model_validate({"content": content, "kind": kind, "importance": importance,
                                          "key": key, "project": project, "valid_from": valid_from,
                                          "valid_to": valid_to})
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"]) or "fact"
            problems.append(f"{field}: {error['msg'].removeprefix('Value error, ')}")
        raise RejectedError("invalid fact: " + "; ".join(problems),
                            hint=f"kind is one of {', '.join(FACT_KINDS)}, importance 1-5, "
                                 "key like runtime.python-version") from None


def add_fact(desk: Any, content: str, *, kind: str, importance: int, key: str | None = None,
             session: str | None = None, actor: str | None = None, at: str | None = None,
             redact: bool = True, now: dt.datetime | None = None,
             project: str | None = None, valid_from: str | None = None,
             valid_to: str | None = None) -> dict[str, Any]:
    """Validate a fact and append it to the archive; return the archived record."""
    fact = validate_fact(content, kind=kind, importance=importance, key=key, project=project,
                         valid_from=valid_from, valid_to=valid_to)
    return append_event(desk, FACT_EVENT, content=fact.content, payload=fact.payload(),
                        session=session, actor=actor, at=at, redact=redact, now=now)


@dataclass(frozen=True)
class FactRecord:
    """A fact as the digest reads it back from the archive."""

    id: str
    at: dt.datetime
    kind: str
    importance: int
    key: str | None
    content: str
    session: str | None = None
    project: str | None = None
    valid_from: dt.datetime | None = None
    valid_to: dt.datetime | None = None


def fact_from_record(record: Mapping[str, Any], where: str = "") -> FactRecord:
    """The FactRecord of an archive record of kind `fact`; ValueError when it is not a valid fact,
    NewerFactError (naming `where`, the record's `path:line`) when a newer desk wrote it.

    Anyone may `desk archive append --kind fact` by hand, so a record is validated again here.
    """
    payload = record.get("payload")
    if not isinstance(payload, dict):
        raise ValueError("a fact needs a payload with kind and importance")
    fact_version(payload, where=where, fact_id=record.get("id"))  # first: a newer fact may mean other fields
    content = record.get("content")
    try:
        fact = MemoryFact.model_validate({"content": content, "kind": payload.get("kind"),
                                          "importance": payload.get("importance"),
                                          "key": payload.get("key"), "project": payload.get("project"),
                                          "valid_from": payload.get("valid_from"),
                                          "valid_to": payload.get("valid_to")})
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    if not isinstance(record.get("id"), str) or not isinstance(record.get("at"), str):
        raise ValueError("a fact needs an id and a time")
    try:
        at = parse_time(record["at"], "at", form="stored")  # the archive's own spelling only
    except TimeFormatError as exc:
        raise ValueError(exc.message) from None
    session = record.get("session")
    return FactRecord(record["id"], at, fact.kind, fact.importance, fact.key, fact.content,
                      session if isinstance(session, str) else None, fact.project,
                      *(parse_time(t) if t else None for t in (fact.valid_from, fact.valid_to)))
