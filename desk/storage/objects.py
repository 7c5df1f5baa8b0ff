"""git's loose objects and tree format, read and written in process, exactly as git writes them.

A commit of one memory changes three objects besides its blobs: the `memory/` tree, the root tree
and the commit. Starting git to build each costs more than the whole change; building them here
takes microseconds. A loose object is `<type> <size>\\0<content>`, zlib-compressed, stored at
`objects/<2 hex>/<38 hex>` of its SHA-1, written to a temporary file, fsynced and renamed into
place (a reader never sees half an object; the same object written twice is the same bytes). A
tree's entries are `<mode> <name>\\0<20-byte id>`, sorted by name with a folder's name compared as
if it ended in `/`; a folder left empty is dropped, as `git write-tree` drops it.

SHA-1 repositories only: callers (desk.storage.git) let git write the objects of any other.
Nothing here starts git; objects git packed are not read here either (the caller asks git).
"""

from __future__ import annotations

import bisect
import os
import re
import zlib
from collections.abc import Mapping
from pathlib import Path

from desk.storage.hashing import sha1_hex

TREE_MODE = b"40000"
FILE_MODE = b"100644"


class TreeConflict(Exception):
    """The change needs a folder where the tree has a file, or the other way round: git decides."""


_ENTRY = re.compile(rb"[0-7]{5,6} [^\0]+\0.{20}", re.S)


def tree_entries(content: bytes) -> list[bytes]:
    """A tree object's entries as stored (`<mode> <name>\\0<20-byte id>` each), in git's order;
    ValueError when the content is not a tree's. Split by one regular expression in C: a
    10,000-entry folder is split in about a millisecond, and only the entries a change needs are
    looked at (`find_entry` bisects)."""
    entries = _ENTRY.findall(content)
    if sum(map(len, entries)) != len(content):
        raise ValueError("not a tree object")
    return entries


def entry_mode(entry: bytes) -> bytes:
    return entry[:entry.index(b" ")]


def entry_name(entry: bytes) -> bytes:
    return entry[entry.index(b" ") + 1:-21]


def entry_id(entry: bytes) -> str:
    return entry[-20:].hex()


def entry_key(entry: bytes) -> bytes:
    """git's order: a folder sorts as if its name ended in `/`."""
    space = entry.index(b" ")
    name = entry[space + 1:-21]
    return name + b"/" if entry[:space] == TREE_MODE else name


def find_entry(entries: list[bytes], name: bytes) -> int | None:
    """The position of the entry called `name` (a file or a folder) in sorted `entries`, or None."""
    for key in (name, name + b"/"):
        at = bisect.bisect_left(entries, key, key=entry_key)
        if at < len(entries) and entry_name(entries[at]) == name:
            return at
    return None


def make_entry(mode: bytes, name: bytes, sha: str) -> bytes:
    return b"%s %s\0" % (mode, name) + bytes.fromhex(sha)


def object_id(kind: str, content: bytes) -> str:
    """The SHA-1 id git gives `content` as an object of `kind` (blob, tree, commit)."""
    return sha1_hex(b"%s %d\0" % (kind.encode(), len(content)) + content)


def write_loose(objects: Path, kind: str, content: bytes, sha: str | None = None, *, level: int = 1) -> str:
    """Store `content` as a loose object of `kind` under the folder `objects` (fsynced; a no-op when
    the object is there already) and return its id (`sha`, when the caller has computed it).
    `level` is the zlib level (git's core.looseCompression; 1, best speed, by default)."""
    raw = b"%s %d\0" % (kind.encode(), len(content)) + content
    sha = sha or sha1_hex(raw)
    folder = objects / sha[:2]
    target = folder / sha[2:]
    if target.exists():
        return sha
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f"tmp_obj_desk_{os.getpid()}_{sha[2:8]}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o444)
    try:
        view = memoryview(zlib.compress(raw, level))
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)
    return sha


def read_loose(objects: Path, sha: str) -> tuple[str, bytes] | None:
    """`(kind, content)` of the loose object `sha`, or None when it is not stored loose here
    (packed, in an alternate, or absent) or does not read back as that object."""
    try:
        data = zlib.decompress((objects / sha[:2] / sha[2:]).read_bytes())
    except (OSError, zlib.error):
        return None
    header, sep, content = data.partition(b"\0")
    kind, _, size = header.partition(b" ")
    if not sep or not size.isdigit() or int(size) != len(content):
        return None
    if sha1_hex(data) != sha:
        return None  # a damaged file: git itself is asked
    return kind.decode("ascii", "replace"), content


def commit_tree_id(content: bytes) -> str | None:
    """The tree a commit object's content names (its first header line)."""
    first = content.split(b"\n", 1)[0]
    if first.startswith(b"tree ") and len(first) == 45:
        return first[5:].decode("ascii")
    return None


def commit_bytes(tree: str, parent: str | None, author: str, committer: str, message: str) -> bytes:
    """A commit object's content as `git commit-tree` writes it: the tree, the parent, the author
    and committer lines (`Name <email> <seconds> <+hhmm>`), a blank line, the message verbatim."""
    head = f"tree {tree}\n" + (f"parent {parent}\n" if parent else "")
    return f"{head}author {author}\ncommitter {committer}\n\n{message}".encode()


def folders_of(paths: list[str]) -> list[str]:
    """Every folder (`""` for the root, else `a/b/`) holding one of `paths`, parents first."""
    found = {""}
    for path in paths:
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            found.add("/".join(parts[:depth]) + "/")
    return sorted(found, key=lambda folder: (folder.count("/"), folder))


def changed_trees(old: Mapping[str, list[bytes] | None], blobs: Mapping[str, str | None]
                  ) -> tuple[str, list[bytes]]:
    """The root tree with `blobs` applied (`{path: blob id, or None to delete}`, files written with
    mode 100644, as desk's private index wrote them) and the new tree objects' contents, children
    before parents. `old` holds the entries (`tree_entries`) of every folder of `folders_of(blobs)`
    as it was (None: absent). TreeConflict when a path crosses a file, or a folder would be
    replaced by a file."""
    by_folder: dict[str, dict[bytes, str | None]] = {}
    for path, blob in blobs.items():
        folder, _, name = path.rpartition("/")
        by_folder.setdefault(folder + "/" if folder else "", {})[name.encode("utf-8", "surrogateescape")] = blob
    written: list[bytes] = []

    def put(entries: list[bytes], mode: bytes, name: bytes, sha: str | None) -> None:
        at = find_entry(entries, name)
        if at is not None:
            if (entry_mode(entries[at]) == TREE_MODE) != (mode == TREE_MODE):
                raise TreeConflict(name.decode("utf-8", "surrogateescape"))
            del entries[at]
        if sha is not None:
            new = make_entry(mode, name, sha)
            entries.insert(bisect.bisect_left(entries, entry_key(new), key=entry_key), new)

    def build(folder: str) -> str | None:
        entries = list(old.get(folder) or [])
        for name, blob in by_folder.get(folder, {}).items():
            put(entries, FILE_MODE, name, blob)
        children = {f[len(folder):].split("/", 1)[0] for f in by_folder if f.startswith(folder) and f != folder}
        for child in sorted(children):
            put(entries, TREE_MODE, child.encode("utf-8", "surrogateescape"), build(f"{folder}{child}/"))
        if not entries and folder:
            return None
        content = b"".join(entries)
        written.append(content)
        return object_id("tree", content)

    root = build("")
    assert root is not None
    return root, written
