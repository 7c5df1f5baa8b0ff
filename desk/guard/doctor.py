"""`desk doctor [--repair]`: find, and where it is safe fix, what crashes and bypasses leave behind.

The checks: every file rule (`validate --all`), recent commits that bypassed the hooks, temporary
files of an interrupted write, a torn archive tail, an interrupted mutation or sync, stale locks,
missing hooks, and git's housekeeping. `--repair` fixes only what is provably desk's own debris
and never discards a person's uncommitted edits (desk.transaction.settle decides a pending
mutation); the rest is listed for a person.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from desk.errors import ConflictError, Finding
from desk.formats.hook_files import MERGE_DRIVERS, driver_python, read_text_or_empty, unsafe_drivers
from desk.gate.installed_hooks import installed
from desk.gate.rules import FileVerdict, check_archive, check_message, message_secret_items, secret_verdict
from desk.gate.checks import current_config
from desk.gate.whole import validate_all
from desk.gate.work_tree import validate_listed
from desk.gate.verdicts import VerdictCache
from desk.gate.whole import DOCTOR_LOCK_WAIT
from desk.layout import ARCHIVE_DIR, ARCHIVE_PREFIX, MEMORY_PREFIX, DeskFolder
from desk.storage.atomic import TEMP_PREFIX
from desk.storage.derived import RETIRED
from desk.guard.doctor_locks import check_desk_index_lock, check_git_locks, check_index_lock, check_interrupted_sync
from desk.storage.git import LOCK_STALE_AFTER
from desk.storage.git.housekeeping import ObjectStore, collect_garbage, object_store
from desk.storage.integration import left_behind
from desk.storage.lock import desk_lock
from desk.text.secrets import redact
from desk.storage.reading import is_plain_file

if TYPE_CHECKING:
    from desk.gate.whole import EarlyReads
    from desk.storage.git import StartedListing

STALE_AFTER = float(LOCK_STALE_AFTER)  # seconds before a temp file or a lock of unknown owner is abandoned
LOCK_WAIT = DOCTOR_LOCK_WAIT
PENDING_MARKERS = "desk-pending-*.json"  # desk.transaction's markers, looked for without loading it
OLD_RECORDS = RETIRED  # in .git/: records of an older desk's in-process commit path, never read now


# -- the report -----------------------------------------------------------------------------


@dataclass
class Problem:
    """One thing doctor found: what, where, and whether it was repaired or needs a person."""

    check: str
    path: str
    message: str
    status: str = "found"  # found | repaired | needs-person | note

    def to_json(self) -> dict[str, str]:
        return asdict(self)


@dataclass
class DoctorReport:
    problems: list[Problem] = field(default_factory=list)
    repair: bool = False
    rebuilt: list[str] | None = None  # with --rebuild: the derived files dropped (under .git/), then made again
    objects: ObjectStore | None = None  # `git count-objects -v`, after any repair

    @property
    def ok(self) -> bool:
        return all(p.status in ("repaired", "note") for p in self.problems)

    def add(self, check: str, path: str, message: str, status: str = "found") -> Problem:
        problem = Problem(check, path, message, status)
        self.problems.append(problem)
        return problem

    def to_json(self) -> dict[str, object]:
        rebuilt = {} if self.rebuilt is None else {"rebuilt": self.rebuilt}
        objects = {} if self.objects is None else {"objects": self.objects.to_json()}
        return {"status": "ok" if self.ok else "problems", "repair": self.repair,
                "problems": [p.to_json() for p in self.problems], **rebuilt, **objects}

    def text(self) -> str:
        done = [] if self.rebuilt is None else [
            f"rebuilt: every derived cache ({len(self.rebuilt)} files dropped from .git/ and made again)"]
        if self.objects is not None:
            o = self.objects
            done.append(f"objects: {o.loose} loose ({o.loose_kib} KiB), {o.packs} packs ({o.pack_kib} KiB)")
        if not self.problems:
            return "\n".join([*done, "ok: nothing to repair"])
        lines = done + [f"{p.status}: {p.check}: {p.path}: {p.message}" for p in self.problems]
        if not self.repair and any(p.status == "found" for p in self.problems):
            lines.append("run `desk doctor --repair` to fix what is marked found (safe to fix)")
        elif not self.ok:
            lines.append("what is left needs a person: each line says what to do")
        return "\n".join(lines)


# -- the checks -----------------------------------------------------------------------------


def diagnose(desk: DeskFolder, *, repair: bool = False, commits: int = 200,
             early: EarlyReads | None = None) -> DoctorReport:
    """Run every check; with `repair`, fix what is safe under the desk lock. `early`: the desk lock
    taken and git's reads started by desk.gate.whole.diagnose (the entry `desk doctor` uses)."""
    report = DoctorReport(repair=repair)
    history: Callable[[], list[str]] | None = None
    listing: StartedListing | None = None
    quiet = early.finish if early is not None else (lambda: None)
    try:
        with early.lock if early is not None else desk_lock(desk.lock_path, timeout=LOCK_WAIT,
                                                               reading=not repair):
            # the locks first: settling an interrupted sync or mutation needs git's index lock
            check_desk_index_lock(desk, report, repair)
            check_index_lock(desk, report, repair, lock_held=True, quiet=quiet)
            check_git_locks(desk, report, repair, lock_held=True, quiet=quiet)
            check_interrupted_sync(desk, report, repair)
            _check_pending(desk, report, repair)
            _check_old_records(desk, report, repair)
            # The history check's `git rev-list` and the hooks check's `git config` run while the
            # rule check's `git ls-files` stats the work tree; started only now (unless `early`
            # started them before any repair, and waits for them before a lock check counts the
            # git processes running in the desk).
            if early is not None:
                history, listing = early.history, early.listing
            else:
                desk.git.config.start()
                history = desk.git.history.start_commit_ids(commits) if commits > 0 else list
            if not _check_stopped_merge(desk, report):  # mid-merge files are git's and the person's
                _check_temp_files(desk, report, repair)
                _check_torn_archive(desk, report, repair)
                _check_rules(desk, report, repair, listing)
            elif early is not None:
                early.finish()
    except ConflictError:
        if history is not None:  # let them finish: the lock checks below count running git processes
            history()
            desk.git.config.values()
            history = None  # the history check asks again
        quiet()
        report.add("desk-lock", str(desk.lock_path), "another desk process holds the desk lock; "
                   "run doctor again when it is done", "needs-person")
        check_index_lock(desk, report, False, lock_held=False)
        check_git_locks(desk, report, False, lock_held=False)
    for sha, subject, finding in bypassed_commits(desk, commits, history):  # made without the hooks
        report.add(f"bypassed-{finding.rule}", f"{finding.path}:{finding.line}",
                   f"commit {sha[:7]} ({redact(subject)[0]}) was made without the hooks and broke a rule: "
                   f"{finding.message}", "needs-person")
    _check_hooks(desk, report, repair)
    _check_housekeeping(desk, report, repair)
    return report


def _check_stopped_merge(desk: DeskFolder, report: DoctorReport) -> bool:
    """A person's merge or rebase stopped on a conflict: named, with what to run; the checks of
    the work tree wait for it (its files are half-merged, and a repair would write into them)."""
    kind = desk.git.merging.stopped()
    if kind is None or left_behind(desk.git_dir):  # desk sync's own: check_interrupted_sync's
        return kind is not None
    unmerged = sorted(desk.git.merging.unmerged())
    report.add("stopped-merge", ", ".join(unmerged) or str(desk.git_dir),
               f"a git {kind} is stopped here on a conflict; run `desk sync --continue` to settle desk's "
               f"files and finish it, or `git {kind} --abort` to undo the pull; the work tree is checked "
               "once it is finished", "needs-person")
    return True


def _check_pending(desk: DeskFolder, report: DoctorReport, repair: bool) -> None:
    """Each interrupted mutation, oldest first: settled by the transaction's recovery (loaded only
    when a marker is there; desk.transaction.pending_markers looks for the same names)."""
    if not any(desk.git_dir.glob(PENDING_MARKERS)):
        return
    from desk.transaction import pending_markers, settle

    for marker in pending_markers(desk):
        settled = settle(desk, marker, repair=repair)
        report.add("interrupted", settled.paths, settled.message, settled.status)


def _check_old_records(desk: DeskFolder, report: DoctorReport, repair: bool) -> None:
    """The records an older desk kept in .git/ (OLD_RECORDS, and the temporary files it renamed
    over them): harmless, so a note; `--repair` removes them."""
    try:
        names = sorted(name for name in os.listdir(desk.git_dir) if name in OLD_RECORDS or (
            name.endswith(".tmp") and any(name.startswith(record + ".") for record in OLD_RECORDS)))
    except OSError:
        return
    for name in names:
        path = desk.git_dir / name
        if not repair:
            report.add("old-record", str(path), "a record an older desk kept for its in-process commits; "
                       "desk no longer reads it (`desk doctor --repair` removes it)", "note")
            continue
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        report.add("old-record", str(path), "removed a record an older desk kept for its in-process commits "
                   "(desk no longer reads it)", "repaired")


def _check_temp_files(desk: DeskFolder, report: DoctorReport, repair: bool) -> None:
    now = time.time()
    for path in _temp_files(desk):
        rel = path.relative_to(desk.root).as_posix()
        try:
            age = now - path.lstat().st_mtime
        except FileNotFoundError:
            continue  # the write it belonged to has finished meanwhile
        if age < STALE_AFTER:
            report.add("temp-file", rel, "a recent temporary file (a write may be in progress)", "note")
        elif repair:
            path.unlink()
            report.add("temp-file", rel, "removed a temporary file left by an interrupted write "
                       "(the file it was for was never replaced)", "repaired")
        else:
            report.add("temp-file", rel, "temporary file left by an interrupted write")
    edits = desk.git_dir / "desk-edit"
    if edits.is_dir():
        for path in sorted(edits.iterdir()):
            report.add("edit-leftover", str(path), "text left by an interrupted or refused `desk edit`: "
                       "copy what you need, then delete it", "needs-person")


RACY_NS = 2_000_000_000  # a folder changed this recently may change again in the same clock tick


def _temp_files(desk: DeskFolder) -> list[Path]:
    """Every `.desk-tmp-*` file in the desk (not in `.git`), listing only the folders that changed.

    A folder whose inode and mtime are those of an earlier look that found no temporary file has
    none now and the same subfolders, if its mtime was 2 s old at that look (a coarse clock's tick).
    The looks are kept in the verdict cache: an unchanged desk costs a `stat` per folder.
    """
    start = time.time_ns()
    cache = VerdictCache(desk.cache_dir, "")
    try:
        known = cache.folders()
        found: list[Path] = []
        looks: dict[str, tuple[int, int, list[str]]] = {}
        stack = [""]
        while stack:
            rel = stack.pop()
            folder = desk.root / rel
            try:
                st = folder.stat()
            except OSError:
                continue
            seen = known.get(rel)
            if seen is not None and seen[:2] == (st.st_ino, st.st_mtime_ns):
                subdirs = seen[2]
                looks[rel] = seen
            else:
                subdirs, temps = [], []
                try:
                    with os.scandir(folder) as entries:
                        for entry in entries:
                            if entry.is_dir(follow_symlinks=False):
                                if entry.name != ".git":
                                    subdirs.append(entry.name)
                            elif entry.name.startswith(TEMP_PREFIX):
                                temps.append(Path(entry.path))
                except OSError:
                    continue
                found += temps
                if not temps and st.st_mtime_ns < start - RACY_NS:
                    looks[rel] = (st.st_ino, st.st_mtime_ns, subdirs)
            stack += [f"{rel}/{name}" if rel else name for name in subdirs]
        if looks != known:
            cache.put_folders(looks)
    finally:
        cache.close()
    return sorted(found)


def _check_torn_archive(desk: DeskFolder, report: DoctorReport, repair: bool) -> None:
    folder = desk.path(ARCHIVE_DIR)
    if not folder.is_dir():
        return
    # A first look without the archive lock: an append in progress may look torn, so a file that
    # does is looked at again under the lock (appends hold it), and only then reported.
    suspects = [path for path in sorted(folder.glob("*.jsonl"))
                if is_plain_file(path) and _torn_tail(path) is not None]  # never through a link
    if not suspects:
        return
    from desk.archive.store import archive_lock_path  # the archive's modules: only when needed

    with desk_lock(archive_lock_path(desk), timeout=LOCK_WAIT, reading=not repair):
        for path in suspects:
            fragment = _torn_tail(path)
            if fragment is None:
                continue
            rel = path.relative_to(desk.root).as_posix()
            try:
                complete = isinstance(json.loads(fragment), dict)
            except ValueError:
                complete = False
            if not repair:
                report.add("archive-torn", rel, f"the last {len(fragment)} bytes are a record torn by "
                           "a crash" + (" (complete but for its newline)" if complete else ""))
            elif complete:
                # A whole record that only lost its newline: ending the line keeps it.
                with path.open("ab") as file:
                    file.write(b"\n")
                    os.fsync(file.fileno())
                report.add("archive-torn", rel, "ended a complete last record with its newline",
                           "repaired")
            else:
                # Never cut evidence: the next append starts on a new line and `desk archive verify`
                # reports the fragment as torn, not as tampering.
                report.add("archive-torn", rel, f"left a torn fragment of {len(fragment)} bytes in "
                           "place; the next append starts a new line", "note")


def _torn_tail(path: Path, chunk: int = 1 << 16) -> bytes | None:
    """The bytes after the last newline of a file that does not end in one (None when it does, or
    is empty), read from the end: archive files grow without bound."""
    with path.open("rb") as file:
        end = file.seek(0, os.SEEK_END)
        if end == 0:
            return None
        file.seek(end - 1)
        if file.read(1) == b"\n":
            return None
        start = end
        while start > 0:
            start = max(0, start - chunk)
            file.seek(start)
            block = file.read(end - start)
            newline = block.rfind(b"\n")
            if newline >= 0:
                return block[newline + 1:]
        file.seek(0)
        return file.read(end)


def _check_rules(desk: DeskFolder, report: DoctorReport, repair: bool,
                 listing: StartedListing | None = None) -> None:
    """`validate --all` (`listing`: its listing, started already)."""
    checked = validate_listed(desk, listing) if listing is not None else validate_all(desk)
    findings = [f for f in checked.errors if f.rule != "archive-torn"]
    stale = [f for f in findings if f.rule == "index-stale"]
    blocked = _check_blocking_records(desk, report, repair, findings)
    for finding in findings:
        if finding.rule != "index-stale" and finding.path not in blocked:
            report.add(finding.rule, f"{finding.path}:{finding.line}", finding.message, "needs-person")
    if not stale:
        return
    invalid = any(f.path.startswith(MEMORY_PREFIX) for f in findings)
    if invalid or not repair:
        report.add("index-stale", "MEMORY.md", "MEMORY.md does not match memory/"
                   + ("; fix the invalid memory files first" if invalid else ""), "needs-person" if invalid else "found")
        return
    from desk.memory.operations import reindex_locked  # the write path: only when repairing
    from desk.transaction import Transaction

    result = reindex_locked(Transaction(desk), "user")  # under the lock doctor holds
    done = {"updated": "committed", "restored": "restored the committed MEMORY.md",
            "written": "written; commit it with your memory/ edits (" + ", ".join(result.pending) + ")"}
    report.add("index-stale", "MEMORY.md", f"regenerated MEMORY.md: {done.get(result.status, result.status)}",
               "repaired")


def _check_blocking_records(desk: DeskFolder, report: DoctorReport, repair: bool,
                            findings: list[Finding]) -> set[str]:
    """Archive files whose uncommitted records every checkpoint would refuse: with `repair`, those
    records are moved aside into `.system/quarantine/` (kept byte for byte) and the valid ones
    appended again. Returns the files handled here."""
    paths = sorted({f.path for f in findings if f.rule in ("archive-record", "archive-chain")})
    if not paths:
        return set()
    from desk.archive.quarantine import blocking_records, quarantine  # only when an archive is damaged

    handled = set()
    for rel in paths:
        if not blocking_records(desk, rel):
            continue  # the committed part, or a rewrite: a person's (the findings stay)
        handled.add(rel)
        if not repair:
            report.add("archive-blocked", rel, "uncommitted records that every checkpoint refuses "
                   "(another desk's id, a damaged line or chain); --repair moves them aside into "
                   ".system/quarantine/ and appends the valid ones again")
            continue
        done = quarantine(desk, rel)
        if done is not None:
            report.add("archive-blocked", rel, f"moved {done.moved} uncommitted record(s) aside to "
                       f"{done.quarantine} (kept as they were) and appended {done.restored} valid one(s) "
                       "again with new ids (meta desk.restored_from names the old)", "repaired")
    return handled


def bypassed_commits(desk: DeskFolder, limit: int, started: Callable[[], list[str]] | None = None
                     ) -> list[tuple[str, str, Finding]]:
    """(commit, subject, finding) for history rules broken in the last `limit` commits. A commit
    never changes, so its verdict is cached by id (secrets by fingerprint: today's allow-list
    applies); `started` gives the commit ids when `git rev-list` was started already."""
    if limit <= 0:
        return []
    shas = started() if started is not None else desk.git.history.commit_ids(limit)
    desk_id, allow = current_config(desk)
    cache = VerdictCache(desk.cache_dir, desk_id)
    try:
        known = cache.commits(shas)
        fresh = _commit_verdicts(desk, [sha for sha in shas if sha not in known], desk_id)
        cache.put_commits(fresh)
    finally:
        cache.close()
    found = []
    now = dt.datetime.now(dt.timezone.utc)
    for sha in shas:
        subject, verdict = known.get(sha) or fresh[sha]
        found += [(sha, subject, f) for f in verdict.findings_at(allow, now)]
    return found


def _commit_verdicts(desk: DeskFolder, shas: list[str], desk_id: str
                     ) -> dict[str, tuple[str, FileVerdict]]:
    """`{commit: (subject, what the history rules found in it)}`."""
    commits = desk.git.history.commits(shas)
    # A merge is checked for what it made itself: the paths that differ from every parent (a path
    # equal to one parent's was checked in that parent's commit), each against every parent.
    merges = desk.git.history.merge_changes(shas)
    changes_of: dict[str, list[tuple[str, tuple[str | None, ...], str | None]]] = {}
    for commit in commits:
        if commit.sha in merges:
            changes_of[commit.sha] = [(c.path, c.old_blobs, c.new_blob) for c in merges[commit.sha]]
        else:
            changes_of[commit.sha] = [(c.path, (c.old_blob,), c.new_blob) for c in commit.changes]
    wanted: list[str] = []
    for changes in changes_of.values():
        for path, old_blobs, new_blob in changes:
            if path.startswith(ARCHIVE_PREFIX):
                wanted += [b for b in (*old_blobs, new_blob) if b]
            elif new_blob:
                wanted.append(new_blob)
    blobs = desk.git.objects.read_blobs(wanted)
    verdicts = {}
    for commit in commits:
        changes = sorted(changes_of[commit.sha])
        items = [(f, "") for f in check_message(commit.message, {c[0] for c in changes})]
        items += message_secret_items(commit.message)
        for path, old_blobs, new_blob in changes:
            if path.startswith(ARCHIVE_PREFIX) and path.endswith(".jsonl"):
                # an error only when the file is no pure append of any parent's
                per_parent = [[f for f in check_archive(path, blobs.get(old or ""),
                                                        blobs.get(new_blob) if new_blob else None,
                                                        desk_id) if f.severity == "error"]
                              for old in old_blobs]
                if all(per_parent):
                    items += [(f, "") for f in per_parent[0]]
            elif new_blob is not None and new_blob in blobs:
                secrets = secret_verdict(path, blobs[new_blob].decode("utf-8", "replace"))
                items += list(zip(secrets.findings, secrets.conditions))
        verdicts[commit.sha] = (commit.subject, FileVerdict(tuple(f for f, _ in items),
                                                            tuple(c for _, c in items)))
    return verdicts


def _check_housekeeping(desk: DeskFolder, report: DoctorReport, repair: bool) -> None:
    """The object store's size; git's housekeeping overdue by its own thresholds (gc.auto,
    gc.autoPackLimit) is found, and `--repair` runs `git gc` (its default prune grace)."""
    report.objects = object_store(desk.git)
    if not report.objects.overdue:
        return
    what = f"{report.objects.loose} loose objects, {report.objects.packs} packs"
    if not repair:
        report.add("housekeeping", ".git/objects", f"{what}: git's housekeeping (`git gc`) is overdue")
        return
    failed = collect_garbage(desk.git)
    report.objects = object_store(desk.git)
    if failed:
        report.add("housekeeping", ".git/objects", f"{what}: `git gc` failed: {failed}", "needs-person")
    else:
        report.add("housekeeping", ".git/objects", f"{what}: ran `git gc`", "repaired")


def _check_hooks(desk: DeskFolder, report: DoctorReport, repair: bool) -> None:
    state = installed(desk.root, desk.git)
    if not state:
        report.add("hooks", "core.hooksPath", "core.hooksPath is set: make sure your hooks run "
                   "`desk validate --staged` (see `desk hooks install`)", "note")
        return
    missing = [hook for hook, status in state.items() if status == "missing"]
    outdated = [hook for hook, status in state.items() if status == "outdated"]
    config = read_text_or_empty(desk.git.git_dir() / "config")
    outdated += [f"merge driver {driver}" for driver in unsafe_drivers(config)]
    moved = [hook for hook, status in state.items() if status == "moved"]
    for driver in MERGE_DRIVERS:  # a driver naming a Python that is gone
        python = driver_python(desk.git.config.get(f"merge.desk-{driver}.driver") or "")
        if python and "/" in python and not os.access(python, os.X_OK):
            moved.append(f"merge driver desk-{driver}")
    if not missing and not outdated and not moved:
        return
    if repair:
        from desk.setup.hooks import install  # the installer: only when repairing

        install(desk.root)
        report.add("hooks", ", ".join(missing + outdated + moved), "installed desk's hooks and merge drivers "
                   f"for {sys.executable} (an existing hook is kept and still runs first)", "repaired")
        return
    if moved:
        report.add("hooks", ", ".join(moved), "desk's hooks and merge drivers name a Python that is gone "
                   "(a moved or deleted virtualenv); until they are rewritten they fall back to `desk` on "
                   "PATH: `desk doctor --repair` rewrites them for the Python running desk now")
    if missing:
        report.add("hooks", ", ".join(missing), "desk's git hooks are not installed: hand edits "
                   "are not validated")
    if outdated:
        report.add("hooks", ", ".join(outdated), "desk's hooks were written by an older desk (they start "
                   "Python with the work tree on its path, where a remote can plant modules); "
                   "`desk hooks install` (or `desk doctor --repair`) rewrites them")
