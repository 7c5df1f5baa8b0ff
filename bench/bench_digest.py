"""Digest benchmark (issue 4): `desk digest` of a day with 10,000 archived events.

Printed as ratios against baselines measured in the same run, on copies of the same desk:

  digest, first run (journal + promotions + one commit)  vs  reading the day's events with
      iter_events + a plain `git add` + `git commit` of the same files the digest wrote
  digest, rerun with nothing changed (no commit)          vs  reading the day's events alone

The desk holds the day's events (mostly conversation, plus tools, failures and facts) and
60-day-old facts, so the distill policy has real work (promotions and ties): a typical night (20
keyed domains) and a heavy one (200). The archive is checkpointed first, as a nightly digest after
the day's checkpoints finds it. Usage: python bench/bench_digest.py [--events N] [--rounds N]
[--domains 20,200]. No target of its own in docs/design.md §6: the figures watch that a nightly
digest stays a small multiple of reading the day and committing what it wrote.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from environment import describe

from desk.archive.store import iter_events
from desk.archive.importing import import_events
from desk.archive.checkpoint import checkpoint
from desk.layout import DeskFolder
from desk.digest.run import digest
from desk.setup.init import init_desk

DAY = dt.date(2026, 11, 29)
AS_OF = "2026-11-29T23:59:00Z"
GIT_ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")}, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost"}


def day_events(n: int) -> list[dict[str, object]]:
    events: list[dict[str, object]] = []
    start = dt.datetime(DAY.year, DAY.month, DAY.day, tzinfo=dt.timezone.utc)
    for i in range(n):
        at = (start + dt.timedelta(seconds=i * 86000 / n)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        session = f"s{i // 200:03d}"
        r = i % 100
        if r < 5:
            events.append({"kind": "fact", "at": at, "session": session,
                           "content": f"Decision {i % 37}: use option {i % 3}.",
                           "payload": {"kind": ("decision", "pitfall", "outcome")[i % 3],
                                       "importance": 1 + i % 5, "key": f"topic.k{i % 37}"}})
        elif r < 7:
            events.append({"kind": "failure", "at": at, "session": session,
                           "content": f"step {i} failed: timeout after 30 s"})
        elif r < 20:
            events.append({"kind": "tool", "at": at, "session": session,
                           "payload": {"tool": "shell", "argv": ["ls", f"dir{i}"], "exit": 0}})
        else:
            events.append({"kind": "inbound" if i % 2 else "outbound", "at": at, "session": session,
                           "content": f"message {i}: " + "lorem ipsum dolor sit amet " * 4})
    return events


def old_facts(domains: int) -> list[dict[str, object]]:
    """60-day-old facts: `domains` keyed domains (every tenth one a tie) and half as many unkeyed."""
    base = dt.datetime(2026, 9, 1, tzinfo=dt.timezone.utc)
    facts: list[dict[str, object]] = []
    for d in range(domains):
        tied = d % 10 == 0
        for j in range(2 if tied else 3):
            minutes = 0 if tied else j  # tied values: same importance, count and latest time
            facts.append({"kind": "fact", "at": (base + dt.timedelta(hours=d, minutes=minutes)).isoformat(),
                          "content": f"Setting {d} is value {j if tied else 0}.",
                          "payload": {"kind": "decision", "importance": 5 if tied else 2,
                                      "key": f"setting.s{d}"}})
    for u in range(domains // 2):
        for j in range(2):
            facts.append({"kind": "fact", "at": (base + dt.timedelta(days=1, minutes=u * 3 + j)).isoformat(),
                          "content": f"Pitfall number {u}: never do thing {u}.",
                          "payload": {"kind": "pitfall", "importance": 2, "key": None}})
    return facts


def build(root: Path, n: int, domains: int) -> DeskFolder:
    init_desk(root)
    desk = DeskFolder(root)
    source = root.parent / "events.jsonl"
    lines = [json.dumps(e) for e in old_facts(domains) + day_events(n)]
    source.write_text("\n".join(lines) + "\n")
    import_events(desk, source)
    checkpoint(desk)
    return desk


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def read_day(desk: DeskFolder) -> int:
    start = dt.datetime(DAY.year, DAY.month, DAY.day, tzinfo=dt.timezone.utc)
    return sum(1 for _ in iter_events(desk, since=start, until=start + dt.timedelta(days=1)))


def plain_commit(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    subprocess.run(["git", "add", "--", *files], cwd=root, env=GIT_ENV, check=True, capture_output=True)
    subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "baseline", "--",
                    *files], cwd=root, env=GIT_ENV, check=True, capture_output=True)


def scenario(tmp: Path, events: int, domains: int, rounds: int) -> None:
    t0 = time.perf_counter()
    template = build(tmp / "template" / "desk", events, domains)
    setup = time.perf_counter() - t0
    firsts, bases, reruns, reads = [], [], [], []
    result = None
    for r in range(rounds):
        a = tmp / f"a{r}" / "desk"
        b = tmp / f"b{r}" / "desk"
        shutil.copytree(template.root, a, symlinks=True)
        shutil.copytree(template.root, b, symlinks=True)
        da, db = DeskFolder(a), DeskFolder(b)
        holder: list[object] = []
        firsts.append(timed(lambda: holder.append(digest(da, as_of=AS_OF))))
        result = holder[0]
        written = {p: (a / p).read_bytes() for p in result.paths}  # type: ignore[attr-defined]
        bases.append(timed(lambda: (read_day(db), plain_commit(b, written))))
        reruns.append(timed(lambda: digest(da, as_of=AS_OF)))
        reads.append(timed(lambda: read_day(da)))
    assert result is not None
    first, base = statistics.median(firsts), statistics.median(bases)
    rerun, read = statistics.median(reruns), statistics.median(reads)
    print(f"\n{events} events on {DAY}, {domains} keyed + {domains // 2} unkeyed old domains "
          f"(setup {setup:.1f} s, median of {rounds})")
    print(f"  result: {len(result.promoted)} promoted, {len(result.conflicts)} conflict cases, "  # type: ignore[attr-defined]
          f"{len(result.paths)} files in one commit")  # type: ignore[attr-defined]
    print(f"  digest, first run         {first * 1000:7.0f} ms   read day + plain git commit of the "
          f"same files {base * 1000:6.0f} ms   ratio {first / base:5.2f}x")
    print(f"  digest, rerun (no change) {rerun * 1000:7.0f} ms   read day alone"
          f"{'':>28}{read * 1000:6.0f} ms   ratio {rerun / read:5.2f}x")
    shutil.rmtree(tmp)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--domains", default="20,200",
                        help="keyed old-fact domains per scenario: a typical night, a heavy one")
    args = parser.parse_args()
    print(describe(sys.argv))
    tmp = Path(tempfile.mkdtemp(prefix="bench-digest-"))
    try:
        for i, domains in enumerate(int(d) for d in args.domains.split(",")):
            scenario(tmp / str(i), args.events, domains, args.rounds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
