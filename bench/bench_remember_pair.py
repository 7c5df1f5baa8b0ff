"""`remember` of two desk installs interleaved round by round (issue 17.2), each beside a plain
`git add` + `git commit -- path` on a twin copy of one desk, in process and as whole processes.

  in process:    remember vs the plain add + commit                                target <= 1.5x
  whole process: (`desk remember` - `desk --help`) vs the plain add + commit        target <= 1.5x

  growth:        in-process remember at each larger desk vs at the smallest        target <= 1.5x
                 (also in CPU time, desk's and its git processes': steadier on a shared machine)

Usage: python bench/bench_remember_pair.py --python main=/tmp/vmain/bin/python
           --python branch=/tmp/v/bin/python [--size 10000 | --size 100,10000,50000]
           [--history full|one] [--rounds 11] [--env NAME=KEY=VALUE]

One install can be measured two ways: give it twice under two names and `--env` for one of them,
e.g. `--python fast=/tmp/v/bin/python --python plain=/tmp/v/bin/python --env plain=DESK_PLAIN_GIT=1`
(desk's commit through git's own commands only, issue 28.2).

Each install is a virtual environment with desk installed non-editable (bench/README.md, "Two
versions in one run"); its `desk` script sits beside its python. The desk is built once, with this
interpreter's desk, as `bench_core.py` builds it (N memories, N commits), and copied per install,
so neither version's caches are read by the other. Each round runs every install once at every
size, the order of the installs alternating; a slow moment of the shared machine then hits every
install and every size. Medians are compared. With several sizes, each install's growth is its
in-process median at each size over the one at the smallest, all from the same rounds.
`--history one` builds each desk as one commit (a 50,000-memory desk with 50,000 commits takes
~11 minutes to build).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_core import GIT_ENV, NO_HOOKS, build_desk, git, memory_bytes
from environment import describe

CHILD = """
import sys, time, datetime as dt, resource
from pathlib import Path
from desk.layout import DeskFolder
from desk.memory.operations import remember
now = dt.datetime(2026, 11, 29, tzinfo=dt.timezone.utc)
desk = DeskFolder(Path(sys.argv[1]))

def cpu():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

for line in sys.stdin:
    i = int(line)
    t0, c0 = time.perf_counter(), cpu()
    remember(desk, f"pair-{i:04d}", type="fact", description=f"pair memory {i}",
             body=f"Fact recorded by the paired benchmark, round {i}.", now=now)
    print(f"{time.perf_counter() - t0:.6f} {cpu() - c0:.6f}", flush=True)
"""


def children_cpu() -> float:
    """CPU time of this process's finished children (git's, for the plain commit)."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def plain_commit(root: Path, name: str, i: int) -> tuple[float, float]:
    """The plain `git add` + `git commit -- path` of one new memory: (wall, CPU) seconds."""
    path = root / "memory" / f"{name}.md"
    path.write_bytes(memory_bytes(name, i))
    t0, c0 = time.perf_counter(), children_cpu()
    git(root, "add", "--", str(path))
    git(root, *NO_HOOKS, "commit", "-q", "-m", name, "--", str(path))
    return time.perf_counter() - t0, children_cpu() - c0


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--python", action="append", required=True, metavar="NAME=PATH",
                        help="an install to measure: a name and its interpreter (give two or more)")
    parser.add_argument("--size", default="10000",
                        help="memories (and commits) in the desk; several, comma-separated, for growth")
    parser.add_argument("--history", choices=("full", "one"), default="full",
                        help="full: one commit per memory (default); one: all memories in one commit")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--env", action="append", default=[], metavar="NAME=KEY=VALUE",
                        help="set KEY=VALUE in the environment of install NAME's desk (repeatable)")
    args = parser.parse_args()
    print(describe(sys.argv))
    pythons = dict(spec.split("=", 1) for spec in args.python)
    sizes = [int(n) for n in str(args.size).split(",")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k != "DESK_PLAIN_GIT"}
    env.update(GIT_ENV)
    envs = {name: dict(env) for name in pythons}
    for spec in args.env:
        name, setting = spec.split("=", 1)
        key, value = setting.split("=", 1)
        envs[name][key] = value
    work = Path(tempfile.mkdtemp(prefix="desk-pair-"))
    runs = [(name, size) for size in sizes for name in pythons]
    try:
        desks, twins = {}, {}
        for size in sizes:
            t0 = time.perf_counter()
            built = build_desk(work / f"desk-{size}", size, args.history).root
            print(f"built a {size}-memory desk in {time.perf_counter() - t0:.1f} s", flush=True)
            for name in pythons:
                desks[name, size] = work / f"desk-{name}-{size}"
                # The plain commits go to a twin of the desk (same size and history): a person's commit
                # of a memory file in the desk itself would leave MEMORY.md behind and make every
                # remember render and scan it whole, which is not remember's steady state.
                twins[name, size] = work / f"twin-{name}-{size}"
                for copy in (desks[name, size], twins[name, size]):
                    shutil.copytree(built, copy, symlinks=True)
                    git(copy, "update-index", "-q", "--refresh")  # a copy's stat data is new
            shutil.rmtree(built)
        results = {run: {"remember": [], "cpu": [], "plain": [], "plain-cpu": [], "cli": [], "help": [],
                          "cli-plain": []}
                   for run in runs}
        kids = {(name, size): subprocess.Popen([pythons[name], "-c", CHILD, str(desks[name, size])],
                                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                               env=envs[name], cwd=work)
                for name, size in runs}
        for i in range(-1, args.rounds):  # round -1 warms up: the mirror catches up with the copy
            for size in sizes:
                for name in (list(pythons) if i % 2 == 0 else list(reversed(list(pythons)))):
                    run = (name, size)
                    stdin, stdout = kids[run].stdin, kids[run].stdout
                    assert stdin is not None and stdout is not None
                    stdin.write(f"{i + 1}\n")
                    stdin.flush()
                    ours, ours_cpu = map(float, stdout.readline().split())
                    plain, plain_cpu = plain_commit(twins[run], f"plain-{i + 1:04d}", i + 1)
                    desk_cli = str(Path(pythons[name]).with_name("desk"))
                    cli = timed([desk_cli, "remember", f"cli-{i + 1:04d}", "--type", "fact", "--description",
                                 f"cli memory {i}", f"Fact {i} recorded through the command line."],
                                desks[run], envs[name])
                    help_ = timed([desk_cli, "--help"], desks[run], envs[name])
                    cli_plain = plain_commit(twins[run], f"cli-plain-{i + 1:04d}", i + 1)[0]
                    if i >= 0:
                        for key, value in (("remember", ours), ("cpu", ours_cpu), ("plain", plain),
                                           ("plain-cpu", plain_cpu), ("cli", cli),
                                           ("help", help_), ("cli-plain", cli_plain)):
                            results[run][key].append(value)
        for kid in kids.values():
            assert kid.stdin is not None
            kid.stdin.close()
            kid.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    medians = {run: {key: statistics.median(values) * 1000 for key, values in got.items()}
               for run, got in results.items()}
    for (name, size), m in medians.items():
        in_process = m["remember"] / m["plain"]
        whole = (m["cli"] - m["help"]) / m["cli-plain"]
        print(f"{name} at {size}: in process {m['remember']:.1f} ms (CPU {m['cpu']:.1f} ms, git's included) vs "
              f"{m['plain']:.1f} ms (CPU {m['plain-cpu']:.1f} ms), {in_process:.2f}x "
              f"({'OK' if in_process <= 1.5 else 'MISSED'}; in CPU time {m['cpu'] / m['plain-cpu']:.2f}x); whole process desk remember {m['cli']:.1f} ms, "
              f"--help {m['help']:.1f} ms, plain {m['cli-plain']:.1f} ms: (remember - help) / plain "
              f"{whole:.2f}x ({'OK' if whole <= 1.5 else 'MISSED'})")
    for name in pythons:
        small = medians[name, sizes[0]]
        for size in sizes[1:]:
            m = medians[name, size]
            growth = m["remember"] / small["remember"]
            print(f"{name} growth {sizes[0]} -> {size}: in process {growth:.2f}x (target <= 1.5) "
                  f"{'OK' if growth <= 1.5 else 'MISSED'}, in CPU time {m['cpu'] / small['cpu']:.2f}x; "
                  f"whole process (remember - help) "
                  f"{(m['cli'] - m['help']) / (small['cli'] - small['help']):.2f}x; plain git's own "
                  f"{m['plain'] / small['plain']:.2f}x")


if __name__ == "__main__":
    main()
