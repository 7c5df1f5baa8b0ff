"""Which commit last changed each path (what `git log -n1 -- PATH` shows), for many paths from one
pass over git's history."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from desk.errors import GitError

if TYPE_CHECKING:
    from desk.storage.git import Git, HistoryStep

_PATHSPEC_MAX = 1000  # a merge's paths named on git's command line; more: diff the whole tree


def first_parent_changes(git: Git, old: str, new: str, wanted: Callable[[str], bool]
                          ) -> tuple[list[HistoryStep], dict[str, str | None]] | None:
    """The commits of `old..new` and each `wanted` path they changed along first parents, with its blob
    at `new`; None when only a rebuild can catch up (`old` gone, or history rewritten)."""
    try:
        steps = list(git.history.walk([f"{old}..{new}"]))
    except GitError:
        return None  # the recorded commit is gone (gc, a re-clone)
    by_sha = {step.sha: step for step in steps}
    chain: list[HistoryStep] = []
    at: str | None = new
    while at is not None and at in by_sha:
        chain.append(by_sha[at])
        at = by_sha[at].parents[0] if by_sha[at].parents else None
    if at != old:
        return None
    # The tree at `new` is the one at `old` plus the first-parent changes, oldest first.
    final: dict[str, str | None] = {}
    for step in reversed(chain):
        for change in step.changes:
            if wanted(change.path):
                final[change.path] = change.new_blob
    return steps, final


def last_commits_since(git: Git, steps: list[HistoryStep], old: str, new: str, paths: set[str]
                        ) -> dict[str, tuple[str, int]]:
    """`last_commits` of `paths` at `new` over the commits of `old..new`; a path that reached
    history before `old` through a side branch (rare) is asked of git on its own."""
    found, waiting = last_commits(git, steps, new, paths)
    waiting.pop(old, None)
    for rest in waiting.values():
        for path in rest:
            last = git.history.last_change(new, path)
            if last is not None:
                found[path] = last
    return found


def last_commits(git: Git, steps: Iterable[HistoryStep], start: str, paths: set[str]
                 ) -> tuple[dict[str, tuple[str, int]], dict[str, set[str]]]:
    """For each of `paths` at `start`: the commit and time `git log -n1 START -- PATH` shows, from one
    pass over `steps` (children before parents), with git's default history simplification (a merge
    passes a path to the first parent it is unchanged against). Returns the answers and, by commit,
    the paths still waiting when `steps` ended."""
    waiting: dict[str, set[str]] = {start: set(paths)} if paths else {}
    found: dict[str, tuple[str, int]] = {}
    for step in steps:
        if not waiting:
            break
        here = waiting.pop(step.sha, None)
        if not here:
            continue
        changed = {c.path for c in step.changes if c.path in here}
        here -= changed
        if here and step.parents:
            _wait(waiting, step.parents[0], here)
        for parent in step.parents[1:]:
            if not changed:
                break
            spec = sorted(changed) if len(changed) <= _PATHSPEC_MAX else []
            differs = {c.path for c in git.worktree.diff_tree(parent, step.sha, spec)}
            same = changed - differs
            if same:
                _wait(waiting, parent, same)
                changed -= same
        for path in changed:
            found[path] = (step.sha, step.time)
    return found, waiting


def _wait(waiting: dict[str, set[str]], commit: str, paths: set[str]) -> None:
    """Add `paths` to those waiting at `commit` (the larger set absorbs the smaller)."""
    there = waiting.get(commit)
    if there is None:
        waiting[commit] = paths
    elif len(there) >= len(paths):
        there |= paths
    else:
        paths |= there
        waiting[commit] = paths
