"""Where the default ranker misses: per question kind and language, the rank of each evidence turn
(down to 200) and what fills ranks 6-10 of the top 10.

    python bench/retrieval/diagnose.py                    # tuning split (seed 1), benchmark version 3 (the default)
    python bench/retrieval/diagnose.py --seed 2 --benchmark-version 1 --set question=0

Rank buckets: `1`, `2-5`, `6-10`, `11-20`, `21-50`, `51-200`, `none` (not in the top 200: usually
no term shared with the question). Each non-evidence hit at ranks 6-10 is tagged with what it is:
`same-session` (a higher hit is in its session), `adjacent` (next to a higher hit),
`evidence-neighbour` (next to an evidence turn), `other-evidence` (another question's evidence),
`question-turn` (it ends with a question mark), else `other`. `--examples N` prints the first N
misses of each kind (question, evidence, top 5).

Two more counts (issue 33.4): `reach`, per kind and language, where each evidence turn shares a
query term other than its speaker's name (in `itself`, else only in the turn `before` it in its
session, else `none`: out of any lexical ranker's reach); and `uncovered`, the questions whose top
5 leave a query term uncovered (held by no hit, nor lent to one) that some record holds, and how
many of those an evidence turn holds: what a second pass over uncovered terms could add.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import conversations as gen  # noqa: E402
from evaluate import ablate  # noqa: E402

import desk.api as desk_api  # noqa: E402
from desk.recall.search import normalize_query, search  # noqa: E402
from desk.text.terms import FIELD_MARK, query_terms  # noqa: E402

DEPTH = 200
BUCKETS = ((1, "1"), (5, "2-5"), (10, "6-10"), (20, "11-20"), (50, "21-50"), (DEPTH, "51-200"))


def bucket(rank: int | None) -> str:
    return next((name for top, name in BUCKETS if rank is not None and rank <= top), "none")


def diagnose(seed: int, version: int, examples: int) -> None:
    ranks: dict[str, Counter[str]] = defaultdict(Counter)
    fills: dict[str, Counter[str]] = defaultdict(Counter)
    shown: dict[str, int] = Counter()
    reach: Counter[str] = Counter()
    uncovered: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for conv in gen.generate_split(seed, version=version):
            folder = Path(tmp) / conv.id
            d = desk_api.init(folder / "desk")
            d.archive_import(gen.write_jsonl(conv, folder / "turns.jsonl"))
            turns = {t.id: t for t in conv.turns}
            index = {t.id: i for i, t in enumerate(conv.turns)}
            evidence = {e for q in conv.questions for e in q.evidence}
            as_of = gen.stamp(conv.as_of)
            d.recall("warm up", kind="conversation", now=as_of)
            for q in conv.questions:
                query = normalize_query(q.text, limit=10, kind="conversation", as_of=as_of)._replace(
                    limit=DEPTH)  # deeper than the CLI allows: where misses rank
                found = [h.provenance["meta"].get("desk.source_id", "")
                         for h in search(d._search_cache, query, d.desk_id).hits]
                for e in q.evidence:
                    rank = found.index(e) + 1 if e in found else None
                    for group in (q.kind, f"{q.lang}:{q.kind}"):
                        ranks[group][bucket(rank)] += 1
                top = found[:10]
                words = set(query_terms(q.text, characters=True))
                for e in q.evidence:
                    t, before = turns[e], conv.turns[index[e] - 1]
                    name = set(query_terms(t.speaker, characters=True))
                    said = (set(query_terms(t.text + " " + (t.caption or ""), characters=True)) & words) - name
                    asked = (set(query_terms(before.text, characters=True)) & words) - name
                    where = "itself" if said else "before" if asked and before.session == t.session else "none"
                    reach[f"{q.lang}:{q.kind} {where}"] += 1
                hits = search(d._search_cache, query._replace(limit=5), d.desk_id).hits
                held = {w for w in query.terms if len(d._search_cache.postings(w)[0])
                        or len(d._search_cache.postings(FIELD_MARK + w)[0])}
                gap = held - {w for h in hits for w in (*h.score_breakdown.matched_terms, *h.score_breakdown.session_terms)}
                uncovered[f"{q.kind} questions"] += 1
                if gap:
                    uncovered[f"{q.kind} uncovered"] += 1
                    evidence_words = {w for e in q.evidence for w in query_terms(
                        turns[e].text + " " + turns[e].speaker, characters=True)}
                    uncovered[f"{q.kind} uncovered, held by evidence"] += bool(gap & evidence_words)
                for i, tid in enumerate(top[5:10], 6):
                    if tid in q.evidence:
                        fills[q.kind]["evidence"] += 1
                        continue
                    higher = top[:i - 1]
                    tags = [tag for tag, hit in (
                        ("same-session", any(turns[h].session == turns[tid].session for h in higher)),
                        ("adjacent", any(abs(index[h] - index[tid]) == 1 for h in higher)),
                        ("evidence-neighbour", any(abs(index[e] - index[tid]) == 1 for e in q.evidence)),
                        ("other-evidence", tid in evidence),
                        ("question-turn", turns[tid].text.rstrip().endswith(("?", "？")))) if hit]
                    fills[q.kind]["+".join(tags) or "other"] += 1
                if examples and shown[q.kind] < examples and any(e not in top for e in q.evidence):
                    shown[q.kind] += 1
                    print(f"[{q.kind}] {q.text}\n  evidence: {[turns[e].text for e in q.evidence]}\n"
                          f"  ranks: {[found.index(e) + 1 if e in found else None for e in q.evidence]}\n"
                          f"  top 5: {[turns[t].text for t in top[:5]]}")
            d.close()
    names = [name for _, name in BUCKETS] + ["none"]
    print(f"\nseed {seed}, benchmark version {version}: rank of each evidence turn")
    print(f"{'group':<14}" + "".join(f"{n:>8}" for n in names))
    for group in sorted(ranks):
        print(f"{group:<14}" + "".join(f"{ranks[group][n]:>8}" for n in names))
    print("\nwhere each evidence turn shares a query term other than its speaker's name")
    for key in sorted(reach):
        print(f"  {key}: {reach[key]}")
    print("\nquestions whose top 5 leave a query term uncovered (a second pass's reach)")
    for key in sorted(uncovered):
        print(f"  {key}: {uncovered[key]}")
    print("\nnon-evidence hits at ranks 6-10, by what they are")
    for kind in sorted(fills):
        print(f"{kind:<8} " + ", ".join(f"{tag} {n}" for tag, n in fills[kind].most_common(6)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--benchmark-version", type=int, default=gen.BENCHMARK_VERSION, choices=(1, 2, 3))
    parser.add_argument("--set", default="", metavar="NAME=V,...", help="override the default ranker's parameters")
    parser.add_argument("--examples", type=int, default=0, help="print this many misses of each kind")
    args = parser.parse_args()
    ablate(args.set, False, False)
    diagnose(args.seed, args.benchmark_version, args.examples)


if __name__ == "__main__":
    main()
