"""`validate --all` after a few memories changed: the last run's findings with only their parts redone.

Each whole run leaves a **base** in the verdict cache (desk.gate.verdicts, table `bases`): the
work-tree listing it saw, the files it read from disk, HEAD's `.system/` blobs (what the run's state
key hashes), the per-file findings, the scopes' findings and MEMORY.md as the memories render it.
The next run compares its listing with the base's (`differing_paths`) and redoes only the paths
whose `(mode, blob)` differs: their verdicts, and their MEMORY.md lines spliced into the base's
rendered index (desk.formats.memory_index.splice_lines).

A base is left only when that splice is exactly what the whole run computes (no case clash between
memory names, names that sort as bytes and match their files, no `key:` or `evidence:` line, no open
conflict case: `_PLAIN_NAME` in desk.gate.validate). A run continues a base only when every changed
path is a regular memory file or MEMORY.md, `.system/` and the scopes are untouched, a new name
clashes with no path ignoring case, and at most `LIMIT` paths changed; anything else runs the whole
check, which leaves a new base. Bases are keyed by the rules version, the desk id and this module's
source (desk.gate.verdicts.STATE_MODULES). tests/guard/test_delta.py holds every continued run to
the whole check's findings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from desk.errors import Finding
from desk.gate.rules import FILE_MODE, GITLINK_MODE, SYMLINK_MODE, FileVerdict, is_checked
from desk.gate.scope_index import touched_scopes
from desk.layout import INDEX_FILE, memory_name
from desk.storage.git import WorkTreeListing

LIMIT = 256  # more changed paths than this: the whole check (it costs what 256 misses cost, or less)
_STEP = 8192  # bytes compared at a time when looking for the listings' common prefix and suffix

Entry = tuple[str, str | None]  # (mode as the gate keys it, blob id)


@dataclass(frozen=True, slots=True)
class Base:
    """What one run of `validate --all` leaves for the next (see the module's doc)."""

    records: bytes  # WorkTreeListing.records
    elsewhere: frozenset[str]  # WorkTreeListing.elsewhere
    changed: dict[str, Entry]  # the files read from disk (not as the index has them): mode, blob
    heads: dict[str, str]  # HEAD's blobs of the files whose rules read them
    checked: int
    per_file: dict[str, FileVerdict]  # the verdicts that have findings, by path
    scoped: FileVerdict  # the scopes' generated files' findings
    rendered: bytes  # MEMORY.md as the memories render it (whatever the file holds)


def encode(base: Base) -> tuple[bytes, bytes, str]:
    """The base as a row: the listing's bytes, the rendered index and the rest as JSON."""
    def verdict(v: FileVerdict) -> list[list[object]]:
        return [[*f, c] for f, c in zip(v.findings, v.conditions)]

    rest = {"elsewhere": sorted(base.elsewhere), "changed": {p: list(e) for p, e in base.changed.items()},
            "heads": base.heads, "checked": base.checked,
            "per_file": {p: verdict(v) for p, v in base.per_file.items()}, "scoped": verdict(base.scoped)}
    return base.records, base.rendered, json.dumps(rest, ensure_ascii=False)


def decode(records: object, index: object, rest: object) -> Base | None:
    """The base of a row; None when the row does not decode."""
    def verdict(rows: list[list[object]]) -> FileVerdict:
        return FileVerdict(tuple(Finding(*row[:-1]) for row in rows),  # type: ignore[arg-type]
                           tuple(str(row[-1]) for row in rows))

    try:
        if not isinstance(records, bytes) or not isinstance(index, bytes) or not isinstance(rest, str):
            return None
        data = json.loads(rest)
        return Base(records, frozenset(str(p) for p in data["elsewhere"]),
                    {str(p): (str(e[0]), None if e[1] is None else str(e[1])) for p, e in data["changed"].items()},
                    {str(p): str(b) for p, b in data["heads"].items()}, int(data["checked"]),
                    {str(p): verdict(v) for p, v in data["per_file"].items()}, verdict(data["scoped"]), index)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None


def differing_paths(old: bytes, new: bytes) -> set[str] | None:
    """The paths of the records that are in one of two listings (`WorkTreeListing.records`) and
    not in the other; None when more than LIMIT paths changed.

    Both are walked together: the next run of equal bytes is skipped by comparing slices (memcmp,
    `_STEP` bytes at a time), and at a record that differs the two walks meet again where the other
    listing holds that record (a `find`); what lies between is what changed. Every record not
    named was matched with an equal record of the other listing, so a few changes cost a few
    searches whatever the listings' size."""
    paths: set[str] = set()

    def name(records: bytes, start: int, end: int) -> None:
        for record in records[start + 1:end].split(b"\0"):
            if record:
                raw = record[2:] if record[:2] == b"? " else record.partition(b"\t")[2]
                paths.add(raw.decode("utf-8", "surrogateescape"))

    i = j = 0  # each at the NUL before a record (or the last NUL: the listing's end)
    last_old, last_new = len(old) - 1, len(new) - 1
    while len(paths) <= LIMIT:
        back = old.rfind(b"\0", i, i + _common(old, i, new, j))  # the last NUL of the equal run
        j += back - i
        i = back
        if i >= last_old or j >= last_new:
            name(old, i, last_old)
            name(new, j, last_new)
            return paths if len(paths) <= LIMIT else None
        end_old, end_new = old.index(b"\0", i + 1), new.index(b"\0", j + 1)
        again = new.find(old[i:end_old + 1], j)  # this record of `old`, later in `new`
        if again > j:
            name(new, j, again)
            j = again
            continue
        again = old.find(new[j:end_new + 1], i)
        if again > i:
            name(old, i, again)
            i = again
            continue
        name(old, i, end_old)
        name(new, j, end_new)
        i, j = end_old, end_new
    return None


def _common(a: bytes, i: int, b: bytes, j: int) -> int:
    """How many bytes `a` from `i` and `b` from `j` share: slices compared `_STEP` bytes at a time
    (memcmp; a memoryview compares item by item, 100x slower), then bisection within the step."""
    most = min(len(a) - i, len(b) - j)
    at = 0
    while at < most and a[i + at:i + min(at + _STEP, most)] == b[j + at:j + min(at + _STEP, most)]:
        at += _STEP
    if at >= most:
        return most
    lo, hi = at, min(at + _STEP, most)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[i + at:i + mid] == b[j + at:j + mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def listed_entry(listing: WorkTreeListing, found: Mapping[str, tuple[str, str | None, bytes | None]],
                 path: str) -> Entry | None:
    """What the whole run would take for `path` now: the file read from disk, or its index entry
    when git finds it unchanged (None: not checked, or not there)."""
    if path in listing.elsewhere:
        entry = found.get(path)
        return entry[:2] if entry is not None else None
    return _checked(listing.entry(path), path)


def base_entry(base: Base, path: str) -> Entry | None:
    """What the base's run took for `path`."""
    if path in base.changed:
        return base.changed[path]
    if path in base.elsewhere:
        return None
    listed = WorkTreeListing.entry_in(base.records, path)
    return _checked(listed, path)


def _checked(listed: tuple[str, str] | None, path: str) -> Entry | None:
    if listed is None or not is_checked(path, listed[0]):
        return None
    mode, blob = listed
    return (mode if mode in (SYMLINK_MODE, GITLINK_MODE) else FILE_MODE, blob)


def changed_memories(base: Base, listing: WorkTreeListing,
                     found: Mapping[str, tuple[str, str | None, bytes | None]],
                     heads: Mapping[str, str]) -> dict[str, tuple[Entry | None, Entry | None]] | None:
    """`{path: (then, now)}` of the paths whose entry changed since `base`, when they are all
    memory files a continued run can redo; None when the whole check must run."""
    if dict(heads) != base.heads:
        return None
    try:
        candidates = differing_paths(base.records, listing.records)
    except ValueError:  # a record without its NUL: not a listing git wrote
        return None
    if candidates is None:
        return None
    candidates |= base.changed.keys() | base.elsewhere | listing.elsewhere
    if len(candidates) > 4 * LIMIT:
        return None
    delta = {}
    for path in candidates:
        then, now = base_entry(base, path), listed_entry(listing, found, path)
        if then == now:
            continue
        if path == INDEX_FILE:
            if then is None or now is None or then[0] != FILE_MODE or now[0] != FILE_MODE:
                return None
        elif memory_name(path) is None or any(e is not None and e[0] != FILE_MODE for e in (then, now)):
            return None
        delta[path] = (then, now)
    if len(delta) > LIMIT or any(touched_scopes(delta)):
        return None
    return delta


def case_clash(listing: WorkTreeListing, paths: Iterable[str]) -> bool:
    """Whether any of `paths` (new memory paths) may equal another listed path ignoring case (a
    name that is not ASCII counts as one: bytes fold ASCII only)."""
    records = listing.records
    lowered: bytes | None = None
    for path in paths:
        if not path.isascii():
            return True
        lowered = lowered if lowered is not None else records.lower()
        raw = path.encode()
        for needle in (b"\t" + raw.lower() + b"\0", b"\0? " + raw.lower() + b"\0"):
            at = lowered.find(needle)
            while at >= 0:
                if records[at + len(needle) - len(raw) - 1:at + len(needle) - 1] != raw:
                    return True
                at = lowered.find(needle, at + 1)
    return False
