"""`--as-of` over deep history (issue 33): what the desk believed at a time, read from git objects.

  cold CLI `desk recall topic5 --as-of T` vs `desk --help`, same interpreter, same rounds   target <= 3x
  cold CLI `desk list --as-of T` and `desk context --query rare5 --as-of T`                 printed

Usage: python bench/bench_as_of.py [--memories 10000] [--commits 10000] [--rewritten 1000] [--rounds 9]

The desk is bench_history.py's (one `git fast-import`: N memories in D commits, one second
apart, each commit after the first adding one memory), then one more commit that rewrites the
body of `--rewritten` memories (what changed since T: those blobs are not in the search cache,
so an as-of read parses them). T is the middle of the history: about half the memories were
committed then. Each round also reads as of a time no round read before (`recall, new T`: another
commit, so the view of the commit kept by the first read at T is not there to look up). Every as-of read finds its commit with one `git log`, however deep the history.
The first as-of recall builds the search cache of the work tree (printed, not judged).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_history import GIT_ENV, NOW, build_desk, git, memory, run
from environment import describe


def rewrite(root: Path, memories: int, count: int, when: int) -> None:
    """One commit at `when` (epoch seconds) rewriting the body of `count` memories spread over the desk."""
    branch = git(root, "symbolic-ref", "HEAD").strip()
    step = max(1, memories // max(count, 1))
    stream = bytearray(f"commit {branch}\ncommitter bench <bench@localhost> {when} +0000\n".encode())
    message = f"bench: rewrite {count} memories".encode()
    stream += b"data %d\n%s\n" % (len(message), message)
    stream += f"from {git(root, 'rev-parse', 'HEAD').strip()}\n".encode()
    for i in range(0, memories, step)[:count]:
        m = memory(i)
        data = m.render().replace(b"value", b"value now")
        (root / "memory" / f"{m.meta.name}.md").write_bytes(data)
        stream += f"M 100644 inline memory/{m.meta.name}.md\n".encode() + b"data %d\n%s\n" % (len(data), data)
    git(root, "fast-import", "--quiet", "--force", stdin=bytes(stream))
    git(root, "read-tree", "HEAD")
    git(root, "update-index", "-q", "--refresh")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--rewritten", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    print(describe(sys.argv))
    work = Path(tempfile.mkdtemp(prefix="desk-bench-as-of-"))
    try:
        cwd = work / "cwd"
        cwd.mkdir()
        root = work / "desk"
        t0 = time.perf_counter()
        build_desk(root, args.memories, args.commits)
        if args.rewritten:
            rewrite(root, args.memories, args.rewritten, int(NOW.timestamp()) + 60)
        commits = int(git(root, "rev-list", "--count", "HEAD"))
        print(f"built a {args.memories}-memory desk with {commits} commits in {time.perf_counter() - t0:.1f} s")
        middle = NOW - dt.timedelta(seconds=args.commits // 2)
        when = middle.strftime("%Y-%m-%dT%H:%M:%SZ")
        env = {**os.environ, **{k: v for k, v in GIT_ENV.items() if k.startswith("GIT_")}, "DESK_HOME": str(root)}
        desk = [args.python, "-m", "desk"]
        cmds = {"help": [*desk, "--help"],
                "recall --as-of": [*desk, "recall", "topic5", "--as-of", when, "--json"],
                "recall, new T": [*desk, "recall", "topic5", "--as-of"],  # + a time no round read before
                "list --as-of": [*desk, "list", "--as-of", when, "--json"],
                "context --as-of": [*desk, "context", "--query", "rare5", "--as-of", when],
                "recall (now)": [*desk, "recall", "topic5", "--json"]}
        first = run(cmds["recall --as-of"], env, cwd)
        names = list(cmds)
        times: dict[str, list[float]] = {n: [] for n in names}
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                fresh = (middle + dt.timedelta(seconds=r + 1)).strftime("%Y-%m-%dT%H:%M:%SZ")
                times[name].append(run(cmds[name] + ([fresh, "--json"] if name == "recall, new T" else []), env, cwd))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = {n: statistics.median(s) for n, s in times.items()}
    help_ = med["help"]
    print(f"as of {when} (the middle of the history), {args.rewritten} memories rewritten since; "
          f"first as-of recall {first * 1000:.0f} ms (search cache built)")
    print(f"  desk --help          {help_ * 1000:6.0f} ms")
    for name in names[1:]:
        ratio = med[name] / help_
        target = " (target <= 3) " + ("OK" if ratio <= 3 else "MISSED") if name == "recall --as-of" else ""
        print(f"  {name:<20} {med[name] * 1000:6.0f} ms  {ratio:4.2f}x desk --help{target}")


if __name__ == "__main__":
    main()
