"""Start-up (issue 17.3): the hot commands as whole processes, one or more installs in the same rounds.

  `desk --help` vs `python -c "import click"`, same interpreter                        target <= 1.3x
  cold CLI `desk recall` (5 memory hits) and `desk context --query` (a rare trigger)   target <= 2x --help
  `desk remember` of an unchanged memory, `desk sync` with nothing to do, `desk archive append`: reported

Usage: python bench/bench_startup.py [--python NAME=PATH ...] [--memories 10000] [--depth 10000]
                                     [--rounds 21] [--sets read,write,append]

Each `--python` is an interpreter with desk installed (default: this one, as `this`); give two
(e.g. `--python main=/tmp/vmain/bin/python --python branch=/tmp/vb/bin/python`) to compare two
versions in the same rounds (bench/README.md "Two versions in one run"). One desk is built with
bench_history.py's `build_desk` (N memories, D commits, one `git fast-import`) and a bare remote
on a path, then copied once per version (git's index refreshed in each copy, as after a clone):
versions may keep caches in different formats (the search cache's schema, context's kept view),
and on one shared desk each would rebuild the other's in every round. Recall, context, an
unchanged `remember` and a `sync` with nothing to do change nothing. `archive append` grows the
archive (which recall then indexes and sync checkpoints), so its set runs last. Each
command runs once per version before the rounds (caches built); then the rounds interleave every
version and command, the order rotating, and medians are compared. Child processes run
`python -m desk` in an empty folder with bytecode caching on (`PYTHONDONTWRITEBYTECODE` unset).
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

from bench_history import GIT_ENV, build_desk, git
from environment import describe

BODY = "Benchmark fact m000005: value 39595."  # memory 5's body as build_desk writes it
BASE = {"import click": ["-c", "import click"], "--help": ["-m", "desk", "--help"]}
SETS = {
    "read": {"recall": ["-m", "desk", "recall", "topic5", "--json"],
             "context --query": ["-m", "desk", "context", "--query", "rare5"]},
    "write": {"remember, unchanged": ["-m", "desk", "remember", "m000005", BODY],
              "sync, nothing to do": ["-m", "desk", "sync"]},
    "append": {"archive append": ["-m", "desk", "archive", "append", "-k", "note", "hello world"]},
}


def rounds_of(pythons: dict[str, str], commands: dict[str, list[str]], rounds: int,
              envs: dict[str, dict[str, str]], cwd: Path) -> dict[tuple[str, str], float]:
    """Median seconds of each (version, command); `envs[version]` names that version's desk."""
    pairs = [(version, name) for name in commands for version in pythons]
    for version, name in pairs:  # warm-up: caches built, bytecode written
        subprocess.run([pythons[version], *commands[name]], env=envs[version], cwd=cwd, capture_output=True)
    times: dict[tuple[str, str], list[float]] = {pair: [] for pair in pairs}
    for r in range(rounds):
        for version, name in pairs[r % len(pairs):] + pairs[:r % len(pairs)]:
            t0 = time.perf_counter()
            done = subprocess.run([pythons[version], *commands[name]], env=envs[version], cwd=cwd,
                                  capture_output=True)
            times[(version, name)].append(time.perf_counter() - t0)
            if done.returncode:
                sys.exit(f"{version}: `desk {' '.join(commands[name][2:])}` failed:\n{done.stderr.decode()}")
    return {pair: statistics.median(samples) for pair, samples in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--python", action="append", metavar="NAME=PATH",
                        help="an interpreter with desk installed (repeatable; default: this one)")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=10_000, help="commits (1..memories)")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--sets", default="read,write,append", help=f"comma-separated: {', '.join(SETS)}")
    args = parser.parse_args()
    pythons = dict(p.split("=", 1) for p in args.python) if args.python else {"this": sys.executable}
    sets = [s for s in args.sets.split(",") if s]
    if not set(sets) <= set(SETS) or not 1 <= args.depth <= args.memories:
        parser.error(f"--sets takes {', '.join(SETS)}; --depth must be between 1 and --memories")
    print(describe(sys.argv))
    for name, python in pythons.items():
        print(f"{name:<11} {python}")
    work = Path(tempfile.mkdtemp(prefix="desk-bench-startup-"))
    try:
        empty = work / "cwd"  # child processes run here: nothing in it for `-m` to import instead
        empty.mkdir()
        root = work / "desk"
        t0 = time.perf_counter()
        build_desk(root, args.memories, args.depth)
        branch = git(root, "symbolic-ref", "--short", "HEAD").strip()
        subprocess.run(["git", "init", "-q", "--bare", str(work / "remote.git")], check=True, env=GIT_ENV)
        git(root, "remote", "add", "origin", str(work / "remote.git"))
        git(root, "push", "-q", "origin", branch)
        print(f"built a {args.memories}-memory desk with {args.depth + 1} commits and its remote in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
        base_env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, **GIT_ENV}
        envs = {}
        for number, version in enumerate(pythons):
            copy = work / f"desk-{number}"
            shutil.copytree(root, copy, symlinks=True)
            git(copy, "update-index", "-q", "--refresh")  # the copy's stat data, as a clone has it
            envs[version] = {**base_env, "DESK_HOME": str(copy)}
        results: dict[tuple[str, str], float] = {}
        still = {name: command for s in sets if s != "append" for name, command in SETS[s].items()}
        results.update(rounds_of(pythons, {**BASE, **still}, args.rounds, envs, empty))
        if "append" in sets:
            results.update({pair: t for pair, t in rounds_of(pythons, {**BASE, **SETS["append"]}, args.rounds,
                                                              envs, empty).items() if pair[1] not in BASE})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nload average at the end {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'command':<22}" + "".join(f"{name:>22}" for name in pythons))
    names = [*BASE, *(n for s in sets for n in SETS[s])]
    for name in names:
        cells = []
        for version in pythons:
            t, helped = results[(version, name)], results[(version, "--help")]
            cells.append(f"{t * 1000:7.1f} ms {t / helped:5.2f}x" if name != "--help" else f"{t * 1000:7.1f} ms      ")
        print(f"{name:<22}" + "".join(f"{c:>22}" for c in cells))
    print("(each ratio is to the same version's `desk --help`)")
    for version in pythons:
        r = {name: results[(version, name)] for name in names}
        verdicts = [f"--help {r['--help'] / r['import click']:.2f}x import click "
                    f"({'OK' if r['--help'] <= 1.3 * r['import click'] else 'MISSED'}, <= 1.3)"]
        for name in ("recall", "context --query"):
            if name in r:
                ok = r[name] <= 2 * r["--help"]
                verdicts.append(f"{name} {r[name] / r['--help']:.2f}x ({'OK' if ok else 'MISSED'}, <= 2)")
        print(f"{version}: " + "; ".join(verdicts))


if __name__ == "__main__":
    main()
