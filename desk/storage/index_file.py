"""git's index file (`.git/index`), read and patched in process for desk's commit path.

Under git's index lock desk must see what the person staged for its paths and then set those
entries to the files it wrote. `git ls-files` and `git update-index` do it by reading the whole
index, re-hashing each file (MEMORY.md is 3 MB at 50,000 memories) and rewriting the index with
git's collision-detecting SHA-1: ~30 ms of two processes at 50,000 entries. desk knows the blob
ids and the files it wrote, so it patches the entries itself, as git's own `update-index` would
write them (docs/design.md, "Where remember's time goes"):

- only the plain formats: version 2 or 3, a checksum (not `index.skipHash`'s zeros), and the
  extensions TREE (the paths' folders invalidated, as git's `cache_tree_invalidate_path`), REUC
  (kept) and EOIE/IEOT (load-time offsets, dropped: git writes them again when configured). A split
  index (`link`), a sparse one (`sdir`), an untracked cache, a file-system monitor's token, version
  4 or anything unknown is left to git (`read_index` answers None);
- an entry's stat data comes from desk's own file: the inode it wrote (`atomic_write`'s fstat),
  found under the path with the same inode, mtime and size;
- git's racy-clean rule is kept: an entry whose file changed in the same second the index was last
  written would look clean in an index written later, so every entry whose mtime is not older than
  the index read is smudged (its size set to 0, git's `ce_smudge_racily_clean_entry`), and git
  compares its content at the next look. git smudges only those whose content differs; smudging
  all of them costs at most a re-hash of a file written in that second.

git reads the file without checking its checksum (`verify_index_checksum` is off outside fsck);
desk does the same, checks the entries' structure instead, and writes a new checksum.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Mapping
from pathlib import Path

from desk.storage.hashing import sha1_hex

_HEADER = struct.Struct(">4sII")
_ENTRY = struct.Struct(">10I20sH")  # ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size, id, flags
_WALK = struct.Struct(">8xI48xH")  # an entry's mtime seconds and flags
_EXTENDED = 0x4000
_STAGE = 0x3000
_NAME_MASK = 0xFFF
_SIZE_AT = 36  # the size field's offset in an entry: smudged to 0 for a racily clean entry
REGULAR = 0o100644
_KEPT = (b"TREE", b"REUC")
_DROPPED = (b"EOIE", b"IEOT")
_CHECKSUM = 20


class IndexEntry:
    """One stage entry: its path, mode, blob id (hex) and stage, as `git ls-files -s` shows it."""

    __slots__ = ("path", "mode", "blob", "stage", "extended")

    def __init__(self, path: str, mode: int, blob: str, stage: int, extended: bool) -> None:
        self.path, self.mode, self.blob, self.stage, self.extended = path, mode, blob, stage, extended


class IndexFile:
    """A parsed index: its bytes, the offset of each entry, the racily clean ones and the extensions."""

    def __init__(self, data: bytes, version: int, offsets: list[int], racy: list[int],
                 extensions: list[tuple[bytes, bytes]]) -> None:
        self.data = data
        self.version = version
        self.offsets = offsets
        self.racy = racy
        self.extensions = extensions

    def _name(self, offset: int) -> bytes:
        flags = _flags(self.data, offset)
        start = offset + (64 if flags & _EXTENDED else 62)
        return self.data[start:start + (flags & _NAME_MASK)]

    def _first(self, name: bytes) -> int:
        """The position of the first entry whose name is not below `name` (git's order: bytes)."""
        low, high = 0, len(self.offsets)
        while low < high:
            middle = (low + high) // 2
            if self._name(self.offsets[middle]) < name:
                low = middle + 1
            else:
                high = middle
        return low

    def entries(self, path: str) -> list[IndexEntry]:
        """The entries of `path` (every stage; none when the index does not hold it)."""
        name = path.encode("utf-8", "surrogateescape")
        found = []
        at = self._first(name)
        while at < len(self.offsets) and self._name(self.offsets[at]) == name:
            offset = self.offsets[at]
            fields = _ENTRY.unpack_from(self.data, offset)
            flags = fields[11]
            found.append(IndexEntry(path, fields[6], fields[10].hex(), (flags & _STAGE) >> 12,
                                    bool(flags & _EXTENDED)))
            at += 1
        return found

    def crossed(self, path: str) -> bool:
        """Whether the index holds `path` as a folder (entries under `path/`) or one of its folders
        as a file: git's update-index has rules for those, desk leaves them to it."""
        name = path.encode("utf-8", "surrogateescape")
        at = self._first(name + b"/")
        if at < len(self.offsets) and self._name(self.offsets[at]).startswith(name + b"/"):
            return True
        parts = name.split(b"/")
        return any(self._holds(b"/".join(parts[:i])) for i in range(1, len(parts)))

    def _holds(self, name: bytes) -> bool:
        at = self._first(name)
        return at < len(self.offsets) and self._name(self.offsets[at]) == name

    def stat_matches(self, path: str, st: os.stat_result) -> bool:
        """Whether `path`'s one entry holds `st`'s stat data as git would write it (so git sees
        the file clean without reading it)."""
        name = path.encode("utf-8", "surrogateescape")
        at = self._first(name)
        if at >= len(self.offsets) or self._name(self.offsets[at]) != name:
            return False
        offset = self.offsets[at]
        return self.data[offset:offset + 40] == _stat_bytes(st, REGULAR)[:40] and offset not in self.racy

    def patched(self, changes: Mapping[str, tuple[str, os.stat_result] | None]) -> bytearray | None:
        """The index with `changes` applied (`{path: (blob id, stat of the file) or None to remove}`,
        each path's entry a plain stage-0 one or absent), racily clean entries smudged and the
        changed folders' cached trees invalidated; None when a path has entries of another kind
        (a conflict's stages, extended flags, another mode): git's update-index decides those."""
        data = self.data
        end = self._entries_end()
        body = bytearray(memoryview(data)[:end])  # one copy of ~4 MB at 50,000 entries
        for offset in self.racy:
            body[offset + _SIZE_AT:offset + _SIZE_AT + 4] = b"\0\0\0\0"
        count = len(self.offsets)
        spliced: list[tuple[int, int, bytes]] = []
        for path in sorted(changes, key=lambda p: p.encode("utf-8", "surrogateescape")):
            name = path.encode("utf-8", "surrogateescape")
            at = self._first(name)
            present = at < len(self.offsets) and self._name(self.offsets[at]) == name
            if self.crossed(path):
                return None
            if present:
                old = self.entries(path)
                if len(old) != 1 or old[0].stage or old[0].extended or old[0].mode != REGULAR:
                    return None
            start = self.offsets[at] if at < len(self.offsets) else end
            stop = (self.offsets[at + 1] if at + 1 < len(self.offsets) else end) if present else start
            change = changes[path]
            new = b"" if change is None else _entry(name, change[0], change[1])
            spliced.append((start, stop, new))
            count += (change is not None) - present
        for start, stop, new in reversed(spliced):
            body[start:stop] = new
        body[8:12] = count.to_bytes(4, "big")
        for signature, content in self.extensions:
            if signature == b"TREE":
                content = _invalidated(content, [p.encode("utf-8", "surrogateescape") for p in changes])
            body += signature + len(content).to_bytes(4, "big") + content
        body += bytes.fromhex(sha1_hex(body))
        return body

    def _entries_end(self) -> int:
        if not self.offsets:
            return _HEADER.size
        last = self.offsets[-1]
        return last + _length(_flags(self.data, last))


def _flags(data: bytes, offset: int) -> int:
    return int.from_bytes(data[offset + 60:offset + 62], "big")


def _length(flags: int) -> int:
    """An entry's length in versions 2 and 3: header, name, 1 to 8 NULs to a multiple of 8."""
    return (70 + (flags & _NAME_MASK) + ((flags >> 13) & 2)) & ~7


def _stat_bytes(st: os.stat_result, mode: int) -> bytes:
    """The stat fields as git's `fill_stat_data` stores them (each field 32 bits, truncated)."""
    mask = 0xFFFFFFFF
    return struct.pack(">10I", st.st_ctime_ns // 10**9 & mask, st.st_ctime_ns % 10**9,
                       st.st_mtime_ns // 10**9 & mask, st.st_mtime_ns % 10**9, st.st_dev & mask,
                       st.st_ino & mask, mode, st.st_uid & mask, st.st_gid & mask, st.st_size & mask)


def _entry(name: bytes, blob: str, st: os.stat_result) -> bytes:
    head = _stat_bytes(st, REGULAR) + bytes.fromhex(blob) + min(len(name), _NAME_MASK).to_bytes(2, "big")
    length = (62 + len(name) + 8) & ~7
    return head + name + b"\0" * (length - 62 - len(name))


def _invalidated(tree: bytes, paths: Iterable[bytes]) -> bytes:
    """The TREE extension with every cached tree on the way to `paths` marked invalid (entry count
    -1, no id), as git's update-index leaves it; the rest kept byte for byte."""
    wanted = list(paths)
    out = bytearray()

    def node(at: int, folder: bytes, root: bool) -> int:
        nul = tree.index(b"\0", at)
        newline = tree.index(b"\n", nul)
        count, subtrees = tree[nul + 1:newline].split(b" ")
        here = b"" if root else folder + tree[at:nul] + b"/"
        stop = newline + 1 + (_CHECKSUM if int(count) >= 0 else 0)
        if int(count) >= 0 and any(p.startswith(here) for p in wanted):
            out.extend(tree[at:nul + 1] + b"-1 " + subtrees + b"\n")
        else:
            out.extend(tree[at:stop])
        for _ in range(int(subtrees)):
            stop = node(stop, here, False)
        return stop

    if tree and node(0, b"", True) != len(tree):
        raise ValueError("trailing bytes in the cached trees")
    return bytes(out)


def read_index(path: Path) -> IndexFile | None:
    """The index at `path`, or None when desk leaves it to git: absent, not version 2 or 3,
    without a checksum, with an extension desk does not patch, or not as git writes one."""
    try:
        with open(path, "rb") as file:
            written = os.fstat(file.fileno()).st_mtime_ns // 10**9
            data = file.read()
    except OSError:
        return None
    if len(data) < _HEADER.size + _CHECKSUM or data[-_CHECKSUM:] == bytes(_CHECKSUM):
        return None
    signature, version, count = _HEADER.unpack_from(data)
    if signature != b"DIRC" or version not in (2, 3):
        return None
    limit = len(data) - _CHECKSUM
    offsets: list[int] = []
    racy: list[int] = []
    walk, append = _WALK.unpack_from, offsets.append
    at = _HEADER.size
    try:
        for _ in range(count):
            mtime, flags = walk(data, at)
            append(at)
            if mtime >= written:
                racy.append(at)
            if flags & _NAME_MASK == _NAME_MASK:
                return None  # a name of 4,095 bytes or more: git's to handle
            at += (70 + (flags & _NAME_MASK) + ((flags >> 13) & 2)) & ~7
    except struct.error:
        return None
    if at > limit:
        return None
    extensions: list[tuple[bytes, bytes]] = []
    while at < limit:
        if at + 8 > limit:
            return None
        signature, size = data[at:at + 4], int.from_bytes(data[at + 4:at + 8], "big")
        content = data[at + 8:at + 8 + size]
        at += 8 + size
        if signature in _KEPT:
            extensions.append((signature, content))
        elif signature not in _DROPPED:
            return None
    if at != limit:
        return None
    return IndexFile(data, version, offsets, racy, extensions)
