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
