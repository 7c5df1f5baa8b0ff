"""`desk digest`: the day's journal and the distilled memories, in one commit (docs/design.md §3, path C).

The journal, the memories the policy promoted, merged or superseded, MEMORY.md, the conflict queue
and the archive's growth (so evidence ids are committed) land together; nothing changed, no commit.
`project` distils that project's facts into its own memory folder and writes no journal.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass, field, replace
from typing import Any

from desk.archive.checkpoint import archive_trailer_lines, pending_archive
from desk.archive.store import archive_lock_path, iter_events
from desk.digest.conflicts import open_cases, parse_queue, reconcile, render_queue
from desk.digest.fact_version import fact_version
from desk.digest.facts import FACT_EVENT, FactRecord, fact_from_record
from desk.digest.journal import existing_narrative, journal_path, one_line, render_journal, run_summarizer
from desk.digest.memory_writes import (MemoryWrites, active_of, after, forgotten, locate, merged_memory,
                                       new_memory, places_of, replaced_memory, scope_entries, scoped_index,
                                       scoped_path)
from desk.digest.policy import Tie, decide, group_facts
from desk.errors import UsageError
from desk.layout import CONFLICTS_FILE, JOURNAL_DIR, DeskFolder
from desk.storage.lock import desk_lock
from desk.text.secrets import redact
from desk.text.times import format_time, parse_time, utc_now
from desk.transaction import Transaction, commit_message, transaction

_US = dt.timedelta(microseconds=1)


@dataclass
class DigestResult:
    """What one digest run did (the `--json` shape of `desk digest`)."""

    date: str
    as_of: str
    journal: str | None  # None: a project run writes no journal
    status: str = "unchanged"  # committed | unchanged
    commit: str | None = None
    events: int = 0
    facts: int = 0
    invalid_facts: int = 0
    promoted: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    replaced: list[dict[str, str]] = field(default_factory=list)  # per superseded memory: was, now
    conflicts: list[str] = field(default_factory=list)  # cases opened by this run
    conflicts_closed: list[str] = field(default_factory=list)
    open_conflicts: int = 0
    stale: int = 0
    unconfirmed: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    archive: list[str] = field(default_factory=list)  # archive files whose growth was committed
    paths: list[str] = field(default_factory=list)
    project: str | None = None
    proposed: list[str] = field(default_factory=list)  # review mode: memories proposed, not written
    proposal: str | None = None  # their proposal's id (docs/review.md)

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


def digest(desk: DeskFolder, *, date: str | dt.date | None = None, as_of: str | dt.datetime | None = None,
           summarizer: str | None = None, now: dt.datetime | None = None,
           project: str | None = None) -> DigestResult:
    """Write `journal/D.md` and distil old facts into memories; one commit, none when unchanged.
    `as_of` (default: now) is the run's clock: later events are unseen, facts count when `min_age_days`
    older; `date` (default: its day) picks the journal; `summarizer` writes its narrative."""
    if project is not None:
        from desk.memory.reads import require_project

        require_project(project)
        if date is not None or summarizer is not None:
            raise UsageError("--date and --summarizer write the journal, which a --project digest "
                             "does not write", hint="run `desk digest` without --project for the journal")
    clock = parse_time(as_of if as_of is not None else now or utc_now(), "--as-of")
    moment = parse_time(date, "--date", form="day") if date is not None else clock
    start = moment.replace(hour=0, minute=0, second=0, microsecond=0)  # midnight UTC of the day
    day = start.date()
    if start > clock:
        raise UsageError(f"--date {day} is after --as-of {format_time(clock)}",
                         hint="a journal covers a day that has started")
    until = min(start + dt.timedelta(days=1), clock + _US)
    events = _day_records(desk, start, until) if project is None else []
    narrative = run_summarizer(summarizer, events, day=day) if summarizer else None
    facts, invalid = read_facts(desk, clock - dt.timedelta(days=desk.config.distill.min_age_days), project)
    result = DigestResult(day.isoformat(), format_time(clock), journal_path(day) if project is None else None,
                          events=len(events), facts=len(facts), invalid_facts=invalid, project=project)
    with transaction(desk) as tx:
        writes, ties, settled = _distill(desk, tx, facts, clock, result)
        old_queue = desk.read_if_present(CONFLICTS_FILE)
        queue = reconcile(parse_queue(old_queue), ties, settled, desk.config.desk_id, clock, project)
        result.conflicts, result.conflicts_closed = queue.opened, queue.superseded
        result.open_conflicts = len(open_cases(queue.cases))
        if queue.changed:
            writes[CONFLICTS_FILE] = render_queue(queue.cases)
        if result.journal is not None:
            current = desk.read_if_present(result.journal)
            narrative = narrative or existing_narrative(current)
            journal = _redacted(render_journal(day, events, narrative))
            if current != journal:
                writes[result.journal] = journal
        _commit(desk, tx, writes, result)
    return result


def _distill(desk: DeskFolder, tx: Transaction, facts: list[FactRecord], clock: dt.datetime,
             result: DigestResult) -> tuple[dict[str, bytes | None], list[Tie], set[str]]:
    """The memory writes (and MEMORY.md) the policy asks for, the ties, the settled domains."""
    policy = desk.config.distill
    project = result.project
    domains = group_facts(facts, policy, clock)
    places = {did: places_of(d) for did, d in domains.items()}
    tx.require_clean(sorted({scoped_path(n, project) for names in places.values() for n in names}
                            | {scoped_index(project), CONFLICTS_FILE}
                            | ({result.journal} if result.journal else set())))
    homes, existing = locate(desk, domains, places, result.skipped, project)
    by_id = {f.id: f for f in facts}
    actives = {did: active_of(homes[did], existing[homes[did]], by_id)
               for did in homes if homes[did] in existing}
    live = {d: domains[d] for d in homes}
    plan = decide(live, actives, policy)
    gone = forgotten(desk, {c.domain: homes[c.domain] for c in plan.promote}, project)
    if gone:  # a person forgot these memories: only facts since then may bring them back
        for did, when in gone.items():
            live[did] = after(live[did], when)
        plan = decide({d: dom for d, dom in live.items() if dom.candidates}, actives, policy)
    result.stale, result.unconfirmed = len(plan.stale), len(plan.unconfirmed)
    memories = MemoryWrites(desk, result.skipped, project)
    for candidate in plan.promote:
        name = homes[candidate.domain]
        if memories.land(name, new_memory(name, candidate, clock, project)):
            result.promoted.append(name)
    for active, candidate in plan.supersede:
        if memories.land(active.name, replaced_memory(existing[active.name], candidate, clock)):
            result.superseded.append(active.name)
            result.replaced.append({"name": active.name, "was": one_line(active.content, 100),
                                    "now": one_line(candidate.content, 100)})
    times = {i: f.at for i, f in by_id.items()}
    for active, candidate in plan.merge:
        if active.name not in memories.writes:  # same value, so no gate: only evidence grows
            memories.land(active.name, merged_memory(existing[active.name], candidate, clock, times),
                          gated=False)
            result.merged.append(active.name)
    if memories.proposed:  # review mode: these are a proposal, not this run's writes
        for names in (result.promoted, result.superseded, result.merged):
            names[:] = [n for n in names if n not in memories.proposed]
        result.replaced = [r for r in result.replaced if r["name"] not in memories.proposed]
        _propose(desk, memories, result)
    # A value this run made active carries its memory name into the case it is weighed in.
    ties = [replace(t, incumbent=replace(t.incumbent, name=homes[t.domain.id]))
            if t.incumbent is not None and not t.incumbent.name else t for t in plan.ties]
    return memories.with_index(), ties, plan.settled


def _propose(desk: DeskFolder, memories: MemoryWrites, result: DigestResult) -> None:
    """The memories review mode proposes, as one proposal on HEAD (docs/review.md), but for those a
    pending or rejected proposal already holds."""
    import copy

    from desk.formats.memory_index import IndexEntry, render_index
    from desk.memory.review import already_proposed
    from desk.transaction import Proposed

    fresh = {n: m for n, m in memories.proposed.items()
             if not already_proposed(desk, scoped_path(n, result.project), m.body)}
    result.proposed = sorted(memories.proposed)
    if not fresh:
        return
    entries = scope_entries(desk, result.project)
    entries.update({n: IndexEntry.of(m) for n, m in fresh.items()})
    writes: dict[str, bytes | None] = {scoped_path(n, result.project): m.render() for n, m in fresh.items()}
    writes[scoped_index(result.project)] = render_index(entries.values())
    proposing = copy.copy(desk)
    proposing.proposing = os.urandom(6).hex()
    message = commit_message(f"digest: {result.date} (proposed)" + (f" (project {result.project})"
                                                                     if result.project else ""),
                             {"Desk-Op": "digest", "Desk-Project": result.project, "Desk-Date": result.date,
                              "Desk-As-Of": result.as_of}, "proposed: " + ", ".join(sorted(fresh)))
    try:
        Transaction(proposing).commit(writes, message)
    except Proposed as done:
        result.proposal = done.proposal


def _commit(desk: DeskFolder, tx: Transaction, writes: dict[str, bytes | None], result: DigestResult) -> None:
    """Commit `writes` with the archive's growth; no commit when there is nothing at all. Desk lock
    (held by `tx`) first, then the archive lock: the order `desk checkpoint` uses."""
    with desk_lock(archive_lock_path(desk)):
        archive, _old, _torn = pending_archive(desk)  # a torn tail waits for the next run
        result.archive = sorted(archive)
        writes.update(archive)
        if not writes:
            return
        result.paths = sorted(writes)
        message = _message(result) + "".join(f"{line}\n" for line in archive_trailer_lines(archive))
        result.commit = tx.commit(writes, message)
        result.status = "committed"


def read_facts(desk: DeskFolder, cutoff: dt.datetime, project: str | None = None
               ) -> tuple[list[FactRecord], int]:
    """The valid facts of one scope (desk-wide, or `project`'s) stated up to `cutoff`, and how many
    fact records were invalid."""
    facts, invalid = [], 0
    for event in iter_events(desk, until=cutoff + _US, kinds=[FACT_EVENT]):
        try:
            fact = fact_from_record(event.record, f"{event.path}:{event.line}")  # a newer fact: refused
        except ValueError:
            invalid += 1
            continue
        if fact.project == project:
            facts.append(fact)
    return facts, invalid


def _day_records(desk: DeskFolder, since: dt.datetime, until: dt.datetime) -> list[dict[str, Any]]:
    """The archive records of a journal's day; NewerFactError (path:line) for a newer desk's fact."""
    records = []
    for event in iter_events(desk, since=since, until=until):
        payload = event.record.get("payload")
        if event.record.get("kind") == FACT_EVENT and isinstance(payload, dict):
            fact_version(payload, where=f"{event.path}:{event.line}", fact_id=event.record.get("id"))
        records.append(event.record)
    return records


def _redacted(journal: bytes) -> bytes:
    """The journal with any known secret replaced: an event archived with --no-redact stays raw there."""
    text, kinds = redact(journal.decode("utf-8"))
    return text.encode() if kinds else journal


def regenerate_journal(desk: DeskFolder, path: str) -> bytes | None:
    """journal/D.md rendered again from the archive, keeping its narrative (desk sync, when two clones
    both digested that day); None when `path` is not a journal page."""
    stem = path.removeprefix(JOURNAL_DIR + "/").removesuffix(".md")
    try:
        day = dt.date.fromisoformat(stem)
    except ValueError:
        return None
    start = dt.datetime(day.year, day.month, day.day, tzinfo=dt.timezone.utc)
    events = _day_records(desk, start, start + dt.timedelta(days=1))
    narrative = existing_narrative(desk.read_if_present(path))
    return _redacted(render_journal(day, events, narrative))


def _message(r: DigestResult) -> str:
    body = [f"{label}: {', '.join(names)}" for label, names in (
        ("promoted", r.promoted), ("merged", r.merged), ("superseded", r.superseded),
        ("conflict cases opened", r.conflicts), ("conflict cases superseded", r.conflicts_closed)) if names]
    body += [f"{c['name']}: {json.dumps(c['was'], ensure_ascii=False)} -> "
             f"{json.dumps(c['now'], ensure_ascii=False)}" for c in r.replaced]
    subject = f"digest: {r.date}" + (f" (project {r.project})" if r.project else "")
    return commit_message(subject, {
        "Desk-Op": "digest", "Desk-Project": r.project, "Desk-Date": r.date, "Desk-As-Of": r.as_of,
        "Desk-Promoted": str(len(r.promoted)), "Desk-Merged": str(len(r.merged)),
        "Desk-Superseded": str(len(r.superseded)), "Desk-Conflicts": str(len(r.conflicts)),
        "Desk-Stale": str(r.stale)}, "\n".join(body) or None)
