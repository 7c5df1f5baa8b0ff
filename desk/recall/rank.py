"""Stage 3 and 4 of recall: the explainable score and the exact, pruned top-k.

The default ranker (`context_top`, issue 16) is BM25F over what was said and the speaker/meta
field, plus what the neighbouring turns said in the same session (the question a turn answers
counting more, term by term when it states something a reply can echo), the query terms a turn
lacks as its session holds them (multi-hop), a share for "when" questions and a little recency; its parameters
(`ContextParams`) were chosen on bench/retrieval's seed 1 and are reported on seed 2
(docs/recall.md). The previous default, `coverage`
(`0.85 * IDF-weighted coverage + 0.10 * term-frequency saturation + 0.05 * recency`), docs/design.md
§8.1's `seed` formula (`0.85 * coverage + 0.15 * recency`) and plain `bm25` stay selectable as
baselines (`Ranker`, with MaxScore pruning). Recency halves every 30 days before `as_of`. Each
breakdown carries its weights and contributions, and the contributions sum to the total.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

HALF_LIFE_DAYS = 30.0
K1, B = 1.2, 0.75
DEFAULT_WEIGHTS = {"coverage": 0.85, "frequency": 0.10, "recency": 0.05}
SEED_WEIGHTS = {"lexical": 0.85, "recency": 0.15}
RidsOf = Callable[[Iterable[int]], Mapping[int, str]]  # record numbers -> their ids (one look-up)


@dataclass(frozen=True, slots=True)
class ScoreBreakdown:
    """How a hit's score was made: the matched terms, each component and its weighted contribution."""

    matched_terms: tuple[str, ...]
    query_term_count: int
    lexical_coverage: float
    recency: float
    weights: dict[str, float]
    contributions: dict[str, float]
    total: float
    # query terms the record lacks that the question it answers or its session supplied (default ranker)
    session_terms: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"matched_terms": list(self.matched_terms), "query_term_count": self.query_term_count,
                "lexical_coverage": self.lexical_coverage, "recency": self.recency,
                "session_terms": list(self.session_terms),
                "weights": self.weights, "contributions": self.contributions, "total": self.total}


class Ranker:
    """Stage 3: the score of one record from its term frequencies, and per-term upper bounds."""

    def __init__(self, name: str, terms: Sequence[str], df: Sequence[int], n_docs: int,
                 avg_len: float, as_of: float) -> None:
        self.name, self.terms, self.as_of = name, tuple(terms), as_of
        self.idf = [math.log(1 + (n_docs - d + 0.5) / (d + 0.5)) for d in df]
        self.idf_sum = sum(self.idf) or 1.0
        self.avg_len = avg_len or 1.0
        self.weights = {"coverage": DEFAULT_WEIGHTS, "seed": SEED_WEIGHTS, "bm25": {"bm25": 1.0}}[name]
        m = len(terms)
        # Each matched term adds `flat + slope * tf / (tf + norm(length))`; `bounds` are the most
        # one term can add (tf / (tf + norm) < 1), which is what MaxScore pruning needs.
        if name == "coverage":
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
        return math.pow(0.5, age_days / HALF_LIFE_DAYS)

    def score(self, tfs: Sequence[int], length: int, time: float) -> ScoreBreakdown:
        matched = tuple(t for t, tf in zip(self.terms, tfs) if tf)
        coverage = len(matched) / len(self.terms)
        recency = self.recency(time)
        norm = K1 * (1 - B + B * length / self.avg_len)
        sat = [tf * (K1 + 1) / (tf + norm) if tf else 0.0 for tf in tfs]
        if self.name == "coverage":
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
                limit: int, rids_of: RidsOf) -> list[tuple[ScoreBreakdown, int]]:
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
        breakdown = ranker.score(tfs_of, lengths[doc], times[doc])
        scored.append((_partial_key(breakdown, times[doc]), breakdown, doc))
    return stable_top(scored, limit, rids_of)


def _partial_key(breakdown: ScoreBreakdown, time: float) -> tuple[float, float, float]:
    """The stable rank's key but the record id: total desc, plain coverage desc, time desc."""
    return -breakdown.total, -breakdown.lexical_coverage, -time if not math.isnan(time) else math.inf


def stable_top(scored: list[tuple[tuple[float, float, float], Any, int]], limit: int,
               rids_of: RidsOf) -> list[tuple[Any, int]]:
    """The first `limit` of `scored` ((partial key, breakdown, record number) each) in the stable
    rank's order: the partial key, then the record id (`rids_of`), which only orders records whose
    partial keys are equal. So the ids are looked up, in one query, only for the records among
    the first `limit` (and those tied with the last of them) that tie with another."""
    scored.sort(key=lambda item: item[0])
    if len(scored) > limit:
        last = scored[limit - 1][0]
        scored = [item for item in scored if item[0] <= last]
    ties = [doc for i, (key, _, doc) in enumerate(scored)
            if (i and scored[i - 1][0] == key) or (i + 1 < len(scored) and scored[i + 1][0] == key)]
    rids = rids_of(ties) if ties else {}
    scored.sort(key=lambda item: (item[0], rids.get(item[2], "")))
    return [(breakdown, doc) for _, breakdown, doc in scored[:limit]]


# -- the default ranker: BM25 over two fields, in conversational context --------------------------

@dataclass
class ContextParams:
    """The default ranker's parameters, chosen on the tuning splits (seed 1) of both benchmarks,
    bench/retrieval (long two-person conversations) and bench/bench_recall.py --quality (project
    chats), and reported on their seed 2; docs/recall.md has the figures of each step.

    Mutable, with a `__dict__`: bench/retrieval's parameter search sets its attributes and copies
    it with `replace`."""

    k1: float = 0.6
    b: float = 0.2
    field: float = 1.0  # BM25F: a speaker/meta occurrence's weight against one in what was said (0: off)
    context: float = 0.1  # what each neighbour in the same session said (its own score but the field), times this
    # instead of `context`: what the question a turn answers said (the turn before it, when it ends
    # with a question mark); 1: a bare question and its answer are one exchange, the fact in the answer
    question: float = 1.0
    # a query term the record lacks: this times the best said score of that term in another turn of
    # its session, summed over such terms and capped at the record's own score (multi-hop)
    session: float = 0.1
    time: float = 0.0  # a "when" question: the record's own score times this when it names a time
    recency: float = 0.05  # the record's own score times this times its recency (halves every 30 days)

    def replace(self, **changes: float) -> ContextParams:
        """A copy with `changes`."""
        return replace(self, **changes)


CONTEXT_PARAMS = ContextParams()


@dataclass(frozen=True, slots=True)
class ContextQuery:
    """What the default ranker needs of one query: its terms and their postings in each field."""

    terms: tuple[str, ...]
    content: list[tuple[Any, Any]]  # per term: (record numbers, tfs) of what was said
    side: list[tuple[Any, Any]]  # per term: the speaker/meta field's postings
    timed: Any  # record numbers whose text names a time (sorted), or None when not a "when" question
    asks: Any = ()  # record numbers of conversation turns that end with a question (sorted)
    states: Any = ()  # those of them that say something before they ask (sorted)


def _idf(df: int, n: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


class _Own:
    """Own scores (BM25F over what was said and the speaker/meta field) of records: every
    candidate's from one pass over the postings (`fill`), any other record's by lookups in them.

    BM25F: per query term, a record's pseudo-frequency is `tf_said / (1 − b + b·len/avg) +
    field · tf_speaker_meta`, saturated once (`t·(k1+1) / (t + k1)`) and weighted by one IDF
    over the records holding the term in either field. So a speaker's name, which half the
    turns carry in the speaker field, weighs little also where the other person says it
    ("Hi Mara!"), instead of counting as a rare word of what was said. Each term's score is
    split between `content` and `field` by the share of its pseudo-frequency from each.
    """

    def __init__(self, q: ContextQuery, columns: Any, excluded: set[int], n_docs: int, avg_len: float,
                 p: ContextParams) -> None:
        self.q, self.lengths, self.dead, self.excluded = q, columns.lengths, columns.dead, excluded
        self.n_docs, self.k1, self.field = n_docs, p.k1, p.field
        self.flat, self.slope = 1 - p.b, p.b / (avg_len or 1.0)  # length normalisation of what was said
        self.content: dict[int, float] = {}
        self.side: dict[int, float] = {}
        self.total: dict[int, float] = {}  # content + side of every candidate, excluded ones left out
        # per term: each record's score of it in what was said (0 when only its speaker/meta holds it)
        self.cols: list[dict[int, float]] = [{} for _ in q.terms]

    def fill(self) -> dict[int, float]:
        """One pass over every posting: the own score of every candidate."""
        lengths, flat, slope, k1, field, dead = self.lengths, self.flat, self.slope, self.k1, self.field, self.dead
        content, side = self.content, self.side
        for col, (said_ids, said_tfs), (side_ids, side_tfs) in zip(self.cols, self.q.content, self.q.side):
            if not field or not len(side_ids):  # the usual term: said only
                df = len(said_ids) - (sum(1 for doc in dead if _contains_id(said_ids, doc)) if dead else 0)
                if df <= 0:
                    continue
                w = _idf(df, self.n_docs) * (k1 + 1)
                base, scale, get = k1 * flat, k1 * slope, content.get
                for doc, tf in zip(said_ids, said_tfs):
                    col[doc] = v = w * tf / (tf + base + scale * lengths[doc])
                    content[doc] = get(doc, 0.0) + v
                continue
            said = {doc: tf / (flat + slope * lengths[doc]) for doc, tf in zip(said_ids, said_tfs)}
            named = {doc: field * tf for doc, tf in zip(side_ids, side_tfs)} if field else {}
            df = len(said) + sum(1 for doc in named if doc not in said)
            if dead:
                df -= sum(1 for doc in dead if doc in said or doc in named)
            if df <= 0:
                continue
            w = _idf(df, self.n_docs) * (k1 + 1)
            for doc, c in said.items():
                s = named.pop(doc, 0.0)
                t = c + s
                v = w * t / (t + k1)
                col[doc] = v * c / t
                content[doc] = content.get(doc, 0.0) + v * c / t
                if s:
                    side[doc] = side.get(doc, 0.0) + v * s / t
            for doc, s in named.items():
                col[doc] = 0.0  # the record holds the term, but only in who said it: nothing to lend
                side[doc] = side.get(doc, 0.0) + w * s / (s + k1)
        total = dict(content)
        for doc, v in side.items():
            total[doc] = total.get(doc, 0.0) + v
        excluded = self.excluded
        for doc in [d for d in total if d in excluded] if len(total) < len(excluded) else excluded & total.keys():
            del total[doc]
        self.total = total
        return total

    def __call__(self, doc: int) -> float:
        return self.total.get(doc, 0.0)

    def said(self, doc: int) -> float:
        """The part of `doc`'s own score from what was said: what a neighbour or its session may lend
        (who said a turn is that turn's, not its answer's or its session's)."""
        return self.content.get(doc, 0.0) if doc in self.total else 0.0

    def session_best(self, wanted: set[int], sessions: Any) -> dict[int, list[float]]:
        """Per session in `wanted`: each query term's best said score among its turns."""
        best: dict[int, list[float]] = {}
        for i, col in enumerate(self.cols):
            for doc, v in col.items():
                if sessions[doc] in wanted and doc not in self.excluded:
                    row = best.setdefault(sessions[doc], [0.0] * len(self.cols))
                    row[i] = max(row[i], v)
        return best


def context_top(q: ContextQuery, columns: Any, excluded: set[int], n_docs: int, avg_len: float,
                as_of: float, limit: int, rids_of: RidsOf,
                params: ContextParams = CONTEXT_PARAMS) -> list[tuple[ScoreBreakdown, int]]:
    """The default ranker's exact top `limit`: one pass over the query's postings for the own
    scores, then only the strong records and their neighbours scored in full (below).

    A record's own score is BM25F over what was said (k1, b, length-normalised) and its speaker
    and searchable meta values (`field` times their frequency, no length normalisation: a name or a
    caption), `_Own`; a neighbour or the session lends only what it said (`_Own.said`), never who
    said it. Then each record in a session gets `context` times the said score of the
    turn before and of the turn after it in the same session, except that the turn before counts
    `question` times when it ends with a question (the question this turn answers): an answer
    that shares no word with the query ("Yes! We named her Biscuit.") is found through the
    question that prompted it ("Did you end up getting that dog?"). When the question first
    states something ("I got pre-approved for $350,000. What should I check?"), an answer that
    says a query term too repeats it (an echo: "Congrats on your pre-approval!"): on such a term
    the question gets `question` times the answer's score and the answer `context` times the
    question's, so the turn that states a fact ranks above a reply that repeats it; the answer
    still borrows the terms it lacks. `session` lends a turn, for each query term it
    lacks, that term's best said score in another turn of its session (a query whose terms are
    spread over two turns), capped at the turn's own score. A "when" question adds `time`
    times the own score of a record that names a time; `recency` times the own score times the
    recency. The contributions sum to the total.
    """
    p = params
    own = _Own(q, columns, excluded, n_docs, avg_len, p)
    scores = own.fill()
    if not scores:
        return []
    times, sessions = columns.times, columns.sessions
    timed = q.timed if q.timed is not None and p.time else None
    # Only the strong records (own score >= tau), their neighbours and the candidates that state
    # and ask are scored in full. Any other record's own score and its neighbours' are below tau:
    # only the turn before can lend at `question` weight (when it asks), the turn after lends at
    # `context` weight (at `question` only to a turn that states and asks, on terms it says too),
    # and what its session lends is capped at its own score: its total is below `tau * slack`.
    # The `limit` best own scores are strong with totals of at least `kth`, their smallest own
    # score: with `tau * slack < kth`, nothing outside can enter the top `limit`.
    own_part = 1 + p.session + (p.time if timed is not None else 0.0) + p.recency
    lend = max(p.context, p.question)
    slack = own_part + lend + p.context
    kth = heapq.nlargest(limit, scores.values())[-1] if len(scores) > limit else 0.0
    tau = kth / slack * (1 - 1e-9)
    strong = [d for d, v in scores.items() if v >= tau] if tau > 0 else list(scores)
    reach = set(strong)
    talk = bool(p.context or p.question or p.session)
    if talk:
        for doc in strong:
            if sessions[doc]:
                reach.update(_neighbours(columns, doc))
        reach.update(d for d in q.states if d in scores)
        reach -= excluded
    best = own.session_best({sessions[d] for d in reach if scores.get(d)} - {0}, sessions) if p.session else {}
    # Each reached record's total is at most its own score times `own_part` plus `lend` times
    # what its neighbours said; they are scored in full in that bound's order, until a bound is
    # below the `limit`-th total found: no later one can enter.
    bounds = sorted(((scores.get(d, 0.0) * own_part + lend * sum(own.said(n) for n in _neighbours(columns, d))
                      if talk and sessions[d] else scores.get(d, 0.0) * own_part, d) for d in reach), reverse=True)
    totals: dict[int, float] = {}
    found: list[float] = []  # a heap of the `limit` best totals so far
    for bound, doc in bounds:
        if len(found) == limit and bound < found[0] - 1e-6:
            break
        mine = scores.get(doc, 0.0)
        total = mine
        if mine:
            if timed is not None and _contains_id(timed, doc):
                total += p.time * mine
            if p.recency:
                total += p.recency * mine * _recency(times[doc], as_of)
        if talk and sessions[doc]:
            total += sum(_talk(columns, doc, q, p, own, best)[:3])
        if total > 0:
            totals[doc] = total
            (heapq.heappush if len(found) < limit else heapq.heappushpop)(found, total)
    if not totals:
        return []
    cut = found[0] - 1e-6  # the `limit`-th best total (or the smallest, when fewer)
    scored = []
    for doc in (d for d, v in totals.items() if v >= cut):
        breakdown = _context_breakdown(q, doc, own, columns, p, as_of, best)
        scored.append((_partial_key(breakdown, times[doc]), breakdown, doc))
    return stable_top(scored, limit, rids_of)


NEIGHBOUR_WINDOW = 16  # records looked at on each side for the turn before and after


def _neighbours(columns: Any, doc: int) -> list[int]:
    """The conversation turns just before and after `doc` in its session: the nearest live
    conversation record on each side in the order records were read (archive files in name
    order, lines in file order), when it is of the same session. Memory records and tombstones
    in between are skipped, so an edited memory or a removed file changes no neighbour."""
    sessions, kinds, dead = columns.sessions, columns.kinds, columns.dead
    session, count, out = sessions[doc], len(sessions), []
    for step in (-1, 1):
        n = doc + step
        if 0 <= n < count and kinds[n] and n not in dead:  # the usual case: the next record read
            if sessions[n] == session:
                out.append(n)
            continue
        while 0 <= n < count and abs(n - doc) <= NEIGHBOUR_WINDOW:
            if kinds[n] != 0 and n not in dead:  # the first live conversation record on this side
                if sessions[n] == session:
                    out.append(n)
                break
            n += step
    return out


def _talk(columns: Any, doc: int, q: ContextQuery, p: ContextParams, own: _Own, best: dict[int, list[float]],
          explain: bool = False) -> tuple[float, float, float, tuple[str, ...]]:
    """(context, question, session, the query terms lent) of `doc`, a turn of a session.

    `question` times the said score of the turn before it when that turn ends with a question
    (the one `doc` answers); when that question first states something, only on the query terms
    `doc` lacks, and when `doc` is such a question, `question` times its answer's said score on
    the terms both say (the answer repeats them); `context` times every other neighbour's own
    score, term by term; `session` times the session's best said score of each term `doc` lacks,
    at most `doc`'s own score. The lent terms are named only when `explain` (the breakdown)."""
    cols, mine = own.cols, own(doc)  # `doc` is no excluded record: it holds a term where a column has it
    context = question = 0.0
    lent: set[int] = set()
    for n in _neighbours(columns, doc):
        theirs = own.said(n)
        if not theirs:  # says nothing of the query, or excluded
            continue
        if n < doc and _contains_id(q.asks, n):  # the question `doc` answers
            if not _contains_id(q.states, n):  # a bare question: all of it
                question += p.question * theirs
                if explain:
                    lent.update(i for i, col in enumerate(cols) if col.get(n) and doc not in col)
                continue
            for i, col in enumerate(cols):  # it stated something: `doc` borrows only what it lacks
                v = col.get(n, 0.0)
                if doc in col:
                    context += p.context * v
                elif v:
                    question += p.question * v
                    lent.add(i)
        elif n > doc and _contains_id(q.states, doc):  # `doc` states and asks: its answer's repeats confirm it
            for col in cols:
                v = col.get(n, 0.0)
                if doc in col:
                    question += p.question * v
                else:
                    context += p.context * v
        else:
            context += p.context * theirs
    session, row = 0.0, best.get(columns.sessions[doc])
    if row is not None and mine:
        gaps = [i for i, (r, col) in enumerate(zip(row, cols)) if r and doc not in col]
        session = p.session * min(mine, sum(row[i] for i in gaps))
        lent.update(gaps)
    return context, question, session, tuple(t for i, t in enumerate(q.terms) if i in lent)


def _contains_id(ids: Any, doc: int) -> bool:
    k = bisect.bisect_left(ids, doc)
    return k < len(ids) and ids[k] == doc


def _recency(time: float, as_of: float) -> float:
    if math.isnan(time):
        return 0.0
    return math.pow(0.5, max(0.0, as_of - time) / 86400.0 / HALF_LIFE_DAYS)


def _context_breakdown(q: ContextQuery, doc: int, own: _Own, columns: Any, p: ContextParams,
                       as_of: float, best: dict[int, list[float]]) -> ScoreBreakdown:
    matched = tuple(t for t, (ci, _), (si, _) in zip(q.terms, q.content, q.side)
                    if _contains_id(ci, doc) or _contains_id(si, doc))
    mine, content = own(doc), own.said(doc)  # 0 for an excluded or non-candidate record
    recency = _recency(columns.times[doc], as_of)
    timed = q.timed is not None and p.time and _contains_id(q.timed, doc)
    context, question, session, lent = (_talk(columns, doc, q, p, own, best, explain=True)
                                        if (p.context or p.question or p.session) and columns.sessions[doc]
                                        else (0.0, 0.0, 0.0, ()))
    parts = {"content": content, "field": mine - content, "context": context, "question": question, "session": session,
             "time": p.time * mine if timed else 0.0,
             "recency": p.recency * mine * recency}
    contributions = {k: round(v, 6) for k, v in parts.items()}
    weights = {"content": 1.0, "field": p.field, "context": p.context, "question": p.question,
               "session": p.session, "time": p.time, "recency": p.recency}
    return ScoreBreakdown(matched, len(q.terms), round(len(matched) / max(len(q.terms), 1), 6), round(recency, 6),
                          weights, contributions, round(sum(contributions.values()), 6), lent)
