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
from array import array
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


class Patch:
    """A patched index (`data`) and what the next read needs to skip the walk: its entries' end,
    checkpoints (entry offsets) and the offsets of entries that may be racily clean against it."""

    __slots__ = ("data", "count", "end", "checkpoints", "candidates", "since", "written")

    def __init__(self, data: bytearray, count: int, end: int, checkpoints: list[int], candidates: list[int],
                 since: int, written: int) -> None:
        self.data, self.count, self.end, self.checkpoints = data, count, end, checkpoints
        self.candidates, self.since, self.written = candidates, since, written


class IndexFile:
    """A parsed index: its bytes, where its entries end, checkpoints (the offsets of some entries, in
    order: a lookup bisects them and walks the few entries between two), the racily clean entries'
    offsets and the extensions."""

    def __init__(self, data: bytes, count: int, end: int, checkpoints: list[int], racy: list[int],
                 extensions: list[tuple[bytes, bytes]], written: int, since: int = 0) -> None:
        self.data = data
        self.count = count
        self.end = end
        self.checkpoints = checkpoints
        self.racy = racy
        self.extensions = extensions
        self.written = written  # the index file's mtime, in seconds: git's racy-clean reference
        self.since = since  # entries desk inserted since the last whole walk (blocks grow by them)

    def _name(self, offset: int) -> bytes:
        flags = _flags(self.data, offset)
        start = offset + (64 if flags & _EXTENDED else 62)
        return self.data[start:start + (flags & _NAME_MASK)]

    def _still_clean(self, offset: int, root: Path | None) -> bool:
        """Whether the racily clean entry at `offset` holds its file's exact stat data and content
        (git's `ce_smudge_racily_clean_entry` leaves such an entry as it is)."""
        if root is None:
            return False
        fields = _ENTRY.unpack_from(self.data, offset)
        if fields[11] & (_EXTENDED | _STAGE) or fields[6] not in (REGULAR, 0o100755) or not fields[9]:
            return False  # conflicts, flags, links and gitlinks, smudged already: git's own rules
        path = root / self._name(offset).decode("utf-8", "surrogateescape")
        try:
            with open(path, "rb") as file:
                st = os.fstat(file.fileno())
                if _stat_bytes(st, fields[6]) != self.data[offset:offset + 40] or os.path.islink(path):
                    return False
                content = file.read()
        except OSError:
            return False
        return sha1_hex(b"blob %d\0" % len(content) + content) == bytes(fields[10]).hex()

    def _next(self, offset: int) -> int:
        return offset + _length(_flags(self.data, offset))

    def _locate(self, name: bytes) -> int:
        """The offset of the first entry whose name is not below `name` (git's order: bytes), or
        the entries' end."""
        checkpoints = self.checkpoints
        low, high = 0, len(checkpoints)
        while low < high:
            middle = (low + high) // 2
            if self._name(checkpoints[middle]) < name:
                low = middle + 1
            else:
                high = middle
        at = checkpoints[low - 1] if low else _HEADER.size
        stop = checkpoints[low] if low < len(checkpoints) else self.end
        while at < stop and self._name(at) < name:
            at = self._next(at)
        return at

    def entries(self, path: str) -> list[IndexEntry]:
        """The entries of `path` (every stage; none when the index does not hold it)."""
        name = path.encode("utf-8", "surrogateescape")
        found = []
        at = self._locate(name)
        while at < self.end and self._name(at) == name:
            fields = _ENTRY.unpack_from(self.data, at)
            flags = fields[11]
            found.append(IndexEntry(path, fields[6], fields[10].hex(), (flags & _STAGE) >> 12,
                                    bool(flags & _EXTENDED)))
            at = self._next(at)
        return found

    def crossed(self, path: str) -> bool:
        """Whether the index holds `path` as a folder (entries under `path/`) or one of its folders
        as a file: git's update-index has rules for those, desk leaves them to it."""
        name = path.encode("utf-8", "surrogateescape")
        at = self._locate(name + b"/")
        if at < self.end and self._name(at).startswith(name + b"/"):
            return True
        parts = name.split(b"/")
        return any(self._holds(b"/".join(parts[:i])) for i in range(1, len(parts)))

    def _holds(self, name: bytes) -> bool:
        at = self._locate(name)
        return at < self.end and self._name(at) == name

    def stat_matches(self, path: str, st: os.stat_result) -> bool:
        """Whether `path`'s one entry holds `st`'s stat data as git would write it (so git sees
        the file clean without reading it)."""
        name = path.encode("utf-8", "surrogateescape")
        at = self._locate(name)
        if at >= self.end or self._name(at) != name:
            return False
        return self.data[at:at + 40] == _stat_bytes(st, REGULAR)[:40] and at not in self.racy

    def patched(self, changes: Mapping[str, tuple[str, os.stat_result] | None],
                root: Path | None = None) -> bytearray | None:
        """The index with `changes` applied (`{path: (blob id, stat of the file) or None to remove}`,
        each path's entry a plain stage-0 one or absent), racily clean entries smudged and the
        changed folders' cached trees invalidated; None when a path has entries of another kind
        (a conflict's stages, extended flags, another mode): git's update-index decides those.

        With the work tree's `root`, a racily clean entry is smudged as git smudges it: unless its
        file still has the entry's stat data and blob (then git would see it clean, rightly).
        Without, every one is smudged (git compares its content at its next look)."""
        patch = self.patch(changes, root)
        return None if patch is None else patch.data

    def patch(self, changes: Mapping[str, tuple[str, os.stat_result] | None],
              root: Path | None = None) -> Patch | None:
        """`patched`, with what `keep_walk` records of the new index."""
        data = self.data
        body = bytearray(memoryview(data)[:self.end])  # one copy of ~4 MB at 50,000 entries
        names = {p.encode("utf-8", "surrogateescape") for p in changes}
        for offset in self.racy:
            if self._name(offset) not in names and not self._still_clean(offset, root):
                body[offset + _SIZE_AT:offset + _SIZE_AT + 4] = b"\0\0\0\0"
        count = self.count
        spliced: list[tuple[int, int, bytes]] = []
        for path in sorted(changes, key=lambda p: p.encode("utf-8", "surrogateescape")):
            name = path.encode("utf-8", "surrogateescape")
            if self.crossed(path):
                return None
            start = self._locate(name)
            present = start < self.end and self._name(start) == name
            if present:
                old = self.entries(path)
                if len(old) != 1 or old[0].stage or old[0].extended or old[0].mode != REGULAR:
                    return None
            stop = self._next(start) if present else start
            change = changes[path]
            new = b"" if change is None else _entry(name, change[0], change[1])
            spliced.append((start, stop, new))
            count += (change is not None) - present
        for start, stop, new in reversed(spliced):
            body[start:stop] = new
        end = len(body)
        body[8:12] = count.to_bytes(4, "big")
        for signature, content in self.extensions:
            if signature == b"TREE":
                content = _invalidated(content, [p.encode("utf-8", "surrogateescape") for p in changes])
            body += signature + len(content).to_bytes(4, "big") + content
        body += bytes.fromhex(sha1_hex(body))

        def moved(offset: int, entry: bool = True) -> int:
            """Where the entry at `offset` of the old index is in the new one (not `entry`: what
            begins there now, an entry put in before it included)."""
            return offset + sum(len(new) - (stop - start) for start, stop, new in spliced
                                if start < offset or entry and start == offset)

        checkpoints = [at for at in (moved(c, False) for c in self.checkpoints) if at < end]
        gone = {start for start, stop, new in spliced if stop > start}
        candidates = [moved(at) for at in self.racy if at not in gone]
        candidates += [moved(start, False) for start, stop, new in spliced if new]
        added = sum(1 for start, stop, new in spliced if new and stop == start)
        return Patch(body, count, end, checkpoints, sorted(set(candidates)), self.since + added, self.written)

def _flags(data: bytes | bytearray, offset: int) -> int:
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


WALK_RECORD = "desk-index-walk.json"  # in .git/: the checkpoints of the index desk last wrote
_BLOCK = 16  # entries between two checkpoints after a whole walk (a lookup walks half a block)
_REWALK = 4096  # entries desk may insert between checkpoints before the next read walks it whole


def keep_walk(record: Path, patch: Patch, written: os.stat_result) -> None:
    """Record, for the next `read_index`, the checkpoints of the index `patch` made, once it is the
    file `written` describes (its inode, size and mtime, and its checksum: any other writer's index
    differs). Entries racily clean against it are only ever those the patch wrote or smudged: every
    other entry was older than the index read, so older than this one too. Not kept when the clock
    went back (the new index would not be younger) or too many entries were put in since the last
    whole walk (the blocks between checkpoints grow). Derived: no fsync; a lost record costs a walk."""
    import json

    seconds = written.st_mtime_ns // 10**9
    if seconds < patch.written or patch.since > _REWALK:
        record.unlink(missing_ok=True)
        return
    data = patch.data
    racy = [at for at in patch.candidates if int.from_bytes(data[at + 8:at + 12], "big") >= seconds]
    kept = {"file": [written.st_ino, written.st_size, written.st_mtime_ns], "sum": data[-_CHECKSUM:].hex(),
            "count": patch.count, "end": patch.end, "since": patch.since, "racy": racy,
            "checkpoints": array("I", patch.checkpoints).tobytes().hex()}
    from desk.storage.atomic import write_derived  # a commit's: not on the read path

    write_derived(record, json.dumps(kept).encode())


def _kept_walk(record: Path | None, st: os.stat_result, data: bytes, count: int
               ) -> tuple[int, list[int], list[int], int] | None:
    """`(end, checkpoints, racy, since)` from the record `keep_walk` left, when it describes this
    very file; else None (the entries are walked)."""
    if record is None:
        return None
    import json

    try:
        kept = json.loads(record.read_bytes())
        if (kept["file"] != [st.st_ino, st.st_size, st.st_mtime_ns] or kept["sum"] != data[-_CHECKSUM:].hex()
                or kept["count"] != count):
            return None
        checkpoints = array("I")
        checkpoints.frombytes(bytes.fromhex(kept["checkpoints"]))
        end, racy, since = int(kept["end"]), [int(at) for at in kept["racy"]], int(kept["since"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not _HEADER.size <= end <= len(data) - _CHECKSUM or any(not _HEADER.size <= at < end for at in checkpoints):
        return None
    return end, checkpoints.tolist(), racy, since


def read_index(path: Path, record: Path | None = None) -> IndexFile | None:
    """The index at `path`, or None when desk leaves it to git: absent, not version 2 or 3,
    without a checksum, with an extension desk does not patch, or not as git writes one.
    `record`: where `keep_walk` keeps the checkpoints of the index desk last wrote (used only when
    it describes this file: then its 50,000 entries are not walked one by one)."""
    try:
        with open(path, "rb") as file:
            st = os.fstat(file.fileno())
            data = file.read()
    except OSError:
        return None
    written = st.st_mtime_ns // 10**9
    if len(data) < _HEADER.size + _CHECKSUM or data[-_CHECKSUM:] == bytes(_CHECKSUM):
        return None
    signature, version, count = _HEADER.unpack_from(data)
    if signature != b"DIRC" or version not in (2, 3):
        return None
    limit = len(data) - _CHECKSUM
    kept = _kept_walk(record, st, data, count)
    if kept is not None:
        at, checkpoints, racy, since = kept
    else:
        walked = _walk(data, count, written, limit)
        if walked is None:
            return None
        at, checkpoints, racy = walked
        since = 0
    end = at
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
    return IndexFile(data, count, end, checkpoints, racy, extensions, written, since)


def _walk(data: bytes, count: int, written: int, limit: int) -> tuple[int, list[int], list[int]] | None:
    """Every entry walked: where they end, every `_BLOCK`th entry's offset and the racily clean
    ones' (an mtime not older than the index file's, `written`); None when they do not fit."""
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
    return at, offsets[::_BLOCK], racy
