"""Objects: blob ids computed as git computes them, `hash-object`, and `cat-file --batch` reads."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from typing import TYPE_CHECKING

from desk.storage.git.parse import object_ids
from desk.storage.git.run import Started, end
from desk.storage.hashing import sha1_hex

if TYPE_CHECKING:
    from desk.storage.git.repo import Git

def blob_sha(content: bytes) -> str:
    """The object id git gives `content` as a blob (SHA-1 repositories)."""
    return sha1_hex(b"blob %d\0" % len(content) + content)


class Objects:
    """The object store of one repository (`git.objects`)."""

    def __init__(self, git: Git) -> None:
        self._git = git
        self._reader: subprocess.Popen[bytes] | None = None  # `start_reader`

    def object_format(self) -> str:
        """The repository's object format: `sha1` or `sha256`."""
        return self._git.text("rev-parse", "--show-object-format").strip()

    def blob_at(self, rev: str, path: str) -> bytes | None:
        """The content of `path` at `rev` (`""` for the index), or None when it is not there."""
        proc = self._git.completed(("cat-file", "blob", f"{rev}:{path}"), self._git.read_env(), recorded=False)
        return proc.stdout if proc.returncode == 0 else None

    def read_blobs(self, shas: Iterable[str]) -> dict[str, bytes]:
        """Objects by any name cat-file takes (`sha`, `HEAD:path`, `:path`) through one `cat-file --batch`;
        missing ones are left out."""
        wanted = list(dict.fromkeys(shas))
        if not wanted:
            return {}
        asked = ("\n".join(wanted) + "\n").encode()
        if self._reader is not None:  # started already (`start_reader`)
            reader, self._reader = self._reader, None
            out = Started((("cat-file", "--batch"),), [reader]).wait(input=asked)[0]
        else:
            out = self._git.run("cat-file", "--batch", input=asked, read_only=True)
        found: dict[str, bytes] = {}
        pos = 0
        for sha in wanted:
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            pos = end + 1
            if len(header) < 3 or header[-1] == b"missing":
                continue  # not in the object store: left out, the caller decides
            size = int(header[2])
            found[sha] = out[pos:pos + size]
            pos += size + 1
        return found

    def start_reader(self) -> None:
        """Start the `git cat-file --batch` the next `read_blobs` asks, so git starts while the caller
        works; `close_reader` ends it if unused."""
        if self._reader is None:
            self._reader = subprocess.Popen(["git", "cat-file", "--batch"], cwd=self._git.root,
                                            env=self._git.read_env(), stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def close_reader(self) -> None:
        """End a started `git cat-file --batch` that `read_blobs` did not use."""
        if self._reader is not None:
            reader, self._reader = self._reader, None
            end(reader)  # its stdin closed: cat-file ends

    def object_ids(self, names: Iterable[str]) -> dict[str, str | None]:
        """`{name: object id or None}` for names like `HEAD:path`, in one `cat-file --batch-check`."""
        wanted = [n for n in dict.fromkeys(names) if "\n" not in n]
        if not wanted:
            return {}
        return object_ids(wanted, self._git.run("cat-file", "--batch-check=%(objectname)",
                                                input=("\n".join(wanted) + "\n").encode(), read_only=True))

    def write_blob(self, data: bytes) -> str:
        """Store `data` as a blob (`git hash-object -w`) and return its id."""
        return self._git.run(*self._git.config.durable_args(), "hash-object", "-w", "-t", "blob", "--stdin",
                             input=data).decode().strip()

    def empty_tree(self) -> str:
        """The id of the empty tree in this repository's hash (to diff against a root commit)."""
        return self._git.run("hash-object", "-t", "tree", "--stdin", input=b"", read_only=True).decode().strip()
