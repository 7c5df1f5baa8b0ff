"""`desk recall`: docs/design.md §8.1's five stages over memory files and archived conversation records.

normalize (`normalize_query`: refused queries exit 2) -> candidate (every record sharing a term
with the query, from desk.recall.search_cache's posting lists; never an expired memory or a record
after `as_of`) -> score (desk.recall.rank: an explainable sum; `--ranker` picks a baseline) ->
stable rank (total, coverage, time desc, id asc; MaxScore pruning skips what cannot reach the top)
-> render (desk.recall.render). Read-only: only its cache in .git/ is written, never a commit.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from desk.errors import DeskError, UsageError, quoted
from desk.layout import DeskFolder, memory_name, project_problem
from desk.recall.hits import RecallHit, RecallQuery, RecallResult
from desk.recall.rank import ContextQuery, Ranker, ScoreBreakdown, context_top, top_records
from desk.recall.records import PROJECTS_TAG, project_tag
from desk.recall.render import snippet
from desk.recall.search_cache import Progress, SearchCache
from desk.storage.git import blob_sha
from desk.storage.hashing import sha256_hex
from desk.text.normalize import normalize
from desk.text.terms import ASK_TAG, FIELD_MARK, STATES_TAG, TIME_TAG, asks_when, query_terms
from desk.text.times import format_time, parse_time, utc_now
from desk.vocabulary import RANKERS, RECALL_KINDS

if TYPE_CHECKING:
    from desk.gate.mirror import Committed
    from desk.memory.past import Past
    from desk.recall.hybrid import DenseIndex, HybridBreakdown
    from desk.recall.past_view import PastView

LIMIT_MIN, LIMIT_MAX = 1, 10


def parse_as_of(value: dt.datetime | str | None, now: dt.datetime | None = None) -> dt.datetime:
    """`--as-of` as every command reads a time; None is `now` (default: the current time) to the
    end of its second, so a record appended earlier in the same second is found."""
    if value is None:
        return (now or utc_now()).replace(microsecond=999_999)
    return parse_time(value, "--as-of")


def normalize_query(text: str, *, limit: int = 5, kind: str = "all",
                    as_of: dt.datetime | str | None = None, ranker: str = "default",
                    embedder: str | None = None) -> RecallQuery:
    """Stage 1: validate and normalise the query; a refused query raises UsageError (exit 2)."""
    if not LIMIT_MIN <= limit <= LIMIT_MAX:
        raise UsageError(f"--limit must be between {LIMIT_MIN} and {LIMIT_MAX}, not {limit}",
                         hint=f"ask for at most {LIMIT_MAX} hits, e.g. `-n 5`")
    if kind not in RECALL_KINDS:
        raise UsageError(f"--kind must be one of {', '.join(RECALL_KINDS)}, not {kind!r}")
    if ranker not in RANKERS:
        raise UsageError(f"--ranker must be one of {', '.join(RANKERS)}, not {ranker!r}")
    readable = " ".join(text.split())
    if not readable:
        raise UsageError("the query is empty", hint="say what to look for, e.g. `desk recall \"report style\"`")
    terms = tuple(query_terms(readable, characters=ranker == "default"))  # the baselines as they were
    if not terms:
        raise UsageError(f"the query {readable!r} has no searchable words (only punctuation or symbols)",
                         hint="search for words, e.g. `desk recall \"report style\"`")
    moment = parse_as_of(as_of)
    as_of_text = format_time(moment, "microsecond" if moment.microsecond else "second")
    normalized = normalize(readable)
    parts = [normalized, str(limit), kind, as_of_text, ranker] + ([embedder] if embedder is not None else [])
    digest = sha256_hex("\0".join(parts).encode())
    return RecallQuery("query-" + digest[:16], readable, normalized, terms, limit, kind,
                       as_of_text, ranker, embedder)


def recall(desk: DeskFolder, text: str, *, limit: int = 5, kind: str = "all",
           as_of: dt.datetime | str | None = None, ranker: str = "default",
           cache: SearchCache | None = None, progress: Progress | None = None,
           project: str | None = None, all_scopes: bool = False,
           dense: DenseIndex | None = None, past: Past | None = None) -> RecallResult:
    """Run the five stages (a long-lived `cache` stays warm across calls). Memories searched: the
    desk-wide ones and `project`'s, or every project's with `all_scopes`. `dense`: fused with a
    dense ranking (desk.recall.hybrid). `past` (`--as-of`): the memories as committed and valid then."""
    query = normalize_query(text, limit=limit, kind=kind, as_of=as_of, ranker=ranker,
                            embedder=dense.key if dense is not None else None)
    if project is not None:
        problem = project_problem(project)
        if problem:
            raise UsageError(f"--project {quoted(project)}: {problem}")
        if all_scopes:
            raise UsageError("give --all-scopes or --project, not both: --all-scopes already searches "
                             "every project", hint="drop --project, or --all-scopes to search one project")
    own = cache is None
    cache = cache or SearchCache(desk)
    try:
        if past is not None and past.commit is None:
            return RecallResult(query, (), 0, 0, "before_first_commit", past)
        cache.refresh(progress, _prepare_for_memory_hits)
        if past is not None:
            from desk.recall.past_view import PastView

            if dense is not None:
                raise UsageError("--as-of and --embedder cannot be combined yet", hint="leave --embedder out")
            return search(PastView(cache, past), query, desk.desk_id, project=project,
                          all_scopes=all_scopes)._replace(past=past)
        return search(cache, query, desk.desk_id, project=project, all_scopes=all_scopes, dense=dense)
    finally:
        if own:
            cache.close()


def _prepare_for_memory_hits(cache: SearchCache) -> None:
    """Import the HEAD mirror while git answers the refresh, when the cache holds memories (a
    memory hit needs it after the ranking)."""
    if cache.holds_memories():
        import desk.gate.mirror  # noqa: F401


def search(cache: SearchCache | PastView, query: RecallQuery, desk_id: str, *, project: str | None = None,
           all_scopes: bool = False, dense: DenseIndex | None = None) -> RecallResult:
    """Stages 2 to 4 over an up-to-date search cache, then the hits' snippets and provenance."""
    columns = cache.columns
    as_of = parse_as_of(query.as_of).timestamp()
    lists = [cache.postings(t) for t in query.terms]
    side = [cache.postings(FIELD_MARK + t) for t in query.terms] if query.ranker == "default" else []
    excluded = _excluded(cache, query.kind, as_of)
    if not all_scopes:  # other projects' memories are never candidates
        other = set(cache.postings(PROJECTS_TAG)[0])
        if project is not None:
            other -= set(cache.postings(project_tag(project))[0])
        excluded |= other
    searched = columns.count - len(excluded)
    union = set().union(*(ids for ids, _ in lists + side))
    candidates = len(union) - len(union & excluded)
    reason = "no_records" if not searched else "no_matching_terms"
    if not candidates and (dense is None or not searched):
        return RecallResult(query, (), searched, 0, reason)
    alive = columns.count - len(columns.dead)
    avg_len = columns.sum_len / max(alive, 1)

    def lexical_top(limit: int) -> Sequence[tuple[ScoreBreakdown, int]]:
        if query.ranker == "default":
            timed = cache.postings(TIME_TAG)[0] if asks_when(query.text) else None
            asks, states = cache.postings(ASK_TAG)[0], cache.postings(STATES_TAG)[0]
            return context_top(ContextQuery(query.terms, lists, side, timed, asks, states), columns,
                               excluded, alive, avg_len, as_of, limit, cache.rids)
        dfs = [len(ids) - sum(1 for d in columns.dead if _contains(ids, d)) for ids, _ in lists]
        ranker = Ranker(query.ranker, query.terms, dfs, alive, avg_len, as_of)
        return top_records(ranker, lists, excluded, columns, limit, cache.rids)

    if dense is None:
        scored: Sequence[tuple[ScoreBreakdown | HybridBreakdown, int]] = lexical_top(query.limit)
    else:  # hybrid recall: the dense retriever's ranking fused with this one
        from desk.recall.hybrid import hybrid_top

        assert isinstance(cache, SearchCache)  # `recall` never fuses a read as of a time
        scored = hybrid_top(dense, cache, query.text, lexical_top, excluded, query.limit)
    if not scored:
        return RecallResult(query, (), searched, candidates, reason)
    found = [(breakdown, cache.record_data(doc)) for breakdown, doc in scored]
    names = [n for _, d in found if d["kind"] == "memory" and (n := memory_name(d["provenance"]["path"]))]
    in_projects = [d["provenance"]["path"] for _, d in found if d["kind"] == "memory" and "project" in d]
    committed: dict[str, Committed] = {}
    past: Past | None = getattr(cache, "past", None)  # as of a time: every memory is as its commit holds it
    if (names or in_projects) and past is None:
        from desk.gate.mirror import head_mirror, project_heads

        if names:
            # Each hit's last commit from the HEAD mirror: no git process per hit (docs/recall.md).
            with head_mirror(cache.desk) as mirror:
                committed = mirror.committed(names)
        if in_projects:  # a project memory's, from the project table beside the mirror
            with project_heads(cache.desk) as heads:
                committed.update(heads.committed(in_projects))
    hits = [_hit(cache.desk, rank, data, breakdown, desk_id, committed, as_of, past)
            for rank, (breakdown, data) in enumerate(found, 1)]
    return RecallResult(query, tuple(hits), searched, candidates, None)


def _contains(ids: Sequence[int], doc: int) -> bool:
    i = bisect.bisect_left(ids, doc)
    return i < len(ids) and ids[i] == doc


def _excluded(cache: SearchCache | PastView, kind: str, as_of: float) -> set[int]:
    """Records that can never be candidates: tombstoned, expired, after `as_of`, other kind."""
    columns = cache.columns
    out = set(columns.dead)
    out.update(d for d, at in columns.expires.items() if at <= as_of)
    if as_of < columns.max_time:
        out.update(d for d, t in enumerate(columns.times) if t > as_of)
    if kind == "conversation":
        out |= cache.memory_records()
    elif kind == "memory":
        out |= set(range(columns.count)) - cache.memory_records()
    return out


def _hit(desk: DeskFolder, rank: int, data: dict[str, Any], breakdown: ScoreBreakdown | HybridBreakdown,
         desk_id: str, committed: dict[str, Committed], as_of: float, past: Past | None = None) -> RecallHit:
    provenance = dict(data["provenance"])
    if "valid_to" in provenance:  # kept, and marked: a fact past its validity is no longer true
        provenance["no_longer_true"] = parse_time(provenance["valid_to"]).timestamp() <= as_of
    if data["kind"] == "memory" and past is not None:
        provenance.update(commit=past.commit, committed_at=past.to_json()["committed_at"], uncommitted=False)
    elif data["kind"] == "memory":
        # The commit of the file's last change at HEAD and its time; `uncommitted`: the work
        # tree's file is not the one HEAD holds.
        path = provenance["path"]
        at_head = committed.get(path if "project" in data else memory_name(path) or "")
        provenance["commit"] = at_head.commit if at_head else None
        provenance["committed_at"] = (format_time(dt.datetime.fromtimestamp(at_head.time, dt.timezone.utc))
                                      if at_head and at_head.time is not None else None)
        provenance["uncommitted"] = at_head is None or _work_tree_blob(desk, path) != at_head.blob
    scope = {"desk_id": desk_id, "memory_kind": data["kind"], "type": data["type"]}
    if "project" in data:
        scope["project"] = data["project"]
    return RecallHit(rank, data["rid"], snippet(data["text"], breakdown.matched_terms), scope,
                     provenance, breakdown)


def _work_tree_blob(desk: DeskFolder, path: str) -> str | None:
    try:
        return blob_sha(desk.read(path))
    except (OSError, DeskError):  # gone, or a symlink: never read through
        return None


__all__ = ["RecallQuery", "RecallHit", "RecallResult", "Ranker", "normalize_query", "parse_as_of",
           "recall", "search"]
