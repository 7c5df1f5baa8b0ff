"""The bearer token `desk serve --http` requires: any local user can reach a loopback port, so
the port alone lets nobody read or write the desk.

The token is random (`secrets.token_urlsafe`), made the first time the server starts and kept in
the desk's git folder (`.git/desk-serve-token`, mode 0600: never committed, never cloned), so a
client's configuration with the header keeps working across restarts. `--token-file PATH` names
another file instead (the same checks: a regular file, not a symlink, read by its owner only).
Delete the file to have a new token made on the next start.
"""

from __future__ import annotations

import errno
import hmac
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from desk.errors import DeskError, UsageError

TOKEN_FILE = "desk-serve-token"
MAX_TOKEN_BYTES = 4096


@dataclass(frozen=True, slots=True)
class ServeToken:
    """The token the server requires, where it is kept, and whether this start made it."""

    value: str
    path: Path
    created: bool

    def matches(self, given: str) -> bool:
        """Whether `given` is the token, compared in constant time."""
        return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), self.value.encode("utf-8"))


def serve_token(git_dir: Path, token_file: Path | None = None) -> ServeToken:
    """The token in `token_file`, else the desk's own in `git_dir`, made (0600) when missing."""
    if token_file is not None:
        return ServeToken(_read(token_file, "--token-file"), token_file, False)
    path = git_dir / TOKEN_FILE
    value = secrets.token_urlsafe(32)
    try:  # O_EXCL: two servers starting at once keep one token, the first one's
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        return ServeToken(_read(path, str(path)), path, False)
    except OSError as exc:
        raise DeskError(f"{path}: cannot create the server's token ({exc.strerror})",
                        hint="check the git folder's permissions, or pass --token-file PATH") from None
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(value + "\n")
    return ServeToken(value, path, True)


def _read(path: Path, name: str) -> str:
    """The token in `path`: a regular file (not a symlink) that only its owner may read or write."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        problem = "a symlink (not followed)" if exc.errno == errno.ELOOP else exc.strerror
        raise UsageError(f"{name}: cannot read the token ({problem})",
                         hint="give a regular file holding the token") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"{name}: not a regular file", hint="give a regular file holding the token")
        if os.name == "posix" and info.st_mode & 0o077:
            raise UsageError(f"{name}: other users may read or write the token (mode {info.st_mode & 0o777:o})",
                             hint=f"chmod 600 {path}")
        data = handle.read(MAX_TOKEN_BYTES + 1)
    try:
        value = data.decode("ascii").strip()
    except UnicodeDecodeError:
        value = ""
    if len(data) > MAX_TOKEN_BYTES or not value or any(c.isspace() or not c.isprintable() for c in value):
        raise UsageError(f"{name}: not a token (one line of printable ASCII, at most {MAX_TOKEN_BYTES} bytes)",
                         hint=f"write one, e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))' > {path}")
    return value
