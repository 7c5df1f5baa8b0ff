"""Crash-safe file writes: a reader sees the old bytes or the new ones, never half of either."""

from __future__ import annotations

import os
from pathlib import Path

TEMP_PREFIX = ".desk-tmp-"


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data`: temp file in the same folder, fsync, rename, fsync the folder.

    An fsync error propagates: the operation is aborted rather than reported as durable.
    Leftover temp files (a crash before the rename) carry TEMP_PREFIX so `desk doctor` finds them.
    """
    import tempfile  # here: read-only commands import this module without writing (tempfile loads shutil)

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=path.parent)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def remove(path: Path) -> None:
    """Delete `path` if it exists and make the removal durable."""
    try:
        path.unlink()
    except FileNotFoundError:
        return
    fsync_dir(path.parent)
