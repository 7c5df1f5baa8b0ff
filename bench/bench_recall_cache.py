"""Recall's search cache at scale: warm recall with nothing changed and after each append, and the
progress lines of the first recall after an import (issue 16).

    python bench/bench_recall_cache.py                    # both parts, 100,000 records / 30,000 events
    python bench/bench_recall_cache.py --warm --records 100000
    python bench/bench_recall_cache.py --progress --events 30000
    python bench/bench_recall_cache.py --hybrid --records 20000    # with the tests' trigram embedder

Warm: N conversation records (bench/retrieval/corpus.py, seeded) written straight into archive
files; one `SearchCache` refreshed once, then in-process recall over 200 questions (median, p95)
with nothing changed, then the same with one `append_event` before each recall, into a new day's
file (the usual case: today's file is small) and into the largest day file (the worst case: its
consumed prefix is hashed again after every change of its stat). Target: warm in process <= 50 ms.

Progress: `desk archive import` of N events, then the first `desk recall` with stderr a pipe, not a
terminal (a log file, a CI job); prints each stderr line with the second it arrived at.

Hybrid: the same records, recall with the tests' hashed-trigram embedder (64 dimensions, pure
Python): the first recall embeds every record, then warm hybrid recall (median, p95) against
lexical-only recall in the same run. No target: hybrid recall is optional; this says what the
stdlib cosine scan costs per record.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "retrieval"))

import corpus  # noqa: E402

from desk.archive.store import append_event  # noqa: E402
from desk.layout import DeskFolder  # noqa: E402
from desk.recall.search import recall  # noqa: E402
from desk.recall.search_cache import SearchCache  # noqa: E402
from desk.setup.init import init_desk  # noqa: E402

WARM_TARGET_MS = 50.0


def _turns(records: int, seed: int) -> tuple[list[corpus.Turn], list[str]]:
    turns: list[corpus.Turn] = []
    texts: list[str] = []
    sessions = max(1, records // 20)
    for lang in ("en", "zh"):
        t, q = corpus.build(seed, sessions, lang)
        texts += [x.text for x in q]
        turns += t
    return turns[:records], texts[:200]


def _cpu() -> float:
    """CPU seconds of this process and of the children it waited for (git): on a machine shared
    with other work, CPU time moves far less than wall time."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _timed(desk: DeskFolder, cache: SearchCache, texts: list[str],
           before: object = None) -> tuple[list[float], list[float]]:
    wall, cpu = [], []
    for i, text in enumerate(texts):
        if callable(before):
            before(i)
        t0, c0 = time.perf_counter(), _cpu()
        recall(desk, text, cache=cache, limit=10)
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((_cpu() - c0) * 1000)
    return wall, cpu


def _report(label: str, measured: tuple[list[float], list[float]]) -> bool:
    wall, cpu = measured
    med, p95 = statistics.median(wall), sorted(wall)[int(len(wall) * 0.95) - 1]
    ok = med <= WARM_TARGET_MS
    print(f"{label:<44} median {med:6.1f} ms, p95 {p95:6.1f} ms, CPU median {statistics.median(cpu):6.1f} ms"
          f"  {'OK' if ok else 'MISSED'}")
    return ok


def warm(records: int, seed: int) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "desk"
        init_desk(root)
        desk = DeskFolder(root)
        turns, texts = _turns(records, seed)
        corpus.write_archive(root, desk.config.desk_id, turns)
        files = sorted(desk.path(".system/archive").glob("*.jsonl"), key=lambda p: p.stat().st_size)
        sizes = [p.stat().st_size for p in files]
        print(f"warm: {len(turns)} records in {len(files)} day files, {sum(sizes) / 1e6:.1f} MB "
              f"(largest {sizes[-1] / 1e6:.2f} MB, median {statistics.median(sizes) / 1e6:.2f} MB)")
        cache = SearchCache(desk)
        t0 = time.perf_counter()
        cache.refresh()
        print(f"cache built in process: {time.perf_counter() - t0:.2f} s")
        time.sleep(3.1)  # past the racy window of the files just written: their stat is trusted
        _timed(desk, cache, texts[:5])  # posting lists and columns loaded
        ok = _report("warm recall, nothing changed", _timed(desk, cache, texts))
        largest_day = files[-1].name.split(".")[0]

        def into_new_day(i: int) -> None:
            append_event(desk, "inbound", f"bench note {i}", at="2030-01-01T00:00:00Z")

        def into_largest(i: int) -> None:
            append_event(desk, "inbound", f"bench note {i}", at=f"{largest_day}T23:59:59Z")

        ok &= _report("warm recall after an append (new day file)", _timed(desk, cache, texts[:100], into_new_day))
        ok &= _report(f"warm recall after an append (largest file)", _timed(desk, cache, texts[:100], into_largest))
        cache.close()
    return ok


def hybrid(records: int, seed: int) -> bool:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from desk import open as open_desk
    from tests.recall.trigram_embedder import TrigramEmbedder

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "desk"
        init_desk(root)
        turns, texts = _turns(records, seed)
        corpus.write_archive(root, DeskFolder(root).config.desk_id, turns)
        embedder = TrigramEmbedder()
        with open_desk(root) as d:
            d.recall("warm up", limit=10)
            t0 = time.perf_counter()
            d.recall(texts[0], limit=10, embedder=embedder)
            print(f"hybrid: {len(turns)} records; first hybrid recall embeds them all: "
                  f"{time.perf_counter() - t0:.1f} s")
            lexical, fused = [], []
            for text in texts[:50]:
                t0 = time.perf_counter()
                d.recall(text, limit=10)
                lexical.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                d.recall(text, limit=10, embedder=embedder)
                fused.append((time.perf_counter() - t0) * 1000)
        med = statistics.median(fused)
        print(f"warm recall, lexical only: median {statistics.median(lexical):.1f} ms; hybrid: median "
              f"{med:.1f} ms, p95 {sorted(fused)[int(len(fused) * 0.95) - 1]:.1f} ms "
              f"({med * 1000 / len(turns):.1f} us per record)")
    return True


def progress(events: int, seed: int) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "desk"
        init_desk(root)
        turns, _ = _turns(events, seed)
        source = Path(tmp) / "history.jsonl"
        with source.open("w", encoding="utf-8") as handle:
            for t in turns:
                handle.write(json.dumps({"kind": t.kind, "content": t.content, "session": t.session,
                                         "at": t.at.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")},
                                        ensure_ascii=False) + "\n")
        env = {**os.environ, "DESK_HOME": str(root)}
        env.pop("DESK_PROGRESS_INTERVAL", None)
        t0 = time.perf_counter()
        subprocess.run(["desk", "archive", "import", str(source)], env=env, check=True, capture_output=True)
        print(f"progress: `desk archive import` of {len(turns)} events: {time.perf_counter() - t0:.1f} s")
        t0 = time.perf_counter()
        proc = subprocess.Popen(["desk", "recall", "database for Orion", "--json"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None and proc.stdout is not None
        lines = []
        for line in proc.stderr:
            lines.append((time.perf_counter() - t0, line.rstrip("\n")))
        json.loads(proc.stdout.read())
        proc.wait()
        took = time.perf_counter() - t0
        print(f"first `desk recall` (builds the cache), stderr a pipe: {took:.1f} s, {len(lines)} stderr lines")
        for at, line in lines:
            print(f"  {at:5.1f} s  {line}")
        shown = any("indexing the archive for recall" in line for _, line in lines)
        print(f"progress shown on a non-terminal stderr: {'OK' if shown else 'MISSED'}")
        return shown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warm", action="store_true", help="warm recall only")
    parser.add_argument("--progress", action="store_true", help="first recall after an import only")
    parser.add_argument("--hybrid", action="store_true", help="hybrid recall with the tests' embedder only")
    parser.add_argument("--records", type=int, default=100_000, help="records for the warm part")
    parser.add_argument("--events", type=int, default=30_000, help="events imported for the progress part")
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args()
    both = not args.warm and not args.progress and not args.hybrid
    ok = True
    if args.warm or both:
        ok &= warm(args.records, args.seed)
    if args.progress or both:
        ok &= progress(args.events, args.seed)
    if args.hybrid:
        ok &= hybrid(args.records, args.seed)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
