"""Reading git's output: `-z` path lists, `ls-files -s`, `ls-tree`, `--raw` diffs, the work tree listing."""

from __future__ import annotations

import re
from typing import NamedTuple

from desk.storage.hashing import blake2b_hex

_NOT_CACHED = re.compile(rb"\0[^H]")  # in `b"\0" + listing`: a record whose `-t` tag is not `H`
OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


class RawChange(NamedTuple):
    """One path of a `--raw` diff (read with `--no-renames`): the blob it had and the blob it has."""

    path: str
    status: str  # A added, D deleted, M modified, T type changed, U unmerged
    old_mode: str
    new_mode: str
    old_blob: str | None  # None: the path did not exist before
    new_blob: str | None  # None: deleted (or unmerged)


def path_of(raw: bytes) -> str:
    """A path as git prints it with -z: bytes, kept losslessly (surrogateescape)."""
    return raw.decode("utf-8", "surrogateescape")


def parse_ls_files(out: bytes) -> dict[str, str]:
    """`{path: blob id}` from `git ls-files -s -z`."""
    records = (record.split(b"\t", 1) for record in out.split(b"\0") if record)
    return {path_of(path): meta.split()[1].decode() for meta, path in records}


def path_list(out: bytes) -> set[str]:
    """A `-z` list of paths."""
    return {path_of(p) for p in out.split(b"\0") if p}


def parse_ls_tree(out: bytes) -> dict[str, str]:
    """`{path: blob sha}` from `git ls-tree -z` (trees and submodules left out)."""
    records = (record.split(b"\t", 1) for record in out.split(b"\0") if record)
    return {path_of(path): meta.split()[2].decode() for meta, path in records if meta.split()[1] == b"blob"}


def raw_changes(out: bytes) -> list[RawChange]:
    """The one `--raw -z` reader (diff, diff-tree, log), always with `--no-renames`; an all-zero sha
    means no blob on that side."""
    changes = []
    meta: bytes | None = None
    for token in out.split(b"\0"):
        if meta is None:
            token = token.lstrip(b"\n")
            if token.startswith(b":"):
                meta = token
            continue
        old_mode, new_mode, old, new, status = meta[1:].decode().split()
        changes.append(RawChange(path_of(token), status[:1], old_mode, new_mode,
                                 old if old.strip("0") else None, new if new.strip("0") else None))
        meta = None
    return changes


def object_ids(names: list[str], out: bytes) -> dict[str, str | None]:
    """`{name: object id or None}` from `git cat-file --batch-check=%(objectname)` asked `names`."""
    lines = out.decode("utf-8", "surrogateescape").split("\n")
    return {name: line if re.fullmatch(r"[0-9a-f]{40,64}", line) else None for name, line in zip(names, lines)}


class WorkTreeListing:
    """The work tree as git's index sees it (one `ls-files -t -c -s -m -d -o`), parsed as far as asked:
    the records that are not `H` are found by one regex search, so an unchanged desk's listing is
    never split."""

    def __init__(self, out: bytes) -> None:
        self._out = b"\0" + out  # each record follows a NUL
        self.digest = blake2b_hex(out)  # equal digests, equal listings
        # Paths only the work tree knows: changed or deleted since the index, unmerged, not
        # checked out, or untracked and not ignored (every record but `H`, a cached entry).
        self.elsewhere: set[str] = set()
        for found in _NOT_CACHED.finditer(self._out):
            end = self._out.find(b"\0", found.end())
            record = self._out[found.start() + 1:end if end >= 0 else len(self._out)]
            self.elsewhere.add(path_of(record.partition(b" " if record[:1] == b"?" else b"\t")[2]))

    def named(self, name: str) -> list[str]:
        """The listed paths (tracked or not) whose last component is `name`, found by byte search."""
        found = set()
        needle = name.encode("utf-8", "surrogateescape") + b"\0"
        at = self._out.find(needle)
        while at >= 0:
            record = self._out[self._out.rfind(b"\0", 0, at) + 1:at + len(needle) - 1]
            path = path_of(record.partition(b" " if record[:1] == b"?" else b"\t")[2])
            if path.rsplit("/", 1)[-1] == name:
                found.add(path)
            at = self._out.find(needle, at + 1)
        return sorted(found)

    def clean(self, prefix: str = "") -> dict[str, tuple[str, str]]:
        """`{path: (mode, blob)}` of the files (under `prefix`) git finds as the index has them; under a
        folder only its records are read (by byte search)."""
        out = self._out
        if prefix:
            marker = b"\t" + prefix.encode()
            records = []
            at = out.find(marker)
            while at >= 0:
                end = out.find(b"\0", at)
                records.append(out[out.rfind(b"\0", 0, at) + 1:end if end >= 0 else len(out)])
                at = out.find(marker, end) if end >= 0 else -1
        else:
            records = out.split(b"\0")
        found: dict[str, tuple[str, str]] = {}
        for record in records:
            if record.startswith(b"H "):
                meta, _, raw_path = record[2:].partition(b"\t")
                path = path_of(raw_path)
                fields = meta.split()
                if (len(fields) == 3 and fields[2] == b"0" and path.startswith(prefix)
                        and path not in self.elsewhere):
                    found[path] = (fields[0].decode(), fields[1].decode())
        return found
