"""The merge drivers: three-way merges of desk's files that never write conflict markers.

Each merge is a pure function of the three versions (base, ours, theirs; None when absent on that
side); docs/sync.md's table says what each does. Only `mistakes` ever leaves markers (git's own).
"This clone's" side is OURS in a merge and THEIRS in a rebase (git swaps them there). What a merge
could not settle goes to `.git/desk-merge-pending.jsonl`, read by `desk.sync.settle` afterwards.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desk.formats.hook_files import MERGE_DRIVERS, read_text_or_empty
from desk.formats.hook_files import driver_for as driver_for  # re-exported: settle and stopped ask it here
from desk.storage.git.run import Runner

if TYPE_CHECKING:
    from collections.abc import Mapping

    from desk.storage.git import Git

DRIVERS = MERGE_DRIVERS  # the driver names, re-exported for desk.cli.merge

PENDING_FILE = "desk-merge-pending.jsonl"  # in .git/
SYNC_ENV = "DESK_SYNC"  # set while desk sync runs git: the hooks and `stopping_notice` stand aside


@dataclass
class Resolution:
    """A merged file (None: deleted), and what is left for after the merge."""

    data: bytes | None
    pending: list[dict[str, Any]] = field(default_factory=list)
    ok: bool = True  # False: no safe merge (git keeps the conflict; nothing is guessed)


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "surrogateescape")


def _pick(base: Any, ours: Any, theirs: Any) -> tuple[bool, Any]:
    """Three-way choice of one value: (clean, value). Not clean: both sides changed it differently."""
    if ours == theirs or theirs == base:
        return True, ours
    if ours == base:
        return True, theirs
    return False, ours


_INDEX_LINE = re.compile(r"^- \[([^\]]+)\]")


def _keyed_lines(data: bytes | None, key: re.Pattern[str], placeholder: str | None = None
                 ) -> tuple[list[str], dict[str, str]]:
    """A generated index's lines before its first keyed line (less `placeholder`, the line an
    empty index shows), and `{key: line}` of its keyed lines."""
    head: list[str] = []
    lines: dict[str, str] = {}
    for line in (_text(data) or "").splitlines():
        m = key.match(line)
        if m:
            lines[m.group(1)] = line
        elif not lines and line != placeholder:
            head.append(line)
    return head, lines


def merge_index(base: bytes | None, ours: bytes | None, theirs: bytes | None) -> Resolution:
    from desk.formats.memory_index import render_sorted

    merged = _merge_lines(*(_keyed_lines(x, _INDEX_LINE)[1] for x in (base, ours, theirs)))
    return Resolution(render_sorted([merged[n] for n in sorted(merged)]))


def _merge_lines(b: dict[str, str], o: dict[str, str], t: dict[str, str]) -> dict[str, str]:
    """Index lines keyed by name (or preference key), merged three ways key by key; a key deleted
    on one side and changed on the other keeps the changed line (nothing is lost)."""
    merged = {}
    for key in sorted({*b, *o, *t}):
        clean, line = _pick(b.get(key), o.get(key), t.get(key))
        if not clean and line is None:
            line = t.get(key)
        if line is not None:
            merged[key] = line
    return merged


def merge_memory(path: str, base: bytes | None, ours: bytes | None, theirs: bytes | None,
                 keep: str = "ours") -> Resolution:
    """Field by field and line by line (desk.sync.memory_merge); a clash keeps `keep`'s version
    (this clone's: `theirs` in a rebase, where git swaps the sides) and records a case."""
    clean, data = _pick(base, ours, theirs)
    if clean:
        return Resolution(data)
    if base is not None and ours is not None and theirs is not None:
        from desk.sync.memory_merge import merge_memory_text

        merged = merge_memory_text(base, ours, theirs)
        if merged is not None:
            return Resolution(merged)
    versions = {"ours": ours, "theirs": theirs}
    kept = keep if versions[keep] is not None else ("theirs" if keep == "ours" else "ours")
    parts = path.split("/")
    scope = f"project:{parts[1]}/" if len(parts) == 4 and parts[0] == "projects" else ""
    case = {"type": "case", "path": path, "domain": f"{scope}memory:{Path(path).stem}", "kept": kept,
            "versions": {"ours": _text(ours), "theirs": _text(theirs)}, "base": _text(base)}
    return Resolution(versions[kept], [case])


def merge_now(base: bytes | None, ours: bytes | None, theirs: bytes | None, keep: str = "ours") -> Resolution:
    """By `## ` section; items both sides appended to a section are all kept (OURS' first, as git
    puts a replayed commit's last), and a section whose same lines changed two ways keeps `keep`'s
    and is a case."""
    from desk.formats.now import NowNote

    clean, data = _pick(base, ours, theirs)
    if clean or ours is None or theirs is None:
        return Resolution(data) if clean else merge_memory("NOW.md", base, ours, theirs, keep)

    def sections(data: bytes | None) -> dict[str, tuple[str, str]]:
        note = NowNote.parse(_text(data) or "")
        found = {"": ("", note.preamble)}
        for heading, body in note.sections:
            found.setdefault(heading.strip().lower(), (heading, body))
        return found

    b, o, t = sections(base), sections(ours), sections(theirs)
    order = list(o) + [k for k in t if k not in o]
    out: list[tuple[str, str]] = []
    pending = []
    for key in order:
        clean, value = _pick(b.get(key), o.get(key), t.get(key))
        if not clean and key in o and key in t:
            body = _merge_items(b[key][1] if key in b else "", o[key][1], t[key][1])
            clean, value = body is not None, (o[key][0], body)
        if not clean:
            side = o if keep == "ours" else t
            value = side.get(key) or o.get(key) or t.get(key)
            label = key.lstrip("# ").strip() or "preamble"
            pending.append({"type": "case", "path": "NOW.md", "domain": f"now:{label}", "kept": keep,
                            "versions": {"ours": o[key][1] if key in o else None,
                                         "theirs": t[key][1] if key in t else None},
                            "base": b[key][1] if key in b else None})
        if value is not None:
            out.append(value)
    text = "".join(h + body for h, body in out)
    return Resolution((text.rstrip("\n") + "\n").encode(), pending)


def _merge_items(base: str, ours: str, theirs: str) -> str | None:
    """A NOW.md section's body merged line by line: what both sides appended is all kept, ours'
    items first; None when the same lines changed two ways."""
    b, o, t = (x.rstrip("\n").splitlines() for x in (base, ours, theirs))
    if o[:len(b)] == b and t[:len(b)] == b:  # both appended: git would see one clash at the end
        added = o[len(b):] + [line for line in t[len(b):] if line not in o[len(b):]]
        return "\n".join(b + added) + ours[len(ours.rstrip("\n")):]
    from desk.storage.git.merging import merge_text

    merged = merge_text(*(x.encode("utf-8", "surrogateescape") for x in (base, ours, theirs)))
    return None if merged is None else merged.decode("utf-8", "surrogateescape")


def merge_conflicts(base: bytes | None, ours: bytes | None, theirs: bytes | None) -> Resolution:
    from desk.digest.conflicts import parse_queue, render_queue

    try:
        b, o, t = (parse_queue(x) for x in (base, ours, theirs))
    except Exception:  # noqa: BLE001 - a broken side: leave the conflict to a person
        return Resolution(ours, ok=False)
    del b  # a case removed on one side stays: the queue only ever closes cases, never drops them
    by_id: dict[str, dict[str, Any]] = {}
    for case in [*o, *t]:
        known = by_id.get(case["id"])
        if known is None or _rank(case) > _rank(known):
            by_id[case["id"]] = case
    cases = sorted(by_id.values(), key=lambda c: (c["domain"], c["revision"], c["id"]))
    return Resolution(render_queue(cases))


def _rank(case: dict[str, Any]) -> tuple[int, int]:
    return (case.get("status") != "open", int(case.get("revision") or 0))


def merge_append(base: bytes | None, ours: bytes | None, theirs: bytes | None) -> Resolution:
    o, t = ours or b"", theirs or b""
    if o.startswith(t):
        return Resolution(ours)
    if t.startswith(o):
        return Resolution(theirs)
    return Resolution(ours, ok=False)  # not a pure append on both sides: a person must look


def merge_derived(path: str, base: bytes | None, ours: bytes | None, theirs: bytes | None) -> Resolution:
    clean, data = _pick(base, ours, theirs)
    if clean:
        return Resolution(data)
    return Resolution(ours if ours is not None else theirs, [{"type": "regenerate", "path": path}])


def merge_pref(path: str, base: bytes | None, ours: bytes | None, theirs: bytes | None) -> Resolution:
    """One preference file changed on both sides keeps the later `updated` (then the higher revision,
    then the larger bytes: the same answer on every clone), as `desk pref set` never rolls a newer
    change back; a deletion loses to a change. The other version stays in history."""
    from desk.errors import InvalidFileError
    from desk.formats.scope_files import parse_pref

    clean, data = _pick(base, ours, theirs)
    if clean:
        return Resolution(data)
    if ours is None or theirs is None:  # deleted on one side, changed on the other: kept
        return Resolution(ours if ours is not None else theirs)
    key = Path(path).stem
    try:
        mine, other = parse_pref(ours, path, key), parse_pref(theirs, path, key)
    except InvalidFileError:
        return Resolution(ours, ok=False)  # a broken side: a person must look
    kept = max((mine.updated, mine.revision, ours), (other.updated, other.revision, theirs))[2]
    return Resolution(kept, [{"type": "pref", "path": path, "key": key}])  # named in the report


_PREF_LINE = re.compile(r"^- `([^`]+)`:")
NO_PREFS = "_No active preferences._"


def merge_generated(base: bytes | None, ours: bytes | None, theirs: bytes | None) -> Resolution:
    """PREFERENCES.md merged line by line, keyed by preference key (as MEMORY.md by name): exact
    when the two sides changed different keys. A key changed on both sides keeps ours here; the
    `pref` driver decides the file by `updated`, and desk regenerates this projection after the
    merge (a person's `git pull` that took the other side's value is stopped by pre-merge-commit's
    `index-stale` with the regenerated file in the work tree, as for MEMORY.md)."""
    clean, data = _pick(base, ours, theirs)
    if clean:
        return Resolution(data)
    head, o = _keyed_lines(ours if ours is not None else theirs, _PREF_LINE, NO_PREFS)
    merged = _merge_lines(_keyed_lines(base, _PREF_LINE, NO_PREFS)[1], o, _keyed_lines(theirs, _PREF_LINE, NO_PREFS)[1])
    body = [merged[k] for k in sorted(merged)] or [NO_PREFS]
    return Resolution(("\n".join(head + body) + "\n").encode())


_ENTRY = re.compile(r"^## (M-\d{4,})(?: · (\S+))?")


def merge_mistakes(base: bytes | None, ours: bytes | None, theirs: bytes | None) -> Resolution:
    """MISTAKES.md: entries both sides added are all kept, in date order (this side's first on a
    day), the other side's renumbered when both took one id; an entry changed on one side takes the
    change. Anything else is git's line merge, or left to a person (not ok)."""
    from desk.storage.git.merging import merge_text

    clean, data = _pick(base, ours, theirs)
    if clean:
        return Resolution(data)
    if base is None or ours is None or theirs is None:
        return Resolution(ours, ok=False)
    merged = _merge_entries(*(_text(x) or "" for x in (base, ours, theirs)))
    data = merged.encode("utf-8", "surrogateescape") if merged is not None else merge_text(base, ours, theirs)
    return Resolution(data, ok=data is not None)


def _entries(text: str) -> tuple[str, dict[str, str]] | None:
    """(the preamble, {id: entry}) of MISTAKES.md; None when an id repeats."""
    parts = re.split(r"(?m)^(?=## M-\d{4,})", text)
    found = {part.split()[1]: part.rstrip("\n") for part in parts[1:]}
    return (parts[0], found) if len(found) == len(parts) - 1 else None


def _merge_entries(base: str, ours: str, theirs: str) -> str | None:
    split = [_entries(x) for x in (base, ours, theirs)]
    if any(s is None for s in split):
        return None
    (bh, b), (oh, o), (th, t) = split  # type: ignore[misc]
    clean, head = _pick(bh, oh, th)
    kept = []
    for key in b:
        same, entry = _pick(b[key], o.get(key), t.get(key))
        clean = clean and same
        if entry is not None:
            kept.append(entry)
    if not clean:
        return None
    added = [e for k, e in o.items() if k not in b]
    number = max((int(k[2:]) for k in (*b, *o, *t)), default=0)
    for key, entry in t.items():
        if key in b or entry in added:
            continue
        if key in o:  # both sides took this id for different entries
            number += 1
            entry = entry.replace(f"## {key}", f"## M-{number:04d}", 1)
        added.append(entry)
    added.sort(key=lambda e: (m.group(2) or "") if (m := _ENTRY.match(e)) else "")
    return str(head).rstrip("\n") + "".join("\n\n" + e for e in kept + added) + "\n"


def merge_file(driver: str, path: str, base: bytes | None, ours: bytes | None,
               theirs: bytes | None, keep: str = "ours") -> Resolution:
    """Merge one file with `driver` (one of DRIVERS); a clash keeps `keep`'s version (this clone's)."""
    sides = (base, ours, theirs)
    if driver == "memory":
        return merge_memory(path, *sides, keep)
    if driver == "now":
        return merge_now(*sides, keep)
    if driver == "derived":
        return merge_derived(path, *sides)
    if driver == "pref":
        return merge_pref(path, *sides)
    plain = {"index": merge_index, "conflicts": merge_conflicts, "append": merge_append,
             "mistakes": merge_mistakes, "generated": merge_generated}
    if driver not in plain:
        raise ValueError(f"unknown merge driver {driver!r}")
    return plain[driver](*sides)


def record_pending(git_dir: Path, items: list[dict[str, Any]]) -> None:
    """Append what a merge left for later to `.git/desk-merge-pending.jsonl` (one O_APPEND write)."""
    if not items:
        return
    with open(git_dir / PENDING_FILE, "ab", buffering=0) as f:
        f.write("".join(json.dumps(i, ensure_ascii=False, sort_keys=True) + "\n" for i in items).encode())


def read_pending(git_dir: Path) -> list[dict[str, Any]]:
    try:
        lines = (git_dir / PENDING_FILE).read_text("utf-8").splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a torn line from a killed driver: its merge was not concluded either
    return out


def clear_pending(git_dir: Path) -> None:
    (git_dir / PENDING_FILE).unlink(missing_ok=True)


def stopping_notice(git: Git, env: Mapping[str, str] = os.environ) -> str | None:
    """What the first desk driver in a person's `git merge`/`git pull` (or a rebase's pick) says:
    the files git will stop on because one side deleted what the other changed. git decides those
    before any driver and runs no hook after a merge that stops, so this is the one moment desk can
    speak. Once per merge (a `merge` line in the pending file); None in desk sync's own merge, or
    when nothing stops."""
    head, merging = git.refs.head(), next((k[8:] for k in env if k.startswith("GITHEAD_")), None)
    picks = [words[1] for words in map(str.split, read_text_or_empty(git.git_dir() / "rebase-merge" / "done")
                                                 .splitlines()) if len(words) > 1]  # `pick SHA subject`
    theirs = merging or (picks[-1] if picks else None)  # in a rebase: the commit being replayed
    key = f"{head}..{theirs}"
    if env.get(SYNC_ENV) or head is None or theirs is None or {"merge": key} in read_pending(git.git_dir()):
        return None
    record_pending(git.git_dir(), [{"merge": key}])
    base = git.refs.merge_base(head, theirs) if merging else f"{theirs}^"
    sides = [{c.path: c.status for c in git.worktree.diff_tree(base, rev)} for rev in (head, theirs)] if base else [{}]
    stops = sorted(p for p in sides[0] if {sides[0][p], sides[-1].get(p)} == {"D", "M"})
    kind = "merge" if merging else "rebase"
    return (f"this {kind} stops on {', '.join(stops)} (deleted on one side, changed on the other: git asks no "
            f"driver): run `desk sync --continue` to settle it (`git {kind} --abort` undoes it)") if stops else None


def run_driver(driver: str, base_file: str, ours_file: str, theirs_file: str, path: str,
               git_dir: Path) -> int:
    """What `python -m desk.cli.merge` runs for git: merge into `ours_file`; 0 clean, 1 conflict."""
    # git passes an empty file for a side without the path (the base of an add/add merge)
    base, ours, theirs = (Path(f).read_bytes() for f in (base_file, ours_file, theirs_file))
    # In a rebase git swaps the sides: OURS is the upstream, THEIRS this clone's commit being replayed.
    rebasing = (git_dir / "rebase-merge").is_dir() or (git_dir / "rebase-apply").is_dir()
    result = merge_file(driver, path, base or None, ours, theirs, "theirs" if rebasing else "ours")
    if not result.ok:
        if driver == "mistakes":  # one entry changed two ways: git's own markers, for a person to resolve
            Runner(Path.cwd()).completed(("merge-file", "-q", "-L", "ours", "-L", "base", "-L", "theirs",
                                          ours_file, base_file, theirs_file), recorded=False)
        return 1
    Path(ours_file).write_bytes(result.data if result.data is not None else b"")
    record_pending(git_dir, result.pending)
    return 0
