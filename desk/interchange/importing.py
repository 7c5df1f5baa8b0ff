"""`desk import FORMAT SOURCE`: a foreign source into the desk in one commit, or a plan (--dry-run).

1. The reader parses the whole source first (a malformed file stops everything, nothing written)
   and every conversation record is validated as an archive event (redacted like every append).
2. Under the desk lock: the memory plan (`plan.py`: names, collisions, the write gate), then the
   commit's rules on the memories to write (the same `validate_writes` every desk commit passes,
   including the secret scan): a memory that breaks one is rejected with the finding, the rest go on.
3. The source's versions of desk files (an OpenClaw SOUL.md, ...) fill the desk's file where it is
   still byte-identical to its `desk init` template, at HEAD and in the work tree (nobody wrote it
   yet: the template is as good as empty); where a person wrote it, they are proposed, never
   written. The memories, MEMORY.md and these files are ONE commit (`Desk-Op: import`,
   `Desk-Import-Format`, counts in trailers); none when nothing changes.
4. The records not yet archived (by their `desk.import` origin, in the files of their days) are
   appended through the archive's own import path (`desk.archive.importing.append_events`: one
   write each, batched fsync, hash chains) and, like every append and `desk archive import`, are
   committed by the next `desk checkpoint`: committing them here would re-scan every record for
   secrets inside the import (the gate reads what an archive file gained), several times the
   import's own cost at 50,000 messages.
Importing the same source again changes nothing: status `unchanged`, no commit, no append.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from desk.archive.importing import append_events
from desk.archive.store import archive_files, build_event
from desk.errors import DeskError, UsageError
from desk.interchange.items import DeskFileItem, Proposal, RecordItem, Source
from desk.interchange.plan import PlanLine, plan_memories
from desk.interchange.readers import read_source
from desk.layout import INDEX_FILE, TEMPLATE_FILES, USER_FILE, DeskFolder, template_bytes
from desk.memory.index import IndexEntry, memory_path
from desk.memory.mirror import head_mirror
from desk.storage.git import blob_sha
from desk.text.times import utc_now
from desk.transaction import commit_message, transaction

IMPORT_META = "desk.import"  # archive meta: the record's origin in its source (the re-import key)
PROGRESS_EVERY = 1000  # steps between progress calls
Progress = Callable[[int, int], None]


@dataclass
class FileLine:
    """A desk file the import fills from the source (`write`), or finds already holding it."""

    action: str  # write | unchanged
    target: str
    origins: list[str]
    data: bytes = field(default=b"", repr=False)

    def to_json(self) -> dict[str, object]:
        return {"action": self.action, "path": self.target, "origins": self.origins}


@dataclass
class ImportReport:
    """The plan, and what a real import did with it."""

    format: str
    source: str
    dry_run: bool
    status: str = "planned"  # planned | imported | unchanged
    commit: str | None = None
    memories: list[PlanLine] = field(default_factory=list)
    proposals: list[Proposal] = field(default_factory=list)
    files: list[FileLine] = field(default_factory=list)
    records_new: int = 0
    records_present: int = 0
    archive_files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        counts = {a: 0 for a in ("create", "update", "unchanged", "rejected")}
        for line in self.memories:
            counts[line.action] += 1
        return {**counts, "records_new": self.records_new, "records_present": self.records_present,
                "proposed": len(self.proposals), "files": sum(f.action == "write" for f in self.files)}

    def to_json(self) -> dict[str, object]:
        return {"status": self.status, "format": self.format, "source": self.source, "dry_run": self.dry_run,
                "commit": self.commit, "counts": self.counts(), "memories": [m.to_json() for m in self.memories],
                "files": [f.to_json() for f in self.files],
                "proposals": [p.to_json() for p in self.proposals], "archive_files": self.archive_files,
                "skipped": self.skipped}


def import_source(desk: DeskFolder, fmt: str, path: Path, *, dry_run: bool = False,
                  progress: Progress | None = None, now: dt.datetime | None = None) -> ImportReport:
    """Import `path` in format `fmt`; with `dry_run` only the plan, nothing written."""
    now = (now or utc_now()).replace(microsecond=0)
    source = read_source(fmt, path)
    steps = _Steps(progress, len(source.records))
    events = _events(source, now, steps)
    report = ImportReport(fmt, str(path), dry_run, proposals=list(source.proposals), skipped=source.skipped)
    prefix = fmt.split("-")[0]
    if dry_run:
        with head_mirror(desk) as mirror:
            report.memories = plan_memories(desk, mirror, source.memories, prefix, now)
            _plan_files(desk, source.desk_files, report)
            _check_rules(desk, mirror, report, fmt)
        present = _present_origins(desk, events)
        report.records_present = sum(1 for e in events if e["meta"][IMPORT_META] in present)
        report.records_new = len(events) - report.records_present
        return report
    with transaction(desk) as tx, head_mirror(desk) as mirror:
        report.memories = plan_memories(desk, mirror, source.memories, prefix, now)
        _plan_files(desk, source.desk_files, report)
        writes, entries = _check_rules(desk, mirror, report, fmt)
        # Under the desk lock, so a concurrent import of the same source waits and then finds
        # these records present (appenders never write `desk.import` meta).
        present = _present_origins(desk, events)
        new = [e for e in events if e["meta"][IMPORT_META] not in present]
        report.records_present = len(events) - len(new)
        report.records_new = len(new)
        if writes:
            tx.require_clean([*writes, INDEX_FILE])
            index = mirror.render_index(entries)
            if mirror.index_blob != blob_sha(index) or not desk.path(INDEX_FILE).is_file():
                writes[INDEX_FILE] = index
            report.commit = tx.commit(writes, _message(fmt, path, report))
            mirror.record(report.commit, {name: (blob_sha(writes[memory_path(name)] or b""), entry)
                                          for name, entry in entries.items()}, blob_sha(index))
        if new:
            appended = append_events(desk, new, str(path), now=now,
                                     progress=lambda done, _total: steps.tick(len(events) + done))
            report.archive_files = appended.files
    steps.tick(steps.total)
    report.status = "imported" if writes or new else "unchanged"
    return report


class _Steps:
    """`progress(done, total)` over the conversation records: validating them (the first half),
    then appending them (the second). Reported every PROGRESS_EVERY steps at most; the caller
    decides how often to show it (a line every few seconds)."""

    def __init__(self, progress: Progress | None, records: int) -> None:
        self.progress = progress if records else None
        self.total = 2 * records
        self.last = -PROGRESS_EVERY
        if self.progress:
            self.progress(0, self.total)

    def tick(self, done: int) -> None:
        if self.progress and (done - self.last >= PROGRESS_EVERY or done == self.total) and done > self.last:
            self.last = done
            self.progress(done, self.total)


def _events(source: Source, now: dt.datetime, steps: _Steps) -> list[dict[str, Any]]:
    """Every record as a validated, redacted archive event; a bad one names its place in SOURCE."""
    events, seen = [], set()
    for n, record in enumerate(source.records, 1):
        if record.origin not in seen:  # else the same message twice in one source
            seen.add(record.origin)
            events.append(_event(record, now))
        steps.tick(n)
    return events


def _event(record: RecordItem, now: dt.datetime) -> dict[str, Any]:
    try:
        return build_event(record.kind, record.content, session=record.session, actor=record.actor,
                           at=record.at, meta={IMPORT_META: record.origin}, now=now)
    except UsageError as exc:
        raise UsageError(f"{record.where}: {exc.message}",
                         hint="fix that record in the source and run the import again; nothing was written") from None


def _present_origins(desk: DeskFolder, events: list[dict[str, Any]]) -> set[str]:
    """The `desk.import` origins already archived in the files of the days these events fall on."""
    days = {e["at"][:10] for e in events}
    found: set[str] = set()
    marker = f'"{IMPORT_META}"'.encode()
    for afile in archive_files(desk):
        if afile.day not in days:
            continue
        with open(os.path.join(desk.root, afile.rel), "rb") as handle:
            for line in handle:
                if marker in line:
                    try:
                        value = json.loads(line).get("meta", {}).get(IMPORT_META)
                    except (ValueError, AttributeError):
                        continue  # a torn tail: verify reports it
                    if isinstance(value, str):
                        found.add(value)
    return found


def _check_rules(desk: DeskFolder, mirror: Any, report: ImportReport,
                 fmt: str) -> tuple[dict[str, bytes | None], dict[str, IndexEntry]]:
    """Run the commit's file rules (secrets included) on the planned memories and desk files;
    reject each memory that fails, with its finding, and propose each desk file that fails instead
    of writing it. Returns the writes (memories and desk files) and the memories' index entries."""
    from desk.guard.validate import validate_writes

    for _round in range(3):
        writable = [m for m in report.memories if m.memory is not None and m.action in ("create", "update")]
        writes: dict[str, bytes | None] = {memory_path(m.name or ""): m.memory.render()
                                           for m in writable if m.memory is not None}
        entries = {m.name or "": IndexEntry.of(m.memory) for m in writable if m.memory is not None}
        files: dict[str, bytes | None] = {f.target: f.data for f in report.files if f.action == "write"}
        if not writes and not files:
            return writes, entries
        index = mirror.render_index(entries, strict=False)
        checked = {**writes, **files, INDEX_FILE: index} if writes else {**files}
        found = validate_writes(desk, checked, _message(fmt, Path(report.source), report))
        bad: dict[str, list[str]] = {}
        for finding in found.errors:
            if finding.path in writes or finding.path in files:
                bad.setdefault(finding.path, []).append(f"{finding.rule}: {finding.message}")
        if not bad:
            return {**writes, **files}, entries
        for line in writable:
            reasons = bad.get(memory_path(line.name or ""))
            if reasons:
                line.action, line.reason, line.memory = "rejected", "; ".join(reasons), None
        for fill in [f for f in report.files if f.target in bad]:
            report.files.remove(fill)
            report.proposals.append(Proposal(fill.target, ", ".join(fill.origins),
                                             "not written: " + "; ".join(bad[fill.target])))
    raise UsageError("the imported memories kept breaking the desk's rules; nothing was written",
                     hint="run with --dry-run to see the plan")


def _plan_files(desk: DeskFolder, items: list[DeskFileItem], report: ImportReport) -> None:
    """Fill, keep or propose each desk file the source has a version of (module docstring, 3)."""
    if not items:
        return
    head = desk.git.committed_blobs([i.target for i in items])
    for item in items:
        data = _filled(item)
        try:
            current: bytes | None = desk.read(item.target)
        except (OSError, DeskError):  # missing, or a symlink (never followed)
            current = None
        if current == data:
            report.files.append(FileLine("unchanged", item.target, item.origins))
            continue
        template = template_bytes(TEMPLATE_FILES[item.target]) if item.target in TEMPLATE_FILES else None
        if template is not None and current == template and head.get(item.target) == blob_sha(template):
            report.files.append(FileLine("write", item.target, item.origins, data))
        else:
            report.proposals.append(Proposal(
                item.target, ", ".join(item.origins),
                "the desk's file is no longer its `desk init` template (a person wrote it) and an import "
                "never writes over that: merge by hand"))


def _filled(item: DeskFileItem) -> bytes:
    """What the desk file becomes. USER.md keeps its template's profile frontmatter above the
    source's free text (so `desk user set` keeps working), unless the source has frontmatter."""
    text = item.text
    if item.target == USER_FILE and not text.startswith("---\n"):
        template = template_bytes(TEMPLATE_FILES[USER_FILE]).decode("utf-8")
        end = template.index("\n---\n", 4) + len("\n---\n")
        text = template[:end] + text
    return text.encode("utf-8")


def _message(fmt: str, path: Path, report: ImportReport) -> str:
    counts = report.counts()
    subject = (f"import: {fmt} from {path.name}: {counts['create']} created, {counts['update']} updated, "
               f"{counts['records_new']} archive records")
    if counts["files"]:
        subject += f", {counts['files']} desk files"
    return commit_message(subject, {
        "Desk-Op": "import", "Desk-Actor": "user", "Desk-Import-Format": fmt,
        "Desk-Import-Source": path.name or str(path),
        "Desk-Import-Created": str(counts["create"]), "Desk-Import-Updated": str(counts["update"]),
        "Desk-Import-Unchanged": str(counts["unchanged"]), "Desk-Import-Rejected": str(counts["rejected"]),
        "Desk-Import-Records": str(counts["records_new"]),
        "Desk-Import-Files": str(counts["files"]) if counts["files"] else None})
