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


def write_loose(objects: Path, kind: str, content: bytes, sha: str | None = None, *, level: int = 1,
                segments: Path | None = None) -> str:
    """Store `content` as a loose object of `kind` under the folder `objects` (fsynced; a no-op when
    the object is there already) and return its id (`sha`, when the caller has computed it).
    `level` is the zlib level (git's core.looseCompression; 1, best speed, by default).

    With `segments` (a file beside the objects), a large tree is compressed in segments that the
    next large tree written reuses where its bytes are the same (`_segmented`)."""
    raw = b"%s %d\0" % (kind.encode(), len(content)) + content
    sha = sha or sha1_hex(raw)
    folder = objects / sha[:2]
    target = folder / sha[2:]
    if target.exists():
        return sha
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f"tmp_obj_desk_{os.getpid()}_{sha[2:8]}"
    kept: tuple[int, list[list[int]]] | None = None
    if segments is not None and kind == "tree" and len(content) >= SEGMENTED:
        data, kept = _segmented(objects, raw, len(raw) - len(content), level, segments)
    else:
        data = zlib.compress(raw, level)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o444)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)
    if kept is not None and segments is not None:
        _keep_segments(segments, sha, data, level, *kept)
    return sha


# -- large trees compressed in reusable segments ------------------------------------------------
# A commit of one memory rewrites memory/'s tree: at 10,000 memories 380 KB, which zlib takes
# ~4 ms to compress (its 20-byte ids do not compress), growing with the desk. The tree is cut
# where its own bytes say (after a NUL followed by a byte below 4: a name's end before an id
# starting so, about one entry in 64), each piece deflated after a full flush (no reference
# reaches back across it, and it ends on a byte boundary), so a piece's compressed bytes stand on
# their own. The next tree, the same but for an entry or two, copies the compressed bytes of every
# piece it shares with the last tree written and compresses only the others. The stream stays
# what zlib reads (git's loose object format): the zlib header, the pieces' deflate blocks, a final
# block, the Adler-32 of the whole. Every stream built so is decompressed and compared with the
# object's bytes before it is written.

SEGMENTED = 1 << 16  # trees at least this large are written in segments
_CUT = re.compile(rb"\0[\x00-\x03]")
_ZLIB_HEADER = {0: b"\x78\x01", 1: b"\x78\x01", 2: b"\x78\x5e", 3: b"\x78\x5e", 4: b"\x78\x5e",
                5: b"\x78\x5e", 6: b"\x78\x9c", -1: b"\x78\x9c", 7: b"\x78\xda", 8: b"\x78\xda", 9: b"\x78\xda"}


def _pieces(raw: bytes, start: int) -> list[bytes]:
    """`raw[start:]` cut after each `_CUT` match (content-defined: an entry put in or taken out
    moves no cut elsewhere)."""
    cuts = [start, *(m.end() for m in _CUT.finditer(raw, start)), len(raw)]
    return [raw[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]


def _segmented(objects: Path, raw: bytes, start: int, level: int, segments: Path
               ) -> tuple[bytes, tuple[int, list[list[int]]]]:
    """The zlib stream of `raw` (its object header before `start`) in segments, reusing the last
    segmented tree's where the pieces are the same; and what to keep for the next one: the length
    of the object header's segment and `[[piece length, piece CRC-32, segment length], ...]`."""
    known = _known_segments(objects, segments, level)
    comp = zlib.compressobj(level, zlib.DEFLATED, -15)
    head = comp.compress(raw[:start]) + comp.flush(zlib.Z_FULL_FLUSH)
    out = [_ZLIB_HEADER[level], head]
    kept = []
    for piece in _pieces(raw, start):
        crc = zlib.crc32(piece)
        segment = known.get((len(piece), crc))
        if segment is None:
            segment = comp.compress(piece) + comp.flush(zlib.Z_FULL_FLUSH)
        out.append(segment)
        kept.append([len(piece), crc, len(segment)])
    out += [comp.flush(zlib.Z_FINISH), zlib.adler32(raw).to_bytes(4, "big")]
    data = b"".join(out)
    if zlib.decompress(data) != raw:  # a reused segment that is not its piece's: never written
        return zlib.compress(raw, level), (0, [])
    return data, (len(head), kept)


def _known_segments(objects: Path, segments: Path, level: int) -> dict[tuple[int, int], bytes]:
    """`{(piece length, piece CRC-32): compressed segment}` of the last segmented tree, when its
    object file is still the one the record describes (its length and CRC-32); else empty."""
    import json

    try:
        record = json.loads(segments.read_bytes())
        sha = record["sha"]
        data = (objects / sha[:2] / sha[2:]).read_bytes()
        if record["level"] != level or record["size"] != len(data) or record["crc"] != zlib.crc32(data):
            return {}
        found = {}
        at = 2 + record["head"]  # the zlib header and the object header's segment
        for length, crc, size in record["pieces"]:
            found[(length, crc)] = data[at:at + size]
            at += size
        return found
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return {}


def _keep_segments(segments: Path, sha: str, data: bytes, level: int, head: int, pieces: list[list[int]]) -> None:
    """Record how the tree `sha` (`data`, its object file) was cut (derived: no fsync; a lost record
    only costs the next tree a whole compression)."""
    import json

    if not pieces:
        segments.unlink(missing_ok=True)
        return
    tmp = segments.with_name(f"{segments.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"sha": sha, "level": level, "size": len(data), "crc": zlib.crc32(data),
                               "head": head, "pieces": pieces}))
    os.replace(tmp, segments)


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
