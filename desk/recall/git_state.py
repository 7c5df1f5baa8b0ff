"""What recall and context ask git first, startable before their own modules load.

A cold `desk recall` imports the ranker, the term tables and the stemmer before the search
cache's refresh asks git which memory files differ from HEAD, and both take a while.
`Desk.recall` starts the git processes first (`search_git_state`) and hands them to the cache
(`SearchCache.take_asked`), so the two overlap. `Desk.context` does the same with memory/'s state
and the blobs of the files a read shows (`context_git_state`), which git answers while the context
modules load and the sections are read.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path
from stat import S_ISDIR, S_ISREG

from desk.errors import DeskError
from desk.layout import (AGENTS_FILE, ARCHIVE_DIR, INDEX_FILE, MEMORY_DIR, MISTAKES_FILE, NOW_FILE, SOUL_FILE,
                         DeskFolder, profile_path, project_index_path, scope_id)
from desk.storage.git import FolderState


def search_git_state(desk: DeskFolder) -> FolderState:
    """memory/ as git sees it (untracked files git ignores left out, as `git status` shows them)
    and HEAD's memory and archive trees (`FolderState.ids`, kept by commit: `KeptIds`)."""
    return KeptIds(desk, ignored=False, also=[f"HEAD:{ARCHIVE_DIR}"])


def start_folder_state(desk: DeskFolder, also: Iterable[str] = ()) -> FolderState | None:
    """memory/ as git sees it, asked now (`FolderState`; `also`: more object names to look
    up at the same HEAD); None when git cannot say. The untracked files come from their record
    (`KnownUntracked`) while it holds, else from git, and are recorded for the next read."""
    try:
        return KnownUntracked(desk, also)
    except DeskError:
        return None


class KeptIds(FolderState):
    """memory/'s state (`FolderState`) whose HEAD ids (`HEAD:memory`, `HEAD:AGENTS.md`, ...)
    come from a record when it holds them, instead of a `git cat-file` per read (a process start,
    which on a busy machine can wait a scheduler tick for a core).

    A commit's trees never change, so what `<commit>:<path>` names is a function of the commit
    id, and the record (`.git/desk-cache/head-ids`) is keyed by it. The one thing that could make
    git answer otherwise for the same commit is a replace ref (`git replace`): the record is used
    only while there is no `refs/replace/` folder and `packed-refs` has the stat it had when the
    record was written (which was written only when `packed-refs` held no replace ref), and
    never in a linked work tree, under reftable or with a variable that moves refs or replace
    refs (`GIT_DIR`, `GIT_NAMESPACE`, `GIT_REPLACE_REF_BASE`: `Refs.default_replace_refs`). The record keeps the last
    commit's ids, all names any read asked at that commit; a read that asks a name it lacks asks
    git for all its names and adds them."""

    def __init__(self, desk: DeskFolder, *, ignored: bool = True, also: Iterable[str] = (),
                 untracked: bool = True) -> None:
        self._ids_record = desk.cache_dir / _IDS_RECORD
        self._git_dir = desk.git.git_dir()
        refs = _refs_stamp(self._git_dir) if desk.git.refs.default_replace_refs() else None
        self._refs = None if refs is None else f"{refs} {_code(desk)}"  # the record's key (desk.storage.derived)
        self._recorded_ids: dict[str, str | None] = {}
        self._ids_kept = False
        super().__init__(desk.git, MEMORY_DIR, ignored=ignored, also=also, untracked=untracked,
                         known_ids=self._known_ids)

    def _known_ids(self, head: str) -> dict[str, str | None] | None:
        if self._refs is None:
            return None
        self._recorded_ids = _recorded_ids(self._ids_record, head, self._refs) or {}
        return self._recorded_ids

    @property
    def ids(self) -> dict[str, str | None]:
        """As `FolderState.ids`; what git looked up is recorded for the next read."""
        found = super().ids
        head = found.get("HEAD")
        if self.looked_up and not self._ids_kept and self._refs is not None and head is not None:
            self._ids_kept = True
            if _no_replace_refs(self._git_dir):
                _keep_ids(self._ids_record, head, self._refs,
                          {**self._recorded_ids, **{n: i for n, i in found.items() if n != "HEAD"}})
        return found


class KnownUntracked(KeptIds):
    """memory/'s state with its untracked files (ignored ones included) known without `git
    ls-files -o` while nothing could have changed them.

    Untracked are the folder's entries that the index does not hold: they change only when an
    entry is added to or removed from memory/ (which sets the folder's mtime and ctime, POSIX) or
    when the index changes (git writes a new .git/index and renames it over the old one: a new
    inode). So the untracked names git listed are recorded (`.git/desk-cache/memory-untracked`)
    with the folder's and the index's stat, taken before git listed them, and reused while both
    stats are the same. A record is written only when both were last changed `_RACY_NS` or more
    before the stat was taken (a change in the same clock tick could leave them as they were).
    The files' contents are not in the record: the caller `lstat`s every untracked file it is
    given (`desk.recall.context.cache.scan_memory_folder`), as git's untracked cache does. Only
    the untracked files directly in memory/ are recorded: memories are the `.md` files there.
    """

    def __init__(self, desk: DeskFolder, also: Iterable[str] = ()) -> None:
        self._record = desk.cache_dir / _RECORD
        self._stamp = _stamp(desk)
        self._known = _recorded(self._record, self._stamp) if self._stamp is not None else None
        super().__init__(desk, also=also, untracked=self._known is None)

    def result(self) -> tuple[str | None, list[str]] | None:
        """As `FolderState.result`; from a record, of the untracked files only those directly in
        memory/ are named (memories are; a file added in a subfolder changes that subfolder's
        stat, not memory/'s)."""
        found = super().result()
        if found is None:
            return None
        if self._known is not None:
            return found[0], sorted({*found[1], *self._known})
        if self._stamp is not None and self.listed_untracked is not None and _settled(self._stamp):
            _keep(self._record, self._stamp,
                  [p for p in self.listed_untracked if "/" not in p[len(MEMORY_DIR) + 1:]])
        return found


_RECORD = "memory-untracked"
_RACY_NS = 3_000_000_000  # as desk.recall.context.cache


def _stamp(desk: DeskFolder) -> tuple[int, ...] | None:
    """memory/'s and the index's stat (device, inode, mtime, ctime; the index's size too) and the
    code's fingerprint, or None when either is missing or memory/ is not a plain folder (no
    record then)."""
    try:
        folder = os.lstat(desk.path(MEMORY_DIR))
        index = os.stat(desk.git.git_dir() / "index")
    except (OSError, DeskError):
        return None
    if not S_ISDIR(folder.st_mode) or not S_ISREG(index.st_mode):
        return None
    return (folder.st_dev, folder.st_ino, folder.st_mtime_ns, folder.st_ctime_ns,
            index.st_dev, index.st_ino, index.st_size, index.st_mtime_ns, index.st_ctime_ns,
            int(_code(desk), 16), time.time_ns())  # the code's fingerprint too: desk.storage.derived


def _code(desk: DeskFolder) -> str:
    """The fingerprint of the code that writes these records (both have the same builders)."""
    from desk.storage.derived import registered

    return registered(_RECORD).fingerprint(desk.git_dir)


def _settled(stamp: tuple[int, ...]) -> bool:
    taken = stamp[-1]
    return all(taken - changed >= _RACY_NS for changed in (stamp[2], stamp[3], stamp[7], stamp[8]))


def _recorded(path: Path, stamp: tuple[int, ...]) -> list[str] | None:
    """The untracked paths recorded under `stamp` (its time left out), or None (no record,
    another stamp, or a record not whole: its head names the length of what follows)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head, _, names = data.partition(b"\n")
    if head != _head(stamp, len(names)):
        return None
    return names.decode("utf-8", "surrogateescape").split("\0") if names else []


def _head(stamp: tuple[int, ...], length: int) -> bytes:
    return " ".join(map(str, (*stamp[:-1], length))).encode()


def _keep(path: Path, stamp: tuple[int, ...], untracked: list[str]) -> None:
    """Record `untracked` under `stamp`: a temporary file of this writer's own renamed over the
    record, so a reader sees the old record or the new one. A record that cannot be written only
    costs a listing; it is not synced to disk (one cut short by a crash does not match its head)."""
    names = "\0".join(untracked).encode("utf-8", "surrogateescape")
    _replace(path, _head(stamp, len(names)) + b"\n" + names)


def _replace(path: Path, data: bytes) -> None:
    from desk.storage.atomic import write_derived

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # a desk this process cannot write: the record is not kept
    write_derived(path, data)


_IDS_RECORD = "head-ids"


def _refs_stamp(git_dir: Path) -> str | None:
    """`packed-refs`' stat (`-` when there is none), or None when a replace ref may be in effect
    or the refs are not files in `git_dir` (no record is used then)."""
    if any(os.path.lexists(git_dir / name) for name in ("commondir", "reftable", "refs/replace")):
        return None
    try:
        found = os.stat(git_dir / "packed-refs")
    except FileNotFoundError:
        return "-"
    except OSError:
        return None
    return f"{found.st_dev}.{found.st_ino}.{found.st_size}.{found.st_mtime_ns}.{found.st_ctime_ns}"


def _no_replace_refs(git_dir: Path) -> bool:
    """Whether `packed-refs` holds no replace ref (read only when a record is written)."""
    try:
        return b"refs/replace/" not in (git_dir / "packed-refs").read_bytes()
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _recorded_ids(path: Path, head: str, refs: str) -> dict[str, str | None] | None:
    """The ids recorded at `head` under `refs` (`{name: id, or None: not at that commit}`), or
    None (no record, another commit or refs stat, or a record not whole)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    first, _, body = data.partition(b"\n")
    if first != f"{head} {refs} {len(body)}".encode() or not body:
        return None
    fields = body.decode("utf-8", "surrogateescape").split("\0")
    return {name: found or None for name, found in zip(fields[::2], fields[1::2])}


def _keep_ids(path: Path, head: str, refs: str, ids: dict[str, str | None]) -> None:
    """Record `ids` at `head` under `refs` (replacing any record, as `_keep` writes one)."""
    body = "\0".join(f"{name}\0{found or ''}" for name, found in ids.items()).encode("utf-8", "surrogateescape")
    _replace(path, f"{head} {refs} {len(body)}".encode() + b"\n" + body)


def context_git_state(desk: DeskFolder, mode: str, query: str | None, user: str | None,
                      project: str | None) -> FolderState | None:
    """What a context read of `mode` asks git (`desk.recall.context.build_context` takes it):
    memory/'s state, when the read shows memories (the wake-up read, or any read with a query),
    with HEAD's blobs of the desk files it usually shows (`usual_reads`); None when it shows none."""
    if mode != "wake" and not (query is not None and query.strip()):
        return None
    return start_folder_state(desk, [f"HEAD:{rel}" for rel in usual_reads(mode, scope_id(user), project)])


def usual_reads(mode: str, scope: str, project: str | None) -> list[str]:
    """The desk files a read of `mode` shows unless a section is empty or over the budget."""
    if mode != "wake":
        return [NOW_FILE, MISTAKES_FILE]
    found = [AGENTS_FILE, SOUL_FILE, NOW_FILE, MISTAKES_FILE, profile_path(scope), INDEX_FILE]
    return found + ([project_index_path(project)] if project is not None else [])
