"""Reading a desk's files without following a symlink: the one way desk opens a file to read it.

The work tree is not trusted to have passed the hooks (a fast-forward runs none, `--no-verify`
skips them), so a link where SOUL.md should be could point at a key file. Every read opens with
`O_NOFOLLOW` after checking that no folder on the way is a link, and refuses anything that is not
a plain file with `SymlinkError`."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO, Protocol

from desk.errors import DeskError

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class HasRoot(Protocol):
    root: Path


class SymlinkError(DeskError):
    """A desk file, or a folder on its way, is a symbolic link (or not a plain file): refused."""

    def __init__(self, path: Path, relative: str) -> None:
        super().__init__(
            f"{relative}: refused: it is a symbolic link (or not a plain file); desk never reads "
            "through a link, which could point outside the desk",
            hint=f"replace it with a plain file: `git rm --cached {relative}`, remove the link and "
                 "restore the file from a good commit (`git log -- " + relative + "` shows them), "
                 "then `desk doctor`")
        self.path = path
        self.relative = relative


def _relative(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    return str(path)


def check_no_link(path: Path | str, root: Path | str | None = None) -> None:
    """SymlinkError when a folder between `root` (exclusive) and `path` (exclusive) is a symlink."""
    if root is None:
        return
    full, top = os.fspath(path), os.fspath(root).rstrip(os.sep)
    if not full.startswith(top + os.sep):
        return
    relative = full[len(top) + 1:]
    folder = top
    for part in relative.split(os.sep)[:-1]:
        folder = f"{folder}{os.sep}{part}"
        try:
            mode = os.lstat(folder).st_mode
        except FileNotFoundError:
            return  # the open below reports the missing file as git would
        if stat.S_ISLNK(mode):
            raise SymlinkError(Path(full), relative)


def _open_plain(path: Path, relative: str) -> int:
    """A read-only descriptor of `path` itself, never through a link (SymlinkError naming `relative`)."""
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise SymlinkError(path, relative) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SymlinkError(path, relative)
    return fd


def read_regular(path: Path, root: Path | None = None) -> bytes:
    """`path`'s bytes, never through a symlink. FileNotFoundError when absent (as `read_bytes`);
    SymlinkError when `path` (or a folder between `root` and it) is a link or not a plain file."""
    check_no_link(path, root)
    with os.fdopen(_open_plain(path, _relative(path, root)), "rb") as handle:
        return handle.read()


def is_plain_file(path: Path) -> bool:
    """Whether `path` is a plain file itself (not a link to one): `Path.is_file` without following."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def open_regular(desk: HasRoot, relative: str) -> BinaryIO:
    """A desk file opened for binary reading (to seek and read in chunks), never through a symlink;
    errors as `read_regular`. The caller closes it (`with open_regular(...) as handle:`)."""
    path = desk.root / relative
    check_no_link(path, desk.root)
    return os.fdopen(_open_plain(path, relative), "rb")
