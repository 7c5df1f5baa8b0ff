"""Sync benchmarks (issue 13), printed as ratios against baselines measured in the same run.

  `desk sync` with nothing to do (whole process, and in process) vs a plain `git fetch` +
  `git status` of the same clone                                                 target <= 1.5x
  (also `desk --help` in the same loop: the interpreter, click and desk's CLI, which no command
  can go below, so the part of sync that is desk's own work shows, judged as issue 17 judges a
  whole `desk remember`: (desk sync - desk --help) <= 1.5x; and `python -c pass`, the floor of
  any Python process)
  `desk sync` of 1,000 remote commits touching 1,000 memories as a fast-forward (checked by the
  gate before HEAD moves) vs a plain `git pull --ff-only` of the same commits  reported
  the same with one local commit (a real merge), vs a plain `git pull --no-rebase` of the same
  commits into a copy of the same clone (hooks off for the baseline)            reported

Usage: python bench/bench_sync.py [--size 10000] [--commits 1000] [--rounds 9]

The remote is a bare repository on a file path (no network: the ratio is desk's own overhead).
Child processes start with bytecode caching on, as after a `pip install`.
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

from bench_core import GIT_ENV, NO_HOOKS, NOW, build_desk, memory_bytes
from environment import describe

from desk.memory.operations import remember


def run(root: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(list(args), cwd=root, env=env, check=True, capture_output=True)


def git(root: Path, env: dict[str, str], *args: str, stdin: bytes | None = None) -> str:
    return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True,
                          input=stdin).stdout.decode()


def desk_cmd(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "desk", "--desk", str(root), *args]


def remote_commits(root: Path, env: dict[str, str], count: int, word: str = "changed") -> None:
    """`count` commits on top of HEAD, each changing the body of one existing memory (one fast-import)."""
    branch = git(root, env, "symbolic-ref", "HEAD").strip()
    parent = git(root, env, "rev-parse", "HEAD").strip()
    stamp = int(NOW.timestamp())
    stream = bytearray()
    for i in range(count):
        name = f"m{i:06d}"
        data = memory_bytes(name, i).replace(b"value", f"{word} value".encode())
        message = f"remember: {name}\n\nDesk-Op: remember\nDesk-Actor: user\n".encode()
        stream += f"commit {branch}\ncommitter bench <bench@localhost> {stamp + i} +0000\n".encode()
        stream += b"data %d\n%s" % (len(message), message)
        if i == 0:
            stream += f"from {parent}\n".encode()
        stream += f"M 100644 inline memory/{name}.md\n".encode() + b"data %d\n%s\n" % (len(data), data)
    git(root, env, "fast-import", "--quiet", "--force", stdin=bytes(stream))
    git(root, env, "reset", "-q", "--hard")


def paired(rounds: int, ours: list[str], base: list[list[str]], cwd: Path, env: dict[str, str]
           ) -> tuple[float, float]:
    a, b = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        run(cwd, env, *ours)
        t1 = time.perf_counter()
        for cmd in base:
            run(cwd, env, *cmd)
        t2 = time.perf_counter()
        a.append(t1 - t0)
        b.append(t2 - t1)
    return statistics.median(a), statistics.median(b)


def sync_vs_pull(b: Path, copy: Path, env: dict[str, str], *pull: str) -> tuple[float, float, bool]:
    """Seconds of `desk sync` in clone `b` and of a plain `git pull PULL...` of the same commits in
    a copy of it made first (hooks off), and whether both end with the same tree."""
    shutil.copytree(b, copy, symlinks=True)
    t1 = time.perf_counter()
    run(b, env, *desk_cmd(b, "sync", "-q", "--no-push"))
    ours = time.perf_counter() - t1
    t1 = time.perf_counter()
    git(copy, env, *NO_HOOKS, "pull", "-q", *pull, "origin", "main")
    plain = time.perf_counter() - t1
    same = git(b, env, "rev-parse", "HEAD^{tree}") == git(copy, env, "rev-parse", "HEAD^{tree}")
    return ours, plain, same


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    print(describe(sys.argv))
    work = Path(tempfile.mkdtemp(prefix="desk-bench-sync-"))
    env = {k: v for k, v in GIT_ENV.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    try:
        t0 = time.perf_counter()
        a = build_desk(work / "a", args.size, "full")
        remote = work / "remote.git"
        git(work, env, "init", "-q", "--bare", "-b", "main", str(remote))
        git(a.root, env, "remote", "add", "origin", str(remote))
        git(a.root, env, "push", "-q", "origin", "main")
        run(work, env, *desk_cmd(work, "clone", "-q", str(remote), str(work / "b")))
        b = work / "b"
        print(f"built a desk of {args.size} memories and cloned it in {time.perf_counter() - t0:.1f} s",
              flush=True)
        run(b, env, *desk_cmd(b, "sync", "-q"))  # warm: bytecode, caches
        ours, plain = paired(args.rounds, desk_cmd(b, "sync", "-q"),
                             [["git", "fetch", "-q", "origin"], ["git", "status", "--porcelain"]], b, env)
        start_up, _ = paired(args.rounds, desk_cmd(b, "--help"), [["git", "status", "--porcelain"]], b, env)
        bare, _ = paired(args.rounds, [sys.executable, "-c", "pass"], [["git", "status", "--porcelain"]], b, env)
        verdict = "OK" if ours / plain <= 1.5 else "MISSED"
        own = "OK" if (ours - start_up) / plain <= 1.5 else "MISSED"
        print(f"sync with nothing to do, whole process: desk sync {ours * 1000:.0f} ms, git fetch + git status "
              f"{plain * 1000:.0f} ms, {ours / plain:.2f}x (target <= 1.5) {verdict}; `desk --help` alone "
              f"{start_up * 1000:.0f} ms, so desk sync's own work is {(ours - start_up) * 1000:.0f} ms, "
              f"{(ours - start_up) / plain:.2f}x {own}; the interpreter alone (`python -c pass`) "
              f"{bare * 1000:.0f} ms, {bare / plain:.2f}x", flush=True)
        import desk.api as api

        desk_b = api.open(b)
        inproc = []
        for _ in range(args.rounds):
            t1 = time.perf_counter()
            desk_b.sync()
            inproc.append(time.perf_counter() - t1)
        mid = statistics.median(inproc)
        print(f"the same in process: {mid * 1000:.0f} ms, {mid / plain:.2f}x", flush=True)

        # 1,000 remote commits touching 1,000 memories, integrated by a fast-forward (gate first).
        remote_commits(a.root, env, args.commits)
        git(a.root, env, "push", "-q", "origin", "main")
        ours, plain, same = sync_vs_pull(b, work / "b-ff", env, "--ff-only")
        print(f"fast-forward of {args.commits} remote commits ({args.commits} memories, checked by the gate "
              f"first) in a {args.size}-memory desk: desk sync {ours:.2f} s, git pull --ff-only {plain:.2f} s, "
              f"{ours / plain:.2f}x; same tree: {same}", flush=True)

        # 1,000 more remote commits touching the same memories; one local commit in the clone: a real merge.
        remote_commits(a.root, env, args.commits, "again")
        git(a.root, env, "push", "-q", "origin", "main")
        remember(desk_b, "local-change", type="fact", description="made in b", body="Made in b.", now=NOW)
        ours, plain, same = sync_vs_pull(b, work / "b2", env, "--no-rebase", "--no-edit")
        print(f"sync of {args.commits} remote commits ({args.commits} memories) into a {args.size}-memory "
              f"desk with one local commit: desk sync {ours:.2f} s, git pull {plain:.2f} s, "
              f"{ours / plain:.2f}x; same tree: {same}", flush=True)
    finally:
        if not os.environ.get("KEEP"):
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
