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


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> os.stat_result:
    """Replace `path` with `data` by a temp file in the same folder and `os.replace`, so a reader sees
    the old bytes or the new; `durable` fsyncs the file and the folder. Returns the written file's
    stat (the commit path sets git's index entry from it).

    An error names `path` and leaves no temp file; a crash before the rename leaves one carrying
    TEMP_PREFIX, which `desk doctor` finds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return _replace(path, data, durable)


def _replace(path: Path, data: bytes, durable: bool) -> os.stat_result:
    """`atomic_write` in a folder that exists."""
    tmp = ""
    fd = -1
    try:
        fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=path.parent)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if durable:
            os.fsync(fd)
        stat = os.fstat(fd)
        os.close(fd)
        fd = -1
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as exc:
        if fd >= 0:
            os.close(fd)
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename in (None, tmp):  # os.write's ENOSPC names no file
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    if durable:
        fsync_dir(path.parent)
    return stat


def nearly_full(folder: Path | str) -> bool:
    """Whether the file system holding `folder` has less than 1 MiB left: git's and SQLite's errors
    on such a disk ("couldn't write", SQLITE_IOERR) do not say it is the space."""
    try:
        stats = os.statvfs(folder)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < 1 << 20


def remove(path: Path) -> None:
    """Delete `path` if it exists and make the removal durable."""
    try:
        path.unlink()
    except FileNotFoundError:
        return
    fsync_dir(path.parent)


def write_derived(path: Path, data: bytes) -> bool:
    """Replace `path`, a file desk can derive again, with `data` (no fsync: a torn file fails its own
    check). Returns whether it was kept; never raises where it cannot be."""
    try:
        _replace(path, data, durable=False)
        return True
    except OSError:
        return False
