"""desk.storage.gitdir: what a person's git left half-done, read from the git folder's files."""

from __future__ import annotations

import subprocess
from pathlib import Path

from desk.layout import DeskFolder
from desk.storage.git import Git
from desk.storage.gitdir import stopped_operation


def test_stopped_operation_reads_merge_and_rebase_state(tmp_path: Path) -> None:
    git_dir = tmp_path / ".git"
    git_dir.mkdir()
    assert stopped_operation(git_dir) is None
    (git_dir / "MERGE_HEAD").mkdir()  # a folder of that name is not git's merge state
    assert stopped_operation(git_dir) is None
    (git_dir / "MERGE_HEAD").rmdir()
    (git_dir / "MERGE_HEAD").write_text("0" * 40 + "\n")
    assert stopped_operation(git_dir) == "merge"
    (git_dir / "MERGE_HEAD").unlink()
    for folder in ("rebase-merge", "rebase-apply"):
        (git_dir / folder).mkdir()
        assert stopped_operation(git_dir) == "rebase"
        (git_dir / folder).rmdir()
    (git_dir / "rebase-merge").write_text("")  # a file of that name is not a rebase
    assert stopped_operation(git_dir) is None


def test_git_dir_of_a_linked_work_tree_comes_from_git(desk: DeskFolder, tmp_path: Path) -> None:
    """The desk's git folder is `.git` when that is a folder, else what git says (a linked work
    tree's `.git` is a file): the same answer as desk.storage.git's."""
    assert desk.git_dir == desk.root / ".git" == Git(desk.root).git_dir()
    linked = tmp_path / "linked"
    subprocess.run(["git", "-C", str(desk.root), "worktree", "add", "-q", "--detach", str(linked)], check=True)
    other = DeskFolder(linked)
    assert (linked / ".git").is_file()
    assert other.git_dir == Git(linked).git_dir() == desk.root / ".git" / "worktrees" / "linked"
