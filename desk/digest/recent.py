"""The recent facts `desk context` shows beside MEMORY.md (seed 000, "Prompt 注入边界").

The seed's rule: the prompt carries the compact index and at most N (default 6) recent workspace
facts, and a keyed fact that the digest has not distilled never appears as a recent fact: it would
bypass the conflict policy, and the prompt must see only each conflict domain's active revision.
So, newest first, a fact is shown unless

- it has a `key`: before distillation it is a raw candidate, after it the memory is in MEMORY.md
  (this covers "a keyed fact whose domain has an active memory or an open case");
- its domain has an open conflict case (`.system/conflicts.json`), or the case observed it;
- it is already an active memory: a memory whose body is the fact's content (the digest's
  promotion) or whose `source_event` is the fact's id. It is shown as that memory, not twice.

Read-only; the archive is read one UTC day at a time from the newest day at or before `as_of`, and
reading stops once `count` facts are found. A damaged archive file or queue never keeps the
assistant from waking up: what could not be read is reported, and with an unreadable queue no fact
is shown (it could belong to an open case). So is a fact a newer desk wrote (desk.digest.fact_version):
left out and reported with its `path:line`, never shown as if it were an older fact.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import json
import re

from desk.formats.archive import at_key
from desk.archive.store import archive_files, read_events
from desk.digest.fact_version import NewerFactError, fact_version
from desk.errors import DeskError, Finding
from desk.layout import CONFLICTS_FILE, DeskFolder
from desk.text.normalize import content_key
from desk.text.times import TimeFormatError, format_time, parse_time
from desk.vocabulary import FACT_KINDS

FACT_EVENT = "fact"  # desk.digest.facts.FACT_EVENT
# desk.digest.facts' rules, checked here without pydantic (a cold `desk context` must not load
# it); tests/digest/test_recent.py keeps the two in agreement.
KEY_RE = re.compile(r"^[a-z0-9]+(?:[._-][a-z0-9]+)*$")
KEY_MAX = 80
CONTENT_MAX = 4000


@dataclass(frozen=True, slots=True)
class FactRecord:
    """The fields of a fact the recent facts need (desk.digest.facts.FactRecord's)."""

    id: str
    at: dt.datetime
    kind: str
    importance: int
    key: str | None
    content: str


def fact_from_record(rec: Mapping[str, Any], where: str = "") -> FactRecord:
    """A valid fact record's fields; ValueError otherwise, NewerFactError for a fact a newer desk
    wrote (as desk.digest.facts.fact_from_record)."""
    payload, content = rec.get("payload"), rec.get("content")
    if not isinstance(payload, dict):
        raise ValueError("a fact needs a payload and content")
    fact_version(payload, where=where, fact_id=rec.get("id"))
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
        at = parse_time(rec["at"], "at", form="stored")
    except TimeFormatError as exc:
        raise ValueError(exc.message) from None
    return FactRecord(rec["id"], at, kind, importance, key, content)


def domain_id(fact: FactRecord) -> str:
    """desk.digest.policy.domain_id."""
    return f"key:{fact.key}" if fact.key is not None else f"content:{fact.kind}:{content_key(fact.content)}"


def _open_cases(data: bytes | None) -> list[dict[str, Any]]:
    """The open cases of the queue; a file that is not plainly well formed goes through
    desk.digest.conflicts.parse_queue, which names what is wrong."""
    if data is None:
        return []
    try:
        doc = json.loads(data)
        cases = doc["cases"] if isinstance(doc, dict) and doc.get("schema_version") in (1, 2) else None
    except (ValueError, KeyError):
        cases = None
    if not isinstance(cases, list) or not all(isinstance(c, dict) and isinstance(c.get("domain"), str)
                                              and isinstance(c.get("status"), str) for c in cases):
        from desk.digest.conflicts import parse_queue

        cases = parse_queue(data)
    return [c for c in cases if c.get("status") == "open"]


@dataclass(frozen=True, slots=True)
class RecentFact:
    """A fact as `desk context` shows it, with where it was read."""

    fact: FactRecord
    path: str
    line: int

    def to_json(self) -> dict[str, Any]:
        f = self.fact
        return {"id": f.id, "at": format_time(f.at), "kind": f.kind, "importance": f.importance,
                "content": f.content, "path": self.path, "line": self.line}


@dataclass(slots=True)
class RecentFacts:
    """The recent facts context shows, and what was left out and why."""

    facts: list[RecentFact] = field(default_factory=list)
    excluded: dict[str, int] = field(default_factory=dict)  # why -> how many (of those read)
    unreadable: list[str] = field(default_factory=list)  # `path: problem`
    files: list[str] = field(default_factory=list)  # archive files read


def recent_facts(desk: DeskFolder, *, as_of: dt.datetime, count: int,
                 memories: Mapping[str, Any], project: str | None = None) -> RecentFacts:
    """The newest `count` facts at or before `as_of` that the prompt may see (module docstring).

    `memories`: the active memories by name, as IndexEntry (their `body_key` and `source_event`).
    The desk-wide facts and `project`'s are seen; another project's never are, not even counted
    (docs/scopes.md: isolation).
    """
    out = RecentFacts()
    if count <= 0:
        return out
    try:
        cases = _open_cases(_read(desk, CONFLICTS_FILE))
    except DeskError as exc:
        out.unreadable.append(f"{CONFLICTS_FILE}: {exc.message}")
        return out
    case_domains = {(c.get("project"), c["domain"]) for c in cases}
    case_facts = {i for c in cases for i in c.get("observed_fact_ids") or [] if isinstance(i, str)}
    known: list[set[Any]] = []  # the memories' body keys and source events, read at the first fact

    def memory_sets() -> tuple[set[Any], set[Any]]:
        if not known:  # `desk context` passes its memories unloaded: a desk without facts never loads them
            known.append({getattr(e, "body_key", None) for e in memories.values()})
            known.append({getattr(e, "source_event", None) for e in memories.values()} - {None})
        return known[0], known[1]

    high = format_time(as_of, "microsecond")
    by_day: dict[str, list[str]] = {}
    for f in archive_files(desk):
        if f.day <= high[:10]:
            by_day.setdefault(f.day, []).append(f.rel)
    for day in sorted(by_day, reverse=True):
        found: list[tuple[str, str, RecentFact]] = []
        for rel in by_day[day]:
            out.files.append(rel)
            problems: list[Finding] = []
            try:
                events_read = read_events(desk, rel, problems)
            except (DeskError, OSError) as exc:
                out.unreadable.append(f"{rel}: {getattr(exc, 'message', exc)}")
                continue
            for event in events_read:
                rec = event.record
                if rec.get("kind") != FACT_EVENT or at_key(str(rec.get("at", ""))) > high:
                    continue
                payload = rec.get("payload")
                scope = payload.get("project") if isinstance(payload, dict) else None
                if scope is not None and scope != project:
                    continue  # another project's fact: never seen here
                try:
                    fact = fact_from_record(rec, f"{rel}:{event.line}")
                except ValueError:
                    continue  # not a valid fact: `desk digest` reports it
                except NewerFactError as exc:  # said, never shown as if it were an older fact
                    out.unreadable.append(f"{exc.message}; upgrade desk (`pip install -U desk`)")
                    continue
                why = _excluded(fact, scope, case_domains, case_facts, *memory_sets())
                if why:
                    out.excluded[why] = out.excluded.get(why, 0) + 1
                    continue
                found.append((at_key(rec["at"]), fact.id, RecentFact(fact, rel, event.line)))
        found.sort(key=lambda item: (item[0], item[1]), reverse=True)
        out.facts += [item[2] for item in found[:count - len(out.facts)]]
        if len(out.facts) >= count:
            break
    return out


def _excluded(fact: FactRecord, scope: str | None, case_domains: set[tuple[str | None, str]],
              case_facts: set[str], bodies: set[Any], events: set[Any]) -> str | None:
    if fact.key is not None:
        return "keyed (shown only as its domain's active memory)"
    if fact.id in case_facts or (scope, domain_id(fact)) in case_domains:
        return "in an open conflict case"
    if fact.id in events or content_key(fact.content) in bodies:
        return "already a memory"
    return None


def _read(desk: DeskFolder, rel: str) -> bytes | None:
    return desk.read_if_present(rel)
