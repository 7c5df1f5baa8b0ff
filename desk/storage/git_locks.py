"""The git processes desk starts, and the lock files they leave behind when they are killed.

A git killed with desk (kill -9 of the process group, a power cut) leaves its `<file>.lock`s,
which block every later git command, and a lock file does not say who made it. So before desk
starts a git that may take locks it writes them down in its process's record
(`.git/desk-git-children-<pid>-<start>.txt`): once before the start, once with the pid. A lock is
debris, removed by the next desk command (under the desk lock) or `desk doctor --repair`, when
the record's desk process is dead, the record names the lock, the lock is newer than that git's
start and no git process works in the desk. Any other lock doctor removes only once it is old
(git.LOCK_STALE_AFTER)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

CHILD_RECORD_PREFIX = "desk-git-children-"  # in .git/: `<pid>[:<start>] <start ns> <lock>\t<lock>...` lines
_CHILD_RECORDS: list[Path] = []  # the active record (a stack: recording nests)
CLOCK_SLACK_NS = 10_000_000  # a lock's mtime may trail the recorded start by a clock tick
PRIVATE_LOCKS = ("desk-index.lock", "desk-person-index.lock")  # desk's own index files' locks (git.PRIVATE_INDEX)


def process_start(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot, /proc/<pid>/stat), None when that cannot
    be read: a pid and its start time name one process, even once the pid is given to another."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            return int(stat_file.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def process_alive(pid: int, start: int | None = None) -> bool:
    """Whether process `pid` runs (a zombie, dead but not yet reaped, counts as dead); with `start`
    (`process_start` when it was recorded), a process that got the pid since counts as dead too."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            fields = stat_file.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return True
    if fields[0] == b"Z":
        return False
    return start is None or int(fields[19]) == start


def _record_name(pid: int, start: int | None) -> str:
    return f"{CHILD_RECORD_PREFIX}{pid}" + (f"-{start}" if start is not None else "") + ".txt"


def _record_owner(record: Path) -> tuple[int, int | None] | None:
    """The pid and start time a record's name gives (`<pid>` alone in records of older desks)."""
    stem = record.name[len(CHILD_RECORD_PREFIX):-len(".txt")]
    pid, _, start = stem.partition("-")
    try:
        return int(pid), (int(start) if start else None)
    except ValueError:
        return None


@contextmanager
def recording_git_children(git_dir: Path) -> Iterator[Path]:
    """While active, every git desk starts that may take a lock is recorded in this process's record,
    removed when the block ends (a kill -9 leaves it for `release_dead_git_locks`)."""
    record = git_dir / _record_name(os.getpid(), process_start(os.getpid()))
    _CHILD_RECORDS.append(record)
    try:
        yield record
    finally:
        _CHILD_RECORDS.pop()
        if record not in _CHILD_RECORDS:
            record.unlink(missing_ok=True)


def recording() -> bool:
    """Whether a record is active (git processes started now are written down)."""
    return bool(_CHILD_RECORDS)


def record_git_child(locks: Iterable[Path], pid: int = 0, started_ns: int | None = None) -> int:
    """Write down, in the active record (if any), a git that may take `locks`: `pid` 0 before it starts,
    its pid once it runs. Returns the start time to pass with the pid."""
    started = time.time_ns() if started_ns is None else started_ns
    if _CHILD_RECORDS:
        identity = str(pid) if pid <= 0 else f"{pid}:{process_start(pid)}"
        line = f"{identity} {started} " + "\t".join(str(p) for p in locks) + "\n"
        with open(_CHILD_RECORDS[-1], "a", encoding="utf-8") as record:
            record.write(line)
    return started


class LeftLock(NamedTuple):
    """A lock file a git desk started may have left, whether that git still runs, and when it started."""

    path: Path
    pid: int
    owner_alive: bool
    started_ns: int


class _Child(NamedTuple):
    """One line of a record: a git process (`pid` 0: not started yet) and the locks it may take."""

    pid: int
    proc_start: int | None
    started_ns: int
    locks: list[str]


def _dead_records(git_dir: Path) -> Iterator[tuple[Path, list[_Child]]]:
    """The records of dead desk processes (or this one's) with their lines; a live one's are skipped."""
    me = os.getpid()
    for record in sorted(git_dir.glob(f"{CHILD_RECORD_PREFIX}*.txt")):
        owner = _record_owner(record)
        try:
            lines = record.read_text("utf-8").splitlines()
        except OSError:
            continue
        if owner is None or (owner[0] != me and process_alive(*owner)):
            continue
        children = []
        for line in lines:
            try:
                identity, start_text, paths = line.split(" ", 2)
                pid_text, _, proc_start = identity.partition(":")
                children.append(_Child(int(pid_text), int(proc_start) if proc_start not in ("", "None") else None,
                                       int(start_text), paths.split("\t")))
            except ValueError:
                continue  # a line torn by the kill
        yield record, children


def recorded_git_locks(git_dir: Path) -> tuple[list[LeftLock], list[Path]]:
    """The existing lock files a recorded git of a dead (or this) desk process may have taken, with
    their owners' state, and the record files read."""
    found: list[LeftLock] = []
    records = []
    for record, children in _dead_records(git_dir):
        records.append(record)
        seen: dict[tuple[Path, int], LeftLock] = {}
        for child in children:
            alive = process_alive(child.pid, child.proc_start)
            for name in child.locks:
                path = Path(name)
                try:
                    made = path.stat().st_mtime_ns
                except OSError:
                    continue
                if made >= child.started_ns - CLOCK_SLACK_NS:  # taken after that process started
                    previous = seen.get((path, child.started_ns))
                    if previous is None or previous.pid <= 0:  # the line with the pid says more
                        seen[(path, child.started_ns)] = LeftLock(path, child.pid, alive, child.started_ns)
        found += seen.values()
    return found, records


def release_left_locks(git_dir: Path, root: Path) -> None:
    """Under the desk lock, before a mutation: wait for orphaned gits, then remove the locks killed
    desk commands left."""
    from desk.storage.git import release_private_index_lock, release_stale_index_lock

    require_no_orphans(git_dir)
    release_stale_index_lock(git_dir)
    release_private_index_lock(git_dir)
    release_dead_git_locks(git_dir, root)


def require_no_orphans(git_dir: Path, timeout: float = 10.0) -> None:
    """Wait up to `timeout` s while a git a dead desk command started still runs (its work must not
    be settled under it), then ConflictError (exit 4) naming the ones still running."""
    deadline = time.monotonic() + timeout
    while alive := [c.pid for _, children in _dead_records(git_dir) for c in children
                    if c.pid != os.getpid() and process_alive(c.pid, c.proc_start)]:
        if time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    if alive:
        from desk.errors import ConflictError

        raise ConflictError(f"git process {', '.join(map(str, alive))}, started by a desk command that was "
                            f"killed, has been at work for {timeout:g} s more", hint="run the command again "
                            "once it is done (`desk doctor` lists the locks it holds)")


def release_dead_git_locks(git_dir: Path, root: Path) -> list[Path]:
    """Remove the locks dead desk gits left, and dead desk processes' records; the locks removed. Call
    under the desk lock. desk's private index locks always go (no desk git runs meanwhile); a shared
    lock only when its recorded git is dead and no git works in the desk."""
    removed = [git_dir / name for name in PRIVATE_LOCKS if (git_dir / name).exists()]
    for path in removed:
        path.unlink(missing_ok=True)
    left, records = recorded_git_locks(git_dir)
    dead = [lock for lock in left if not lock.owner_alive and lock.path.exists()]
    if dead and git_running_in(root) is False:  # a live desk git child runs in the desk too
        for lock in dead:
            lock.path.unlink(missing_ok=True)
            removed.append(lock.path)
        dead = []
    if not dead:
        mine = _record_name(os.getpid(), process_start(os.getpid()))
        for record in records:
            if record.name != mine:
                record.unlink(missing_ok=True)
    return removed


# git commands that never take a lock: a reader running in the desk (a `git log` in a pager, the
# `git cat-file --batch` a long-lived desk process keeps) does not hold up the removal of debris
READERS = frozenset({"cat-file", "log", "show", "ls-files", "ls-tree", "diff-tree", "rev-list", "rev-parse",
                     "merge-base", "for-each-ref", "check-attr", "check-ignore", "ls-remote", "blame"})
_OPTIONS_WITH_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"})


def git_running_in(root: Path) -> bool | None:
    """Whether a git that may take locks works in `root` (Linux /proc; READERS do not count); None when
    that cannot be known."""
    proc = Path("/proc")
    if not (proc / "self" / "cwd").exists():
        return None
    for entry in proc.iterdir():
        if not entry.name.isdigit() or entry.name == str(os.getpid()):
            continue
        try:
            if (entry / "comm").read_text().strip() != "git":
                continue
            cwd = Path(os.readlink(entry / "cwd"))
            args = (entry / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        if not process_alive(int(entry.name)):
            continue
        if (cwd == root or root in cwd.parents) and subcommand(args) not in READERS:
            return True
    return False


def subcommand(args: list[str]) -> str:
    """The git subcommand of a command line (`git -C x -c k=v commit ...`: `commit`)."""
    words = iter(args[1:])
    for word in words:
        if word in _OPTIONS_WITH_VALUE:
            next(words, None)
        elif not word.startswith("-"):
            return word
    return ""
