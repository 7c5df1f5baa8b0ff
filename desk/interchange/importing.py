"""`desk import FORMAT SOURCE`: a foreign source into the desk in one commit, or a plan (--dry-run).

The reader parses the whole source first (nothing written on a malformed file). Under the desk
lock: the memory plan (`plan.py`), the commit's file rules (a memory that breaks one is rejected,
the rest go on), desk files filled where still their `desk init` template (proposed otherwise),
all in ONE commit (`Desk-Op: import`), none when nothing changes. Records not archived yet are
appended through desk.archive.importing and committed by the next `desk checkpoint`. `project`
imports into that project's scope; `user` applies the source's profile fields to that user.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from desk.archive.importing import append_events
from desk.archive.present import records_of_days
from desk.archive.store import build_event
from desk.errors import DeskError, UsageError
from desk.interchange.items import DeskFileItem, Proposal, Source
from desk.interchange.plan import FolderMemories, PlanLine, plan_memories
from desk.interchange.readers import read_source
from desk.layout import INDEX_FILE, TEMPLATE_FILES, USER_FILE, DeskFolder, project_index_path, template_bytes
from desk.formats.memory_index import IndexEntry, memory_path, render_index
from desk.gate.mirror import HeadMirror, head_mirror
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
    project: str | None = None
    profile: dict[str, Any] | None = None  # with --user: {user_scope, path, fields, changed}

    def counts(self) -> dict[str, int]:
        counts = {a: sum(line.action == a for line in self.memories) for a in ("create", "update", "unchanged", "rejected")}
        return {**counts, "records_new": self.records_new, "records_present": self.records_present,
                "proposed": len(self.proposals), "files": sum(f.action == "write" for f in self.files)}

    def to_json(self) -> dict[str, object]:
        return {"status": self.status, "format": self.format, "source": self.source, "dry_run": self.dry_run,
                "commit": self.commit, "counts": self.counts(), "memories": [m.to_json() for m in self.memories],
                "files": [f.to_json() for f in self.files],
                "proposals": [p.to_json() for p in self.proposals], "archive_files": self.archive_files,
                "skipped": self.skipped, "project": self.project, "profile": self.profile}


def import_source(desk: DeskFolder, fmt: str, path: Path, *, dry_run: bool = False,
                  progress: Progress | None = None, now: dt.datetime | None = None,
                  project: str | None = None, user: str | None = None,
                  max_bytes: int | None = None) -> ImportReport:
    """Import `path` in format `fmt` (only the plan with `dry_run`) into `project`'s scope, the
    profile fields to `user`; `max_bytes` caps the source (None: foreign.source_limit)."""
    now = (now or utc_now()).replace(microsecond=0)
    if project is not None:
        from desk.memory.reads import require_project

        require_project(project)
    source = read_source(fmt, path, max_bytes)
    if user is not None and not source.profile:
        why = (f"a {fmt} source carries no user profile data desk maps to profile fields (only an "
               "OpenClaw workspace's USER.md does), so there is nothing to import for a user")
        if fmt == "openclaw":
            why = ("this workspace's USER.md has no labelled line desk maps to a profile field (`- **Name:** "
                   "...`, `- **What to call them:** ...`, `- **Pronouns:** ...`, `- **Timezone:** ...`)")
        raise UsageError(f"--user: {why}", hint="leave --user out: memories and records do not belong to one user")
    steps = _Steps(progress, len(source.records))
    events = _events(source, now, steps)
    report = ImportReport(fmt, str(path), dry_run, proposals=list(source.proposals), skipped=source.skipped,
                          project=project)
    prefix = fmt.split("-")[0]
    index_path = INDEX_FILE if project is None else project_index_path(project)

    def plan(mirror: HeadMirror | FolderMemories) -> tuple[dict[str, bytes | None], dict[str, IndexEntry],
                                                           list[dict[str, Any]]]:
        report.memories = plan_memories(desk, mirror, source.memories, prefix, now, project)
        _plan_files(desk, source.desk_files, report)
        writes, entries = _check_rules(desk, mirror, report, fmt)
        # Under the desk lock, so a concurrent import of the same source waits and then finds
        # these records present (appenders never write `desk.import` meta).
        present = _present_origins(desk, events)
        new = [e for e in events if e["meta"][IMPORT_META] not in present]
        report.records_present, report.records_new = len(events) - len(new), len(new)
        return writes, entries, new

    if dry_run:
        with _committed(desk, project) as mirror:
            plan(mirror)
        if user is not None:
            _profile_patch(desk, source, user, report)
        return report
    with transaction(desk) as tx, _committed(desk, project) as mirror:
        writes, entries, new = plan(mirror)
        index: bytes | None = None
        if writes:
            tx.require_clean([*writes, index_path])
            if isinstance(mirror, HeadMirror):
                index = mirror.render_index(entries)
                if mirror.index_blob != blob_sha(index) or not desk.path(INDEX_FILE).is_file():
                    writes[INDEX_FILE] = index
            else:
                index = _render_index(mirror, entries)
                if desk.read_if_present(index_path) != index or desk.git.objects.blob_at("HEAD", index_path) != index:
                    writes[index_path] = index
        if user is not None:
            writes.update(_profile_patch(desk, source, user, report, tx))
        if writes:
            report.commit = tx.commit(writes, _message(fmt, path, report))
            if isinstance(mirror, HeadMirror) and index is not None:
                mirror.record(report.commit, {name: (blob_sha(writes[memory_path(name)] or b""), entry)
                                              for name, entry in entries.items()}, blob_sha(index))
        if new:
            appended = append_events(desk, new, str(path), now=now,
                                     progress=lambda done, _total: steps.tick(len(events) + done))
            report.archive_files = appended.files
    steps.tick(steps.total)
    report.status = "imported" if writes or new else "unchanged"
    return report


@contextmanager
def _committed(desk: DeskFolder, project: str | None) -> Iterator[HeadMirror | FolderMemories]:
    """The committed memories of the scope: the HEAD mirror for memory/, the folder for a project."""
    if project is None:
        with head_mirror(desk) as mirror:
            yield mirror
        return
    from desk.memory.reads import project_memories

    yield FolderMemories(project_memories(desk, project))


def _render_index(mirror: HeadMirror | FolderMemories, entries: dict[str, IndexEntry]) -> bytes:
    if isinstance(mirror, HeadMirror):
        return mirror.render_index(entries, strict=False)
    return render_index({**{n: IndexEntry.of(m) for n, m in mirror.memories.items()}, **entries}.values())


def _profile_patch(desk: DeskFolder, source: Source, user: str, report: ImportReport,
                   tx: Any = None) -> dict[str, bytes | None]:
    """The user's USER.md with the source's profile fields set (their other fields kept); the
    write, or none when nothing changes. `report.profile` says what changes. An invalid value is
    refused at the source's file and line it was read from."""
    from desk.errors import InvalidFileError
    from desk.formats.scope_files import ProfileFile, validate_profile
    from desk.layout import profile_path, scope_id
    from desk.scopes.profile import read_profile

    scope = scope_id(user)
    path = profile_path(scope)
    try:  # the findings name the source's USER.md, not the desk's (which `desk validate` checks)
        checked = validate_profile(source.profile, str(Path(source.path) / "USER.md"), source.profile_lines)
    except InvalidFileError as exc:
        raise InvalidFileError(exc.findings, hint="fix that line of the source's USER.md, or import "
                               "without --user (nothing was written)") from None
    if tx is not None:
        tx.require_clean([path])
    profile = read_profile(desk, scope)
    before = dict(profile.fields) if profile else {}
    after = {**before, **checked}
    changed = sorted(k for k in after if before.get(k) != after.get(k))
    report.profile = {"user_scope": scope, "path": path, "fields": after, "changed": changed}
    if not changed:
        return {}
    base = profile or ProfileFile({}, None, None, "", False, {})
    return {path: base.render(after, scope, desk.desk_id)}


class _Steps:
    """`progress(done, total)` over the records: validating them, then appending them; called
    every PROGRESS_EVERY steps at most."""

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
            try:
                events.append(build_event(record.kind, record.content, session=record.session, actor=record.actor,
                                          at=record.at, meta={IMPORT_META: record.origin}, now=now, at_name="at"))
            except UsageError as exc:
                raise UsageError(f"{record.where}: {exc.message}", hint="fix that record in the source and run "
                                 "the import again; nothing was written") from None
        steps.tick(n)
    return events


def _present_origins(desk: DeskFolder, events: list[dict[str, Any]]) -> set[str]:
    """The `desk.import` origins already archived in the files of the days these events fall on."""
    metas = (record.get("meta") for record in records_of_days(desk, events, f'"{IMPORT_META}"'.encode()))
    return {value for meta in metas if isinstance(meta, dict) and isinstance(value := meta.get(IMPORT_META), str)}


def _check_rules(desk: DeskFolder, mirror: HeadMirror | FolderMemories, report: ImportReport,
                 fmt: str) -> tuple[dict[str, bytes | None], dict[str, IndexEntry]]:
    """Run the commit's file rules (secrets included) on the planned memories and desk files;
    reject each memory that fails, with its finding, and propose each desk file that fails instead
    of writing it. Returns the writes (memories and desk files) and the memories' index entries."""
    from desk.gate.validate import validate_writes

    index_path = INDEX_FILE if report.project is None else project_index_path(report.project)
    for _round in range(3):
        writable = [m for m in report.memories if m.memory is not None and m.action in ("create", "update")]
        writes: dict[str, bytes | None] = {m.path or "": m.memory.render()
                                           for m in writable if m.memory is not None}
        entries = {m.name or "": IndexEntry.of(m.memory) for m in writable if m.memory is not None}
        files: dict[str, bytes | None] = {f.target: f.data for f in report.files if f.action == "write"}
        if not writes and not files:
            return writes, entries
        index = _render_index(mirror, entries)
        checked = {**writes, **files, index_path: index} if writes else {**files}
        found = validate_writes(desk, checked, _message(fmt, Path(report.source), report))
        bad: dict[str, list[str]] = {}
        for finding in found.errors:
            if finding.path in writes or finding.path in files:
                bad.setdefault(finding.path, []).append(f"{finding.rule}: {finding.message}")
        if not bad:
            return {**writes, **files}, entries
        for line in writable:
            reasons = bad.get(line.path or "")
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
    head = desk.git.worktree.committed_blobs([i.target for i in items])
    for item in items:
        text = item.text
        if item.target == USER_FILE and not text.startswith("---\n"):
            # USER.md keeps its template's profile frontmatter above the source's free text
            frame = template_bytes(TEMPLATE_FILES[USER_FILE]).decode("utf-8")
            text = frame[:frame.index("\n---\n", 4) + len("\n---\n")] + text
        data = text.encode("utf-8")
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


def _message(fmt: str, path: Path, report: ImportReport) -> str:
    counts = report.counts()
    subject = (f"import: {fmt} from {path.name}: {counts['create']} created, {counts['update']} updated, "
               f"{counts['records_new']} archive records")
    if counts["files"]:
        subject += f", {counts['files']} desk files"
    if report.project:
        subject += f" (project {report.project})"
    return commit_message(subject, {
        "Desk-Op": "import", "Desk-Actor": "user", "Desk-Project": report.project,
        "Desk-User": (report.profile or {}).get("user_scope") if (report.profile or {}).get("changed") else None,
        "Desk-Import-Format": fmt,
        "Desk-Import-Source": path.name or str(path),
        "Desk-Import-Created": str(counts["create"]), "Desk-Import-Updated": str(counts["update"]),
        "Desk-Import-Unchanged": str(counts["unchanged"]), "Desk-Import-Rejected": str(counts["rejected"]),
        "Desk-Import-Records": str(counts["records_new"]),
        "Desk-Import-Files": str(counts["files"]) if counts["files"] else None})
