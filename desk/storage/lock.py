"""The desk-wide lock, held from the first file write to the commit of every mutation.

An `fcntl.flock` in the git dir: the kernel drops it when the holder dies. Waiters take turns: a
waiter blocks in `flock` (queued by the kernel) behind a second lock, `<lock>.queue`, held while
waiting, so the process that just let go queues behind the next in line. The blocking calls run
in a helper thread the caller waits for with a timeout (an alarm reaches only the main thread); an
uncontended lock starts no thread. On a desk this process cannot write, a reader (`reading=True`)
takes a shared lock on read-only descriptors; a writer gets a ReadOnlyDeskError."""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from desk.errors import ConflictError, DeskError

DEFAULT_TIMEOUT = 60.0
# What opening a file for writing gives on a desk this process cannot write.
READ_ONLY_ERRNOS = (errno.EROFS, errno.EACCES, errno.EPERM)


class ReadOnlyDeskError(DeskError):
    """A command that writes, on a desk this process cannot write (exit 1)."""


def lock_timeout() -> float:
    """Seconds to wait for the lock: `$DESK_LOCK_TIMEOUT`, else 60."""
    try:
        return float(os.environ.get("DESK_LOCK_TIMEOUT", DEFAULT_TIMEOUT))
    except ValueError:
        return DEFAULT_TIMEOUT


@contextmanager
def desk_lock(path: Path, timeout: float | None = None, *, reading: bool = False) -> Iterator[None]:
    """Hold an exclusive lock on `path`, waiting up to `timeout` seconds (exit 4 after that); `reading`
    as the module says."""
    wait = lock_timeout() if timeout is None else timeout
    queue, fd, mode = _open(path, reading)
    try:
        if fd < 0:
            yield  # no lock file, and none can be made: nothing to lock
            return
        first = queue < 0 or _try_lock(queue)  # no queue file (a reader's): nothing to queue in
        if not (first and _try_lock(fd, mode)):
            waiter = _BlockingWait(queue, fd, queued=first, mode=mode)
            try:
                locked = waiter.wait(max(wait, 0.0))
            finally:
                if waiter.abandoned:
                    queue = fd = -1  # the helper thread owns the descriptors now and closes them
            if not locked:
                raise ConflictError(f"another desk process has held {path} for {wait:g} s",
                                    hint="wait for it to finish, or raise $DESK_LOCK_TIMEOUT")
            if waiter.error is not None:
                raise waiter.error
        if queue >= 0:
            os.close(queue)  # in: the next waiter may queue up behind this holder
            queue = -1
        yield
    finally:
        for descriptor in (queue, fd):
            if descriptor >= 0:
                os.close(descriptor)  # closing the descriptor releases its lock


def _open(path: Path, reading: bool) -> tuple[int, int, int]:
    """The queue's and the lock's descriptors (-1: none) and the lock's mode (LOCK_SH read-only when
    `reading` and the lock file cannot be written)."""
    queue = -1
    try:
        queue = os.open(f"{path}.queue", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        return queue, os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644), fcntl.LOCK_EX
    except OSError as exc:
        if queue >= 0:
            os.close(queue)
        if exc.errno not in READ_ONLY_ERRNOS:
            raise
        if not reading:
            raise ReadOnlyDeskError(
                f"cannot write in {path.parent} ({os.strerror(exc.errno)}): this command changes the desk",
                hint="run it where the desk is writable (a writable mount of it, or as the user who owns "
                     "it); reads, and `desk doctor` without --repair, work on a read-only desk") from None
    # The queue too, when it is there (flock needs no write access): a reader waits behind the
    # writers queued before it, as a writer does, rather than keeping one waiting while readers come.
    return _open_read_only(f"{path}.queue"), _open_read_only(str(path)), fcntl.LOCK_SH


def _open_read_only(path: str) -> int:
    """A read-only descriptor of `path`; -1 when it is missing or cannot be read either."""
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno != errno.ENOENT and exc.errno not in READ_ONLY_ERRNOS:
            raise
        return -1


def _try_lock(fd: int, mode: int = fcntl.LOCK_EX) -> bool:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EACCES):
            raise
        return False


class _BlockingWait:
    """Blocking `flock`s on the queue (unless `queued`) and then the lock (in `mode`), in a daemon
    thread that the caller may abandon."""

    def __init__(self, queue: int, fd: int, *, queued: bool, mode: int = fcntl.LOCK_EX) -> None:
        self._queue, self._fd, self._queued, self._mode = queue, fd, queued, mode
        self._settle = threading.Lock()  # decides, once, whether the caller or the helper owns fds
        self._locked = threading.Event()
        self.abandoned = False
        self.error: OSError | None = None
        threading.Thread(target=self._block, name="desk-lock-wait", daemon=True).start()

    def _block(self) -> None:
        try:  # EINTR is retried by Python (PEP 475)
            if not self._queued:
                fcntl.flock(self._queue, fcntl.LOCK_EX)
            fcntl.flock(self._fd, self._mode)
        except OSError as exc:
            self.error = exc
        with self._settle:
            if self.abandoned:  # the caller gave up: let go at once
                if self._queue >= 0:
                    os.close(self._queue)
                os.close(self._fd)
            else:
                self._locked.set()

    def wait(self, timeout: float) -> bool:
        """True once the lock is held (or `flock` failed: `error`), False after `timeout`; then, or when
        interrupted, the wait is `abandoned` and the helper thread owns the descriptors."""
        try:
            self._locked.wait(timeout)
        finally:
            with self._settle:
                self.abandoned = not self._locked.is_set()
        return not self.abandoned
