"""A memory's history with each commit's diff (`desk ui`'s memory page); blobs read in one batch."""

from __future__ import annotations

import difflib
import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from desk.results.base import Outcome

if TYPE_CHECKING:
    from desk.api import Desk
    from desk.storage.git import Commit, RawChange


@dataclass(frozen=True)
class Revision:
    """One commit of a memory: who, when, why (its trailers) and the diff of the memory's file."""

    commit: Commit
    path: str  # the memory's path in this commit (an older name before a rename)
    diff: str  # unified diff of `path` from the commit's parent to the commit

    def to_json(self) -> dict[str, Any]:
        return {**self.commit.to_json(), "path": self.path, "diff": self.diff}


@dataclass(frozen=True)
class MemoryRevisions(Outcome):
    """`desk.memory_revisions(d, name)`: every commit of memory `name`, newest first, with its diff."""

    name: str
    revisions: list[Revision]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "revisions": [r.to_json() for r in self.revisions]}

    def text(self) -> str:
        return "\n".join(f"{r.commit.sha[:7]}  {r.commit.date[:19]}  {r.commit.subject}\n{r.diff}"
                         for r in self.revisions)


def memory_revisions(d: Desk, name: str, *, project: str | None = None,
                     limit: int | None = None) -> MemoryRevisions:
    """`Desk.history(name)`'s commits (the `limit` newest), each with its diff of the memory's file."""
    trail = d.history(name, project=project)
    picked = [(c, c.changes[0] if c.changes else None) for c in trail.commits[:limit]]
    olds = {c.sha: _before(c, ch) for c, ch in picked if ch}
    blobs = d.git.objects.read_blobs({b for b in olds.values() if b} | {ch.new_blob for _, ch in picked if ch and ch.new_blob})
    revisions = []
    for commit, change in picked:
        if change is None:  # a merge: its change to the file is in its parents' commits
            revisions.append(Revision(commit, commit.paths[0] if commit.paths else "", ""))
            continue
        old, new = olds[commit.sha], change.new_blob
        text = "".join(difflib.unified_diff(_lines(blobs.get(old or "")), _lines(blobs.get(new or "")),
                                            "a/" + change.path if old else "/dev/null",
                                            "b/" + change.path if new else "/dev/null"))
        revisions.append(Revision(commit, change.path, text))
    return MemoryRevisions(trail.name or name, revisions)


def _before(commit: Commit, change: RawChange) -> str | None:
    """The blob the file had before `commit`: after `desk rename`, the old name's file in the parent."""
    renamed = commit.trailers.get("Desk-Renamed-From", [])
    if change.status == "A" and commit.trailers.get("Desk-Op") == ["rename"] and len(renamed) == 1:
        return f"{commit.sha}^:{posixpath.dirname(change.path)}/{renamed[0]}.md"
    return change.old_blob


def _lines(data: bytes | None) -> list[str]:
    text = (data or b"").decode("utf-8", "replace")
    return [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            for line in text.splitlines(keepends=True)]
