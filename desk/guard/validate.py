"""`desk validate`: the one gate every write path passes (docs/design.md §1.3).

The same rules run in three places: in process before each of desk's own commits
(`validate_writes`, called by `Transaction.commit`), in the git hooks and `desk validate --staged`
(`validate_staged`: the staged blobs, never the work tree), and over the whole desk
(`validate_all`: `desk validate --all`, `desk doctor`). This module gathers what each place
changes and runs the rules on it: the per-file and commit-message rules of desk.guard.rules, and
the memory-set rules (MEMORY.md regenerated, names unique ignoring case) of desk.guard.index_rule.
The rule ids are listed in docs/guard.md.

`--staged` costs in proportion to the change: one `git diff --cached --raw` names the changed blobs,
only those are read and parsed, and the MEMORY.md rule gets the other memories' index entries from
the blob-keyed cache over `git ls-files -s memory/`. Heavy modules (pydantic, YAML) are imported
only when a memory or config file is actually checked, so the commit-msg hook stays cheap.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from desk.errors import Finding, InvalidFileError
from desk.guard.index_rule import MemorySet, Read, check_memory_set
from desk.guard.rules import (FILE_MODE, GITLINK_MODE, SYMLINK_MODE, check_file, check_message,
                              is_managed)
from desk.layout import (ARCHIVE_PREFIX, CONFIG_PATH, INDEX_FILE, MEMORY_PREFIX, DeskFolder,
                         memory_name)
from desk.storage.atomic import atomic_write
from desk.storage.git import Git, blob_sha, staged_git

VALIDATED_ENV = "DESK_VALIDATED"  # set on desk's own commits; the shell hooks skip Python for them


@dataclass(frozen=True)
class Change:
    """One path as the commit (or the check) will have it."""

    path: str
    new: bytes | None  # None: deleted
    mode: str = FILE_MODE
    old_blob: str | None = None  # the blob at HEAD, when there was one


@dataclass
class Report:
    """The findings of one validation run, errors and warnings."""

    findings: list[Finding] = field(default_factory=list)
    checked: int = 0
    fixed: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict[str, object]:
        return {"status": "ok" if self.ok else "rejected", "checked": self.checked,
                "errors": len(self.errors), "warnings": len(self.findings) - len(self.errors),
                "findings": [f.to_json() for f in self.findings], "fixed": self.fixed}


def _run(desk: DeskFolder, changes: list[Change], memory: MemorySet | None, read: Read,
         message: str | None, now: dt.datetime | None) -> tuple[Report, bytes | None]:
    """The rules over `changes`; the memory-set rules when memory/ or MEMORY.md changed."""
    now = now or dt.datetime.now(dt.timezone.utc)
    managed = [c for c in changes if is_managed(c.path)]
    report = Report(checked=len(managed))
    if not managed and message is None and memory is None:
        return report, None
    desk_id, allow = _config(desk, changes)
    olds = read([c.old_blob for c in managed
                 if c.old_blob and (c.path.startswith(ARCHIVE_PREFIX) or c.path == CONFIG_PATH)])
    for change in managed:
        old = olds.get(change.old_blob) if change.old_blob else None
        report.findings += check_file(change.path, change.new, mode=change.mode, old=old,
                                      desk_id=desk_id, allow=allow, now=now)
    changed = {c.path for c in changes}
    regenerated = None
    if memory is not None and (INDEX_FILE in changed or any(p.startswith(MEMORY_PREFIX) for p in changed)):
        memory_changes = {c.path: c.new for c in changes
                          if memory_name(c.path) is not None and c.mode != SYMLINK_MODE}
        added = {c.path for c in changes if c.old_blob is None}
        found, regenerated = check_memory_set(desk, memory_changes, memory, added)
        report.findings += found
    if message is not None:
        report.findings += check_message(message, changed)
    return report, regenerated


def _config(desk: DeskFolder, changes: list[Change]) -> tuple[str, frozenset[str]]:
    """desk_id and the allowed secret fingerprints of the content under check, without pydantic.

    The desk.json being committed when the change has one, else HEAD's: never an unstaged edit
    in the work tree, which would let a secret through a commit that does not allow it.
    (`validate --all` checks the work tree, so its changes carry the work-tree desk.json.)
    A broken desk.json is reported by the `config` rule.
    """
    def load(data: bytes | None) -> tuple[str, frozenset[str]] | None:
        try:
            config = json.loads(data or b"")
            allow = config.get("secrets", {}).get("allow", [])
            return str(config["desk_id"]), frozenset(a for a in allow if isinstance(a, str))
        except (ValueError, KeyError, AttributeError, TypeError):
            return None

    found = next((load(c.new) for c in changes if c.path == CONFIG_PATH and c.new is not None), None)
    # A broken desk.json under check (its own finding) falls back to HEAD's.
    return found or load(desk.git.blob_at("HEAD", CONFIG_PATH)) or ("", frozenset())


def _like(git: Git, extra: Collection[str] = (), gone: Collection[str] = ()) -> Callable[[list[str]], list[str]]:
    """Paths in git's index (plus `extra`, minus `gone`) equal to the given ones ignoring case."""
    def like(paths: list[str]) -> list[str]:
        found = git.indexed_like(paths)
        lowered = {p.lower() for p in paths}
        found |= {p for p in extra if p.lower() in lowered}
        return sorted(found - set(gone))
    return like


def _reader(git: Git, known: Mapping[str, bytes]) -> Read:
    """Blobs from `known` (already read or about to be written), the rest from git's object store."""
    def read(shas: list[str]) -> Mapping[str, bytes]:
        found = {s: known[s] for s in shas if s in known}
        missing = [s for s in shas if s not in known]
        return {**found, **(git.read_blobs(missing) if missing else {})}
    return read


def staged_changes(git: Git) -> tuple[list[Change], dict[str, bytes]]:
    """What the commit being made changes, and the blobs read for it in one batch.

    The batch holds each changed desk blob (by sha), the old blobs of archive files and
    desk.json, and `HEAD:MEMORY.md` and `:MEMORY.md` (the committed and the staged index).
    """
    raw = git.staged_changes()
    wanted = [c.new_blob for c in raw if c.new_blob and c.status != "D" and is_managed(c.path)
              and c.new_mode not in (SYMLINK_MODE, GITLINK_MODE)]
    wanted += [c.old_blob for c in raw
               if c.old_blob and (c.path.startswith(ARCHIVE_PREFIX) or c.path == CONFIG_PATH)]
    if any(c.path == INDEX_FILE or c.path.startswith(MEMORY_PREFIX) for c in raw):
        wanted += [f"HEAD:{INDEX_FILE}", f":{INDEX_FILE}"]
    blobs = git.read_blobs(wanted)
    changes = [Change(c.path, None if c.status == "D" else blobs.get(c.new_blob or "", b""),
                      c.new_mode, c.old_blob) for c in raw]
    return changes, blobs


def validate_staged(desk: DeskFolder, git: Git | None = None, *, message: str | None = None,
                    now: dt.datetime | None = None) -> tuple[Report, bytes | None]:
    """Validate what is staged for commit (the hooks, `desk validate --staged`).

    `git` should keep the hook's GIT_INDEX_FILE (a `git commit -- paths` stages into a temporary
    index). Returns the report and, when the MEMORY.md rule ran, the correct MEMORY.md.
    """
    git = git or staged_git(desk.root)
    changes, blobs = staged_changes(git)
    read = _reader(git, blobs)
    memory = MemorySet(blobs.get(f":{INDEX_FILE}"), blobs.get(f"HEAD:{INDEX_FILE}"),
                       lambda: git.ls_staged(MEMORY_PREFIX), read, _like(git))
    return _run(desk, changes, memory, read, message, now)


def validate_writes(desk: DeskFolder, writes: Mapping[str, bytes | None], message: str,
                    now: dt.datetime | None = None) -> Report:
    """Validate one of desk's own commits in process: exactly `writes` on top of HEAD."""
    git = desk.git
    old_blobs = git.committed_blobs(writes)  # one ls-tree; none before the first commit
    changes = [Change(p, data, FILE_MODE, old_blobs.get(p)) for p, data in sorted(writes.items())]
    read = _reader(git, {blob_sha(data): data for data in writes.values() if data is not None})

    def all_files() -> dict[str, str]:
        head = git.head()
        files = git.ls_tree(head, MEMORY_PREFIX) if head else {}
        for path, data in writes.items():
            if path.startswith(MEMORY_PREFIX):
                if data is None:
                    files.pop(path, None)
                else:
                    files[path] = blob_sha(data)
        return files

    memory = None
    if INDEX_FILE in writes or any(p.startswith(MEMORY_PREFIX) for p in writes):
        base = git.read_blobs([f"HEAD:{INDEX_FILE}"]).get(f"HEAD:{INDEX_FILE}")
        index = writes[INDEX_FILE] if INDEX_FILE in writes else base
        gone = [p for p, data in writes.items() if data is None]
        added = [p for p, data in writes.items() if data is not None]
        memory = MemorySet(index, base, all_files, read, _like(git, added, gone))
    report, _ = _run(desk, changes, memory, read, message, now)
    return report


def validate_all(desk: DeskFolder, now: dt.datetime | None = None) -> Report:
    """Every desk file in the work tree (tracked or not ignored): `desk validate --all`."""
    git = desk.git
    head = git.head()
    archive_head = git.ls_tree(head, ARCHIVE_PREFIX) if head else {}
    config_head = git.ls_tree(head, ".system") if head else {}
    changes = []
    contents: dict[str, bytes] = {}
    for path in sorted(git.work_tree_files()):
        if not is_managed(path):
            continue
        full = desk.path(path)
        if full.is_symlink():
            changes.append(Change(path, b"", SYMLINK_MODE))
            continue
        try:
            data = full.read_bytes()
        except FileNotFoundError:
            continue  # deleted in the work tree, not yet committed
        contents[blob_sha(data)] = data
        changes.append(Change(path, data, FILE_MODE,
                              archive_head.get(path) or config_head.get(path)))
    read = _reader(git, contents)
    files = {c.path: blob_sha(c.new) for c in changes
             if memory_name(c.path) is not None and c.new is not None and c.mode != SYMLINK_MODE}
    index_path = desk.path(INDEX_FILE)
    index = index_path.read_bytes() if index_path.is_file() else None

    def like(wanted: list[str]) -> list[str]:
        lowered = {p.lower() for p in wanted}
        return [p for p in files if p.lower() in lowered]

    memory = MemorySet(index, None, lambda: files, read, like)
    if INDEX_FILE not in {c.path for c in changes}:
        changes.append(Change(INDEX_FILE, None))  # a missing MEMORY.md is reported, not skipped
    report, _ = _run(desk, changes, memory, read, None, now)
    return report


def fix_index(desk: DeskFolder, regenerated: bytes) -> bool:
    """Write the regenerated MEMORY.md into the work tree (the pre-commit fixer); True if changed."""
    path = desk.path(INDEX_FILE)
    if path.is_file() and path.read_bytes() == regenerated:
        return False
    atomic_write(path, regenerated)
    return True


def require_valid(desk: DeskFolder, writes: Mapping[str, bytes | None], message: str,
                  now: dt.datetime | None = None) -> Report:
    """`validate_writes`, raising InvalidFileError (exit 3) when any rule fails."""
    report = validate_writes(desk, writes, message, now)
    if not report.ok:
        raise InvalidFileError(report.errors, hint="nothing was committed; fix the findings above")
    return report
