"""The pruned ranking gives exactly the answer of an exhaustive scan, for every ranker."""

from __future__ import annotations

import json
import math
import random

import pytest

from desk.layout import DeskFolder
from desk.recall.search import normalize_query, search
from desk.recall.rank import Ranker
from desk.recall.search_cache import SearchCache

WORDS = ("orion maple kestrel database queue port server launch budget which what the for we did "
         "staging production alice bruno chen report weekly status 数据库 上线 预算 服务器 端口").split()


def _write_records(desk: DeskFolder, rng: random.Random, count: int) -> None:
    folder = desk.path(".system/archive")
    lines = []
    for i in range(count):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 14)))
        rec = {"id": f"e{i:05d}", "desk_id": desk.config.desk_id, "kind": rng.choice(["inbound", "outbound"]),
               "at": f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z",
               "content": text, "session": "s", "actor": None, "meta": {}, "payload": None, "prev": None,
               "recorded_at": "2026-11-29T00:00:00Z"}
        lines.append(json.dumps(rec, ensure_ascii=False, sort_keys=True))
    (folder / "2026-11-29.testclone.jsonl").write_text("\n".join(lines) + "\n", "utf-8")


def _exhaustive(cache: SearchCache, query_text: str, ranker: str, limit: int, as_of: str) -> list[str]:
    q = normalize_query(query_text, limit=limit, ranker=ranker, as_of=as_of)
    s = cache.columns
    lists = [cache.postings(t) for t in q.terms]
    alive = s.count - len(s.dead)
    r = Ranker(ranker, q.terms, [len(ids) for ids, _ in lists], alive, s.sum_len / alive,
               _ts(as_of))
    rows = []
    for doc in range(s.count):
        tfs = [dict(zip(ids, tf)).get(doc, 0) for ids, tf in lists]
        if not any(tfs):
            continue
        b = r.score(tfs, s.lengths[doc], s.times[doc])
        t = s.times[doc]
        rid = cache.rid(doc)
        rows.append(((-b.total, -b.lexical_coverage, -t if not math.isnan(t) else math.inf, rid), rid))
    rows.sort()
    return [rid for _, rid in rows[:limit]]


def _ts(as_of: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(as_of).timestamp()


@pytest.mark.parametrize("ranker", ["coverage", "seed", "bm25"])
def test_pruned_top_equals_exhaustive_scan(desk: DeskFolder, ranker: str) -> None:
    rng = random.Random(5)
    _write_records(desk, rng, 600)
    cache = SearchCache(desk)
    try:
        cache.refresh()
        as_of = "2026-12-01T00:00:00+00:00"
        for _ in range(40):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 7)))
            limit = rng.randint(1, 10)
            got = search(cache, normalize_query(text, limit=limit, ranker=ranker, as_of=as_of),
                         desk.config.desk_id)
            assert [h.id.removeprefix("event:") for h in got.hits] == \
                [rid.removeprefix("event:") for rid in _exhaustive(cache, text, ranker, limit, as_of)], text
    finally:
        cache.close()


def test_default_ranker_pool_gives_the_exhaustive_answer(desk: DeskFolder, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default ranker's MaxScore pool (own scores, then context) answers exactly like the
    plain pass over every posting, sessions, speakers and "when" questions included."""
    from desk.recall import rank

    rng = random.Random(11)
    folder = desk.path(".system/archive")
    lines = []
    for i in range(1500):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 14)))
        if rng.random() < 0.2:
            text += " yesterday"
        rec = {"id": f"e{i:05d}", "desk_id": desk.config.desk_id, "kind": rng.choice(["inbound", "outbound"]),
               "at": f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z",
               "content": text, "session": f"s{i // rng.randint(3, 12)}", "actor": rng.choice(["alice", "bruno"]),
               "meta": {}, "payload": None, "prev": None, "recorded_at": "2026-11-29T00:00:00Z"}
        lines.append(json.dumps(rec, ensure_ascii=False, sort_keys=True))
    (folder / "2026-11-29.testclone.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    cache = SearchCache(desk)
    pooled = 0
    real_pool = rank._own_pool

    def counting_pool(*args: object) -> tuple[set[int], float]:
        nonlocal pooled
        found = real_pool(*args)  # type: ignore[arg-type]
        pooled += found[1] > 0
        return found

    try:
        cache.refresh()
        as_of = "2026-12-01T00:00:00+00:00"
        queries = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) for _ in range(40)]
        queries += ["when did alice launch the server", "when was the 上线"]
        answers = {}
        for threshold in (10**9, 0):  # every query exhaustive, then every query through the pool
            monkeypatch.setattr(rank, "EXHAUSTIVE_BELOW", threshold)
            monkeypatch.setattr(rank, "POOL_MIN", 12)
            monkeypatch.setattr(rank, "_own_pool", counting_pool)
            answers[threshold] = [[(h.id, h.score_breakdown.to_json()) for h in
                                   search(cache, normalize_query(t, limit=1 + i % 10, as_of=as_of),
                                          desk.config.desk_id).hits] for i, t in enumerate(queries)]
        assert answers[0] == answers[10**9]
        assert pooled > 10  # the pool really pruned, in most queries
    finally:
        cache.close()
