"""A person's `git pull` that stopped on a conflict git cannot hand to a merge driver (and a
desk sync killed while git merged, which `desk sync --continue` undoes: desk.storage.integration).

A memory deleted on one side and changed on the other stops `git pull` with no driver or hook run.
`desk sync --continue` settles what git left as `desk sync` would have (desk.sync.settle.resolve_merge),
checks it with the gate and concludes the merge (or the rebase). Until then every desk command says
what to run (`stopped_notice`), and desk's own commits wait (exit 4).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from desk.errors import ConflictError, RejectedError, UsageError
from desk.layout import DeskFolder
from desk.storage.integration import left_behind
from desk.sync.drivers import SYNC_ENV, driver_for
from desk.sync.run import SyncResult
from desk.sync.settle import Settled, finish_locked, resolve_merge, settle_locked, sync_message

if TYPE_CHECKING:
    from desk.storage.git import Git

REBASE_STEPS = 10_000  # commits one `--continue` replays at most (a rebase stops once per conflicted commit)


def stopped_notice(desk: DeskFolder) -> str | None:
    """What to run, when a person's merge or rebase is stopped in this clone; None otherwise."""
    kind = desk.git.merging.stopped()
    if kind is None or left_behind(desk.git_dir):
        return None  # desk sync's own merge, killed half way: this command's transaction undoes it
    unmerged = sorted(desk.git.merging.unmerged())
    undo = f"`git {kind} --abort` undoes the pull"
    named = ", ".join(unmerged[:5]) + (f" and {len(unmerged) - 5} more" if len(unmerged) > 5 else "")
    where = f" on {named}" if unmerged else ""
    by_hand = [p for p in unmerged if driver_for(p) is None]
    if by_hand:
        return (f"a git {kind} stopped in this clone{where}; resolve {', '.join(by_hand[:5])} by hand "
                f"(edit, `git add`), then run `desk sync --continue` to settle desk's files and finish "
                f"it ({undo})")
    return (f"a git {kind} stopped in this clone{where}; run `desk sync --continue` to settle it (a memory "
            f"deleted on one side and changed on the other keeps the changed version and opens a conflict "
            f"case) and finish the {kind} ({undo})")


def continue_stopped(desk: DeskFolder, *, now: dt.datetime | None = None) -> SyncResult:
    """`desk sync --continue`: settle and finish the stopped merge or rebase; what it did.

    UsageError when nothing is stopped; ConflictError when a file is not desk's to merge (the
    merge stays stopped); RejectedError when the settled result breaks the rules."""
    from desk.transaction import transaction

    git = desk.git.with_env(**{SYNC_ENV: "1"})  # the post-merge/post-rewrite hooks stand aside
    if left_behind(desk.git_dir):  # desk sync's own merge, killed half way: undone, not finished
        with transaction(desk, stopped=True) as tx:
            undone = tx.settled_sync
        return SyncResult("", git.refs.current_branch() or "HEAD", status="sync-undone",
                          merged=undone.restored if undone else [],
                          warnings=[undone.message] if undone else [])
    kind = git.merging.stopped()
    if kind is None:
        raise UsageError("nothing to continue: no merge or rebase is stopped in this clone",
                         hint="`desk sync` fetches and merges; `git status` shows the clone's state")
    result = SyncResult("", git.refs.current_branch() or "HEAD", status=f"{kind}-finished")
    with transaction(desk, stopped=True) as tx:
        start = git.refs.head()
        if kind == "merge":
            settled = _settle(desk, git, kind, now)
            subject, _, body = git.merging.merge_message().partition("\n")
            sha = git.merging.commit_merge(sync_message(subject, cases=settled.cases, body=body.strip() or None))
            result.commits.append(sha)
            derived = settled.derived
            _count(result, settled)
        else:
            derived = []
            for _step in range(REBASE_STEPS):
                settled = _settle(desk, git, kind, now)
                derived += settled.derived
                _count(result, settled)
                if git.merging.rebase_continue():
                    break
        head = git.refs.head()
        if kind == "merge":
            more = finish_locked(tx, sorted(set(derived)), actor="user")
        else:  # cases the drivers recorded on the commits that replayed cleanly, the index, the views
            after = Settled()
            settle_locked(tx, after, now, sorted(set(derived)))
            more = after.commit
            _count(result, after)
        if more is not None:
            result.commits.append(more)
            result.regenerated = sorted({*result.regenerated,
                                         *(c.path for c in git.worktree.diff_tree(head or more, more))})
        if start is not None and head is not None:
            result.merged = sorted({c.path for c in git.worktree.diff_tree(start, head)} - set(result.regenerated))
    return result


def _settle(desk: DeskFolder, git: Git, kind: str, now: dt.datetime | None) -> Settled:
    """Merge every unmerged path with desk's driver and check the staged result with the gate."""
    from desk.gate.validate import validate_staged

    try:
        settled = resolve_merge(desk, git, now=now)
    except ConflictError as exc:
        raise ConflictError(f"{exc.message}; the {kind} is still stopped",
                            hint=f"resolve it by hand (edit, `git add`), then run `desk sync --continue` "
                                 f"again; or undo the pull with `git {kind} --abort`") from None
    report, _ = validate_staged(desk, git)
    if not report.ok:
        raise RejectedError(
            f"the settled {kind} breaks desk's rules; nothing was committed (desk's resolutions are "
            "staged):\n" + "\n".join(str(f) for f in report.errors),
            hint=f"fix those files and `git add` them, then run `desk sync --continue` again; or undo "
                 f"the pull with `git {kind} --abort`")
    return settled


def _count(result: SyncResult, settled: Settled) -> None:
    result.cases += settled.cases
    result.clashes.update(settled.clashes)
    result.warnings += settled.warnings
    result.regenerated += [p for p in settled.regenerated if p not in result.regenerated]
