"""After a merge: settle what the merge drivers left, regenerate derived files, check what came in.

`desk sync` calls `resolve_merge` before it commits its merge; a person's `git pull` runs the
post-merge or post-rewrite hook, `after_merge`: the same settling as one desk commit on top, and a
loud report of anything risky that came in unchecked (a fast-forward runs no pre-commit hook).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desk.errors import ConflictError, Finding
from desk.layout import CONFLICTS_FILE, CONVERSATIONS_DIR, INDEX_FILE, JOURNAL_DIR, DeskFolder
from desk.storage.git import Git
from desk.sync.drivers import clear_pending, driver_for, merge_file, read_pending
from desk.text.times import utc_now

if TYPE_CHECKING:
    from collections.abc import Iterable

    from desk.sync.cases import MergeSides
    from desk.transaction import Transaction


@dataclass
class Settled:
    """What settling one merge did."""

    merged: list[str] = field(default_factory=list)  # paths desk merged itself (git left them unmerged)
    regenerated: list[str] = field(default_factory=list)
    derived: list[str] = field(default_factory=list)  # derived views to render from the merged archive
    cases: list[str] = field(default_factory=list)  # conflict cases opened
    clashes: dict[str, str] = field(default_factory=dict)  # each case opened: what clashed (desk.sync.cases.clash)
    warnings: list[str] = field(default_factory=list)
    commit: str | None = None


def resolve_merge(desk: DeskFolder, git: Git, *, now: dt.datetime | None = None) -> Settled:
    """In a merge in progress: merge every unmerged path with its driver, open the cases the
    drivers recorded, and regenerate MEMORY.md from the merged memory files, all staged.

    ConflictError (the caller aborts the merge) when a path is not desk's to merge."""
    settled = Settled()
    unmerged = git.merging.unmerged()
    stage_blobs = {blob for stages in unmerged.values() for _mode, blob in stages.values()}
    blobs = git.objects.read_blobs(stage_blobs)
    pending: list[dict[str, Any]] = []
    keep = "theirs" if git.merging.stopped() == "rebase" else "ours"  # this clone's side (git swaps them in a rebase)
    for path, stages in sorted(unmerged.items()):
        driver = driver_for(path)
        base, ours, theirs = (blobs[stages[s][1]] if s in stages else None for s in (1, 2, 3))
        if driver is None:
            raise ConflictError(f"{path} changed on both sides and is not a file desk can merge",
                                hint="merge it by hand (`git pull`, resolve, commit), then sync again")
        result = merge_file(driver, path, base, ours, theirs, keep)
        if not result.ok:
            raise ConflictError(f"{path} changed on both sides in a way desk cannot merge safely "
                                f"(the {driver} merge refused)",
                                hint=f"look at both versions (`git log --merge -- {path}`), merge by hand, "
                                     "then sync again")
        git.merging.stage_file(path, result.data)
        pending += result.pending
        settled.merged.append(path)
    pending = read_pending(desk.git_dir) + pending
    # Against the staged MEMORY.md (what the merge commits), not the work tree's copy.
    writes = _cases_and_index(desk, pending, now, settled, git.objects.read_blobs([f":{INDEX_FILE}"]).get(f":{INDEX_FILE}"),
                              _stopped_sides(git))
    for path, data in writes.items():
        git.merging.stage_file(path, data)
    settled.derived = sorted({p["path"] for p in pending if p.get("type") == "regenerate"})
    clear_pending(desk.git_dir)
    return settled


def _stopped_sides(git: Git) -> MergeSides:
    """The two sides of the merge or rebase in progress: HEAD and MERGE_HEAD (or REBASE_HEAD)."""
    from desk.sync.cases import MergeSides  # the cases' code loads only when a merge stopped

    operation = git.merging.stopped() or "merge"
    other = "REBASE_HEAD" if operation == "rebase" else "MERGE_HEAD"
    return MergeSides(operation, git.refs.object_id("HEAD"), git.refs.object_id(other))


def _finished_sides(desk: DeskFolder) -> MergeSides:
    """The sides of the merge or rebase git just finished (a person's `git pull`): a merge commit's
    two parents; a rebase left no second side to name."""
    from desk.sync.cases import MergeSides

    parents = (desk.git.refs.object_id("HEAD^1"), desk.git.refs.object_id("HEAD^2"))
    if parents[1] is not None:
        return MergeSides("merge", *parents)
    return MergeSides("rebase")


def _cases_and_index(desk: DeskFolder, pending: list[dict[str, Any]], now: dt.datetime | None,
                     settled: Settled, current_index: bytes | None | bool = False,
                     sides: MergeSides | None = None) -> dict[str, bytes]:
    """conflicts.json with a case per pending record, and MEMORY.md regenerated: what changed."""
    from desk.digest.conflicts import parse_queue, render_queue
    from desk.formats.memory_index import render_index
    from desk.gate.entries import entries_in_worktree
    from desk.scopes.prefs import scope_projections
    from desk.sync.cases import add_cases

    writes: dict[str, bytes] = {}
    settled.warnings += [f"desk: a preference changed differently on both sides: {p['path']} keeps the later "
                         f"change; the other is in history (`desk pref history {p['key']}`)"
                         for p in pending if p.get("type") == "pref"]
    case_items = [p for p in pending if p.get("type") == "case"]
    if case_items:
        cases = parse_queue(_current(desk, CONFLICTS_FILE))
        settled.clashes = add_cases(cases, case_items, desk.desk_id, now or utc_now(),
                                    sides if sides is not None else _finished_sides(desk))
        settled.cases = list(settled.clashes)
        if settled.cases:
            writes[CONFLICTS_FILE] = render_queue(cases)
    # and each project's MEMORY.md and each user scope's PREFERENCES.md (docs/scopes.md)
    made = {INDEX_FILE: render_index(entries_in_worktree(desk).values()),
            **scope_projections(desk, now or utc_now())}
    for path, data in made.items():
        if data != (current_index if path == INDEX_FILE and current_index is not False else _current(desk, path)):
            writes[path] = data
            settled.regenerated.append(path)
    return writes


def _current(desk: DeskFolder, path: str) -> bytes | None:
    return desk.path(path).read_bytes() if desk.path(path).is_file() else None


def regenerate_derived(desk: DeskFolder, paths: list[str]) -> dict[str, bytes]:
    """The derived files among `paths` rendered again from the merged archive (and history)."""
    from desk.archive.conversations import render_views
    from desk.digest.run import regenerate_journal

    writes: dict[str, bytes] = {}
    days: dict[str, dict[str, bytes]] = {}
    for path in paths:
        data: bytes | None = None
        if path.startswith(CONVERSATIONS_DIR + "/"):
            day = path.split("/")[1]
            if day not in days:
                try:
                    days[day] = render_views(desk, date=day)[0]
                except Exception:  # noqa: BLE001 - a folder that is not a day: leave the file alone
                    days[day] = {}
            data = days[day].get(path)
        elif path.startswith(JOURNAL_DIR + "/"):
            data = regenerate_journal(desk, path)
        if data is not None and _current(desk, path) != data:
            writes[path] = data
    return writes


def sync_message(subject: str, actor: str = "user", cases: Iterable[str] = (), body: str | None = None) -> str:
    """A desk sync commit's message, with its trailers."""
    from desk.transaction import commit_message

    return commit_message(subject, {"Desk-Op": "sync", "Desk-Actor": actor, "Desk-Cases": " ".join(cases) or None},
                          body)


def finish_locked(tx: Transaction, regenerate: list[str], *, actor: str) -> str | None:
    """Commit the derived files `regenerate` names, rendered from the merged archive (one commit);
    the caller holds the desk lock."""
    writes = regenerate_derived(tx.desk, regenerate) if regenerate else None
    if not writes:
        return None
    return tx.commit(dict(writes), sync_message(
        f"sync: regenerate {len(writes)} derived file{'s' if len(writes) != 1 else ''}", actor))


def regenerate_index(tx: Transaction, now: dt.datetime | None, index: bytes | None, actor: str) -> str | None:
    """Commit MEMORY.md regenerated from memory/ (or `index`, when the caller has it) when it
    differs (after a fast-forward or a rebase); not when it or memory/ has a person's edits."""
    if index is None:
        index = _cases_and_index(tx.desk, [], now, Settled()).get(INDEX_FILE)
    elif _current(tx.desk, INDEX_FILE) == index:
        index = None
    if index is None or tx.desk.git.worktree.dirty([INDEX_FILE, "memory/"]):
        return None
    return tx.commit({INDEX_FILE: index}, sync_message("sync: regenerate MEMORY.md", actor))


def hook_after_merge(root: Path) -> list[str]:
    """The post-merge / post-rewrite hook: settle, commit, and the lines to print."""
    from desk.layout import is_desk

    if not is_desk(root):
        return []
    desk = DeskFolder(root)
    settled = after_merge(desk, desk.git.refs.object_id("ORIG_HEAD"))
    lines = list(settled.warnings)
    if settled.commit:
        lines.append(f"desk: settled the merge in commit {settled.commit[:12]}: "
                     + ", ".join(settled.regenerated or ["conflict queue"]))
    for case, what in settled.clashes.items():
        lines.append(f"desk: {what}: conflict case {case} "
                     "(`desk conflicts` lists it; the file keeps one version, the other is a candidate)")
    return lines


def after_merge(desk: DeskFolder, old: str | None, *, now: dt.datetime | None = None) -> Settled:
    """What the post-merge and post-rewrite hooks run after a person's `git pull`/`git rebase`:
    open the cases the drivers recorded, regenerate MEMORY.md and the derived files, commit them
    in one desk commit, and warn about what arrived unchecked since `old` (ORIG_HEAD)."""
    from desk.transaction import transaction

    settled = Settled()
    head = desk.git.refs.head()
    if old and head and old != head:
        settled.warnings = gate_warnings(desk, old, head, now) + incoming_warnings(desk.git, old, head)
        from desk.sync.incoming import incoming_secrets

        settled.warnings += [s.warning() for s in incoming_secrets(desk, desk.git.refs.rev_list(head, old))]
    # git runs post-rewrite before it removes the rebase's state folder: the rebase is done.
    with transaction(desk, stopped=True) as tx:
        settle_locked(tx, settled, now)
    return settled


def settle_locked(tx: Transaction, settled: Settled, now: dt.datetime | None = None,
                  derived: list[str] | None = None) -> None:
    """After a merge or rebase git finished: the cases the drivers recorded, MEMORY.md and the
    derived files (those the drivers named, and `derived`) in one desk commit (`settled.commit`);
    files with a person's uncommitted edits are left alone, with a warning. Under the desk lock."""
    desk = tx.desk
    pending = read_pending(desk.git_dir)
    regenerate = sorted({*(p["path"] for p in pending if p.get("type") == "regenerate"), *(derived or [])})
    writes: dict[str, bytes | None] = dict(_cases_and_index(desk, pending, now, settled))
    writes.update(regenerate_derived(desk, regenerate))
    settled.regenerated = sorted({*settled.regenerated, *(p for p in writes if p != CONFLICTS_FILE)})
    if writes:
        dirty = desk.git.worktree.dirty(sorted(writes))
        if dirty:
            settled.warnings.append(
                f"desk: left {', '.join(dirty)} alone: they have uncommitted changes; run `desk reindex` "
                "and `desk conversations render` after committing them")
            writes = {p: d for p, d in writes.items() if p not in dirty}
    if writes:
        settled.commit = tx.commit(writes, sync_message(
            "sync: settle the merge (index, conflict cases, derived files)", cases=settled.cases))
    clear_pending(desk.git_dir)


def fast_forward_check(desk: DeskFolder, old: str, new: str, now: dt.datetime | None = None
                       ) -> tuple[list[Finding], bytes | None]:
    """The gate's findings on moving HEAD from `old` to `new` (desk.gate.validate.validate_range),
    without `index-stale`, and the MEMORY.md to commit after it when `new`'s is stale (None when it
    is exact): computed from the change, so no memory file outside it is parsed."""
    from desk.gate.validate import validate_range

    report, index = validate_range(desk, old, new, now=now)
    stale = any(f.rule == "index-stale" for f in report.findings)
    return [f for f in report.findings if f.rule != "index-stale"], index if stale else None


def gate_warnings(desk: DeskFolder, old: str, new: str, now: dt.datetime | None = None) -> list[str]:
    """What a person's `git pull` brought that the gate refuses, loudly, with what to do: a
    fast-forward runs no hook, so git took it unchecked and a post-merge hook cannot undo it."""
    errors = [f for f in fast_forward_check(desk, old, new, now)[0] if f.severity == "error"]
    if not errors:
        return []
    return ([f"desk: ERROR: the pull brought {len(errors)} problem{'s' if len(errors) != 1 else ''} "
             "desk's gate refuses (git runs no hook on a fast-forward, so nothing stopped them):"]
            + [f"desk: ERROR:   {f}" for f in errors]
            + [f"desk: ERROR: fix them and commit (`desk doctor` lists them), or undo the pull with "
               f"`git reset --keep {old[:12]}`; `desk sync` refuses such commits before they land"])


def incoming_warnings(git: Git, old: str, new: str) -> list[str]:
    """What arrived between `old` and `new` without passing desk's hooks: symbolic links, and
    commits breaking the message rules (SOUL.md changed by the assistant without a person's
    authorisation, a digest touching NOW.md), each with what to do."""
    from desk.gate.rules import check_message

    warnings = []
    for change in git.worktree.diff_tree(old, new):
        if change.new_mode == "120000":
            warnings.append(f"desk: WARNING: {change.path} arrived as a symbolic link; desk never follows "
                            f"it, and the hooks refuse it. Remove it: `git rm {change.path}` and commit "
                            "(then find who committed it: `git log -- " + change.path + "`)")
    from desk.text.secrets import redact  # a subject is shown as it came: it may hold a secret

    for commit in git.history.commits(git.refs.rev_list(new, old)):
        for finding in check_message(commit.message, commit.paths):
            warnings.append(f"desk: WARNING: commit {commit.sha[:12]} ({redact(commit.subject)[0]}) arrived unchecked: "
                            f"{finding}. Review it (`git show {commit.sha[:12]}`); undo it with "
                            f"`git revert {commit.sha[:12]}` if nobody allowed it")
    return warnings
