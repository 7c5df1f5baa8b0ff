"""Talking to a remote through GitPython (docs/design.md §5a): clone, fetch, push with progress.

Slow to import, so imported only when there is something to fetch or push (plain git asks first),
and every `Repo` is closed (it keeps `git cat-file` processes). Credentials are git's own helpers'.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desk.errors import DeskError, RejectedError, UsageError
from desk.storage.git import clean_env

if TYPE_CHECKING:
    from git import Repo

Progress = Callable[[str], None]  # one line of progress for stderr
INCOMING = "refs/desk/incoming"  # where desk sync fetches the remote branch before it trusts it
UNREACHABLE_HINT = ("check the address (`git remote -v`), the network, and that git can log in "
                    "(desk uses git's own credential helpers: `git fetch` should work by itself)")


PROGRESS_EVERY = 1.0  # seconds between progress lines of one stage (its last line always shows)


def _progress(report: Progress | None) -> Any:
    from git import RemoteProgress

    class Relay(RemoteProgress):
        last = 0.0

        def update(self, op_code: int, cur_count: Any, max_count: Any = None, message: str = "") -> None:
            if report is None:
                return
            now = time.monotonic()
            if not op_code & RemoteProgress.END and now - self.last < PROGRESS_EVERY:
                return
            self.last = now
            stage = {RemoteProgress.COUNTING: "counting", RemoteProgress.COMPRESSING: "compressing",
                     RemoteProgress.WRITING: "writing", RemoteProgress.RECEIVING: "receiving",
                     RemoteProgress.RESOLVING: "resolving"}.get(op_code & RemoteProgress.OP_MASK, "working")
            done = f"{int(cur_count)}/{int(max_count)}" if max_count else f"{int(cur_count or 0)}"
            report(f"{stage} objects: {done}")

    return Relay()


class RemoteSession:
    """Fetch and push for a whole sync through one GitPython `Repo`, opened on first use (so a sync
    with nothing to fetch or push never imports GitPython); `close()` closes it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._repo: Repo | None = None

    @property
    def repo(self) -> Repo:
        if self._repo is None:
            import logging

            import git

            # GitPython logs what git said on stderr ("Error lines received while pushing: ...",
            # "Pumping 'stderr' ... failed" after a Ctrl-C) and, with no handler configured,
            # Python prints it: desk reports every failure itself, with a hint, so it stays quiet.
            logging.getLogger("git").addHandler(logging.NullHandler())
            self._repo = git.Repo(self.root)
        return self._repo

    def close(self) -> None:
        if self._repo is not None:
            self._repo.close()
            self._repo = None

    def _record(self, refs: list[str]) -> None:
        """Write down the git process GitPython is about to start (its pid is GitPython's), with
        the locks it may take: a kill leaves them to the next desk command (desk.storage.git_locks)."""
        from desk.storage.git_locks import record_git_child

        git_dir = Path(self.repo.git_dir)
        record_git_child([git_dir / f"{ref}.lock" for ref in (*refs, "packed-refs", "shallow")])

    def fetch(self, remote: str, branch: str, progress: Progress | None = None) -> str | None:
        """Fetch `remote`'s `branch` into INCOMING (no other ref is trusted before the checks); its
        commit, None when the remote has no such branch yet (an empty repository). DeskError when
        it cannot be reached."""
        from git import GitCommandError

        self._record([INCOMING, f"refs/remotes/{remote}/{branch}"])
        try:
            self.repo.remote(remote).fetch(f"+refs/heads/{branch}:{INCOMING}", progress=_progress(progress))
        except GitCommandError as exc:
            if "couldn't find remote ref" in _git_words(exc):
                return None  # an empty remote: nothing to integrate, everything to push
            raise DeskError(f"cannot fetch from {remote}: {_git_words(exc)}; nothing was changed",
                            hint=UNREACHABLE_HINT) from None
        except ValueError:
            raise no_remote(remote) from None
        return str(self.repo.commit(INCOMING).hexsha)

    def push(self, remote: str, branch: str, progress: Progress | None = None) -> bool:
        """Push HEAD to `remote`'s `branch`, never forced: True when it landed, False when rejected
        because the remote moved (fetch and integrate again). DeskError for anything else."""
        from git import GitCommandError, PushInfo

        self._record([f"refs/remotes/{remote}/{branch}"])  # the tracking ref git updates after the push
        started = time.time()
        try:
            infos = self.repo.remote(remote).push(f"HEAD:refs/heads/{branch}", progress=_progress(progress))
        except GitCommandError as exc:
            words = _git_words(exc)
            if "rejected" in words or "fetch first" in words or "non-fast-forward" in words:
                return False
            raise DeskError(f"cannot push to {remote}: {words}", hint=UNREACHABLE_HINT) from None
        for info in infos:
            if info.flags & PushInfo.REJECTED:
                return False
            if info.flags & PushInfo.REMOTE_REJECTED and any(
                    words in info.summary for words in _REF_RACE):
                _refuse_left_lock(self.repo.remote(remote).url, self.root, remote, branch, started)
                return False  # another push held or moved the branch meanwhile: fetch and try again
            if info.flags & (PushInfo.REMOTE_REJECTED | PushInfo.ERROR):
                raise DeskError(f"{remote} refused the push: {info.summary.strip()}",
                                hint="the remote's own rules refused it (a protected branch, a hook): ask its owner")
        return True


# What git's receive-pack says when another push holds the branch's lock or moved it between
# its check and its update ("[remote rejected] main (failed to update ref)"): two clones
# syncing at once. Not the remote's rules: fetch, integrate and push again.
_REF_RACE = ("failed to update ref", "cannot lock ref", "failed to lock")


def _refuse_left_lock(url: str, root: Path, remote: str, branch: str, since: float) -> None:
    """ConflictError naming the remote's lock files when the remote is a folder here and a lock on
    its branch, made before this push started at `since`, stays (a push killed with its `git
    receive-pack`: git never removes such a lock). desk does not remove it: another machine's push
    may hold it through a shared folder. A lock that is newer, or goes within a moment, is another
    push at work: fetch and integrate again."""
    from desk.errors import ConflictError

    if url.startswith("file://"):
        url = url.removeprefix("file://")
    elif "://" in url or ":" in url.split("/", 1)[0]:
        return  # ssh, https, host:path: the remote's files are not here
    folder = (root / url).resolve()
    locks = []
    for lock in (git_dir / name for git_dir in (folder, folder / ".git")
                 for name in (f"refs/heads/{branch}.lock", "HEAD.lock", "packed-refs.lock")):
        with suppress(OSError):
            if lock.stat().st_mtime < since:
                locks.append(lock)
    deadline = time.monotonic() + 2.0
    while (left := [lock for lock in locks if lock.exists()]) and time.monotonic() < deadline:
        time.sleep(0.1)
    if left:
        raise ConflictError(f"{remote} cannot take the push: {', '.join(map(str, left))} stays, left by a "
                            "push that was killed (git never removes a lock it left), or held by one at work",
                            hint=f"if no clone is pushing to {remote} now, remove it (rm "
                                 f"{' '.join(map(str, left))}), then run `desk sync` again; nothing was lost")


def no_remote(remote: str) -> UsageError:
    return UsageError(f"this desk has no remote named {remote!r}",
                      hint=f"add one: `git remote add {remote} URL` (or clone with `desk clone URL`)")


def refuse_embedded_password(url: str) -> None:
    """A remote address that carries a password or token is refused: it would sit in .git/config."""
    from urllib.parse import urlsplit

    from desk.text.secrets import scan

    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    if password or scan(url):
        raise RejectedError(f"the remote address embeds a password or token ({_masked(url)}); desk "
                            "never stores credentials",
                            hint="remove it from the address (`git remote set-url origin https://host/path`) "
                                 "and let a credential helper keep it: `git config --global credential.helper "
                                 "store` (or your platform's helper, e.g. osxkeychain, manager)")


def _masked(url: str) -> str:
    """`url` fit to print: a password shown as `***`, and any known token (a token given as the
    user name, `https://ghp_...@host/...`) redacted."""
    from urllib.parse import urlsplit

    from desk.text.secrets import redact

    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    if password:
        url = url.replace(f":{password}@", ":***@")
    return redact(url)[0]


def clone(url: str, path: Path, progress: Progress | None = None) -> None:
    """Clone `url` into `path` without checking anything out: desk checks the tree first
    (desk.gate.clone_check), then `Merging.check_out_head` writes the work tree."""
    from git import GitCommandError, Repo

    try:
        repo = Repo.clone_from(url, path, progress=_progress(progress), env=clean_env(), no_checkout=True)
    except GitCommandError as exc:
        raise DeskError(f"cannot clone {_masked(url)}: {_git_words(exc)}", hint=UNREACHABLE_HINT) from None
    try:
        found = repo.git.rev_parse("--show-object-format")
        if found != "sha1":  # refused as `desk init` refuses such a repository (desk.setup.init)
            raise DeskError(f"{_masked(url)} is a git repository with {found} object ids, which desk cannot "
                            "write yet (it compares blob ids in SHA-1); nothing was kept",
                            hint="clone a desk made by `desk init` (a SHA-1 repository), or one made with "
                                 "`git init --object-format=sha1`")
        if not repo.head.is_valid() and repo.remotes and repo.remotes[0].refs:
            # The remote's HEAD names a branch that does not exist (a bare repository made with
            # another default branch): check out its `main`, else its only branch.
            names = [ref.remote_head for ref in repo.remotes[0].refs if ref.remote_head != "HEAD"]
            if names:
                name = "main" if "main" in names else names[0]
                repo.git.branch("--track", name, f"{repo.remotes[0].name}/{name}")
                repo.git.symbolic_ref("HEAD", f"refs/heads/{name}")
    finally:
        repo.close()


def _git_words(exc: Any) -> str:
    text = str(getattr(exc, "stderr", "") or exc).strip()
    text = text.removeprefix("stderr:").strip().strip("'").strip()
    return " ".join(text.split())[:400] or "git failed"
