"""The desk as committed at a time (`--as-of T`, docs/time.md), read from git objects only: the last
commit on HEAD's first-parent line at or before T, filtered to what was valid at T."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from desk.errors import InvalidFileError, UsageError
from desk.layout import MEMORY_DIR, PROJECTS_DIR, DeskFolder, memory_name, project_file
from desk.text.times import format_time, parse_time

if TYPE_CHECKING:  # the memory file modules (and PyYAML) only for a read that parses a file
    from desk.formats.memory_file import MemoryFile
    from desk.formats.memory_index import IndexEntry

BEFORE_FIRST = "before the first commit: the desk held nothing yet"


@dataclass(frozen=True, slots=True)
class Past:
    """The commit a read as of `when` sees; `commit` None when `when` is before the first commit."""

    when: dt.datetime
    commit: str | None
    committed_at: dt.datetime | None

    def to_json(self) -> dict[str, Any]:
        return {"as_of": format_time(self.when), "commit": self.commit,
                "committed_at": format_time(self.committed_at) if self.committed_at else None,
                **({} if self.commit else {"note": BEFORE_FIRST})}

    def describe(self) -> str:
        """One line for people: which commit answered."""
        if self.commit is None:
            return f"as of {format_time(self.when)}: {BEFORE_FIRST}"
        assert self.committed_at is not None
        return f"as of {format_time(self.when)}: the desk as committed in {self.commit[:7]} " \
               f"({format_time(self.committed_at)})"


def start_at(desk: DeskFolder, when: dt.datetime | str) -> Callable[[], Past]:
    """The commit that answers a read as of `when` (UsageError, exit 2, for a malformed time): its
    `git log` started now (it walks the history while the caller loads its modules); call the
    result for the `Past`."""
    moment = parse_time(when, "--as-of")
    found = desk.git.history.commit_at(format_time(moment))

    def past() -> Past:
        commit = found.result()
        if commit is None:
            return Past(moment, None, None)
        return Past(moment, commit[0], dt.datetime.fromtimestamp(commit[1], dt.timezone.utc))
    return past


def memory_blobs(desk: DeskFolder, past: Past) -> dict[str, str]:
    """`{path: blob}` of every memory file at the commit, desk-wide and every project's."""
    if past.commit is None:
        return {}
    files = desk.git.worktree.ls_tree(past.commit, MEMORY_DIR, PROJECTS_DIR, recursive=True)
    return {p: b for p, b in files.items()
            if memory_name(p) is not None or (project_file(p) or ("",))[0] == "memory"}


def entries(desk: DeskFolder, past: Past) -> dict[str, IndexEntry]:
    """The desk-wide memories at the commit that were valid at `past.when`, as index entries (those
    that parse)."""
    from desk.gate.entries import load_entries

    files = memory_blobs(desk, past)
    found = load_entries(desk, {p: b for p, b in files.items() if p.startswith(MEMORY_DIR + "/")})
    return {n: e for n, e in found.items() if e.has_begun(past.when) and not e.has_ended(past.when)}


def show(desk: DeskFolder, name: str, past: Past) -> tuple[str, str, MemoryFile]:
    """Memory `name` as committed then, under the name it had then: (its path, its text, the memory);
    DeskError (exit 1) when the desk held no such memory then."""
    from desk.errors import DeskError

    from desk.formats.memory_file import parse_memory, require_name
    from desk.formats.memory_index import memory_path
    from desk.memory import follow

    require_name(name, read=True)
    path = memory_path(name)
    if past.commit is not None:
        names = follow.names(desk.git, path) or [path]
        blobs = desk.git.worktree.committed_blobs(names, past.commit)
        for old in names:
            if old in blobs:
                data = desk.git.objects.read_blobs([blobs[old]])[blobs[old]]
                try:
                    memory = parse_memory(data, old)
                except InvalidFileError as exc:
                    exc.hint = f"{old} did not parse at commit {past.commit[:7]}"
                    raise
                return old, data.decode("utf-8", "replace"), memory
    raise DeskError(f"no memory named {name!r} {past.describe()}",
                    hint=f"see what the desk held then with `desk list --as-of {format_time(past.when)}`")


def require_desk_wide(project: str | None) -> None:
    """`show`/`list --as-of` read the desk-wide memories (a project's: not yet)."""
    if project is not None:
        raise UsageError("--as-of with --project is not supported yet: leave one out")


@dataclass(frozen=True, slots=True)
class Revision:
    """One revision in `desk history NAME --timeline`: its commit, the interval it was true for (its
    own, else from its commit to the next revision), its evidence ids; `forgotten`: deleted."""

    commit: str
    committed_at: str
    subject: str
    path: str
    forgotten: bool
    value: str | None
    valid_from: str | None
    valid_to: str | None
    evidence: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "evidence": list(self.evidence)}


def timeline(desk: DeskFolder, name: str) -> list[Revision]:
    """Every revision of memory `name`, newest first, across real renames and forgets."""
    from desk.formats.memory_file import parse_memory, require_name
    from desk.formats.memory_index import memory_path
    from desk.memory import follow
    from desk.memory.reads import no_memory

    require_name(name, read=True)
    steps = [(commit, segment.path) for segment in follow.segments(desk.git, memory_path(name))
             for commit in segment.commits]
    if not steps:
        raise no_memory(desk, name)
    blobs = desk.git.objects.read_blobs(f"{c.sha}:{path}" for c, path in steps)
    times = desk.git.history.commit_times(c.sha for c, _ in steps)
    out: list[Revision] = []
    until: str | None = None  # the start of the next (newer) revision
    for commit, path in steps:
        at = format_time(dt.datetime.fromtimestamp(times[commit.sha], dt.timezone.utc))
        data = blobs.get(f"{commit.sha}:{path}")
        memory = None
        if data is not None:
            try:
                memory = parse_memory(data, path)
            except InvalidFileError:
                pass  # a broken revision shows without its fields
        trailer = commit.trailers.get("Desk-Source-Event", [])
        if memory is None:
            out.append(Revision(commit.sha, at, commit.subject, path, data is None, None, None,
                                None if data is None else until, tuple(trailer)))
            until = at if data is None else until
            continue
        meta = memory.meta
        start = format_time(meta.valid_from) if meta.valid_from else at
        end = format_time(meta.valid_to) if meta.valid_to else until
        evidence = tuple(dict.fromkeys([*filter(None, [meta.source_event]), *meta.evidence, *trailer]))
        out.append(Revision(commit.sha, at, commit.subject, path, False, memory.body.strip(), start, end, evidence))
        until = start
    return out
