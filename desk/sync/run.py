"""`desk sync` and `desk clone`: one desk on many machines, history never rewritten.

`sync` under the desk lock: fetch the remote branch (into a private ref, so nothing moves before
it is checked), refuse a remote that rewrote history (naming the commits that would be lost),
checkpoint the archive's growth, integrate by fast-forward or by a merge whose every path desk
settles (the drivers of desk.sync.drivers; a memory changed on both sides becomes a conflict case),
check the merge with the same gate as every commit, commit it, regenerate derived views, and push,
never forced. A push rejected because the remote moved meanwhile fetches and integrates again.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from desk.errors import ConflictError, DeskError, RejectedError, UsageError
from desk.layout import CONFIG_PATH, INDEX_FILE, DeskFolder, is_attributes_file
from desk.storage.crash import crash_point
from desk.storage.integration import clear_integration, integrating, mark_integration, settle_after_failure
from desk.sync import remote as remotes
from desk.sync.drivers import SYNC_ENV
from desk.sync.settle import (Settled, fast_forward_check, finish_locked, incoming_warnings, regenerate_index,
                              resolve_merge, sync_message)

if TYPE_CHECKING:
    from desk.errors import Finding
    from desk.storage.git import Answer, Git
    from desk.transaction import Transaction

PUSH_ATTEMPTS = 3  # integrate-and-push rounds when the remote keeps moving


@dataclass
class SyncResult:
    """What one `desk sync` did; `.to_json()` is `desk sync --json`."""

    remote: str  # "" for desk sync --continue (the person's pull named its own)
    branch: str
    actor: str = "user"  # who asked for the sync: the Desk-Actor of every commit it makes
    status: str = "up-to-date"  # up-to-date | fast-forward | merged | pushed-only (desk sync);
    # merge-finished | rebase-finished | sync-undone (desk sync --continue, desk.sync.stopped)
    fetched: int = 0  # commits that were new to this clone
    pushed: int = 0  # commits the remote did not have
    merged: list[str] = field(default_factory=list)  # files the integration changed here
    regenerated: list[str] = field(default_factory=list)
    cases: list[str] = field(default_factory=list)  # conflict cases opened
    clashes: dict[str, str] = field(default_factory=dict)  # each case opened: what clashed
    commits: list[str] = field(default_factory=list)  # commits desk made (checkpoint, merge, derived)
    attempts: int = 1
    pushed_to: str | None = None  # the remote's branch commit after the push
    warnings: list[str] = field(default_factory=list)
    # each incoming commit that adds a secret (desk.sync.incoming), even one a later commit removed
    secrets: list[dict[str, object]] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


def sync(desk: DeskFolder, remote: str | None = None, *, push: bool = True,
         progress: remotes.Progress | None = None, now: dt.datetime | None = None,
         actor: str = "user") -> SyncResult:
    """`desk sync` (the module's docstring); `actor` (who asked) is in every commit it makes."""
    from desk.transaction import refuse_stopped, transaction

    refuse_stopped(desk)  # before the branch check: a stopped rebase has HEAD detached
    name = remote or "origin"
    url = desk.git.config.remote_url(name)
    if url is None:
        raise remotes.no_remote(name)
    remotes.refuse_embedded_password(url)
    branch = desk.git.refs.current_branch()
    if branch is None:
        raise UsageError("HEAD is detached; desk sync integrates a branch",
                         hint="check out the desk's branch first (`git switch main`)")
    with closing(remotes.RemoteSession(desk.root)) as remote_session, transaction(desk) as tx:
        result = _sync_locked(desk, tx, remote_session, name, branch, actor, push=push, progress=progress, now=now)
        if _reviews(desk):  # review mode's proposals travel too (docs/review.md), never forced
            from desk.memory.review import REVIEW_REFS

            result.warnings += [f"proposals: {words}" for words in desk.git.refs.exchange(name, REVIEW_REFS, push=push)]
    return result


def _reviews(desk: DeskFolder) -> bool:
    """Whether desk.json sets review mode: read as JSON, not through the validating loader (the
    gate validates the setting when it is committed), so a sync with nothing to do loads no pydantic."""
    try:
        return bool(json.loads(desk.read(CONFIG_PATH)).get("review"))
    except (OSError, ValueError, AttributeError):
        return False


def _sync_locked(desk: DeskFolder, tx: Transaction, remote: remotes.RemoteSession, name: str, branch: str,
                 actor: str, *,
                 push: bool, progress: remotes.Progress | None, now: dt.datetime | None) -> SyncResult:
    result = SyncResult(name, branch, actor)
    git = desk.git.with_env(**{SYNC_ENV: "1"})
    tracking = f"refs/remotes/{name}/{branch}"
    for attempt in range(1, PUSH_ATTEMPTS + 1):
        result.attempts = attempt
        advertised = git.merging.start_ls_remote(name, branch)
        archive = _start_archive_check(desk) if attempt == 1 else None  # runs beside ls-remote
        incoming, known, head = _fetch(git, remote, name, branch, tracking, advertised, progress)
        if incoming is not None and known is not None and not git.refs.is_ancestor(known, incoming):
            lost = git.refs.rev_list(known, incoming)
            from desk.text.secrets import redact  # a subject may hold a secret

            raise ConflictError(
                f"{name}/{branch} was rewritten (a forced push): it no longer holds "
                f"{len(lost)} commit{'s' if len(lost) != 1 else ''} this clone saw there: "
                + ", ".join(f"{c.sha[:12]} {redact(c.subject)[0]}" for c in git.history.commits(lost[:10]))
                + (" ..." if len(lost) > 10 else "") + "; nothing was changed",
                hint="desk will not integrate rewritten history; see docs/sync.md, \"When the "
                     "remote rewrote history\", to restore the commits or accept the rewrite")
        if archive is not None and _checkpoint(tx, result, archive):
            head = git.refs.head()
        if incoming is not None:
            head = _integrate(desk, git, tx, head, incoming, result, now)
            if incoming != known:
                git.refs.update_ref(tracking, incoming)  # only once it is integrated (or already held)
        if not push or head is None or head == incoming:
            break
        ahead = git.refs.rev_list(head, incoming)
        if not ahead:
            break
        if remote.push(name, branch, progress):
            result.pushed += len(ahead)
            result.pushed_to = head
            git.refs.update_ref(tracking, head)
            if result.status == "up-to-date":
                result.status = "pushed-only"
            break
    else:
        raise ConflictError(f"{name} kept moving: the push was rejected {PUSH_ATTEMPTS} times; "
                            "what was merged here is committed locally",
                            hint="run `desk sync` again in a moment")
    return result


def _fetch(git: Git, remote: remotes.RemoteSession, name: str, branch: str, tracking: str,
           advertised_answer: Answer[str | None],
           progress: remotes.Progress | None) -> tuple[str | None, str | None, str | None]:
    """(the remote branch's commit (None for an empty remote), this clone's last sight of it, HEAD).

    `git ls-remote` asks first (`advertised_answer`, started by the caller; no objects move): when
    the advertised commit is already held here (this clone's tracking ref, HEAD or an ancestor of
    HEAD), nothing is fetched and GitPython is never imported. Otherwise GitPython fetches it with
    progress into a private ref.
    """
    from desk.errors import GitError

    try:
        advertised = advertised_answer.result()
    except GitError as exc:
        words = " ".join(exc.message.split(": ", 1)[-1].split())[:400]
        raise DeskError(f"cannot fetch from {name}: {words}; nothing was changed",
                        hint=remotes.UNREACHABLE_HINT) from None
    known, head = git.refs.ref(tracking), git.refs.head()
    if advertised is None:
        return None, known, head
    if advertised in (known, head) or (head and git.objects.object_ids([advertised]).get(advertised)
                                        and git.refs.is_ancestor(advertised, head)):
        return advertised, known, head
    incoming = remote.fetch(name, branch, progress)
    if known is not None and git.refs.object_id(tracking) != known:
        git.refs.update_ref(tracking, known)  # git's opportunistic update: not before the checks
    return incoming, known, head


def _start_archive_check(desk: DeskFolder) -> Answer[list[str]] | None:
    """Whether the archive grew since HEAD, asked now (None when there is nothing to ask: no
    archive file, or no commit yet, when `_checkpoint` has nothing to compare with)."""
    from desk.layout import ARCHIVE_DIR

    try:
        has_files = any(desk.path(ARCHIVE_DIR).iterdir())
    except (FileNotFoundError, NotADirectoryError):
        has_files = False
    if not has_files or desk.git.refs.head() is None:
        return None
    return desk.git.worktree.start_changed_in_worktree(ARCHIVE_DIR)


def _checkpoint(tx: Transaction, result: SyncResult, archive: Answer[list[str]]) -> bool:
    """Commit pending archive growth (True when it did); nothing is read when git sees no archive
    file changed since HEAD (its stat cache answers, in two git processes: `archive`)."""
    if not archive.result():
        return False
    from desk.archive.checkpoint import checkpoint_locked

    done = checkpoint_locked(tx, actor=result.actor)
    if done.commit:
        result.commits.append(done.commit)
    return done.commit is not None


def _integrate(desk: DeskFolder, git: Git, tx: Transaction, head: str | None, incoming: str,
               result: SyncResult, now: dt.datetime | None) -> str | None:
    """Bring `incoming` into HEAD: nothing, a fast-forward, or a merge desk settles and checks.
    HEAD after it."""
    if head is not None and (head == incoming or git.refs.is_ancestor(incoming, head)):
        return head  # nothing to integrate: neither the gate nor the merge code is loaded
    from desk.gate.validate import validate_staged

    new = git.refs.rev_list(incoming, head)
    from desk.sync.incoming import incoming_secrets

    found = incoming_secrets(desk, new)  # named before integrating: a refusal by the gate leaves them named too
    result.secrets += [s.to_json() for s in found]
    result.warnings += [s.warning() for s in found]
    if head is None or git.refs.is_ancestor(head, incoming):
        index = _gate_fast_forward(desk, head, incoming, result, now) if head is not None else None
        with integrating(git, "fast-forward", head, incoming), _interrupt_after() as interrupted:
            git.merging.fast_forward(incoming)  # git moves the work tree file by file: a Ctrl-C waits for it
        if interrupted:
            raise KeyboardInterrupt  # HEAD and the work tree are at `incoming`, whole: the next sync goes on
        result.fetched += len(new)
        result.status = "fast-forward"
        if head is not None:
            result.warnings += incoming_warnings(git, head, incoming)
            result.merged += sorted({c.path for c in git.worktree.diff_tree(head, incoming)})
        # A commit made with --no-verify elsewhere may have left MEMORY.md stale: the gate said so
        # and computed the right one from the change (a first sync regenerates it from memory/).
        fixed = regenerate_index(tx, now, index, result.actor) if head is None or index is not None else None
        if fixed is not None:
            result.commits.append(fixed)
            result.regenerated.append(INDEX_FILE)
        return git.refs.head()
    result.fetched += len(new)
    _refuse_incoming_attributes(git, head, incoming, result)  # before git merges with them
    _make_merge_drivers_safe(desk, result)
    subject = f"sync: merge {result.remote}/{result.branch}"
    mark_integration(git, "merge", head, incoming)  # a kill from here to the commit: undone
    try:
        with _interrupt_after() as interrupted:
            try:
                git.merging.merge(incoming, sync_message(subject, result.actor))
            except ConflictError as exc:
                if "unrelated histories" not in exc.message:
                    raise
                # Not "commit or discard local changes": the remote holds another desk (its own
                # `desk init`) or another repository, and nothing here can make them one history.
                raise DeskError(f"{result.remote}/{result.branch} shares no history with this desk: it "
                                "holds another desk or another repository; nothing was changed",
                                hint="check the address (`git remote -v`); a desk syncs with clones of "
                                     "itself: `desk clone URL` makes one, and two separate desks can be "
                                     "brought together with `desk export jsonl` and `desk import jsonl`"
                                ) from None
        crash_point("sync-merged")  # MERGE_HEAD and the merged files there, nothing committed
        if interrupted:
            raise KeyboardInterrupt  # git finished; the except below undoes its merge
        settled: Settled = resolve_merge(desk, git, now=now)
        report, _regenerated = validate_staged(desk, git)
        if not report.ok:
            raise RejectedError(
                "the merged desk breaks the rules; nothing was merged:\n"
                + "\n".join(str(f) for f in report.findings if f.severity == "error"),
                hint=f"fix the other clone's commits ({result.remote}/{result.branch}) or merge by hand "
                     "(`git merge " + f"{result.remote}/{result.branch}`), then sync again")
        sha = git.merging.commit_merge(sync_message(subject, result.actor, settled.cases))
    except BaseException:
        git.merging.merge_abort()
        settle_after_failure(git)  # puts back what the abort left, and clears the record
        raise
    clear_integration(git)
    result.status = "merged"
    result.commits.append(sha)
    result.merged += sorted({c.path for c in git.worktree.diff_tree(head, sha)} - set(settled.regenerated))
    result.cases += settled.cases
    result.clashes.update(settled.clashes)
    result.warnings += settled.warnings
    result.regenerated += settled.regenerated
    derived = finish_locked(tx, settled.derived, actor=result.actor)
    if derived is not None:
        result.commits.append(derived)
        result.regenerated += sorted(c.path for c in git.worktree.diff_tree(sha, derived))
    return git.refs.head()


@contextmanager
def _interrupt_after() -> Iterator[list[int]]:
    """Hold a Ctrl-C until the block ends (the list says whether one came): a KeyboardInterrupt
    mid-merge would kill git with half the files written and no MERGE_HEAD to undo them by. Only
    the main thread can hold signals (the API may sync from another: there nothing is held)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    came: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: came.append(signum))
    try:
        yield came
    finally:
        signal.signal(signal.SIGINT, previous)


def _gate_fast_forward(desk: DeskFolder, head: str, incoming: str, result: SyncResult,
                       now: dt.datetime | None) -> bytes | None:
    """The gate over the tree a fast-forward would bring, before HEAD moves (a fast-forward runs
    no hook). RejectedError, with nothing changed, when it breaks a rule; a stale MEMORY.md is
    not a refusal: the right one is returned, and sync commits it right after."""
    findings, index = fast_forward_check(desk, head, incoming, now)
    target = f"{result.remote}/{result.branch}"
    _refuse([f for f in findings if f.severity == "error"],
            f"{target} brings commits that break desk's rules (made with --no-verify, or by an older "
            "desk); nothing was integrated",
            f"fix them in the clone that made them (`desk validate --all` there) and push, then "
            f"sync again; or take them as they are with `git merge --ff-only {target}` "
            "(`git fetch` first) and fix them here (`desk doctor` lists what is wrong)")
    return index


def _refuse(findings: list[Finding], message: str, hint: str) -> None:
    """RejectedError (exit 3) with `message` and each of `findings`, when there are any."""
    if findings:
        error = RejectedError(message + ":\n" + "\n".join(str(f) for f in findings), hint=hint)
        error.details["findings"] = [f.to_json() for f in findings]
        raise error


def _refuse_incoming_attributes(git: Git, head: str, incoming: str, result: SyncResult) -> None:
    """RejectedError (exit 3), before the merge, when the other side's `.gitattributes` give desk's
    files a driver, filter, encoding or line-end conversion (desk.gate.attributes): git would merge
    this very change with them."""
    from desk.gate.attributes import tree_attribute_findings

    if not any(is_attributes_file(c.path) for c in git.worktree.diff_tree(head, incoming)):
        return
    target = f"{result.remote}/{result.branch}"
    _refuse([f for f in tree_attribute_findings(git, incoming) if f.severity == "error"],
            f"{target} brings .gitattributes lines desk refuses; nothing was merged",
            f"remove them in the clone that made them and push, then sync again (`git log -p "
            f"{target} -- .gitattributes` shows who added them)")


def clone(url: str, path: Path | None = None, *, progress: remotes.Progress | None = None) -> tuple[Path, list[str]]:
    """Clone a desk, install its hooks and merge drivers, make the clone's id; (path, what was set up)."""
    from desk.archive.store import clone_id
    from desk.layout import is_desk

    remotes.refuse_embedded_password(url)
    if path is None:
        stem = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git") or "desk"
        path = Path(stem)
    path = path.expanduser().resolve()
    if path.exists() and not path.is_dir():  # was git's "Not a directory" with a write-failure hint
        raise UsageError(f"{path} exists and is not a folder", hint="choose a new or empty folder")
    if path.exists() and any(path.iterdir()):
        raise UsageError(f"{path} exists and is not empty", hint="choose a new or empty folder")
    created = not path.exists()
    try:
        remotes.clone(url, path, progress)
        _check_out_if_safe(url, path)
    except DeskError:  # refused (a SHA-256 repository, a hostile tree) or failed: leave the folder as it was
        import shutil

        if created:
            shutil.rmtree(path, ignore_errors=True)
        elif path.is_dir():
            for child in path.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
        raise
    if not is_desk(path):
        import shutil

        if created:
            shutil.rmtree(path, ignore_errors=True)  # leave nothing behind for a refused clone
        start = (f"run `desk init {path} --allow-nonempty` there" if path.exists() else
                 f"`git clone {url} {path}`, then `desk init {path} --allow-nonempty`")  # the folder is gone
        raise DeskError(f"{url} is a git repository but not a desk (no .system/desk.json); nothing was kept"
                        if not path.exists() else
                        f"cloned {url} into {path}, but it is not a desk (no .system/desk.json)",
                        hint=f"check the address; to make that repository a desk, {start}")
    desk = DeskFolder(path)
    head = desk.git.refs.head()
    done = install_merge_setup(desk)
    if desk.git.refs.head() != head:
        # An older desk gained its `-text` pins: files core.autocrlf checked out with CRLF are
        # written again as committed (a fresh clone holds nothing of anyone's to lose).
        desk.git.merging.check_out_head()
    clone_id(desk)
    return path, done


def _make_merge_drivers_safe(desk: DeskFolder, result: SyncResult) -> None:
    """Merge drivers written by an older desk start Python with the work tree on its path, where
    the merge about to run may have put a planted module: rewrite them (.git/config only) first."""
    from desk.formats.hook_files import read_text_or_empty, unsafe_drivers

    if unsafe_drivers(read_text_or_empty(desk.git.git_dir() / "config")):
        from desk.setup.hooks import write_merge_drivers

        write_merge_drivers(desk.git)
        result.warnings.append("desk's merge drivers were rewritten to start Python without the work tree on "
                               "its path (they were written by an older desk); run `desk hooks install` to "
                               "update the hooks too")


def _check_out_if_safe(url: str, path: Path) -> None:
    """Check out the clone's HEAD unless its tree holds what acts on this machine as soon as desk
    works in it (desk.gate.clone_check): then RejectedError (exit 3) naming each file, and the
    caller keeps nothing."""
    from desk.gate.clone_check import tree_refusals
    from desk.storage.git import Git

    git = Git(path)
    if git.refs.head() is None:
        return  # an empty remote: nothing to check out (and not a desk)
    _refuse(tree_refusals(git), f"{url} holds what desk refuses in a clone (committed with --no-verify, or by an "
            "older desk); nothing was kept",
            "fix it in a clone that has it (`desk validate --all` there names the same) and push, then "
            "clone again; to look at it as it is, `git clone` it (desk never reads through a link)")
    git.merging.check_out_head()


def install_merge_setup(desk: DeskFolder) -> list[str]:
    """The hooks and the merge drivers (in .git/config, which git never carries), and
    .gitattributes when the desk has none. What was done, one line each."""
    from desk.setup.hooks import install

    done = install(desk.root)
    return ([f"hook {what}: {action}" for what, action in done.actions.items()]
            + [f"merge driver {what}: {action}" if what.startswith("desk-") else f"{what}: {action}"
               for what, action in done.merge_drivers.items()])
