"""The gate's rules over the memory set: `index-stale` and `memory-name-case`.

The committed MEMORY.md must equal the index regenerated from the same commit's memories, and no
two names may differ only in case. The check costs in proportion to the change: the committed
MEMORY.md with the changed lines replaced, else HEAD's memories from desk.gate.mirror plus the
change; without HEAD's index (`validate --all`) every line comes from the cached verdicts."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from desk.errors import Finding, InvalidFileError
from desk.layout import INDEX_FILE, DeskFolder, memory_name
from desk.storage.git import blob_sha

if TYPE_CHECKING:
    from desk.formats.memory_index import IndexEntry

Read = Callable[[list[str]], Mapping[str, bytes]]


@dataclass(slots=True)
class MemorySet:
    """What the memory-set rules need about the commit; the costly parts are fetched on demand."""

    index: bytes | None  # the MEMORY.md being committed
    base_index: bytes | None  # MEMORY.md at HEAD, patched by the fast path (None: no fast path)
    all_files: Callable[[], dict[str, str]]  # every memory `{path: blob}` of the commit
    read: Read
    like: Callable[[list[str]], list[str]]  # the commit's memory paths equal to these ignoring case
    # `{name: MEMORY.md line}` of every memory of the commit that parses, when the caller has
    # them (else they are loaded from `all_files`)
    all_lines: Callable[[], Mapping[str, str]] | None = None
    # MEMORY.md regenerated for HEAD's memories plus this commit's, when the caller has it
    # (desk's own commit renders it from the HEAD mirror, exactly as `_head_index_with` would)
    head_index: bytes | None = None
    # HEAD's MEMORY.md (`base_index`) is known to hold only lines clean of secrets in every view
    # (desk.text.secrets.clean_lines): the commit's index, when it is HEAD's with the changed
    # lines spliced in, needs only those lines scanned (desk.gate.validate)
    base_clean: bool = False
    # set by check_memory_set: the index is `base_index` with the changed lines
    spliced: bool = field(default=False, init=False)


def check_memory_set(desk: DeskFolder, changed: Mapping[str, str | None], memory: MemorySet,
                     added: Collection[str] = (), contents: Mapping[str, bytes | None] | None = None
                     ) -> tuple[list[Finding], bytes | None]:
    """`memory-name-case` for the changed memories and `index-stale` for the commit's MEMORY.md.
    `changed`: each changed memory path's new line (None: deleted or unparsable); `contents`: their
    bytes for the slow path. Returns the findings and the correct MEMORY.md."""
    findings = []
    # Only a new path can clash: a changed one clashed already when it was added.
    present = [p for p in changed if p in added]
    if present:
        by_lower: dict[str, list[str]] = {}
        for path in memory.like(present):
            by_lower.setdefault(path.lower(), []).append(path)
        for path in sorted(present):
            others = [p for p in by_lower.get(path.lower(), []) if p != path]
            if others:
                findings.append(Finding(path, 1, "memory-name-case",
                                        f"name differs from {others[0]} only in case; names must be "
                                        "unique ignoring case: rename one of them"))
    if memory.base_index is not None:
        patched = _patched_index(memory.base_index, changed)
        if patched is not None and patched == memory.index:
            memory.spliced = True
            return findings, patched
        expected = memory.head_index
        if expected is None:
            expected = _head_index_with(desk, contents or {})
    elif memory.all_lines is not None:
        from desk.formats.memory_index import render_lines  # YAML: only commits touching memories pay

        expected = render_lines(memory.all_lines())
    else:
        expected = _full_index(desk, memory.all_files(), memory.read)
    broken = [p for p, line in changed.items() if line is None and (contents is None or contents.get(p) is not None)]
    if index_differs(memory.index or b"", expected, broken):
        findings.append(stale_index(memory.index or b"", expected))
    return findings, expected


def index_differs(index: bytes, expected: bytes, broken: Collection[str]) -> bool:
    """Whether `index` is not `expected`, the lines of the `broken` memories aside (their own findings
    say it; `desk reindex` could not fix them)."""
    if index == expected or not broken:
        return index != expected
    from desk.formats.memory_index import EMPTY

    names = {n.encode() for p in broken if (n := memory_name(p)) is not None}
    empty = EMPTY.rstrip("\n").encode()  # the placeholder line of an index without memories

    def kept(text: bytes) -> list[bytes]:
        return [line for line in text.split(b"\n") if line != empty and not (
            line.startswith(b"- [") and b"](" in line and line[3:line.index(b"](")] in names)]
    return kept(index) != kept(expected)


def stale_index(index: bytes, expected: bytes) -> Finding:
    """`index-stale` for a MEMORY.md that is `index` where it should be `expected`."""
    return Finding(INDEX_FILE, first_difference(index, expected), "index-stale",
                   "MEMORY.md does not match memory/; it is generated: run `desk "
                   "reindex` (the pre-commit hook regenerates it in the work tree)")


def _entry(desk: DeskFolder, path: str, data: bytes) -> IndexEntry | None:
    """The index entry of one memory file (cached by blob), or None when it is invalid."""
    from desk.gate.entries import load_entries  # YAML: only commits touching memories pay

    sha = blob_sha(data)
    try:
        entries = load_entries(desk, {path: sha}, lambda shas: {sha: data})
    except InvalidFileError:
        return None
    return next(iter(entries.values()), None)


def _patched_index(base: bytes, changed: Mapping[str, str | None]) -> bytes | None:
    """HEAD's MEMORY.md with the changed lines replaced, placed by bisection; None if it cannot be read
    (tests/guard/test_index_splice.py holds an oracle)."""
    from desk.formats.memory_index import EMPTY, HEADER  # YAML: only commits touching memories pay

    head = (HEADER + "\n").encode()
    if not base.startswith(head):
        return None
    empty = EMPTY.encode()
    # `lines`: the header's pieces, then the index lines from `first` on, then the piece after the
    # last newline, which is dropped (set empty, so that the join ends the last line)
    first = head.count(b"\n")
    if len(base) == len(head) + len(empty) and base.endswith(empty):
        lines = head.split(b"\n")
    else:
        lines = base.split(b"\n")
    lines[-1] = b""

    def key(line: bytes) -> bytes:
        return line[3:line.index(b"](")]

    # bisect_left over lines[first:-1] probes the same lines as over that slice: with `lo` and
    # `hi` offset by `first`, each middle is offset by `first` too
    try:
        for path, line in sorted(changed.items()):
            name = memory_name(path)
            if name is None:
                continue
            at = bisect.bisect_left(lines, name.encode(), first, len(lines) - 1, key=key)
            if at < len(lines) - 1 and key(lines[at]) == name.encode():
                del lines[at]
            if line is not None:
                new = line.encode()
                lines.insert(bisect.bisect_left(lines, key(new), first, len(lines) - 1, key=key), new)
    except ValueError:
        return None  # not an index line: let the full regeneration decide
    return b"\n".join(lines) if len(lines) - 1 > first else head + empty


def _head_index_with(desk: DeskFolder, changed: Mapping[str, bytes | None]) -> bytes:
    """MEMORY.md for HEAD's memories plus `changed`, from desk.gate.mirror (when HEAD's own was stale)."""
    from desk.gate.mirror import head_mirror  # YAML and SQLite: only commits touching memories pay

    changes = {}
    for path, data in changed.items():
        name = memory_name(path)
        if name is not None:
            changes[name] = _entry(desk, path, data) if data is not None else None
    with head_mirror(desk) as state:
        return state.render_index(changes, strict=False)


def _full_index(desk: DeskFolder, files: Mapping[str, str], read: Read) -> bytes:
    """MEMORY.md regenerated from every valid memory file (invalid ones have their own findings)."""
    from desk.formats.memory_index import render_index
    from desk.gate.entries import load_entries  # YAML, as above

    return render_index(load_entries(desk, files, read, invalid=[]).values())


def first_difference(a: bytes, b: bytes) -> int:
    for number, (x, y) in enumerate(zip(a.split(b"\n"), b.split(b"\n")), start=1):
        if x != y:
            return number
    return min(a.count(b"\n"), b.count(b"\n")) + 1
