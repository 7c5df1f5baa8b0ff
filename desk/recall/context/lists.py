"""The sections desk writes as lists: MEMORY.md's lines of the active memories (a project's too),
the recent facts (seed 000) and the spot check's journal days."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from desk.layout import JOURNAL_DIR, DeskFolder
from desk.formats.memory_index import HEADER, IndexEntry
from desk.recall.context.files import read_file
from desk.recall.context.sections import Section, _trim_lines
from desk.text.escape import markdown_block, one_line
from desk.text.times import format_time

if TYPE_CHECKING:
    from desk.digest.recent import RecentFacts

_JOURNAL_DAY = re.compile(r"(\d{4}-\d{2}-\d{2})\.md")
FactsReader = Callable[[int, Mapping[str, IndexEntry]], "RecentFacts"]


def index_text(active: Mapping[str, IndexEntry], expired: int, broken: list[str], as_of: dt.datetime) -> str:
    """MEMORY.md's section: the active memories' lines, how many expired, which files were left out.
    A memory past its `valid_to` at `as_of` keeps its line, said to be no longer true."""
    lines = [HEADER.rstrip("\n"), ""]
    lines += [_index_line(e, as_of) for e in sorted(active.values(), key=lambda e: e.name)] or ["_No active memories._"]
    if expired:
        lines.append(f"_({expired} expired {'memory' if expired == 1 else 'memories'} not shown.)_")
    if broken:
        lines.append(f"_({', '.join(broken)} left out: the file does not parse or belongs to another "
                     "scope; run `desk validate`.)_")
    return "\n".join(lines) + "\n"


def _index_line(entry: IndexEntry, as_of: dt.datetime) -> str:
    """MEMORY.md's line for `entry`, every stored field on one line (escaped with the block)."""
    line = f"- [{one_line(entry.name)}](memory/{one_line(entry.name)}.md) — {one_line(entry.description)}"
    line += f" (expires {one_line(entry.expires)})" if entry.expires else ""
    if entry.valid_to and entry.has_ended(as_of):
        return line + f" (NO LONGER TRUE since {one_line(entry.valid_to)}: not current)"
    return line + (f" (true until {one_line(entry.valid_to)})" if entry.valid_to else "")


def facts_section(found: RecentFacts, limit: int, count: int) -> Section:
    """Seed 000's recent facts: newest first, each with its time and event id."""
    label = "Recent facts"
    lines = [f"Newest first, at most {count}: raw facts not yet distilled into memories (a keyed fact "
             "shows only as its domain's active memory)."]
    lines += [f"- {format_time(r.fact.at)} `{one_line(r.fact.id)}` {r.fact.kind}, importance "
              f"{r.fact.importance}: {one_line(r.fact.content)}" for r in found.facts] or ["_No recent facts._"]
    if found.excluded:
        lines.append("_(not shown: " + "; ".join(f"{n} {why}" for why, n in sorted(found.excluded.items())) + ")_")
    lines += [f"_(could not read {one_line(p)})_" for p in found.unreadable]
    section = _trim_lines("recent_facts", label, label, markdown_block("\n".join(lines) + "\n"), limit)
    section.path = None
    by_file: dict[str, list[str]] = {}
    for r in found.facts:
        by_file.setdefault(r.path, []).append(r.fact.id)
    section.sources = [{"path": p, "events": ids, "commit": None} for p, ids in by_file.items()]
    return section


def journal_sections(desk: DeskFolder, as_of: dt.datetime, days: int, limit: int,
                      read: dict[str, bytes | None]) -> list[Section]:
    """The newest `days` journal days dated on or before `as_of`'s day, newest first, sharing `limit`."""
    folder = desk.path(JOURNAL_DIR)
    last = format_time(as_of, "day")
    names = sorted((m.group(1) for p in (folder.iterdir() if folder.is_dir() else ())
                    if (m := _JOURNAL_DAY.fullmatch(p.name)) and m.group(1) <= last), reverse=True)[:days]
    if not names:
        text = f"_(no {JOURNAL_DIR}/ day on or before {last})_\n"
        return [Section("journal", f"{JOURNAL_DIR}/", None, text, limit)]
    out = []
    for day in names:
        rel = f"{JOURNAL_DIR}/{day}.md"
        text = markdown_block(read_file(desk.path(rel), rel, read, rel, desk.root))
        section = _trim_lines("journal", rel, rel, text, limit)
        section.sources = [{"path": rel}]
        limit = max(0, limit - section.tokens)
        out.append(section)
    return out
