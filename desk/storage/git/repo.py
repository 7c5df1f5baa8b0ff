"""`Git`: git run in one work tree, with a part per git concept; how a hook finds its repository."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from desk.errors import GitError, RejectedError
from desk.storage.git.config import Config
from desk.storage.git.history import History
from desk.storage.git.index import PRIVATE_INDEX, Index
from desk.storage.git.merging import Merging
from desk.storage.git.objects import Objects
from desk.storage.git.refs import Refs
from desk.storage.git.run import Runner, clean_env
from desk.storage.git.worktree import WorkTree


class Git(Runner):
    """git commands run in one work tree. `hook_env=True` keeps git's hook variables (the staged index).

    Parts: `refs`, `objects`, `worktree`, `index`, `config`, `history`, `merging`. Committing a
    person's way (`add`, `commit`) and desk's plumbing commit (`commit_tree`) are here."""

    def __init__(self, root: Path, *, hook_env: bool = False, env: dict[str, str] | None = None,
                 config: Config | None = None) -> None:
        super().__init__(root, hook_env=hook_env)
        if env is not None:
            self.env = env
        self.config = config if config is not None else Config(self)
        self.refs = Refs(self)
        self.objects = Objects(self)
        self.worktree = WorkTree(self)
        self.index = Index(self)
        self.history = History(self)
        self.merging = Merging(self)

    def with_env(self, **changes: str | None) -> Git:
        """A Git for the same work tree with `changes` applied to its environment (None removes); it
        shares this Git's config."""
        env = {key: value for key, value in {**self.env, **changes}.items() if value is not None}
        return Git(self.root, env=env, config=self.config)

    def init(self) -> None:
        """`git init` on branch main, always SHA-1: desk compares blob ids it computes itself with git's."""
        self.run("init", "-q", "-b", "main", "--object-format=sha1")

    def add(self, paths: Iterable[str]) -> None:
        self.run("add", "--", *paths)

    def unstage(self, paths: Iterable[str]) -> None:
        """Drop `paths` from the index again (after a failed commit of new files)."""
        self.run("reset", "-q", "--", *paths, check=False)

    def commit(self, message: str, paths: list[str], *, verify: bool = True) -> str:
        """Commit exactly `paths` (`--only` semantics) and return the new commit's sha; `verify=False`
        skips the hooks (the caller ran their checks). New files must be added first."""
        self.run(*self.config.identity_args(), "commit", "-q", "-F", "-",
                 *([] if verify else ["--no-verify"]), "--", *paths, input=message.encode())
        head = self.refs.head()
        assert head is not None
        return head

    def commit_tree(self, tree: str, parent: str | None, message: str) -> str:
        """A commit object for `tree` on `parent` (None: root), signed when commit.gpgSign asks; the
        branch is not moved (`Refs.move_head` does)."""
        signed = self.config.signs_commits()
        parents = ["-p", parent] if parent else []
        try:
            out = self.run(*self.config.identity_args(), *self.config.durable_args(), "commit-tree",
                           *(["-S"] if signed else []), tree, *parents, "-F", "-", input=message.encode())
        except GitError as exc:
            if not signed:
                raise
            raise GitError(f"could not sign desk's commit (commit.gpgSign is set): {exc.message}",
                           hint="fix signing (`git commit --allow-empty -S -m test` shows git's own "
                                "error), or turn it off for this desk: `git config commit.gpgSign "
                                "false`; nothing was changed") from None
        return out.decode().strip()

    def run_commit_hooks(self, tree_index: Path | None, message: str) -> None:
        """Run the pre-commit and commit-msg hooks as `git commit` would, on desk's private index;
        RejectedError with the hooks' words when one refuses."""
        hooked = self.with_env(GIT_INDEX_FILE=str(tree_index or self.git_dir() / PRIVATE_INDEX))
        message_file = self.git_dir() / "DESK_COMMIT_MSG"
        message_file.write_text(message, "utf-8")
        try:
            for hook, args in (("pre-commit", []), ("commit-msg", [str(message_file)])):
                proc = subprocess.run(["git", "hook", "run", "--ignore-missing", hook, "--", *args],
                                      cwd=self.root, env=hooked.env, capture_output=True)
                if proc.returncode != 0:
                    words = (proc.stderr + proc.stdout).decode("utf-8", "replace").strip()
                    raise RejectedError(f"the {hook} hook refused desk's commit: {words}",
                                        hint="the hook is not desk's (a chained .legacy hook or "
                                             "core.hooksPath): see what it checks")
        finally:
            message_file.unlink(missing_ok=True)


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
    """Inside a git hook: a Git for the repository being committed, keeping the hook's index (git's
    GIT_INDEX_FILE and GIT_DIR made absolute)."""
    absolute = {key: os.path.abspath(os.environ[key]) for key in ("GIT_INDEX_FILE", "GIT_DIR")
                if os.environ.get(key)}
    return Git(root, hook_env=True).with_env(**absolute)


def hook_index(git: Git) -> Path:
    """The index file a `staged_git` commits from: git's GIT_INDEX_FILE, else `.git/index`."""
    return Path(git.env.get("GIT_INDEX_FILE") or git.git_dir() / "index")


@contextmanager
def staged_snapshot(root: Path) -> Iterator[Git]:
    """Inside a git hook: a Git reading a private copy of the index being committed, so every read of
    one check sees one index (`git commit` does not hold index.lock while its hooks run)."""
    git = staged_git(root)
    source = hook_index(git)
    snapshot = git.git_dir() / f"desk-hook-index-{os.getpid()}"
    try:
        if source.exists():
            shutil.copyfile(source, snapshot)
        yield git.with_env(GIT_INDEX_FILE=str(snapshot))
    finally:
        snapshot.unlink(missing_ok=True)
