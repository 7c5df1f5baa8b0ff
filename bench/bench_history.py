"""History depth (issue 17, target 1): recall and context on desks with real history.

  cold CLI `desk recall` (5 memory hits) vs `desk --help`, same interpreter, same run     target <= 2x
  cold CLI `desk context --query`, a rare trigger and one hitting ~4 % of the memories   target <= 2x
  warm recall in process (one `desk.open()` kept across calls), median                  target <= 50 ms
  each of them on the deepest history vs the shallowest                                 target <= 1.2x

Usage: python bench/bench_history.py [--memories 10000] [--depths 1000,10000] [--rounds 9]

Every desk holds the same N memories; what differs is its history. With D commits, the first
holds N - D + 1 memories and each of the other D - 1 adds one (D = N: one commit per memory, as
`remember` makes them), all written by one `git fast-import`; MEMORY.md comes with the last
commit (the read paths never look at its history). Each memory has three triggers: `topic<i%97>`
(recall's query, `topic5`, matches ~1 % and returns 5 hits), `group<i%26>` (context's many-hit
query, `group7`: 385 memories at 10,000) and `rare<i>` (context's rare query, `rare5`, one memory
in the first, oldest commit).

The first `desk recall` and `desk context` on a desk build the caches (the HEAD mirror's one walk
over the history, the search cache, the entry cache); they are printed, not judged. Then the
timed rounds interleave `desk --help` and each command on every desk, the order rotating, so a
slow moment hits every side; medians are compared (warm calls alternate between the desks too). Child processes run `python -m desk` in an empty folder,
so they import the desk this interpreter has (bench/README.md). For reference, the run also times
what each memory hit cost before issue 17: one `git log -n1 -- memory/<name>.md` for the oldest hit.
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

import desk as desk_api
from desk.formats.memory_file import MemoryFile, MemoryMeta
from desk.formats.memory_index import IndexEntry, render_index
from desk.setup.init import init_desk

NOW = dt.datetime(2026, 11, 29, tzinfo=dt.timezone.utc)
GIT_ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
           "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost"}
RECALL = "topic5"
RARE = "rare5"
MANY = "group7"


def git(root: Path, *args: str, stdin: bytes | None = None) -> str:
    return subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True,
                          input=stdin).stdout.decode()


def memory(i: int) -> MemoryFile:
    name = f"m{i:06d}"
    meta = MemoryMeta(name=name, description=f"benchmark fact {name}", type="fact",
                      triggers=[f"topic{i % 97}", f"group{i % 26}", f"rare{i}"], created=NOW, updated=NOW)
    return MemoryFile(meta, f"Benchmark fact {name}: value {i * 7919 % 100003}.\n")


def build_desk(root: Path, memories: int, depth: int) -> None:
    """`memories` memories in `depth` commits on top of `desk init`'s, by one `git fast-import`."""
    init_desk(root)
    branch = git(root, "symbolic-ref", "HEAD").strip()
    parent = git(root, "rev-parse", "HEAD").strip()
    first = memories - depth + 1
    files = [memory(i) for i in range(memories)]
    stamp = int(NOW.timestamp()) - depth
    stream = bytearray()
    for c in range(depth):
        batch = range(first) if c == 0 else [first + c - 1]
        names = [files[i].meta.name for i in batch]
        message = (f"remember: {names[0]}" if len(names) == 1 else f"bench: {len(names)} memories").encode()
        stream += f"commit {branch}\ncommitter bench <bench@localhost> {stamp + c} +0000\n".encode()
        stream += b"data %d\n%s\n" % (len(message), message)
        if c == 0:
            stream += f"from {parent}\n".encode()
        for i in batch:
            data = files[i].render()
            (root / "memory" / f"{files[i].meta.name}.md").write_bytes(data)
            stream += f"M 100644 inline memory/{files[i].meta.name}.md\n".encode()
            stream += b"data %d\n%s\n" % (len(data), data)
        if c == depth - 1:
            index = render_index(IndexEntry.of(m) for m in files)
            (root / "MEMORY.md").write_bytes(index)
            stream += b"M 100644 inline MEMORY.md\ndata %d\n%s\n" % (len(index), index)
    git(root, "fast-import", "--quiet", "--force", stdin=bytes(stream))
    git(root, "read-tree", "HEAD")  # the index follows the new HEAD; the work tree has the files
    git(root, "update-index", "-q", "--refresh")


def run(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - t0


def commands(python: str) -> dict[str, list[str]]:
    desk_cmd = [python, "-m", "desk"]
    return {"help": [*desk_cmd, "--help"], "recall": [*desk_cmd, "recall", RECALL, "--json"],
            "context rare": [*desk_cmd, "context", "--query", RARE],
            "context many": [*desk_cmd, "context", "--query", MANY]}


def measure(roots: dict[int, Path], rounds: int, python: str, cwd: Path) -> dict[int, dict[str, float]]:
    """Every desk measured in the same rounds (desks and commands interleaved, the order rotating),
    so a change in the machine's load hits every desk alike and the growth stays a fair ratio."""
    envs = {depth: {**os.environ, "DESK_HOME": str(root)} for depth, root in roots.items()}
    cmds = commands(python)
    out: dict[int, dict[str, float]] = {depth: {} for depth in roots}
    for depth in roots:
        for name in ("recall", "context rare"):  # the first of each builds the caches
            out[depth][f"first {name}"] = run(cmds[name], envs[depth], cwd)
        hits = desk_api.open(roots[depth]).recall(RECALL, limit=5).to_json()["hits"]
        assert len(hits) == 5 and all(h["scope"]["memory_kind"] == "memory" for h in hits), hits
        oldest = min(h["provenance"]["path"] for h in hits)
        out[depth]["git log -n1 per hit (before)"] = statistics.median(
            run(["git", "log", "-n1", "--format=%H", "--", oldest], GIT_ENV, roots[depth]) for _ in range(3))
    pairs = [(depth, name) for name in cmds for depth in roots]
    times: dict[tuple[int, str], list[float]] = {pair: [] for pair in pairs}
    for r in range(rounds):
        for depth, name in pairs[r % len(pairs):] + pairs[:r % len(pairs)]:
            times[(depth, name)].append(run(cmds[name], envs[depth], cwd))
    for (depth, name), samples in times.items():
        out[depth][name] = statistics.median(samples)
    warm = {depth: desk_api.open(root) for depth, root in roots.items()}  # a harness keeping one Desk
    try:
        queries = [f"topic{k}" for k in range(40)]
        recalls: dict[int, list[float]] = {depth: [] for depth in roots}
        contexts: dict[int, list[float]] = {depth: [] for depth in roots}
        for q in queries[:5]:
            for d in warm.values():
                d.recall(q, limit=5)
        for i, q in enumerate(queries):
            for depth in (list(roots) if i % 2 else list(reversed(roots))):
                t0 = time.perf_counter()
                warm[depth].recall(q, limit=5)
                recalls[depth].append(time.perf_counter() - t0)
        for k in range(12):
            for depth in (list(roots) if k % 2 else list(reversed(roots))):
                t0 = time.perf_counter()
                warm[depth].context(query=f"rare{k}")
                contexts[depth].append(time.perf_counter() - t0)
    finally:
        for d in warm.values():
            d.close()
    for depth in roots:
        samples = sorted(recalls[depth])
        out[depth]["warm recall"] = statistics.median(samples)
        out[depth]["warm recall p95"] = samples[int(len(samples) * 0.95) - 1]
        out[depth]["warm context rare"] = statistics.median(contexts[depth])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--depths", default="1000,10000", help="commits per desk, comma-separated")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter for the CLI processes (default: this one); an editable install's "
                             "import finder adds ~15 ms to every start, so measure a `pip install .` one too")
    args = parser.parse_args()
    print(describe(sys.argv))
    depths = [int(d) for d in args.depths.split(",")]
    if any(not 1 <= d <= args.memories for d in depths):
        parser.error("each depth must be between 1 and --memories")
    work = Path(tempfile.mkdtemp(prefix="desk-bench-history-"))
    try:
        empty = work / "cwd"  # child processes run here: nothing in it for `-m` to import instead
        empty.mkdir()
        roots = {}
        for depth in depths:
            roots[depth] = work / f"desk-{depth}"
            t0 = time.perf_counter()
            build_desk(roots[depth], args.memories, depth)
            commits = int(git(roots[depth], "rev-list", "--count", "HEAD"))
            print(f"built a {args.memories}-memory desk with {commits} commits in "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
        results = measure(roots, args.rounds, args.python, empty)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(results, args.memories)


def report(results: dict[int, dict[str, float]], memories: int) -> None:
    def ms(x: float) -> str:
        return f"{x * 1000:.0f} ms" if x >= 0.1 else f"{x * 1000:.1f} ms"

    def verdict(ok: bool) -> str:
        return "OK" if ok else "MISSED"

    print()
    for depth, r in results.items():
        help_ = r["help"]
        print(f"{memories} memories, {depth} commits: desk --help {ms(help_)}; "
              f"first recall {ms(r['first recall'])} and first context {ms(r['first context rare'])} (caches built)")
        for name in ("recall", "context rare", "context many"):
            ratio = r[name] / help_
            print(f"  cold CLI {name:<13} {ms(r[name]):>8}  {ratio:4.2f}x desk --help (target <= 2) {verdict(ratio <= 2)}")
        print(f"  warm recall in process  {ms(r['warm recall']):>8}  p95 {ms(r['warm recall p95'])} "
              f"(target <= 50 ms) {verdict(r['warm recall'] <= 0.05)}")
        print(f"  warm context, rare      {ms(r['warm context rare']):>8}")
        print(f"  for reference, one `git log -n1 -- path` (what each hit cost before): "
              f"{ms(r['git log -n1 per hit (before)'])}")
    shallow, deep = min(results), max(results)
    if shallow != deep:
        print(f"growth from {shallow} to {deep} commits, medians of the same rounds (target <= 1.2):")
        for name in ("recall", "context rare", "context many", "warm recall", "warm context rare"):
            growth = results[deep][name] / results[shallow][name]
            print(f"  {name:<17} {growth:4.2f}x {verdict(growth <= 1.2)}")
        help_growth = results[deep]["help"] / results[shallow]["help"]
        print(f"  (desk --help, the same command on both desks, the noise floor: {help_growth:.2f}x)")


if __name__ == "__main__":
    main()
