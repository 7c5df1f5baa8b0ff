"""Guard benchmarks (issues 3 and 17), printed as ratios against baselines measured in the same run.

  `git commit` of one hand-edited memory, desk's hooks installed, vs the same commit with the
  hooks switched off                                                                target <= 3x
  `validate --staged` (in process, one changed memory) at the large vs the small desk  target: flat
  `desk validate --all` and `desk doctor` (whole processes) on the unchanged large desk vs
  `git status` of it                                                                target <= 5x
  the same after one memory changed: proportional to the change (vs unchanged; and vs checking
  every file, the cache switched off)

Usage: python bench/bench_hook.py [--size 10000] [--small 100] [--history full|one] [--rounds 15]
                                  [--against NAME=PYTHON]

`--against main=/tmp/vmain/bin/python` also times the hooked and the plain commit on a copy of the
large desk whose hooks that other install wrote, interleaved round by round with this install's:
two installs compared in one loop, whatever the machine's load does meanwhile.

Desks are built as bench_core.py builds them: with `--history full` (the default) N memories in N
commits (one `git fast-import`), else in one commit. Each timed side is paired with its baseline
in the same loop and medians are compared, so a slow moment on the shared machine hits both.

Child processes (the hooks' Python, `python -m desk ...`) start in an empty folder and run with
bytecode caching on (`PYTHONDONTWRITEBYTECODE` removed, `PYTHONPYCACHEPREFIX` set to a folder of
this run, warmed first), as after a `pip install`: compiling every module on each start would
measure the compiler, not desk.
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
from collections.abc import Callable
from pathlib import Path

from bench_core import GIT_ENV, NO_HOOKS, build_desk
from environment import describe

from desk.guard.doctor import diagnose
from desk.gate.validate import validate_staged
from desk.gate.whole import validate_all
from desk.layout import DeskFolder
from desk.formats.memory_file import MemoryFile, MemoryMeta

NOW = dt.datetime(2026, 11, 29, tzinfo=dt.timezone.utc)


def child_env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in GIT_ENV.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    return env


def git(root: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def edited(name: str, i: int, tag: str) -> bytes:
    """Memory `name` with a new body; its index line (the description) stays the same."""
    meta = MemoryMeta(name=name, description=f"benchmark fact {name}", type="fact",
                      triggers=[f"topic{i % 97}"], created=NOW, updated=NOW)
    return MemoryFile(meta, f"Edited by hand ({tag}, {i}).\n").render()


def hand_edit(desk: DeskFolder, env: dict[str, str], i: int, tag: str) -> str:
    """Change one memory's body and stage it, as a person would."""
    rel = f"memory/m{i:06d}.md"
    (desk.root / rel).write_bytes(edited(f"m{i:06d}", i, tag))
    git(desk.root, env, "add", "--", rel)
    return rel


def paired(rounds: int, ours: Callable[[int], None], base: Callable[[int], None]) -> tuple[float, float]:
    """Medians of `ours` and `base`, run in pairs (the order alternating)."""
    a, b = [], []
    for r in range(rounds):
        for side, into in ((ours, a), (base, b)) if r % 2 == 0 else ((base, b), (ours, a)):
            t0 = time.perf_counter()
            side(r)
            into.append(time.perf_counter() - t0)
    return statistics.median(a), statistics.median(b)


def time_commits(desk: DeskFolder, env: dict[str, str], rounds: int) -> tuple[float, float]:
    def hooked(r: int) -> None:
        hand_edit(desk, env, 2 * r, "hooked")
        t0 = time.perf_counter()
        git(desk.root, env, "commit", "-q", "-m", f"hooked {r}")
        times.append(time.perf_counter() - t0)

    def plain(r: int) -> None:
        hand_edit(desk, env, 2 * r + 1, "plain")
        t0 = time.perf_counter()
        git(desk.root, env, *NO_HOOKS, "commit", "-q", "-m", f"plain {r}")
        plain_times.append(time.perf_counter() - t0)

    times: list[float] = []
    plain_times: list[float] = []
    paired(rounds, hooked, plain)  # staging is outside the timed span
    return statistics.median(times), statistics.median(plain_times)


def time_commits_against(ours: DeskFolder, theirs: DeskFolder, env: dict[str, str], rounds: int
                         ) -> dict[str, tuple[float, float]]:
    """Hooked and plain commits on `ours` and `theirs` (the same desk, another install's hooks),
    the four kinds in turn, the order rotating each round: {desk: (hooked, plain) medians}."""
    kinds = [(d, hooks) for d in (ours, theirs) for hooks in (True, False)]
    times: dict[tuple[Path, bool], list[float]] = {(d.root, h): [] for d, h in kinds}
    for r in range(rounds):
        for i, (d, hooks) in enumerate(kinds[r % 4:] + kinds[:r % 4]):
            hand_edit(d, env, 4 * r + i, f"against {r}")  # a new blob each time (needs --size >= 4 rounds)
            t0 = time.perf_counter()
            git(d.root, env, *([] if hooks else NO_HOOKS), "commit", "-q", "-m", f"against {r} {hooks}")
            times[(d.root, hooks)].append(time.perf_counter() - t0)
    return {str(d.root): (statistics.median(times[(d.root, True)]), statistics.median(times[(d.root, False)]))
            for d in (ours, theirs)}


def time_validate_staged(desk: DeskFolder, env: dict[str, str], rounds: int) -> float:
    times = []
    for r in range(rounds):
        rel = hand_edit(desk, env, r % 50, f"validate {r}")
        t0 = time.perf_counter()
        report, _ = validate_staged(desk)
        times.append(time.perf_counter() - t0)
        assert report.ok, [str(f) for f in report.findings]
        git(desk.root, env, "reset", "-q", "--", rel)
    return statistics.median(times)


def time_whole_desk(desk: DeskFolder, env: dict[str, str], cwd: Path, rounds: int
                    ) -> dict[str, tuple[float, float]]:
    """`desk validate --all` and `desk doctor`, whole processes and in process, vs `git status`."""
    def status(_: int) -> None:
        subprocess.run(["git", "status"], cwd=desk.root, env=env, check=True, capture_output=True)

    def cli(*args: str) -> Callable[[int], None]:
        def run(_: int) -> None:
            proc = subprocess.run([sys.executable, "-m", "desk", "--desk", str(desk.root), *args],
                                  cwd=cwd, env=env, capture_output=True, text=True)
            assert proc.returncode == 0, proc.stdout + proc.stderr
        return run

    def in_process(check: Callable[[], object]) -> Callable[[int], None]:
        return lambda _: check()

    cli("validate", "--all")(0)  # warm: the verdict cache and the bytecode
    cli("doctor")(0)
    return {
        "desk validate --all": paired(rounds, cli("validate", "--all"), status),
        "desk doctor": paired(rounds, cli("doctor"), status),
        "validate_all() in process": paired(rounds, in_process(lambda: validate_all(desk, NOW)), status),
        "diagnose() in process": paired(rounds, in_process(lambda: diagnose(desk)), status),
    }


def time_one_change(desk: DeskFolder, env: dict[str, str], cwd: Path, rounds: int
                    ) -> tuple[float, float, float]:
    """`desk validate --all` after one memory changed in the work tree, vs unchanged; and the
    whole check with the cache switched off (in process), once."""
    def changed(r: int) -> None:
        (desk.root / "memory/m000003.md").write_bytes(edited("m000003", 3, f"change {r}"))
        run()

    def unchanged(_: int) -> None:
        run()

    def run() -> None:
        subprocess.run([sys.executable, "-m", "desk", "--desk", str(desk.root), "validate", "--all"],
                       cwd=cwd, env=env, check=True, capture_output=True)

    ours, base = paired(rounds, changed, unchanged)
    t0 = time.perf_counter()
    report = validate_all(desk, NOW, cached=False)
    uncached = time.perf_counter() - t0
    assert report.ok, [str(f) for f in report.findings]
    return ours, base, uncached


def verdict(ratio: float, target: float) -> str:
    return "OK" if ratio <= target else "MISSED"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--history", choices=("full", "one"), default="full",
                        help="full: one commit per memory (default); one: all memories in one commit")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--against", metavar="NAME=PYTHON",
                        help="also time the commits with the hooks another install writes, interleaved")
    args = parser.parse_args()
    print(describe(sys.argv))
    work = Path(tempfile.mkdtemp(prefix="desk-bench-hook-"))
    env = child_env(work)
    cwd = work / "cwd"  # children start here: nothing in it for `-m` to import instead
    cwd.mkdir()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # this process warms the bytecode it shares
    os.environ["PYTHONPYCACHEPREFIX"] = env["PYTHONPYCACHEPREFIX"]
    sys.pycache_prefix = env["PYTHONPYCACHEPREFIX"]
    sys.dont_write_bytecode = False
    try:
        t0 = time.perf_counter()
        big = build_desk(work / "big", args.size, args.history)
        small = build_desk(work / "small", args.small, args.history)
        depth = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=big.root, env=env,
                               capture_output=True, text=True).stdout.strip()
        print(f"built desks of {args.size} memories ({depth} commits) and {args.small} in "
              f"{time.perf_counter() - t0:.1f} s; bytecode cached in {env['PYTHONPYCACHEPREFIX']}",
              flush=True)
        git(big.root, env, "commit", "-q", "--allow-empty", "-m", "warm the hooks' bytecode")
        hooked, plain = time_commits(big, env, args.rounds)
        ratio = hooked / plain
        print(f"commit of one memory, {args.size} memories: hooks {hooked * 1000:.1f} ms, no hooks "
              f"{plain * 1000:.1f} ms, {ratio:.2f}x (target <= 3) {verdict(ratio, 3)}", flush=True)
        if args.against:
            name, _, python = args.against.partition("=")
            theirs = DeskFolder(work / "against")
            shutil.copytree(big.root, theirs.root, symlinks=True)
            subprocess.run([python, "-m", "desk", "--desk", str(theirs.root), "hooks", "install"], cwd=cwd,
                           env=env, check=True, capture_output=True)
            git(theirs.root, env, "commit", "-q", "--allow-empty", "-m", "warm the other hooks' bytecode")
            paired_runs = time_commits_against(big, theirs, env, args.rounds)
            for label, root in (("this install", big.root), (name, theirs.root)):
                h, pl = paired_runs[str(root)]
                print(f"commit of one memory, interleaved with {name}'s hooks: {label}: hooks {h * 1000:.1f} ms, "
                      f"no hooks {pl * 1000:.1f} ms, {h / pl:.2f}x (target <= 3) {verdict(h / pl, 3)}", flush=True)
        v_small = time_validate_staged(small, env, args.rounds)
        v_big = time_validate_staged(big, env, args.rounds)
        print(f"validate --staged in process: {args.small} memories {v_small * 1000:.1f} ms, "
              f"{args.size} memories {v_big * 1000:.1f} ms, growth {v_big / v_small:.2f}x (target: flat)",
              flush=True)
        for what, (ours, status) in time_whole_desk(big, env, cwd, args.rounds).items():
            ratio = ours / status
            print(f"{what}, unchanged {args.size}-memory desk: {ours * 1000:.1f} ms vs git status "
                  f"{status * 1000:.1f} ms, {ratio:.2f}x (target <= 5) {verdict(ratio, 5)}", flush=True)
        one, unchanged, uncached = time_one_change(big, env, cwd, args.rounds)
        print(f"desk validate --all after one memory changed: {one * 1000:.1f} ms vs unchanged "
              f"{unchanged * 1000:.1f} ms ({one / unchanged:.2f}x); every file checked, no cache "
              f"(in process): {uncached * 1000:.0f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
