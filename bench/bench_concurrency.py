"""Concurrency target (docs/design.md §6): 8 processes × 50 mutations land as 400 commits and 400 files,
the index exact and `git fsck` clean. Prints the counts, the wall time and throughput.

Usage: python bench/bench_concurrency.py [--workers 8] [--each 50]
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from desk.layout import DeskFolder
from desk.formats.memory_index import render_index
from desk.gate.entries import entries_in_worktree
from desk.memory.operations import remember
from desk.setup.init import init_desk


def worker(root: str, worker_id: int, each: int) -> None:
    desk = DeskFolder(Path(root))
    for i in range(each):
        remember(desk, f"w{worker_id}-m{i:03d}", type="fact", description=f"worker {worker_id} fact {i}",
                 body=f"Worker {worker_id} learned fact number {i}.")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--each", type=int, default=50)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="desk-bench-conc-"))
    try:
        root = work / "desk"
        init_desk(root)
        start_commits = int(git(root, "rev-list", "--count", "HEAD"))
        ctx = multiprocessing.get_context("fork")
        procs = [ctx.Process(target=worker, args=(str(root), w, args.each)) for w in range(args.workers)]
        t0 = time.perf_counter()
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        elapsed = time.perf_counter() - t0
        total = args.workers * args.each
        commits = int(git(root, "rev-list", "--count", "HEAD")) - start_commits
        files = len([f for f in git(root, "ls-files", "memory/").split() if f.endswith(".md")])
        index_exact = (root / "MEMORY.md").read_bytes() == render_index(entries_in_worktree(DeskFolder(root)).values())
        fsck = git(root, "fsck", "--full").strip()
        print(f"{args.workers} x {args.each}: exit codes {sorted({p.exitcode for p in procs})}, "
              f"{commits}/{total} commits, {files}/{total} files, index exact: {index_exact}, "
              f"git fsck: {'clean' if not fsck else fsck}")
        print(f"{elapsed:.1f} s wall, {total / elapsed:.1f} mutations/s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
