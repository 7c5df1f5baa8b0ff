"""Concurrent desk processes: every mutation lands, the index is exact, git stays clean."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from desk.layout import DeskFolder
from desk.formats.memory_index import render_index
from desk.gate.entries import entries_in_worktree
from tests.conftest import git

WORKERS = 8
EACH = 25


def _worker(root: str, worker: int) -> None:
    from desk.memory.operations import remember

    desk = DeskFolder(Path(root))
    for i in range(EACH):
        remember(desk, f"w{worker}-m{i:02d}", type="fact", description=f"worker {worker} fact {i}",
                 body=f"Worker {worker} learned fact number {i}.")


@pytest.mark.slow
def test_eight_processes_all_land(desk: DeskFolder) -> None:
    start = int(git(desk.root, "rev-list", "--count", "HEAD"))
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_worker, args=(str(desk.root), w)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0] * WORKERS
    total = WORKERS * EACH
    assert int(git(desk.root, "rev-list", "--count", "HEAD")) == start + total
    files = [f for f in git(desk.root, "ls-files", "memory/").split() if f.endswith(".md")]
    assert len(files) == total
    index = (desk.root / "MEMORY.md").read_bytes()
    for cached in desk.cache_dir.glob("*"):
        cached.unlink()
    assert index == render_index(entries_in_worktree(desk).values())
    assert index.count(b"\n- [") == total
    assert git(desk.root, "status", "--porcelain", "--untracked-files=all") == ""
    fsck = git(desk.root, "fsck", "--full")
    assert fsck.strip() == ""
