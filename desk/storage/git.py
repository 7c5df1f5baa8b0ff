"""The one module that talks to git.

desk drives git's own command line, like pre-commit's `git.py`, rather than GitPython's object
layer: GitPython's `IndexFile.commit` lost commits under concurrent writers on this machine and never
fsyncs or signs (docs/design.md §7), and `import git` alone costs ~0.2 s, which would blow the pre-commit
hook's and the CLI start-up budgets. A `Git` runs its commands with the variables git exports
inside hooks (`GIT_DIR`, `GIT_INDEX_FILE`, ...) stripped, unless the caller means the repository
being committed (`staged_git`).

Every git output is parsed here and nowhere else (`-z` lists, `--raw` diffs, `ls-tree`, commit
messages and their trailers); callers get typed data: `RawChange`, `Commit`, `{path: blob}` maps.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from desk.errors import ConflictError, GitError, RejectedError
from desk.storage.hashing import blake2b_hex
from desk.storage.hashing import sha1_hex as sha1_hex  # re-exported: the hook's SHA-1s

T = TypeVar("T")


class _ImportedOnFirstUse:
    """`subprocess`, imported when first used: importing it costs ~2 ms (with `signal` and
    `selectors`), and the reads that only start git through `Git._start` (a cold `desk context`
    or `desk recall`) never use it. The first attribute looked up replaces this with the module."""

    def __getattr__(self, name: str) -> Any:
        import subprocess as module

        globals()["subprocess"] = module
        return getattr(module, name)


if TYPE_CHECKING:
    import subprocess
else:
    subprocess = _ImportedOnFirstUse()

# Variables git sets for hooks and sub-commands; inherited by accident they point a git call at the
# wrong repository or index. Identity (GIT_AUTHOR_*, GIT_COMMITTER_*) and config injection are kept.
_REPO_ENV = (
    "GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_EDITOR",
    "GIT_REFLOG_ACTION", "GIT_QUARANTINE_PATH", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM",
)

# git commands desk runs that never write the index (every other mutating one may: _lock_files)
_INDEX_FREE = frozenset({"update-ref", "symbolic-ref", "fetch", "push", "config", "hash-object",
                         "commit-tree", "mktree", "tag", "branch", "pack-refs", "remote"})
# git commands that take no lock (reads, and objects written as new files)
_LOCK_FREE = frozenset({"hash-object", "commit-tree", "mktree", "cat-file", "ls-remote", "check-attr", "ls-tree",
                        "ls-files", "diff-tree", "rev-list", "log", "rev-parse", "merge-base", "for-each-ref"})
_REF_LOCKS = ("HEAD", "ORIG_HEAD", "AUTO_MERGE", "packed-refs")  # what a commit, merge or reset may lock
INDEX_LOCK_WAIT = 10.0  # seconds a mutating git call waits for another git process's index.lock
FALLBACK_NAME = "desk"
# What doctor does with a lock whose owner is unknown (desk.guard.doctor keeps to it): a lock a
# desk git process left when it died is removed by the next desk command at once.
LOCK_STALE_AFTER = 300  # seconds
LOCK_HINT = ("wait for the git command to finish; `desk doctor` lists every lock and whether a git "
             "process is running in the desk: when none is, `desk doctor --repair` removes a lock "
             f"left by a killed desk command at once and any other once it is {LOCK_STALE_AFTER // 60} "
             "minutes old (or remove the lock file it names yourself)")
PRIVATE_INDEX = "desk-index"  # desk's own index in .git/, never the person's
NULL_SHA = "0" * 40
FALLBACK_EMAIL = "desk@localhost"
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_LISTING = ("ls-files", "-z", "-t", "-c", "-s", "-m", "-d", "-o", "--exclude-standard")
# the keys `Git.config_values` reads
_NOT_CACHED = re.compile(rb"\0[^H]")  # in `b"\0" + listing`: a record whose `-t` tag is not `H`


def clean_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment without the repository-selecting variables git exports in hooks."""
    env = dict(os.environ if base is None else base)
    for key in _REPO_ENV:
        env.pop(key, None)
    return env


_LARGE_BLOB = 1 << 16
_large_blobs: dict[bytes, str] = {}  # the last few large contents hashed, by content
_LARGE_KEPT = 4


def blob_sha(content: bytes) -> str:
    """The object id git gives `content` as a blob (SHA-1 repositories).

    A mutation hashes the same large file several times (MEMORY.md: its clean check, the pending
    marker, the gate, the record of what desk published): the last few large contents are remembered by content (a
    bytes object caches its own hash, and an equal one compares by memcmp), so each is hashed once.
    """
    if len(content) < _LARGE_BLOB:
        return sha1_hex(b"blob %d\0" % len(content) + content)
    sha = _large_blobs.get(content)
    if sha is None:
        sha = sha1_hex(b"blob %d\0" % len(content) + content)
        if len(_large_blobs) >= _LARGE_KEPT:
            del _large_blobs[next(iter(_large_blobs))]
        _large_blobs[content] = sha
    return sha


def toplevel(path: Path) -> Path | None:
    """The work tree root enclosing `path`, or None when `path` is not inside a git work tree."""
    proc = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=path, env=clean_env(),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    return Path(proc.stdout.strip())


def hook_toplevel() -> Path:
    """Inside a git hook: the work tree being committed (git's exported variables are honoured)."""
    out = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True).stdout
    return Path(out.strip() or ".").resolve()


def staged_git(root: Path) -> Git:
    """Inside a git hook: a Git for the repository being committed, keeping the hook's index.

    git exports GIT_INDEX_FILE (a temporary index for `git commit -- paths`) and may export a
    relative GIT_DIR; they are made absolute so they hold from the work tree root too.
    """
    absolute = {key: os.path.abspath(os.environ[key]) for key in ("GIT_INDEX_FILE", "GIT_DIR")
                if os.environ.get(key)}
    return Git(root, hook_env=True).with_env(**absolute)


def hook_index(git: Git) -> Path:
    """The index file a `staged_git` commits from: git's GIT_INDEX_FILE, else `.git/index`."""
    return Path(git._env.get("GIT_INDEX_FILE") or git.git_dir() / "index")


@contextmanager
def staged_snapshot(root: Path) -> Iterator[Git]:
    """Inside a git hook: a Git reading a private copy of the index being committed.

    A plain `git commit` does not hold index.lock while its hooks run, so another writer (desk,
    publishing its own commit) may replace the index between two reads; the copy keeps every read
    of one check on one index.
    """
    git = staged_git(root)
    source = hook_index(git)
    snapshot = git.git_dir() / f"desk-hook-index-{os.getpid()}"
    try:
        if source.exists():
            # A plain copy (what shutil.copyfile does): importing shutil (with bz2 and lzma) on
            # every hook run costs more than this read.
            snapshot.write_bytes(source.read_bytes())
        yield git.with_env(GIT_INDEX_FILE=str(snapshot))
    finally:
        snapshot.unlink(missing_ok=True)


# The records below are NamedTuples, not frozen dataclasses: every desk command imports this
# module, and a frozen dataclass costs ~0.35 ms to create at import where a NamedTuple costs ~0.05 ms.
class RawChange(NamedTuple):
    """One path of a `--raw` diff (read with `--no-renames`): the blob it had and the blob it has."""

    path: str
    status: str  # A added, D deleted, M modified, T type changed, U unmerged
    old_mode: str
    new_mode: str
    old_blob: str | None  # None: the path did not exist before
    new_blob: str | None  # None: deleted (or unmerged)


class MergeChange(NamedTuple):
    """A path a merge commit made differ from every parent (`git log -c --raw`)."""

    path: str
    old_blobs: tuple[str | None, ...]  # each parent's blob, in parent order (None: absent there)
    new_blob: str | None  # None: the merge deleted it


class Commit(NamedTuple):
    """One commit as the audit trail shows it."""

    sha: str
    author: str
    email: str
    date: str
    subject: str
    trailers: dict[str, list[str]]  # keys as written, see parse_trailers
    paths: list[str]
    message: str  # the whole message (`%B`)
    changes: list[RawChange]  # what it changed, `paths` in full

    def to_json(self) -> dict[str, object]:
        return {"commit": self.sha, "author": self.author, "email": self.email, "date": self.date,
                "subject": self.subject, "trailers": self.trailers, "paths": self.paths}


class WorkTreeListing:
    """The work tree as git's index sees it (`Git.work_tree_listing`), parsed as far as asked:
    a desk of 10,000 files lists 10,000 records, and a caller that only needs the few changed
    ones, the few under one folder and a digest of the rest should not pay for the others. The
    digest is a BLAKE2b (`_blake2`, no OpenSSL) and the records that are not `H` (a file as the
    index has it) are found by one regex search, so an unchanged desk's listing is never split.

    One `git ls-files -t -c -s -m -d -o --exclude-standard`: measured against splitting it into
    `ls-files -c -s`, `diff-files` (which stats on several threads) and `ls-files -o` run at
    once, the one process was as fast or faster on 2 cores (2026-12-01: 22.6 vs 24.5 ms at
    10,000 files): each git start costs ~1-2 ms, and the stat walk did not get faster in threads.
    """

    def __init__(self, out: bytes) -> None:
        self._out = b"\0" + out  # each record follows a NUL
        self.digest = blake2b_hex(out)  # equal digests, equal listings
        # Paths only the work tree knows: changed or deleted since the index, unmerged, not
        # checked out, or untracked and not ignored (every record but `H`, a cached entry).
        self.elsewhere: set[str] = set()
        for found in _NOT_CACHED.finditer(self._out):
            end = self._out.find(b"\0", found.end())
            record = self._out[found.start() + 1:end if end >= 0 else len(self._out)]
            self.elsewhere.add(_path(record.partition(b" " if record[:1] == b"?" else b"\t")[2]))

    @property
    def records(self) -> bytes:
        """The listing as git printed it, each record after a NUL (`b"\\0" + out`)."""
        return self._out

    def entry(self, path: str) -> tuple[str, str] | None:
        """`(mode, blob)` of `path` as `clean()` would give it, found by byte search (not the
        whole listing parsed): None when git does not find it as the index has it."""
        return None if path in self.elsewhere else self.entry_in(self._out, path)

    @staticmethod
    def entry_in(records: bytes, path: str) -> tuple[str, str] | None:
        """`(mode, blob)` of the `H` stage-0 record of `path` in `records` (`.records` of a
        listing), or None."""
        needle = b"\t" + path.encode("utf-8", "surrogateescape") + b"\0"
        at = records.find(needle)
        while at >= 0:
            fields = records[records.rfind(b"\0", 0, at) + 1:at].split()
            if len(fields) == 4 and fields[0] == b"H" and fields[3] == b"0":
                return fields[1].decode(), fields[2].decode()
            at = records.find(needle, at + 1)
        return None

    def named(self, name: str) -> list[str]:
        """The listed paths (tracked or not) whose last component is `name`, found by byte search."""
        found = set()
        needle = name.encode("utf-8", "surrogateescape") + b"\0"
        at = self._out.find(needle)
        while at >= 0:
            record = self._out[self._out.rfind(b"\0", 0, at) + 1:at + len(needle) - 1]
            path = _path(record.partition(b" " if record[:1] == b"?" else b"\t")[2])
            if path.rsplit("/", 1)[-1] == name:
                found.add(path)
            at = self._out.find(needle, at + 1)
        return sorted(found)

    def clean(self, prefix: str = "") -> dict[str, tuple[str, str]]:
        """`{path: (mode, blob)}` of the files (under `prefix`) git finds as the index has them:
        by its stat cache, comparing content when the stat data cannot tell. Under a folder,
        only the records naming a path in it are read (found by byte search)."""
        out = self._out
        if prefix:
            marker = b"\t" + prefix.encode()
            records = []
            at = out.find(marker)
            while at >= 0:
                end = out.find(b"\0", at)
                records.append(out[out.rfind(b"\0", 0, at) + 1:end if end >= 0 else len(out)])
                at = out.find(marker, end) if end >= 0 else -1
        else:
            records = out.split(b"\0")
        found: dict[str, tuple[str, str]] = {}
        for record in records:
            if record.startswith(b"H "):
                meta, _, raw_path = record[2:].partition(b"\t")
                path = _path(raw_path)
                fields = meta.split()
                if (len(fields) == 3 and fields[2] == b"0" and path.startswith(prefix)
                        and path not in self.elsewhere):
                    found[path] = (fields[0].decode(), fields[1].decode())
        return found


class _Spawned:
    """A read-only git command started with `os.posix_spawn` (`Git._start`), its output read
    by `communicate` as `subprocess.Popen`'s is. Not Popen: a cold read that only starts git this
    way never imports `subprocess` (~2 ms). git runs in `root` through `git -C root` (a spawned
    process cannot be given a folder), which git treats exactly as starting there. SIGPIPE and
    SIGXFSZ, which Python ignores, are git's defaults again, as Popen restores them. Every file
    descriptor desk and SQLite open is close-on-exec, so git inherits only its three pipes."""

    __slots__ = ("args", "pid", "returncode", "_pipes", "_outputs")

    def __init__(self, root: Path, args: tuple[str, ...], env: Mapping[str, str], input: bytes | None) -> None:
        _reap_dropped()
        self.args = ["git", *args]
        self.returncode: int | None = None
        self._outputs: tuple[bytes, bytes] | None = None
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        in_r, in_w = os.pipe() if input is not None else (-1, -1)
        actions: list[tuple[Any, ...]] = [(os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2)]
        actions.append((os.POSIX_SPAWN_DUP2, in_r, 0) if input is not None
                       else (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0))
        try:
            self.pid = os.posix_spawn(_git_program(env.get("PATH", os.defpath)), ["git", "-C", str(root), *args],
                                      env, file_actions=actions, setsigdef=_DEFAULT_SIGNALS)
        except BaseException:
            for fd in (out_r, err_r, in_w):
                if fd >= 0:
                    os.close(fd)
            raise
        finally:
            for fd in (out_w, err_w, in_r):
                if fd >= 0:
                    os.close(fd)
        self._pipes = [out_r, err_r]
        if input is not None:
            try:
                view = memoryview(input)
                while view:
                    view = view[os.write(in_w, view):]
            except BrokenPipeError:
                pass  # git ended without reading: its exit status says why
            finally:
                os.close(in_w)

    def communicate(self, input: bytes | None = None) -> tuple[bytes, bytes]:
        """`(stdout, stderr)` once git has ended (`returncode` set); asked again, the same."""
        if input:
            raise ValueError("a spawned git command's input is given when it starts")
        if self._outputs is None:
            import select

            chunks: dict[int, list[bytes]] = {fd: [] for fd in self._pipes}
            poller = select.poll()
            for fd in self._pipes:
                poller.register(fd, select.POLLIN)
            try:
                while len(self._pipes):
                    for fd, _event in poller.poll():
                        data = os.read(fd, 1 << 16)
                        if data:
                            chunks[fd].append(data)
                        else:
                            poller.unregister(fd)
                            self._pipes.remove(fd)
                            os.close(fd)
            finally:
                for fd in self._pipes:
                    os.close(fd)
                self._pipes = []
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
            out, err = (b"".join(found) for found in chunks.values())
            self._outputs = out, err
        return self._outputs

    def __del__(self) -> None:
        """Dropped unread (an error before its answer was asked): its pipes close, so git ends,
        and the process is reaped at the next start (`_reap_dropped`), as Popen's are."""
        if getattr(self, "_outputs", True) is None and hasattr(self, "pid"):
            for fd in self._pipes:
                os.close(fd)
            self._pipes = []
            _dropped.append(self.pid)


_dropped: list[int] = []  # pids of `_Spawned` processes dropped unread, not yet reaped
_reaping = threading.Lock()  # `_reap_dropped`
# What Popen's child resets: signals Python ignores, git's defaults.
_DEFAULT_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ)


def which_git(path: str) -> str | None:
    """The `git` that PATH names first, as Popen finds it (not `shutil.which`: importing shutil
    loads bz2 and lzma, ~2 ms); None when none does. Looked up once per PATH."""
    if path not in _programs:
        _programs[path] = next((candidate for candidate in (os.path.join(folder or ".", "git")
                                                           for folder in path.split(os.pathsep))
                                if os.path.isfile(candidate) and os.access(candidate, os.X_OK)), None)
    return _programs[path]


_programs: dict[str, str | None] = {}


def _git_program(path: str) -> str:
    """The `git` that `PATH` (the child's) names first; FileNotFoundError when none does, as
    Popen raises it."""
    found = which_git(path)
    if found is None:
        raise FileNotFoundError(2, "No such file or directory", "git")
    return found


def _reap_dropped() -> None:
    """Wait for the `_Spawned` processes dropped unread that have ended. One thread at a time
    (`desk serve` reads in threads): a pid reaped is off the list before another thread could
    see it, so no thread waits on a pid the system has given to a new child since."""
    if not _dropped:
        return
    with _reaping:
        for pid in list(_dropped):
            try:
                done, _status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                _dropped.remove(pid)


class _Started:
    """Read-only git commands running (`Git._start`); `wait` returns their outputs in order."""

    def __init__(self, commands: tuple[tuple[str, ...], ...],
                 procs: Sequence[_Spawned | subprocess.Popen[bytes]]) -> None:
        self.commands = commands
        self.procs = procs

    def split(self) -> list[_Started]:
        """One `_Started` per command, each waited for on its own."""
        return [_Started((args,), [proc]) for args, proc in zip(self.commands, self.procs)]

    def wait(self, *, check: bool = True, input: bytes | None = None) -> list[bytes]:
        outputs = [proc.communicate(input) for proc in self.procs]
        for args, proc, (out, err) in zip(self.commands, self.procs, outputs):
            if check and proc.returncode != 0:
                message = err.decode("utf-8", "replace").strip() or out.decode("utf-8", "replace").strip()
                raise GitError(f"git {_command(args)} failed: {message}",
                               hint="run `desk doctor` to check the desk's git state")
        return [out for out, _ in outputs]


class Answer(Generic[T]):
    """Read-only git commands running; `.result()` waits for them and parses their outputs
    (GitError, in git's words, when one failed)."""

    def __init__(self, started: _Started, parse: Callable[[list[bytes]], T]) -> None:
        self._started = started
        self._parse = parse

    def result(self) -> T:
        return self._parse(self._started.wait())


class StartedListing:
    """`Git.start_work_tree_listing`: the listing and HEAD's tree of a folder, being computed."""

    def __init__(self, listing: _Started, tree: _Started | None) -> None:
        self._listing = listing
        self._tree = tree
        self._result: tuple[WorkTreeListing, dict[str, str]] | None = None

    def result(self) -> tuple[WorkTreeListing, dict[str, str]]:
        """The listing and `{path: blob}` of HEAD's folder (empty without HEAD); GitError when git
        fails. Asked again, the same answer."""
        if self._result is None:
            listing = self._listing.wait()[0]
            tree = self._tree.wait()[0] if self._tree is not None else b""
            self._result = WorkTreeListing(listing), _parse_ls_tree(tree)
        return self._result


class FolderState:
    """A work-tree folder as git sees it (`Git.folder_state`), for a cache keyed by it.

    `result()` gives `(tree, paths)`: the id of HEAD's tree of the folder (None when HEAD has no
    such folder) and every path under the folder that git cannot vouch is that tree's blob: the
    ones whose work-tree file differs from HEAD, staged or not, deleted or replaced (`git
    diff-index HEAD`, which compares through the index's stat data, in C, and reads a file's
    content when its stat cannot decide, as git does for a racily clean entry), and the ones the
    index does not hold (`git ls-files -o`; the ignored ones too unless `ignored` is False).
    Every other file under the folder is, byte for byte, its blob in that tree (unless `ignored`
    is False and git ignores it). `result()` is None without a HEAD commit. `ids` holds the object
    ids of HEAD, `HEAD:folder` and the names in `also` (None for one that does not exist).

    HEAD's commit is read first (`Git.head`); then the comparison against that commit, the
    untracked listing and the look-up of the tree and the `also` names at that commit (one
    `cat-file`, unless `known_ids` knows them) start together, none waited for until asked: a
    commit landing meanwhile cannot pair one commit's tree with another's differences. Entries marked `assume-unchanged` or
    `skip-worktree` are, by their own definition, not looked at by git. With `untracked=False` no
    untracked listing runs and `paths` holds only the files that differ from HEAD (the caller
    adds the untracked ones it knows); else `listed_untracked` holds that listing after `result()`.
    """

    def __init__(self, git: Git, folder: str, *, ignored: bool = True, also: Iterable[str] = (),
                 untracked: bool = True,
                 known_ids: Callable[[str], Mapping[str, str | None] | None] | None = None) -> None:
        spec = f":(literal){folder}/"
        self._folder = folder
        self._done = False
        self._changed: _Started | None = None
        self._lookup: _Started | None = None
        self._ids: dict[str, str | None] | None = None
        self.listed_untracked: list[str] | None = None  # what `ls-files -o` named, once `result()` ran
        self._head = head = git.head()
        self._names = [n for n in dict.fromkeys([f"HEAD:{folder}", *also]) if n != "HEAD" and "\n" not in n]
        # The comparison first: it takes longest, and a process started while another git is
        # starting can wait a scheduler tick for a core (~1-4 ms measured on 2 cores).
        if head is not None:
            self._changed = git._start(("diff-index", "--name-only", "-z", "--no-renames", head, "--", spec))
        self._untracked = git._start(("ls-files", "-o", "-z", *(() if ignored else ("--exclude-standard",)),
                                      "--", spec)) if untracked else None
        if head is not None:
            # `known_ids(head)`: the ids at that commit known without git (a commit's trees never
            # change), or None; else one `cat-file` looks them up (`looked_up` says which)
            known = known_ids(head) if known_ids is not None else None
            if known is not None and all(name in known for name in self._names):
                self._ids = {**{name: known[name] for name in self._names}, "HEAD": head}
            else:
                at_head = [head + n[4:] if n.startswith("HEAD:") else n for n in self._names]
                self._lookup = git._start(("cat-file", "--batch-check=%(objectname)"),
                                          input=("\n".join(at_head) + "\n").encode("utf-8", "surrogateescape"))

    @property
    def looked_up(self) -> bool:
        """Whether git looked the ids up (not known before: `known_ids`)."""
        return self._lookup is not None

    @property
    def ids(self) -> dict[str, str | None]:
        """`{name: object id or None}` for HEAD, `HEAD:folder` and the `also` names, at the commit
        the comparison used (waits for the look-up)."""
        if self._ids is None:
            found: dict[str, str | None] = dict.fromkeys(self._names)
            if self._lookup is not None:
                lines = self._lookup.wait()[0].decode("utf-8", "surrogateescape").split("\n")
                for name, line in zip(self._names, lines):
                    found[name] = line if re.fullmatch(r"[0-9a-f]{40,64}", line) else None
            found["HEAD"] = self._head
            self._ids = found
        return self._ids

    @property
    def tree(self) -> str | None:
        """HEAD's tree of the folder (None without one)."""
        return self.ids.get(f"HEAD:{self._folder}")

    def close(self) -> None:
        """Wait for the processes without looking at their answer (it was not needed)."""
        if not self._done:
            self._done = True
            for started in (self._untracked, self._lookup, self._changed):
                for proc in started.procs if started is not None else ():
                    proc.communicate()

    def result(self) -> tuple[str | None, list[str]] | None:
        """`(tree, paths)` as the class says, or None without a HEAD commit; GitError when git fails."""
        self._done = True
        untracked = self._untracked.wait()[0] if self._untracked is not None else None
        if self._changed is None:
            return None
        changed = self._changed.wait()[0]
        self.listed_untracked = sorted(_path_list(untracked)) if untracked is not None else None
        return self.tree, sorted({*_path_list(changed), *(self.listed_untracked or ())})


_DISK_FULL = ("No space left on device", "Out of diskspace")  # how git says ENOSPC (strerror; its own)


def _nearly_full(path: Path) -> bool:
    """Whether the file system holding `path` has less than 1 MiB left: git's "couldn't write
    'refs/heads/main.lock'" names no cause, and on such a disk it is the space."""
    try:
        stats = os.statvfs(path)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < 1 << 20
_CONFIG_QUERY = (r"^((user|author|committer)\.(name|email)|core\.hookspath|i18n\.commitencoding"
                 r"|commit\.gpgsign|core\.fsync)$")


class Git:
    """git commands run in one work tree. `hook_env=True` keeps git's hook variables (the staged index).

    The methods return parsed, typed data; `_run` (the only place a git process starts, with
    `blob_at` and the two toplevel helpers) stays inside this module.
    """

    def __init__(self, root: Path, *, hook_env: bool = False) -> None:
        self.root = root
        self._env = dict(os.environ) if hook_env else clean_env()
        self._identity: list[str] | None = None
        self._parent: Git | None = None  # `with_env`'s source: identity and config come from it
        self._config: dict[str, str] | None = None
        self._config_started: _Started | None = None  # `start_config_values`
        self._config_read_at = 0
        self._reader: subprocess.Popen[bytes] | None = None  # `start_object_reader`
        self._git_dir: Path | None = None

    def _run(self, *args: str, input: bytes | None = None, check: bool = True,
             read_only: bool = False, own_session: bool = False) -> bytes:
        """Run `git ARGS` in the work tree and return stdout; raise GitError with git's message.

        `own_session`: git runs in a session of its own, out of the terminal's foreground process
        group, so a Ctrl-C at the terminal reaches desk (which may hold it until git is done) and
        not git half way through the work tree."""
        env = self._env
        if read_only:
            # Read-only calls must not take .git/index.lock (a status refresh would).
            env = {**env, "GIT_OPTIONAL_LOCKS": "0"}
        deadline = time.monotonic() + INDEX_LOCK_WAIT
        delay = 0.01
        locks = [] if read_only else self._recorded_locks(args)
        while True:
            if locks:
                proc = self._run_recorded(args, env, input, locks, own_session)
            else:
                proc = subprocess.run(["git", *args], cwd=self.root, env=env, input=input,
                                      capture_output=True, start_new_session=own_session)
            if not check or proc.returncode == 0:
                return proc.stdout
            message = proc.stderr.decode("utf-8", "replace").strip() or proc.stdout.decode(
                "utf-8", "replace").strip()
            if "index.lock" not in message or "File exists" not in message:
                raise self._failure(args, message)
            # Another git process (a person's commit, an editor's status refresh) holds the index:
            # wait for it like desk waits for its own lock, then give up with exit 4.
            if time.monotonic() >= deadline:
                raise ConflictError(
                    f"git {_command(args)}: another git process has held .git/index.lock for "
                    f"{INDEX_LOCK_WAIT:g} s", hint=LOCK_HINT)
            time.sleep(delay)
            delay = min(delay * 2, 0.25)

    def _failure(self, args: tuple[str, ...], message: str) -> Exception:
        """The error for `git ARGS` failing with `message`: ENOSPC naming the git folder when git
        says the disk is full (or could not write a file on a nearly full disk, which its words do
        not say), else GitError in git's words."""
        if any(words in message for words in _DISK_FULL) or (
                "couldn't write" in message and _nearly_full(self.git_dir())):
            return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), f"{self.git_dir()} (git {args[0]})")
        return GitError(f"git {_command(args)} failed: {message}", hint="run `desk doctor` to check the desk's git state")

    def _run_recorded(self, args: tuple[str, ...], env: Mapping[str, str], input: bytes | None,
                      locks: list[Path], own_session: bool = False) -> subprocess.CompletedProcess[bytes]:
        """Start git and write down the lock files it may take in the active child record
        (desk.storage.git_locks) before it starts and with its pid once it runs, then wait for it:
        if desk is killed, the next desk command knows whose locks are left and that their owner
        is dead."""
        from desk.storage.git_locks import record_git_child

        start = record_git_child(locks)
        child = subprocess.Popen(["git", *args], cwd=self.root, env=env, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=own_session)
        record_git_child(locks, child.pid, start)
        out, err = child.communicate(input)
        return subprocess.CompletedProcess(child.args, child.returncode, out, err)

    def _recorded_locks(self, args: tuple[str, ...]) -> list[Path]:
        """The lock files of `_lock_files` while desk records its git processes, else none."""
        from desk.storage.git_locks import recording  # not with the rules (desk.gate.verdicts)

        return self._lock_files(args) if recording() else []

    def _lock_files(self, args: tuple[str, ...]) -> list[Path]:
        """The lock files git may take for `args`, counted generously (a lock listed and never
        taken costs nothing; one taken and not listed blocks the desk after a kill): the index's,
        HEAD's and its branch's, those a merge or reset takes, the refs the arguments name (a
        refspec's destination too) and the config's."""
        command = next((a for a in args if not a.startswith("-") and "=" not in a), "")
        if command in _LOCK_FREE:
            return []
        git_dir = self.git_dir()
        locks = []
        if command not in _INDEX_FREE:
            index = self._env.get("GIT_INDEX_FILE")
            locks.append(Path(f"{index}.lock") if index else git_dir / "index.lock")
            if index and command in ("read-tree", "update-index", "write-tree"):
                return locks  # desk's private index: no ref is touched
        if command == "config":
            return [git_dir / "config.lock"]
        locks += [git_dir / f"{name}.lock" for name in _REF_LOCKS]
        try:
            head = (git_dir / "HEAD").read_text("utf-8").strip()
        except OSError:
            head = ""
        refs = [head[5:]] if head.startswith("ref: ") else []
        named = (a.lstrip("+").rpartition(":")[2] for a in args)  # `refs/x`, `+src:refs/x`
        refs += [ref for ref in named if ref.startswith("refs/")]
        locks += [git_dir / f"{ref}.lock" for ref in dict.fromkeys(refs)]
        return locks

    def _text(self, *args: str) -> str:
        return self._run(*args, read_only=True).decode("utf-8", "surrogateescape")

    # -- repository state -------------------------------------------------------------------

    def init(self) -> None:
        """`git init` on branch main, always with SHA-1 object ids (desk compares blob ids it computes
        itself with git's, in SHA-1; `GIT_DEFAULT_HASH=sha256` in the environment would otherwise
        make a repository desk cannot write)."""
        self._run("init", "-q", "-b", "main", "--object-format=sha1")

    def object_format(self) -> str:
        """The repository's object format: `sha1`, or `sha256` for a repository made with
        `git init --object-format=sha256`."""
        return self._text("rev-parse", "--show-object-format").strip()

    def object_id(self, name: str) -> str | None:
        """The object `name` (`HEAD^{commit}`, `REV:path`) resolves to, or None when there is none."""
        out = self._run("rev-parse", "-q", "--verify", name, check=False, read_only=True)
        return out.decode().strip() or None

    def head(self) -> str | None:
        """The commit HEAD points to, or None in a repository without commits.

        Read from `.git/HEAD` and the branch's ref file (or `packed-refs`) without a git process
        when the repository is a plain one; anything unusual (a linked work tree, reftable, a
        symbolic ref chain, a malformed file) is asked of git.
        """
        found = _head_from_files(self.git_dir()) if self._plain_refs() else _ASK_GIT
        if found is _ASK_GIT:
            return self.object_id("HEAD^{commit}")
        return found

    def ref(self, name: str) -> str | None:
        """The object a full ref name (`refs/remotes/origin/main`) points to, None when there is no
        such ref. Read from its loose file or `packed-refs` as `head()` reads a branch, else asked of git."""
        found = _ref_from_files(self.git_dir(), name) if self._plain_refs() else _ASK_GIT
        if found is _ASK_GIT:
            return self.object_id(f"{name}^{{}}") if name.startswith("refs/") else None
        return found

    def _plain_refs(self) -> bool:
        """Whether refs live as files in `.git` itself (no variable redirects git's ref lookup)."""
        return not any(self._env.get(key) for key in ("GIT_DIR", "GIT_COMMON_DIR", "GIT_NAMESPACE"))

    def default_replace_refs(self) -> bool:
        """Whether git looks for replace refs (`git replace`) where it does by default, under
        `refs/replace/` of `git_dir()`, and reads refs as files there (no variable moves them)."""
        return self._plain_refs() and not self._env.get("GIT_REPLACE_REF_BASE")

    def git_dir(self) -> Path:
        """The repository's git folder, absolute; found once per Git (`.git` without asking git)."""
        if self._git_dir is None:
            dot_git = self.root / ".git"
            if dot_git.is_dir() and not self._env.get("GIT_DIR"):
                self._git_dir = dot_git
            else:  # a linked work tree, a submodule, or GIT_DIR set: ask git
                self._git_dir = self._absolute(self._text("rev-parse", "--git-dir"))
        return self._git_dir

    def git_path(self, name: str) -> Path:
        """Where git keeps `name` (`hooks`: the hooks folder), absolute."""
        return self._absolute(self._text("rev-parse", "--git-path", name))

    def _absolute(self, printed: str) -> Path:
        path = Path(printed.strip())
        return path if path.is_absolute() else self.root / path

    def ls_tree(self, rev: str, folder: str, *, recursive: bool = False) -> dict[str, str]:
        """`{path: blob sha}` for the files directly in `folder` at `rev` (at any depth when
        `recursive`; empty when none)."""
        out = self._run("ls-tree", *(["-r"] if recursive else []), "-z", "--full-tree", rev, "--",
                        folder.rstrip("/") + "/", read_only=True)
        return _parse_ls_tree(out)

    def committed_blobs(self, paths: Iterable[str], rev: str = "HEAD") -> dict[str, str]:
        """`{path: blob sha}` for those of `paths` that are files at `rev` (empty when `rev` is not
        a commit, e.g. HEAD before the first commit)."""
        wanted = list(paths)
        if not wanted:
            return {}
        out = self._run("ls-tree", "-z", "--full-tree", rev, "--", *wanted, check=False,
                        read_only=True)
        return _parse_ls_tree(out)

    def ls_staged(self, folder: str) -> dict[str, str]:
        """`{path: blob sha}` for the files directly in `folder` in the index (hooks: the staged content)."""
        return _parse_ls_files(self._run("ls-files", "-s", "-z", "--", folder.rstrip("/") + "/",
                                         read_only=True))

    def ls_staged_files(self, paths: Iterable[str]) -> dict[str, str]:
        """`{path: blob sha}` for those of `paths` (files, or folders at any depth) in the index."""
        wanted = list(paths)
        if not wanted:
            return {}
        return _parse_ls_files(self._run("ls-files", "-s", "-z", "--", *wanted, read_only=True))

    def indexed_like(self, paths: Iterable[str]) -> set[str]:
        """The paths in the index equal to one of `paths` ignoring case (one `git ls-files`)."""
        specs = [f":(icase,literal){p}" for p in paths]
        if not specs:
            return set()
        return _path_list(self._run("ls-files", "-z", "--", *specs, read_only=True))

    def work_tree_files(self) -> set[str]:
        """Every file git tracks or would track (not ignored) in the work tree."""
        return _path_list(self._run("ls-files", "-z", "--cached", "--others", "--exclude-standard",
                                    read_only=True))

    def work_tree_listing(self) -> WorkTreeListing:
        """The work tree as git sees it, in one `git ls-files` (see WorkTreeListing)."""
        return WorkTreeListing(self._run(*_LISTING, read_only=True))

    def work_tree_listing_and_tree(self, folder: str) -> tuple[WorkTreeListing, dict[str, str]]:
        """`work_tree_listing()` and `ls_tree("HEAD", folder, recursive=True)`, the two git
        processes started together; the tree is empty before the first commit."""
        return self.start_work_tree_listing(folder).result()

    def start_work_tree_listing(self, folder: str) -> StartedListing:
        """`work_tree_listing_and_tree(folder)`, started now and answered by `.result()`: the
        caller imports and opens what it needs while git stats the work tree."""
        if self.head() is None:
            return StartedListing(self._start(_LISTING), None)
        return StartedListing(*self._start(_LISTING, ("ls-tree", "-r", "-z", "--full-tree", "HEAD", "--",
                                                      folder.rstrip("/") + "/")).split())

    def blob_at(self, rev: str, path: str) -> bytes | None:
        """The content of `path` at `rev` (`""` for the index), or None when it is not there."""
        proc = subprocess.run(["git", "cat-file", "blob", f"{rev}:{path}"], cwd=self.root,
                              env={**self._env, "GIT_OPTIONAL_LOCKS": "0"}, capture_output=True)
        return proc.stdout if proc.returncode == 0 else None

    def read_blobs(self, shas: Iterable[str]) -> dict[str, bytes]:
        """Objects by any name cat-file takes (`sha`, `HEAD:path`, `:path`), through one
        `git cat-file --batch`; missing ones are left out."""
        return {name: content for name, (_kind, content) in self.read_objects(shas).items()}

    def read_objects(self, names: Iterable[str]) -> dict[str, tuple[str, bytes]]:
        """`{name: (type, content)}` of objects by any name cat-file takes, through one
        `git cat-file --batch`; missing ones are left out."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}
        asked = ("\n".join(wanted) + "\n").encode()
        if self._reader is not None:  # started already (`start_object_reader`)
            reader, self._reader = self._reader, None
            out = _Started((("cat-file", "--batch"),), [reader]).wait(input=asked)[0]
        else:
            out = self._run("cat-file", "--batch", input=asked, read_only=True)
        found: dict[str, tuple[str, bytes]] = {}
        pos = 0
        for sha in wanted:
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            pos = end + 1
            if len(header) < 3 or header[-1] == b"missing":
                continue  # not in the object store: left out, the caller decides
            size = int(header[2])
            found[sha] = (header[1].decode("ascii", "replace"), out[pos:pos + size])
            pos += size + 1
        return found

    def start_object_reader(self) -> None:
        """Start the `git cat-file --batch` the next `read_objects` (or `read_blobs`) asks, so
        that git's start overlaps the caller's work (a hook loading the gate); close it with
        `close_object_reader` when it may not have been used."""
        if self._reader is None:
            self._reader = subprocess.Popen(["git", "cat-file", "--batch"], cwd=self.root,
                                            env={**self._env, "GIT_OPTIONAL_LOCKS": "0"}, stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def close_object_reader(self) -> None:
        """End a started `git cat-file --batch` that `read_objects` did not use."""
        if self._reader is not None:
            reader, self._reader = self._reader, None
            reader.communicate(b"")

    def object_ids(self, names: Iterable[str]) -> dict[str, str | None]:
        """`{name: object id or None}` for names like `HEAD` and `HEAD:path`, in one
        `git cat-file --batch-check` (a missing name is None, never an error)."""
        wanted = [n for n in dict.fromkeys(names) if "\n" not in n]
        if not wanted:
            return {}
        out = self._run("cat-file", "--batch-check=%(objectname)", input=("\n".join(wanted) + "\n").encode(),
                        read_only=True).decode("utf-8", "surrogateescape").split("\n")
        found: dict[str, str | None] = {}
        for name, line in zip(wanted, out):
            found[name] = line if re.fullmatch(r"[0-9a-f]{40,64}", line) else None
        return found

    def staged_paths(self) -> set[str]:
        """The paths the index changes against HEAD."""
        return _path_list(self._run("diff", "--cached", "--name-only", "-z", read_only=True))

    def staged_changes(self) -> list[RawChange]:
        """What the index changes against HEAD, blob by blob (the commit being made, in a hook)."""
        return self.start_staged_changes().result()

    def start_staged_changes(self) -> Answer[list[RawChange]]:
        """`staged_changes()`, started now and answered by `.result()`: a hook loads the gate's
        modules while git compares the index with HEAD."""
        return Answer(self._start(("diff", "--cached", "--raw", "-z", "--no-renames", "--no-abbrev")),
                      lambda outputs: _raw_changes(outputs[0]))

    def diff_tree(self, old: str, new: str, paths: Iterable[str] = ()) -> list[RawChange]:
        """What changed under `paths` from commit `old` to commit `new`; GitError when one is gone."""
        out = self._run("diff-tree", "-r", "-z", "--no-renames", "--no-abbrev", "--raw", old, new,
                        "--", *paths, read_only=True)
        return _raw_changes(out)

    def start_changed_in_worktree(self, folder: str) -> Answer[list[str]]:
        """Paths under `folder/` whose work-tree file differs from HEAD (staged or not), and the
        untracked ones git does not ignore, asked now. Two git processes, which compare through
        the index's stat data (in C, in parallel) instead of reading every file. Call it when
        HEAD exists."""
        spec = f":(literal){folder}/"
        return Answer(self._start(("diff-index", "--name-only", "-z", "--no-renames", "HEAD", "--", spec),
                                  ("ls-files", "-o", "-z", "--exclude-standard", "--", spec)),
                      lambda outputs: sorted({path for out in outputs for path in _path_list(out)}))

    def folder_state(self, folder: str, *, ignored: bool = True, also: Iterable[str] = (),
                     untracked: bool = True,
                     known_ids: Callable[[str], Mapping[str, str | None] | None] | None = None) -> FolderState:
        """`folder/` of the work tree as git sees it, asked now and answered by `FolderState.result`:
        the git processes run while the caller does other work (docs/context.md). `ignored`:
        untracked files git ignores count too; `also`: more object names (`HEAD:path`) to look up
        with HEAD's (`FolderState.ids`); `untracked=False`: the untracked files are not listed (the
        caller knows them: desk.recall.git_state); `known_ids(head)`: the ids at HEAD's commit when
        known without git (None: looked up)."""
        return FolderState(self, folder, ignored=ignored, also=also, untracked=untracked, known_ids=known_ids)

    def _run_together(self, *commands: tuple[str, ...]) -> list[bytes]:
        """Run read-only git commands at the same time (each start costs a few ms that the other
        cores can hide) and return their outputs in order; GitError as `_run` raises it."""
        return self._start(*commands).wait()

    def _start(self, *commands: tuple[str, ...], input: bytes | None = None) -> _Started:
        """Start read-only git commands without waiting for them (`_Started.wait` collects them).
        `input` (a few lines: it fits the pipe, so writing it never waits) goes to each one's stdin."""
        env = {**self._env, "GIT_OPTIONAL_LOCKS": "0"}
        return _Started(commands, [_Spawned(self.root, args, env, input) for args in commands])

    def dirty(self, paths: Iterable[str]) -> list[str]:
        """Those of `paths` with staged, unstaged or untracked changes against HEAD."""
        paths = list(paths)
        if not paths:
            return []  # git status without a pathspec would check the whole work tree
        out = self._run("status", "--porcelain=v1", "-z", "--untracked-files=all", "--",
                        *paths, read_only=True)
        found = []
        records = out.split(b"\0")
        i = 0
        while i < len(records):
            record = records[i]
            if record:
                found.append(_path(record[3:]))
                if record[:1] in (b"R", b"C"):
                    i += 1  # a rename carries its source path as the next record
            i += 1
        return found

    # -- writing ------------------------------------------------------------------------------

    def config_values(self) -> dict[str, str]:
        """The few config values desk needs (identity, core.hooksPath, commit.gpgSign), read once per Git.

        Keys as git prints them: lower-cased (`core.hookspath`).
        """
        if self._config is None and self._parent is not None:
            self._config = self._parent.config_values()
        if self._config is None:
            self.start_config_values()
            if self._config is None:
                assert self._config_started is not None
                out = self._config_started.wait(check=False)[0].decode("utf-8", "replace")
                self._config = dict(line.partition(" ")[::2] for line in out.splitlines())
                from desk.storage.config_cache import keep_config

                keep_config(self.git_dir(), self._env, _CONFIG_QUERY, self._system_config, self._config,
                            self._config_read_at)
        return self._config

    def start_config_values(self) -> None:
        """Have `config_values()` answered: from the cache kept by the config files' stat
        (desk.storage.config_cache), else by a `git config` started now, which runs while the
        caller works."""
        if self._config is not None or self._config_started is not None:
            return
        if self._parent is not None:
            self._config = self._parent.config_values()
            return
        from desk.storage.config_cache import cached_config  # kept by the files' stat

        self._config = cached_config(self.git_dir(), self._env, _CONFIG_QUERY)
        if self._config is None:
            self._config_read_at = time.time_ns()
            self._config_started = self._start(("config", "--get-regexp", _CONFIG_QUERY))

    def _system_config(self) -> str | None:
        """The system-wide config file git reads (where git was built to look), or None when git
        reads none (GIT_CONFIG_NOSYSTEM) or will not say: git names it to an "editor" that prints."""
        if self._env.get("GIT_CONFIG_NOSYSTEM"):
            return None
        out = self.with_env(GIT_EDITOR="echo")._run("config", "--system", "--edit", check=False, read_only=True)
        path = out.decode("utf-8", "replace").strip()
        return path if path.startswith("/") and "\n" not in path else None

    def identity_args(self) -> list[str]:
        """`-c user.name=… -c user.email=…` when no identity is configured, so desk works anywhere."""
        if self._identity is None and self._parent is not None:
            self._identity = self._parent.identity_args()
        if self._identity is None:
            keys = set(self.config_values())
            args: list[str] = []
            if "user.name" not in keys and not ("GIT_AUTHOR_NAME" in self._env
                                                and "GIT_COMMITTER_NAME" in self._env):
                args += ["-c", f"user.name={FALLBACK_NAME}"]
            if "user.email" not in keys and not ("GIT_AUTHOR_EMAIL" in self._env
                                                 and "GIT_COMMITTER_EMAIL" in self._env):
                args += ["-c", f"user.email={FALLBACK_EMAIL}"]
            self._identity = args
        return self._identity

    def fallback_identity(self) -> str | None:
        """`name <email>` desk commits as because git has no identity configured, else None."""
        args = self.identity_args()
        if not args:
            return None
        given = {**self.config_values(), **dict(a.split("=", 1) for a in args if a != "-c")}
        name = given.get("user.name") or self._env.get("GIT_AUTHOR_NAME", "")
        email = given.get("user.email") or self._env.get("GIT_AUTHOR_EMAIL", "")
        return f"{name} <{email}>"

    def add(self, paths: Iterable[str]) -> None:
        self._run("add", "--", *paths)

    def unstage(self, paths: Iterable[str]) -> None:
        """Drop `paths` from the index again (after a failed commit of new files)."""
        self._run("reset", "-q", "--", *paths, check=False)

    def commit(self, message: str, paths: list[str], *, verify: bool = True) -> str:
        """Commit exactly `paths` (git's `--only` semantics) and return the new commit's sha.

        A person's other staged or unstaged work is left as it was. New files must be added first.
        `verify=False` skips the pre-commit and commit-msg hooks (the caller ran their checks).
        """
        self._run(*self.identity_args(), "commit", "-q", "-F", "-",
                  *([] if verify else ["--no-verify"]), "--", *paths, input=message.encode())
        head = self.head()
        assert head is not None
        return head

    # -- the plumbing commit path -------------------------------------------------------------
    # desk's own commits never go through the shared index: blobs by `git hash-object -w`, the tree
    # built in a private index, `git commit-tree`, and the branch moved by compare-and-swap. Only then, under
    # .git/index.lock (git's own lock, so no person's `git commit` can interleave), are the work
    # tree and the person's index brought up to date for desk's paths alone.

    def durable_args(self) -> list[str]:
        """`-c core.fsync=committed` unless the person set core.fsync: git flushes no loose object
        by default, and a desk commit's objects must survive a power loss once HEAD names them."""
        return [] if "core.fsync" in self.config_values() else ["-c", "core.fsync=committed"]

    def write_blob(self, data: bytes) -> str:
        """Store `data` as a blob (`git hash-object -w`: a no-op when git has it) and return its id."""
        return self._run(*self.durable_args(), "hash-object", "-w", "-t", "blob", "--stdin",
                         input=data).decode().strip()

    def build_tree(self, parent: str | None, blobs: Mapping[str, str | None]) -> str:
        """The tree of `parent` (None: empty) with `blobs` applied (`{path: blob id, or None to
        delete}`); returns the tree id.

        Built in desk's private index `.git/desk-index` (`git update-index --index-info`, then
        `git write-tree`), read from `parent` only when it does not already hold it: the file
        `.git/desk-index.base` names the commit it was last made to match (desk's own last commit,
        as a rule), and is removed before the index is changed, so a crash cannot leave it lying.
        """
        index = self.git_dir() / PRIVATE_INDEX
        base = index.with_name(PRIVATE_INDEX + ".base")
        private = self.with_env(GIT_INDEX_FILE=str(index))
        try:
            current = base.read_text().strip()
        except OSError:
            current = ""
        base.unlink(missing_ok=True)
        if not parent or current != parent or not index.exists():
            private._run("read-tree", parent or "--empty")
        zero = "0" * len(parent or next((b for b in blobs.values() if b), NULL_SHA))  # SHA-256: 64
        lines = "".join(f"100644 {sha}\t{path}\n" if sha else f"0 {zero}\t{path}\n"
                        for path, sha in sorted(blobs.items()))
        private._run("update-index", "--index-info", input=lines.encode())
        return private._run(*self.durable_args(), "write-tree").decode().strip()

    def private_index_holds(self, commit: str) -> None:
        """Record that desk's private index now holds `commit`'s tree (the last `build_tree`
        built it for that commit)."""
        base = self.git_dir() / (PRIVATE_INDEX + ".base")
        base.write_text(commit + "\n")

    def commit_tree(self, tree: str, parent: str | None, message: str) -> str:
        """A commit object for `tree` on `parent` (None: a root commit), by `git commit-tree`
        (`-S` when commit.gpgSign asks); the branch is not moved."""
        if self.signs_commits():
            return self._signed_commit(tree, parent, message)
        parents = ["-p", parent] if parent else []
        out = self._run(*self.identity_args(), *self.durable_args(), "commit-tree", tree, *parents, "-F", "-",
                        input=message.encode())
        return out.decode().strip()

    def signs_commits(self) -> bool:
        """Whether `commit.gpgSign` asks for signed commits: desk's are signed too (`git commit-tree`
        ignores the setting, so desk passes `-S`; git signs with the configured `gpg.format` and
        `user.signingKey`). A remote that requires signed commits then takes desk's."""
        value = self.config_values().get("commit.gpgsign")
        if value is None:
            return False
        value = value.strip().lower()
        if value in ("", "true", "yes", "on"):  # `gpgsign` with no value is true, as git reads it
            return True
        return value.lstrip("-").isdigit() and int(value) != 0

    def _signed_commit(self, tree: str, parent: str | None, message: str) -> str:
        parents = ["-p", parent] if parent else []
        try:
            out = self._run(*self.identity_args(), *self.durable_args(), "commit-tree", "-S", tree, *parents, "-F", "-",
                            input=message.encode())
        except GitError as exc:
            raise GitError(f"could not sign desk's commit (commit.gpgSign is set): {exc.message}",
                           hint="fix signing (`git commit --allow-empty -S -m test` shows git's own "
                                "error), or turn it off for this desk: `git config commit.gpgSign "
                                "false`; nothing was changed") from None
        return out.decode().strip()

    def run_commit_hooks(self, tree_index: Path | None, message: str) -> None:
        """Run the repository's pre-commit and commit-msg hooks as `git commit` would, against
        desk's private index; RejectedError with the hooks' words when one refuses."""
        env = {"GIT_INDEX_FILE": str(tree_index or self.git_dir() / PRIVATE_INDEX)}
        hooked = self.with_env(**env)
        message_file = self.git_dir() / "DESK_COMMIT_MSG"
        message_file.write_text(message, "utf-8")
        try:
            for hook, args in (("pre-commit", []), ("commit-msg", [str(message_file)])):
                proc = subprocess.run(["git", "hook", "run", "--ignore-missing", hook, "--", *args],
                                      cwd=self.root, env=hooked._env, capture_output=True)
                if proc.returncode != 0:
                    words = (proc.stderr + proc.stdout).decode("utf-8", "replace").strip()
                    raise RejectedError(f"the {hook} hook refused desk's commit: {words}",
                                        hint="the hook is not desk's (a chained .legacy hook or "
                                             "core.hooksPath): see what it checks")
        finally:
            message_file.unlink(missing_ok=True)

    def move_head(self, new: str, old: str | None, subject: str) -> bool:
        """Compare-and-swap the branch HEAD points to from `old` (None: unborn) to `new`.

        False when HEAD is no longer `old` (someone else moved it); nothing changed then.
        """
        args = ("update-ref", "-m", f"commit: {subject}", "HEAD", new, old or "0" * len(new))
        locks = self._recorded_locks(args)  # HEAD.lock and the branch's, left if desk and git are killed
        if locks:
            proc = self._run_recorded(args, self._env, None, locks)
        else:
            proc = subprocess.run(["git", *args], cwd=self.root, env=self._env, capture_output=True)
        if proc.returncode == 0:
            return True
        words = proc.stderr.decode("utf-8", "replace")
        if "but expected" in words or "reference already exists" in words or "unable to resolve" in words:
            return False
        if ".lock" in words and "File exists" in words:
            raise ConflictError(f"git update-ref: {words.strip()}", hint=LOCK_HINT)
        raise self._failure(("update-ref",), words.strip())

    def index_changes(self, index: Path, rev: str, paths: Iterable[str]) -> list[RawChange]:
        """How the index file `index` differs from commit `rev` under `paths`, blob by blob
        (old: `rev`'s, new: the index's): what is staged there. One git process."""
        wanted = list(paths)
        if not wanted or not index.exists():
            return []
        out = self.with_env(GIT_INDEX_FILE=str(index))._run(
            "diff-index", "--cached", "-z", "--raw", "--no-renames", "--no-abbrev", rev, "--",
            *(f":(literal){p}" for p in wanted), read_only=True)
        return _raw_changes(out)

    def index_entries(self, index: Path, paths: Iterable[str]) -> dict[str, str]:
        """`{path: blob id}` of `paths` in the index file `index` (absent paths left out)."""
        wanted = list(paths)
        if not wanted or not index.exists():
            return {}
        return _parse_ls_files(self.with_env(GIT_INDEX_FILE=str(index))._run(
            "ls-files", "-s", "-z", "--", *(f":(literal){p}" for p in wanted), read_only=True))

    def refresh_entries(self, index: Path, paths: Iterable[str]) -> None:
        """Set `paths` in the index file `index` to what the work tree holds (stat data included,
        so git sees them clean); a path gone from the work tree leaves the index."""
        self.with_env(GIT_INDEX_FILE=str(index))._run(
            "update-index", "--add", "--remove", "--", *(p for p in paths))

    def unstaged(self, index: Path, paths: Iterable[str]) -> set[str]:
        """Those of `paths` (pathspecs) whose work-tree file differs from the index file `index`:
        changes not staged there (a deleted file counts; an untracked one does not)."""
        out = self.with_env(GIT_INDEX_FILE=str(index))._run(
            "diff-files", "--name-only", "-z", "--", *paths, read_only=True)
        return _path_list(out)

    def stage_blob(self, index: Path, path: str, blob: str) -> None:
        """Set `path` in the index file `index` to the stored blob `blob` (mode 100644), leaving the
        work tree alone: the pre-commit fixer adds the regenerated MEMORY.md to the commit."""
        self.with_env(GIT_INDEX_FILE=str(index))._run(
            "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")

    # -- reading history ------------------------------------------------------------------

    def log(self, paths: Iterable[str] = (), *, limit: int | None = None, since: str | None = None,
            until: str | None = None, merges: bool = True, rev: str | None = None) -> list[Commit]:
        """Commits touching `paths` (all when empty), newest first, with their message, trailers
        and changes. `since`/`until` bound the commit dates (git's --since/--until, both
        inclusive); `merges=False` leaves merge commits out (and out of `limit`); `rev` starts
        the walk there instead of at HEAD.
        """
        if self.head() is None:
            return []
        args = []
        if limit:
            args.append(f"-n{limit}")
        if since:
            args.append(f"--since={since}")
        if until:
            args.append(f"--until={until}")
        if not merges:
            args.append("--no-merges")
        if rev is not None:
            args.append(rev)
        commits = []
        for (sha, author, email, date, subject, message), changes in self._log(
                ["%H", "%an", "%ae", "%aI", "%s", "%B"], args, paths):
            commits.append(Commit(sha, author, email, date, subject, parse_trailers(message),
                                  [c.path for c in changes], message, changes))
        return commits

    def empty_tree(self) -> str:
        """The id of the empty tree in this repository's hash (to diff against a root commit)."""
        return self._run("hash-object", "-t", "tree", "--stdin", input=b"", read_only=True).decode().strip()

    def diff_worktree(self, rev: str, path: str, old_path: str | None = None) -> str:
        """`git diff REV -- PATH`: the unified diff from `rev` to the work tree's file, no colour,
        no external diff driver (empty when they are the same). With `old_path` (the file's name
        at `rev`), from that file: `-M` shows a rename and what changed beside it."""
        paths = [path] if old_path is None or old_path == path else [old_path, path]
        out = self._run("diff", "--no-color", "--no-ext-diff", *(["-M"] if len(paths) > 1 else []), rev,
                        "--", *paths, read_only=True)
        return out.decode("utf-8", "replace")

    def commit_ids(self, limit: int, *, merges: bool = True) -> list[str]:
        """The last `limit` commits from HEAD, newest first (one `git rev-list`); `merges=False`
        leaves merge commits out (and out of `limit`). Empty before the first commit."""
        out = self._run("rev-list", f"-n{limit}", *([] if merges else ["--no-merges"]), "HEAD",
                        "--", check=False, read_only=True)
        return out.decode().split()

    def start_commit_ids(self, limit: int) -> Callable[[], list[str]]:
        """`commit_ids(limit)` started now; the returned function waits for it (`desk doctor`
        runs it while git lists the work tree)."""
        started = self._start(("rev-list", f"-n{limit}", "HEAD", "--"))
        return lambda: started.wait(check=False)[0].decode().split()

    def commits(self, shas: Iterable[str]) -> list[Commit]:
        """These commits, in the order given, as `log` returns them (message, trailers, changes)."""
        wanted = list(shas)
        if not wanted:
            return []
        return [Commit(sha, author, email, date, subject, parse_trailers(message),
                       [c.path for c in changes], message, changes)
                for (sha, author, email, date, subject, message), changes in self._log(
                    ["%H", "%an", "%ae", "%aI", "%s", "%B"], ["--no-walk=unsorted", *wanted], ())]

    def merge_changes(self, shas: Iterable[str]) -> dict[str, list[MergeChange]]:
        """For each merge commit among `shas`: the paths whose content differs from every parent's,
        each with every parent's blob (one `git log -c --raw`). What the merge itself made: a path
        that equals one parent's was checked in that parent's own commit."""
        wanted = list(shas)
        if not wanted:
            return {}
        out = self._run("log", "--format=%x1e%H", "--merges", "-c", "--raw", "-z", "--no-abbrev",
                        "--no-renames", "--no-walk=unsorted", *wanted, "--", read_only=True)
        found: dict[str, list[MergeChange]] = {}
        for chunk in out.split(b"\x1e")[1:]:
            tokens = chunk.split(b"\0")
            sha = tokens[0].decode().strip()
            changes = found.setdefault(sha, [])
            meta: bytes | None = None
            for token in tokens[1:]:
                if meta is None:
                    token = token.lstrip(b"\n")
                    if token.startswith(b"::"):
                        meta = token
                    continue
                parents = len(meta) - len(meta.lstrip(b":"))
                fields = meta.lstrip(b":").decode().split()
                blobs = [b if b.strip("0") else None for b in fields[parents + 1:2 * parents + 2]]
                changes.append(MergeChange(_path(token), tuple(blobs[:-1]), blobs[-1]))
                meta = None
        return found

    def deleted(self, paths: Iterable[str]) -> dict[str, str]:
        """Of `paths`, those deleted in history: path -> committer date (ISO) of its last deletion."""
        wanted = list(paths)
        if not wanted or self.head() is None:
            return {}
        found: dict[str, str] = {}
        for (date,), changes in self._log(["%cI"], ["--diff-filter=D"], wanted):
            for change in changes:
                found.setdefault(change.path, date)  # newest first: the first one is the last
        return found

    def _log(self, fields: list[str], args: list[str], paths: Iterable[str]
             ) -> list[tuple[list[str], list[RawChange]]]:
        """`git log` with one `%x1f`-separated record of `fields` per commit and its `--raw` diff.

        The last field may hold anything but NUL (a message cannot hold one), since each record
        ends with `%x1f` and `-z`'s NUL.
        """
        fmt = "%x1e" + "%x1f".join(fields) + "%x1f"
        out = self._run("log", f"--format={fmt}", "--raw", "-z", "--no-abbrev", "--no-renames",
                        *args, "--", *paths, read_only=True)
        records = []
        for chunk in out.split(b"\x1e")[1:]:
            head, sep, raw = chunk.partition(b"\x1f\0")
            if not sep:
                head = chunk.removesuffix(b"\x1f")
            values = [v.decode("utf-8", "surrogateescape")
                      for v in head.split(b"\x1f", len(fields) - 1)]
            records.append((values, _raw_changes(raw)))
        return records

    def with_env(self, **changes: str | None) -> Git:
        """A Git for the same work tree whose environment has `changes` applied (None removes)."""
        other = Git(self.root)
        other._env = dict(self._env)
        # Identity and config as this Git sees them, computed once when first needed (a hook's
        # read-only checks never need them: no `git config` process for them).
        other._parent = self
        other._identity = self._identity
        other._config = self._config
        for key, value in changes.items():
            if value is None:
                other._env.pop(key, None)
            else:
                other._env[key] = value
        return other

    # -- integrating another clone's history (desk sync, the post-merge hook) -------------------
    # Fetch and push go through GitPython (desk.sync.remote); the merge itself runs in the work
    # tree with git's own merge machinery, so the merge drivers of .gitattributes apply.

    def merge(self, rev: str, message: str) -> bool:
        """`git merge --no-ff --no-commit REV`: True when it merged cleanly, False when paths are left
        unmerged (the caller resolves them). ConflictError when git refused before changing anything
        (local changes the merge would overwrite)."""
        try:
            self._run(*self.identity_args(), "merge", "--no-ff", "--no-commit", "--no-edit",
                      "-m", message.split("\n", 1)[0], rev, own_session=True)  # as fast_forward
        except GitError as exc:
            if self.object_id("MERGE_HEAD") is None:
                raise ConflictError(f"git merge refused to start: {exc.message}",
                                    hint=f"commit or discard local changes first (`git -C {self.root} "
                                         "status`), then sync again") from None
        return not self.unmerged()

    def current_branch(self) -> str | None:
        """The branch HEAD is on (`main`), None when HEAD is detached. Read from `.git/HEAD` when
        that is a plain file (as `_lock_files` does), else asked of git."""
        try:
            text = (self.git_dir() / "HEAD").read_text("utf-8").strip()
        except OSError:
            text = ""
        if text.startswith("ref: refs/heads/"):
            return text.removeprefix("ref: refs/heads/")
        if re.fullmatch(r"[0-9a-f]{40,64}", text):
            return None
        out = self._run("symbolic-ref", "-q", "--short", "HEAD", check=False, read_only=True)
        return out.decode("utf-8", "surrogateescape").strip() or None

    def remote_url(self, remote: str) -> str | None:
        """The address `remote` fetches from (as configured), None when there is no such remote.
        Asked of git each time: desk keeps no copy of an address (it could embed a credential)."""
        return self.config_get(f"remote.{remote}.url")

    def start_ls_remote(self, remote: str, branch: str) -> Answer[str | None]:
        """The commit `remote` advertises for `branch` (one round trip, no objects transferred),
        asked now; `.result()` is None when it has no such branch, GitError (git's words) when it
        cannot be reached."""
        wanted = f"refs/heads/{branch}"

        def advertised(outputs: list[bytes]) -> str | None:
            for line in outputs[0].decode("utf-8", "replace").splitlines():
                sha, _, ref = line.partition("\t")
                if ref == wanted:
                    return sha
            return None

        return Answer(self._start(("ls-remote", "--", remote, wanted)), advertised)

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """`git merge-base --is-ancestor` (a commit is its own ancestor)."""
        if ancestor == descendant:
            return True
        env = {**self._env, "GIT_OPTIONAL_LOCKS": "0"}
        proc = subprocess.run(["git", "merge-base", "--is-ancestor", ancestor, descendant], cwd=self.root,
                              env=env, capture_output=True)
        if proc.returncode > 1:
            raise GitError(f"git merge-base --is-ancestor {ancestor[:12]} {descendant[:12]} failed: "
                           + proc.stderr.decode("utf-8", "replace").strip(),
                           hint="run `desk doctor` to check the desk's git state")
        return proc.returncode == 0

    def fast_forward(self, rev: str) -> None:
        """Move the branch and the work tree to `rev`, a descendant of HEAD (`git merge --ff-only`)."""
        try:
            self._run("merge", "--ff-only", "-q", rev, own_session=True)  # a terminal's Ctrl-C waits for it
        except GitError as exc:
            raise ConflictError(f"the fast-forward to {rev[:12]} was refused: {exc.message}",
                                hint=f"commit or discard your local changes (`git -C {self.root} status`), "
                                     "then sync again") from None

    def stopped(self) -> str | None:
        """What a person's git left half-done in this clone: `merge` (MERGE_HEAD: a `git pull` or
        `git merge` stopped on a conflict), `rebase` (a `git pull --rebase` or `git rebase` stopped),
        else None. File checks only (`desk.storage.gitdir`): every desk command asks."""
        from desk.storage.gitdir import stopped_operation

        return stopped_operation(self.git_dir())

    def merge_message(self) -> str:
        """The message git prepared for the stopped merge (.git/MERGE_MSG), comment lines dropped."""
        try:
            text = (self.git_dir() / "MERGE_MSG").read_text("utf-8", "replace")
        except OSError:
            text = ""
        kept = [line for line in text.splitlines() if not line.startswith("#")]
        return "\n".join(kept).strip() + "\n" if any(line.strip() for line in kept) else "Merge\n"

    def rebase_continue(self) -> bool:
        """`git rebase --continue` without an editor: True when the rebase finished, False when it
        stopped again on the next commit's conflicts. GitError for anything else."""
        env = {**self._env, "GIT_EDITOR": "true"}
        args = (*self.identity_args(), "rebase", "--continue")
        locks = self._recorded_locks(args)
        if locks:
            proc = self._run_recorded(args, env, None, locks)
        else:
            proc = subprocess.run(["git", *args], cwd=self.root, env=env, capture_output=True)
        if proc.returncode == 0:
            return self.stopped() != "rebase"
        if self.stopped() == "rebase" and self.unmerged():
            return False
        raise GitError("git rebase --continue failed: " + (proc.stderr or proc.stdout).decode(
            "utf-8", "replace").strip(), hint="finish it by hand (`git status` says what is left)")

    def merge_abort(self) -> None:
        """Put HEAD, the index and the work tree back as they were before `merge`."""
        if self.object_id("MERGE_HEAD") is not None:
            self._run("merge", "--abort", check=False)

    def merge_base(self, a: str, b: str) -> str | None:
        """The best common ancestor of commits `a` and `b`, None when they share no history."""
        out = self._run("merge-base", a, b, check=False, read_only=True).decode().strip()
        return out or None

    def merge_quit(self) -> None:
        """Forget the merge in progress (MERGE_HEAD and its notes), leaving index and work tree."""
        self._run("merge", "--quit", check=False)

    def reset_paths(self, rev: str | None, paths: Sequence[str]) -> None:
        """Set the index entries of `paths` to `rev`'s (dropped where `rev` lacks them, or is None:
        an unborn branch), leaving the work tree alone."""
        if not paths:
            return
        listed = "".join(f":(literal){path}\0" for path in paths).encode("utf-8", "surrogateescape")
        if rev is None:
            self._run("rm", "-q", "--cached", "--ignore-unmatch", "--pathspec-from-file=-",
                      "--pathspec-file-nul", input=listed)
        else:
            self._run("reset", "-q", "--pathspec-from-file=-", "--pathspec-file-nul", rev, input=listed)

    def unmerged(self) -> dict[str, dict[int, tuple[str, str]]]:
        """`{path: {stage: (mode, blob)}}` of the paths a merge left unmerged (1 base, 2 ours, 3 theirs)."""
        out = self._run("ls-files", "-u", "-z", read_only=True)
        found: dict[str, dict[int, tuple[str, str]]] = {}
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, _, raw_path = record.partition(b"\t")
            mode, blob, stage = meta.decode().split()
            found.setdefault(_path(raw_path), {})[int(stage)] = (mode, blob)
        return found

    def stage_file(self, path: str, data: bytes | None) -> None:
        """Write `path` (None: delete it) in the work tree and the index, resolving it in a merge."""
        full = self.root / path
        if data is None:
            self._run("rm", "-q", "--cached", "--ignore-unmatch", "--", path)
            if full.exists() or full.is_symlink():
                full.unlink()
            return
        full.parent.mkdir(parents=True, exist_ok=True)
        tmp = full.with_name(f".{full.name}.desk-merge")
        tmp.write_bytes(data)
        os.replace(tmp, full)
        self._run("add", "--", path)

    def commit_merge(self, message: str) -> str:
        """Conclude the merge in progress with `message` (the caller ran the gate: --no-verify)."""
        self._run(*self.identity_args(), "commit", "-q", "--no-verify", "-F", "-", input=message.encode())
        head = self.head()
        assert head is not None
        return head

    def symlinks(self, rev: str = "HEAD") -> list[str]:
        """Every path that is a symbolic link in the tree of `rev`."""
        out = self._run("ls-tree", "-r", "-z", "--full-tree", rev, read_only=True)
        return sorted(_path(r.partition(b"\t")[2]) for r in out.split(b"\0") if r.startswith(b"120000 "))

    def check_out_head(self) -> None:
        """Write HEAD's tree into the index and the work tree (`desk clone`, which cloned without
        a checkout so that the tree was checked first)."""
        self._run("reset", "-q", "--hard", "HEAD")

    def index_paths(self) -> list[str]:
        """Every path in the index (in a hook: the one being committed), sorted."""
        return sorted(_path_list(self._run("ls-files", "-z", read_only=True)))

    def attributes(self, paths: Iterable[str], *, cached: bool = True) -> dict[str, dict[str, str]]:
        """What git's attributes say of `paths` (`git check-attr -a`): `{path: {name: value}}`,
        value `set`, `unset` or the value given; unspecified attributes and paths with none are left
        out. Read from the `.gitattributes` files in the index (`cached`; `tree_index` makes one of
        a commit), else in the work tree. Only what a commit carries counts: the person's own
        attribute files outside the repository (core.attributesFile, the system's) are left out;
        `.git/info/attributes` cannot be, and is the person's own too."""
        wanted = list(paths)
        if not wanted:
            return {}
        data = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in wanted)
        out = self.with_env(GIT_ATTR_NOSYSTEM="1")._run(
            "-c", "core.attributesFile=", "check-attr", "-a", "-z", "--stdin", *(["--cached"] if cached else []),
            input=data, read_only=True)
        fields = _path(out).split("\0")  # one decode for the whole answer: 3 fields a line
        found: dict[str, dict[str, str]] = {}
        for at in range(0, len(fields) - 2, 3):
            found.setdefault(fields[at], {})[fields[at + 1]] = fields[at + 2]
        return found

    @contextmanager
    def tree_index(self, rev: str) -> Iterator[Git]:
        """A Git whose index is a temporary one holding `rev`'s tree (removed after it): to ask git
        about a commit that is not checked out (`index_paths`, `attributes`)."""
        index = self.git_dir() / f"desk-tree-index-{os.getpid()}-{os.urandom(4).hex()}"
        other = self.with_env(GIT_INDEX_FILE=str(index))
        try:
            other._run("read-tree", rev)
            yield other
        finally:
            index.unlink(missing_ok=True)

    def rev_list(self, include: str, exclude: str | None = None) -> list[str]:
        """The commits reachable from `include` and not from `exclude`, newest first."""
        args = [include] + ([f"^{exclude}"] if exclude else [])
        return self._run("rev-list", *args, "--", read_only=True).decode().split()

    def set_config(self, key: str, value: str) -> None:
        self._run("config", key, value)
        self._config = None

    def config_get(self, key: str) -> str | None:
        out = self._run("config", "--get", key, check=False, read_only=True).decode("utf-8", "replace")
        return out.strip() or None

    def update_ref(self, ref: str, new: str) -> None:
        self._run("update-ref", "-m", "desk sync", ref, new)

    # -- walking history: each memory's last commit, for the HEAD mirror ------------------------
    # `git log -n1 -- path` costs O(commits x tree size) per path (docs/design.md §7); the HEAD
    # mirror finds every path's last commit from one pass over these steps instead.

    def history(self, revs: Iterable[str]) -> Generator[HistoryStep, None, None]:
        """Every commit of `revs` (`HEAD`, `OLD..NEW`), children before parents (`--topo-order`),
        with its parents, committer time and what it changed against its first parent (a merge
        too; a root commit against nothing). Streamed: a caller that stops reading ends git.

        No pathspec, so no commit is left out and git does not diff each commit twice (pruning,
        then printing); callers keep the paths they want. GitError when a revision is unknown.
        """
        stream = self._stream("log", "--topo-order", "--diff-merges=first-parent", "--raw", "-z",
                              "--no-renames", "--no-abbrev", "--format=%x1e%H%x1f%P%x1f%ct%x1f",
                              *revs, "--")
        try:
            yield from _history_steps(stream)
        finally:
            stream.close()  # ends git when the caller stopped early

    def last_change(self, rev: str, path: str) -> tuple[str, int] | None:
        """`git log -n1 REV -- PATH`: the commit (and its committer time) that last changed `path`
        as of `rev`, with git's default history simplification; None when none did."""
        out = self._text("log", "-n1", "--format=%H %ct", rev, "--", path).split()
        return (out[0], int(out[1])) if len(out) == 2 else None

    def commit_times(self, shas: Iterable[str]) -> dict[str, int]:
        """`{sha: committer time (seconds since the epoch)}` for commits, in one `git log --no-walk`."""
        wanted = sorted(set(shas))
        if not wanted:
            return {}
        out = self._run("log", "--no-walk=unsorted", "--stdin", "--format=%H %ct",
                        input=("\n".join(wanted) + "\n").encode(), read_only=True).decode()
        return {sha: int(stamp) for sha, stamp in (line.split() for line in out.splitlines() if line)}

    def _stream(self, *args: str) -> Generator[bytes, None, None]:
        """Run a read-only `git ARGS` and yield its stdout in chunks as git writes it.

        Closing the generator early kills git; a failure raises GitError once stdout is read.
        """
        import tempfile  # streaming reads only (history walks)

        with tempfile.TemporaryFile() as errors:  # a file, not a pipe: git never blocks on it
            proc = subprocess.Popen(["git", *args], cwd=self.root, stdout=subprocess.PIPE,
                                    stderr=errors, env={**self._env, "GIT_OPTIONAL_LOCKS": "0"})
            assert proc.stdout is not None
            done = False
            try:
                while chunk := os.read(proc.stdout.fileno(), 1 << 16):
                    yield chunk
                done = True
            finally:
                proc.stdout.close()
                if not done:  # the caller stopped reading (or failed): git need not finish
                    proc.kill()
                code = proc.wait()
            if code != 0:
                errors.seek(0)
                message = errors.read().decode("utf-8", "replace").strip()
                raise GitError(f"git {_command(args)} failed: {message}",
                               hint="run `desk doctor` to check the desk's git state")


def _command(args: tuple[str, ...] | list[str]) -> str:
    """The git subcommand of `args` for an error message: past `-c NAME=VALUE` and other options."""
    rest = list(args)
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in ("-c", "-C") else rest[1:]
    return rest[0] if rest else "(no command)"


class HistoryStep(NamedTuple):
    """One commit of `Git.history`: its parents, committer time and changes against its first parent."""

    sha: str
    parents: tuple[str, ...]
    time: int  # committer time, seconds since the epoch
    changes: list[RawChange]


def _history_steps(chunks: Iterable[bytes]) -> Generator[HistoryStep, None, None]:
    """Parse `git log -z --raw --format=%x1e%H%x1f%P%x1f%ct%x1f` as it streams.

    The output is NUL-separated tokens: a commit header (`\\x1e` first), then per change a
    `:modes shas status` token and a path token. A path token always follows a change token, so a
    path holding `\\x1e` or `:` is never mistaken for a header.
    """
    step: HistoryStep | None = None
    meta: bytes | None = None
    pending = b""
    for chunk in chunks:
        tokens = (pending + chunk).split(b"\0")
        pending = tokens.pop()
        for token in tokens:
            if meta is not None:
                assert step is not None
                step.changes.extend(_raw_changes(meta + b"\0" + token + b"\0"))
                meta = None
            elif token.lstrip(b"\n").startswith(b":"):
                meta = token
            elif token.startswith(b"\x1e"):
                if step is not None:
                    yield step
                sha, parents, stamp = token[1:].decode().split("\x1f")[:3]
                step = HistoryStep(sha, tuple(parents.split()), int(stamp), [])
    if step is not None:
        yield step


# -- git's index lock, held by desk -------------------------------------------------------------

INDEX_LOCK_OWNER = "desk-index-lock.json"  # in .git/: which index.lock files are desk's own


class IndexLock:
    """`.git/index.lock`, taken the way git takes it (O_EXCL), so no person's `git commit`, `git add`
    or merge can run while desk moves HEAD and refreshes the person's index.

    Before it takes the lock desk records, in `.git/desk-index-lock.json`, the pid and every file it
    will leave as index.lock; a crash leaves that record, and `release_stale_index_lock` (called under
    the desk lock, when no desk process can be holding it) removes exactly the lock desk left, never
    one a person's git holds.
    """

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir
        self.path = git_dir / "index.lock"
        self.owner = git_dir / INDEX_LOCK_OWNER
        self._files: list[int] = []
        self._held = False

    def acquire(self, wait: float = INDEX_LOCK_WAIT) -> None:
        # The lock file is made under a private name and linked into place (link fails like O_EXCL
        # when index.lock exists), so its inode is on record before it can be left behind.
        candidate = self.git_dir / "desk-index-lock.new"
        candidate.unlink(missing_ok=True)
        candidate.write_bytes(b"")
        deadline = time.monotonic() + wait
        delay = 0.005
        try:
            self._files.append(candidate.stat().st_ino)
            self._record()
            while True:
                try:
                    os.link(candidate, self.path)
                    self._held = True
                    return
                except FileExistsError:
                    if time.monotonic() >= deadline:
                        self.owner.unlink(missing_ok=True)
                        raise ConflictError(
                            f"another git process has held .git/index.lock for {wait:g} s",
                            hint=LOCK_HINT) from None
                    time.sleep(delay)
                    delay = min(delay * 2, 0.1)
        finally:
            candidate.unlink(missing_ok=True)

    def publish(self, new_index: Path) -> None:
        """Make `new_index` the person's index and release the lock (git's rename protocol)."""
        self._files.append(new_index.stat().st_ino)
        self._record()
        os.replace(new_index, self.path)
        os.replace(self.path, self.git_dir / "index")
        self._held = False
        self.owner.unlink(missing_ok=True)

    def release(self) -> None:
        """Give the lock up without changing the person's index."""
        if self._held:
            self.path.unlink(missing_ok=True)
            self._held = False
        self.owner.unlink(missing_ok=True)

    def _record(self) -> None:
        import json

        data = json.dumps({"pid": os.getpid(), "inodes": self._files}).encode()
        tmp = self.owner.with_suffix(".tmp")
        try:
            tmp.write_bytes(data)
        except OSError as exc:  # a full disk: no half-written record left, and the record named
            tmp.unlink(missing_ok=True)
            if exc.filename is None:  # a buffered write's ENOSPC names no file
                raise OSError(exc.errno, exc.strerror, str(self.owner)) from exc
            raise
        os.replace(tmp, self.owner)

    def __enter__(self) -> IndexLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def desk_left_index_lock(git_dir: Path) -> bool:
    """Whether `.git/index.lock` is one a desk process took and did not release (it crashed).

    Meaningful only while holding the desk lock: then no desk process can be holding index.lock.
    The lock is desk's when its inode is one desk recorded and it is no newer than the record.
    """
    import json

    owner = git_dir / INDEX_LOCK_OWNER
    try:
        record = json.loads(owner.read_bytes())
        recorded = owner.stat().st_mtime_ns
        st = (git_dir / "index.lock").stat()
    except (OSError, ValueError):
        return False
    return st.st_ino in record.get("inodes", []) and st.st_mtime_ns <= recorded


def release_private_index_lock(git_dir: Path) -> bool:
    """Remove `.git/desk-index.lock`, left by a git process desk started on its private index and
    that died (killed with desk, or by a failed write to its stdin); True when there was one.

    Only desk uses the private index, and only under the desk lock: call it holding that lock.
    """
    try:
        (git_dir / f"{PRIVATE_INDEX}.lock").unlink()
    except FileNotFoundError:
        return False
    return True


def release_stale_index_lock(git_dir: Path) -> bool:
    """Remove the index.lock a crashed desk process left (never a person's); True when there was one.

    Call it only while holding the desk lock.
    """
    left = desk_left_index_lock(git_dir)
    if left:
        (git_dir / "index.lock").unlink(missing_ok=True)
    (git_dir / INDEX_LOCK_OWNER).unlink(missing_ok=True)
    return left


# -- refs read without git ----------------------------------------------------------------------

_ASK_GIT = "ask git"  # `_head_from_files` could not tell: the caller runs git


def _head_from_files(git_dir: Path) -> str | None:
    """The commit HEAD names, read as git stores it: `.git/HEAD`, then the branch's loose ref file,
    then `packed-refs`; None for an unborn branch; `_ASK_GIT` for anything this does not read.

    git replaces ref files by rename under a lock, so a read sees the old id or the new one. A
    branch is looked up loose first: `git pack-refs` writes packed-refs before it removes the
    loose file, and a deletion removes both.
    """
    if (git_dir / "commondir").exists() or (git_dir / "reftable").exists():
        return _ASK_GIT  # a linked work tree (refs in the common folder) or the reftable backend
    try:
        head = (git_dir / "HEAD").read_text("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return _ASK_GIT
    if _OBJECT_ID.fullmatch(head):
        return head  # detached: git keeps only a commit there
    ref = head[5:] if head.startswith("ref: ") else ""
    if not ref.startswith("refs/heads/"):
        return _ASK_GIT
    return _read_ref(git_dir, ref)


def _ref_from_files(git_dir: Path, ref: str) -> str | None:
    """The object `ref` (`refs/...`) names, from its loose file, then `packed-refs`; None when
    neither has it; `_ASK_GIT` for anything this does not read (as `_head_from_files`)."""
    if (git_dir / "commondir").exists() or (git_dir / "reftable").exists():
        return _ASK_GIT
    return _read_ref(git_dir, ref)


def _read_ref(git_dir: Path, ref: str) -> str | None:
    """`_ref_from_files` in a repository already known to keep its refs as files in `git_dir`."""
    if not ref.startswith("refs/") or ".." in ref or "//" in ref or ref.endswith(("/", ".lock", ".invalid")):
        return _ASK_GIT
    try:
        loose = (git_dir / ref).read_text("ascii").strip()
    except FileNotFoundError:
        loose = None
    except (OSError, UnicodeDecodeError):
        return _ASK_GIT  # a folder, unreadable: git knows what it means
    if loose is not None:
        return loose if _OBJECT_ID.fullmatch(loose) else _ASK_GIT
    try:
        packed = (git_dir / "packed-refs").read_bytes()
    except FileNotFoundError:
        return None  # no commit on this branch yet
    except OSError:
        return _ASK_GIT
    for line in packed.decode("ascii", "replace").splitlines():
        sha, _, name = line.partition(" ")
        if name == ref:
            return sha if _OBJECT_ID.fullmatch(sha) else _ASK_GIT
    return None


# -- parsing git's output ---------------------------------------------------------------------


def _path(raw: bytes) -> str:
    """A path as git prints it with -z: bytes, kept losslessly (surrogateescape)."""
    return raw.decode("utf-8", "surrogateescape")


def _parse_ls_files(out: bytes) -> dict[str, str]:
    """`{path: blob id}` from `git ls-files -s -z`."""
    entries: dict[str, str] = {}
    for record in out.split(b"\0"):
        if record:
            meta, path = record.split(b"\t", 1)
            entries[_path(path)] = meta.split()[1].decode()
    return entries


def _path_list(out: bytes) -> set[str]:
    """A `-z` list of paths."""
    return {_path(p) for p in out.split(b"\0") if p}


def _parse_ls_tree(out: bytes) -> dict[str, str]:
    """`{path: blob sha}` from `git ls-tree -z` (trees and submodules left out)."""
    entries: dict[str, str] = {}
    for record in out.split(b"\0"):
        if record:
            meta, path = record.split(b"\t", 1)
            mode, kind, sha = meta.split()
            if kind == b"blob":
                entries[_path(path)] = sha.decode()
    return entries


def _raw_changes(out: bytes) -> list[RawChange]:
    """The one `--raw -z` reader (diff, diff-tree, log), always with `--no-renames`.

    Each change is `:old_mode new_mode old_sha new_sha status` NUL path NUL; `git log` puts a
    newline before a commit's first one. An all-zero sha means no blob on that side.
    """
    changes = []
    meta: bytes | None = None
    for token in out.split(b"\0"):
        if meta is None:
            token = token.lstrip(b"\n")
            if token.startswith(b":"):
                meta = token
            continue
        old_mode, new_mode, old, new, status = meta[1:].decode().split()
        changes.append(RawChange(_path(token), status[:1], old_mode, new_mode,
                                 old if old.strip("0") else None, new if new.strip("0") else None))
        meta = None
    return changes


# -- commit message trailers ------------------------------------------------------------------

_SPACE = " \t\n\v\f\r"  # C's isspace(), which git uses: never Unicode spaces
_TOKEN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")  # string.ascii_letters, digits
_COMMENT = "#"
_SCISSORS = "# ------------------------ >8 ------------------------"
_GIT_PREFIXES = ("Signed-off-by: ", "(cherry picked from commit ")


def parse_trailers(message: str) -> dict[str, list[str]]:
    """The trailers of a commit message, `{key as written: [values]}`, as git finds them.

    Follows `git interpret-trailers --parse --no-divider` (and `git log --format=%(trailers)`,
    which reads a commit the same way) with git's default configuration: the trailer block is the
    last paragraph after the title when every line in it is a trailer (or it holds a
    `Signed-off-by:` and at least a quarter of it is trailers); a key is letters, digits and `-`,
    optionally followed by spaces before the `:` (`Key : value`); a line starting with
    whitespace continues the value above it (`Key:\\n  value`), unfolded to one line. Comment
    lines (`#`) and everything below a scissors line are ignored, as `git commit` does.
    """
    lines = _message_lines(message)
    start = _trailer_block_start(lines)
    if start is None:
        return {}
    items: list[list[str]] = []  # [key, value as written, continuation lines...]
    last: list[str] | None = None
    for line in lines[start:]:
        if last is not None and (line == "" or line[0] in _SPACE):
            last.append(line)
            continue
        at = _separator(line)  # -1 for a comment line: it ends the value above, like any non-trailer
        last = [line[:at].strip(_SPACE), line[at + 1:]] if at >= 1 else None
        if last is not None:
            items.append(last)
    trailers: dict[str, list[str]] = {}
    for key, *value in items:
        trailers.setdefault(key, []).append(_unfold("\n".join(value)))
    return trailers


def _message_lines(message: str) -> list[str]:
    """The message's lines without what git ignores at its end (scissors, comments, blank lines)."""
    lines = message.split("\n")
    terminated = lines[-1] == ""  # whether the last line ends with a newline
    if terminated:
        lines.pop()
    if _SCISSORS in lines[:-1] or (lines and lines[-1] == _SCISSORS and terminated):
        lines = lines[:lines.index(_SCISSORS)]
        terminated = True
    end = None  # the first of the trailing ignorable lines
    conflicts = False
    for i, line in enumerate(lines):
        if line.startswith(_COMMENT) or line == "":
            end = i if end is None else end
        elif line == "Conflicts:" and (i + 1 < len(lines) or terminated):
            # what old git versions added to merge messages
            conflicts = True
            end = i if end is None else end
        elif conflicts and line.startswith("\t"):
            pass  # a path under Conflicts:
        elif end is not None:
            end, conflicts = None, False
    return lines if end is None else lines[:end]


def _blank(line: str) -> bool:
    return not line.strip(_SPACE)


def _trailer_block_start(lines: list[str]) -> int | None:
    """The index of the trailer block's first line, or None when the message has none."""
    title_end = 0  # the first paragraph is the title and never holds trailers
    while title_end < len(lines):
        if not lines[title_end].startswith(_COMMENT) and _blank(lines[title_end]):
            break
        title_end += 1
    only_spaces, recognized = True, False
    trailers = others = maybe_continued = 0
    for i in range(len(lines) - 1, title_end - 1, -1):
        line = lines[i]
        if line.startswith(_COMMENT):
            others += maybe_continued
            maybe_continued = 0
            continue
        if _blank(line):
            if only_spaces:
                continue
            others += maybe_continued
            if (recognized and trailers * 3 >= others) or (trailers and not others):
                return i + 1
            return None
        only_spaces = False
        if line.startswith(_GIT_PREFIXES):
            trailers += 1
            maybe_continued = 0
            recognized = True
        elif _separator(line) >= 1 and line[0] not in _SPACE:
            trailers += 1
            maybe_continued = 0
        elif line[0] in _SPACE:
            maybe_continued += 1
        else:
            others += 1 + maybe_continued
            maybe_continued = 0
    return None


def _separator(line: str) -> int:
    """Where the `:` of a `Key: value` line is, or -1: a key, then only spaces before the colon."""
    spaces = False
    for i, char in enumerate(line):
        if char == ":":
            return i
        if not spaces and char in _TOKEN_CHARS:
            continue
        if i and char in " \t":
            spaces = True
            continue
        break
    return -1


def _unfold(value: str) -> str:
    """A folded value on one line: each newline and the whitespace after it become one space."""
    out = []
    i = 0
    while i < len(value):
        char = value[i]
        i += 1
        if char == "\n":
            while i < len(value) and value[i] in _SPACE:
                i += 1
            out.append(" ")
        else:
            out.append(char)
    return "".join(out).strip(_SPACE)
