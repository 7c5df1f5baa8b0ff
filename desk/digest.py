"""`desk digest`: the day's journal and the distilled memories, in one commit (DESIGN.md §3, path C).

One run reads the archive (the day's events for `journal/D.md`, every fact old enough for the
distill policy), decides with the pure policy in `desk.distill`, and commits the journal, the memory
files it promoted, merged or superseded, MEMORY.md and `.system/conflicts.json` together, with
trailers counting what happened. Nothing changed means no commit: a rerun over the same archive is
a no-op. It never writes NOW.md (the assistant's own note; GUARD's `digest-now` rule enforces it).

Archive growth since the last commit goes into the same commit (as `desk checkpoint` would commit
it, with its `Desk-Archive-Head` trailers), so the event ids in memories' `evidence` are committed.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from desk import gate
from desk.conflicts import CONFLICTS_FILE, open_cases, parse_queue, reconcile, render_queue
from desk.desk import INDEX_FILE, Desk
from desk.distill import (Active, Candidate, Domain, alternate_name, decide, group_facts,
                          kept_evidence, memory_name)
from desk.errors import InvalidFileError, UsageError
from desk.facts import FACT_EVENT, FactRecord, fact_from_record
from desk.frontmatter import format_time
from desk.git import Commit
from desk.index import IndexEntry, committed_files, load_entries, memory_path, render_index
from desk.journal import existing_narrative, journal_path, one_line, render_journal, run_summarizer
from desk.lock import desk_lock
from desk.memory import DESCRIPTION_MAX, TRIGGER_MAX, MemoryFile, build_meta, normalize_body, parse_memory
from desk.textnorm import content_key, normalize
from desk.transaction import Transaction, commit_message, transaction

RULE_FILES = ("AGENTS.md", "SOUL.md")
DAY_COMMIT_PATHS = ("memory/", "MISTAKES.md")
_US = dt.timedelta(microseconds=1)


@dataclass
class DigestResult:
    """What one digest run did (the `--json` shape of `desk digest`)."""

    date: str
    as_of: str
    journal: str
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

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _as_time(value: str | dt.datetime | None, what: str) -> dt.datetime | None:
    if value is None or isinstance(value, dt.datetime):
        return value
    from desk.archive_format import parse_time

    return parse_time(value, what).astimezone(dt.timezone.utc)


def _as_day(value: str | dt.date | None) -> dt.date | None:
    if value is None or isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise UsageError(f"--date: {value!r} is not a day like 2026-11-29") from None


def digest(desk: Desk, *, date: str | dt.date | None = None, as_of: str | dt.datetime | None = None,
           summarizer: str | None = None, now: dt.datetime | None = None) -> DigestResult:
    """Write `journal/D.md` and distil old facts into memories; one commit, none when unchanged.

    `as_of` (default: now) is the clock of the run: events after it are not seen, facts count when
    they are `min_age_days` older than it, and it stamps created/updated times. `date` (default:
    the day of `as_of`) picks the journal. `summarizer` is a command that reads the day's events
    as JSONL and prints a Markdown narrative.
    """
    clock = _as_time(as_of, "--as-of") or now or utc_now()
    day = _as_day(date) or clock.date()
    if day > clock.date():
        raise UsageError(f"--date {day} is after --as-of {format_time(clock)}",
                         hint="a journal covers a day that has started")
    from desk.archive import iter_events

    start = dt.datetime(day.year, day.month, day.day, tzinfo=dt.timezone.utc)
    until = min(start + dt.timedelta(days=1), clock + _US)
    events = [e.record for e in iter_events(desk, since=start, until=until)]
    narrative = run_summarizer(summarizer, events) if summarizer else None
    policy = desk.config.distill
    cutoff = clock - dt.timedelta(days=policy.min_age_days)
    facts, invalid = _read_facts(desk, cutoff)
    result = DigestResult(day.isoformat(), format_time(clock), journal_path(day), events=len(events),
                          facts=len(facts), invalid_facts=invalid)
    domains = group_facts(facts, policy, clock)
    with transaction(desk) as tx:
        places = {did: _places(d) for did, d in domains.items()}
        tx.require_clean(sorted({p for names in places.values() for p in map(memory_path, names)}
                                | {INDEX_FILE, CONFLICTS_FILE, result.journal}))
        homes, existing = _locate(desk, domains, places, result)
        by_id = {f.id: f for f in facts}
        actives = {did: _active(homes[did], existing[homes[did]], by_id)
                   for did in homes if homes[did] in existing}
        live = {d: domains[d] for d in homes}
        plan = decide(live, actives, policy)
        forgotten = _forgotten(desk, {c.domain: homes[c.domain] for c in plan.promote})
        if forgotten:  # a person forgot these memories: only facts since then may bring them back
            for did, when in forgotten.items():
                live[did] = _after(live[did], when)
            plan = decide({d: dom for d, dom in live.items() if dom.candidates}, actives, policy)
        result.stale, result.unconfirmed = len(plan.stale), len(plan.unconfirmed)
        memories = _MemoryWrites(desk, result)
        for candidate in plan.promote:
            name = homes[candidate.domain]
            if memories.land(name, _new_memory(name, candidate, clock)):
                result.promoted.append(name)
        for active, candidate in plan.supersede:
            if memories.land(active.name, _replaced(existing[active.name], candidate, clock)):
                result.superseded.append(active.name)
                result.replaced.append({"name": active.name, "was": one_line(active.content, 100),
                                        "now": one_line(candidate.content, 100)})
        for active, candidate in plan.merge:
            if active.name not in memories.writes:  # same value, so no gate: only evidence grows
                merged = _merged(existing[active.name], candidate, clock, {i: f.at for i, f in by_id.items()})
                memories.land(active.name, merged, gated=False)
                result.merged.append(active.name)
        writes = memories.with_index()
        old_queue = _read(desk, CONFLICTS_FILE)
        ties = [replace(t, incumbent=replace(t.incumbent, name=homes[t.domain.id]))
                if t.incumbent is not None and not t.incumbent.name else t for t in plan.ties]
        queue = reconcile(parse_queue(old_queue), ties, plan.settled, desk.config.desk_id, clock)
        result.conflicts, result.conflicts_closed = queue.opened, queue.superseded
        result.open_conflicts = len(open_cases(queue.cases))
        if queue.changed:
            writes[CONFLICTS_FILE] = render_queue(queue.cases)
        current = _read(desk, result.journal)
        narrative = narrative or existing_narrative(current)
        journal = _redacted(render_journal(day, events, _day_commits(desk, start), narrative))
        if current != journal:
            writes[result.journal] = journal
        _commit(desk, tx, writes, result)
    return result


def _commit(desk: Desk, tx: Transaction, writes: dict[str, bytes | None], result: DigestResult) -> None:
    """Commit `writes` with the archive's growth; no commit when there is nothing at all.

    Archive growth goes into the same commit, so the evidence ids the memories name are committed
    too. Desk lock (held by `tx`) first, then the archive lock: the order `desk checkpoint` uses.
    """
    from desk.archive import archive_lock_path
    from desk.checkpoint import archive_trailer_lines, pending_archive

    with desk_lock(archive_lock_path(desk)):
        archive, old_archive, _torn = pending_archive(desk)  # a torn tail waits for the next run
        result.archive = sorted(archive)
        writes.update(archive)
        if not writes:
            return
        fresh = sorted(p for p in archive if p not in old_archive)
        if fresh:  # written by appends, so the transaction cannot tell they are new to git
            desk.git.add(fresh)
        result.paths = sorted(writes)
        message = _message(result) + "".join(f"{line}\n" for line in archive_trailer_lines(archive))
        result.commit = tx.commit(writes, message)
        result.status = "committed"


def _locate(desk: Desk, domains: Mapping[str, Domain], places: Mapping[str, tuple[str, str]],
            result: DigestResult) -> tuple[dict[str, str], dict[str, MemoryFile]]:
    """Each domain's memory name (`homes`) and the memories that already exist (by name)."""
    homes: dict[str, str] = {}
    existing: dict[str, MemoryFile] = {}
    for did, domain in domains.items():
        home, memory, problem = _home(desk, domain, places[did])
        if home is None:
            result.skipped.append({"domain": did, "reason": str(problem)})
            continue
        homes[did] = home
        if memory is not None:
            existing[home] = memory
    return homes, existing


class _MemoryWrites:
    """The memory files one run writes, each through the write gate, and the index they make."""

    def __init__(self, desk: Desk, result: DigestResult) -> None:
        self.desk = desk
        self.result = result
        self.entries = load_entries(desk, committed_files(desk))
        self.bodies: dict[str, set[str]] = {}
        for entry in self.entries.values():
            self.bodies.setdefault(entry.body_key, set()).add(entry.name)
        self.rules = {f: desk.path(f).read_text("utf-8", "replace") for f in RULE_FILES
                      if desk.path(f).is_file()}
        self.allow = desk.config.secrets.allow
        self.writes: dict[str, bytes | None] = {}

    def _same_body(self, key: str, name: str) -> list[str]:
        return sorted(self.bodies.get(key, set()) - {name})

    def land(self, name: str, memory: MemoryFile, *, gated: bool = True) -> bool:
        """Queue `memory` unless the gate refuses it (the reason goes to `skipped`)."""
        if gated:
            from desk.secrets import scan

            try:
                if scan(memory.body, allow=self.allow):
                    raise gate.GateRejection("secret", f"{name}: the value holds a secret", "")
                gate.check_memory(memory, "durable", self._same_body, self.rules)
            except gate.GateRejection as exc:
                self.result.skipped.append({"domain": name, "reason": exc.reason})
                return False
        if name in self.entries:
            self.bodies[self.entries[name].body_key].discard(name)
        entry = self.entries[name] = IndexEntry.of(memory)
        self.bodies.setdefault(entry.body_key, set()).add(name)
        self.writes[memory_path(name)] = memory.render()
        return True

    def with_index(self) -> dict[str, bytes | None]:
        """The memory writes, and MEMORY.md when they change it."""
        writes = dict(self.writes)
        if writes:
            index = render_index(self.entries.values())
            if self.desk.git.blob_at("HEAD", INDEX_FILE) != index:
                writes[INDEX_FILE] = index
        return writes


def _read_facts(desk: Desk, cutoff: dt.datetime) -> tuple[list[FactRecord], int]:
    from desk.archive import iter_events

    facts, invalid = [], 0
    for event in iter_events(desk, until=cutoff + _US, kinds=[FACT_EVENT]):
        try:
            facts.append(fact_from_record(event.record))
        except ValueError:
            invalid += 1
    return facts, invalid


def _places(domain: Domain) -> tuple[str, str]:
    """Where a domain's memory lives: its derived name, or the alternate when that is taken."""
    name = memory_name(domain.candidates[0])
    return name, alternate_name(name, domain.id)


def _home(desk: Desk, domain: Domain, places: tuple[str, ...]
          ) -> tuple[str | None, MemoryFile | None, str | None]:
    """(name, its memory) where this domain's memory lives, else (a free name, None), else a reason.

    A file of the domain that no longer parses is a person's to fix: the domain waits for it
    rather than growing a second copy under the alternate name.
    """
    free = None
    for name in places:
        path = memory_path(name)
        try:
            data = desk.path(path).read_bytes()
        except FileNotFoundError:
            free = free or name
            continue
        try:
            memory = parse_memory(data, path, name)
        except InvalidFileError:
            if name == places[0]:
                return None, None, f"broken_file:{path}"
            continue
        # Ours: made by the digest for this key (or, without a key, for this kind: the name holds
        # the content hash). A person's later edit of the body keeps it ours; their edit stands.
        if memory.meta.source == "digest" and memory.meta.key == domain.key and (
                domain.key is not None or memory.meta.type == domain.candidates[0].kind):
            return name, memory, None
    return (free, None, None) if free else (None, None, "name_taken")


def _forgotten(desk: Desk, homes: Mapping[str, str]) -> dict[str, dt.datetime]:
    """Domains about to be promoted whose memory file was deleted before, and when it was."""
    deleted = desk.git.deleted(memory_path(name) for name in homes.values())
    out = {}
    for did, name in homes.items():
        when = deleted.get(memory_path(name))
        if when:
            out[did] = dt.datetime.fromisoformat(when).astimezone(dt.timezone.utc)
    return out


def _after(domain: Domain, when: dt.datetime) -> Domain:
    """`domain` with only the facts stated after `when` (a forget is a newer decision)."""
    kept = (c.newer_than(when) for c in domain.candidates)
    return replace(domain, candidates=tuple(c for c in kept if c is not None))


def _active(name: str, memory: MemoryFile, by_id: Mapping[str, FactRecord]) -> Active:
    seen = [by_id[e].at for e in memory.meta.evidence if e in by_id]
    fallback = memory.meta.updated or memory.meta.created or dt.datetime.min.replace(tzinfo=dt.timezone.utc)
    return Active(name, memory.body, tuple(memory.meta.evidence), max(seen) if seen else fallback)


def _description(candidate: Candidate) -> str:
    label = candidate.kind.capitalize() + (f" ({candidate.key})" if candidate.key else "")
    return one_line(f"{label}: {candidate.content}", DESCRIPTION_MAX)


def _triggers(candidate: Candidate) -> list[str]:
    """The key's parts, else the content's first longer words (never longer than a trigger may be)."""
    if candidate.key is not None:
        words = candidate.key.split(".")
    else:
        words = [w.strip(".,;:!?()\"'") for w in normalize(candidate.content).split()]
        words = [w for w in words if len(w) >= 4][:4]
    return list(dict.fromkeys(w for w in words if w and len(w) <= TRIGGER_MAX))


def _meta_fields(name: str, candidate: Candidate, evidence: list[str], importance: int) -> dict[str, Any]:
    return dict(name=name, description=_description(candidate), type=candidate.kind,
                triggers=_triggers(candidate), importance=importance, source="digest",
                evidence=evidence, key=candidate.key)


def _new_memory(name: str, c: Candidate, now: dt.datetime) -> MemoryFile:
    meta = build_meta(memory_path(name), **_meta_fields(name, c, _kept(c), c.importance),
                      created=now, updated=now)
    return MemoryFile(meta, normalize_body(c.content))


def _replaced(old: MemoryFile, c: Candidate, now: dt.datetime) -> MemoryFile:
    """The next revision: the challenger's value and evidence; the old one stays in git history."""
    meta = build_meta(memory_path(old.name), **_meta_fields(old.name, c, _kept(c), c.importance),
                      created=old.meta.created or now, updated=now)
    return MemoryFile(meta, normalize_body(c.content))


def _kept(c: Candidate) -> list[str]:
    return kept_evidence(c.evidence, {f.id: f.at for f in c.facts})


def _merged(old: MemoryFile, c: Candidate, now: dt.datetime,
            times: Mapping[str, dt.datetime]) -> MemoryFile:
    """The same value with more evidence (and the higher importance if a confirmation brought one)."""
    evidence = kept_evidence([*old.meta.evidence, *c.evidence], times)
    importance = max(old.meta.importance or 0, c.importance)
    return MemoryFile(old.meta.model_copy(update={"evidence": evidence, "importance": importance,
                                                  "updated": now}), old.body)


def _redacted(journal: bytes) -> bytes:
    """The journal with any known secret replaced: an event archived with --no-redact stays raw there."""
    from desk.secrets import redact

    text, kinds = redact(journal.decode("utf-8"))
    return text.encode() if kinds else journal


def _read(desk: Desk, path: str) -> bytes | None:
    try:
        return desk.path(path).read_bytes()
    except FileNotFoundError:
        return None


def _day_commits(desk: Desk, start: dt.datetime) -> list[Commit]:
    """The day's commits to memory/ and MISTAKES.md (the journal leaves out desk's own)."""
    last = start + dt.timedelta(days=1) - dt.timedelta(seconds=1)
    return desk.git.log_between(format_time(start), format_time(last), DAY_COMMIT_PATHS)


def _message(r: DigestResult) -> str:
    body = []
    for label, names in (("promoted", r.promoted), ("merged", r.merged), ("superseded", r.superseded),
                         ("conflict cases opened", r.conflicts),
                         ("conflict cases superseded", r.conflicts_closed)):
        if names:
            body.append(f"{label}: {', '.join(names)}")
    body += [f"{c['name']}: {json.dumps(c['was'], ensure_ascii=False)} -> "
             f"{json.dumps(c['now'], ensure_ascii=False)}" for c in r.replaced]
    return commit_message(f"digest: {r.date}", {
        "Desk-Op": "digest", "Desk-Date": r.date, "Desk-As-Of": r.as_of,
        "Desk-Promoted": str(len(r.promoted)), "Desk-Merged": str(len(r.merged)),
        "Desk-Superseded": str(len(r.superseded)), "Desk-Conflicts": str(len(r.conflicts)),
        "Desk-Stale": str(r.stale)}, "\n".join(body) or None)
