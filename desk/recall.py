"""`desk recall`: seed 001's five stages over memory files and archived conversation records.

normalize -> candidate -> score -> stable rank -> render, each a function with a typed result:

- **normalize** (`normalize_query`): whitespace folded for the readable text; NFKC + casefold +
  whitespace for `normalized_text`; `terms` are the sorted distinct words and CJK character bigrams.
  Empty and punctuation-only queries and a limit outside 1..10 are refused (exit 2).
- **candidate**: every record sharing at least one term with the query (posting lists of the
  derived search cache, `desk.search_index`); expired memories and records after `as_of` are never
  candidates.
- **score** (`Ranker`): an explainable sum. The default ranker is
  `0.85 * weighted coverage + 0.10 * term-frequency saturation + 0.05 * recency`: seed 001's
  0.85 lexical share, but the coverage is IDF-weighted (a match on "Orion" counts for far more than
  one on "which"), and two thirds of the seed's recency weight go to BM25's length-normalised
  term-frequency saturation (IDF-weighted, scaled to 0..1). Recency halves every 30 days before
  `as_of`. Weights were tuned on bench corpus seed 1 and are reported on seed 2. Seed 001's `0.85 * coverage + 0.15 * recency` and plain BM25 are kept
  as the documented baselines (`--ranker seed|bm25`); `bench/bench_recall.py` compares all three.
  Each hit carries the weights and contributions, and the contributions sum to the total.
- **stable rank**: total desc, plain coverage desc, time desc, id asc. Only the top `limit` are
  scored exactly; records that provably cannot reach the top (MaxScore pruning on per-term upper
  bounds) are skipped, which changes nothing in the answer, only the time.
- **render**: JSON (the contract) or seed 001's `<recalled_context>` XML; an empty result renders
  as an empty string so no empty wrapper costs prompt budget.

Read-only: recall never writes the desk (only the git-ignored cache) and never makes a commit.
"""

from __future__ import annotations

import bisect
import datetime as dt
import hashlib
import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from desk.desk import Desk
from desk.errors import UsageError
from desk.search_index import KIND_NAMES, MEMORY, Progress, SearchIndex, text_terms
from desk.textnorm import normalize

KINDS = ("memory", "conversation", "all")
RANKERS = ("default", "seed", "bm25")
LIMIT_MIN, LIMIT_MAX = 1, 10
HALF_LIFE_DAYS = 30.0
K1, B = 1.2, 0.75
DEFAULT_WEIGHTS = {"coverage": 0.85, "frequency": 0.10, "recency": 0.05}
SEED_WEIGHTS = {"lexical": 0.85, "recency": 0.15}
SNIPPET_CHARS = 200


@dataclass(frozen=True)
class RecallQuery:
    query_id: str
    text: str
    normalized_text: str
    terms: tuple[str, ...]
    limit: int
    kind: str
    as_of: str
    ranker: str

    def to_json(self) -> dict[str, Any]:
        return {"query_id": self.query_id, "text": self.text, "normalized_text": self.normalized_text,
                "terms": list(self.terms), "limit": self.limit, "kind": self.kind,
                "as_of": self.as_of, "ranker": self.ranker}


def parse_as_of(value: dt.datetime | str | None) -> dt.datetime:
    if value is None:
        return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            raise UsageError(f"--as-of {value!r} is not an ISO-8601 time like 2026-11-29T10:00:00Z") from None
    if value.tzinfo is None:
        raise UsageError("--as-of needs a timezone; write it in UTC with a Z, e.g. 2026-11-29T10:00:00Z")
    return value.astimezone(dt.timezone.utc)


def normalize_query(text: str, *, limit: int = 5, kind: str = "all",
                    as_of: dt.datetime | str | None = None, ranker: str = "default") -> RecallQuery:
    """Stage 1: validate and normalise the query; a refused query raises UsageError (exit 2)."""
    if not LIMIT_MIN <= limit <= LIMIT_MAX:
        raise UsageError(f"--limit must be between {LIMIT_MIN} and {LIMIT_MAX}, not {limit}")
    if kind not in KINDS:
        raise UsageError(f"--kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if ranker not in RANKERS:
        raise UsageError(f"--ranker must be one of {', '.join(RANKERS)}, not {ranker!r}")
    readable = " ".join(text.split())
    if not readable:
        raise UsageError("the query is empty: say what to look for, e.g. `desk recall \"report style\"`")
    terms = tuple(sorted(set(text_terms(readable))))
    if not terms:
        raise UsageError(f"the query {readable!r} has no searchable words (only punctuation or symbols)")
    moment = parse_as_of(as_of)
    as_of_text = moment.strftime("%Y-%m-%dT%H:%M:%SZ") if not moment.microsecond else moment.isoformat()
    normalized = normalize(readable)
    digest = hashlib.sha256("\0".join([normalized, str(limit), kind, as_of_text, ranker]).encode())
    return RecallQuery("query-" + digest.hexdigest()[:16], readable, normalized, terms, limit, kind,
                       as_of_text.replace("+00:00", "Z"), ranker)


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


@dataclass(frozen=True)
class RecallHit:
    rank: int
    id: str
    snippet: str
    scope: dict[str, Any]
    provenance: dict[str, Any]
    score_breakdown: ScoreBreakdown

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "id": self.id, "snippet": self.snippet, "scope": self.scope,
                "provenance": self.provenance, "score_breakdown": self.score_breakdown.to_json()}


@dataclass(frozen=True)
class RecallResult:
    query: RecallQuery
    hits: tuple[RecallHit, ...]
    searched_records: int
    candidate_records: int
    empty_reason: str | None

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query.to_json(), "hits": [h.to_json() for h in self.hits],
                "searched_records": self.searched_records, "candidate_records": self.candidate_records,
                "empty_reason": self.empty_reason}


def recall(desk: Desk, text: str, *, limit: int = 5, kind: str = "all",
           as_of: dt.datetime | str | None = None, ranker: str = "default",
           index: SearchIndex | None = None, progress: Progress | None = None) -> RecallResult:
    """Run the five stages. Pass a long-lived `index` to stay warm across calls in one process."""
    query = normalize_query(text, limit=limit, kind=kind, as_of=as_of, ranker=ranker)
    own = index is None
    index = index or SearchIndex(desk)
    try:
        index.refresh(progress)
        return search(index, query, desk.config.desk_id)
    finally:
        if own:
            index.close()


def search(index: SearchIndex, query: RecallQuery, desk_id: str) -> RecallResult:
    """Stages 2 to 4 over an up-to-date index, then the hits' snippets and provenance."""
    s = index.state
    as_of = parse_as_of(query.as_of).timestamp()
    lists = [index.postings(t) for t in query.terms]
    excluded = _excluded(index, query.kind, as_of)
    searched = len(s.rids) - len(excluded)
    union: set[int] = set()
    for ids, _ in lists:
        union.update(ids)
    candidates = len(union) - len(union & excluded)
    if not candidates:
        reason = "no_records" if not searched else "no_matching_terms"
        return RecallResult(query, (), searched, 0, reason)
    alive = len(s.rids) - len(s.dead)
    dfs = [len(ids) - sum(1 for d in s.dead if _contains(ids, d)) for ids, _ in lists]
    ranker = Ranker(query.ranker, query.terms, dfs, alive, s.sum_len / max(alive, 1), as_of)
    scored = _top(ranker, lists, excluded, s, query.limit)
    found = [(breakdown, index.record_data(doc)) for breakdown, doc in scored]
    paths = [d["provenance"]["path"] for _, d in found if d["kind"] == "memory"]
    dirty = set(index.desk.git.dirty(paths)) if paths else set()
    hits = [_hit(index, rank, data, breakdown, desk_id, dirty)
            for rank, (breakdown, data) in enumerate(found, 1)]
    return RecallResult(query, tuple(hits), searched, candidates, None)


def _contains(ids: Sequence[int], doc: int) -> bool:
    i = bisect.bisect_left(ids, doc)
    return i < len(ids) and ids[i] == doc


def _derived(index: SearchIndex) -> dict[str, Any]:
    cache: dict[str, Any] = getattr(index, "_derived_cache", {})
    if cache.get("generation") != index.state.generation:
        s = index.state
        cache = {"generation": s.generation,
                 "memory": {d for d, k in enumerate(s.kinds) if k == MEMORY},
                 "conversation": {d for d, k in enumerate(s.kinds) if k != MEMORY},
                 "max_time": max((t for t in s.times if not math.isnan(t)), default=0.0)}
        index._derived_cache = cache  # type: ignore[attr-defined]
    return cache


def _memory_docs(index: SearchIndex) -> set[int]:
    return _derived(index)["memory"]


def _excluded(index: SearchIndex, kind: str, as_of: float) -> set[int]:
    """Records that can never be candidates: tombstoned, expired, after `as_of`, other kind."""
    s = index.state
    out = set(s.dead)
    out.update(d for d, at in s.expires.items() if at <= as_of)
    if as_of < _derived(index)["max_time"]:
        out.update(d for d, t in enumerate(s.times) if t > as_of)
    if kind == "conversation":
        out |= _memory_docs(index)
    elif kind == "memory":
        out |= _derived(index)["conversation"]
    return out




def _top(ranker: Ranker, lists: list[tuple[Any, Any]], excluded: set[int], s: Any,
         limit: int) -> list[tuple[ScoreBreakdown, int]]:
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
    lengths, times = s.lengths, s.times
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
               -time if not math.isnan(time) else math.inf, s.rids[doc])
        scored.append((key, breakdown, doc))
    scored.sort(key=lambda item: item[0])
    return [(breakdown, doc) for _, breakdown, doc in scored[:limit]]


def _hit(index: SearchIndex, rank: int, data: dict[str, Any], breakdown: ScoreBreakdown,
         desk_id: str, dirty: set[str]) -> RecallHit:
    provenance = dict(data["provenance"])
    if data["kind"] == "memory":
        # the commit of the file's last change; `uncommitted` says the work tree differs from it
        provenance["commit"] = _last_commit(index, provenance["path"])
        provenance["uncommitted"] = provenance["path"] in dirty
    scope = {"desk_id": desk_id, "memory_kind": data["kind"], "type": data["type"]}
    return RecallHit(rank, data["rid"], snippet(data["text"], breakdown.matched_terms), scope,
                     provenance, breakdown)


def _last_commit(index: SearchIndex, path: str) -> str | None:
    commits = index.desk.git.log([path], limit=1)
    return commits[0].sha if commits else None


def snippet(text: str, matched: Sequence[str], width: int = SNIPPET_CHARS) -> str:
    """About `width` characters of `text` around the first matched term, whitespace folded."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    folded = flat.casefold()
    found = [p for p in (folded.find(t) for t in matched) if p >= 0]
    start = max(0, min(found) - width // 4) if found else 0
    start = min(start, len(flat) - width)
    piece = flat[start:start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(flat) else "")


def _attr(value: object) -> str:
    text = "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    return '"' + _escape(text).replace('"', "&quot;") + '"'


def _escape(text: str) -> str:
    """XML text: `&`, `<`, `>` escaped and control characters (never valid XML) dropped."""
    text = "".join(ch for ch in text if ch in "\t\n" or ord(ch) >= 32)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render_xml(result: RecallResult) -> str:
    """Seed 001's `<recalled_context>`; empty string when there are no hits."""
    if not result.hits:
        return ""
    q = result.query
    lines = [f"<recalled_context query_id={_attr(q.query_id)} normalized_query={_attr(q.normalized_text)}"
             f" desk_id={_attr(result.hits[0].scope['desk_id'])}>"]
    for hit in result.hits:
        b = hit.score_breakdown
        lines.append(f"  <hit rank=\"{hit.rank}\" id={_attr(hit.id)} desk_id={_attr(hit.scope['desk_id'])}"
                     f" memory_kind={_attr(hit.scope['memory_kind'])} type={_attr(hit.scope['type'])}>")
        contrib = " ".join(f"{k}_contribution=\"{v:.6f}\"" for k, v in b.contributions.items())
        lines.append(f"    <score total=\"{b.total:.6f}\" lexical_coverage=\"{b.lexical_coverage:.6f}\""
                     f" recency=\"{b.recency:.6f}\" {contrib}"
                     f" matched_terms={_attr(' '.join(b.matched_terms))}/>")
        prov = " ".join(f"{k}={_attr(v)}" for k, v in hit.provenance.items() if k != "meta")
        meta = hit.provenance.get("meta") or {}
        if meta:
            lines.append(f"    <provenance {prov}>")
            lines += [f"      <meta key={_attr(k)} value={_attr(v)}/>" for k, v in sorted(meta.items())]
            lines.append("    </provenance>")
        else:
            lines.append(f"    <provenance {prov}/>")
        lines.append(f"    <snippet>{_escape(hit.snippet)}</snippet>")
        lines.append("  </hit>")
    lines.append("</recalled_context>")
    return "\n".join(lines) + "\n"


def render_text(result: RecallResult) -> str:
    """Human output: one block per hit."""
    if not result.hits:
        return (f"no hits ({result.empty_reason}); searched {result.searched_records} records")
    lines = []
    for hit in result.hits:
        where = hit.provenance.get("path") or f"{hit.provenance.get('file')}:{hit.provenance.get('line')}"
        lines.append(f"{hit.rank}. {hit.id}  score {hit.score_breakdown.total:.3f}  ({where})")
        lines.append(f"   {hit.snippet}")
    lines.append(f"searched {result.searched_records} records, {result.candidate_records} candidates")
    return "\n".join(lines)


__all__ = ["KIND_NAMES", "RecallQuery", "RecallHit", "RecallResult", "Ranker", "normalize_query",
           "recall", "search", "render_xml", "render_text", "snippet"]
