"""Retrieval quality of `desk recall` on generated long conversations (bench/retrieval/conversations.py).

    python bench/retrieval/evaluate.py              # test split (seed 2), every ranker, ~1 min
    python bench/retrieval/evaluate.py --seed 1     # the tuning split
    python bench/retrieval/evaluate.py --rankers default,bm25 --json out.json

Each conversation is archived into its own fresh desk in a temp folder through `desk archive import`
(the in-process API), and each question is asked as `desk recall Q --kind conversation --limit 10`
would ask it (`Desk.recall(..., kind="conversation", limit=10)`), at the day after the
conversation's last turn. A hit is matched to its turn by the turn id the import keeps in
`meta["desk.source_id"]`.

Figures per ranker, per question kind and per language:
- R@k: the share of a question's evidence turns found in the top k, averaged over questions (a
  multi-hop question with 3 evidence turns and 2 of them in the top 5 counts 2/3);
- MRR: 1 / the rank of the first evidence turn found in the top 10 (0 when none is).

Rankers: desk's own (`--ranker` values: the default, the previous default `coverage`, the seed
formula `seed`, desk's plain `bm25`) and a reference BM25 from a maintained library, `rank-bm25`
(BM25Okapi, k1 1.5, b 0.75) over lower-cased words and CJK bigrams with an English + Chinese stop
list. rank-bm25 is a bench-only dependency: `pip install -e '.[bench]'` (or `pip install rank-bm25`);
without it that column is skipped with a note.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import conversations as gen  # noqa: E402

import desk.api as desk_api  # noqa: E402
from desk.vocabulary import RANKERS  # noqa: E402

KS = (1, 5, 10)
REFERENCE = "rank-bm25"
_EN_STOP = set("""a an the and or but if of at by for with about to from in on into over under again then once here there
when where why how all any both each few more most other some such no nor not only own same so than too very can will just
should now i me my we our you your he him his she her it its they them their what which who whom this that these those am is
are was were be been being have has had do does did doing would could i'm it's that's don't didn't""".split())
_ZH_STOP = set("的 了 吗 呢 吧 啊 是 在 和 有 我 你 他 她 它 们 这 那 都 也 就 还 什么 怎么 哪 哪些 哪个 哪里 时候 为什么".split())
_WORD = re.compile(r"[^\W_\u3400-\u9fff]+|[\u3400-\u9fff]+")


def reference_tokens(text: str) -> list[str]:
    """rank-bm25's input: lower-cased words and CJK bigrams (single characters kept), stop words out."""
    out: list[str] = []
    for piece in _WORD.findall(text.lower()):
        if "\u3400" <= piece[0] <= "\u9fff":
            grams = [piece] if len(piece) == 1 else [piece[i:i + 2] for i in range(len(piece) - 1)]
            out += [g for g in grams if g not in _ZH_STOP and not (len(g) == 2 and (g[0] in _ZH_STOP or g[1] in _ZH_STOP))]
        elif piece not in _EN_STOP:
            out.append(piece)
    return out


def _reference_ranker() -> Any:
    try:
        from rank_bm25 import BM25Okapi
    except ImportError:
        return None
    return BM25Okapi


def score_question(found: list[str], evidence: tuple[str, ...]) -> dict[str, float]:
    wanted = set(evidence)
    out = {f"R@{k}": len(wanted & set(found[:k])) / len(wanted) for k in KS}
    first = next((i for i, tid in enumerate(found[:10], 1) if tid in wanted), None)
    out["MRR"] = 1.0 / first if first else 0.0
    return out


def evaluate(seed: int, per_language: int, rankers: list[str],
             version: int = gen.BENCHMARK_VERSION) -> dict[str, Any]:
    convs = gen.generate_split(seed, per_language, version=version)
    bm25_class = _reference_ranker() if REFERENCE in rankers else None
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for conv in convs:
            folder = Path(tmp) / conv.id
            desk = desk_api.init(folder / "desk")
            desk.archive_import(gen.write_jsonl(conv, folder / "turns.jsonl"))
            as_of = gen.stamp(conv.as_of)
            reference = None
            if bm25_class is not None:
                reference = bm25_class([reference_tokens(t.text) for t in conv.turns])
            for q in conv.questions:
                for ranker in rankers:
                    if ranker == REFERENCE:
                        if reference is None:
                            continue
                        scores = reference.get_scores(reference_tokens(q.text))
                        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:10]
                        found = [conv.turns[i].id for i in order if scores[i] > 0]
                    else:
                        result = desk.recall(q.text, kind="conversation", limit=10, now=as_of,
                                             ranker=ranker).value
                        found = [h.provenance["meta"].get("desk.source_id", "") for h in result.hits]
                        for h in result.hits:
                            b = h.score_breakdown
                            assert abs(sum(b.contributions.values()) - b.total) < 1e-5, (q.text, b)
                    rows.append({"ranker": ranker, "kind": q.kind, "lang": q.lang,
                                 **score_question(found, q.evidence)})
            desk.close()
    return {"seed": seed, "benchmark_version": version, "conversations": len(convs), "turns": sum(len(c.turns) for c in convs),
            "questions": sum(len(c.questions) for c in convs), "seconds": round(time.perf_counter() - started, 1),
            "reference_available": bm25_class is not None, "reference_asked": REFERENCE in rankers,
            "table": aggregate(rows)}


def aggregate(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        for group in ("all", f"kind:{row['kind']}", f"lang:{row['lang']}"):
            groups[(row["ranker"], group)].append(row)
    table: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    for (ranker, group), members in groups.items():
        table[ranker][group] = {m: round(sum(r[m] for r in members) / len(members), 3)
                                for m in (*(f"R@{k}" for k in KS), "MRR")}
        table[ranker][group]["n"] = len(members)
    return table


def print_report(report: dict[str, Any]) -> None:
    print(f"seed {report['seed']} (benchmark version {report['benchmark_version']}): {report['conversations']} conversations, {report['turns']} turns, "
          f"{report['questions']} questions ({report['seconds']} s)")
    if not report["reference_available"] and report["reference_asked"]:
        print(f"note: {REFERENCE} is not installed, its column is skipped "
              "(pip install -e '.[bench]' or pip install rank-bm25)")
    table = report["table"]
    groups = sorted({g for r in table.values() for g in r}, key=lambda g: (g != "all", g))
    print(f"{'ranker':<10} {'group':<12} {'n':>4} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6}")
    for group in groups:
        for ranker, by_group in table.items():
            if group in by_group:
                m = by_group[group]
                print(f"{ranker:<10} {group:<12} {m['n']:>4} {m['R@1']:>6.3f} {m['R@5']:>6.3f} "
                      f"{m['R@10']:>6.3f} {m['MRR']:>6.3f}")


def ablate(overrides: str, no_stem: bool, no_stop: bool) -> None:
    """Apply `--set`, `--no-stem` and `--no-stop` to this process's desk (before any index is built)."""
    from desk.recall import rank
    from desk.text import terms

    for item in filter(None, overrides.split(",")):
        name, value = item.split("=")
        setattr(rank.CONTEXT_PARAMS, name, float(value))
    if no_stem:
        terms._stem = lambda words: words
    if no_stop:
        terms.EN_STOP = terms.ZH_STOP = terms._ZH_PARTICLES = terms._STOP_STEMS = frozenset()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=2, help="generator seed: 1 is the tuning split, 2 the test split")
    parser.add_argument("--per-language", type=int, default=5, help="conversations per language")
    parser.add_argument("--benchmark-version", type=int, default=gen.BENCHMARK_VERSION, choices=(1, 2, 3),
                        help="1: statements never name their topic (before issue 16's review); 2: some do; "
                             "3: version 2 plus temporal questions (issue 33)")
    parser.add_argument("--rankers", default=",".join([*RANKERS, REFERENCE]),
                        help=f"comma-separated: desk's {', '.join(RANKERS)} and {REFERENCE}")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--set", default="", metavar="NAME=V,...",
                        help="override the default ranker's parameters (desk.recall.rank.ContextParams), "
                             "e.g. context=0,time=0: how each step is measured")
    parser.add_argument("--no-stem", action="store_true", help="ablation: index and ask unstemmed words")
    parser.add_argument("--no-stop", action="store_true", help="ablation: keep stop words in queries")
    args = parser.parse_args()
    ablate(args.set, args.no_stem, args.no_stop)
    report = evaluate(args.seed, args.per_language, [r for r in args.rankers.split(",") if r], args.benchmark_version)
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
