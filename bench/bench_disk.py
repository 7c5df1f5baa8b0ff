"""Disk after many remembers (issue 34): desk runs git's housekeeping as git's porcelain does.

  .git size after W remembers at N memories vs a twin desk given the same W changes by
  `git add` + `git commit` (git's porcelain runs `git gc --auto` itself)            target <= 1.2x
  remember with desk's auto gc vs with it off (DESK_AUTO_GC=0), medians          target ~1.0x (printed)

Usage: python bench/bench_disk.py [--size 10000] [--writes 2000] [--gc-auto 6700]

The desk is built as bench_core.py builds it (`--history one`), packed once by `git gc` (as a clone
or an older desk is), and copied three times: desk's auto gc on, off, and the twin. Each round runs
one remember on the first two (the same memory) and then gives the twin the same two files
(the memory and MEMORY.md) by `git add` + `git commit`. Each `.git` is measured (`du`, in KiB)
every `--every` writes, and at the end once every background gc is done. `git gc --auto` packs
when its sample passes gc.auto, so `.git` saws up and down and the end is one arbitrary moment:
the target compares the mean over the run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_core import NOW, NO_HOOKS, build_desk, git
from environment import describe

from desk.layout import DeskFolder
from desk.memory.operations import remember
from desk.storage.git import housekeeping
from desk.storage.git.housekeeping import AUTO_GC_ENV


def size_kib(path: Path) -> int:
    """`du -sk` (a gc running beside it may remove a file it was about to count: not an error)."""
    return int(subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True).stdout.split()[0])


def wait_for_gc(root: Path, limit: float = 600.0) -> None:
    """Until the gcs desk started here have ended and no `git gc` holds gc.pid (git's detached one)."""
    for proc in housekeeping._started:
        proc.wait()
    deadline = time.monotonic() + limit
    while (root / ".git" / "gc.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--every", type=int, default=25, help="measure each .git every this many writes")
    parser.add_argument("--gc-auto", type=int, help="gc.auto in all three repositories (git's default: 6700), "
                        "to scale a shorter run down so that git's housekeeping is due in it as often")
    args = parser.parse_args()
    print(describe(sys.argv))
    with tempfile.TemporaryDirectory(prefix="bench-disk-") as tmp:
        base = Path(tmp) / "base"
        t0 = time.perf_counter()
        build_desk(base, args.size, "one")
        wait_for_gc(base)  # desk's own, after the warm-up remember
        git(base, "gc", "-q")
        roots = {name: Path(tmp) / name for name in ("auto", "off", "twin")}
        for root in roots.values():
            shutil.copytree(base, root, symlinks=True)
            if args.gc_auto is not None:
                git(root, "config", "gc.auto", str(args.gc_auto))
        print(f"built a desk of {args.size} memories in {time.perf_counter() - t0:.0f} s; "
              f".git {size_kib(base / '.git')} KiB after `git gc`")
        desks = {name: DeskFolder(root) for name, root in roots.items() if name != "twin"}
        times: dict[str, list[float]] = {"auto": [], "off": [], "twin": []}
        samples: dict[str, list[int]] = {name: [] for name in roots}
        twin = roots["twin"]
        for i in range(args.writes):
            name = f"disk-{i:05d}"
            for label in (("auto", "off") if i % 2 else ("off", "auto")):  # the order alternates
                if label == "off":
                    os.environ[AUTO_GC_ENV] = "0"
                t = time.perf_counter()
                remember(desks[label], name, type="fact", description=f"disk bench fact {i}",
                         body=f"Fact {i} written by the disk benchmark.", now=NOW)
                times[label].append(time.perf_counter() - t)
                os.environ.pop(AUTO_GC_ENV, None)
            t = time.perf_counter()
            for rel in (f"memory/{name}.md", "MEMORY.md"):
                (twin / rel).write_bytes((roots["auto"] / rel).read_bytes())
            git(twin, "add", "--", f"memory/{name}.md", "MEMORY.md")
            git(twin, *NO_HOOKS, "commit", "-q", "-m", f"remember: {name}")
            times["twin"].append(time.perf_counter() - t)
            if (i + 1) % args.every == 0:
                for n, r in roots.items():
                    samples[n].append(size_kib(r / ".git"))
                if (i + 1) % (args.every * 10) == 0:
                    print(f"  {i + 1} writes: .git KiB " + ", ".join(f"{n} {v[-1]}" for n, v in samples.items()), flush=True)
        for root in roots.values():
            wait_for_gc(root)
        kib = {name: size_kib(root / ".git") for name, root in roots.items()}
        medians = {name: statistics.median(t) for name, t in times.items()}
        for name, root in roots.items():
            loose = git(root, "count-objects", "-v").replace("\n", ", ")
            print(f"{name:5} .git {kib[name]:>9} KiB; remember median {medians[name] * 1000:.1f} ms; {loose}")
        mean = {name: statistics.mean(v) for name, v in samples.items()}
        ratio = mean["auto"] / mean["twin"]
        print(f".git after {args.writes} remembers at {args.size} memories, desk (auto gc) / twin (git commit): "
              f"{kib['auto'] / kib['twin']:.2f}x at the end; with desk's auto gc off: {kib['off'] / kib['twin']:.2f}x")
        print(f"mean .git over the run (every {args.every} writes; one moment falls anywhere on gc's sawtooth): "
              f"desk {mean['auto']:.0f} KiB / twin {mean['twin']:.0f} KiB = {ratio:.2f}x (target <= 1.2x); "
              f"auto gc off: {mean['off'] / mean['twin']:.2f}x")
        print(f"remember median, auto gc on / off: {medians['auto'] / medians['off']:.2f}x (target ~1.0x)")
        sys.exit(0 if ratio <= 1.2 else 1)


if __name__ == "__main__":
    main()
