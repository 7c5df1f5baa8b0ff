"""Core benchmarks (issues 2 and 17), printed as ratios against baselines measured in the same run.

  remember (in process) vs a plain `git add` + `git commit -- path` of the same kind of file   target <= 1.5x
  remember cost at the largest desk vs at the smallest                                         target <= 1.5x
  `desk --help` vs `python -c "import click"`, same interpreter                                 target <= 1.3x

Usage: python bench/bench_core.py [--sizes 100,10000] [--history one|full] [--rounds 15] [--baseline twin|same]

A desk of N memories is built with `--history full` (the default) as N commits, one memory each,
written with one `git fast-import` (issue 17: desks people reach have as many commits as
memories), or with `--history one` as a single commit. The plain commits go to a copy of the desk
(`--baseline twin`, the default): a person's commit of a memory file between two remembers would
leave MEMORY.md behind and make each remember render and scan it whole (`--baseline same` measures
that). The machine is shared and noisy: each desk
operation is paired with its baseline in the same loop, and each round visits every size in turn,
and medians are compared, so a slow moment hits both sides and every size. Start-up runs in a neutral folder, so `python -m desk` imports the desk this
interpreter has installed, never a `desk/` folder in the current directory.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from environment import describe

from desk.layout import DeskFolder
from desk.formats.memory_file import MemoryFile, MemoryMeta
from desk.formats.memory_index import render_index
from desk.gate.entries import committed_files, entries_in_worktree, load_entries
from desk.memory.operations import remember
from desk.setup.init import init_desk

NOW = dt.datetime(2026, 11, 29, tzinfo=dt.timezone.utc)
GIT_ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
           "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost"}
NO_HOOKS = ["-c", "core.hooksPath=/dev/null"]


def git(root: Path, *args: str, stdin: bytes | None = None) -> str:
    return subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True,
                          input=stdin).stdout.decode()


def memory_bytes(name: str, i: int) -> bytes:
    meta = MemoryMeta(name=name, description=f"benchmark fact {name}", type="fact",
                      triggers=[f"topic{i % 97}"], created=NOW, updated=NOW)
    return MemoryFile(meta, f"Benchmark fact {name}: value {i * 7919 % 100003}.\n").render()


def commit_each(root: Path, files: list[tuple[str, bytes]]) -> None:
    """One commit per file on top of HEAD, written by a single `git fast-import`."""
    branch = git(root, "symbolic-ref", "HEAD").strip()
    parent = git(root, "rev-parse", "HEAD").strip()
    stamp = int(NOW.timestamp()) - len(files)
    stream = bytearray()
    for i, (rel, data) in enumerate(files):
        message = f"remember: {Path(rel).stem}\n".encode()
        stream += f"commit {branch}\ncommitter bench <bench@localhost> {stamp + i} +0000\n".encode()
        stream += b"data %d\n%s" % (len(message), message)
        if i == 0:
            stream += f"from {parent}\n".encode()
        stream += f"M 100644 inline {rel}\n".encode() + b"data %d\n%s\n" % (len(data), data)
    git(root, "fast-import", "--quiet", "--force", stdin=bytes(stream))
    git(root, "read-tree", "HEAD")  # the index follows the new HEAD; the work tree already has the files
    git(root, "update-index", "-q", "--refresh")  # and knows their stat data, as after a real commit


def build_desk(root: Path, size: int, history: str) -> DeskFolder:
    """A desk with `size` memories: `size` commits (history "full") or one commit (history "one")."""
    init_desk(root)
    desk = DeskFolder(root)
    files = []
    for i in range(size):
        rel = f"memory/m{i:06d}.md"
        data = memory_bytes(f"m{i:06d}", i)
        (root / rel).write_bytes(data)
        files.append((rel, data))
    # No `gc --auto` while building: git detaches it, and it packed the loose objects of a desk being
    # copied (bench_remember_pair.py: "No such file or directory" under .git/objects).
    no_gc = ["-c", "gc.auto=0"]
    if history == "full":
        commit_each(root, files)
    else:
        git(root, *no_gc, "add", "memory")
        git(root, *no_gc, *NO_HOOKS, "commit", "-q", "-m", f"bench: {size} memories")
    # The steady state has a warm blob cache: entries_in_worktree fills it once.
    (root / "MEMORY.md").write_bytes(render_index(entries_in_worktree(desk).values()))
    git(root, *no_gc, *NO_HOOKS, "commit", "-q", "-m", "bench: index", "--", "MEMORY.md")
    load_entries(desk, committed_files(desk))
    # Steady state: the mirror of HEAD's memories exists (the first mutation on a desk builds it).
    remember(desk, "warm-up", type="fact", description="warm-up", body="Warm-up fact.", now=NOW)
    return desk


def time_remember_vs_git(desks: dict[int, tuple[DeskFolder, Path | None]], rounds: int
                         ) -> dict[int, tuple[float, float]]:
    """Medians of `remember` and of a plain `git add` + `git commit -- path` for each desk size,
    paired round by round; each round visits every size in turn, so a busy moment of the shared
    machine hits every size alike and the growth ratio compares like with like.

    The plain commits go to the desk's twin (a copy of it) when there is one, else to the desk
    itself; there each round's `remember` follows a person's commit of a memory file that left
    MEMORY.md behind, so it catches up, renders MEMORY.md whole and scans it whole
    (desk.gate.mirror), not the steady state of consecutive remembers."""
    times: dict[int, tuple[list[float], list[float]]] = {size: ([], []) for size in desks}
    for i in range(rounds):
        for size, (desk, twin) in desks.items():
            ours, plain = times[size]
            target = twin or desk.root
            t0 = time.perf_counter()
            remember(desk, f"bench-{i:04d}", type="fact", description=f"bench memory {i}",
                     body=f"Fact recorded by the benchmark, round {i}.", now=NOW)
            t1 = time.perf_counter()
            # The same kind of file in the same folder: git rebuilds memory/'s tree object either way.
            path = target / "memory" / f"plain-{i:04d}.md"
            path.write_bytes(memory_bytes(f"plain-{i:04d}", i))
            git(target, "add", "--", str(path))
            git(target, *NO_HOOKS, "commit", "-q", "-m", f"plain {i}", "--", str(path))
            t2 = time.perf_counter()
            ours.append(t1 - t0)
            plain.append(t2 - t1)
    return {size: (statistics.median(ours), statistics.median(plain)) for size, (ours, plain) in times.items()}


def time_startup(rounds: int, python: str, cwd: Path) -> tuple[float, float]:
    desk_cmd = [python, "-m", "desk", "--help"]
    click_cmd = [python, "-c", "import click"]
    ours, base = [], []
    for _ in range(rounds):
        for cmd, into in ((desk_cmd, ours), (click_cmd, base)):
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True, cwd=cwd)
            into.append(time.perf_counter() - t0)
    return statistics.median(ours), statistics.median(base)


def commits(desk: DeskFolder) -> int:
    return int(git(desk.root, "rev-list", "--count", "HEAD"))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="100,10000")
    parser.add_argument("--history", choices=("full", "one"), default="full",
                        help="full: one commit per memory (default); one: all memories in one commit")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--baseline", choices=("twin", "same"), default="twin",
                        help="twin: plain git commits into a copy of the desk (default), so remember runs in "
                             "its steady state; same: into the desk itself, between remembers (each remember "
                             "then follows a person's commit that left MEMORY.md stale)")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter for the start-up ratio (default: this one); an editable install's "
                             "import finder adds ~15 ms to every start, so measure a `pip install .` one too")
    args = parser.parse_args()
    print(describe(sys.argv))
    sizes = [int(s) for s in args.sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="desk-bench-"))
    results: dict[int, tuple[float, float, int]] = {}
    try:
        desks: dict[int, tuple[DeskFolder, Path | None]] = {}
        depths: dict[int, int] = {}
        for size in sizes:
            t0 = time.perf_counter()
            desk = build_desk(work / f"desk-{size}", size, args.history)
            depths[size] = commits(desk)
            print(f"built a {size}-memory desk with {depths[size]} commits in {time.perf_counter() - t0:.1f} s",
                  flush=True)
            twin = None
            if args.baseline == "twin":
                twin = work / f"twin-{size}"
                shutil.copytree(desk.root, twin, symlinks=True)
            desks[size] = (desk, twin)
        for size, (ours, plain) in time_remember_vs_git(desks, args.rounds).items():
            results[size] = (ours, plain, depths[size])
        empty = work / "cwd"  # start-up runs here: nothing in it for `-m` to import instead
        empty.mkdir()
        ours_s, base_s = time_startup(args.rounds, args.python, empty)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(f"{'memories':>9}  {'commits':>8}  {'remember':>10}  {'git add+commit':>15}  {'ratio':>6}  (target <= 1.5)")
    for size, (ours, plain, depth) in results.items():
        verdict = "OK" if ours / plain <= 1.5 else "MISSED"
        print(f"{size:>9}  {depth:>8}  {ours * 1000:>8.1f}ms  {plain * 1000:>13.1f}ms  {ours / plain:>6.2f}  {verdict}")
    small = min(results)
    for large in sorted(results)[1:]:
        growth = results[large][0] / results[small][0]
        base_growth = results[large][1] / results[small][1]
        print(f"remember growth {small} -> {large}: {growth:.2f}x (target <= 1.5) {'OK' if growth <= 1.5 else 'MISSED'};"
              f" plain git's own growth: {base_growth:.2f}x")
    ratio = ours_s / base_s
    print(f"desk --help {ours_s * 1000:.0f} ms vs python -c 'import click' {base_s * 1000:.0f} ms: "
          f"{ratio:.2f}x (target <= 1.3) {'OK' if ratio <= 1.3 else 'MISSED'} [{args.python}]")


if __name__ == "__main__":
    main()
