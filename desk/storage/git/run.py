"""Running git: the one place a git process starts (`subprocess`), its errors in git's words.

A mutating command waits for another git's index.lock; while desk records its git children
(desk.storage.git_locks) the lock files it may take are written down first."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from pathlib import Path
from typing import Generic, TypeVar

from desk.errors import ConflictError, GitError
from desk.storage.atomic import nearly_full
from desk.storage.git_locks import subcommand


def _command(args: Sequence[str]) -> str:
    return subcommand(["git", *args]) or "(no command)"

T = TypeVar("T")

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
# What doctor does with a lock whose owner is unknown (desk.guard.doctor keeps to it): a lock a
# desk git process left when it died is removed by the next desk command at once.
LOCK_STALE_AFTER = 300  # seconds
LOCK_HINT = ("wait for the git command to finish; `desk doctor` lists every lock and whether a git "
             "process is running in the desk: when none is, `desk doctor --repair` removes a lock "
             f"left by a killed desk command at once and any other once it is {LOCK_STALE_AFTER // 60} "
             "minutes old (or remove the lock file it names yourself)")
_DISK_FULL = ("No space left on device", "Out of diskspace")  # how git says ENOSPC (strerror; its own)
_DOCTOR_HINT = "run `desk doctor` to check the desk's git state"


def clean_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment without the repository-selecting variables git exports in hooks."""
    env = dict(os.environ if base is None else base)
    for key in _REPO_ENV:
        env.pop(key, None)
    return env


class Started:
    """Read-only git commands running (`Runner.start`); each is collected by `wait` or ended by `close`."""

    def __init__(self, commands: Sequence[tuple[str, ...]], procs: list[subprocess.Popen[bytes]]) -> None:
        self.commands = commands
        self.procs = procs

    def wait(self, *, check: bool = True, input: bytes | None = None) -> list[bytes]:
        try:
            outputs = [proc.communicate(input) for proc in self.procs]
        finally:
            self.close()  # a failure or a Ctrl-C half way: the others are ended too
        for args, proc, (out, err) in zip(self.commands, self.procs, outputs):
            if check and proc.returncode != 0:
                message = err.decode("utf-8", "replace").strip() or out.decode("utf-8", "replace").strip()
                raise GitError(f"git {_command(args)} failed: {message}", hint=_DOCTOR_HINT)
        return [out for out, _ in outputs]

    def close(self) -> None:
        """End the commands not collected (they only read: killed) and wait for each."""
        for proc in self.procs:
            if proc.returncode is None:
                proc.kill()
            end(proc)


def end(proc: subprocess.Popen[bytes], grace: float | None = None) -> None:
    """Close `proc`'s pipes and wait for it (`grace` seconds at most, then kill it): a git child is
    collected here, never by the garbage collector."""
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Answer(Generic[T]):
    """Read-only git commands running; `.result()` waits and parses their outputs once (GitError on failure)."""

    def __init__(self, started: Started, parse: Callable[[list[bytes]], T]) -> None:
        self._started = started
        self._parse = parse
        self._result: tuple[T] | None = None

    def result(self) -> T:
        if self._result is None:
            self._result = (self._parse(self._started.wait()),)
        return self._result[0]

    def close(self) -> None:
        """End the commands if `result` was not asked (`Started.close`)."""
        self._started.close()


class Runner:
    """git run in the work tree `root`. `hook_env=True` keeps git's hook variables (the staged index)."""

    def __init__(self, root: Path, *, hook_env: bool = False) -> None:
        self.root = root
        self.env = dict(os.environ) if hook_env else clean_env()  # the environment git runs with
        self._git_dir: Path | None = None

    def read_env(self) -> dict[str, str]:
        """The environment of a read-only call: it must not take .git/index.lock (a status refresh would)."""
        return {**self.env, "GIT_OPTIONAL_LOCKS": "0"}

    def run(self, *args: str, input: bytes | None = None, check: bool = True,
            read_only: bool = False, own_session: bool = False) -> bytes:
        """Run `git ARGS` in the work tree and return stdout; raise GitError with git's message.

        `own_session`: git runs out of the terminal's foreground process group, so a Ctrl-C reaches
        desk (which may hold it until git is done), not git half way through the work tree."""
        env = self.read_env() if read_only else self.env
        deadline = time.monotonic() + INDEX_LOCK_WAIT
        delay = 0.01
        while True:
            proc = self.completed(args, env, input=input, own_session=own_session, recorded=not read_only)
            if not check or proc.returncode == 0:
                return proc.stdout
            message = proc.stderr.decode("utf-8", "replace").strip() or proc.stdout.decode(
                "utf-8", "replace").strip()
            if "index.lock" not in message or "File exists" not in message:
                raise self.failure(args, message)
            # Another git process (a person's commit, an editor's status refresh) holds the index:
            # wait for it like desk waits for its own lock, then give up with exit 4.
            if time.monotonic() >= deadline:
                raise ConflictError(
                    f"git {_command(args)}: another git process has held .git/index.lock for "
                    f"{INDEX_LOCK_WAIT:g} s", hint=LOCK_HINT)
            time.sleep(delay)
            delay = min(delay * 2, 0.25)

    def completed(self, args: Sequence[str], env: Mapping[str, str] | None = None, *, input: bytes | None = None,
                  own_session: bool = False, recorded: bool = True) -> subprocess.CompletedProcess[bytes]:
        """Run `git ARGS` once and return what it did, failure or not. While desk records its git
        processes (`recorded`), the lock files git may take are written down before it starts and with
        its pid once it runs (desk.storage.git_locks), so a kill leaves nothing unexplained."""
        from desk.storage.git_locks import record_git_child, recording  # not with the rules (desk.gate.verdicts)

        locks = self._lock_files(args) if recorded and recording() else []
        start = record_git_child(locks) if locks else None
        child = subprocess.Popen(["git", *args], cwd=self.root, env=self.env if env is None else env,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 start_new_session=own_session)
        try:
            if locks:
                record_git_child(locks, child.pid, start)
            out, err = child.communicate(input)
        except BaseException:  # a Ctrl-C: git finishes what it started before desk decides what landed
            end(child, INDEX_LOCK_WAIT)
            raise
        return subprocess.CompletedProcess(child.args, child.returncode, out, err)

    def failure(self, args: Sequence[str], message: str) -> Exception:
        """The error for `git ARGS` failing with `message`: ENOSPC naming the git folder when the disk is
        (nearly) full, which git's words may not say; else GitError in git's words."""
        if any(words in message for words in _DISK_FULL) or (
                "couldn't write" in message and nearly_full(self.git_dir())):
            return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), f"{self.git_dir()} (git {args[0]})")
        return GitError(f"git {_command(args)} failed: {message}", hint=_DOCTOR_HINT)

    def _lock_files(self, args: Sequence[str]) -> list[Path]:
        """The lock files git may take for `args`, counted generously: one listed and never taken costs
        nothing, one taken and not listed blocks the desk after a kill."""
        command = _command(args)
        if command in _LOCK_FREE:
            return []
        git_dir = self.git_dir()
        locks = []
        if command not in _INDEX_FREE:
            index = self.env.get("GIT_INDEX_FILE")
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

    def text(self, *args: str) -> str:
        """A read-only `git ARGS`'s stdout as text (paths kept losslessly: surrogateescape)."""
        return self.run(*args, read_only=True).decode("utf-8", "surrogateescape")

    def start(self, *commands: tuple[str, ...], input: bytes | None = None) -> Started:
        """Start read-only git commands without waiting (`Started.wait` collects them). `input` (a few
        lines: it fits the pipe) goes to each one's stdin."""
        env = self.read_env()
        started = Started(commands, [])
        try:
            for args in commands:
                proc = subprocess.Popen(["git", *args], cwd=self.root, env=env,
                                        stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                started.procs.append(proc)
                if input is not None and proc.stdin is not None:
                    try:
                        proc.stdin.write(input)
                        proc.stdin.flush()
                    except BrokenPipeError:
                        pass  # git ended without reading: its exit status says why
        except BaseException:
            started.close()
            raise
        return started

    def stream(self, *args: str) -> Generator[bytes, None, None]:
        """Run a read-only `git ARGS` and yield its stdout as git writes it; closing early kills git."""
        with tempfile.TemporaryFile() as errors:  # a file, not a pipe: git never blocks on it
            proc = subprocess.Popen(["git", *args], cwd=self.root, stdout=subprocess.PIPE,
                                    stderr=errors, env=self.read_env())
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
                raise GitError(f"git {_command(args)} failed: {message}", hint=_DOCTOR_HINT)

    def git_dir(self) -> Path:
        """The repository's git folder, absolute; found once (`.git` without asking git when plain)."""
        if self._git_dir is None:
            dot_git = self.root / ".git"
            if dot_git.is_dir() and not self.env.get("GIT_DIR"):
                self._git_dir = dot_git
            else:  # a linked work tree, a submodule, or GIT_DIR set: ask git
                self._git_dir = self.absolute(self.text("rev-parse", "--git-dir"))
        return self._git_dir

    def git_path(self, name: str) -> Path:
        """Where git keeps `name` (`hooks`: the hooks folder), absolute."""
        return self.absolute(self.text("rev-parse", "--git-path", name))

    def absolute(self, printed: str) -> Path:
        """A path git printed (relative to the work tree, or absolute), absolute."""
        path = Path(printed.strip())
        return path if path.is_absolute() else self.root / path
