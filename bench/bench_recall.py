"""Recall benchmark: ranking quality on a generated corpus, then speed at 100,000 records.

    python bench/bench_recall.py                 # both parts
    python bench/bench_recall.py --quality       # ranking quality only (~20 s)
    python bench/bench_recall.py --scale --records 100000

Quality: English and Chinese sessions from bench/retrieval/corpus.py (seeded), written as archive
files in the contract's format into a fresh desk; each question's evidence turn is known. For the
default ranker, docs/design.md §8.1's formula (0.85 coverage + 0.15 recency) and plain BM25, it prints
recall@1/5/10 and MRR per language and overall, and checks that every hit's contributions sum to
its total. The default ranker was tuned on seed 1; the report uses seed 2 (held out).

Scale: N records (default 100,000) written straight into archive files; the first `desk recall`
(in a pseudo-terminal, so the progress bar shows) builds the cache; then warm in-process recall
over many questions (median, p95) against a plain linear scan measured in the same run, and the
cold CLI with the cache built.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "retrieval"))

import corpus  # noqa: E402

from desk.layout import DeskFolder  # noqa: E402
from desk.recall.search import normalize_query, recall, search  # noqa: E402
from desk.setup.init import init_desk  # noqa: E402
from desk.recall.search_cache import SearchCache  # noqa: E402
from desk.recall.records import text_terms  # noqa: E402

RANKERS = ("default", "seed", "bm25")


def make_desk(folder: Path) -> DeskFolder:
    root = folder / "desk"
    init_desk(root)
    return DeskFolder(root)


def quality(seed: int, sessions: int) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        desk = make_desk(Path(tmp))
        turns: list[corpus.Turn] = []
        questions: list[corpus.Question] = []
        for lang in ("en", "zh"):
            t, q = corpus.build(seed, sessions, lang)
            questions += [corpus.Question(x.text, x.lang, x.evidence + len(turns)) for x in q]
            turns += t
        ids = corpus.write_archive(desk.root, desk.config.desk_id, turns)
        as_of = (max(t.at for t in turns) + corpus.dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        cache = SearchCache(desk)
        cache.refresh()
        print(f"quality: seed {seed}, {len(turns)} conversation records, {len(questions)} questions "
              f"({sum(q.lang == 'en' for q in questions)} en, {sum(q.lang == 'zh' for q in questions)} zh)")
        table: dict[tuple[str, str], list[int | None]] = {}
        sums_ok = True
        for ranker in RANKERS:
            for q in questions:
                query = normalize_query(q.text, limit=10, as_of=as_of, ranker=ranker)
                result = search(cache, query, desk.config.desk_id)
                want = f"event:{ids[q.evidence]}"
                rank = next((h.rank for h in result.hits if h.id == want), None)
                for lang in (q.lang, "all"):
                    table.setdefault((ranker, lang), []).append(rank)
                for h in result.hits:
                    b = h.score_breakdown
                    sums_ok &= abs(sum(b.contributions.values()) - b.total) < 1e-6
        cache.close()
    print(f"{'ranker':<8} {'lang':<4} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6}")
    scores = {}
    for (ranker, lang), ranks in sorted(table.items(), key=lambda kv: (RANKERS.index(kv[0][0]),
                                                                      ("en", "zh", "all").index(kv[0][1]))):
        n = len(ranks)
        r = [sum(1 for x in ranks if x is not None and x <= k) / n for k in (1, 5, 10)]
        mrr = sum(1 / x for x in ranks if x is not None) / n
        scores[(ranker, lang)] = (*r, mrr)
        print(f"{ranker:<8} {lang:<4} {r[0]:6.3f} {r[1]:6.3f} {r[2]:6.3f} {mrr:6.3f}")
    d, s, b = (scores[(r, "all")] for r in RANKERS)
    print(f"default vs seed formula: MRR {d[3] / s[3]:.2f}x, R@1 {d[0] / max(s[0], 1e-9):.2f}x")
    print(f"default vs BM25:         MRR {d[3] / b[3]:.2f}x, R@1 {d[0] / max(b[0], 1e-9):.2f}x")
    print(f"every hit's contributions sum to its total: {sums_ok}")
    met = d[1] >= 0.62 and d[2] >= 0.70  # issue 16's goal, here on this corpus's held-out seed
    print(f"default R@5 {d[1]:.3f} (target >= 0.62), R@10 {d[2]:.3f} (target >= 0.70): "
          f"{'OK' if met else 'MISSED'}")
    return met and sums_ok


def scale(records: int, seed: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        desk = make_desk(Path(tmp))
        turns: list[corpus.Turn] = []
        questions: list[corpus.Question] = []
        sessions = max(1, records // 20)  # ~11 turns per session and language, trimmed below
        for lang in ("en", "zh"):
            t, q = corpus.build(seed, sessions, lang)
            questions += [corpus.Question(x.text, x.lang, x.evidence + len(turns)) for x in q]
            turns += t
        turns = turns[:records]
        questions = [q for q in questions if q.evidence < records][:200]
        corpus.write_archive(desk.root, desk.config.desk_id, turns)
        size = sum(p.stat().st_size for p in desk.path(".system/archive").glob("*.jsonl"))
        print(f"scale: {len(turns)} conversation records in archive files ({size / 1e6:.1f} MB)")
        env = {**os.environ, "DESK_HOME": str(desk.root)}
        # this interpreter's desk (bench/README.md), started in an empty folder: `-m` puts the
        # current folder first on sys.path, and the temporary folder holds the desk, named `desk`
        cli = [sys.executable, "-m", "desk"]
        cwd = Path(tmp) / "cwd"
        cwd.mkdir()
        started = time.perf_counter()
        shown = _run_in_pty([*cli, "recall", "database for Orion"], env, cwd)
        print(f"first `desk recall` (builds the cache): {time.perf_counter() - started:.2f} s; "
              f"progress bar on the terminal: {'yes' if 'indexing the archive' in shown else 'NO'}")
        cache_file = desk.cache_dir / "search.sqlite"
        print(f"search cache: {cache_file.stat().st_size / 1e6:.1f} MB")
        cache = SearchCache(desk)
        cache.refresh()
        texts = [q.text for q in questions]
        for text in texts[:5]:
            recall(desk, text, cache=cache, limit=10)  # warm up: posting lists cached in process
        warm = []
        for text in texts:
            t0 = time.perf_counter()
            recall(desk, text, cache=cache, limit=10)
            warm.append(time.perf_counter() - t0)
        cache.close()
        bags = [set(text_terms(t.content)) for t in turns]
        scan = []
        for text in texts[:20]:
            terms = set(text_terms(text))
            t0 = time.perf_counter()
            scores = sorted(((len(terms & bag), i) for i, bag in enumerate(bags) if terms & bag), reverse=True)[:10]
            scan.append(time.perf_counter() - t0)
            del scores
        med, p95 = statistics.median(warm), sorted(warm)[int(len(warm) * 0.95) - 1]
        base = statistics.median(scan)
        print(f"warm recall in process over {len(turns)} records, {len(texts)} questions: "
              f"median {med * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms (target <= 50 ms)")
        print(f"baseline linear scan of pre-tokenised records (coverage only, same run): "
              f"median {base * 1000:.1f} ms -> recall is {base / med:.1f}x faster")
        cold, start = [], []
        for i in range(11):  # paired rounds, the order alternating, so a slow stretch hits both
            sides = [("recall", texts[i % len(texts)]), ("help", None)]
            for side, text in (sides if i % 2 == 0 else sides[::-1]):
                argv = [*cli, "recall", text, "--json"] if text is not None else [*cli, "--help"]
                t0 = time.perf_counter()
                subprocess.run(argv, env=env, cwd=cwd, check=True, capture_output=True)
                (cold if side == "recall" else start).append(time.perf_counter() - t0)
        ratio = statistics.median(cold) / statistics.median(start)
        print(f"cold CLI `desk recall` with the cache built, 11 paired rounds: median "
              f"{statistics.median(cold) * 1000:.1f} ms vs `desk --help` {statistics.median(start) * 1000:.1f} ms, "
              f"{ratio:.2f}x (target <= 2x): {'OK' if ratio <= 2 else 'MISSED'}")


def _run_in_pty(argv: list[str], env: dict[str, str], cwd: Path) -> str:
    """Run `argv` in `cwd` with a pseudo-terminal on stdout/stderr and return what it printed."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        os.execvpe(argv[0], argv, env)
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode("utf-8", "replace")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quality", action="store_true", help="ranking quality only")
    parser.add_argument("--scale", action="store_true", help="speed at scale only")
    parser.add_argument("--seed", type=int, default=2, help="corpus seed for quality (1 was used to tune)")
    parser.add_argument("--sessions", type=int, default=600, help="sessions per language for quality")
    parser.add_argument("--records", type=int, default=100_000, help="records for the scale part")
    args = parser.parse_args()
    both = not args.quality and not args.scale
    ok = True
    if args.quality or both:
        ok = quality(args.seed, args.sessions)
    if args.scale or both:
        scale(args.records, seed=3)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
