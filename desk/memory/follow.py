"""A memory file's history across its renames, following only renames that really happened.

git's `--follow` guesses by similar content; desk follows a file back to an older name only when
the commit that created it is desk's own rename (`Desk-Renamed-From: OLD`, OLD deleted beside it),
or deleted exactly one byte-identical file (an unedited `git mv`).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from desk.storage.git import Commit, Git
from desk.text.names import path_name_problem

NAME_LIMIT = 80  # a memory name's limit (desk.formats.memory_file); a longer trailer is no desk rename


def renamed_from(commit: Commit, path: str) -> str | None:
    """The path `path` had before `commit`, when `commit` created it by a real rename; else None.
    `commit` must carry all its changes (History.commits), not only those under one pathspec."""
    created = next((c for c in commit.changes if c.path == path and c.status == "A"), None)
    if created is None:
        return None
    deleted = {c.path: c for c in commit.changes if c.status == "D"}
    if commit.trailers.get("Desk-Op") == ["rename"]:
        olds = commit.trailers.get("Desk-Renamed-From", [])
        if len(olds) == 1 and path_name_problem(olds[0], limit=NAME_LIMIT) is None:
            old = posixpath.join(posixpath.dirname(path), olds[0] + ".md")
            if old in deleted:
                return old
    same = [p for p, c in deleted.items() if c.old_blob == created.new_blob]
    return same[0] if len(same) == 1 else None


@dataclass(frozen=True, slots=True)
class Segment:
    """One name the file had: its path, the commits under it (newest first), and where that walk
    started (None: HEAD; else the parent of the rename that gave the file its next name)."""

    path: str
    until: str | None
    commits: list[Commit]


def history(git: Git, path: str) -> list[Commit]:
    """Every commit that touched `path`, newest first, then those of each older name it had."""
    return [commit for segment in segments(git, path) for commit in segment.commits]


def names(git: Git, path: str) -> list[str]:
    """Every name the file at `path` has had, its own first; empty before its first commit."""
    return [segment.path for segment in segments(git, path)]


def segments(git: Git, path: str) -> list[Segment]:
    """The file's history by name, newest name first; empty when no commit touched `path`."""
    found: list[Segment] = []
    seen = [path]
    rev: str | None = None
    while True:
        commits = git.history.log([path], rev=rev)
        older = None
        for i, commit in enumerate(commits):
            if any(c.path == path and c.status == "A" for c in commit.changes):
                older = renamed_from(git.history.commits([commit.sha])[0], path)
                if older is not None and older not in seen and git.refs.object_id(commit.sha + "^"):
                    commits = commits[:i + 1]
                    break
                older = None
        if commits:
            found.append(Segment(path, rev, commits))
        if older is None or not commits:
            return found
        seen.append(older)
        path, rev = older, commits[-1].sha + "^"
