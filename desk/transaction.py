"""One mutation, one commit: the lock, the dirty-file check, atomic writes, crash markers, recovery.

Every desk write path goes through `transaction(desk)`. Under the desk-wide lock it refuses to
touch a file a person has uncommitted edits in, writes the new contents atomically, runs the gate
(`desk.guard.validate`, the same rules as the hooks) and commits exactly those paths
(`git commit -- paths`, so other staged or unstaged work stays where it was). If the commit fails,
the files and the index entries are put back: the desk is as it was.

Before it touches anything, a mutation records what it will write in a pending-mutation marker
in `.git/`. A crash leaves the marker behind; the next mutation (under the lock, so the marker's
writer is dead) finishes the mutation when every file still holds the bytes desk wrote, or undoes
it, and never touches a file a person has changed since. `desk doctor` reports the same.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from desk.errors import ConflictError, DeskError, InvalidFileError
from desk.guard.hook_files import only_desk_hooks
from desk.guard.validate import VALIDATED_ENV, require_valid
from desk.layout import ARCHIVE_PREFIX, DeskFolder
from desk.storage.atomic import atomic_write, remove
from desk.storage.git import blob_sha
from desk.storage.lock import desk_lock

PENDING_PREFIX = "desk-pending-"


def commit_message(subject: str, trailers: Mapping[str, str | None], body: str | None = None) -> str:
    """`subject`, an optional body, and `Key: value` trailers (empty values left out)."""
    lines = [subject.replace("\n", " ").strip(), ""]
    if body:
        lines += [body.strip(), ""]
    for key, value in trailers.items():
        if value:
            lines.append(f"{key}: {' '.join(str(value).split())}")
    return "\n".join(lines) + "\n"


class Transaction:
    """What a mutation may do while it holds the lock."""

    def __init__(self, desk: DeskFolder) -> None:
        self.desk = desk

    def require_clean(self, paths: list[str]) -> None:
        """Refuse (exit 4) when any of `paths` has uncommitted edits, naming the file."""
        dirty = self.desk.git.dirty(paths)
        if dirty:
            raise ConflictError(
                f"{dirty[0]} has uncommitted changes; desk will not overwrite them",
                hint=f"commit or discard them first (`git -C {self.desk.root} diff -- {dirty[0]}`)")

    def commit(self, writes: Mapping[str, bytes | None], message: str) -> str:
        """Write (bytes) or delete (None) each path, then commit exactly those paths.

        Returns the commit sha. On any failure the files are restored and the error re-raised.
        """
        paths = sorted(writes)
        before = {p: self._read(p) for p in paths}
        marker = mark_pending(self.desk, writes, before, message)
        try:
            for path, data in writes.items():
                if data is None:
                    remove(self.desk.path(path))
                else:
                    atomic_write(self.desk.path(path), data)
            added = [p for p in paths if writes[p] is not None and before[p] is None]
            if added:
                self.desk.git.add(added)
            # The one gate (docs/design.md §1.3): the hook's rules, in process; the hook then skips them.
            require_valid(self.desk, writes, message)
            verify = not only_desk_hooks(self.desk.git, self.desk.git_dir)
            sha = self.desk.git.with_env(**{VALIDATED_ENV: "1"}).commit(message, paths, verify=verify)
            marker.unlink(missing_ok=True)
            return sha
        except BaseException:
            self._restore(before)
            marker.unlink(missing_ok=True)
            raise

    def _read(self, path: str) -> bytes | None:
        try:
            return self.desk.path(path).read_bytes()
        except FileNotFoundError:
            return None

    def _restore(self, before: Mapping[str, bytes | None]) -> None:
        for path, data in before.items():
            if data is None:
                remove(self.desk.path(path))
            else:
                atomic_write(self.desk.path(path), data)
        self.desk.git.unstage(list(before))


@contextmanager
def transaction(desk: DeskFolder) -> Iterator[Transaction]:
    """Hold the desk lock for one mutation."""
    with desk_lock(desk.lock_path):
        recover_interrupted(desk)  # the next command recovers from a crash of the last one
        yield Transaction(desk)


# -- crash markers and recovery --------------------------------------------------------------


def mark_pending(desk: DeskFolder, writes: Mapping[str, bytes | None],
                 before: Mapping[str, bytes | None], message: str) -> Path:
    """Record what a mutation is about to write, so a crash can be finished or undone."""
    # One file per mutation: a later mutation must not erase the record of an interrupted one.
    # Archive files are left out: they only grow, a checkpoint writes them unchanged, and recovery
    # must never rewrite them (appends racing a rewrite would be lost).
    marker = desk.git_dir / f"{PENDING_PREFIX}{time.time_ns()}-{os.getpid()}.json"
    data = {"message": message,
            "paths": {p: {"old": None if before[p] is None else blob_sha(before[p] or b""),
                          "new": None if writes[p] is None else blob_sha(writes[p] or b"")}
                      for p in sorted(writes) if not p.startswith(ARCHIVE_PREFIX)}}
    atomic_write(marker, json.dumps(data, ensure_ascii=False).encode())  # durable before any write
    return marker


def pending_markers(desk: DeskFolder) -> list[Path]:
    """The markers of interrupted mutations, oldest first (nanosecond timestamps sort)."""
    return sorted(desk.git_dir.glob(f"{PENDING_PREFIX}*.json"))


@dataclass(frozen=True)
class Settlement:
    """What became of one interrupted mutation: `repaired`, `found` (not repairing) or `needs-person`."""

    paths: str
    message: str
    status: str


def settle(desk: DeskFolder, marker: Path, *, repair: bool) -> Settlement:
    """Finish or undo the interrupted mutation `marker` records (with `repair`), or say what it is.

    Call it under the desk lock. A mutation is finished only when every file still holds exactly
    the bytes desk wrote, undone when it would break a rule, and left to a person when any file
    changed since.
    """
    try:
        pending = json.loads(marker.read_text())
        paths: dict[str, dict[str, str | None]] = pending["paths"]
        message: str = pending["message"]
    except (ValueError, KeyError, TypeError):
        if repair:
            marker.unlink()
        return Settlement(marker.name, "unreadable pending-mutation marker" + (" removed" if repair else ""),
                          "repaired" if repair else "found")
    head = desk.git.head()
    committed = desk.git.committed_blobs(paths, head) if head else {}
    current = {p: _worktree_blob(desk, p) for p in paths}
    named = ", ".join(paths)
    if all(committed.get(p) == v["new"] for p, v in paths.items()):
        if repair:
            marker.unlink()
        return Settlement(named, "the mutation was committed; only its marker was left",
                          "repaired" if repair else "found")
    foreign = [p for p, v in paths.items() if current[p] not in (v["old"], v["new"])]
    if foreign:
        return Settlement(", ".join(foreign),
                          f"an interrupted mutation ({message.splitlines()[0]}) left these files, and they "
                          "have changed since: review them (`git diff`), then commit or discard; then "
                          f"remove {marker}", "needs-person")
    summary = message.splitlines()[0]
    if not repair:
        return Settlement(named, f"a mutation ({summary}) was interrupted before its commit; --repair "
                          "finishes it (or undoes it if it breaks a rule)", "found")
    try:
        settled = None
        if all(current[p] == v["new"] for p, v in paths.items()):
            writes = {p: (desk.path(p).read_bytes() if v["new"] is not None else None)
                      for p, v in paths.items()}
            # A new file written before the crash is untracked: commit --only needs it added.
            created = [p for p, v in paths.items() if v["old"] is None and v["new"] is not None]
            if created:
                desk.git.add(created)
            try:
                Transaction(desk).commit(writes, message)
                settled = Settlement(named, f"finished the interrupted mutation ({summary}): committed",
                                     "repaired")
            except InvalidFileError:
                pass  # an unvalidated write that breaks a rule: undo it instead
        if settled is None:
            _undo(desk, head, paths)
            settled = Settlement(named, f"undid the interrupted mutation ({summary}): the files are as "
                                 "committed", "repaired")
    except DeskError as exc:
        return Settlement(named, f"could not settle the interrupted mutation ({summary}): {exc.message}; "
                          f"then remove {marker}", "needs-person")
    marker.unlink(missing_ok=True)
    return settled


def recover_interrupted(desk: DeskFolder) -> None:
    """Finish or undo mutations a crash interrupted; called under the desk lock before each mutation.

    The lock is held, so every marker left belongs to a dead process. What cannot be settled
    safely (a person changed the files since) stops the mutation with exit 4 and the reason.
    """
    stuck = [s for s in (settle(desk, m, repair=True) for m in pending_markers(desk))
             if s.status != "repaired"]
    if stuck:
        raise ConflictError("an interrupted desk mutation needs a person first:\n"
                            + "\n".join(s.message for s in stuck),
                            hint="run `desk doctor` for the details")


def _undo(desk: DeskFolder, head: str | None, paths: Mapping[str, Mapping[str, str | None]]) -> None:
    """Put back the committed content of desk's own half-written paths."""
    for path, v in paths.items():
        if path.startswith(ARCHIVE_PREFIX):
            continue  # append-only evidence: never rolled back (a checkpoint rewrites it unchanged)
        if _worktree_blob(desk, path) != v["new"]:
            continue  # already the old content
        old = desk.git.blob_at(head, path) if head else None
        if old is None:
            remove(desk.path(path))
        else:
            atomic_write(desk.path(path), old)
    desk.git.unstage(list(paths))


def _worktree_blob(desk: DeskFolder, path: str) -> str | None:
    try:
        return blob_sha(desk.path(path).read_bytes())
    except FileNotFoundError:
        return None
