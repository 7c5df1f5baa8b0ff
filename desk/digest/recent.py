"""The recent facts `desk context` shows beside MEMORY.md (seed 000, "Prompt 注入边界").

Newest first, a fact is shown unless it has a `key` (a raw candidate, or a memory already), its
domain has an open conflict case, or it is an active memory already. The archive is read a day at
a time from `as_of` back; what cannot be read is reported, never blocks a wake-up.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import json

from desk.formats.archive import at_key
from desk.archive.store import archive_files, read_events
from desk.digest.fact_version import FACT_EVENT, FactRecord, NewerFactError, domain_id, read_fact
from desk.errors import DeskError, Finding
from desk.layout import CONFLICTS_FILE, DeskFolder
from desk.text.normalize import content_key
from desk.text.times import format_time


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
    """The newest `count` facts at or before `as_of` that the prompt may see, desk-wide and
    `project`'s; `memories`: the active memories' IndexEntry by name."""
    out = RecentFacts()
    if count <= 0:
        return out
    try:
        cases = _open_cases(desk.read_if_present(CONFLICTS_FILE))
    except DeskError as exc:
        out.unreadable.append(f"{CONFLICTS_FILE}: {exc.message}")
        return out
    case_domains = {(c.get("project"), c["domain"]) for c in cases}
    case_facts = {i for c in cases for i in c.get("observed_fact_ids") or [] if isinstance(i, str)}
    @functools.cache  # `desk context` passes its memories unloaded: a desk without facts never loads them
    def memory_sets() -> tuple[set[Any], set[Any]]:
        return ({getattr(e, "body_key", None) for e in memories.values()},
                {getattr(e, "source_event", None) for e in memories.values()} - {None})

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
                    fact = read_fact(rec, f"{rel}:{event.line}")
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
