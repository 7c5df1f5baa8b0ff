"""A memory file merged three ways as a git user expects: field by field in the frontmatter,
line by line in the body (git's own `git merge-file`), so that two sides that changed different
fields or different lines merge cleanly, and only the same field or line changed two ways is a clash.

`updated` is the one field both sides change with every desk edit: two different stamps keep the
later one, as the later edit is the one the file now holds.
"""

from __future__ import annotations

import re

from desk.storage.git.merging import merge_text

_KEY = re.compile(rb"^([^\s#:-][^:]*):")  # a top-level YAML key; list items and indented lines continue it


def merge_memory_text(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """The merged file, or None when the same field or the same body lines changed two ways."""
    parts = [_split(data) for data in (base, ours, theirs)]
    if any(p is None for p in parts):  # not desk's framing on some side: git's merge of the whole file
        return merge_text(base, ours, theirs)
    (bh, bb), (oh, ob), (th, tb) = parts  # type: ignore[misc]
    head = _merge_fields(bh, oh, th)
    if head is None:
        head = _lines(bh, oh, th)
    body = _lines(bb, ob, tb)
    if head is None or body is None:
        return None
    return b"---\n" + head + b"---\n" + body


def _lines(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """git's line merge, without starting git when one side left the text as it was."""
    if ours == theirs or theirs == base:
        return ours
    return theirs if ours == base else merge_text(base, ours, theirs)


def _split(data: bytes) -> tuple[bytes, bytes] | None:
    """(the frontmatter's lines, the body) of `---\\n...\\n---\\n...`; None for another shape."""
    if not data.startswith(b"---\n"):
        return None
    end = data.find(b"\n---\n", 3)
    if end < 0:
        return None
    return data[4:end + 1], data[end + 5:]


def _fields(head: bytes) -> list[tuple[bytes, bytes]] | None:
    """The frontmatter as (key, its lines) in order; None when a key repeats (git's merge decides)."""
    chunks: list[tuple[bytes, bytes]] = []
    for line in head.splitlines(keepends=True):
        m = _KEY.match(line)
        if m or not chunks:
            chunks.append((m.group(1) if m else b"", line))
        else:
            chunks[-1] = (chunks[-1][0], chunks[-1][1] + line)
    keys = [k for k, _ in chunks]
    return chunks if len(set(keys)) == len(keys) else None


def _merge_fields(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """Three-way merge key by key; None when one key changed two ways (or a side does not split)."""
    split = [_fields(x) for x in (base, ours, theirs)]
    if any(s is None for s in split):
        return None
    b, o, t = (dict(s) for s in split)  # type: ignore[arg-type]
    merged: dict[bytes, bytes] = {}
    for key in {*b, *o, *t}:
        old, mine, other = b.get(key), o.get(key), t.get(key)
        if mine == other or other == old:
            value = mine
        elif mine == old:
            value = other
        elif key == b"updated" and mine is not None and other is not None:
            value = max(mine, other)
        else:
            return None
        if value is not None:
            merged[key] = value
    order = [k for k in o if k in merged]
    for i, key in enumerate(t):  # a key only the other side has goes after its neighbour there
        if key in merged and key not in order:
            before = next((k for k in reversed(list(t)[:i]) if k in order), None)
            order.insert(0 if before is None else order.index(before) + 1, key)
    return b"".join(merged[k] for k in order)
