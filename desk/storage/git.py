"""The one module that talks to git.

desk drives git's own command line, like pre-commit's `git.py`, rather than GitPython's object
layer: GitPython's `IndexFile.commit` lost commits under concurrent writers on this machine and never
fsyncs or signs (DESIGN.md §7), and `import git` alone costs ~0.2 s, which would blow the pre-commit
hook's and the CLI start-up budgets. Every call goes through `Git.run`, which strips the variables git
exports inside hooks (`GIT_DIR`, `GIT_INDEX_FILE`, ...) unless the caller means the repository
being committed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from desk.errors import ConflictError, GitError

# Variables git sets for hooks and sub-commands; inherited by accident they point a git call at the
# wrong repository or index. Identity (GIT_AUTHOR_*, GIT_COMMITTER_*) and config injection are kept.
_REPO_ENV = (
    "GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_EDITOR",
    "GIT_REFLOG_ACTION", "GIT_QUARANTINE_PATH", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM",
)

INDEX_LOCK_WAIT = 10.0  # seconds a mutating git call waits for another git process's index.lock
FALLBACK_NAME = "desk"
FALLBACK_EMAIL = "desk@localhost"


def clean_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment without the repository-selecting variables git exports in hooks."""
    env = dict(os.environ if base is None else base)
    for key in _REPO_ENV:
        env.pop(key, None)
    return env


def blob_sha(content: bytes) -> str:
    """The object id git gives `content` as a blob (SHA-1 repositories)."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


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


@dataclass(frozen=True)
class Commit:
    """One commit as the audit trail shows it."""

    sha: str
    author: str
    email: str
    date: str
    subject: str
    trailers: dict[str, list[str]] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {"commit": self.sha, "author": self.author, "email": self.email, "date": self.date,
                "subject": self.subject, "trailers": self.trailers, "paths": self.paths}


class Git:
    """git commands run in one work tree. `hook_env=True` keeps git's hook variables (the staged index)."""

    def __init__(self, root: Path, *, hook_env: bool = False) -> None:
        self.root = root
        self._env = dict(os.environ) if hook_env else clean_env()
        self._identity: list[str] | None = None
        self._config: dict[str, str] | None = None

    def run(self, *args: str, input: bytes | None = None, check: bool = True,
            read_only: bool = False) -> bytes:
        """Run `git ARGS` in the work tree and return stdout; raise GitError with git's message."""
        env = self._env
        if read_only:
            # Read-only calls must not take .git/index.lock (a status refresh would).
            env = {**env, "GIT_OPTIONAL_LOCKS": "0"}
        deadline = time.monotonic() + INDEX_LOCK_WAIT
        delay = 0.01
        while True:
            proc = subprocess.run(["git", *args], cwd=self.root, env=env, input=input,
                                  capture_output=True)
            if not check or proc.returncode == 0:
                return proc.stdout
            message = proc.stderr.decode("utf-8", "replace").strip() or proc.stdout.decode(
                "utf-8", "replace").strip()
            if "index.lock" not in message or "File exists" not in message:
                raise GitError(f"git {args[0]} failed: {message}",
                               hint="run `desk doctor` to check the desk's git state")
            # Another git process (a person's commit, an editor's status refresh) holds the index:
            # wait for it like desk waits for its own lock, then give up with exit 4.
            if time.monotonic() >= deadline:
                raise ConflictError(
                    f"git {args[0]}: another git process has held .git/index.lock for "
                    f"{INDEX_LOCK_WAIT:g} s", hint="wait for it to finish; if no git process is "
                    "running, `desk doctor --repair` removes a stale lock")
            time.sleep(delay)
            delay = min(delay * 2, 0.25)

    def text(self, *args: str, read_only: bool = True) -> str:
        return self.run(*args, read_only=read_only).decode("utf-8", "surrogateescape")

    # -- repository state -------------------------------------------------------------------

    def init(self) -> None:
        self.run("init", "-q", "-b", "main")

    def head(self) -> str | None:
        """The commit HEAD points to, or None in a repository without commits."""
        out = self.run("rev-parse", "-q", "--verify", "HEAD^{commit}", check=False, read_only=True)
        return out.decode().strip() or None

    def git_dir(self) -> Path:
        path = Path(self.text("rev-parse", "--git-dir").strip())
        return path if path.is_absolute() else self.root / path

    def ls_tree(self, rev: str, folder: str) -> dict[str, str]:
        """`{path: blob sha}` for the files directly in `folder` at `rev` (empty when none)."""
        out = self.run("ls-tree", "-z", "--full-tree", rev, "--", folder.rstrip("/") + "/",
                       read_only=True)
        return _parse_ls(out)

    def ls_staged(self, folder: str) -> dict[str, str]:
        """`{path: blob sha}` for the files directly in `folder` in the index (hooks: the staged content)."""
        out = self.run("ls-files", "-s", "-z", "--", folder.rstrip("/") + "/", read_only=True)
        entries: dict[str, str] = {}
        for record in out.split(b"\0"):
            if record:
                meta, path = record.split(b"\t", 1)
                entries[path.decode("utf-8", "surrogateescape")] = meta.split()[1].decode()
        return entries

    def blob_at(self, rev: str, path: str) -> bytes | None:
        """The content of `path` at `rev` (`""` for the index), or None when it is not there."""
        proc = subprocess.run(["git", "cat-file", "blob", f"{rev}:{path}"], cwd=self.root,
                              env={**self._env, "GIT_OPTIONAL_LOCKS": "0"}, capture_output=True)
        return proc.stdout if proc.returncode == 0 else None

    def read_blobs(self, shas: Iterable[str]) -> dict[str, bytes]:
        """Objects by any name cat-file takes (`sha`, `HEAD:path`, `:path`), through one
        `git cat-file --batch`; missing ones are left out."""
        wanted = list(dict.fromkeys(shas))
        if not wanted:
            return {}
        out = self.run("cat-file", "--batch", input=("\n".join(wanted) + "\n").encode(),
                       read_only=True)
        blobs: dict[str, bytes] = {}
        pos = 0
        for sha in wanted:
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            pos = end + 1
            if len(header) < 3 or header[-1] == b"missing":
                continue  # not in the object store: left out, the caller decides
            size = int(header[2])
            blobs[sha] = out[pos:pos + size]
            pos += size + 1
        return blobs

    def staged_paths(self) -> set[str]:
        """The paths the index changes against HEAD."""
        out = self.run("diff", "--cached", "--name-only", "-z", read_only=True)
        return {p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p}

    def dirty(self, paths: Iterable[str]) -> list[str]:
        """Those of `paths` with staged, unstaged or untracked changes against HEAD."""
        paths = list(paths)
        if not paths:
            return []  # git status without a pathspec would check the whole work tree
        out = self.run("status", "--porcelain=v1", "-z", "--untracked-files=all", "--",
                       *paths, read_only=True)
        found = []
        records = out.split(b"\0")
        i = 0
        while i < len(records):
            record = records[i]
            if record:
                found.append(record[3:].decode("utf-8", "surrogateescape"))
                if record[:1] in (b"R", b"C"):
                    i += 1  # a rename carries its source path as the next record
            i += 1
        return found

    # -- writing ------------------------------------------------------------------------------

    def config_values(self) -> dict[str, str]:
        """The few config values desk needs (identity, core.hooksPath), read once per Git."""
        if self._config is None:
            out = self.run("config", "--get-regexp", r"^(user\.(name|email)|core\.hookspath)$",
                           check=False, read_only=True).decode("utf-8", "replace")
            self._config = dict(line.partition(" ")[::2] for line in out.splitlines())
        return self._config

    def identity_args(self) -> list[str]:
        """`-c user.name=… -c user.email=…` when no identity is configured, so desk works anywhere."""
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

    def add(self, paths: Iterable[str]) -> None:
        self.run("add", "--", *paths)

    def unstage(self, paths: Iterable[str]) -> None:
        """Drop `paths` from the index again (after a failed commit of new files)."""
        self.run("reset", "-q", "--", *paths, check=False)

    def commit(self, message: str, paths: list[str], *, verify: bool = True) -> str:
        """Commit exactly `paths` (git's `--only` semantics) and return the new commit's sha.

        A person's other staged or unstaged work is left as it was. New files must be added first.
        `verify=False` skips the pre-commit and commit-msg hooks (the caller ran their checks).
        """
        self.run(*self.identity_args(), "commit", "-q", "-F", "-", *([] if verify else ["--no-verify"]),
                 "--", *paths, input=message.encode())
        head = self.head()
        assert head is not None
        return head

    # -- reading history ------------------------------------------------------------------

    def log(self, paths: Iterable[str] = (), *, limit: int | None = None, since: str | None = None,
            until: str | None = None) -> list[Commit]:
        """Commits touching `paths` (all when empty), newest first, trailers parsed, paths listed.

        `since`/`until` bound the commit dates (git's --since/--until, both inclusive).
        """
        if self.head() is None:
            return []
        fmt = "%x1e%H%x1f%an%x1f%ae%x1f%aI%x1f%s%x1f%(trailers:unfold,only)%x1f"
        args = ["log", f"--format={fmt}", "--name-only", "-z", "--no-renames"]
        if limit:
            args.append(f"-n{limit}")
        if since:
            args.append(f"--since={since}")
        if until:
            args.append(f"--until={until}")
        out = self.text(*args, "--", *paths)
        commits = []
        for chunk in out.split("\x1e")[1:]:
            sha, author, email, date, subject, trailer_text, names = chunk.split("\x1f", 6)
            trailers: dict[str, list[str]] = {}
            for line in trailer_text.splitlines():
                key, sep, value = line.partition(":")
                if sep:
                    trailers.setdefault(key.strip(), []).append(value.strip())
            files = [n.strip("\n") for n in names.split("\0") if n.strip("\n")]
            commits.append(Commit(sha, author, email, date, subject, trailers, files))
        return commits

    def deleted(self, paths: Iterable[str]) -> dict[str, str]:
        """Of `paths`, those deleted in history: path -> committer date (ISO) of its last deletion."""
        wanted = list(paths)
        if not wanted or self.head() is None:
            return {}
        out = self.text("log", "--diff-filter=D", "--no-renames", "--format=%x1e%cI", "--name-only",
                        "-z", "--", *wanted)
        found: dict[str, str] = {}
        for chunk in out.split("\x1e")[1:]:
            date, _, names = chunk.partition("\0")
            for name in names.split("\0"):
                name = name.strip("\n")
                if name:
                    found.setdefault(name, date.strip())  # newest first: the first one is the last
        return found

    def with_env(self, **changes: str | None) -> Git:
        """A Git for the same work tree whose environment has `changes` applied (None removes)."""
        other = Git(self.root)
        other._env = dict(self._env)
        other._identity = self.identity_args()  # computed once, shared
        other._config = self._config
        for key, value in changes.items():
            if value is None:
                other._env.pop(key, None)
            else:
                other._env[key] = value
        return other


def _parse_ls(out: bytes) -> dict[str, str]:
    entries: dict[str, str] = {}
    for record in out.split(b"\0"):
        if record:
            meta, path = record.split(b"\t", 1)
            mode, kind, sha = meta.split()
            if kind == b"blob":
                entries[path.decode("utf-8", "surrogateescape")] = sha.decode()
    return entries
