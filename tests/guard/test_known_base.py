"""HEAD's MEMORY.md handed to the gate by the mirror (`KnownHead.base`, `HeadMirror.read_index`)
spares it reading and hashing the file again; the gate still uses those bytes only when their blob
id is HEAD's, so bytes that are not HEAD's change nothing."""

from __future__ import annotations

import datetime as dt

from desk.gate.validate import KnownHead, validate_writes
from desk.layout import INDEX_FILE, DeskFolder
from desk.formats.memory_file import MemoryFile, MemoryMeta
from desk.formats.memory_index import IndexEntry, memory_path
from desk.gate.mirror import head_mirror
from desk.memory.operations import known_head, remember

NOW = dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.timezone.utc)


def _base(desk: DeskFolder) -> None:
    for name in ("alpha", "beta", "omega"):
        remember(desk, name, type="fact", description=f"the {name} fact", body=f"About {name}.",
                 triggers=["w"], now=NOW)


def _middle() -> MemoryFile:
    return MemoryFile(MemoryMeta(name="middle", description="a fact", type="fact", triggers=["w"],
                                 created=NOW, updated=NOW), "A fact.\n")


def _findings(desk: DeskFolder, writes: dict[str, bytes | None], known: KnownHead) -> list[object]:
    return [f.to_json() for f in validate_writes(desk, writes, "remember: middle\n", NOW, known).findings]


def test_the_mirror_hands_over_the_index_it_read_and_the_verdict_is_the_same(desk: DeskFolder) -> None:
    _base(desk)
    middle = _middle()
    with head_mirror(desk) as mirror:
        assert mirror.read_index() is None  # nothing read yet: nothing handed over
        index = mirror.render_index({"middle": IndexEntry.of(middle)})
        head_bytes = mirror.read_index()
        assert head_bytes == desk.git.objects.read_blobs(["HEAD:MEMORY.md"])["HEAD:MEMORY.md"]
        assert mirror.committed_index() is head_bytes  # read once while MEMORY.md is that blob
        known = known_head(mirror, ["middle"], index)
    assert known.base is head_bytes
    known = KnownHead(known.commit, known.blobs, None, known.index, known.index_clean, known.base)
    writes: dict[str, bytes | None] = {memory_path("middle"): middle.render(), INDEX_FILE: index}
    without = KnownHead(known.commit, known.blobs, None, known.index, known.index_clean)
    assert _findings(desk, writes, known) == _findings(desk, writes, without) == []


def test_bytes_that_are_not_heads_index_are_not_trusted(desk: DeskFolder) -> None:
    _base(desk)
    middle = _middle()
    with head_mirror(desk) as mirror:
        index = mirror.render_index({"middle": IndexEntry.of(middle)})
        known = known_head(mirror, ["middle"], index)
    # A MEMORY.md that lost beta's line; a stale "HEAD index" without it would make it a splice.
    beta = next(line for line in index.split(b"\n") if line.startswith(b"- [beta]("))
    wrong = index.replace(beta + b"\n", b"")
    stale_head = wrong.replace(next(line for line in wrong.split(b"\n")
                                    if line.startswith(b"- [middle](")) + b"\n", b"")
    writes: dict[str, bytes | None] = {memory_path("middle"): middle.render(), INDEX_FILE: wrong}
    lying = KnownHead(known.commit, known.blobs, None, None, False, stale_head)
    honest = KnownHead(known.commit, known.blobs, None, None, False)
    found = _findings(desk, writes, lying)
    assert found == _findings(desk, writes, honest)
    assert [f["rule"] for f in found] == ["index-stale"]  # type: ignore[index]
