"""The memory files the distill policy makes: a domain's file name, its active memory, the frontmatter
a promoted, superseding or merged memory gets, and landing each through the write gate.

`project` None works on the desk-wide `memory/` and MEMORY.md, a name on that project's.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Mapping
from dataclasses import replace

from desk.digest.facts import FactRecord
from desk.digest.journal import one_line
from desk.digest.policy import EARLIEST, Active, Candidate, Domain, kept_evidence
from desk.errors import InvalidFileError
from desk.layout import INDEX_FILE, DeskFolder, project_index_path, project_memory_path
from desk.gate import memory_gate as gate
from desk.formats.memory_file import (DESCRIPTION_MAX, TRIGGER_MAX, MemoryFile, build_meta, name_problem,
                              normalize_body, parse_memory)
from desk.formats.memory_index import IndexEntry, memory_path, render_index
from desk.gate.entries import committed_files, load_entries
from desk.text.direction import describe, first_control
from desk.text.normalize import normalize
from desk.text.secrets import scan
from desk.text.times import parse_time

Skipped = list[dict[str, str]]
_SLUG_WORDS = re.compile(r"[a-z0-9]+")
SLUG_MAX = 48


def scoped_path(name: str, project: str | None) -> str:
    """Where memory `name` lives: `memory/<name>.md`, or in `project`'s memory folder."""
    return memory_path(name) if project is None else project_memory_path(project, name)


def scoped_index(project: str | None) -> str:
    """The generated index of the scope: MEMORY.md, or `projects/<project>/MEMORY.md`."""
    return INDEX_FILE if project is None else project_index_path(project)


def alternate_name(stem: str, seed: str) -> str:
    """`stem` with a hash of `seed`: a second name when the first is taken, or not a valid name."""
    return f"{stem[:SLUG_MAX + 20].rstrip('._-')}-{hashlib.sha256(seed.encode()).hexdigest()[:8]}"


def memory_name(candidate: Candidate) -> str:
    """The memory name for a domain: the key itself, else kind, a slug of the content and a hash."""
    if candidate.key is not None:
        if name_problem(candidate.key) is None:
            return candidate.key
        return alternate_name("k-" + candidate.key, candidate.key)
    words = _SLUG_WORDS.findall(normalize(candidate.content))
    slug = ""
    for word in words:
        if len(slug) + len(word) + 1 > SLUG_MAX:
            break
        slug = f"{slug}-{word}" if slug else word
    stem = f"{candidate.kind}-{slug}" if slug else candidate.kind
    return f"{stem}-{candidate.content_key[:8]}"


def locate(desk: DeskFolder, domains: Mapping[str, Domain], places: Mapping[str, tuple[str, str]],
           skipped: Skipped, project: str | None = None) -> tuple[dict[str, str], dict[str, MemoryFile]]:
    """Each domain's memory name (`homes`) and the memories that already exist (by name)."""
    homes: dict[str, str] = {}
    existing: dict[str, MemoryFile] = {}
    for did, domain in domains.items():
        home, memory, problem = find_home(desk, domain, places[did], project)
        if home is None:
            skipped.append({"domain": did, "reason": str(problem)})
            continue
        homes[did] = home
        if memory is not None:
            existing[home] = memory
    return homes, existing


class MemoryWrites:
    """The memory files one run writes, each through the write gate, and the index they make."""

    def __init__(self, desk: DeskFolder, skipped: Skipped, project: str | None = None) -> None:
        self.desk = desk
        self.skipped = skipped
        self.project = project
        self.entries = scope_entries(desk, project)
        self.bodies: dict[str, set[str]] = {}
        for entry in self.entries.values():
            self.bodies.setdefault(entry.body_key, set()).add(entry.name)
        self.rules = gate.rule_texts(desk)
        self.allow = desk.config.secrets.allow
        self.writes: dict[str, bytes | None] = {}
        # Review mode (docs/review.md): memories proposed instead of written.
        self.proposed: dict[str, MemoryFile] = {}
        self.committed = set(self.entries)

    def land(self, name: str, memory: MemoryFile, *, gated: bool = True) -> bool:
        """Queue `memory` unless the gate refuses it (the reason goes to `skipped`)."""
        if gated:
            try:
                if scan(memory.body, allow=self.allow):
                    raise gate.GateRejection("secret", f"{name}: the value holds a secret", "")
                control = first_control(memory.render())
                if control is not None:  # the archive takes it; the gate refuses it in memory/
                    raise gate.GateRejection("bidi_control", f"{name}: the value holds an invisible "
                                             f"{describe(control[2])}", "")
                gate.check_memory(memory, "durable", lambda key, name: sorted(self.bodies.get(key, set()) - {name}),
                                  self.rules)
            except gate.GateRejection as exc:
                self.skipped.append({"domain": name, "reason": exc.reason})
                return False
        operation = "update" if name in self.committed else "create"
        if self.desk.config.review and self.desk.config.review_mode(memory.meta.type, operation) == "propose":
            self.proposed[name] = memory
            return True
        if name in self.entries:
            self.bodies[self.entries[name].body_key].discard(name)
        entry = self.entries[name] = IndexEntry.of(memory)
        self.bodies.setdefault(entry.body_key, set()).add(name)
        self.writes[scoped_path(name, self.project)] = memory.render()
        return True

    def with_index(self) -> dict[str, bytes | None]:
        """The memory writes, and the scope's MEMORY.md when they change it."""
        writes = dict(self.writes)
        if writes:
            index = render_index(self.entries.values())
            path = scoped_index(self.project)
            if self.desk.git.objects.blob_at("HEAD", path) != index:
                writes[path] = index
        return writes


def scope_entries(desk: DeskFolder, project: str | None) -> dict[str, IndexEntry]:
    """The committed index entries of the scope (a project's read from its folder: the work tree
    equals HEAD under the lock)."""
    if project is None:
        return load_entries(desk, committed_files(desk))
    from desk.scopes.projects import project_entries

    return project_entries(desk, project)


def places_of(domain: Domain) -> tuple[str, str]:
    """Where a domain's memory lives: its derived name, or the alternate when that is taken."""
    name = memory_name(domain.candidates[0])
    return name, alternate_name(name, domain.id)


def find_home(desk: DeskFolder, domain: Domain, places: tuple[str, ...], project: str | None = None
              ) -> tuple[str | None, MemoryFile | None, str | None]:
    """(name, its memory) where this domain's memory lives, else (a free name, None), else a reason
    (a file of the domain that no longer parses: the domain waits for a person to fix it)."""
    free = None
    for name in places:
        path = scoped_path(name, project)
        try:
            data = desk.read(path)
        except FileNotFoundError:
            free = free or name
            continue
        try:
            memory = parse_memory(data, path, name)
        except InvalidFileError as exc:
            if name == places[0]:  # another scope's copy is a person's to fix too
                copied = any(f.rule == "scope-mismatch" for f in exc.findings)
                return None, None, f"{'scope_mismatch' if copied else 'broken_file'}:{path}"
            continue
        # Ours: made by the digest for this key (or, without a key, for this kind: the name holds
        # the content hash). A person's later edit of the body keeps it ours; their edit stands.
        if memory.meta.source == "digest" and memory.meta.key == domain.key and (
                domain.key is not None or memory.meta.type == domain.candidates[0].kind):
            return name, memory, None
    return (free, None, None) if free else (None, None, "name_taken")


def forgotten(desk: DeskFolder, homes: Mapping[str, str], project: str | None = None
              ) -> dict[str, dt.datetime]:
    """Domains about to be promoted whose memory file was deleted before, and when it was."""
    deleted = desk.git.history.deleted(scoped_path(name, project) for name in homes.values())
    return {did: parse_time(when, "deletion date") for did, name in homes.items()
            if (when := deleted.get(scoped_path(name, project)))}


def after(domain: Domain, when: dt.datetime) -> Domain:
    """`domain` with only the facts stated after `when` (a forget is a newer decision)."""
    kept = (c.newer_than(when) for c in domain.candidates)
    return replace(domain, candidates=tuple(c for c in kept if c is not None))


def active_of(name: str, memory: MemoryFile, by_id: Mapping[str, FactRecord]) -> Active:
    seen = [by_id[e].at for e in memory.meta.evidence if e in by_id]
    fallback = memory.meta.updated or memory.meta.created or EARLIEST
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


def new_memory(name: str, c: Candidate, now: dt.datetime, project: str | None = None,
               created: dt.datetime | None = None) -> MemoryFile:
    """The memory of candidate `c`; with `created`, a revision of one made then."""
    meta = build_meta(scoped_path(name, project), name=name, description=_description(c), type=c.kind,
                      triggers=_triggers(c), importance=c.importance, source="digest",
                      evidence=kept_evidence(c.evidence, {f.id: f.at for f in c.facts}), key=c.key,
                      project=project, created=created or now, updated=now, **_validity(c))
    return MemoryFile(meta, normalize_body(c.content))


def replaced_memory(old: MemoryFile, c: Candidate, now: dt.datetime) -> MemoryFile:
    """The next revision, in the old one's scope: the challenger's value, evidence and validity."""
    return new_memory(old.name, c, now, old.meta.project, old.meta.created)


def _validity(c: Candidate) -> dict[str, dt.datetime | None]:
    """The earliest `valid_from` the facts of `c` state (else when the first was stated) and the
    latest `valid_to`, dropped when it would end before it starts."""
    starts = [f.valid_from for f in c.facts if f.valid_from is not None]
    ends = [f.valid_to for f in c.facts if f.valid_to is not None]
    start = min(starts) if starts else min(f.at for f in c.facts).replace(microsecond=0)
    end = max(ends) if ends else None
    return {"valid_from": start, "valid_to": end if end is None or start is None or start <= end else None}


def merged_memory(old: MemoryFile, c: Candidate, now: dt.datetime,
            times: Mapping[str, dt.datetime]) -> MemoryFile:
    """The same value with more evidence (and the higher importance if a confirmation brought one)."""
    evidence = kept_evidence([*old.meta.evidence, *c.evidence], times)
    importance = max(old.meta.importance or 0, c.importance)
    return MemoryFile(old.meta.replace(evidence=evidence, importance=importance, updated=now), old.body)
