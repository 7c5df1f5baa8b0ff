"""Stage 3 and 4 of recall: the explainable score and the exact, pruned top-k.

The default ranker is `0.85 * weighted coverage + 0.10 * term-frequency saturation + 0.05 *
recency`: docs/design.md §8.1's 0.85 lexical share, but the coverage is IDF-weighted (a match on "Orion"
counts for far more than one on "which"), and two thirds of the seed's recency weight go to BM25's
length-normalised term-frequency saturation (IDF-weighted, scaled to 0..1). Recency halves every 30
days before `as_of`. Weights were tuned on bench corpus seed 1 and are reported on seed 2
(`bench/bench_recall.py`). docs/design.md §8.1's `0.85 * coverage + 0.15 * recency` and plain BM25 stay
available as the documented baselines. Each breakdown carries its weights and contributions, and
the contributions sum to the total.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

HALF_LIFE_DAYS = 30.0
K1, B = 1.2, 0.75
DEFAULT_WEIGHTS = {"coverage": 0.85, "frequency": 0.10, "recency": 0.05}
SEED_WEIGHTS = {"lexical": 0.85, "recency": 0.15}


@dataclass(frozen=True)
class ScoreBreakdown:
    matched_terms: tuple[str, ...]
    query_term_count: int
    lexical_coverage: float
    recency: float
    weights: dict[str, float]
    contributions: dict[str, float]
    total: float

    def to_json(self) -> dict[str, Any]:
        return {"matched_terms": list(self.matched_terms), "query_term_count": self.query_term_count,
                "lexical_coverage": self.lexical_coverage, "recency": self.recency,
                "weights": self.weights, "contributions": self.contributions, "total": self.total}


class Ranker:
    """Stage 3: the score of one record from its term frequencies, and per-term upper bounds."""

    def __init__(self, name: str, terms: Sequence[str], df: Sequence[int], n_docs: int,
                 avg_len: float, as_of: float) -> None:
        self.name, self.terms, self.as_of = name, tuple(terms), as_of
        self.idf = [math.log(1 + (n_docs - d + 0.5) / (d + 0.5)) for d in df]
        self.idf_sum = sum(self.idf) or 1.0
        self.avg_len = avg_len or 1.0
        self.weights = {"default": DEFAULT_WEIGHTS, "seed": SEED_WEIGHTS, "bm25": {"bm25": 1.0}}[name]
        m = len(terms)
        # Each matched term adds `flat + slope * tf / (tf + norm(length))`; `bounds` are the most
        # one term can add (tf / (tf + norm) < 1), which is what MaxScore pruning needs.
        if name == "default":
            self.flat = [DEFAULT_WEIGHTS["coverage"] * w / self.idf_sum for w in self.idf]
            self.slope = [DEFAULT_WEIGHTS["frequency"] * w / self.idf_sum for w in self.idf]
            self.recency_weight = DEFAULT_WEIGHTS["recency"]
        elif name == "seed":
            self.flat, self.slope = [SEED_WEIGHTS["lexical"] / m] * m, [0.0] * m
            self.recency_weight = SEED_WEIGHTS["recency"]
        else:
            self.flat, self.slope = [0.0] * m, [w * (K1 + 1) for w in self.idf]
            self.recency_weight = 0.0
        self.bounds = [f + sl for f, sl in zip(self.flat, self.slope)]

    def recency(self, time: float) -> float:
        if math.isnan(time):
            return 0.0
        age_days = max(0.0, self.as_of - time) / 86400.0
        return 0.5 ** (age_days / HALF_LIFE_DAYS)

    def score(self, tfs: Sequence[int], length: int, time: float) -> ScoreBreakdown:
        matched = tuple(t for t, tf in zip(self.terms, tfs) if tf)
        coverage = len(matched) / len(self.terms)
        recency = self.recency(time)
        norm = K1 * (1 - B + B * length / self.avg_len)
        sat = [tf * (K1 + 1) / (tf + norm) if tf else 0.0 for tf in tfs]
        if self.name == "default":
            weighted = sum(w for w, tf in zip(self.idf, tfs) if tf) / self.idf_sum
            freq = sum(w * s for w, s in zip(self.idf, sat)) / (K1 + 1) / self.idf_sum
            parts = {"coverage": DEFAULT_WEIGHTS["coverage"] * weighted,
                     "frequency": DEFAULT_WEIGHTS["frequency"] * freq,
                     "recency": DEFAULT_WEIGHTS["recency"] * recency}
        elif self.name == "seed":
            parts = {"lexical": SEED_WEIGHTS["lexical"] * coverage, "recency": SEED_WEIGHTS["recency"] * recency}
        else:
            parts = {"bm25": sum(w * s for w, s in zip(self.idf, sat))}
        contributions = {k: round(v, 6) for k, v in parts.items()}
        return ScoreBreakdown(matched, len(self.terms), round(coverage, 6), round(recency, 6),
                              dict(self.weights), contributions, round(sum(contributions.values()), 6))


def top_records(ranker: Ranker, lists: list[tuple[Any, Any]], excluded: set[int], columns: Any,
                limit: int, rid_of: Callable[[int], str]) -> list[tuple[ScoreBreakdown, int]]:
    """Exact top `limit` by the stable key (MaxScore: skip what provably cannot reach it).

    Terms are taken rarest (highest bound) first, accumulating each record's partial score. Once
    the `limit`-th best partial score plus recency beats everything a record could still collect
    from the remaining terms, no new record can enter and records that cannot catch up are dropped;
    the remaining terms only top up the survivors. The survivors get the full breakdown and the
    stable sort, so the answer is the one an exhaustive scan gives.
    """
    m = len(lists)
    order = sorted(range(m), key=lambda i: (-ranker.bounds[i], ranker.terms[i]))
    suffix = [0.0] * (m + 1)
    for pos in range(m - 1, -1, -1):
        suffix[pos] = suffix[pos + 1] + ranker.bounds[order[pos]]
    lengths, times = columns.lengths, columns.times  # the search cache's per-record columns
    scale = K1 * B / ranker.avg_len
    base = K1 * (1 - B)
    acc: dict[int, float] = {}
    open_to_new = True
    eps = 1e-5
    for pos, i in enumerate(order):
        ids, tfs = lists[i]
        flat, slope = ranker.flat[i], ranker.slope[i]
        if open_to_new:
            for doc, tf in zip(ids, tfs):
                if doc in excluded:
                    continue
                acc[doc] = acc.get(doc, 0.0) + flat + slope * tf / (tf + base + scale * lengths[doc])
        elif acc:
            if len(ids) <= 8 * len(acc):
                for doc, tf in zip(ids, tfs):
                    if doc in acc:
                        acc[doc] += flat + slope * tf / (tf + base + scale * lengths[doc])
            else:
                for doc in list(acc):
                    k = bisect.bisect_left(ids, doc)
                    if k < len(ids) and ids[k] == doc:
                        tf = tfs[k]
                        acc[doc] += flat + slope * tf / (tf + base + scale * lengths[doc])
        if len(acc) < limit:
            continue
        # Partial scores only grow and recency is >= 0, so the limit-th best partial score is a
        # floor under the final limit-th total; anything whose ceiling is below it is out.
        floor = heapq.nlargest(limit, acc.values())[-1]
        ceiling = suffix[pos + 1] + ranker.recency_weight
        if open_to_new and ceiling < floor - eps:
            open_to_new = False
        if not open_to_new:
            acc = {d: v for d, v in acc.items() if v + ceiling >= floor - eps}
    weight = ranker.recency_weight
    totals = {d: v + weight * ranker.recency(times[d]) for d, v in acc.items()}
    if len(totals) > limit:
        cut = heapq.nlargest(limit, totals.values())[-1] - eps
        totals = {d: v for d, v in totals.items() if v >= cut}
    scored = []
    for doc in totals:
        tfs_of = []
        for ids, tfs in lists:
            k = bisect.bisect_left(ids, doc)
            tfs_of.append(tfs[k] if k < len(ids) and ids[k] == doc else 0)
        time = times[doc]
        breakdown = ranker.score(tfs_of, lengths[doc], time)
        key = (-breakdown.total, -breakdown.lexical_coverage,
               -time if not math.isnan(time) else math.inf, rid_of(doc))
        scored.append((key, breakdown, doc))
    scored.sort(key=lambda item: item[0])
    return [(breakdown, doc) for _, breakdown, doc in scored[:limit]]
