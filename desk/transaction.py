"""One mutation, one commit: the lock, the dirty-file check, the plumbing commit, crash markers, recovery.

Under the desk lock, `transaction(desk)` refuses files with a person's uncommitted edits, runs the
gate on the content, builds the commit in desk's private index, then under git's index lock writes
the files, moves the branch by compare-and-swap and refreshes the person's index for those paths.
A pending-mutation marker in `.git/` lets the next mutation finish or undo one a crash stopped.
A plain `git commit` that read the index before desk's commit landed writes it back afterwards:
desk records what it published and heals those entries (`stale_write_backs`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from desk.errors import ConflictError, DeskError, InvalidFileError
from desk.gate.installed_hooks import only_desk_hooks
from desk.layout import ARCHIVE_PREFIX, DeskFolder
from desk.layout import PUBLISHED_RECORD as PUBLISHED_FILE  # in .git/: the paths desk's last commits changed
from desk.storage.atomic import atomic_write, remove, write_derived
from desk.storage.crash import crash_point
from desk.storage.git import IndexLock, RawChange, blob_sha, parse_trailers
from desk.storage.git.housekeeping import holding_gc_lock, start_auto_gc
from desk.storage.git_locks import recording_git_children, release_left_locks
from desk.storage.hashing import sha256_hex
from desk.storage.integration import SettledSync, left_behind, settle_integration
from desk.storage.lock import desk_lock

if TYPE_CHECKING:
    from desk.gate.validate import KnownHead

PENDING_PREFIX = "desk-pending-"
# The last commit this process moved the branch to, (sha, subject), for the CLI's Ctrl-C report.
LANDED: list[tuple[str, str]] = []
MOVE_ATTEMPTS = 5  # compare-and-swap retries when a person moves HEAD during a desk commit
PROPOSALS = "refs/desk/proposals/"  # review mode's pending proposals, one ref each (docs/review.md)


class Proposed(Exception):  # noqa: N818 (an outcome, not an error)
    """Raised by `Transaction.commit` in review mode once the write is a proposal (a gated commit on
    `refs/desk/proposals/<id>`): nothing landed on the branch."""

    def __init__(self, proposal: str, commit: str) -> None:
        super().__init__(f"proposed {proposal}")
        self.proposal = proposal
        self.commit = commit


def commit_message(subject: str, trailers: Mapping[str, str | None], body: str | None = None) -> str:
    """`subject`, an optional body, and `Key: value` trailers (empty values left out)."""
    lines = [subject.replace("\n", " ").strip(), ""]
    if body:
        lines += [body.strip(), ""]
    for key, value in trailers.items():
        if value:
            lines.append(f"{key}: {' '.join(str(value).split())}")
    return "\n".join(lines) + "\n"


def add_trailers(message: str, trailers: Mapping[str, str]) -> str:
    """`message` with `trailers` appended to its trailer block; a key it already has keeps its value."""
    have = {key.lower() for key in parse_trailers(message)}
    extra = {k: v for k, v in trailers.items() if k.lower() not in have}
    if not extra:
        return message
    if parse_trailers(message):
        return message.rstrip("\n") + "\n" + commit_message("", extra).lstrip("\n")
    return commit_message(message.rstrip("\n"), extra)


class Transaction:
    """What a mutation may do while it holds the lock."""

    def __init__(self, desk: DeskFolder) -> None:
        self.desk = desk
        self.unrestored = False  # a failed commit could not put every file back: its marker stays
        self.settled_sync: SettledSync | None = None  # a killed desk sync's merge, undone on the way in

    def require_clean(self, paths: list[str], head_blobs: Mapping[str, str] | None = None) -> None:
        """Refuse (exit 4) when any of `paths` differs in the work tree from HEAD, naming the file;
        `head_blobs` ({path: blob id at HEAD}) when the caller knows them."""
        if head_blobs is None:
            head_blobs = self.desk.git.worktree.committed_blobs(paths)
        for path in paths:
            if self.desk.worktree_blob(path) != head_blobs.get(path):
                if _linked(self.desk, path):
                    raise link_refusal(self.desk, path)
                raise ConflictError(f"{path} has uncommitted changes; desk will not overwrite them",
                                    hint=f"commit or discard them first (`git -C {self.desk.root} diff -- {path}`)")

    def commit(self, writes: Mapping[str, bytes | None], message: str, known: KnownHead | None = None) -> str:
        """Commit exactly `writes` (bytes, or None to delete) on top of HEAD; return the commit id.

        Rebuilt and checked again on a HEAD a person moved meanwhile; on any failure before the
        branch moves, the desk is as it was. `known`: what the caller knows about HEAD, for the gate.
        """
        from desk.gate.validate import VALIDATED_ENV, require_valid  # here: `desk sync` with nothing to do never commits

        git = self.desk.git
        message = add_trailers(message, self.desk.trailers)
        if self.desk.proposing is not None:
            message = add_trailers(message, {"Desk-Proposal": self.desk.proposing})
        # The one gate (docs/design.md §1.3): the hook's rules, in process, on exactly this change.
        require_valid(self.desk, writes, message, known=known)
        if self.desk.proposing is not None:
            raise Proposed(self.desk.proposing, self._propose(writes, message, known))
        before = {p: self.desk.read_if_present(p) for p in sorted(writes)}
        crash_point("before-marker")
        marker = mark_pending(self.desk, writes, before, message)
        crash_point("after-marker")
        subject = message.split("\n", 1)[0]
        blobs: dict[str, str | None] = {}
        try:
            blobs = {p: (git.objects.write_blob(data) if data is not None else None) for p, data in writes.items()}
            run_hooks = not only_desk_hooks(git, self.desk.git_dir)
            for _attempt in range(MOVE_ATTEMPTS):
                head = git.refs.head()
                if known is not None and head != known.commit:  # checked on another HEAD: again
                    require_valid(self.desk, writes, message)
                known = None
                tree = git.index.build_tree(head, blobs)
                if run_hooks:  # a person's own hook chained beside desk's: it sees this commit
                    git.with_env(**{VALIDATED_ENV: "1"}).run_commit_hooks(None, message)
                sha = git.commit_tree(tree, head, message)
                crash_point("after-objects")
                if self._publish(writes, before, blobs, head, sha, subject):
                    crash_point("after-publish")
                    marker.unlink(missing_ok=True)
                    crash_point("after-marker-cleared")
                    return sha
                require_valid(self.desk, writes, message)  # on the HEAD a person just made
        except BaseException:
            if not self._landed(blobs) and not self.unrestored:
                marker.unlink(missing_ok=True)
            raise
        marker.unlink(missing_ok=True)
        raise ConflictError("HEAD kept moving while desk committed (another process is committing "
                            "in a loop); nothing was changed", hint="run the command again")

    def _propose(self, writes: Mapping[str, bytes | None], message: str, known: KnownHead | None) -> str:
        """Review mode: the gated change as one commit on HEAD, on its own new proposal ref; the
        branch, the work tree and the person's index are never touched."""
        from desk.gate.validate import require_valid

        git, proposal = self.desk.git, self.desk.proposing
        head = git.refs.head()
        if known is not None and head != known.commit:
            require_valid(self.desk, writes, message)
        blobs = {p: (git.objects.write_blob(data) if data is not None else None) for p, data in writes.items()}
        sha = git.commit_tree(git.index.build_tree(head, blobs), head, message)
        if not git.refs.swap_ref(PROPOSALS + str(proposal), sha, None, f"propose: {message.splitlines()[0]}"):
            raise ConflictError(f"proposal {proposal} already exists; nothing was changed",
                                hint="run the command again (a new proposal gets a new id)")
        return sha

    def _publish(self, writes: Mapping[str, bytes | None], before: Mapping[str, bytes | None],
                 blobs: Mapping[str, str | None], head: str | None, sha: str, subject: str) -> bool:
        """Under git's index lock: files, compare-and-swap of the branch, the person's index; False
        (and nothing changed) when HEAD is no longer `head`."""
        git, git_dir = self.desk.git, self.desk.git_dir
        paths = sorted(writes)
        with IndexLock(git_dir) as lock:
            person_index = git_dir / "index"
            healed = self._staged_check(person_index, head, paths)
            written = [p for p in paths if before[p] != writes[p]]
            try:
                for path in written:
                    _put(self.desk, path, writes[path])
                    crash_point(f"after-write:{path}")
                refreshed = git_dir / "desk-person-index"
                _link_or_copy(person_index, refreshed)
                git.index.refresh_entries(refreshed, [*paths, *healed])
                crash_point("after-index-refresh")
                if not git.refs.move_head(sha, head, subject):
                    self._restore({p: before[p] for p in written})
                    refreshed.unlink(missing_ok=True)
                    return False
                LANDED[:] = [(sha, subject)]
                crash_point("after-update-ref")
                # Before the index lock is let go: no `git commit` can write an index back sooner.
                record_published(git_dir, {p: (None if before[p] is None else blob_sha(before[p] or b""),
                                               blobs[p]) for p in written})
            except BaseException:
                if git.refs.head() != sha:  # the branch did not move: put the files back
                    with suppress(OSError):  # the first error is the one to report
                        self._restore({p: before[p] for p in written})
                else:
                    LANDED[:] = [(sha, subject)]
                raise
            if refreshed.exists():  # absent: the person has no index
                if _same_file(refreshed, person_index):  # git found nothing to change: nothing to publish
                    refreshed.unlink()
                else:
                    lock.publish(refreshed)
        git.index.private_index_holds(sha)
        return True

    def _staged_check(self, person_index: Path, head: str | None, paths: list[str]) -> list[str]:
        """Refuse (exit 4) when the person has staged changes to any of `paths`; return the entries
        to heal (`stale_write_backs`)."""
        git = self.desk.git
        if head is None:
            staged = sorted(git.index.index_entries(person_index, paths))
            healed: list[str] = []
        else:
            published = read_published(self.desk.git_dir)
            changes = git.index.index_changes(person_index, head, sorted({*paths, *(p for record in published for p in record)}))
            healed = stale_write_backs(self.desk, changes, published)
            staged = sorted(c.path for c in changes if c.path in paths and c.path not in healed)
        for path in staged:
            raise ConflictError(
                f"{path} has staged changes; desk will not overwrite them",
                hint=f"commit or unstage them first (`git -C {self.desk.root} diff --cached -- {path}`)")
        return healed

    def _landed(self, blobs: Mapping[str, str | None]) -> bool:
        """After a failure: whether the commit landed anyway (then the marker stays for recovery)."""
        if not blobs:
            return False
        head = self.desk.git.refs.head()
        committed = self.desk.git.worktree.committed_blobs(blobs, head) if head else {}
        return all(committed.get(p) == sha for p, sha in blobs.items())

    def _restore(self, before: Mapping[str, bytes | None]) -> None:
        """Put `before` back, removals first (on a full disk they free space); when that fails too,
        the pending marker is kept (`unrestored`) for recovery."""
        try:
            for path, data in sorted(before.items(), key=lambda item: item[1] is not None):
                _put(self.desk, path, data)
        except BaseException:
            self.unrestored = True
            raise


def _put(desk: DeskFolder, path: str, data: bytes | None) -> None:
    """Write `data` to the desk file `path`, or remove it when None."""
    if data is None:
        remove(desk.path(path))
    else:
        atomic_write(desk.path(path), data)


def _link_or_copy(person_index: Path, refreshed: Path) -> None:
    """`refreshed` as the person's index, for git to refresh: a hard link where allowed (git
    renames a new index into place, never writing through it), else a copy."""
    refreshed.unlink(missing_ok=True)
    if not person_index.exists():
        return
    try:
        os.link(person_index, refreshed)
    except OSError:
        refreshed.write_bytes(person_index.read_bytes())


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _linked(desk: DeskFolder, path: str) -> bool:
    """Whether `path` is a symbolic link in the work tree, or lies in a linked folder."""
    from desk.storage.reading import SymlinkError

    try:
        desk.read_if_present(path)
    except SymlinkError:
        return True
    except OSError:
        return False
    return False


def link_refusal(desk: DeskFolder, path: str) -> InvalidFileError:
    """A symbolic link where desk is about to change `path`, refused as the gate refuses it (exit 3)."""
    from desk.gate.rules import SYMLINK_MODE, check_file
    from desk.text.times import utc_now

    findings = check_file(path, b"", desk_id=desk.desk_id, allow=(), now=utc_now(), mode=SYMLINK_MODE)
    return InvalidFileError(findings, hint=f"put a plain {path} back (`git checkout -- {path}` restores "
                                           "the committed one), then run the command again")


@contextmanager
def transaction(desk: DeskFolder, *, stopped: bool = False) -> Iterator[Transaction]:
    """Hold the desk lock for one mutation. ConflictError while a person's merge or rebase is
    stopped, unless `stopped` (`desk sync --continue`, which finishes it)."""
    desk.require_known_schema()  # a desk written by a newer desk is never written by this one
    if not stopped:
        refuse_stopped(desk)
    with desk_lock(desk.lock_path), holding_gc_lock(desk.git):  # no `git gc` prunes what desk writes
        release_left_locks(desk.git_dir, desk.root)  # what killed desk commands and their git left
        with recording_git_children(desk.git_dir):
            tx = Transaction(desk)
            tx.settled_sync = settle_integration(desk.git)  # a desk sync killed while git merged: undone
            recover_interrupted(desk)  # the next command recovers from a crash of the last one
            yield tx
    start_auto_gc(desk.git)  # git's housekeeping, as its porcelain runs it after a commit, detached


def refuse_stopped(desk: DeskFolder) -> None:
    """ConflictError, saying what to run, while a person's merge or rebase is stopped here."""
    kind = desk.git.merging.stopped()
    if kind is not None and not left_behind(desk.git_dir):
        raise ConflictError(f"a git {kind} is stopped in this clone (a `git pull` met a conflict); desk "
                            "commits nothing until it is finished",
                            hint=f"run `desk sync --continue` to settle it (memories deleted on one side and "
                                 f"changed on the other are kept, with a conflict case), or undo the pull "
                                 f"with `git {kind} --abort`")


# -- the record of what desk published ----------------------------------------------------------

PUBLISHED_KEPT = 32  # commits remembered: far more than can land while one `git commit` starts


def record_published(git_dir: Path, changes: Mapping[str, tuple[str | None, str | None]]) -> None:
    """Remember, for `stale_write_backs`, the blobs desk's commit moved each path from and to."""
    if not changes:
        return
    kept = [*read_published(git_dir)[-(PUBLISHED_KEPT - 1):], dict(changes)]
    write_derived(git_dir / PUBLISHED_FILE, json.dumps(kept).encode())  # no fsync; a record not kept only heals less


Published = list[dict[str, tuple[str | None, str | None]]]


def read_published(git_dir: Path) -> Published:
    """desk's last commits, oldest first, each as `{path: (blob before, blob after)}`."""
    try:
        entries = json.loads((git_dir / PUBLISHED_FILE).read_bytes())
        return [{p: (old, new) for p, (old, new) in e.items()} for e in entries]
    except (OSError, ValueError, TypeError, AttributeError):
        return []


def stale_write_backs(desk: DeskFolder, staged: list[RawChange], published: Published) -> list[str]:
    """The staged changes that are a plain `git commit` writing back an older index, not a person's:
    every path of one of desk's commits staged back to a blob desk moved it away from, while HEAD and
    the work tree hold the blob desk last gave it (a person's staging differs in one of those).
    """
    olds: dict[str, set[str | None]] = {}
    latest: dict[str, str | None] = {}
    for record in published:
        for path, (old, new) in record.items():
            olds.setdefault(path, set()).add(old)
            latest[path] = new
    by_path = {c.path: c for c in staged}

    def reverted(path: str) -> bool:
        change = by_path.get(path)
        return (change is not None and change.old_blob == latest[path] != change.new_blob
                and change.new_blob in olds[path] and desk.worktree_blob(path) == latest[path])

    return sorted({path for record in published if record and all(map(reverted, record))
                   for path in record})


# -- crash markers and recovery --------------------------------------------------------------


def mark_pending(desk: DeskFolder, writes: Mapping[str, bytes | None],
                 before: Mapping[str, bytes | None], message: str) -> Path:
    """Record what a mutation is about to write, so a crash can be finished or undone."""
    # One file per mutation; archive files left out (recovery must never rewrite them).
    marker = desk.git_dir / f"{PENDING_PREFIX}{time.time_ns()}-{os.getpid()}.json"
    data: dict[str, object] = {
        "message": message,
        "paths": {p: {"old": None if before[p] is None else blob_sha(before[p] or b""),
                      "new": None if writes[p] is None else blob_sha(writes[p] or b"")}
                  for p in sorted(writes) if not p.startswith(ARCHIVE_PREFIX)}}
    data["check"] = _marker_check(data)
    atomic_write(marker, json.dumps(data, ensure_ascii=False).encode())  # durable before any write
    return marker


def _marker_check(data: Mapping[str, object]) -> str:
    """The checksum over a marker's message and paths: recovery acts only on one desk wrote."""
    body = json.dumps({"message": data["message"], "paths": data["paths"]}, sort_keys=True,
                      ensure_ascii=False)
    return "sha256:" + sha256_hex(body.encode())


def pending_markers(desk: DeskFolder) -> list[Path]:
    """The markers of interrupted mutations, oldest first (nanosecond timestamps sort)."""
    return sorted(desk.git_dir.glob(f"{PENDING_PREFIX}*.json"))


@dataclass(frozen=True)
class Settlement:
    """What became of one interrupted mutation: `repaired`, `found` (not repairing) or `needs-person`."""

    paths: str
    message: str
    status: str


def settle(desk: DeskFolder, marker: Path, *, repair: bool) -> Settlement:
    """Under the desk lock: finish the interrupted mutation `marker` records (with `repair`) when
    every file holds the bytes desk wrote, undo it when it breaks a rule, or leave it to a person
    when a file changed since; without `repair`, say what it is."""
    try:
        pending = json.loads(marker.read_text())
        paths: dict[str, dict[str, str | None]] = pending["paths"]
        message: str = pending["message"]
        altered = "check" in pending and pending["check"] != _marker_check(pending)
    except (ValueError, KeyError, TypeError, AttributeError):
        altered = True
    if altered:  # fail closed: never commit or undo on the word of a marker desk did not write
        return Settlement(marker.name, f"the pending-mutation marker {marker} is unreadable or was "
                          "altered (its checksum does not match), so desk will not act on it: check "
                          "`git status` and `git diff` for a half-done change and keep or discard it, "
                          f"then remove {marker}", "needs-person")
    head = desk.git.refs.head()
    committed = desk.git.worktree.committed_blobs(paths, head) if head else {}
    current = {p: desk.worktree_blob(p) for p in paths}
    named = ", ".join(paths)
    if all(committed.get(p) == v["new"] for p, v in paths.items()):
        # It landed: index entries still at the old blobs (a crash before the refresh) get HEAD's.
        indexed = desk.git.index.index_entries(desk.git_dir / "index", paths)
        stale = [p for p, v in paths.items() if v["old"] != v["new"] and indexed.get(p) == v["old"]]
        if repair:
            if stale:
                desk.git.unstage(stale)
            marker.unlink()
        return Settlement(named, "the mutation was committed; only its marker was left"
                          + (" (the index was brought up to date)" if stale and repair else ""),
                          "repaired" if repair else "found")
    if repair and all(current[p] == committed.get(p) for p in paths):
        # A person settled it by hand: the record has nothing more to recover.
        marker.unlink()
        return Settlement(named, "the files of an interrupted mutation are as committed now; "
                          "cleared its record", "repaired")
    foreign = [p for p, v in paths.items() if current[p] not in (v["old"], v["new"])]
    if foreign:
        return Settlement(", ".join(foreign),
                          f"an interrupted mutation ({message.splitlines()[0]}) left these files, and they "
                          "have changed since: review them (`git diff`), then commit or discard them; "
                          "then `desk doctor --repair` clears the record (keep the record file "
                          f"{marker.name} in .git until then: it is what recovery reads)", "needs-person")
    summary = message.splitlines()[0]
    if not repair:
        return Settlement(named, f"a mutation ({summary}) was interrupted before its commit; --repair "
                          "finishes it (or undoes it if it breaks a rule)", "found")
    finished = False
    try:
        if all(current[p] == v["new"] for p, v in paths.items()):
            with suppress(InvalidFileError):  # an unvalidated write that breaks a rule: undo it instead
                Transaction(desk).commit({p: (desk.read(p) if v["new"] is not None else None)
                                          for p, v in paths.items()}, message)
                finished = True
        if not finished:
            _undo(desk, head, paths)
    except DeskError as exc:
        return Settlement(named, f"could not settle the interrupted mutation ({summary}): {exc.message}; "
                          "fix that, then run `desk doctor --repair` again (it settles the mutation "
                          "from its record)", "needs-person")
    marker.unlink(missing_ok=True)
    return Settlement(named, f"finished the interrupted mutation ({summary}): committed" if finished
                      else f"undid the interrupted mutation ({summary}): the files are as committed", "repaired")


def recover_interrupted(desk: DeskFolder) -> None:
    """Under the desk lock (every marker's writer is dead): finish or undo interrupted mutations;
    one a person changed since stops this mutation (exit 4)."""
    stuck = [s for s in (settle(desk, m, repair=True) for m in pending_markers(desk))
             if s.status != "repaired"]
    if stuck:
        raise ConflictError("an interrupted desk mutation needs a person first:\n"
                            + "\n".join(s.message for s in stuck),
                            hint="run `desk doctor` for the details")


def _undo(desk: DeskFolder, head: str | None, paths: Mapping[str, Mapping[str, str | None]]) -> None:
    """Put back the committed content of desk's own half-written paths."""
    for path, v in paths.items():
        if path.startswith(ARCHIVE_PREFIX):
            continue  # append-only evidence: never rolled back (a checkpoint rewrites it unchanged)
        if desk.worktree_blob(path) != v["new"]:
            continue  # already the old content
        _put(desk, path, desk.git.objects.blob_at(head, path) if head else None)
    desk.git.unstage(list(paths))
