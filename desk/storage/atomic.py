"""Crash-safe file writes: a reader sees the old bytes or the new ones, never half of either."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

TEMP_PREFIX = ".desk-tmp-"


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> os.stat_result:
    """Replace `path` with `data`: temp file in the same folder, fsync, rename, fsync the folder.
    Returns the stat of the file written (its inode, mtime and size: the commit path sets git's
    index entry from them; the ctime changes at the rename).

    An fsync error propagates: the operation is aborted rather than reported as durable.
    Leftover temp files (a crash before the rename) carry TEMP_PREFIX so `desk doctor` finds them.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=path.parent)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
        stat = os.fstat(fd)
        os.close(fd)
        fd = -1
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as exc:
        if fd >= 0:
            os.close(fd)
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:  # os.write's ENOSPC names no file
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    fsync_dir(path.parent)
    return stat


def remove(path: Path) -> None:
    """Delete `path` if it exists and make the removal durable."""
    try:
        path.unlink()
    except FileNotFoundError:
        return
    fsync_dir(path.parent)


def write_derived(path: Path, data: bytes) -> bool:
    """Replace `path`, a file desk derives and can make again (a cache, a record of a look), with
    `data`: a temporary file of this writer's own renamed over it, so a reader sees the old bytes or
    the new. No fsync: a file cut short by a crash must fail its own check. Returns whether it was
    kept; where it cannot be (a read-only or full desk, another user's) nothing is raised."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
        return True
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass  # a read-only desk: unlink fails (EROFS) even where nothing was made
        return False
