"""`desk doctor`'s checks of git's lock files and of a desk sync killed while git merged: a lock
desk's own dead process left is removed by --repair at once, any other only once old and no git
runs in the desk."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from desk.errors import ConflictError
from desk.layout import DeskFolder
from desk.storage.git import LOCK_STALE_AFTER, desk_left_index_lock, release_stale_index_lock
from desk.storage.git_locks import PRIVATE_LOCKS, git_running_in, recorded_git_locks
from desk.storage.integration import RECORD, left_behind, settle_integration

if TYPE_CHECKING:
    from desk.guard.doctor import DoctorReport

STALE_AFTER = float(LOCK_STALE_AFTER)  # seconds before a lock of unknown owner is abandoned


def check_interrupted_sync(desk: DeskFolder, report: DoctorReport, repair: bool) -> None:
    """A desk sync killed while git fast-forwarded or merged: undone (or found landed) by --repair."""
    if not left_behind(desk.git_dir):
        return
    try:
        settled = settle_integration(desk.git, repair=repair)
    except ConflictError as exc:
        report.add("interrupted-sync", f".git/{RECORD}", f"{exc.message}; {exc.hint}", "needs-person")
        return
    if settled is not None:
        report.add("interrupted-sync", ", ".join(settled.restored) or f".git/{RECORD}", settled.message,
                   "repaired" if repair else "found")


def check_desk_index_lock(desk: DeskFolder, report: DoctorReport, repair: bool) -> None:
    """git's index.lock left by a desk process that died holding it: desk's own, removed at once."""
    if not desk_left_index_lock(desk.git_dir):
        return
    lock = desk.git_dir / "index.lock"
    if repair:
        release_stale_index_lock(desk.git_dir)
        report.add("index-lock", str(lock), "removed the index.lock a crashed desk command left",
                   "repaired")
    else:
        report.add("index-lock", str(lock), "a crashed desk command left git's index.lock: it "
                   "blocks every commit; --repair (or any desk command) removes it")


def check_index_lock(desk: DeskFolder, report: DoctorReport, repair: bool, *, lock_held: bool,
                      quiet: Callable[[], object] = lambda: None) -> None:
    """`quiet()` waits for the reads doctor started: its own git is not a person's."""
    lock = desk.git_dir / "index.lock"
    if lock_held and desk_left_index_lock(desk.git_dir):
        return  # desk's own, reported (and removed) by check_desk_index_lock
    if any(left.path == lock for left in recorded_git_locks(desk.git_dir)[0]):
        return  # a desk git process's, reported (and removed) by check_git_locks
    try:
        age = time.time() - lock.stat().st_mtime
    except FileNotFoundError:
        return
    quiet()
    running = git_running_in(desk.root)
    _unknown_lock(report, "index-lock", lock, str(lock), age, running, repair, lock_held)


def _unknown_lock(report: DoctorReport, check: str, lock: Path, shown: str, age: float,
                  running: bool | None, repair: bool, lock_held: bool) -> None:
    """A lock file whose owner desk does not know: removed by --repair only when it is older than
    STALE_AFTER (git.LOCK_HINT says so) and no git process works in the desk."""
    if age < STALE_AFTER or running is not False or not lock_held:
        why = (f"it is {int(age)} s old; --repair waits until {int(STALE_AFTER)} s" if age < STALE_AFTER
               else "a git process is running in the desk" if running
               else "cannot tell whether git is running here" if running is None
               else "another desk process is working")
        report.add(check, shown, f"{lock.name} exists and blocks git ({why}); if no git "
                   f"command is running, remove it yourself: rm {lock}", "needs-person")
        return
    if repair:
        lock.unlink(missing_ok=True)
        report.add(check, shown, f"removed a stale {lock.name} ({int(age)} s old, no git "
                   "running)", "repaired")
    else:
        report.add(check, shown, f"stale {lock.name} ({int(age)} s old, no git running) "
                   "blocks git; --repair removes it")


def check_git_locks(desk: DeskFolder, report: DoctorReport, repair: bool, *, lock_held: bool,
                     quiet: Callable[[], object] = lambda: None) -> None:
    """Every other `*.lock` under .git (refs/heads/main.lock, HEAD.lock, desk's private index locks,
    config.lock, ...). Under the desk lock, one a dead desk git process left (desk.storage.git
    records them) or one of desk's own private index files is desk's debris: repaired at once."""
    git_dir = desk.git_dir
    recorded = {lock.path: lock for lock in recorded_git_locks(git_dir)[0]}
    running: bool | None = None
    looked = False
    now = time.time()
    for folder, subdirs, files in os.walk(git_dir):
        if folder == str(git_dir):
            subdirs[:] = [d for d in subdirs if d not in ("objects", "hooks")]
        for name in sorted(files):
            lock = Path(folder) / name
            if not name.endswith(".lock") or (lock == git_dir / "index.lock" and lock not in recorded):
                continue  # index.lock of any other owner: check_index_lock and check_desk_index_lock
            if name + ".queue" in files:
                continue  # one of desk's own flock files (desk.lock, ...): always there, never stale
            try:
                age = now - lock.stat().st_mtime
            except FileNotFoundError:
                continue
            if not looked:
                quiet()
                running, looked = git_running_in(desk.root), True
            rel = lock.relative_to(git_dir).as_posix()
            owner = recorded.get(lock)
            private = lock.parent == git_dir and name in PRIVATE_LOCKS
            if owner is not None and owner.owner_alive:
                report.add("git-lock", f".git/{rel}", f"held by git process {owner.pid}, started by "
                           "a desk command that is still at work", "note")
                continue
            if private and not lock_held:
                continue  # a desk process holds the desk lock: its git is using desk's own index
            if lock_held and (private or (owner is not None and not owner.owner_alive
                                          and running is False)):
                whose = ((f"git process {owner.pid}" if owner.pid else "a git process") + ", started by "
                         "a desk command, died holding it" if owner is not None else "a lock on desk's own index file, left by a "
                         "killed desk command")
                if repair:
                    lock.unlink(missing_ok=True)
                    report.add("git-lock", f".git/{rel}", f"removed: {whose}", "repaired")
                else:
                    report.add("git-lock", f".git/{rel}", f"{whose}; it blocks desk's commits: "
                               "--repair (or the next desk command) removes it")
                continue
            _unknown_lock(report, "git-lock", lock, f".git/{rel}", age, running, repair, lock_held)
