"""Archive benchmarks: append against a raw O_APPEND+fsync loop, and a 100,000-event import.

    python bench/bench_archive.py [--appends 2000] [--events 100000] [--dir DIR]

Everything is measured in the same run on the same filesystem (DIR, default a temp folder):
  1. raw loop: one open file, `os.write` + `fsync` per line (the floor for a durable append);
  2. `append_event` in process: lock, tail read, chain hash, one write, fsync, per event.
     Target (docs/design.md §6): >= 50 % of the raw loop's rate.
  3. `import_events` of N events over 30 UTC days (one lock, batched fsync), against a raw loop
     writing the same number of lines with one fsync per 5,000 (the same durability schedule).
  4. reading them back (`iter_events`, sorted) and `verify_archive`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from desk.archive.store import append_event, iter_events  # noqa: E402
from desk.archive.importing import FSYNC_EVERY, import_events  # noqa: E402
from desk.archive.verify import verify_archive  # noqa: E402
from desk.layout import DeskFolder  # noqa: E402
from desk.scaffold import init_desk  # noqa: E402

LINE = json.dumps({"kind": "inbound", "content": "a typical short message " * 4,
                   "session": "bench", "actor": "user"}).encode() + b"\n"


def raw_loop(path: Path, n: int, fsync_every: int = 1) -> float:
    """Seconds for n appends of a ~300-byte line to one O_APPEND file."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    start = time.perf_counter()
    for i in range(1, n + 1):
        if os.write(fd, LINE) != len(LINE):
            raise OSError("short write")
        if i % fsync_every == 0:
            os.fsync(fd)
    os.fsync(fd)
    elapsed = time.perf_counter() - start
    os.close(fd)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-archive-", dir=args.dir))
    desk_root = base / "desk"
    init_desk(desk_root)
    desk = DeskFolder(desk_root)
    n = args.appends

    # Interleaved rounds: fsync latency drifts with whatever else the machine is doing, so the
    # baseline and desk share every stretch of time instead of running one after the other.
    content = "a typical short message " * 4
    raw_loop(base / "warm.jsonl", 100)
    append_event(desk, "inbound", "warm-up")
    raw = ours = 0.0
    rounds = 10
    for _ in range(rounds):
        raw += raw_loop(base / "raw.jsonl", n // rounds)
        start = time.perf_counter()
        for _ in range(n // rounds):
            append_event(desk, "inbound", content, session="bench", actor="user")
        ours += time.perf_counter() - start
    n = rounds * (n // rounds)
    raw_rate, our_rate = n / raw, n / ours
    print(f"raw O_APPEND+fsync loop : {raw_rate:9.0f} appends/s ({raw / n * 1e6:.0f} µs each)")
    print(f"append_event in process : {our_rate:9.0f} appends/s ({ours / n * 1e6:.0f} µs each)")
    ratio = our_rate / raw_rate
    print(f"ratio                   : {ratio:.2f} (target >= 0.50) {'OK' if ratio >= 0.5 else 'MISSED'}")
    no_redact_start = time.perf_counter()
    for _ in range(n // 4):
        append_event(desk, "inbound", content, session="bench", actor="user", redact=False)
    no_redact = (n // 4) / (time.perf_counter() - no_redact_start)
    print(f"append_event, no redact : {no_redact:9.0f} appends/s ({no_redact / raw_rate:.2f} of raw)")

    total = args.events
    src = base / "history.jsonl"
    day0 = dt.datetime(2026, 10, 1, tzinfo=dt.timezone.utc)
    with src.open("w") as fh:
        for i in range(total):
            at = day0 + dt.timedelta(seconds=i * 30 * 86400 // total)
            fh.write(json.dumps({"kind": ("inbound", "outbound", "progress")[i % 3],
                                 "at": at.strftime("%Y-%m-%dT%H:%M:%SZ"), "session": f"s{i % 50}",
                                 "content": f"message {i}: " + "lorem ipsum " * 8}) + "\n")
    raw_batch = raw_loop(base / "raw-batch.jsonl", total, FSYNC_EVERY)
    start = time.perf_counter()
    result = import_events(desk, src)
    imported = time.perf_counter() - start
    print(f"\nimport {total:,} events over 30 days: {imported:.2f} s ({total / imported:,.0f} events/s)"
          f" into {len(result.files)} files")
    print(f"raw loop, same lines, fsync every {FSYNC_EVERY}: {raw_batch:.2f} s "
          f"({total / raw_batch:,.0f} lines/s); import / raw = {raw_batch / imported:.2f}")
    plain_root = base / "desk-plain"
    init_desk(plain_root)
    start = time.perf_counter()
    import_events(DeskFolder(plain_root), src, redact=False)
    plain = time.perf_counter() - start
    print(f"import, --no-redact: {plain:.2f} s ({total / plain:,.0f} events/s): the secret scan is "
          f"{(imported - plain) / imported:.0%} of the import")
    start = time.perf_counter()
    count = sum(1 for _ in iter_events(desk))
    read = time.perf_counter() - start
    print(f"iter_events, all {count:,} events sorted: {read:.2f} s ({count / read:,.0f} events/s)")
    start = time.perf_counter()
    report = verify_archive(desk)
    verified = time.perf_counter() - start
    print(f"verify_archive, {report.lines:,} lines: {verified:.2f} s, ok={report.ok}")


if __name__ == "__main__":
    main()
