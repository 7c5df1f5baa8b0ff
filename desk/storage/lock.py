"""The desk-wide lock: held from the first file write to the commit of every mutation.

An `fcntl.flock` on a file in the git dir. The kernel drops it when the holder dies, so a
`kill -9` never leaves a stale desk lock behind (unlike git's own `index.lock`).

Waiters take turns. Polling with `LOCK_NB` and a sleep is unfair: a poller asleep between tries
loses every race to a process that takes the lock again at once (four processes hammering one
lock here took it 596, 1, 1 and 1 times), and under load one `bench_concurrency` worker timed out
(391 of 400 commits). So a waiter blocks in `flock` itself, queued by the kernel, which wakes it
as soon as the holder lets go. That alone still lets the process that just let go, running while
the woken waiters are not yet scheduled, take the lock straight back; so there is a second lock
in front, `<lock>.queue`: a process holds it while it waits for the lock itself and lets go of it
once it has the lock. The next in line is then already waiting on the lock, and the process that
just let go has to queue behind it.

A blocking `flock` has no timeout of its own. An alarm signal (`setitimer`) would interrupt it,
but signals reach only the main thread and would clobber a host application's own SIGALRM, and
desk is a library called from threads. So the blocking calls run in a helper thread and the caller
waits for it with a timeout; a caller that gives up leaves the descriptors to the helper, which
closes them (letting go at once) when it gets the locks. An uncontended lock is taken with
non-blocking tries and starts no thread.

A desk this process cannot write (a read-only mount, another user's folder) cannot open the lock
file for writing. A holder that only reads (`reading=True`: `desk doctor` without `--repair`) then
takes a shared lock on a read-only descriptor of it, queued as a writer is (through a read-only
descriptor of the queue file): `flock` needs no write access, and the writers (the same files
through a writable mount, or their owner) still take theirs on the same inode, so the read waits
for a mutation in progress and no mutation starts during it. Only where
the lock file does not exist either (no desk process has ever locked this desk) is there nothing
to lock: a writer that starts meanwhile may show the read a mutation half done (its pending marker,
files written before its commit), which the read reports as interrupted; it writes nothing, and
asking again answers right. A holder that writes gets a ReadOnlyDeskError naming the folder.
"""

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
    """Hold an exclusive lock on `path`, waiting up to `timeout` seconds (exit 4 after that).

    `reading`: the holder only reads, so on a desk this process cannot write it holds a shared
    lock instead (or none: the module's docstring says when); without it, ReadOnlyDeskError there.
    """
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
    """The queue's and the lock's descriptors (-1: none) and the lock's mode: LOCK_EX, or LOCK_SH
    on a read-only descriptor where `reading` and the lock file cannot be opened for writing."""
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
        """True once the lock is held (or `flock` failed: see `error`), False after `timeout`.

        When it returns False, or is interrupted (KeyboardInterrupt) before the lock is held, the
        wait is `abandoned` and the descriptors belong to the helper thread.
        """
        try:
            self._locked.wait(timeout)
        finally:
            with self._settle:
                self.abandoned = not self._locked.is_set()
        return not self.abandoned
