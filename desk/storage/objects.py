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
import itertools
import os
import re
import zlib
from array import array
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


CHECKPOINT_EVERY = 64  # entries between two checkpoints of a large tree


class RawTree:
    """A large tree's content as stored, with checkpoints: the offsets of some of its entries (every
    64th when first counted), kept beside it in `.git/desk-tree-kept`. An entry is found by
    bisecting the checkpoints and reading at most a block, and a change is spliced into the bytes
    at its sorted place: memory/'s 50,000 entries (1.9 MB) are not split into a list (~4 ms)."""

    __slots__ = ("content", "checkpoints")

    def __init__(self, content: bytes, checkpoints: list[int]) -> None:
        self.content = content
        self.checkpoints = checkpoints

    def _entry(self, at: int) -> tuple[bytes, bytes, int]:
        """The mode, name and end of the entry at offset `at`."""
        space = self.content.index(b" ", at)
        nul = self.content.index(b"\0", space)
        return self.content[at:space], self.content[space + 1:nul], nul + 21

    def _key(self, at: int) -> bytes:
        mode, name, _ = self._entry(at)
        return name + b"/" if mode == TREE_MODE else name

    def _locate(self, key: bytes) -> int:
        """The offset of the first entry whose key (git's order) is not below `key`, or the end:
        the checkpoints bisected, then the block between two split (in C) and bisected."""
        checkpoints = self.checkpoints
        at = bisect.bisect_left(checkpoints, key, key=self._key)
        offset = checkpoints[at - 1] if at else 0
        stop = checkpoints[at] if at < len(checkpoints) else len(self.content)
        block = _ENTRY.findall(self.content, offset, stop)
        if sum(map(len, block)) != stop - offset:
            raise ValueError("a kept tree's checkpoint is not at an entry")
        return offset + sum(map(len, block[:bisect.bisect_left(block, key, key=entry_key)]))

    def find(self, name: bytes) -> tuple[int, bytes] | None:
        """`(offset, entry)` of the file or folder called `name`, or None."""
        for key in (name, name + b"/"):
            at = self._locate(key)
            if at < len(self.content):
                mode, found, end = self._entry(at)
                if found == name:
                    return at, self.content[at:end]
        return None

    def spliced(self, mode: bytes, name: bytes, sha: str | None) -> RawTree:
        """This tree with `name` set to a `mode` entry for `sha` (None: removed); TreeConflict
        when a file would replace a folder or the other way round."""
        content, checkpoints = self.content, self.checkpoints
        found = self.find(name)
        if found is not None and (entry_mode(found[1]) == TREE_MODE) != (mode == TREE_MODE):
            raise TreeConflict(name.decode("utf-8", "surrogateescape"))
        if found is not None:
            at, entry = found
            content = content[:at] + content[at + len(entry):]
            checkpoints = [c - len(entry) if c > at else c for c in checkpoints]
            checkpoints = [c for c in checkpoints if c < len(content)]
        tree = RawTree(content, checkpoints)
        if sha is None:
            return tree
        new = make_entry(mode, name, sha)
        at = tree._locate(entry_key(new))
        shifted = [c + len(new) if c > at else c for c in tree.checkpoints]
        return RawTree(content[:at] + new + content[at:], shifted)


def checkpoints_of(entries: list[bytes]) -> list[int]:
    """The offsets of every `CHECKPOINT_EVERY`th of `entries` in their joined content."""
    sizes = [sum(map(len, entries[i:i + CHECKPOINT_EVERY])) for i in range(0, len(entries), CHECKPOINT_EVERY)]
    return [0, *itertools.accumulate(sizes[:-1])] if sizes else []


def object_id(kind: str, content: bytes) -> str:
    """The SHA-1 id git gives `content` as an object of `kind` (blob, tree, commit)."""
    return sha1_hex(b"%s %d\0" % (kind.encode(), len(content)) + content)


def write_loose(objects: Path, kind: str, content: bytes, sha: str | None = None, *, level: int = 1,
                segments: Path | None = None, previous: tuple[str, bytes] | None = None) -> str:
    """Store `content` as a loose object of `kind` under the folder `objects` (fsynced; a no-op when
    the object is there already) and return its id (`sha`, when the caller has computed it).
    `level` is the zlib level (git's core.looseCompression; 1, best speed, by default).

    With `segments` (a file beside the objects), a large tree or blob is compressed in segments
    that the next one of its kind written reuses where its bytes are the same (`_segmented`).
    `previous` is `(id, content)` of the object of that kind the caller changed (the parent's
    tree, HEAD's MEMORY.md): when the record describes it, a reused segment's piece is compared
    with its bytes there instead of decompressing the whole new object to check it."""
    raw = b"%s %d\0" % (kind.encode(), len(content)) + content
    sha = sha or sha1_hex(raw)
    folder = objects / sha[:2]
    target = folder / sha[2:]
    if target.exists():
        return sha
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f"tmp_obj_desk_{os.getpid()}_{sha[2:8]}"
    kept: tuple[int, list[int]] | None = None
    built = None
    if segments is not None and kind in _CUTS and len(content) >= SEGMENTED:
        built = _segmented(objects, raw, len(raw) - len(content), level, segments, _CUTS[kind], previous)
    if built is None:
        data = zlib.compress(raw, level)
    else:
        data, kept = built
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o444)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:  # a full disk: no half-written temporary object left, and the object named
        tmp.unlink(missing_ok=True)
        if exc.filename is None:  # os.write's ENOSPC names no file
            raise OSError(exc.errno, exc.strerror, str(target)) from exc
        raise
    os.replace(tmp, target)
    if kept is not None and segments is not None:
        _keep_segments(segments, sha, data, level, *kept)
    return sha


# -- large trees and blobs compressed in reusable segments ----------------------------------------
# A commit of one memory rewrites memory/'s tree: at 10,000 memories 380 KB, which zlib takes
# ~4 ms to compress (its 20-byte ids do not compress), growing with the desk; and MEMORY.md, one
# line spliced in (3 MB at 50,000 memories: ~5 ms). The object is cut where its own bytes say
# (a tree after a NUL followed by a byte below 4: a name's end before an id starting so, about one
# entry in 64; MEMORY.md after the `](` of a link whose name ends in one of a few letter and digit
# triples, about one line in 100), each piece deflated after a full flush (no reference reaches
# back across it, and it ends on a byte boundary), so a piece's compressed bytes stand on their
# own. The next object of the kind, the same but for a line or two, copies the compressed bytes
# of every piece it shares with the last one written and compresses only the others. The stream
# stays what zlib reads (git's loose object format): the zlib header, the pieces' deflate blocks,
# a final block, the Adler-32 of the whole.
#
# A reused segment is checked before it is written: when the caller hands over the object the
# record describes (`previous`: the parent's tree, HEAD's MEMORY.md, whose ids the caller has
# checked), the piece is compared with the bytes it stood for there and the segment with the CRC-32
# recorded when it was compressed (the record carries its own checksum too); otherwise the whole
# new stream is decompressed and compared with the object's bytes (~1.3 ms a MB: ~4 ms for
# memory/'s tree at 50,000 memories, as much again for MEMORY.md).

SEGMENTED = 1 << 16  # trees and blobs at least this large are written in segments
_CUTS = {"tree": re.compile(rb"\0[\x00-\x03]"),
         "blob": re.compile(rb"\]\((?<=[3cgmst][1368aeilo\-][05dhmrw]\]\()")}
_ZLIB_HEADER = {0: b"\x78\x01", 1: b"\x78\x01", 2: b"\x78\x5e", 3: b"\x78\x5e", 4: b"\x78\x5e",
                5: b"\x78\x5e", 6: b"\x78\x9c", -1: b"\x78\x9c", 7: b"\x78\xda", 8: b"\x78\xda", 9: b"\x78\xda"}


def _pieces(raw: bytes, start: int, cut: re.Pattern[bytes]) -> list[bytes]:
    """`raw[start:]` cut after each `cut` match (content-defined: a line or an entry put in or
    taken out moves no cut elsewhere)."""
    cuts = [start, *(m.end() for m in cut.finditer(raw, start)), len(raw)]
    return [raw[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]


def _segmented(objects: Path, raw: bytes, start: int, level: int, segments: Path, cut: re.Pattern[bytes],
               previous: tuple[str, bytes] | None = None) -> tuple[bytes, tuple[int, list[int]]] | None:
    """The zlib stream of `raw` (its object header before `start`) in segments, reusing the last
    segmented object's where the pieces are the same; and what to keep for the next one: the
    length of the object header's segment and, flat, `[piece length, piece CRC-32, segment
    length, segment CRC-32, ...]`. None when `raw` does not cut into pieces (then the record is
    left for the next object).

    When the record describes `previous` (the object this one changes), the pieces both share at
    their start and at their end are taken from the record as they are (`_shared_ends`: compared
    byte for byte, not cut or checksummed again): only the middle, around the change, is cut."""
    known, old, order = _known_segments(objects, segments, level, previous)
    lead: list[_Piece] = []
    tail: list[_Piece] = []
    if old is not None and order:
        lead, tail, pieces = _shared_ends(raw, start, old, order, cut)
    else:
        pieces = _pieces(raw, start, cut)
    if len(lead) + len(pieces) + len(tail) < 2:
        return None
    comp = zlib.compressobj(level, zlib.DEFLATED, -15)
    head = comp.compress(raw[:start]) + comp.flush(zlib.Z_FULL_FLUSH)
    out = [_ZLIB_HEADER[level], head]
    kept: list[int] = []

    def shared(pieces: list[_Piece], at: int) -> None:
        """Pieces taken whole from the record, from offset `at` of `raw`; a segment that is not the
        one written for its piece (its CRC-32 differs) is compressed again from the piece's bytes."""
        for size, crc, segment, segment_crc in pieces:
            if zlib.crc32(segment) != segment_crc:
                piece = raw[at:at + size]
                crc = zlib.crc32(piece)
                segment = comp.compress(piece) + comp.flush(zlib.Z_FULL_FLUSH)
                segment_crc = zlib.crc32(segment)
            kept.extend((size, crc, len(segment), segment_crc))
            out.append(segment)
            at += size

    shared(lead, start)
    unchecked = False
    for piece in pieces:
        size = len(piece)
        crc = zlib.crc32(piece)
        hit = known.get((size, crc))
        segment = None
        if hit is not None:
            reused, offset, segment_crc = hit
            if old is None:
                segment, unchecked = reused, True
            elif old[offset:offset + size] == piece and zlib.crc32(reused) == segment_crc:
                segment = reused  # the same bytes, and the segment as it was written for them
        if segment is None:
            segment = comp.compress(piece) + comp.flush(zlib.Z_FULL_FLUSH)
            segment_crc = zlib.crc32(segment)
        kept += (size, crc, len(segment), segment_crc)
        out.append(segment)
    shared(tail, len(raw) - sum(piece[0] for piece in tail))
    out += [comp.flush(zlib.Z_FINISH), zlib.adler32(raw).to_bytes(4, "big")]
    data = b"".join(out)
    if unchecked and not _inflates_to(data, raw):  # a reused segment that is not its piece's: never written
        return zlib.compress(raw, level), (0, [])
    return data, (len(head), kept)


def _inflates_to(data: bytes, raw: bytes) -> bool:
    try:
        return zlib.decompress(data) == raw
    except zlib.error:  # a segment that is not even deflate data where it stands
        return False


_Piece = tuple[int, int, bytes, int]  # a recorded piece: its length and CRC-32, its segment and the segment's CRC-32
_REACH = 8  # bytes before a cut its match looks at (the blob cut's lookbehind and `](`: 5)


def _shared_ends(raw: bytes, start: int, old: bytes, order: list[_Piece], cut: re.Pattern[bytes]
                 ) -> tuple[list[_Piece], list[_Piece], list[bytes]]:
    """The recorded pieces `raw[start:]` shares with `old` at its start (the same bytes at the same
    offsets: cut the same, the scan for cuts having gone the same way) and at its end (the same
    bytes, and the `_REACH` bytes before them, after a cut the new object's own scan makes: its
    cuts there are then the old ones, shifted), and the middle between them cut afresh, as
    `_pieces` cuts it."""
    view = memoryview(old)
    lead: list[_Piece] = []
    at = 0
    for piece in order:
        size = piece[0]
        if not raw.startswith(view[at:at + size], start + at):
            break
        lead.append(piece)
        at += size
    low = start + at  # where the middle begins in `raw` (a cut: a piece ends there, or the content begins)
    tail: list[_Piece] = []
    end_old, end_new = len(old), len(raw)
    for piece in reversed(order[len(lead):]):
        size = piece[0]
        if end_new - size - _REACH < low or not raw.endswith(view[end_old - size:end_old], 0, end_new):
            break
        tail.append(piece)
        end_old -= size
        end_new -= size
    tail.reverse()
    while True:
        ends = [m.end() for m in cut.finditer(raw, low, end_new)]
        if not tail or (ends and ends[-1] == end_new
                        and raw[end_new - _REACH:end_new] == old[end_old - _REACH:end_old]):
            break
        size = tail.pop(0)[0]  # its start is no cut of the new scan, or what its cut sees differs
        end_old += size
        end_new += size
    cuts = [low, *(e for e in ends if e < end_new), end_new]
    return lead, tail, [raw[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]


def _known_segments(objects: Path, segments: Path, level: int, previous: tuple[str, bytes] | None
                    ) -> tuple[dict[tuple[int, int], tuple[bytes, int, int]], bytes | None, list[_Piece]]:
    """`{(piece length, piece CRC-32): (compressed segment, offset of the piece, segment CRC-32)}`
    of the last segmented object, when its file is still the one the record describes; else empty.
    And the object's content to compare pieces with: `previous`'s, when the record describes that
    object and its own checksum holds (then each reused segment is checked by its CRC-32); else None
    (the object file must match the record's length and CRC-32, and the new stream is checked whole).
    And the recorded pieces in order (`_shared_ends` takes those it shares with the new object)."""
    import json

    try:
        record = json.loads(segments.read_bytes())
        sha = record["sha"]
        data = (objects / sha[:2] / sha[2:]).read_bytes()
        exact = previous is not None and previous[0] == sha and record.get("check") == _record_check(record)
        if record["level"] != level or record["size"] != len(data) or (
                not exact and record["crc"] != zlib.crc32(data)):
            return {}, None, []
        found = {}
        order: list[_Piece] = []
        at = 2 + record["head"]  # the zlib header and the object header's segment
        offset = 0
        flat = array("I")
        flat.frombytes(bytes.fromhex(record["pieces"]))
        for i in range(0, len(flat) - 3, 4):
            length, crc, size, segment_crc = flat[i:i + 4]
            segment = data[at:at + size]
            found[(length, crc)] = (segment, offset, segment_crc)
            order.append((length, crc, segment, segment_crc))
            at += size
            offset += length
        content = previous[1] if exact and previous is not None else None
        if content is None or offset != len(content):
            order = []  # the record's pieces do not add up to that object: each piece compared, none taken whole
        return found, content, order
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return {}, None, []


def _record_check(record: dict[str, object]) -> int:
    """The record's own checksum: a damaged record is never trusted to cut the last object."""
    import json

    return zlib.crc32(json.dumps([record[k] for k in ("sha", "level", "size", "crc", "head", "pieces")]).encode())


def _keep_segments(segments: Path, sha: str, data: bytes, level: int, head: int, pieces: list[int]) -> None:
    """Record how the object `sha` (`data`, its object file) was cut (derived: no fsync; a lost
    record only costs the next object a whole compression)."""
    import json

    if not pieces:
        segments.unlink(missing_ok=True)
        return
    flat = array("I", pieces).tobytes().hex()  # native words in hex: ~1 ms less than JSON lists
    record: dict[str, object] = {"sha": sha, "level": level, "size": len(data), "crc": zlib.crc32(data),
                                 "head": head, "pieces": flat}
    record["check"] = _record_check(record)
    tmp = segments.with_name(f"{segments.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, segments)


def keep_raw(path: Path, sha: str, content: bytes, checkpoints: list[int] | None = None) -> None:
    """Keep the content of object `sha` uncompressed in `path` (derived, no fsync): the next commit
    reads memory/'s tree from here instead of inflating it (~4 ms at 50,000 memories). With a tree's
    `checkpoints` (RawTree), kept with a CRC-32 of their own and the id: the next commit finds its
    entries without splitting the tree."""
    head = sha.encode()
    if checkpoints is not None:
        words = array("I", checkpoints).tobytes().hex().encode()
        head += b" %s %d" % (words, zlib.crc32(head + b" " + words))
    from desk.storage.atomic import write_derived  # a commit's: not on the read path

    write_derived(path, head + b"\n" + content)  # a cache: the commit does not depend on it


def read_kept_tree(path: Path, kind: str, sha: str) -> tuple[bytes, list[int] | None] | None:
    """The content `keep_raw` kept for `sha` (its id checked) and its checkpoints (None: not kept,
    or their own checksum fails)."""
    try:
        with open(path, "rb") as kept:
            head = kept.read(len(sha))
            if head != sha.encode():
                return None  # another object's: not read further
            line = kept.readline()
            content = kept.read()
    except OSError:
        return None
    if not line.startswith((b"\n", b" ")) or object_id(kind, content) != sha:
        return None
    checkpoints = None
    words, _, check = line.strip().partition(b" ")
    if words and check.isdigit() and zlib.crc32(head + b" " + words) == int(check):
        try:
            found = array("I")
            found.frombytes(bytes.fromhex(words.decode()))
        except ValueError:
            found = array("I")
        checkpoints = found.tolist()
        if any(not 0 <= c < len(content) for c in checkpoints) or checkpoints != sorted(checkpoints):
            checkpoints = None
    return content, checkpoints


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


def changed_trees(old: Mapping[str, list[bytes] | RawTree | None], blobs: Mapping[str, str | None]
                  ) -> tuple[str, list[tuple[str, bytes, str, list[int] | None]]]:
    """The root tree with `blobs` applied (`{path: blob id, or None to delete}`, files written with
    mode 100644, as desk's private index wrote them) and the new tree objects' folders, contents,
    ids (each hashed once) and, for a large one, its checkpoints (RawTree), children before
    parents. `old` holds the entries (`tree_entries`, or a RawTree spliced in place) of every
    folder of `folders_of(blobs)` as it was (None: absent). TreeConflict when a path crosses a
    file, or a folder would be replaced by a file."""
    by_folder: dict[str, dict[bytes, str | None]] = {}
    for path, blob in blobs.items():
        folder, _, name = path.rpartition("/")
        by_folder.setdefault(folder + "/" if folder else "", {})[name.encode("utf-8", "surrogateescape")] = blob
    written: list[tuple[str, bytes, str, list[int] | None]] = []

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
        was = old.get(folder)
        children = {f[len(folder):].split("/", 1)[0] for f in by_folder if f.startswith(folder) and f != folder}
        checkpoints: list[int] | None = None
        if isinstance(was, RawTree):
            tree = was
            for name, blob in by_folder.get(folder, {}).items():
                tree = tree.spliced(FILE_MODE, name, blob)
            for child in sorted(children):
                tree = tree.spliced(TREE_MODE, child.encode("utf-8", "surrogateescape"), build(f"{folder}{child}/"))
            content, checkpoints = tree.content, tree.checkpoints
        else:
            entries = list(was or [])
            for name, blob in by_folder.get(folder, {}).items():
                put(entries, FILE_MODE, name, blob)
            for child in sorted(children):
                put(entries, TREE_MODE, child.encode("utf-8", "surrogateescape"), build(f"{folder}{child}/"))
            content = b"".join(entries)
            if len(content) >= SEGMENTED:
                checkpoints = checkpoints_of(entries)
        if not content and folder:
            return None
        sha = object_id("tree", content)
        written.append((folder, content, sha, checkpoints))
        return sha

    root = build("")
    assert root is not None
    return root, written
