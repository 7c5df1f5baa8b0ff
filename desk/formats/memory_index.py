"""MEMORY.md, the index of memory/: a memory's entry, its line, and the index rendered from them.

Sorted by name, no clock, no locale: the same bytes on every run and every machine.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from desk.layout import INDEX_FILE, MEMORY_DIR
from desk.text.escape import injected_body
from desk.text.normalize import content_key
from desk.text.times import format_time, parse_time
from desk.text.tokens import estimate_tokens

if TYPE_CHECKING:
    from desk.formats.memory_file import MemoryFile

HEADER = (f"# {INDEX_FILE}: generated from {MEMORY_DIR}/ by desk; do not edit by hand, "
          "run `desk reindex` after editing memory files\n")
EMPTY = "_No memories yet: add one with `desk remember`._\n"


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """What MEMORY.md, the write gate, `desk context` and `desk stats` need from one memory file."""

    name: str
    type: str
    description: str
    expires: str | None
    body_key: str
    triggers: tuple[str, ...] = ()
    updated: str | None = None  # the later of `updated` and `created`
    body_tokens: int = 0
    # What `desk context` shows, so it can fit its budget before reading any body.
    importance: int | None = None
    source: str | None = None
    source_event: str | None = None
    updated_field: str | None = None  # the `updated` field itself (None when the file has none)
    injected_tokens: int = 0
    valid_from: str | None = None  # when the fact became true and stopped being true (docs/time.md)
    valid_to: str | None = None

    @classmethod
    def of(cls, memory: MemoryFile) -> IndexEntry:
        meta = memory.meta
        stamps = [t for t in (meta.created, meta.updated) if t is not None]
        return cls(meta.name, meta.type, meta.description, _stamp(meta.expires), content_key(memory.body),
                   tuple(meta.triggers), _stamp(max(stamps) if stamps else None), estimate_tokens(memory.body),
                   meta.importance, meta.source, meta.source_event, _stamp(meta.updated),
                   estimate_tokens(injected_body(memory.body)), _stamp(meta.valid_from), _stamp(meta.valid_to))

    def is_expired(self, now: dt.datetime) -> bool:
        """Expired at `now`: still on disk and in MEMORY.md, never injected or recalled."""
        return self.expires is not None and parse_time(self.expires) <= now

    def has_ended(self, now: dt.datetime) -> bool:
        """Past its `valid_to` at `now`: no longer true, shown as such, never injected as current."""
        return self.valid_to is not None and parse_time(self.valid_to) <= now

    def has_begun(self, now: dt.datetime) -> bool:
        """At or past its `valid_from` at `now` (valid at `now`: begun and not ended)."""
        return self.valid_from is None or parse_time(self.valid_from) <= now

    def line(self) -> str:
        return index_line(self.name, self.description, self.expires, self.valid_to)


def index_line(name: str, description: str, expires: str | None, valid_to: str | None = None) -> str:
    """A memory's MEMORY.md line (no clock: a validity end shows as the time it ends)."""
    line = f"- [{name}]({MEMORY_DIR}/{name}.md) — {description}"
    if expires:
        line += f" (expires {expires})"
    if valid_to:
        line += f" (true until {valid_to})"
    return line


def _stamp(when: dt.datetime | None) -> str | None:
    return format_time(when) if when else None


def memory_line(memory: MemoryFile) -> str:
    """`IndexEntry.of(memory).line()` without computing the rest of the entry."""
    meta = memory.meta
    return index_line(meta.name, meta.description, _stamp(meta.expires), _stamp(meta.valid_to))


def render_index(entries: Iterable[IndexEntry]) -> bytes:
    """MEMORY.md for `entries`: the header, then one line per memory sorted by name."""
    return render_lines({entry.name: entry.line() for entry in entries})


def render_lines(lines: Mapping[str, str]) -> bytes:
    """MEMORY.md from `{name: index line}`: sorted by name (code points, never the locale)."""
    return render_sorted([lines[name] for name in sorted(lines)])


def render_sorted(lines: list[str]) -> bytes:
    """MEMORY.md from index lines already sorted by name."""
    body = "\n".join(lines) + "\n" if lines else EMPTY
    return (HEADER + "\n" + body).encode()


def splice_lines(index: bytes, lines: Mapping[str, str | None]) -> bytes | None:
    """`index` (as `render_sorted` writes it) with each `{name: line}` put at its sorted place (None:
    the line taken out); None when `index` is not laid out as desk writes it. Bisects the bytes."""
    head = (HEADER + "\n").encode()
    empty = EMPTY.encode()
    if not index.startswith(head):
        return None
    skip = len(head)  # the body is index[skip:], searched in place: bisection offsets shifted alike
    if len(index) - skip == len(empty) and index.endswith(empty):
        index = head
    elif len(index) == skip or not index.endswith(b"\n"):
        return None
    body: bytes | bytearray = index
    edits = sorted(lines.items())
    for name, line in edits:
        key = name.encode()
        start, found = _find_line(body, key, skip)
        if start is None:
            return None
        end = body.index(b"\n", start) + 1 if found else start
        new = b"" if line is None else line.encode() + b"\n"
        if line is not None and not line.startswith(f"- [{name}]("):
            raise ValueError(f"{line!r} is not {name}'s index line")
        if len(body) - (end - start) + len(new) == skip:
            body = head  # the last line taken out
        elif len(edits) == 1:  # one copy, from the pieces in place
            view = memoryview(body)
            return b"".join((view[:start], new, view[end:]))
        else:
            if not isinstance(body, bytearray):
                body = bytearray(body)
            body[start:end] = new
    return bytes(body) if len(body) > skip else head + empty


def _find_line(body: bytes | bytearray, key: bytes, skip: int = 0) -> tuple[int | None, bool]:
    """Where in `body[skip:]` (sorted index lines) the line of `key` starts or would go, and whether
    it is there; (None, False) on a line that is not an index line."""
    lo, hi = skip, len(body)  # offsets of line starts: the answer lies in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        start = body.rfind(b"\n", lo, mid) + 1 if mid > lo else lo
        if start < lo:
            start = lo
        end = body.index(b"\n", start)
        close = body.find(b"](", start, end)
        if not body.startswith(b"- [", start) or close < 0:
            return None, False
        name = body[start + 3:close]
        if name == key:
            return start, True
        if name < key:
            lo = end + 1
        else:
            hi = start
    return lo, False


def memory_path(name: str) -> str:
    return f"{MEMORY_DIR}/{name}.md"
