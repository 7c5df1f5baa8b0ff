"""What a killed `desk sync` leaves of git's fast-forward or merge, recorded first and undone after.

A kill while `git merge` moves the work tree leaves a torn checkout with no MERGE_HEAD to go by.
So desk sync first records what it is about to do (`.git/desk-sync-integrating.json`) and removes
the record once the integration is committed or put back. The next desk command, `desk doctor
--repair` and `desk sync --continue` settle a record left behind: git's leftovers cleared when
the integration landed, else each integrated path put back as HEAD has it (bytes that are
neither side's kept in `.git/desk-rescued/`). Paths with a person's uncommitted change when the
sync began are never touched."""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from desk.errors import ConflictError, DeskError
from desk.storage.atomic import atomic_write, remove
from desk.storage.git import Git, RawChange, blob_sha

RECORD = "desk-sync-integrating.json"  # in .git/
RESCUED = "desk-rescued"  # in .git/: bytes an undo replaced that were neither side's
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
NOT_A_FILE = "not a file"


def left_behind(git_dir: Path) -> bool:
    """Whether a desk sync died integrating (its record is there)."""
    return (git_dir / RECORD).exists()


def mark_integration(git: Git, kind: str, head: str | None, target: str) -> None:
    """Write the record, durably, before git fast-forwards or merges `head` to `target`: the paths git
    may write and, among them, those with a person's uncommitted change (git refuses to overwrite
    them, so an undo never touches them either)."""
    paths = sorted(_integrated(git, kind, head, target))
    kept = [p for i in range(0, len(paths), 1000) for p in git.worktree.dirty(paths[i:i + 1000])]
    atomic_write(git.git_dir() / RECORD, json.dumps({"kind": kind, "head": head, "target": target,
                                                     "at": time.time_ns(), "paths": paths,
                                                     "kept": kept}).encode())


def _integrated(git: Git, kind: str, head: str | None, target: str) -> set[str]:
    """The paths git may write integrating `target` into `head`: what differs between them and,
    in a merge, what the incoming side changed (a path only this side changed is not written)."""
    paths = {c.path for c in git.worktree.diff_tree(head or EMPTY_TREE, target)}
    if kind == "merge" and head is not None:
        paths &= {c.path for c in git.worktree.diff_tree(git.refs.merge_base(head, target) or EMPTY_TREE, target)}
    return paths


def clear_integration(git: Git) -> None:
    (git.git_dir() / RECORD).unlink(missing_ok=True)


@contextmanager
def integrating(git: Git, kind: str, head: str | None, target: str) -> Iterator[None]:
    """Hold the record while git integrates (`mark_integration`); when the block fails, what git
    left is settled at once (undone, unless it landed)."""
    mark_integration(git, kind, head, target)
    try:
        yield
    except BaseException:
        settle_after_failure(git)
        raise
    clear_integration(git)


def settle_after_failure(git: Git) -> None:
    """After the integration failed in this process: settle what git left at once; if that fails
    too, the record stays for the next command (the first error is the one to report)."""
    with suppress(DeskError, OSError):
        settle_integration(git)


@dataclass
class SettledSync:
    """What became of an interrupted integration."""

    message: str
    restored: list[str] = field(default_factory=list)
    rescued: list[str] = field(default_factory=list)  # `.git/desk-rescued/...` copies kept


def settle_integration(git: Git, *, repair: bool = True) -> SettledSync | None:
    """Settle the integration a killed desk sync left (see the module's docstring); None when
    there is none. Call it under the desk lock. Without `repair`, only says what it would do.
    ConflictError when the record cannot be read or HEAD moved since and files differ from it."""
    git_dir = git.git_dir()
    record = git_dir / RECORD
    try:
        data = json.loads(record.read_bytes())
        kind, base, target, at = data["kind"], data["head"], data["target"], int(data["at"])
        integrated = set(data["paths"]) - set(data["kept"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        raise ConflictError(f"desk sync's record {record} cannot be read; desk will not act on it",
                            hint="check `git status` for a half-done merge (`git merge --abort` undoes "
                                 f"one), then remove {record}") from None
    if repair:
        _remove_driver_files(git.root, at)
    head = git.refs.head()
    span = f"{(base or 'nothing')[:12]}..{target[:12]}"
    landed = head == target if kind == "fast-forward" else (
        head is not None and head != base and git.refs.object_id(f"{head}^1") == base
        and git.refs.object_id(f"{head}^2") == target)
    if landed:
        if repair:
            if git.refs.object_id("MERGE_HEAD") == target:
                git.merging.merge_quit()  # the commit moved the branch and was killed before it cleaned up
            record.unlink(missing_ok=True)
        return SettledSync(f"the interrupted sync's {kind} ({span}) had landed; "
                       + ("cleared what git left" if repair else "--repair clears what git left"))
    changes = [c for c in git.worktree.diff_tree(base or EMPTY_TREE, target) if c.path in integrated]
    if head != base:
        return _moved_on(git, record, changes, head, span, repair)
    if not repair:
        return SettledSync(f"a desk sync was killed while git's {kind} ({span}) moved the work tree; "
                       "--repair (or the next desk command) puts the files back as HEAD has them")
    if git.refs.object_id("MERGE_HEAD") is not None:
        git.merging.merge_abort()  # git's own undo of its merge; the torn files left are put back below
    settled = SettledSync("")
    olds = git.objects.read_blobs({c.old_blob for c in changes if c.old_blob}) if changes else {}
    news = git.objects.read_blobs({c.new_blob for c in changes if c.new_blob}) if changes else {}
    for change in changes:
        _put_back(git, change, olds, news, at, settled)
    git.index.reset_paths(base, [c.path for c in changes])  # the index as HEAD has them, as before the merge
    record.unlink(missing_ok=True)
    rescued = (f"; the bytes of {', '.join(settled.rescued)} (neither side's) are kept in "
               f"{git_dir / RESCUED}" if settled.rescued else "")
    settled.message = (f"undid the interrupted sync's {kind} ({span}): {len(settled.restored)} "
                       f"file{'s' if len(settled.restored) != 1 else ''} put back as HEAD has them"
                       f"{rescued}; `desk sync` integrates it again")
    return settled


def _put_back(git: Git, change: RawChange, olds: dict[str, bytes], news: dict[str, bytes], at: int,
              settled: SettledSync) -> None:
    """Put `change.path` back as HEAD has it, unless it already is."""
    full = git.root / change.path
    now = _read(full)
    old = olds.get(change.old_blob) if change.old_blob else None
    new = news.get(change.new_blob) if change.new_blob else None
    if isinstance(now, bytes):
        if change.old_blob and blob_sha(now) == change.old_blob:
            return  # as HEAD has it
        if new is None or not new.startswith(now):  # not the incoming file, nor a torn start of it
            kept = git.git_dir() / RESCUED / str(at) / change.path
            kept.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(kept, now)
            settled.rescued.append(f"{RESCUED}/{at}/{change.path}")
    elif now == NOT_A_FILE:
        if not (new is not None and full.is_symlink() and os.readlink(full).encode() == new):
            raise ConflictError(f"{change.path} is not a plain file after an interrupted desk sync; "
                                "desk will not replace it",
                                hint=f"move it away, then run the command again (HEAD has "
                                     f"{'no such file' if old is None else 'a file there'})")
        full.unlink()  # the incoming symlink git had made
    elif old is None:
        return  # absent, as HEAD has it
    if old is None:
        remove(full)
        _prune_empty(full.parent, git.root)
    else:
        full.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(full, old)
        if change.old_mode == "100755":
            os.chmod(full, 0o755)
    settled.restored.append(change.path)


def _remove_driver_files(root: Path, since_ns: int) -> None:
    """Remove the `.merge_file_*` files git writes in the work tree's root for a merge driver (the
    base, ours and theirs it passes) and removes after it: a kill during a driver leaves them.
    Only those made since the killed sync's record, while no git process works in the desk."""
    from desk.storage.git_locks import CLOCK_SLACK_NS, git_running_in

    left = []
    for path in root.glob(".merge_file_*"):
        with suppress(OSError):
            if path.is_file() and not path.is_symlink() and path.stat().st_mtime_ns >= since_ns - CLOCK_SLACK_NS:
                left.append(path)
    if left and git_running_in(root) is False:
        for path in left:
            path.unlink(missing_ok=True)


def _read(path: Path) -> bytes | str | None:
    """A work-tree file's bytes; None when absent, NOT_A_FILE for a symlink or folder."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat.S_ISREG(mode):
        return NOT_A_FILE
    return path.read_bytes()


def _prune_empty(folder: Path, root: Path) -> None:
    """Remove the folders git made for incoming files, now empty, up to the work tree's root."""
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def _moved_on(git: Git, record: Path, changes: list[RawChange], head: str | None, span: str,
              repair: bool) -> SettledSync:
    """HEAD moved since the killed sync (a person committed or reset): the record is cleared once
    the paths git was integrating are as the new HEAD has them; desk puts nothing back there."""
    paths = [c.path for c in changes]
    ids = git.worktree.committed_blobs(paths, head) if head else {}
    differ = [p for p in paths if _blob(git.root / p) != ids.get(p)]
    if differ:
        raise ConflictError(
            f"a desk sync was killed while git integrated {span}, and HEAD has moved since; these "
            f"files differ from HEAD: {', '.join(differ[:10])}" + (" ..." if len(differ) > 10 else ""),
            hint="review them (`git status`, `git diff`), keep or discard each (`git checkout HEAD -- "
                 f"FILE` takes HEAD's), then run the command again; or remove {record}")
    if repair:
        record.unlink(missing_ok=True)
    return SettledSync(f"the interrupted sync's integration ({span}) was settled by hand; cleared its record")


def _blob(path: Path) -> str | None:
    data = _read(path)
    return None if data is None else NOT_A_FILE if isinstance(data, str) else blob_sha(data)
