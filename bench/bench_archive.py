"""Archive benchmarks: append against a raw O_APPEND+fsync loop; import, then the first recall.

    python bench/bench_archive.py [--appends 4000] [--rounds 20] [--events 100000] [--dir DIR]

Everything is measured in the same run on the same filesystem (DIR, default a temp folder), with
the desk this interpreter imports (the tree's from a dev venv, the installed one otherwise):

  1. append: rounds of a raw loop (one open file, `os.write` + `fsync` per ~300-byte line, the
     floor for a durable append) and of `append_event` in process (lock, tail read, chain hash,
     redaction, one write, fsync), alternating. The ratio is the median over rounds of raw time /
     desk time, so a slow stretch of fsyncs hits both sides. Target (docs/design.md §6): >= 0.50.
  2. import, then the first recall: `desk archive import` of N generated conversation events over
     30 UTC days, then `desk recall` on that desk, whose cache is empty, so it builds it from all
     N records. Both are whole CLI processes (`python -m desk`) on a pseudo-terminal, so the
     progress display shows; time and peak RSS (the child's ru_maxrss) of each. Targets (issue
     17): the first recall <= 3x the import's time, <= 150 MiB peak, with a progress display.
  3. reading them back in process: `iter_events` (sorted) and `verify_archive`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from environment import describe

from desk.archive.store import append_event, iter_events
from desk.archive.verify import verify_archive
from desk.layout import DeskFolder
from desk.setup.init import init_desk

CONTENT = "a typical short message " * 4
LINE = json.dumps({"kind": "inbound", "content": CONTENT, "session": "bench", "actor": "user"}).encode() + b"\n"
MiB = 1024 * 1024


def raw_loop(path: Path, n: int) -> float:
    """Seconds for n appends of a ~130-byte line to one O_APPEND file, fsync after each."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    start = time.perf_counter()
    for _ in range(n):
        if os.write(fd, LINE) != len(LINE):
            raise OSError("short write")
        os.fsync(fd)
    elapsed = time.perf_counter() - start
    os.close(fd)
    return elapsed


def desk_loop(desk: DeskFolder, n: int, redact: bool = True) -> float:
    start = time.perf_counter()
    for _ in range(n):
        append_event(desk, "inbound", CONTENT, session="bench", actor="user", redact=redact)
    return time.perf_counter() - start


def bench_append(base: Path, desk: DeskFolder, total: int, rounds: int) -> None:
    n = max(1, total // rounds)
    raw_loop(base / "warm.jsonl", 50)
    desk_loop(desk, 50)
    raws, ours, plain = [], [], []
    for r in range(rounds):
        # Alternate which side goes first: fsync latency drifts with whatever else the disk does.
        sides = [("raw", lambda: raw_loop(base / "raw.jsonl", n)), ("desk", lambda: desk_loop(desk, n))]
        for name, fn in sides if r % 2 == 0 else reversed(sides):
            (raws if name == "raw" else ours).append(fn() / n)
        plain.append(desk_loop(desk, max(1, n // 4), redact=False) / max(1, n // 4))
    ratios = [a / b for a, b in zip(raws, ours)]
    ratio = statistics.median(ratios)
    raw_us, our_us = statistics.median(raws) * 1e6, statistics.median(ours) * 1e6
    over = statistics.median(b - a for a, b in zip(raws, ours)) * 1e6
    print(f"append, {rounds} rounds of {n} (medians per append):")
    print(f"  raw O_APPEND+fsync loop  {raw_us:7.0f} µs  ({1e6 / raw_us:,.0f}/s)")
    print(f"  append_event in process  {our_us:7.0f} µs  ({1e6 / our_us:,.0f}/s); desk's own cost over "
          f"the raw loop {over:.0f} µs")
    print(f"  append_event, no redact  {statistics.median(plain) * 1e6:7.0f} µs")
    print(f"  ratio raw/desk           {ratio:7.2f}  (rounds: {min(ratios):.2f}-{max(ratios):.2f}; "
          f"target >= 0.50) {'OK' if ratio >= 0.5 else 'MISSED'}")


# -- import, then the first recall ---------------------------------------------------------

SYLLABLES = ("ka ri to mo sen lu van dor mi pel qua zet bo na is tra ve lo gan fi ru so del "
             "mar tin ok el um ba").split()
COMMON = ("the a to and of we you it is for on that this with be can will please what did our "
          "report server database launch budget meeting team schedule deploy review status "
          "weekly staging production port queue customer invoice draft release fix bug").split()
HANZI = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处理府研质"


def history_file(path: Path, n: int, seed: int = 17) -> None:
    """n events over 30 UTC days: ~80 % conversation (a fifth of it Chinese), the rest tool output.

    Words follow a Zipf-like law over a common list and ~20,000 made-up words, so the postings
    have a realistic long tail of rare terms (what makes the search cache's term dictionary grow).
    """
    rng = random.Random(seed)
    made_up = ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(20_000)]
    vocab = COMMON + made_up
    day0 = dt.datetime(2026, 10, 1, tzinfo=dt.timezone.utc)
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            at = day0 + dt.timedelta(seconds=i * 30 * 86400 // n)
            roll = rng.random()
            if roll < 0.16:
                content = "".join(rng.choice(HANZI) for _ in range(rng.randint(8, 60)))
            else:
                words = [vocab[min(len(vocab) - 1, int(rng.paretovariate(0.9)) - 1)] for _ in range(rng.randint(6, 40))]
                content = f"message {i}: " + " ".join(words)
            kind = "inbound" if roll < 0.45 else "outbound" if roll < 0.8 else rng.choice(["tool", "progress"])
            handle.write(json.dumps({"kind": kind, "at": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                                     "session": f"s{i // 40}", "actor": "user" if kind == "inbound" else "assistant",
                                     "content": content}, ensure_ascii=False) + "\n")


class Run:
    """One CLI process: wall seconds, CPU seconds (user + system), peak RSS in MiB, its output."""

    def __init__(self, wall: float, cpu: float, peak: float, output: str) -> None:
        self.wall, self.cpu, self.peak, self.output = wall, cpu, peak, output


def run_cli(args: list[str], cwd: Path) -> Run:
    """Run `python -m desk ARGS` on a pseudo-terminal, so it shows what it shows a person.

    In `cwd`, an empty folder: `-m` puts the current folder first on sys.path, so from the
    repository's root it would run the tree's code instead of the installed desk, and from a folder
    holding a desk named `desk` it would import that folder (a namespace package) under an
    editable install.
    """
    import pty

    argv = [sys.executable, "-m", "desk", *args]
    start = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # the child: stdin, stdout and stderr are the terminal
        os.chdir(cwd)
        os.execv(argv[0], argv)
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    _, status, usage = os.wait4(pid, 0)
    elapsed = time.perf_counter() - start
    os.close(fd)
    text = b"".join(chunks).decode("utf-8", "replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{text}")
    # ru_maxrss is in KiB on Linux
    return Run(elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, text)


def bench_import_then_recall(base: Path, events: int) -> None:
    src = base / "history.jsonl"
    history_file(src, events)
    empty = base / "cwd"
    empty.mkdir()
    root = base / "desk-import"
    init_desk(root)
    imported = run_cli(["--desk", str(root), "archive", "import", str(src)], empty)
    first = run_cli(["--desk", str(root), "recall", "database launch budget"], empty)
    again = run_cli(["--desk", str(root), "recall", "server schedule"], empty)
    plain_root = base / "desk-plain"
    init_desk(plain_root)
    plain = run_cli(["--desk", str(plain_root), "archive", "import", "--no-redact", str(src)], empty)
    size = sum(p.stat().st_size for p in (root / ".system" / "archive").glob("*.jsonl"))
    cache = (root / ".git" / "desk-cache" / "search.sqlite").stat().st_size
    ratio = first.wall / imported.wall
    print(f"\nimport {events:,} events over 30 days ({src.stat().st_size / MiB:.1f} MiB of JSONL,"
          f" {size / MiB:.1f} MiB of archive), then recall; whole CLI processes (wall, CPU, peak RSS):")
    print(f"  archive import              {imported.wall:6.2f} s  cpu {imported.cpu:6.2f} s  peak {imported.peak:5.0f} MiB"
          f"  ({events / imported.wall:,.0f} events/s)")
    print(f"  archive import --no-redact  {plain.wall:6.2f} s  cpu {plain.cpu:6.2f} s"
          f"  (the secret scan: {max(0.0, imported.cpu - plain.cpu) / imported.cpu:.0%} of the import's CPU)")
    print(f"  first recall (builds cache) {first.wall:6.2f} s  cpu {first.cpu:6.2f} s  peak {first.peak:5.0f} MiB"
          f"  cache {cache / MiB:.0f} MiB; progress display: "
          f"{'yes' if 'indexing the archive' in first.output else 'NO'}")
    print(f"  next recall (cache built)   {again.wall:6.2f} s  cpu {again.cpu:6.2f} s  peak {again.peak:5.0f} MiB")
    print(f"  first recall / import       {ratio:6.2f}  (CPU {first.cpu / imported.cpu:.2f}; target <= 3.0) "
          f"{'OK' if ratio <= 3 else 'MISSED'}; peak {first.peak:.0f} MiB (target <= 150) "
          f"{'OK' if first.peak <= 150 else 'MISSED'}")
    desk = DeskFolder(root)
    start = time.perf_counter()
    count = sum(1 for _ in iter_events(desk))
    read = time.perf_counter() - start
    print(f"  iter_events, all {count:,} events sorted, in process: {read:.2f} s ({count / read:,.0f} events/s)")
    start = time.perf_counter()
    report = verify_archive(desk)
    print(f"  verify_archive, {report.lines:,} lines, in process: {time.perf_counter() - start:.2f} s, ok={report.ok}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--appends", type=int, default=4000, help="appends per side, over all rounds")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--events", type=int, default=100_000, help="events to import (0: skip)")
    parser.add_argument("--dir", type=Path, default=None, help="where to work (default: a temp folder)")
    args = parser.parse_args()
    print(describe(sys.argv))
    base = Path(tempfile.mkdtemp(prefix="bench-archive-", dir=args.dir))
    print(f"folder      {base}\n")
    desk_root = base / "desk"
    init_desk(desk_root)
    bench_append(base, DeskFolder(desk_root), args.appends, args.rounds)
    if args.events:
        bench_import_then_recall(base, args.events)
    import shutil

    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
