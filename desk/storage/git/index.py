"""Index files: desk's private index (`.git/desk-index`: `read-tree`, `update-index --index-info`,
`write-tree`), the person's index brought up to date for desk's paths, and temporary ones.

desk's own commits never go through the shared index: blobs by `git hash-object -w`, the tree
built in the private index, `git commit-tree`, and the branch moved by compare-and-swap
(`Refs.move_head`). Only then, under .git/index.lock (git's own lock, so no person's `git commit`
can interleave: desk.storage.git.locks), are the work tree and the person's index brought up to
date for desk's paths alone.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from desk.storage.git.parse import RawChange, parse_ls_files, path_list, raw_changes
from desk.storage.git.refs import NULL_SHA

if TYPE_CHECKING:
    from desk.storage.git.repo import Git

PRIVATE_INDEX = "desk-index"  # desk's own index in .git/, never the person's


class Index:
    """The index files of one repository (`git.index`)."""

    def __init__(self, git: Git) -> None:
        self._git = git

    def _on(self, index: Path) -> Git:
        return self._git.with_env(GIT_INDEX_FILE=str(index))

    def build_tree(self, parent: str | None, blobs: Mapping[str, str | None]) -> str:
        """The tree of `parent` (None: empty) with `blobs` applied (`{path: blob id, or None to
        delete}`); returns the tree id.

        Built in desk's private index `.git/desk-index` (`git update-index --index-info`, then
        `git write-tree`), read from `parent` only when it does not already hold it: the file
        `.git/desk-index.base` names the commit it was last made to match (desk's own last commit,
        as a rule), and is removed before the index is changed, so a crash cannot leave it lying.
        """
        index = self._git.git_dir() / PRIVATE_INDEX
        base = index.with_name(PRIVATE_INDEX + ".base")
        private = self._on(index)
        try:
            current = base.read_text().strip()
        except OSError:
            current = ""
        base.unlink(missing_ok=True)
        if not parent or current != parent or not index.exists():
            private.run("read-tree", parent or "--empty")
        zero = "0" * len(parent or next((b for b in blobs.values() if b), NULL_SHA))  # SHA-256: 64
        lines = "".join(f"100644 {sha}\t{path}\n" if sha else f"0 {zero}\t{path}\n"
                        for path, sha in sorted(blobs.items()))
        private.run("update-index", "--index-info", input=lines.encode())
        return private.run(*self._git.config.durable_args(), "write-tree").decode().strip()

    def private_index_holds(self, commit: str) -> None:
        """Record that desk's private index now holds `commit`'s tree (the last `build_tree`
        built it for that commit)."""
        base = self._git.git_dir() / (PRIVATE_INDEX + ".base")
        base.write_text(commit + "\n")

    def index_changes(self, index: Path, rev: str, paths: Iterable[str]) -> list[RawChange]:
        """How the index file `index` differs from commit `rev` under `paths`, blob by blob
        (old: `rev`'s, new: the index's): what is staged there. One git process."""
        wanted = list(paths)
        if not wanted or not index.exists():
            return []
        out = self._on(index).run("diff-index", "--cached", "-z", "--raw", "--no-renames", "--no-abbrev", rev, "--",
                                  *(f":(literal){p}" for p in wanted), read_only=True)
        return raw_changes(out)

    def index_entries(self, index: Path, paths: Iterable[str]) -> dict[str, str]:
        """`{path: blob id}` of `paths` in the index file `index` (absent paths left out)."""
        wanted = list(paths)
        if not wanted or not index.exists():
            return {}
        return parse_ls_files(self._on(index).run("ls-files", "-s", "-z", "--", *(f":(literal){p}" for p in wanted),
                                                  read_only=True))

    def refresh_entries(self, index: Path, paths: Iterable[str]) -> None:
        """Set `paths` in the index file `index` to what the work tree holds (stat data included,
        so git sees them clean); a path gone from the work tree leaves the index."""
        self._on(index).run("update-index", "--add", "--remove", "--", *(p for p in paths))

    def unstaged(self, index: Path, paths: Iterable[str]) -> set[str]:
        """Those of `paths` (pathspecs) whose work-tree file differs from the index file `index`:
        changes not staged there (a deleted file counts; an untracked one does not)."""
        return path_list(self._on(index).run("diff-files", "--name-only", "-z", "--", *paths, read_only=True))

    def stage_blob(self, index: Path, path: str, blob: str) -> None:
        """Set `path` in the index file `index` to the stored blob `blob` (mode 100644), leaving the
        work tree alone: the pre-commit fixer adds the regenerated MEMORY.md to the commit."""
        self._on(index).run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")

    def reset_paths(self, rev: str | None, paths: Sequence[str]) -> None:
        """Set the index entries of `paths` to `rev`'s (dropped where `rev` lacks them, or is None:
        an unborn branch), leaving the work tree alone."""
        if not paths:
            return
        listed = "".join(f":(literal){path}\0" for path in paths).encode("utf-8", "surrogateescape")
        if rev is None:
            self._git.run("rm", "-q", "--cached", "--ignore-unmatch", "--pathspec-from-file=-",
                          "--pathspec-file-nul", input=listed)
        else:
            self._git.run("reset", "-q", "--pathspec-from-file=-", "--pathspec-file-nul", rev, input=listed)

    @contextmanager
    def tree_index(self, rev: str) -> Iterator[Git]:
        """A Git whose index is a temporary one holding `rev`'s tree (removed after it): to ask git
        about a commit that is not checked out (`WorkTree.index_paths`, `WorkTree.attributes`)."""
        index = self._git.git_dir() / f"desk-tree-index-{os.getpid()}-{os.urandom(4).hex()}"
        other = self._on(index)
        try:
            other.run("read-tree", rev)
            yield other
        finally:
            index.unlink(missing_ok=True)
