"""Structured facts (docs/design.md §8.0's MemoryFact): validated, then appended to the archive as kind `fact`.

A fact has a kind, an importance (1-5) and optionally a `key`, the question it answers (a conflict
domain such as `runtime.python-version`); `desk digest` distils facts into memories.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from desk.archive.store import append_event
from desk.digest.fact_version import (CONTENT_MAX, FACT_EVENT, FACT_SCHEMA, KEY_MAX, KEY_RE, VERSION_KEY,
                                      FactRecord, read_fact)
from desk.errors import RejectedError
from desk.text.times import TimeFormatError, format_time, parse_time
from desk.vocabulary import FACT_KINDS

__all__ = ["FACT_EVENT", "FactRecord", "MemoryFact", "add_fact", "fact_from_record", "key_problem", "validate_fact"]


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

    @field_validator("project", "key")
    @classmethod
    def _name(cls, value: str | None, info: ValidationInfo) -> str | None:
        from desk.layout import project_problem

        problem = value is not None and (project_problem if info.field_name == "project" else key_problem)(value)
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
        problems = [f"{'.'.join(str(part) for part in e['loc']) or 'fact'}: {e['msg'].removeprefix('Value error, ')}"
                    for e in exc.errors()]
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


def fact_from_record(record: Mapping[str, Any], where: str = "") -> FactRecord:
    """The FactRecord of an archive record of kind `fact` (anyone may append one by hand): ValueError
    when it is not a valid fact, NewerFactError (naming `where`) when a newer desk wrote it."""
    fact = read_fact(record, where)
    payload = record["payload"]
    try:
        model = MemoryFact.model_validate({"content": fact.content, "kind": fact.kind, "importance": fact.importance,
                                           "key": fact.key, "project": payload.get("project"),
                                           "valid_from": payload.get("valid_from"), "valid_to": payload.get("valid_to")})
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    return replace(fact, project=model.project,
                   valid_from=parse_time(model.valid_from) if model.valid_from else None,
                   valid_to=parse_time(model.valid_to) if model.valid_to else None)
