"""What recall returns (`RecallResult`): the query as it ran and its ranked hits."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from desk.recall.rank import ScoreBreakdown

if TYPE_CHECKING:
    from desk.memory.past import Past
    from desk.recall.hybrid import HybridBreakdown


# NamedTuples: as immutable and typed as frozen dataclasses, cheaper to create (bench/README.md).
class RecallQuery(NamedTuple):
    """The query as recall ran it: its terms, limit, kind, as-of time and ranker."""

    query_id: str
    text: str
    normalized_text: str
    terms: tuple[str, ...]
    limit: int
    kind: str
    as_of: str
    ranker: str
    embedder: str | None = None  # hybrid recall's dense retriever (`name/dimension`); None: lexical only

    def to_json(self) -> dict[str, Any]:
        out = {**self._asdict(), "terms": list(self.terms)}
        if self.embedder is None:
            del out["embedder"]
        return out


class RecallHit(NamedTuple):
    """One ranked hit: its snippet, scope, provenance and score breakdown."""

    rank: int
    id: str
    snippet: str
    scope: dict[str, Any]
    provenance: dict[str, Any]
    score_breakdown: ScoreBreakdown | HybridBreakdown

    def to_json(self) -> dict[str, Any]:
        return {**self._asdict(), "score_breakdown": self.score_breakdown.to_json()}


class RecallResult(NamedTuple):
    """What recall returns: the query, its hits, and how many records it searched."""

    query: RecallQuery
    hits: tuple[RecallHit, ...]
    searched_records: int
    candidate_records: int
    empty_reason: str | None
    past: Past | None = None  # `--as-of`: the commit whose memories were searched (docs/time.md)

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query.to_json(), "hits": [h.to_json() for h in self.hits],
                "searched_records": self.searched_records, "candidate_records": self.candidate_records,
                "empty_reason": self.empty_reason,
                **({"as_of_commit": self.past.to_json()} if self.past is not None else {})}
