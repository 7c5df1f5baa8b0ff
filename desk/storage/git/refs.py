"""Refs: HEAD, branches, compare-and-swap (`update-ref NEW OLD`) and ancestry. A plain
repository's refs are read from their files without a git process; anything unusual asks git."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from desk.errors import ConflictError, GitError
from desk.storage.git.parse import OBJECT_ID
from desk.storage.git.run import LOCK_HINT

if TYPE_CHECKING:
    from desk.storage.git.repo import Git

NULL_SHA = "0" * 40
_ASK_GIT = "ask git"  # `_head_from_files` could not tell: the caller runs git


class Refs:
    """The refs of one repository (`git.refs`)."""

    def __init__(self, git: Git) -> None:
        self._git = git

    def object_id(self, name: str) -> str | None:
        """The object `name` (`HEAD^{commit}`, `REV:path`) resolves to, or None when there is none."""
        out = self._git.run("rev-parse", "-q", "--verify", name, check=False, read_only=True)
        return out.decode().strip() or None

    def head(self) -> str | None:
        """The commit HEAD points to, None in a repository without commits (read from files when plain)."""
        found = _head_from_files(self._git.git_dir()) if self._plain() else _ASK_GIT
        if found is _ASK_GIT:
            return self.object_id("HEAD^{commit}")
        return found

    def ref(self, name: str) -> str | None:
        """The object a full ref name points to, None when there is no such ref (read as `head()` reads)."""
        found = _ref_from_files(self._git.git_dir(), name) if self._plain() else _ASK_GIT
        if found is _ASK_GIT:
            return self.object_id(f"{name}^{{}}") if name.startswith("refs/") else None
        return found

    def _plain(self) -> bool:
        """Whether refs live as files in `.git` itself (no variable redirects git's ref lookup)."""
        return not any(self._git.env.get(key) for key in ("GIT_DIR", "GIT_COMMON_DIR", "GIT_NAMESPACE"))

    def default_replace_refs(self) -> bool:
        """Whether replace refs live where git looks by default (`refs/replace/` of `git_dir()`), as files."""
        return self._plain() and not self._git.env.get("GIT_REPLACE_REF_BASE")

    def current_branch(self) -> str | None:
        """The branch HEAD is on (`main`), None when detached; from `.git/HEAD` when plain, else git."""
        try:
            text = (self._git.git_dir() / "HEAD").read_text("utf-8").strip()
        except OSError:
            text = ""
        if text.startswith("ref: refs/heads/"):
            return text.removeprefix("ref: refs/heads/")
        if re.fullmatch(r"[0-9a-f]{40,64}", text):
            return None
        out = self._git.run("symbolic-ref", "-q", "--short", "HEAD", check=False, read_only=True)
        return out.decode("utf-8", "surrogateescape").strip() or None

    def move_head(self, new: str, old: str | None, subject: str) -> bool:
        """Compare-and-swap HEAD's branch from `old` (None: unborn) to `new`; False, nothing changed, when
        someone else moved it."""
        # HEAD.lock and the branch's are recorded (git_locks), left if desk and git are killed
        return self.swap_ref("HEAD", new, old, f"commit: {subject}")

    def swap_ref(self, ref: str, new: str | None, old: str | None, reason: str) -> bool:
        """Compare-and-swap `ref` from `old` (None: must not exist) to `new` (None: delete); False,
        nothing changed, when `ref` is no longer `old`."""
        zero = "0" * len(new or old or "0" * 40)
        args = (("update-ref", "-m", reason, ref, new, old or zero) if new is not None
                else ("update-ref", "-m", reason, "-d", ref, old or zero))
        proc = self._git.completed(args)
        if proc.returncode == 0:
            return True
        words = proc.stderr.decode("utf-8", "replace")
        if "but expected" in words or "reference already exists" in words or "unable to resolve" in words:
            return False
        if ".lock" in words and "File exists" in words:
            raise ConflictError(f"git update-ref: {words.strip()}", hint=LOCK_HINT)
        raise self._git.failure(("update-ref",), words.strip())

    def refs_under(self, prefix: str) -> dict[str, str]:
        """`{full ref name: object id}` of the refs under `prefix` (`refs/desk/proposals/`)."""
        out = self._git.run("for-each-ref", "--format=%(objectname) %(refname)", prefix, read_only=True)
        lines = (line.partition(" ") for line in out.decode("utf-8", "surrogateescape").splitlines())
        return {name: sha for sha, _, name in lines}

    def exchange(self, remote: str, prefixes: list[str], *, push: bool) -> list[str]:
        """Fetch, then (`push`) push, the refs under `prefixes` with `remote`, never forced; git's words
        for what was refused."""
        specs = [f"{p}*:{p}*" for p in prefixes]
        refused = []
        for args in (("fetch", "--no-tags", "--no-write-fetch-head", "--quiet", remote, *specs),
                     *((("push", "--quiet", remote, *specs),) if push else ())):
            proc = self._git.completed(args)
            if proc.returncode != 0:
                words = " ".join(proc.stderr.decode("utf-8", "replace").split())
                refused.append(f"git {args[0]} {remote}: {words[:400]}")
        return refused

    def update_ref(self, ref: str, new: str) -> None:
        self._git.run("update-ref", "-m", "desk sync", ref, new)

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """`git merge-base --is-ancestor` (a commit is its own ancestor)."""
        if ancestor == descendant:
            return True
        proc = self._git.completed(("merge-base", "--is-ancestor", ancestor, descendant), self._git.read_env(),
                                   recorded=False)
        if proc.returncode > 1:
            raise GitError(f"git merge-base --is-ancestor {ancestor[:12]} {descendant[:12]} failed: "
                           + proc.stderr.decode("utf-8", "replace").strip(),
                           hint="run `desk doctor` to check the desk's git state")
        return proc.returncode == 0

    def merge_base(self, a: str, b: str) -> str | None:
        """The best common ancestor of commits `a` and `b`, None when they share no history."""
        out = self._git.run("merge-base", a, b, check=False, read_only=True).decode().strip()
        return out or None

    def rev_list(self, include: str, exclude: str | None = None) -> list[str]:
        """The commits reachable from `include` and not from `exclude`, newest first."""
        args = [include] + ([f"^{exclude}"] if exclude else [])
        return self._git.run("rev-list", *args, "--", read_only=True).decode().split()


def _head_from_files(git_dir: Path) -> str | None:
    """The commit HEAD names, read as git stores it: `.git/HEAD`, then `_ref_from_files`; None for
    an unborn branch; `_ASK_GIT` for anything this does not read."""
    try:
        head = (git_dir / "HEAD").read_text("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return _ASK_GIT
    if OBJECT_ID.fullmatch(head):
        return head  # detached: git keeps only a commit there
    ref = head[5:] if head.startswith("ref: ") else ""
    return _ref_from_files(git_dir, ref) if ref.startswith("refs/heads/") else _ASK_GIT


def _ref_from_files(git_dir: Path, ref: str) -> str | None:
    """The object `ref` (`refs/...`) names, from its loose file, then `packed-refs`; None when
    neither has it; `_ASK_GIT` for anything this does not read.

    git replaces ref files by rename under a lock, so a read sees the old id or the new one. A
    ref is looked up loose first: `git pack-refs` writes packed-refs before it removes the loose
    file, and a deletion removes both.
    """
    if (git_dir / "commondir").exists() or (git_dir / "reftable").exists():
        return _ASK_GIT  # a linked work tree (refs in the common folder) or the reftable backend
    if not ref.startswith("refs/") or ".." in ref or "//" in ref or ref.endswith(("/", ".lock", ".invalid")):
        return _ASK_GIT
    try:
        loose = (git_dir / ref).read_text("ascii").strip()
    except FileNotFoundError:
        loose = None
    except (OSError, UnicodeDecodeError):
        return _ASK_GIT  # a folder, unreadable: git knows what it means
    if loose is not None:
        return loose if OBJECT_ID.fullmatch(loose) else _ASK_GIT
    try:
        packed = (git_dir / "packed-refs").read_bytes()
    except FileNotFoundError:
        return None  # no commit on this branch yet
    except OSError:
        return _ASK_GIT
    for line in packed.decode("ascii", "replace").splitlines():
        sha, _, name = line.partition(" ")
        if name == ref:
            return sha if OBJECT_ID.fullmatch(sha) else _ASK_GIT
    return None
