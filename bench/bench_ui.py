"""`desk ui` benchmark (issue 30): first paint of the memory list and of a memory's history with
diffs, at 1,000 memories with 1,000 commits.                                 target <= 300 ms each

Usage: python bench/bench_ui.py [--memories 1000] [--commits 1000] [--rounds 15]

The desk: `desk init`, then one commit adding N memories, then C - 1 commits each editing the
same memory (`m000000`, with desk's trailers), all by one `git fast-import`: that memory's page
shows the longest history the desk can have (the page lists its newest 200 revisions; git walks
all C commits). The server is the installed `desk ui --no-open`, started once; "first paint" is a
page's whole HTML received over HTTP (the pages run no script and load one stylesheet), the first
request after start (cold: desk's caches are built then) printed apart from the timed rounds.
Each round times, in turn, the memory list (`/`), the memory's page (`/memory/m000000`), and the
baselines measured in the same run: `desk --help` (a process start) and `git log -p` of the same
memory file (what its history with diffs costs git alone); medians are compared.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench_history import GIT_ENV, NOW, git, memory
from environment import describe

from desk.formats.memory_file import MemoryFile
from desk.formats.memory_index import IndexEntry, render_index
from desk.setup.init import init_desk

HOT = "m000000"


def build_desk(root: Path, memories: int, commits: int) -> None:
    init_desk(root)
    branch = git(root, "symbolic-ref", "HEAD").strip()
    parent = git(root, "rev-parse", "HEAD").strip()
    files = [memory(i) for i in range(memories)]
    index = render_index(IndexEntry.of(m) for m in files)
    stream = bytearray(f"commit {branch}\ncommitter bench <bench@localhost> {int(NOW.timestamp())} +0000\n"
                       f"data 21\nbench: many memories\nfrom {parent}\n".encode())
    for m in files:
        data = m.render()
        (root / "memory" / f"{m.meta.name}.md").write_bytes(data)
        stream += f"M 100644 inline memory/{m.meta.name}.md\ndata {len(data)}\n".encode() + data + b"\n"
    stream += f"M 100644 inline MEMORY.md\ndata {len(index)}\n".encode() + index + b"\n"
    hot = files[0]
    for c in range(1, commits):
        data = MemoryFile(hot.meta, f"Benchmark fact {HOT}: revision {c}.\nUnchanged second line.\n").render()
        message = f"remember: {HOT}\n\nDesk-Op: remember\nDesk-Memory: {HOT}\nDesk-Actor: user\n".encode()
        stream += f"commit {branch}\ncommitter bench <bench@localhost> {int(NOW.timestamp()) + c} +0000\n".encode()
        stream += f"data {len(message)}\n".encode() + message + f"M 100644 inline memory/{HOT}.md\n".encode()
        stream += f"data {len(data)}\n".encode() + data + b"\n"
        if c == commits - 1:
            (root / "memory" / f"{HOT}.md").write_bytes(data)
    git(root, "fast-import", "--quiet", "--force", stdin=bytes(stream))
    git(root, "read-tree", "HEAD")
    git(root, "update-index", "-q", "--refresh")


def timed(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    print(describe(sys.argv))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "bench-desk"  # not "desk": `python -m desk` in tmp would import it
        build_desk(root, args.memories, args.commits)
        server = subprocess.Popen([sys.executable, "-m", "desk", "--desk", str(root), "ui", "--no-open"],
                                  stderr=subprocess.PIPE, text=True, env=GIT_ENV, cwd=tmp)
        try:
            assert server.stderr is not None
            lines = iter(server.stderr.readline, "")
            said = []
            for line in lines:
                said.append(line)
                if url := re.search(r"(http://\S+)/\?token=(\S+)", line):
                    break
            assert url, "desk ui printed no URL: " + "".join(said)
            base, token = url.groups()
            opener = urllib.request.build_opener()
            opener.addheaders = [("Cookie", f"desk_ui={token}")]

            def page(path: str) -> None:
                with opener.open(base + path) as answer:
                    assert answer.status == 200 and answer.read().rstrip().endswith(b"</html>")

            cold = {"list": timed(lambda: page("/")), "history": timed(lambda: page(f"/memory/{HOT}"))}
            sides = {"list": lambda: page("/"), "history": lambda: page(f"/memory/{HOT}"),
                     "desk --help": lambda: subprocess.run([sys.executable, "-m", "desk", "--help"], check=True,
                                                           capture_output=True, cwd=tmp),
                     "git log -p": lambda: subprocess.run(["git", "log", "-p", "--", f"memory/{HOT}.md"], check=True,
                                                          capture_output=True, cwd=root, env=GIT_ENV)}
            times: dict[str, list[float]] = {name: [] for name in sides}
            for _ in range(args.rounds):
                for name, fn in sides.items():
                    times[name].append(timed(fn))
        finally:
            server.terminate()
            server.wait(10)
    med = {name: statistics.median(t) * 1000 for name, t in times.items()}
    print(f"{args.memories:,} memories, {args.commits:,} commits ({args.commits - 1:,} of them on {HOT}); "
          f"{args.rounds} rounds, medians")
    print(f"  first request after start: list {cold['list'] * 1000:.0f} ms, history {cold['history'] * 1000:.0f} ms")
    for name in sides:
        print(f"  {name:<12} {med[name]:8.1f} ms")
    print(f"  memory list  {med['list']:.1f} ms = {med['list'] / med['desk --help']:.2f}x `desk --help` "
          f"(target <= 300 ms: {'met' if med['list'] <= 300 else 'missed'})")
    print(f"  history page {med['history']:.1f} ms = {med['history'] / med['git log -p']:.2f}x `git log -p` "
          f"of the same file (target <= 300 ms: {'met' if med['history'] <= 300 else 'missed'})")


if __name__ == "__main__":
    main()
