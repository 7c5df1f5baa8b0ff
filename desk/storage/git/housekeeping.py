"""git's own housekeeping after desk's commits, as git's porcelain does it.

`commit-tree` and `update-ref` never run `git gc --auto`, so after a commit desk starts it,
detached, when git's own sample says it may be due; git then decides again with its own config.
`holding_gc_lock` keeps a person's `git gc --prune=now` from starting while desk writes.
`DESK_AUTO_GC=0` turns desk's starting of it off."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from desk.errors import ConflictError

if TYPE_CHECKING:
    from desk.storage.git.repo import Git

AUTO_GC_ENV = "DESK_AUTO_GC"  # "0": desk never starts `git gc --auto`
GC_AUTO = 6700  # git's defaults for gc.auto and gc.autoPackLimit
GC_AUTO_PACK_LIMIT = 50
GC_LOCK_WAIT = 10.0  # seconds a desk write waits for a running `git gc` (`holding_gc_lock`)
GC_AUTO_INTERVAL = 60  # seconds between two `git gc --auto` desk starts in one repository
OWN_GC = "desk-gc.pid"  # in .git/: `PID HOST` of the `git gc --auto` desk started last
_started: list[subprocess.Popen[bytes]] = []  # reaped at the next start (a long-running `desk serve`)


@dataclass(frozen=True, slots=True)
class ObjectStore:
    """`git count-objects -v`, and `overdue` when git's gc thresholds are passed."""

    loose: int
    loose_kib: int
    packs: int
    pack_kib: int
    overdue: bool

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def _limits(git: Git) -> tuple[int, int]:
    """gc.auto and gc.autoPackLimit as configured (git's defaults when unset or not a number)."""
    values = git.config.values()
    auto, packs = (values.get(key, "").strip() for key in ("gc.auto", "gc.autopacklimit"))
    return (int(auto) if auto.lstrip("-").isdigit() else GC_AUTO,
            int(packs) if packs.lstrip("-").isdigit() else GC_AUTO_PACK_LIMIT)


def _common_dir(git: Git) -> Path:
    """Where `objects/` and gc.pid live: `.git`, or the main one of a linked work tree."""
    git_dir = git.git_dir()
    return git.git_path("objects").parent if (git_dir / "commondir").exists() else git_dir


def _packs(git_dir: Path) -> int:
    """The packs without a `.keep` file (those gc.autoPackLimit counts)."""
    try:
        names = set(os.listdir(git_dir / "objects" / "pack"))
    except OSError:
        return 0
    return sum(1 for n in names if n.endswith(".pack") and n[:-5] + ".keep" not in names)


def auto_gc_due(git: Git) -> bool:
    """git's own cheap sample (builtin/gc.c): more than gc.auto/256 loose objects in `objects/17`, or
    more than gc.autoPackLimit packs."""
    common = _common_dir(git)
    try:
        sample = sum(1 for n in os.listdir(common / "objects" / "17") if len(n) == 38)
    except OSError:
        sample = 0
    packs = _packs(common)
    if sample < 2 and packs < 2:
        return False
    threshold, pack_limit = _limits(git)
    return threshold > 0 and (sample > -(-threshold // 256) or 0 < pack_limit < packs)


def start_auto_gc(git: Git) -> bool:
    """Start `git gc --auto` detached when it may be due (at most once per GC_AUTO_INTERVAL); True when started."""
    _reap()
    if os.environ.get(AUTO_GC_ENV) == "0" or _started or _started_lately(_common_dir(git)) or not auto_gc_due(git):
        return False
    # git's own detaching would give gc.pid another pid than the one desk records; desk detaches it
    proc = subprocess.Popen(["git", "-c", "gc.autoDetach=false", "gc", "--auto", "--quiet"], cwd=git.root,
                            env=git.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    _started.append(proc)
    (_common_dir(git) / OWN_GC).write_text(f"{proc.pid} {os.uname().nodename}")
    return True


def _reap() -> None:
    """Collect the gcs this process started that have ended (a long-running `desk serve`)."""
    for proc in list(_started):
        if proc.poll() is not None:
            _started.remove(proc)


def _started_lately(git_dir: Path) -> bool:
    """Whether desk started a gc less than GC_AUTO_INTERVAL ago: git's gc.log back-off, which an
    undetached gc skips."""
    try:
        return time.time() - (git_dir / OWN_GC).stat().st_mtime < GC_AUTO_INTERVAL
    except OSError:
        return False


def object_store(git: Git) -> ObjectStore:
    """The object store as `git count-objects -v` reports it, `overdue` counted exactly."""
    lines = (line.partition(": ") for line in git.text("count-objects", "-v").splitlines())
    found = {key: int(value) for key, _, value in lines if value.strip().isdigit()}
    threshold, pack_limit = _limits(git)
    loose = found.get("count", 0)
    overdue = threshold > 0 and (loose > threshold or 0 < pack_limit < _packs(_common_dir(git)))
    return ObjectStore(loose, found.get("size", 0), found.get("packs", 0), found.get("size-pack", 0), overdue)


def collect_garbage(git: Git) -> str | None:
    """`git gc` in the foreground; git's words when it failed, else None."""
    proc = git.completed(("gc", "--quiet"), own_session=True)
    return None if proc.returncode == 0 else proc.stderr.decode("utf-8", "replace").strip()


@contextmanager
def holding_gc_lock(git: Git) -> Iterator[None]:
    """Hold git's own gc lock (`.git/gc.pid`) while desk writes, so objects no ref names yet are safe.

    A `git gc --prune=now` starting between desk's `hash-object` and its `update-ref` would delete
    the commit's objects. desk writes its pid to gc.pid as git does and waits for a running gc up to
    GC_LOCK_WAIT (ConflictError then); while desk's own auto gc runs it neither waits nor locks."""
    git_dir = _common_dir(git)
    _reap()
    if _running_gc(git_dir / OWN_GC, within=3600):  # desk's own gc runs (or is about to take gc.pid)
        yield
        return
    pid_file, lock = git_dir / "gc.pid", git_dir / "gc.pid.lock"
    mine = f"{os.getpid()} {os.uname().nodename}"
    deadline = time.monotonic() + GC_LOCK_WAIT
    held, running = False, None
    while not held:
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:  # git holds it for an instant; one older was left by a killed gc
            if _age(lock) > 1:
                break  # git's own rules apply then, as for `git commit`; doctor lists the lock
            running = "a git gc taking its lock"
        except OSError:
            break  # a read-only .git: nothing desk could lose there
        else:
            with os.fdopen(fd, "w") as out:
                running = _running_gc(pid_file)
                out.write(mine if running is None else "")
            if running is None:
                os.replace(lock, pid_file)
                held = True
                continue
            lock.unlink(missing_ok=True)
        if time.monotonic() > deadline:
            raise ConflictError(f"a git gc ({running}) is running in this desk; desk writes nothing while "
                                "it may prune objects a write has not yet named", hint="run the command again "
                                "when it is done (`git gc` ends on its own; its pid is in .git/gc.pid)")
        time.sleep(0.01)
    try:
        yield
    finally:
        if held and _read(pid_file) == mine:
            pid_file.unlink(missing_ok=True)


def _read(path: Path) -> str | None:
    try:
        return path.read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return 0.0


def _running_gc(pid_file: Path, within: float = 12 * 3600) -> str | None:
    """gc.pid's `PID HOST` when it names a gc git would take as running (builtin/gc.c's rule)."""
    line = _read(pid_file)
    pid, _, host = (line or "").partition(" ")
    if not pid.isdigit() or _age(pid_file) > within:
        return None
    if host == os.uname().nodename:
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
    return line
