"""The desk-wide lock: held from the first file write to the commit of every mutation.

An `fcntl.flock` on a file in the git dir. The kernel drops it when the holder dies, so a
`kill -9` never leaves a stale desk lock behind (unlike git's own `index.lock`).
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from desk.errors import ConflictError

DEFAULT_TIMEOUT = 60.0


def lock_timeout() -> float:
    """Seconds to wait for the lock: `$DESK_LOCK_TIMEOUT`, else 60."""
    try:
        return float(os.environ.get("DESK_LOCK_TIMEOUT", DEFAULT_TIMEOUT))
    except ValueError:
        return DEFAULT_TIMEOUT


@contextmanager
def desk_lock(path: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold an exclusive lock on `path`, waiting up to `timeout` seconds (exit 4 after that)."""
    wait = lock_timeout() if timeout is None else timeout
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + wait
        delay = 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    raise ConflictError(
                        f"another desk process has held {path} for {wait:g} s",
                        hint="wait for it to finish, or raise $DESK_LOCK_TIMEOUT") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
