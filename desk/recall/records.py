"""What recall searches: records made from memory files and archived conversation events. A record
is its terms (`desk.text.terms`), its time and what a hit shows; an event's speaker and searchable
`meta` values are a second field, posted as `FIELD_MARK` + term (docs/recall.md)."""

from __future__ import annotations

import functools
import json
import re
import zlib
from collections import Counter
from dataclasses import dataclass
from typing import Any

from desk.errors import DeskError, InvalidFileError
from desk.layout import DeskFolder, memory_name, project_file
from desk.text.times import TimeFormatError, format_time, parse_time
from desk.text.terms import (ASK_TAG, FIELD_MARK, STATES_TAG, TIME_TAG, is_question, states_then_asks,
                              terms_name_time, text_terms)
from desk.vocabulary import CONFIG_PATH, SEARCHABLE_META

CONVERSATION_KINDS = ("inbound", "outbound")
MEMORY, CONVERSATION = 0, 1
KIND_NAMES = ("memory", "conversation")
SNIPPET_SOURCE_CHARS = 2000


@functools.cache
def _stored_time() -> re.Pattern[str]:  # compiled when a record is built, not by every query
    return re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{6}))?Z")


_DAY_STARTS: dict[str, int | None] = {}  # midnight UTC of each day seen, in whole seconds


def _timestamp(value: object) -> float | None:
    """Seconds since the epoch of a time as `parse_time` reads it, or None when absent or unreadable.
    The two stored spellings are computed from a per-day cache (an import spans few days)."""
    if not isinstance(value, str) or not value:
        return None
    stored = _stored_time().fullmatch(value)
    if stored is not None:
        day, hour, minute, second, fraction = stored.groups()
        start = _DAY_STARTS.get(day, -1)
        if start == -1:
            try:
                start = _DAY_STARTS[day] = int(parse_time(day, form="day").timestamp())
            except TimeFormatError:
                start = _DAY_STARTS[day] = None
        h, m, sec = int(hour), int(minute), int(second)
        if start is None or h > 23 or m > 59 or sec > 59:
            return None
        # The same float as parse_time(value).timestamp(): microseconds as an integer, divided once.
        return ((start + h * 3600 + m * 60 + sec) * 1_000_000 + int(fraction or 0)) / 1_000_000
    try:
        return parse_time(value).timestamp()
    except TimeFormatError:
        return None


@dataclass(frozen=True, slots=True)
class Record:
    """One searchable record before it gets a number."""

    rid: str
    kind: int
    time: float | None
    expires: float | None
    terms: Counter[str]
    data: dict[str, Any]
    tags: tuple[str, ...] = ()  # posted like terms, never counted in the length: scope filters


PROJECTS_TAG = "\0project"  # every project memory's record (no query term holds a NUL)
VALIDITY_TAG = "\0validity"  # every memory record with a valid_from or valid_to


def project_tag(project: str) -> str:
    """The tag of the records of one project's memories."""
    return f"{PROJECTS_TAG}:{project}"


def memory_record(data: bytes, path: str) -> Record | None:
    """The record of one memory file, or None when the file does not parse (not searchable)."""
    # Imported here: PyYAML only when a memory file changed, not on every warm `desk recall`.
    from desk.formats.memory_file import parse_memory

    name, project = memory_name(path), None
    if name is None:
        found = project_file(path)
        if found is None or found[0] != "memory":
            return None
        _, project, name = found
    assert name is not None
    try:
        memory = parse_memory(data, path, name)
    except InvalidFileError:
        return None
    meta = memory.meta
    if meta.project != project:
        return None  # copied from another scope: never read into a recall (docs/scopes.md)
    stamp = meta.updated or meta.created
    text = " ".join([name.replace("-", " "), meta.description, *meta.triggers, memory.body])
    shown: dict[str, Any] = {"type": meta.type, "name": name, "description": meta.description,
                             "text": memory.body[:SNIPPET_SOURCE_CHARS], "importance": meta.importance,
                             "provenance": {"path": path, "source": meta.source,
                                            "source_event": meta.source_event,
                                            "updated": format_time(stamp) if stamp else None}}
    tags: tuple[str, ...] = () if project is None else (PROJECTS_TAG, project_tag(project))
    if meta.valid_from or meta.valid_to:  # when the fact was true (docs/time.md): found by its tag
        shown["provenance"].update({k: format_time(v) for k, v in (("valid_from", meta.valid_from),
                                                                  ("valid_to", meta.valid_to)) if v})
        tags += (VALIDITY_TAG,)
    if project is not None:
        shown["project"] = project
    return Record(
        f"memory:{name}" if project is None else f"memory:{project}/{name}", MEMORY,
        stamp.timestamp() if stamp else None, meta.expires.timestamp() if meta.expires else None,
        Counter(text_terms(text)), shown, tags)


def conversation_terms(rec: dict[str, Any], desk_id: str | None = None) -> Counter[str] | None:
    """The terms of what an archived inbound/outbound event says, else None (not a record; nor is
    one carrying another desk's id: docs/design.md §8.1)."""
    content = rec.get("content")
    if rec.get("kind") not in CONVERSATION_KINDS or not isinstance(content, str) or not content.strip():
        return None
    if desk_id is not None and rec.get("desk_id") != desk_id:
        return None
    return Counter(text_terms(content))


def searchable_meta(desk: DeskFolder) -> tuple[str, ...]:
    """desk.json's `recall.meta_fields` without pydantic (the gate validates it); else the default."""
    try:
        fields = json.loads(desk.read(CONFIG_PATH))["recall"]["meta_fields"]
    except (OSError, DeskError, ValueError, LookupError, TypeError):
        return SEARCHABLE_META
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        return SEARCHABLE_META
    return tuple(sorted(set(fields)))


def conversation_side(rec: dict[str, Any], terms: dict[str, int], meta_fields: tuple[str, ...]) -> dict[str, int]:
    """An event's second field, posted but not counted in its length: the speaker and the `meta`
    values of `meta_fields` (never `desk.*`) as `FIELD_MARK` + term; `TIME_TAG` when it names a
    time, `ASK_TAG` when it ends with a question, `STATES_TAG` when it states something first."""
    side = [rec["actor"]] if isinstance(rec.get("actor"), str) else []
    meta = rec.get("meta")
    if isinstance(meta, dict):
        side += [v for k, v in meta.items() if k in meta_fields and isinstance(v, str) and not k.startswith("desk.")]
    out = dict(_side_terms(" ".join(side))) if side else {}
    if terms_name_time(terms):
        out[TIME_TAG] = 1
    content = rec.get("content")
    if isinstance(content, str) and is_question(content):
        out[ASK_TAG] = 1
        if states_then_asks(content):
            out[STATES_TAG] = 1
    return out


@functools.lru_cache(maxsize=4096)
def _side_terms(text: str) -> tuple[tuple[str, int], ...]:
    """The speaker/meta field's terms of `text` (speakers and captions repeat: computed once each)."""
    out: dict[str, int] = {}
    for term in text_terms(text):
        key = FIELD_MARK + term
        out[key] = out.get(key, 0) + 1
    return tuple(out.items())


def event_session(rec: dict[str, Any]) -> int:
    """A stable 32-bit number of the event's session (0: none): the ranker's neighbours."""
    session = rec.get("session")
    if not isinstance(session, str) or not session:
        return 0
    return zlib.crc32(session.encode("utf-8", "surrogatepass")) or 1


def event_time(rec: dict[str, Any]) -> float | None:
    return _timestamp(rec.get("at"))


def event_data(rec: dict[str, Any], path: str, line: int, offset: int) -> dict[str, Any]:
    """What a hit on an archived event shows: snippet source and provenance (the event itself)."""
    content = rec.get("content")
    meta = rec.get("meta") if isinstance(rec.get("meta"), dict) else {}
    return {"type": rec.get("kind"), "text": content[:SNIPPET_SOURCE_CHARS] if isinstance(content, str) else "",
            "provenance": {"event_id": rec.get("id"), "session": rec.get("session"),
                           "actor": rec.get("actor"), "at": rec.get("at"), "file": path, "line": line,
                           "offset": offset, "meta": meta}}

