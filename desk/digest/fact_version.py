"""A fact archive record read back without pydantic (a cold `desk context` must not load it), and
which version of the fact format it is written in.

Facts are never migrated, so each carries `payload.schema_version` (none: 1) and every earlier
version is read forever; a newer one is refused with its `path:line`, never read as older.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from desk.errors import DeskError
from desk.text.normalize import content_key
from desk.text.times import TimeFormatError, parse_time
from desk.vocabulary import FACT_KINDS

FACT_EVENT = "fact"
KEY_MAX = 80
CONTENT_MAX = 4000
# Lowercase words joined by single `.`, `_` or `-`: a key names a question, never its answer.
KEY_RE = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*")
FACT_SCHEMA = 2
READABLE_FACT_SCHEMAS = (1, 2)
VERSION_KEY = "schema_version"


class NewerFactError(DeskError):
    """A fact written by a newer desk (exit 1): the reader stops rather than misread it."""


def fact_version(payload: Mapping[str, Any], *, where: str = "", fact_id: object = None) -> int:
    """The fact format version of `payload` (1 without the field): ValueError when it is not a whole
    number >= 1, NewerFactError naming `where` (`path:line`) when it is newer than FACT_SCHEMA."""
    version = payload.get(VERSION_KEY, 1)
    if type(version) is not int or version < 1:
        raise ValueError(f"payload.{VERSION_KEY}: must be a whole number 1 or more, not {version!r}")
    if version > FACT_SCHEMA:
        raise NewerFactError(
            f"{where or 'archive'}: fact {fact_id if isinstance(fact_id, str) else '(no id)'} has "
            f"{VERSION_KEY} {version}: made by a newer desk (this desk reads fact versions "
            f"{', '.join(map(str, READABLE_FACT_SCHEMAS))}), so it is not read as an older one",
            hint="upgrade desk (`pip install -U desk`); nothing was changed")
    return version


@dataclass(frozen=True, slots=True)
class FactRecord:
    """A fact as the digest and `desk context` read it back from the archive."""

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


def domain_id(fact: FactRecord) -> str:
    """The conflict domain: the key (or kind and content), within the fact's project scope, so a
    key in project A never supersedes or conflicts with the same key in project B or desk-wide."""
    scope = f"project:{fact.project}/" if fact.project is not None else ""
    if fact.key is not None:
        return f"{scope}key:{fact.key}"
    return f"{scope}content:{fact.kind}:{content_key(fact.content)}"


def read_fact(rec: Mapping[str, Any], where: str = "") -> FactRecord:
    """The fields desk.digest.facts.MemoryFact checks of an archive record (not its project and
    validity); ValueError when they are not a valid fact, NewerFactError for a newer desk's."""
    payload, content = rec.get("payload"), rec.get("content")
    if not isinstance(payload, dict):
        raise ValueError("a fact needs a payload and content")
    fact_version(payload, where=where, fact_id=rec.get("id"))  # first: a newer fact may mean other fields
    if not isinstance(content, str):
        raise ValueError("a fact needs a payload and content")
    kind, importance, key = payload.get("kind"), payload.get("importance"), payload.get("key")
    content = content.strip()
    if (not content or len(content) > CONTENT_MAX or "\0" in content or kind not in FACT_KINDS
            or type(importance) is not int or not 1 <= importance <= 5
            or not (key is None or (isinstance(key, str) and len(key) <= KEY_MAX and KEY_RE.fullmatch(key)))
            or not isinstance(rec.get("id"), str) or not isinstance(rec.get("at"), str)):
        raise ValueError("not a valid fact")
    try:
        at = parse_time(rec["at"], "at", form="stored")  # the archive's own spelling only
    except TimeFormatError as exc:
        raise ValueError(exc.message) from None
    session = rec.get("session")
    return FactRecord(rec["id"], at, kind, importance, key, content, session if isinstance(session, str) else None)
