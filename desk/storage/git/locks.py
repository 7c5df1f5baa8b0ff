"""git's index lock, held by desk while it moves HEAD and refreshes the person's index, and the
locks a crashed desk process left."""

from __future__ import annotations

import json
import os
import time
from contextlib import suppress
from pathlib import Path

from desk.errors import ConflictError
from desk.storage.atomic import atomic_write
from desk.storage.git.index import PRIVATE_INDEX
from desk.storage.git.run import INDEX_LOCK_WAIT, LOCK_HINT

INDEX_LOCK_OWNER = "desk-index-lock.json"  # in .git/: which index.lock files are desk's own


class IndexLock:
    """`.git/index.lock`, taken the way git takes it, so no person's git can run while desk moves HEAD.

    Before taking it desk records its pid and the lock file's inodes in `.git/desk-index-lock.json`;
    `release_stale_index_lock` removes exactly the lock a crashed desk left, never a person's."""

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir
        self.path = git_dir / "index.lock"
        self.owner = git_dir / INDEX_LOCK_OWNER
        self._files: list[int] = []
        self._held = False

    def acquire(self, wait: float = INDEX_LOCK_WAIT) -> None:
        # The lock file is made under a private name and linked into place (link fails like O_EXCL
        # when index.lock exists), so its inode is on record before it can be left behind.
        candidate = self.git_dir / "desk-index-lock.new"
        candidate.unlink(missing_ok=True)
        candidate.write_bytes(b"")
        deadline = time.monotonic() + wait
        delay = 0.005
        try:
            self._files.append(candidate.stat().st_ino)
            self._record()
            while True:
                try:
                    os.link(candidate, self.path)
                    self._held = True
                    return
                except FileExistsError:
                    if time.monotonic() >= deadline:
                        self.owner.unlink(missing_ok=True)
                        raise ConflictError(
                            f"another git process has held .git/index.lock for {wait:g} s",
                            hint=LOCK_HINT) from None
                    time.sleep(delay)
                    delay = min(delay * 2, 0.1)
        finally:
            candidate.unlink(missing_ok=True)

    def publish(self, new_index: Path) -> None:
        """Make `new_index` the person's index and release the lock (git's rename protocol)."""
        self._files.append(new_index.stat().st_ino)
        # The commit has landed: a disk too full to rewrite the record must not keep the person's
        # index from following it (only a crash just here would then leave a lock doctor cannot
        # tell is desk's, which it names for the person to remove).
        with suppress(OSError):
            self._record()
        os.replace(new_index, self.path)
        os.replace(self.path, self.git_dir / "index")
        self._held = False
        self.owner.unlink(missing_ok=True)

    def release(self) -> None:
        """Give the lock up without changing the person's index."""
        if self._held:
            self.path.unlink(missing_ok=True)
            self._held = False
        self.owner.unlink(missing_ok=True)

    def _record(self) -> None:
        """Write the record (no fsync: it matters only while this process lives or just after it crashed)."""
        atomic_write(self.owner, json.dumps({"pid": os.getpid(), "inodes": self._files}).encode(), durable=False)

    def __enter__(self) -> IndexLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def desk_left_index_lock(git_dir: Path) -> bool:
    """Whether `.git/index.lock` is one a crashed desk process left (its inode recorded, no newer than
    the record). Meaningful only under the desk lock."""
    owner = git_dir / INDEX_LOCK_OWNER
    try:
        record = json.loads(owner.read_bytes())
        recorded = owner.stat().st_mtime_ns
        st = (git_dir / "index.lock").stat()
    except (OSError, ValueError):
        return False
    return st.st_ino in record.get("inodes", []) and st.st_mtime_ns <= recorded


def release_private_index_lock(git_dir: Path) -> bool:
    """Remove `.git/desk-index.lock` a killed git on desk's private index left; True when there was
    one. Call it holding the desk lock."""
    try:
        (git_dir / f"{PRIVATE_INDEX}.lock").unlink()
    except FileNotFoundError:
        return False
    return True


def release_stale_index_lock(git_dir: Path) -> bool:
    """Remove the index.lock a crashed desk process left (never a person's); True when there was one.
    Call it holding the desk lock."""
    left = desk_left_index_lock(git_dir)
    if left:
        (git_dir / "index.lock").unlink(missing_ok=True)
    (git_dir / INDEX_LOCK_OWNER).unlink(missing_ok=True)
    return left
