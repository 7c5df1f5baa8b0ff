"""The search cache streams: bounded batches, chunked reads, and the same answers as a cold rebuild.

A refresh after a large import merges postings into the file batch by batch and reads archive
files chunk by chunk; none of that may change a single answer. Each test builds the cache two ways
(tiny batches and chunks, which force hundreds of merges and lines split across reads, against one
cold build with the defaults, or incrementally against from scratch) and compares everything a
query can see.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import desk.recall.search_cache as search_cache
from desk.archive.importing import import_events
from desk.archive.store import append_event, archive_files
from desk.layout import DeskFolder
from desk.memory.operations import remember
from desk.recall.records import text_terms
from desk.recall.search import recall
from desk.recall.search_cache import SearchCache

AS_OF = "2026-12-01T00:00:00Z"
WORDS = ("orion maple kestrel database queue port server launch budget which what the for we did "
         "staging production alice bruno chen report weekly status sqlite wal 数据库 上线 预算 服务器 端口 "
         "分层记忆 报告").split()
QUERIES = ["orion database", "数据库 上线", "weekly status report", "kestrel", "the", "分层记忆 sqlite",
           "budget for staging server"]


def _history(path: Path, seed: int, count: int, first: int = 0) -> Path:
    """A JSONL history of `count` events over a week: mostly conversation, some other kinds."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as handle:
        for i in range(first, first + count):
            at = dt.datetime(2026, 11, 20, tzinfo=dt.timezone.utc) + dt.timedelta(minutes=i * 7 % 10_000)
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 30)))
            event = {"kind": rng.choice(["inbound", "outbound", "inbound", "tool", "progress"]),
                     "at": at.strftime("%Y-%m-%dT%H:%M:%SZ"), "session": f"s{i % 13}",
                     "content": f"turn {i}: {words}" if i % 17 else "   "}
            handle.write(json.dumps(event, ensure_ascii=False) + "\n")
    return path


def _state(cache: SearchCache) -> dict[str, Any]:
    """Everything a query can see, keyed by record id rather than by record number."""
    s = cache.columns
    rid = {doc: cache.rid(doc) for doc in range(s.count) if doc not in s.dead}
    terms = [t for (t,) in cache._connect().execute("SELECT term FROM postings")]
    postings = {}
    for term in terms:
        ids, tfs = cache.postings(term)
        assert list(ids) == sorted(ids)  # merges append in record-number order
        live = sorted((rid[d], tf) for d, tf in zip(ids, tfs) if d in rid)
        if live:
            postings[term] = live
    records = {rid[d]: (cache.record_data(d), None if math.isnan(s.times[d]) else s.times[d], s.lengths[d],
                        s.kinds[d], s.expires.get(d)) for d in rid}
    return {"postings": postings, "records": records, "sum_len": s.sum_len, "alive": len(rid)}


def _answers(desk: DeskFolder, cache: SearchCache) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    return {(q, ranker, kind): [h.to_json() for h in recall(desk, q, cache=cache, as_of=AS_OF, limit=10,
                                                           ranker=ranker, kind=kind).hits]
            for q in QUERIES for ranker in ("default", "bm25") for kind in ("all", "conversation")}


def _cold(desk: DeskFolder) -> tuple[dict[str, Any], dict[tuple[str, str, str], list[dict[str, Any]]]]:
    for suffix in ("", "-wal", "-shm"):
        (desk.cache_dir / f"{search_cache.CACHE_FILE}{suffix}").unlink(missing_ok=True)
    cache = SearchCache(desk)
    try:
        cache.refresh()
        return _state(cache), _answers(desk, cache)
    finally:
        cache.close()


def _seed_memories(desk: DeskFolder) -> None:
    now = dt.datetime(2026, 11, 25, tzinfo=dt.timezone.utc)
    remember(desk, "db-choice", type="decision", description="Orion's database",
             body="We selected SQLite in WAL mode for Orion.", triggers=["database"], now=now)
    remember(desk, "report-style", type="preference", description="Report language",
             body="周报用中文，保持简短。", triggers=["report", "报告"], now=now)


def test_tiny_batches_and_chunks_build_the_same_cache_as_the_defaults(
        desk: DeskFolder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _seed_memories(desk)
    import_events(desk, _history(tmp_path / "h.jsonl", 1, 3000))
    expected_state, expected_answers = _cold(desk)
    assert expected_state["alive"] > 1500

    for suffix in ("", "-wal", "-shm"):
        (desk.cache_dir / f"{search_cache.CACHE_FILE}{suffix}").unlink(missing_ok=True)
    monkeypatch.setattr(search_cache, "READ_CHUNK", 257)  # most lines are longer: split across reads
    monkeypatch.setattr(search_cache, "DOCS_BATCH", 7)
    budget = 2000  # bytes: a merge every few records
    cache = SearchCache(desk, batch_bytes=budget)
    try:
        added = cache.refresh()
        stats = cache.last_refresh
        assert added == stats.records == expected_state["alive"]
        # Bounded: a batch is merged as soon as it reaches its budget, so it never holds more than
        # the budget plus one record's worth (at most 32 distinct terms, each a new rare term).
        one_record = 32 * (search_cache.POSTING_BYTES + search_cache.TERM_BYTES + search_cache.ARRAYS_BYTES)
        assert budget <= stats.most_bytes_held <= budget + one_record
        assert stats.merges >= 300
        assert _state(cache) == expected_state
        assert _answers(desk, cache) == expected_answers
    finally:
        cache.close()


def test_incremental_refreshes_after_imports_answer_like_a_cold_rebuild(desk: DeskFolder, tmp_path: Path) -> None:
    _seed_memories(desk)
    cache = SearchCache(desk, batch_bytes=20_000)
    try:
        for part in range(3):  # three imports into the same days' files, refreshed in between
            import_events(desk, _history(tmp_path / f"h{part}.jsonl", 10 + part, 700, first=part * 700))
            cache.refresh()
            append_event(desk, "inbound", f"kestrel launch part {part}", at="2026-11-21T08:00:00Z")
        path = desk.path("memory/db-choice.md")
        path.write_bytes(path.read_bytes().replace(b"SQLite", b"Postgres"))  # an uncommitted hand edit
        cache.refresh()
        incremental_state, incremental_answers = _state(cache), _answers(desk, cache)
    finally:
        cache.close()
    cold_state, cold_answers = _cold(desk)
    assert incremental_state == cold_state
    assert incremental_answers == cold_answers
    assert any(h["id"] == "memory:db-choice" for h in cold_answers[("orion database", "default", "all")])


def test_an_event_hit_points_at_its_own_archive_line(desk: DeskFolder, tmp_path: Path) -> None:
    import_events(desk, _history(tmp_path / "h.jsonl", 3, 400))
    cache = SearchCache(desk)
    lists: dict[str, dict[int, int]] = {}
    try:
        cache.refresh()
        for doc in range(cache.columns.count):
            data = cache.record_data(doc)
            prov = data["provenance"]
            raw = desk.path(prov["file"]).read_bytes()
            line = raw[prov["offset"]:raw.index(b"\n", prov["offset"])]
            assert raw[:prov["offset"]].count(b"\n") + 1 == prov["line"]
            rec = json.loads(line)
            assert data["rid"] == cache.rid(doc) == f"event:{rec['id']}" == f"event:{prov['event_id']}"
            assert data["kind"] == "conversation" and data["type"] == rec["kind"]
            assert data["text"] == rec["content"] and prov["at"] == rec["at"]
            for term, tf in Counter(text_terms(rec["content"])).items():
                if term not in lists:
                    ids, tfs = cache.postings(term)
                    lists[term] = dict(zip(ids, tfs))
                assert lists[term][doc] == min(tf, 255)
    finally:
        cache.close()


def test_progress_never_passes_the_total_when_a_rewritten_file_is_read_again(
        desk: DeskFolder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_cache, "READ_CHUNK", 4096)
    import_events(desk, _history(tmp_path / "h.jsonl", 4, 3000))
    cache = SearchCache(desk)
    try:
        cache.refresh()
        # rewrite one day's file (not a pure append): it is read again from its start
        first = archive_files(desk)[0]
        path = desk.path(first.rel)
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[:-2]) + lines[-1])
        import_events(desk, _history(tmp_path / "more.jsonl", 5, 2000, first=3000))
        calls: list[tuple[int, int]] = []
        cache.refresh(lambda done, total: calls.append((done, total)))
    finally:
        cache.close()
    total = calls[-1][1]
    assert calls[-1] == (total, total) and len(calls) > 2
    assert all(0 <= done <= total and t == total for done, t in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_a_cache_of_an_older_layout_is_rebuilt(desk: DeskFolder, tmp_path: Path) -> None:
    _seed_memories(desk)
    import_events(desk, _history(tmp_path / "h.jsonl", 6, 300))
    expected_state, expected_answers = _cold(desk)
    cache = SearchCache(desk)
    cache._connect().execute("UPDATE meta SET value=2 WHERE key='schema'")
    cache.close()
    cache = SearchCache(desk)
    try:
        assert cache.refresh() == expected_state["alive"]  # read again from the files
        assert _state(cache) == expected_state and _answers(desk, cache) == expected_answers
    finally:
        cache.close()


def test_a_cache_another_process_refreshed_answers_from_its_own_snapshot(desk: DeskFolder) -> None:
    """Two SearchCache objects stand for two processes: B's refresh adds records that A's loaded
    columns do not know; A's answers keep to its snapshot until A refreshes."""
    from desk.recall.search import normalize_query, search

    for i in range(5):
        append_event(desk, "inbound", f"kestrel note {i}", at=f"2026-11-2{i}T09:00:00Z")
    a, b = SearchCache(desk), SearchCache(desk)
    try:
        a.refresh()
        before = search(a, normalize_query("kestrel", limit=10, as_of=AS_OF), desk.desk_id)
        for i in range(5):
            append_event(desk, "outbound", f"kestrel reply {i}", at=f"2026-11-2{i}T10:00:00Z")
        assert b.refresh() == 5
        a._postings.clear()  # A reads the postings again (a new term, or a process that just started)
        query = normalize_query("kestrel", limit=10, as_of=AS_OF)
        ids, _ = a.postings("kestrel")
        assert len(ids) == 5 and max(ids) < a.columns.count
        assert search(a, query, desk.desk_id) == before
        assert a.refresh() == 0  # B's work is already in the file: A only loads it
        assert len(search(a, query, desk.desk_id).hits) == 10
    finally:
        a.close()
        b.close()


def _memory_text(name: str, body: str) -> str:
    return (f"---\nname: {name}\ndescription: about {name}\ntype: fact\ntriggers:\n- {name}\n"
            f"created: 2026-11-25T00:00:00Z\nupdated: 2026-11-25T00:00:00Z\n---\n\n{body}\n")


def _steps(desk: DeskFolder) -> list[tuple[str, Any]]:
    from tests.guard_helpers import sh

    root = desk.root

    def edit_in_place() -> None:  # same size, new bytes: an editor writing over the file
        path = root / "memory/db-choice.md"
        path.write_bytes(path.read_bytes().replace(b"SQLite", b"DuckDB"))

    def revert() -> None:
        sh(root, "checkout", "--", "memory/db-choice.md")

    def untracked() -> None:
        (root / "memory/loose-note.md").write_text(_memory_text("loose-note", "A loose lantern note."))

    def commit_by_hand() -> None:
        (root / "memory/report-style.md").write_text(_memory_text("report-style", "Reports in English now."))
        sh(root, "commit", "-q", "--no-verify", "-m", "by hand", "--", "memory/report-style.md")

    def delete_unstaged() -> None:
        (root / "memory/loose-note.md").unlink()

    def rename_committed() -> None:
        sh(root, "mv", "memory/db-choice.md", "memory/db-pick.md")
        sh(root, "commit", "-q", "--no-verify", "-m", "rename")

    def back_in_history() -> None:  # HEAD moves backwards: the cache's tree is not an ancestor
        sh(root, "reset", "-q", "--hard", "HEAD~2")

    return [("edit in place", edit_in_place), ("revert", revert), ("untracked file", untracked),
            ("commit by hand", commit_by_hand), ("delete unstaged", delete_unstaged),
            ("rename committed", rename_committed), ("back in history", back_in_history)]


def test_a_warm_cache_follows_every_kind_of_memory_change_like_a_cold_one(desk: DeskFolder) -> None:
    """The memory files to read again are found through git (the memory tree at HEAD, the work
    tree's changes against HEAD): after each kind of change a person or git can make, the warm
    cache answers exactly as one built from scratch."""
    _seed_memories(desk)
    warm = SearchCache(desk)
    try:
        warm.refresh()
        for label, step in _steps(desk):
            step()
            warm.refresh()
            cold_state, cold_answers = _cold(desk)
            assert _state(warm) == cold_state, label
            assert _answers(desk, warm) == cold_answers, label
    finally:
        warm.close()


def test_a_memory_tree_git_no_longer_has_means_looking_at_every_file(desk: DeskFolder) -> None:
    _seed_memories(desk)
    cache = SearchCache(desk)
    try:
        cache.refresh()
        with cache._connect() as db:  # as after a rewrite and gc: the tree the cache saw is gone
            db.execute("UPDATE meta SET value=? WHERE key='mem_tree'", ("0" * 40,))
        path = desk.root / "memory/db-choice.md"
        path.write_bytes(path.read_bytes().replace(b"SQLite", b"DuckDB"))
        from tests.guard_helpers import sh
        sh(desk.root, "commit", "-q", "--no-verify", "-am", "by hand")
        cache.refresh()
        assert _state(cache) == _cold(desk)[0]
    finally:
        cache.close()
