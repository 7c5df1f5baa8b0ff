"""Hook benchmarks (issue 3), printed as ratios against baselines measured in the same run.

  `git commit` of one hand-edited memory in a 10,000-memory desk, hooks installed,
  vs the same commit with the hooks switched off                                   target <= 3x
  `validate --staged` (in process, one changed memory) at 10,000 vs 100 memories   target: flat

Usage: python bench/bench_hook.py [--size 10000] [--small 100] [--rounds 15]
The desks are built by writing the files and making one commit, not 10,000 desk commits. Each
hooked commit is paired with an unhooked one in the same loop and medians are compared, so a slow
moment on the shared machine hits both sides.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from desk.layout import DeskFolder
from desk.memory.index import committed_files, entries_in_worktree, load_entries, render_index
from desk.memory.file import MemoryFile, MemoryMeta
from desk.scaffold import init_desk
from desk.guard.validate import validate_staged

NOW = dt.datetime(2026, 11, 29, tzinfo=dt.timezone.utc)
GIT_ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
           "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost"}
NO_HOOKS = ["-c", "core.hooksPath=/dev/null"]


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True)


def memory_bytes(name: str, i: int, body: str = "") -> bytes:
    meta = MemoryMeta(name=name, description=f"benchmark fact {name}", type="fact",
                      triggers=[f"topic{i % 97}"], created=NOW, updated=NOW)
    return MemoryFile(meta, body or f"Benchmark fact {name}: value {i * 7919 % 100003}.\n").render()


def build_desk(root: Path, size: int) -> DeskFolder:
    """`size` memories written directly and committed once; the index cache warmed as in use."""
    init_desk(root)  # installs the hooks
    desk = DeskFolder(root)
    for i in range(size):
        (root / "memory" / f"m{i:06d}.md").write_bytes(memory_bytes(f"m{i:06d}", i))
    (root / "MEMORY.md").write_bytes(render_index(entries_in_worktree(desk).values()))
    git(root, "add", "memory", "MEMORY.md")
    git(root, *NO_HOOKS, "commit", "-q", "-m", f"bench: {size} memories")
    load_entries(desk, committed_files(desk))
    return desk


def hand_edit(desk: DeskFolder, i: int, tag: str) -> str:
    """Change one memory's body (the index line stays the same) and stage it."""
    rel = f"memory/m{i:06d}.md"
    (desk.root / rel).write_bytes(memory_bytes(f"m{i:06d}", i, f"Edited by hand ({tag}, {i}).\n"))
    git(desk.root, "add", "--", rel)
    return rel


def time_commits(desk: DeskFolder, rounds: int) -> tuple[float, float]:
    hooked, plain = [], []
    for r in range(rounds):
        hand_edit(desk, 2 * r, "hooked")
        t0 = time.perf_counter()
        git(desk.root, "commit", "-q", "-m", f"hooked {r}")
        t1 = time.perf_counter()
        hand_edit(desk, 2 * r + 1, "plain")
        t2 = time.perf_counter()
        git(desk.root, *NO_HOOKS, "commit", "-q", "-m", f"plain {r}")
        t3 = time.perf_counter()
        hooked.append(t1 - t0)
        plain.append(t3 - t2)
    return statistics.median(hooked), statistics.median(plain)


def time_validate(desk: DeskFolder, rounds: int) -> float:
    times = []
    for r in range(rounds):
        rel = hand_edit(desk, r % 50, f"validate {r}")
        t0 = time.perf_counter()
        report, _ = validate_staged(desk)
        times.append(time.perf_counter() - t0)
        assert report.ok, [str(f) for f in report.findings]
        git(desk.root, "reset", "-q", "--", rel)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="desk-bench-hook-"))
    try:
        t0 = time.perf_counter()
        big = build_desk(work / "big", args.size)
        small = build_desk(work / "small", args.small)
        print(f"built desks of {args.size} and {args.small} memories in {time.perf_counter() - t0:.1f} s")
        hooked, plain = time_commits(big, args.rounds)
        print(f"commit of one memory, {args.size} memories: hooks {hooked * 1000:.1f} ms, "
              f"no hooks {plain * 1000:.1f} ms, ratio {hooked / plain:.2f}x (target <= 3x)")
        v_small = time_validate(small, args.rounds)
        v_big = time_validate(big, args.rounds)
        print(f"validate --staged in process: {args.small} memories {v_small * 1000:.1f} ms, "
              f"{args.size} memories {v_big * 1000:.1f} ms, growth {v_big / v_small:.2f}x (target: flat)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
