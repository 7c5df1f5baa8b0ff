"""kill -9 at every write boundary of a mutation: the next command recovers, nothing half-written.

A child process runs a real `remember`, `forget` or `restore` and dies (os._exit, as abrupt as kill -9 for
the desk's files) at one boundary of the commit path: the pending marker, the blob objects, the
tree (built in desk's private index), the commit object,
taking git's index lock, each work-tree file, the person's index refreshed in its copy, the
compare-and-swap of the branch, and publishing the person's index.
Then the next ordinary command runs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from desk.layout import DeskFolder
from desk.formats.memory_index import render_index
from desk.gate.entries import entries_in_worktree
from desk.gate.mirror import head_mirror
from desk.memory.operations import forget, remember
from tests.conftest import git

CHILD = """
import os, sys
from pathlib import Path
import desk.storage.atomic as atomic, desk.transaction as transaction
from desk.storage.git import Git, IndexLock
from desk.storage.git.index import Index
from desk.storage.git.objects import Objects
from desk.storage.git.refs import Refs
root, point, op = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
writes = [0]
real_write, real_remove = atomic.atomic_write, atomic.remove
def remove(path):
    if point == "remove":
        os._exit(9)
    real_remove(path)
def write(path, data):
    writes[0] += 1
    if point == f"write{writes[0]}":
        os._exit(9)
    return real_write(path, data)
def dying(cls, name, after=False):
    real = getattr(cls, name)
    def method(self, *args, **kwargs):
        if point == name:
            os._exit(9)
        result = real(self, *args, **kwargs)
        if point == "after-" + name:
            os._exit(9)
        return result
    setattr(cls, name, method)
for cls, name in ((Objects, "write_blob"), (Index, "build_tree"), (Git, "commit_tree"), (Index, "refresh_entries"),
                  (Refs, "move_head")):
    dying(cls, name)
for name in ("acquire", "publish"):
    dying(IndexLock, name)
from desk.gate.mirror import HeadMirror
dying(HeadMirror, "record")  # after the commit: the mirror's record, with its notes on MEMORY.md
atomic.atomic_write = transaction.atomic_write = write
transaction.remove = remove
from desk.layout import DeskFolder
from desk.memory.operations import forget, remember
desk = DeskFolder(root)
if op == "forget":
    forget(desk, "keep")
elif op == "restore":
    from desk.memory.restore import restore
    restore(desk, "keep")
else:
    remember(desk, "fresh", type="fact", description="Interrupted", body="Written when it crashed.")
"""

# remember (a new memory): write1 the pending marker, write2 the memory file, write3 MEMORY.md;
# forget: write1 the marker, remove the memory file, write2 MEMORY.md.
TREES = ["after-build_tree"]
INDEX = ["refresh_entries", "after-refresh_entries"]  # the person's index, refreshed in desk's copy
COMMON = ["write_blob", "build_tree", *TREES, "commit_tree", "acquire", "after-acquire", *INDEX,
          "move_head", "after-move_head", "publish", "after-publish", "record", "after-record"]
POINTS = {"remember": ["write1", *COMMON, "write2", "write3"],
          "forget": ["write1", *COMMON, "remove", "write2"],
          "restore": ["write1", *COMMON, "write2", "write3"]}  # `keep`, forgotten first: as remember
# the branch had moved: the commit stands (the mirror's record and its notes are derived: a crash
# before the record costs the next command a catch-up and a whole render and scan of MEMORY.md)
LANDED = {"after-move_head", "publish", "after-publish", "record", "after-record"}
WRITTEN = {*INDEX, "move_head"}  # every file written, not committed: finished, not lost


def crash(root: Path, point: str, op: str) -> None:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(root), point, op], capture_output=True)
    assert proc.returncode == 9, proc.stderr.decode()


def assert_consistent(desk: DeskFolder) -> None:
    assert git(desk.root, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(desk.root, "diff", "--cached", "--name-only") == ""  # the person's index is HEAD's
    assert not list(desk.git_dir.glob("desk-pending-*"))
    assert not (desk.git_dir / "index.lock").exists()  # a lock desk left is gone: a person can commit
    assert git(desk.root, "fsck", "--full", "--no-dangling").strip() == ""
    for cached in desk.cache_dir.glob("*"):
        cached.unlink()
    assert (desk.root / "MEMORY.md").read_bytes() == render_index(entries_in_worktree(desk).values())


@pytest.mark.parametrize("op, point", [(op, p) for op, points in POINTS.items() for p in points])
def test_the_next_command_recovers(desk: DeskFolder, op: str, point: str) -> None:
    remember(desk, "keep", type="fact", description="Kept", body="A fact that was there before.")
    if op == "restore":
        forget(desk, "keep")
    crash(desk.root, point, op)
    remember(desk, "after", type="fact", description="After", body="The next command's fact.")
    with head_mirror(desk) as mirror:  # whatever the crash left of the mirror, the index is vouched for again
        assert mirror.index_exact
    assert_consistent(desk)  # (MEMORY.md exactly the rendered index)
    subjects = git(desk.root, "log", "--format=%s").splitlines()
    interrupted = {"forget": "forget: keep", "restore": "restore: keep from "}.get(op, "remember: fresh")
    landed = any(subject.startswith(interrupted) for subject in subjects)
    if op == "forget":
        assert (desk.root / "memory/keep.md").exists() != landed
    elif op == "restore":
        assert (desk.root / "memory/keep.md").exists() == landed
    else:
        assert (desk.root / "memory/fresh.md").exists() == landed
    if point in LANDED | WRITTEN:
        assert landed  # the interrupted mutation is finished (or stands), not lost
    elif point in ("write_blob", "build_tree", *TREES, "commit_tree", "acquire", "after-acquire", "write1"):
        assert not landed  # nothing was visible yet: the mutation never happened
