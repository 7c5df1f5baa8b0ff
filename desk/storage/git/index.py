"""Index files: desk's private index (`.git/desk-index`), the person's index, temporary ones.

desk's own commits never go through the shared index: blobs by `hash-object -w`, the tree built
in the private index, `commit-tree`, then the branch moved by compare-and-swap; only then, under
.git/index.lock, are the work tree and the person's index brought up to date for desk's paths."""

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
        """The tree of `parent` (None: empty) with `blobs` applied (`{path: blob id, or None to delete}`).

        Built in `.git/desk-index`, read from `parent` only when `.git/desk-index.base` does not name it;
        that file is removed before the index changes, so a crash cannot leave it lying."""
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
        """Record that desk's private index now holds `commit`'s tree."""
        base = self._git.git_dir() / (PRIVATE_INDEX + ".base")
        base.write_text(commit + "\n")

    def index_changes(self, index: Path, rev: str, paths: Iterable[str]) -> list[RawChange]:
        """How the index file `index` differs from commit `rev` under `paths`, blob by blob (what is staged)."""
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
        """Set `paths` in the index file `index` to the work tree's (stat data included); a path gone from
        the work tree leaves the index."""
        self._on(index).run("update-index", "--add", "--remove", "--", *(p for p in paths))

    def unstaged(self, index: Path, paths: Iterable[str]) -> set[str]:
        """Those of `paths` whose work-tree file differs from the index file `index` (deletions count,
        untracked files do not)."""
        return path_list(self._on(index).run("diff-files", "--name-only", "-z", "--", *paths, read_only=True))

    def stage_blob(self, index: Path, path: str, blob: str) -> None:
        """Set `path` in the index file `index` to the stored blob `blob` (mode 100644), work tree untouched."""
        self._on(index).run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")

    def reset_paths(self, rev: str | None, paths: Sequence[str]) -> None:
        """Set the index entries of `paths` to `rev`'s (dropped where `rev` lacks them or is None)."""
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
        """A Git whose index is a temporary one holding `rev`'s tree (removed after it)."""
        index = self._git.git_dir() / f"desk-tree-index-{os.getpid()}-{os.urandom(4).hex()}"
        other = self._on(index)
        try:
            other.run("read-tree", rev)
            yield other
        finally:
            index.unlink(missing_ok=True)
