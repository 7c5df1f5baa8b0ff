"""Integrating another clone's history (desk sync, the post-merge hook) with git's own merge
machinery, so the merge drivers of .gitattributes apply."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from desk.errors import ConflictError, GitError
from desk.storage.atomic import atomic_write
from desk.storage.git.parse import path_of
from desk.storage.git.run import Answer, Runner

if TYPE_CHECKING:
    from desk.storage.git.repo import Git


class Merging:
    """Merges and rebases in one work tree (`git.merging`)."""

    def __init__(self, git: Git) -> None:
        self._git = git

    def merge(self, rev: str, message: str) -> bool:
        """`git merge --no-ff --no-commit REV`: True when clean, False with unmerged paths; ConflictError
        when git refused before changing anything."""
        git = self._git
        try:
            git.run(*git.config.identity_args(), "merge", "--no-ff", "--no-commit", "--no-edit",
                    "-m", message.split("\n", 1)[0], rev, own_session=True)  # as fast_forward
        except GitError as exc:
            if git.refs.object_id("MERGE_HEAD") is None:
                raise ConflictError(f"git merge refused to start: {exc.message}",
                                    hint=f"commit or discard local changes first (`git -C {git.root} "
                                         "status`), then sync again") from None
        return not self.unmerged()

    def start_ls_remote(self, remote: str, branch: str) -> Answer[str | None]:
        """The commit `remote` advertises for `branch`, asked now; `.result()` is None when it has none."""
        wanted = f"refs/heads/{branch}"

        def advertised(outputs: list[bytes]) -> str | None:
            lines = (line.partition("\t") for line in outputs[0].decode("utf-8", "replace").splitlines())
            return next((sha for sha, _, ref in lines if ref == wanted), None)

        return Answer(self._git.start(("ls-remote", "--", remote, wanted)), advertised)

    def fast_forward(self, rev: str) -> None:
        """Move the branch and the work tree to `rev`, a descendant of HEAD (`git merge --ff-only`)."""
        try:
            self._git.run("merge", "--ff-only", "-q", rev, own_session=True)  # a terminal's Ctrl-C waits for it
        except GitError as exc:
            raise ConflictError(f"the fast-forward to {rev[:12]} was refused: {exc.message}",
                                hint=f"commit or discard your local changes (`git -C {self._git.root} status`), "
                                     "then sync again") from None

    def stopped(self) -> str | None:
        """What a person's git left half-done here: `merge`, `rebase`, or None (file checks only)."""
        from desk.storage.gitdir import stopped_operation

        return stopped_operation(self._git.git_dir())

    def merge_message(self) -> str:
        """The message git prepared for the stopped merge (.git/MERGE_MSG), comment lines dropped."""
        try:
            text = (self._git.git_dir() / "MERGE_MSG").read_text("utf-8", "replace")
        except OSError:
            text = ""
        kept = [line for line in text.splitlines() if not line.startswith("#")]
        return "\n".join(kept).strip() + "\n" if any(line.strip() for line in kept) else "Merge\n"

    def rebase_continue(self) -> bool:
        """`git rebase --continue` without an editor: True when finished, False when it stopped on the next
        conflicts; GitError for anything else."""
        git = self._git
        proc = git.completed((*git.config.identity_args(), "rebase", "--continue"), {**git.env, "GIT_EDITOR": "true"})
        if proc.returncode == 0:
            return self.stopped() != "rebase"
        if self.stopped() == "rebase" and self.unmerged():
            return False
        raise GitError("git rebase --continue failed: " + (proc.stderr or proc.stdout).decode(
            "utf-8", "replace").strip(), hint="finish it by hand (`git status` says what is left)")

    def merge_abort(self) -> None:
        """Put HEAD, the index and the work tree back as they were before `merge`."""
        if self._git.refs.object_id("MERGE_HEAD") is not None:
            self._git.run("merge", "--abort", check=False)

    def merge_quit(self) -> None:
        """Forget the merge in progress (MERGE_HEAD and its notes), leaving index and work tree."""
        self._git.run("merge", "--quit", check=False)

    def unmerged(self) -> dict[str, dict[int, tuple[str, str]]]:
        """`{path: {stage: (mode, blob)}}` of the paths a merge left unmerged (1 base, 2 ours, 3 theirs)."""
        out = self._git.run("ls-files", "-u", "-z", read_only=True)
        found: dict[str, dict[int, tuple[str, str]]] = {}
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, _, raw_path = record.partition(b"\t")
            mode, blob, stage = meta.decode().split()
            found.setdefault(path_of(raw_path), {})[int(stage)] = (mode, blob)
        return found

    def stage_file(self, path: str, data: bytes | None) -> None:
        """Write `path` (None: delete it) in the work tree and the index, resolving it in a merge."""
        full = self._git.root / path
        if data is None:
            self._git.run("rm", "-q", "--cached", "--ignore-unmatch", "--", path)
            if full.exists() or full.is_symlink():
                full.unlink()
            return
        atomic_write(full, data, durable=False)
        self._git.run("add", "--", path)

    def commit_merge(self, message: str) -> str:
        """Conclude the merge in progress with `message` (the caller ran the gate: --no-verify)."""
        git = self._git
        git.run(*git.config.identity_args(), "commit", "-q", "--no-verify", "-F", "-", input=message.encode())
        head = git.refs.head()
        assert head is not None
        return head

    def check_out_head(self) -> None:
        """Write HEAD's tree into the index and the work tree (`desk clone` checks out after its check)."""
        self._git.run("reset", "-q", "--hard", "HEAD")


def merge_text(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """git's three-way line merge (`git merge-file` on temporary copies): the merged bytes, or None
    where git would leave conflict markers or cannot merge (binary)."""
    with tempfile.TemporaryDirectory(prefix="desk-merge-") as tmp:
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            (Path(tmp) / name).write_bytes(data)
        proc = Runner(Path(tmp)).completed(("merge-file", "-p", "-q", "ours", "base", "theirs"), recorded=False)
    return proc.stdout if proc.returncode == 0 else None  # else the number of conflicts, or 255
