"""What the git hooks run (desk.setup.hooks installs them).

The pre-commit hook validates the staged blobs (desk.gate.validate) and, as a fixer like
pre-commit's, regenerates a stale MEMORY.md from the memory files being committed (`_fix_index`):
it adds it to the commit when git lets a hook do so, else writes it to the work tree and names the
exact command that commits it. It never writes over a MEMORY.md the person changed, and never
commits an index that hides memory edits the person left unstaged. The commit-msg hook checks
the message rules. Neither starts Python for desk's own commits (`DESK_VALIDATED=1`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from desk.errors import ConflictError, Finding, GitError
from desk.layout import (INDEX_FILE, MEMORY_PREFIX, PREFS_DIR, PREFS_INDEX_FILE, PUBLISHED_RECORD, DeskFolder,
                         is_desk, memory_name)
from desk.storage.git import Git, RawChange, hook_index, hook_toplevel, staged_git, staged_snapshot

if TYPE_CHECKING:
    from desk.gate.checks import Report

STALE_INDEX_MESSAGE = ("MEMORY.md was regenerated in the work tree from the staged memory files; "
                       "`git add MEMORY.md` and commit again (if you commit named paths, name "
                       "MEMORY.md too)")


@dataclass(slots=True)
class HookRun:
    """What one hook run found: the exit code for git, the findings, and notes for the person.

    The hook's thin entry script (`desk.cli.hook`) prints it; this module never does.
    """

    code: int = 0
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


BEHIND_HEAD_MESSAGE = ("desk: pre-commit: HEAD moved while this commit was starting (a desk command "
                      "committed meanwhile), so git read an older index; nothing was committed: run "
                      "the same `git commit` again (if it says this again, the staged memory files "
                      "differ from HEAD while the work tree matches HEAD: `git status` shows what "
                      "is staged)")
FIX_LOCK_WAIT = 1.0  # seconds the fixer waits for the desk lock before leaving MEMORY.md alone


SNAPSHOT_TRIES = 5  # re-reads when HEAD moves during one check (a desk commit publishing)
_LEAVE_OPEN = False  # `leave_open_at_exit` was called: applied when the gate is loaded


def leave_open_at_exit() -> None:
    """desk.gate.verdicts.leave_open_at_exit, for desk.cli.hook (a process that ends with
    `os._exit`), applied once the hook has loaded the gate (`_load_gate`): the cache's module and
    SQLite load while git works, not before it starts."""
    global _LEAVE_OPEN
    _LEAVE_OPEN = True


@contextmanager
def _object_reader(git: Git) -> Iterator[None]:
    """Closes the `git cat-file --batch` a check started when the check did not use it."""
    try:
        yield
    finally:
        git.objects.close_reader()


def _load_gate() -> Callable[..., tuple[Report, bytes | None]]:
    """The gate's modules (the rules, the verdict cache and SQLite), loaded by a hook after it
    started git, so that the loading and git's work overlap; returns `validate_staged`."""
    from desk.gate import verdicts
    from desk.gate.validate import validate_staged

    if _LEAVE_OPEN:
        verdicts.leave_open_at_exit()
    return validate_staged


def run_pre_commit(root: Path, merge: bool = False) -> HookRun:
    """Validate the staged change; fix a stale MEMORY.md (`merge`: for pre-merge-commit).

    Every read of one check sees one copy of the index and one HEAD: when HEAD moves meanwhile
    (a desk command's commit landing, which a plain `git commit` does not lock out while its hooks
    run), the check starts again.
    """
    if not is_desk(root):
        return HookRun()
    desk = DeskFolder(root)
    healed: list[str] | None = None
    for _attempt in range(SNAPSHOT_TRIES):
        with staged_snapshot(root) as git, _object_reader(git):
            head = git.refs.head()
            started = git.worktree.start_staged_changes()  # one `git diff --cached --raw` serves both checks
            git.objects.start_reader()  # and the `git cat-file --batch` that reads the staged blobs
            validate_staged = _load_gate()  # while git compares the index with HEAD
            raw = started.result()
            if healed is None and (healed := _heal_write_backs(desk, raw)):
                continue  # the index was repaired: read it again
            if _index_behind_head(desk, raw):
                if git.refs.head() != head:
                    continue
                return HookRun(3, notes=[BEHIND_HEAD_MESSAGE])
            report, regenerated = validate_staged(desk, git, raw=raw)
            if git.refs.head() != head:
                continue
            run = HookRun(findings=list(report.findings))
            errors = [f for f in report.findings if f.severity == "error"]
            fixes = dict(report.regenerated)
            if regenerated is not None:
                fixes[INDEX_FILE] = regenerated
            if errors and all(f.rule == "index-stale" and f.path in fixes for f in errors):
                fix = _fix_index(desk, git, head, raw,
                                 {f.path: fixes[f.path] for f in errors}, merge)
                if fix.staged:
                    run.findings = [f for f in run.findings if f.rule != "index-stale"]
                    run.notes.append(f"desk: {fix.note}")
                    return run
                run.notes.append(f"desk: {fix.note}")
                run.code = 3
                return run
            break
    else:
        return HookRun(3, notes=[BEHIND_HEAD_MESSAGE])
    if not report.ok:
        run.notes += _unstaged_notes(desk, report.errors, raw)
        run.notes.append("desk: pre-commit: commit refused; fix the findings above and commit again "
                         "(`desk validate --staged` shows them again)")
        run.code = 3
    return run


def _unstaged_notes(desk: DeskFolder, findings: list[Finding], raw: list[RawChange]) -> list[str]:
    """For each refused file whose work-tree copy is not the staged one the findings are about: say
    so, with what the person's file says where it matters (its `name:`), and how to stage it. A
    person who fixed the file but not the index otherwise reads a finding that quotes a line their
    editor no longer shows."""
    staged = {c.path: c.new_blob for c in raw if c.new_blob}
    notes = []
    for path in sorted({f.path for f in findings if f.path in staged}):
        if desk.worktree_blob(path) in (staged[path], None):
            continue
        says = ""
        if any(f.path == path and f.rule == "name-mismatch" for f in findings):
            name = _worktree_name(desk, path)
            says = f" (it says `name: {name}`)" if name is not None else ""
        notes.append(f"desk: {path}: the findings above are about the staged copy; the file in the "
                     f"work tree differs{says} and is not staged: `git add {_quote(path)}` and "
                     "commit again")
    return notes


def _worktree_name(desk: DeskFolder, path: str) -> str | None:
    """The `name:` line of a work-tree file's frontmatter, as written (for a note, not validated)."""
    data = _read_plain(desk.path(path))
    if data is None:
        return None
    lines = data.decode("utf-8", "replace").splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    for line in lines[1:60]:
        if line.strip() == "---":
            break
        if line.startswith("name:"):
            return line[5:].strip()[:80]
    return None


HEAL_TRIES = 20  # attempts at the index while a desk command holds index.lock (a short sleep apart)


def _heal_write_backs(desk: DeskFolder, raw: list[RawChange]) -> list[str]:
    """Set back to HEAD the index entries an earlier `git commit` wrote back over a desk commit.

    A plain `git commit` reads the index before it locks it; if a desk commit lands in between,
    git writes the older index back, and every later commit would revert desk's files. Those
    entries are recognised exactly (`stale_write_backs`: desk's own record of what it published)
    and refreshed from the work tree, which holds HEAD's bytes; git reads the index again after
    this hook, so the commit being made takes only what the person staged. Returns the paths.
    """
    try:
        record = (desk.git_dir / PUBLISHED_RECORD).read_bytes()
    except OSError:
        return []
    import json  # loaded with the gate already

    # A write-back stages a path desk published back to the blob desk moved it away from (or
    # removes a file desk added), so the path is in the record as a JSON key and the blob as a
    # value: only then is the transaction's module loaded to tell. A
    # person's edit stages a blob desk never published.
    if not any(json.dumps(c.path).encode() in record and (c.new_blob is None or c.new_blob.encode() in record)
               for c in raw):
        return []
    from desk.transaction import read_published, stale_write_backs

    published = read_published(desk.git_dir)
    stale = stale_write_backs(desk, raw, published) if published else []
    if not stale:
        return []
    git = staged_git(desk.root)
    for _ in range(HEAL_TRIES):
        try:
            git.index.refresh_entries(hook_index(git), stale)
            return stale
        except GitError:
            time.sleep(0.05)  # desk is publishing a commit under index.lock: a moment
    return []


def _index_behind_head(desk: DeskFolder, raw: list[RawChange]) -> bool:
    """Whether the staged memory changes are only a stale read: `git commit` reads the index before
    it locks it, so a desk commit landing in between leaves the commit reverting desk's files while
    the work tree already holds them. git would refuse the commit itself (HEAD is not what it
    read); the hook says why instead of calling MEMORY.md stale, and touches nothing."""
    memory = [c for c in raw if c.path == INDEX_FILE or memory_name(c.path) is not None]
    return bool(memory) and all(desk.worktree_blob(c.path) == c.old_blob for c in memory)


@dataclass(frozen=True, slots=True)
class IndexFix:
    """What the fixer did about a stale MEMORY.md: `staged` (it is in the commit now, which may go
    on) or not (the commit is refused), and the note telling the person what happened and what to
    run next."""

    staged: bool
    note: str


# `git commit` runs the hooks on `.git/index` (a plain commit, a merge) or `.git/index.lock` (`-a`,
# `-i`): the index it re-reads after pre-commit and then keeps, so what the hook adds is committed
# and stays staged. `git commit -- PATHS` runs them on a temporary `next-index-*.lock` and keeps the
# real index locked: what a hook adds there is committed but the real index never hears of it.
WHOLE_INDEX_NAMES = ("index", "index.lock")


def _fix_index(desk: DeskFolder, git: Git, head: str | None, raw: list[RawChange],
               fixes: Mapping[str, bytes], merge: bool = False) -> IndexFix:
    """The fixer: each stale generated file (MEMORY.md, a project's MEMORY.md, a user scope's
    PREFERENCES.md: `fixes`, path -> the correct bytes) regenerated from the files being committed.

    Under the desk lock (a desk command publishing its own commit refreshes the person's index and
    work tree under it), and only while HEAD is still the one checked:
    - When the person staged a generated file of their own while the files it is made from differ
      in the work tree from what is staged, they forgot those files: nothing is touched, and the
      hint stages them.
    - A work-tree file is rewritten only when it holds the staged one (never over the person's own
      edit; the regenerated file then only adds the staged changes to it).
    - A whole-index commit gets the regenerated files added to it and goes on; a commit of named
      paths is refused with the exact command that names them too. So is a merge: `git merge`
      wrote the merge's tree before pre-merge-commit runs, and never reads the index again, so the
      person stages them and concludes the merge with `git commit`.
    """
    hooked = staged_git(desk.root)
    index = hook_index(hooked)  # `git` reads a private copy of it
    names = sorted(fixes)
    staged = git.objects.read_blobs([f":{p}" for p in names])
    heads = git.objects.read_blobs([f"HEAD:{p}" for p in names]) if head else {}
    kept: list[str] = []
    try:
        from desk.storage.atomic import atomic_write
        from desk.storage.lock import desk_lock

        with desk_lock(desk.lock_path, timeout=FIX_LOCK_WAIT):
            if hooked.refs.head() != head:
                return IndexFix(False, BEHIND_HEAD_MESSAGE.removeprefix("desk: "))
            for path in names:
                source = _source_folder(path)
                forgotten = sorted(p for p in hooked.index.unstaged(index, [source]) if _is_source(path, p))
                if forgotten and staged.get(f":{path}") != heads.get(f"HEAD:{path}"):
                    return IndexFix(False, _forgotten_note(forgotten, path))
            whole = index.name in WHOLE_INDEX_NAMES and not merge
            for path in names:
                regenerated = fixes[path]
                current = _read_plain(desk.path(path))
                if current == staged.get(f":{path}") and current != regenerated:
                    atomic_write(desk.path(path), regenerated)
                elif current != regenerated:
                    kept.append(path)
                if whole:
                    hooked.index.stage_blob(index, path, hooked.objects.write_blob(regenerated))
    except ConflictError:
        return IndexFix(False, f"{_listed(names)} stale and a desk command is committing right now; "
                               "nothing was committed: run the same `git commit` again")
    note = "" if not kept else (f" (your own {', '.join(kept)} in the work tree was left as it is; "
                                "`desk reindex` regenerates it)")
    shown = ", ".join(names) + (" was" if len(names) == 1 else " were")
    if whole:
        return IndexFix(True, f"pre-commit: files were modified by this hook: {shown} regenerated "
                              "from the files being committed and added to this commit" + note)
    if merge:
        return IndexFix(False, f"pre-merge-commit: files were modified by this hook: {shown} "
                               f"regenerated in the work tree{note}; the merge is not committed yet: "
                               f"run `git add {' '.join(_quote(p) for p in names)} && git commit "
                               "--no-edit` to conclude it")
    paths = sorted({c.path for c in raw} | set(names))
    command = "git commit -- " + " ".join(_quote(p) for p in paths)
    return IndexFix(False, f"pre-commit: files were modified by this hook: {shown} regenerated "
                           f"in the work tree{note}; this commit names its paths, so it must name "
                           f"{'it' if len(names) == 1 else 'them'} too: run it again as `{command}` "
                           "(with your -m message); nothing was committed")


def _listed(names: list[str]) -> str:
    return f"{names[0]} is" if len(names) == 1 else f"{', '.join(names)} are"


def _source_folder(generated: str) -> str:
    """The folder a generated file is made from: memory/, projects/P/memory/, <scope>prefs/."""
    if generated == INDEX_FILE:
        return MEMORY_PREFIX
    if generated.endswith(INDEX_FILE):  # projects/<name>/MEMORY.md
        return generated.removesuffix(INDEX_FILE) + MEMORY_PREFIX
    return generated.removesuffix(PREFS_INDEX_FILE) + PREFS_DIR + "/"


def _is_source(generated: str, path: str) -> bool:
    if generated == INDEX_FILE:
        return memory_name(path) is not None
    return path.endswith(".md") and path.rpartition("/")[0] + "/" == _source_folder(generated)


def _forgotten_note(paths: list[str], generated: str = INDEX_FILE) -> str:
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    made_from = "memory files" if generated == INDEX_FILE else "files it is made from"
    return (f"pre-commit: the staged {generated} does not match the staged {made_from}, and "
            f"{shown} {'has' if len(paths) == 1 else 'have'} changes that are not staged: stage "
            f"them with `git add {_source_folder(generated)} {generated}` and run the same `git "
            "commit` again (or commit with `git commit -a`); nothing was changed or committed")


def _read_plain(path: Path) -> bytes | None:
    """A work-tree file's bytes; None when absent or not a plain file (a symlink is not followed)."""
    from desk.storage.reading import SymlinkError, read_regular

    try:
        return read_regular(path)
    except (FileNotFoundError, NotADirectoryError, SymlinkError):
        return None


def _quote(path: str) -> str:
    import shlex

    return shlex.quote(path)


def run_commit_msg(root: Path, message_file: str) -> HookRun:
    """The commit message's secrets and rules (desk.gate.message.message_findings)."""
    from desk.gate.message import message_findings

    findings = message_findings(root, Path(message_file).read_text("utf-8", "replace"))
    if findings:
        return HookRun(3, findings, ["desk: commit-msg: commit refused; see above"])
    return HookRun()


def hook_root() -> Path:
    """Inside a git hook: the work tree being committed. git runs hooks in its root, so the current
    folder when it is a desk (asking git, `rev-parse --show-toplevel`, costs a process)."""
    here = Path.cwd()
    return here if is_desk(here) else hook_toplevel()


def run_hook(hook: str, root: Path, args: list[str]) -> HookRun:
    """Run `hook` (one of HOOK_TYPES but the post-* hooks, which desk.sync runs) for `root`."""
    if hook in ("pre-commit", "pre-merge-commit"):
        return run_pre_commit(root, merge=hook == "pre-merge-commit")
    if not args:
        return HookRun(2, notes=["desk: commit-msg hook: missing the message file argument"])
    return run_commit_msg(root, args[0])
