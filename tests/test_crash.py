"""kill -9 at every write boundary of a mutation: the next command recovers, nothing half-written.

A child process runs a real `remember`, `forget` or `restore` (or review mode's propose, accept and
reject: test_a_review_verdict_or_proposal_is_whole_after_a_kill) and dies (os._exit, as abrupt as kill -9 for
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
writes, swaps = [0], [0]
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
real_swap = Refs.swap_ref
def swap_ref(self, *args, **kwargs):  # review's refs: swap_ref<n> before the n-th, after-swap_ref<n> after it
    swaps[0] += 1
    if point == f"swap_ref{swaps[0]}":
        os._exit(9)
    result = real_swap(self, *args, **kwargs)
    if point == f"after-swap_ref{swaps[0]}":
        os._exit(9)
    return result
Refs.swap_ref = swap_ref
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
elif op == "propose":  # the assistant's remember under {"review": {"*": "propose"}}
    from desk.memory.review import proposing
    from desk.transaction import Proposed
    try:
        remember(proposing(desk, "assistant", "remember", ["fact"]), "fresh", type="fact",
                 description="Interrupted", body="Proposed when it crashed.")
    except Proposed:
        pass
elif op == "accept":
    from desk.memory.review import accept_proposal
    accept_proposal(desk, sys.argv[4])
elif op == "reject":
    from desk.memory.review import reject_proposal
    reject_proposal(desk, sys.argv[4], reason="Not a fact.")
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


def crash(root: Path, point: str, op: str, *extra: str) -> None:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(root), point, op, *extra], capture_output=True)
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


# Review mode (docs/review.md). propose: blobs, desk's private index, the commit, then the proposal's
# ref (swap_ref1), nothing else. accept: remember's commit path (write2 the memory file, write3 MEMORY.md),
# then refs/desk/accepted/<id> (swap_ref1) and the proposal's ref deleted (swap_ref2). reject: the
# rejected commit, refs/desk/rejected/<id> (swap_ref1), the branch's empty audit commit (write1 its
# marker; no file, so no blob and no publish), then the proposal's ref deleted (swap_ref2).
PROPOSE = ["write_blob", "build_tree", "after-build_tree", "commit_tree", "after-commit_tree",
           "swap_ref1", "after-swap_ref1"]
ACCEPT = ["write1", *COMMON, "write2", "write3", "swap_ref1", "after-swap_ref1", "swap_ref2", "after-swap_ref2"]
REJECT = ["commit_tree", "after-commit_tree", "swap_ref1", "after-swap_ref1", "write1", "build_tree",
          "after-build_tree", "acquire", "after-acquire", "move_head", "after-move_head",
          "swap_ref2", "after-swap_ref2"]
REVIEW_POINTS = {"propose": PROPOSE, "accept": ACCEPT, "reject": REJECT}


def trailer(desk: DeskFolder, rev: str, key: str) -> str:
    return git(desk.root, "log", "-1", f"--format=%(trailers:key={key},valueonly)", rev).strip()


def on_branch(desk: DeskFolder, proposal: str, op: str) -> list[str]:
    """The branch's commits that carry `proposal` with Desk-Op `op` (accept keeps the proposal's own op)."""
    shas = git(desk.root, "log", "--format=%H").split()
    return [s for s in shas if trailer(desk, s, "Desk-Proposal") == proposal
            and (trailer(desk, s, "Desk-Reviewed-By") if op == "accept" else trailer(desk, s, "Desk-Op") == op)]


@pytest.mark.parametrize("op, point, first", [(op, p, first) for op, points in REVIEW_POINTS.items() for p in points
                                              for first in ((False, True) if op != "propose" else (False,))])
def test_a_review_verdict_or_proposal_is_whole_after_a_kill(desk: DeskFolder, op: str, point: str, first: bool) -> None:
    """`first`: an ordinary command (a person's remember) lands before the verdict is run again."""
    from desk.errors import DeskError
    from desk.memory.review import accept_proposal, proposing, reject_proposal
    from desk.transaction import Proposed
    from tests.review.test_review import enable

    enable(desk, {"*": "propose"})
    remember(desk, "keep", type="fact", description="Kept", body="A fact that was there before.")
    proposal = ""
    if op != "propose":
        try:
            remember(proposing(desk, "assistant", "remember", ["fact"]), "fresh", type="fact",
                     description="Proposed", body="The assistant's proposed fact.")
        except Proposed as done:
            proposal = done.proposal
    sha = git(desk.root, "rev-parse", f"refs/desk/proposals/{proposal}").strip() if proposal else ""
    head = git(desk.root, "rev-parse", "HEAD").strip()
    crash(desk.root, point, op, proposal)
    if op == "propose":
        assert git(desk.root, "rev-parse", "HEAD").strip() == head  # the branch untouched
        assert_consistent(desk)
        proposals = git(desk.root, "for-each-ref", "--format=%(refname)", "refs/desk/proposals/").split()
        assert len(proposals) == (1 if point == "after-swap_ref1" else 0)
        for ref in proposals:  # a whole proposal: HEAD's child adding the fact, nothing on the branch
            assert git(desk.root, "rev-parse", f"{ref}^1").strip() == head
            assert "memory/fresh.md" in git(desk.root, "show", "--name-only", "--format=", ref).split()
        assert not (desk.root / "memory/fresh.md").exists()
    else:  # the person runs the verdict again: it finishes or makes it, exactly once
        if first:
            remember(desk, "between", type="fact", description="Between", body="A fact made before the retry.")
        try:
            if op == "accept":
                accept_proposal(desk, proposal)
            else:
                reject_proposal(desk, proposal, reason="Not a fact.")
        except DeskError:
            assert point == "after-swap_ref2"  # it had finished: no pending proposal left
    remember(desk, "after", type="fact", description="After", body="The next command's fact.")
    with head_mirror(desk) as mirror:
        assert mirror.index_exact
    assert_consistent(desk)
    from desk.cli.main import cli
    from click.testing import CliRunner

    checked = CliRunner().invoke(cli, ["--desk", str(desk.root), "validate", "--all"])
    assert checked.exit_code == 0, checked.output
    if op == "propose":
        return
    assert git(desk.root, "for-each-ref", "refs/desk/proposals/") == ""  # the proposal's ref is gone
    landed = on_branch(desk, proposal, "accept" if op == "accept" else "reject-proposal")
    assert len(landed) == 1  # exactly once
    if op == "accept":
        assert (desk.root / "memory/fresh.md").exists()
        assert git(desk.root, "rev-parse", f"refs/desk/accepted/{proposal}").strip() == landed[0]
    else:
        assert not (desk.root / "memory/fresh.md").exists()
        rejected = f"refs/desk/rejected/{proposal}"
        assert git(desk.root, "rev-parse", f"{rejected}^1").strip() == sha
        assert trailer(desk, rejected, "Desk-Reason") == "Not a fact."
