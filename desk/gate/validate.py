"""`desk validate`: the one gate every write path passes (docs/design.md §1.3).

Here: desk's own writes (`validate_writes`, from `Transaction.commit`), the staged commit
(`validate_staged`: hooks and `--staged`) and a range (`validate_range`), each run through
desk.gate.checks; the whole desk is desk.gate.whole. Verdicts are cached by blob id, and heavy
modules load only when a file of their kind is checked."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from desk.errors import InvalidFileError
from desk.gate.checks import Change, Report, blob_reader, restore_hints, run_rules
from desk.gate.index_rule import MemorySet
from desk.gate.rules import FILE_MODE, GITLINK_MODE, SYMLINK_MODE, is_managed, needs_old
from desk.layout import CONFIG_PATH, INDEX_FILE, MEMORY_PREFIX, DeskFolder, is_attributes_file
from desk.storage.atomic import atomic_write
from desk.storage.git import Git, RawChange, blob_sha, staged_git
from desk.storage.reading import SymlinkError

VALIDATED_ENV = "DESK_VALIDATED"  # set on desk's own commits; the shell hooks skip Python for them


def _like(git: Git, extra: Collection[str] = (), gone: Collection[str] = (),
          listed: Callable[[list[str]], list[str]] | None = None) -> Callable[[list[str]], list[str]]:
    """Paths in git's index (or those `listed` gives: HEAD's, from the memory mirror), plus `extra`,
    minus `gone`, equal to the given ones ignoring case."""
    def like(paths: list[str]) -> list[str]:
        found = set(listed(paths)) if listed is not None else git.worktree.indexed_like(paths)
        lowered = {p.lower() for p in paths}
        found |= {p for p in extra if p.lower() in lowered}
        return sorted(found - set(gone))
    return like


def _head_contents(desk: DeskFolder, paths: list[str], known: KnownHead | None) -> dict[str, bytes]:
    """`{"HEAD:path": content}` of `paths` at HEAD (absent ones left out): from the work tree where it
    holds exactly the blob `known` names, else one `git cat-file`."""
    found: dict[str, bytes] = {}
    ask: list[str] = []
    for path in paths:
        if known is None or path not in known.blobs:
            ask.append(path)
            continue
        blob = known.blobs[path]
        if blob is None:
            continue  # not at HEAD
        try:
            data = known.base if path == INDEX_FILE and known.base is not None else desk.read(path)
        except (OSError, SymlinkError):
            data = None
        if data is not None and blob_sha(data) == blob:
            found[f"HEAD:{path}"] = data
        else:
            ask.append(path)
    rev = known.commit if known is not None and known.commit else "HEAD"
    if ask:
        asked = desk.git.objects.read_blobs([f"{rev}:{path}" for path in ask])
        found.update({f"HEAD:{path}": data for path in ask if (data := asked.get(f"{rev}:{path}")) is not None})
    return found


def staged_changes(git: Git, raw: list[RawChange] | None = None
                   ) -> tuple[list[Change], dict[str, bytes]]:
    """What the commit being made changes, and the blobs read for it in one batch (the changed blobs,
    the old ones the rules compare with, HEAD's desk.json, HEAD's and the staged MEMORY.md). `raw` is
    `git.worktree.staged_changes()` when the caller has it."""
    raw = git.worktree.staged_changes() if raw is None else raw
    wanted = _wanted(raw)
    if any(is_managed(c.path) for c in raw):
        wanted.append(f"HEAD:{CONFIG_PATH}")
    index_staged = any(c.path == INDEX_FILE for c in raw)
    if index_staged or any(c.path.startswith(MEMORY_PREFIX) for c in raw):
        wanted += [f"HEAD:{INDEX_FILE}", f":{INDEX_FILE}"] if index_staged else [f"HEAD:{INDEX_FILE}"]
    blobs = git.objects.read_blobs(wanted)
    if not index_staged and f"HEAD:{INDEX_FILE}" in blobs:  # unchanged: read once
        blobs[f":{INDEX_FILE}"] = blobs[f"HEAD:{INDEX_FILE}"]
    return _changes(raw, blobs), blobs


def _wanted(raw: list[RawChange]) -> list[str]:
    """The blobs the rules read for `raw`: each changed desk file's, and the old ones they compare with."""
    return ([c.new_blob for c in raw if c.new_blob and c.status != "D" and is_managed(c.path)
             and c.new_mode not in (SYMLINK_MODE, GITLINK_MODE)]
            + [c.old_blob for c in raw if c.old_blob and needs_old(c.path)])


def _changes(raw: list[RawChange], blobs: Mapping[str, bytes]) -> list[Change]:
    return [Change(c.path, None if c.status == "D" else blobs.get(c.new_blob or "", b""),
                   c.new_mode, c.old_blob, c.new_blob) for c in raw]


def validate_staged(desk: DeskFolder, git: Git | None = None, *, message: str | None = None,
                    now: dt.datetime | None = None, raw: list[RawChange] | None = None
                    ) -> tuple[Report, bytes | None]:
    """Validate what is staged (hooks, `desk validate --staged`); `git` keeps the hook's
    GIT_INDEX_FILE. Returns the report and, when the MEMORY.md rule ran, the correct MEMORY.md."""
    git = git or staged_git(desk.root)
    changes, blobs = staged_changes(git, raw)
    read = blob_reader(git, blobs)
    memory = MemorySet(blobs.get(f":{INDEX_FILE}"), blobs.get(f"HEAD:{INDEX_FILE}"),
                       lambda: git.worktree.ls_staged_files([MEMORY_PREFIX]), read, _like(git))
    report, regenerated = run_rules(desk, changes, memory, read, message, now, cached=True,
                               head_config=lambda: blobs.get(f"HEAD:{CONFIG_PATH}"),
                               files_under=lambda spec: git.worktree.ls_staged_files([spec]))
    report.findings = restore_hints(desk, report.findings)
    if any(is_attributes_file(c.path) for c in changes):
        from desk.gate.attributes import check_attributes  # a hook pays for it when .gitattributes changes

        report.findings += check_attributes(git, git.worktree.index_paths())
    return report, regenerated


def validate_range(desk: DeskFolder, old: str, new: str, *, now: dt.datetime | None = None
                   ) -> tuple[Report, bytes | None]:
    """The gate over moving HEAD to `new` as if it were one commit (desk sync before a fast-forward,
    which runs no hook), read from the object store only."""
    git = desk.git
    raw = git.worktree.diff_tree(old, new)
    wanted = _wanted(raw) + [f"{old}:{CONFIG_PATH}"]
    touches_memory = any(c.path == INDEX_FILE or c.path.startswith(MEMORY_PREFIX) for c in raw)
    if touches_memory:
        wanted += [f"{old}:{INDEX_FILE}", f"{new}:{INDEX_FILE}"]
    blobs = git.objects.read_blobs(wanted)
    changes = _changes(raw, blobs)
    read = blob_reader(git, blobs)

    def like(paths: list[str]) -> list[str]:
        lowered = {p.lower() for p in paths}
        folders = {p.rsplit("/", 1)[0] for p in paths}
        return sorted(p for folder in folders for p in git.worktree.ls_tree(new, folder) if p.lower() in lowered)

    memory = None
    if touches_memory:
        memory = MemorySet(blobs.get(f"{new}:{INDEX_FILE}"), blobs.get(f"{old}:{INDEX_FILE}"),
                           lambda: git.worktree.ls_tree(new, MEMORY_PREFIX), read, like)
    report, regenerated = run_rules(desk, changes, memory, read, None, now, cached=True,
                               head_config=lambda: blobs.get(f"{old}:{CONFIG_PATH}"))
    report.findings = restore_hints(desk, report.findings)
    if any(is_attributes_file(c.path) for c in raw):
        from desk.gate.attributes import tree_attribute_findings

        report.findings += tree_attribute_findings(git, new)
    return report, regenerated


@dataclass(frozen=True, slots=True)
class KnownHead:
    """What a caller already knows about HEAD (the memory mirror does), so the gate reads none of it
    from git. `blobs`: HEAD's blob ids of paths the caller vouches for (content is read from the
    work tree and used only when its id matches); `like`: HEAD's memory paths equal ignoring case."""

    commit: str | None
    blobs: Mapping[str, str | None]
    like: Callable[[list[str]], list[str]] | None = None
    index: bytes | None = None  # MEMORY.md for HEAD's memories plus the commit's, rendered by the mirror
    # HEAD's MEMORY.md holds only lines clean of secrets in every view (desk.text.secrets.clean_lines)
    index_clean: bool = False
    # HEAD's MEMORY.md as the caller read it (the mirror): used, as the work tree's file is,
    # only when its blob id is the one `blobs` names; it spares reading and hashing it again
    base: bytes | None = None


def validate_writes(desk: DeskFolder, writes: Mapping[str, bytes | None], message: str,
                    now: dt.datetime | None = None, known: KnownHead | None = None) -> Report:
    """Validate one of desk's own commits in process: exactly `writes` on top of HEAD (the
    commit `known` describes, when given)."""
    git = desk.git
    if known is not None and all(p in known.blobs for p in writes):
        old_blobs = {p: b for p in writes if (b := known.blobs[p]) is not None}
    else:
        old_blobs = git.worktree.committed_blobs(writes)  # one ls-tree; none before the first commit
    changes = [Change(p, data, FILE_MODE, old_blobs.get(p)) for p, data in sorted(writes.items())]
    read = blob_reader(git, {blob_sha(data): data for data in writes.values() if data is not None})

    def written(files: dict[str, str], spec: str) -> dict[str, str]:
        """`files` (`{path: blob}` at HEAD under `spec`) with `writes` applied."""
        for path, data in writes.items():
            if path == spec or spec.endswith("/") and path.startswith(spec):
                if data is None:
                    files.pop(path, None)
                else:
                    files[path] = blob_sha(data)
        return files

    memory = None
    touches_memory = INDEX_FILE in writes or any(p.startswith(MEMORY_PREFIX) for p in writes)
    # HEAD's MEMORY.md and desk.json: from the work tree when `known` names their blobs and the
    # files hold them, else in one `git cat-file --batch`, not a git process each.
    heads = _head_contents(desk, [INDEX_FILE] * touches_memory + [CONFIG_PATH], known)
    if touches_memory:
        base = heads.get(f"HEAD:{INDEX_FILE}")
        index = writes[INDEX_FILE] if INDEX_FILE in writes else base
        gone = [p for p, data in writes.items() if data is None]
        added = [p for p, data in writes.items() if data is not None]
        like = _like(git, added, gone, known.like if known is not None else None)
        memory = MemorySet(index, base, lambda: files_under(MEMORY_PREFIX), read, like,
                           head_index=known.index if known is not None else None,
                           base_clean=known is not None and known.index_clean)
    def files_under(spec: str) -> dict[str, str]:
        head = git.refs.head()
        if spec.endswith("/"):
            return written(git.worktree.ls_tree(head, spec, recursive=True) if head else {}, spec)
        return written(git.worktree.committed_blobs([spec]) if head else {}, spec)

    report, _ = run_rules(desk, changes, memory, read, message, now,
                     head_config=lambda: heads.get(f"HEAD:{CONFIG_PATH}"), files_under=files_under)
    return report


def fix_index(desk: DeskFolder, regenerated: bytes, staged: bytes | None) -> bool:
    """Write the regenerated MEMORY.md into the work tree (`--staged --fix`); True if changed. Only
    over the staged MEMORY.md: a work-tree one that differs is the person's and never written over."""
    from desk.storage.reading import SymlinkError, read_regular

    path = desk.path(INDEX_FILE)
    try:
        current: bytes | None = read_regular(path, desk.root)
    except (FileNotFoundError, SymlinkError):
        current = None
    if current == regenerated or current != staged:
        return False
    atomic_write(path, regenerated)
    return True


def require_valid(desk: DeskFolder, writes: Mapping[str, bytes | None], message: str,
                  now: dt.datetime | None = None, known: KnownHead | None = None) -> Report:
    """`validate_writes`, raising InvalidFileError (exit 3) when any rule fails."""
    report = validate_writes(desk, writes, message, now, known)
    if not report.ok:
        raise InvalidFileError(report.errors, hint="nothing was committed; fix the findings above")
    return report
