"""kill -9 at every write boundary of a mutation: the next command recovers, nothing half-written.

A child process runs a real `remember` and dies (os._exit, as abrupt as kill -9 for the desk's
files) at one boundary: before the pending marker, before each file write, before `git add`,
before `git commit`, right after the commit. Then the next ordinary command runs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from desk.layout import DeskFolder
from desk.memory.index import entries_in_worktree, render_index
from desk.memory.operations import forget, remember
from tests.conftest import git

CHILD = """
import os, sys
from pathlib import Path
import desk.storage.atomic as atomic, desk.transaction as transaction
from desk.storage.git import Git
root, point, op = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
writes = [0]
real_write, real_remove, real_add, real_commit = atomic.atomic_write, atomic.remove, Git.add, Git.commit
def remove(path):
    if point == "remove":
        os._exit(9)
    real_remove(path)
def write(path, data):
    writes[0] += 1
    if point == f"write{writes[0]}":
        os._exit(9)
    real_write(path, data)
def add(self, paths):
    if point == "add":
        os._exit(9)
    real_add(self, paths)
def commit(self, *args, **kwargs):
    if point == "commit":
        os._exit(9)
    sha = real_commit(self, *args, **kwargs)
    if point == "after-commit":
        os._exit(9)
    return sha
atomic.atomic_write = transaction.atomic_write = write
transaction.remove = remove
Git.add, Git.commit = add, commit
from desk.layout import DeskFolder
from desk.memory.operations import forget, remember
desk = DeskFolder(root)
if op == "forget":
    forget(desk, "keep")
else:
    remember(desk, "fresh", type="fact", description="Interrupted", body="Written when it crashed.")
"""

# remember (a new memory; `add` has its own test): write1 the pending marker, write2 the memory file, write3 MEMORY.md;
# forget: write1 the marker, remove the memory file, write2 MEMORY.md.
POINTS = {"remember": ["write1", "write2", "write3", "commit", "after-commit"],
          "forget": ["write1", "remove", "write2", "commit", "after-commit"]}


def crash(root: Path, point: str, op: str) -> None:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(root), point, op], capture_output=True)
    assert proc.returncode == 9, proc.stderr.decode()


def assert_consistent(desk: DeskFolder) -> None:
    assert git(desk.root, "status", "--porcelain", "--untracked-files=all") == ""
    assert not list(desk.git_dir.glob("desk-pending-*"))
    assert git(desk.root, "fsck", "--full", "--no-dangling").strip() == ""
    for cached in desk.cache_dir.glob("*"):
        cached.unlink()
    assert (desk.root / "MEMORY.md").read_bytes() == render_index(entries_in_worktree(desk).values())


@pytest.mark.parametrize("op, point", [(op, p) for op, points in POINTS.items() for p in points])
def test_the_next_command_recovers(desk: DeskFolder, op: str, point: str) -> None:
    remember(desk, "keep", type="fact", description="Kept", body="A fact that was there before.")
    crash(desk.root, point, op)
    remember(desk, "after", type="fact", description="After", body="The next command's fact.")
    assert_consistent(desk)
    subjects = git(desk.root, "log", "--format=%s").splitlines()
    interrupted = "forget: keep" if op == "forget" else "remember: fresh"
    landed = interrupted in subjects
    if op == "forget":
        assert (desk.root / "memory/keep.md").exists() != landed
    else:
        assert (desk.root / "memory/fresh.md").exists() == landed
    if point in ("commit", "after-commit"):
        assert landed  # every file was written: the interrupted mutation is finished, not lost


def test_a_new_memory_interrupted_before_git_add_is_finished(desk: DeskFolder) -> None:
    crash(desk.root, "add", "remember")
    forget_or_next = remember(desk, "after", type="fact", description="After", body="Next fact.")
    assert forget_or_next.status == "created"
    assert_consistent(desk)
    assert "remember: fresh" in git(desk.root, "log", "--format=%s")
    forget(desk, "fresh")
    assert_consistent(desk)
