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
import os
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import desk.recall.search_cache as search_cache
import desk.recall.search_writer as search_writer
from desk.archive.importing import import_events
from desk.archive.store import append_event, archive_files
from desk.layout import DeskFolder
from desk.memory.operations import remember
from desk.recall.records import text_terms
from desk.recall.search import recall
from desk.recall.search_cache import SearchCache
from desk.recall.search_writer import SearchWriter

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
    monkeypatch.setattr(search_writer, "READ_CHUNK", 257)  # most lines are longer: split across reads
    monkeypatch.setattr(search_writer, "DOCS_BATCH", 7)
    budget = 2000  # bytes: a merge every few records
    cache = SearchCache(desk, batch_bytes=budget)
    try:
        added = cache.refresh()
        stats = cache.last_refresh
        assert added == stats.records == expected_state["alive"]
        # Bounded: a batch is merged as soon as it reaches its budget, so it never holds more than
        # the budget plus one record's worth (at most 32 distinct terms, each a new rare term).
        one_record = 32 * (search_writer.POSTING_BYTES + search_writer.TERM_BYTES + search_writer.ARRAYS_BYTES)
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
    monkeypatch.setattr(search_writer, "READ_CHUNK", 4096)
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


def test_a_cache_another_version_of_desk_made_is_rebuilt(desk: DeskFolder, tmp_path: Path) -> None:
    _seed_memories(desk)
    import_events(desk, _history(tmp_path / "h.jsonl", 6, 300))
    expected_state, expected_answers = _cold(desk)
    cache = SearchCache(desk)
    cache._connect().execute("UPDATE desk_code SET code = 'another version of desk'")
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


# -- every change to an archive file is noticed (issue 16.5) ------------------------------------


def _kestrel_day(desk: DeskFolder) -> Path:
    """One archive day of five turns; the second names the kestrel budget."""
    for i, text in enumerate(["the maple queue is slow", "kestrel budget approved at 4000",
                              "staging server port 8080", "weekly status for bruno", "orion launch date"]):
        append_event(desk, "inbound", text, at=f"2026-11-21T0{i}:00:00Z", session="s1")
    (only,) = archive_files(desk)
    return desk.path(only.rel)


def _found(desk: DeskFolder, cache: SearchCache, query: str) -> list[str]:
    return [h.snippet for h in recall(desk, query, cache=cache, as_of=AS_OF, limit=10).hits]


def _past_the_racy_window(cache: SearchCache) -> None:
    """As if the last refresh ran seconds after the files' last change: the stored stat is
    trusted (a file changed within git's racy window of its stat is checked again anyway)."""
    with cache._connect() as db:
        for path, offset in db.execute("SELECT path, offset FROM archfiles").fetchall():
            db.execute("UPDATE archfiles SET size=? WHERE path=?", (cache.desk.path(path).stat().st_size, path))


def _restore_times(path: Path, before: Any) -> None:
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # what `touch -d` can do


def test_a_same_length_edit_of_an_earlier_line_is_noticed_with_its_mtime_put_back(desk: DeskFolder) -> None:
    path = _kestrel_day(desk)
    cache = SearchCache(desk)
    try:
        cache.refresh()
        assert any("kestrel" in s for s in _found(desk, cache, "kestrel"))
        _past_the_racy_window(cache)
        before = path.stat()
        raw = path.read_bytes()
        edited = raw.replace(b"kestrel budget", b"falcon! budget")  # same length, line 2 of 5
        assert len(edited) == len(raw) and edited != raw
        with path.open("r+b") as handle:  # in place: same inode, same size
            handle.write(edited)
        _restore_times(path, before)
        after = path.stat()
        assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns,
                                                                    before.st_ino)
        cache.refresh()
        assert _found(desk, cache, "kestrel") == []
        assert any("falcon" in s for s in _found(desk, cache, "falcon"))
        assert _state(cache) == _cold(desk)[0]
    finally:
        cache.close()


def test_a_truncation_and_a_regrowth_to_the_same_size_are_noticed(desk: DeskFolder) -> None:
    path = _kestrel_day(desk)
    cache = SearchCache(desk)
    try:
        cache.refresh()
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[:3]))  # the last two turns cut off
        cache.refresh()
        assert _found(desk, cache, "bruno") == [] and _found(desk, cache, "orion") == []
        assert _state(cache) == _cold(desk)[0]
        # grown back to exactly the old size and mtime, with other words where "orion" stood
        before = path.stat()
        other = lines[4].replace(b"orion", b"vireo")
        path.write_bytes(b"".join(lines[:4]) + other)
        _restore_times(path, before)
        cache.refresh()
        assert _found(desk, cache, "orion") == [] and _found(desk, cache, "vireo")
        assert _state(cache) == _cold(desk)[0]
    finally:
        cache.close()


def test_an_archive_file_replaced_by_a_symlink_is_never_read_through(desk: DeskFolder, tmp_path: Path) -> None:
    path = _kestrel_day(desk)
    outside = tmp_path / "outside.jsonl"
    rec = json.loads(path.read_bytes().splitlines()[0])
    outside.write_text(json.dumps({**rec, "content": "zanzibar secret outside the desk"}) + "\n"
                       + path.read_text(), encoding="utf-8")
    cache = SearchCache(desk)
    try:
        cache.refresh()
        path.unlink()
        path.symlink_to(outside)
        cache.refresh()
        assert _found(desk, cache, "zanzibar") == [] and _found(desk, cache, "kestrel") == []
        assert _state(cache) == _cold(desk)[0]
    finally:
        cache.close()


def test_a_change_git_sees_is_checked_even_when_the_stat_looks_unchanged(desk: DeskFolder) -> None:
    """On a filesystem whose ctime is no change time (Windows' st_ctime is the creation time),
    an edit with the mtime put back leaves the stat as stored; HEAD's blob of the file moving
    (here a commit of the edit) makes the cache check the consumed prefix anyway."""
    from tests.guard_helpers import sh

    path = _kestrel_day(desk)
    rel = path.relative_to(desk.root).as_posix()
    assert sh(desk.root, "add", "-f", rel).returncode == 0  # ignored until desk commits it
    assert sh(desk.root, "commit", "-q", "--no-verify", "-m", "archive").returncode == 0
    cache = SearchCache(desk)
    try:
        cache.refresh()
        before = path.stat()
        path.write_bytes(path.read_bytes().replace(b"kestrel", b"osprey"))
        _restore_times(path, before)
        assert sh(desk.root, "commit", "-q", "--no-verify", "-am", "edit").returncode == 0
        now = path.stat()
        with cache._connect() as db:  # the stat as such a filesystem reports it, past the racy window
            db.execute("UPDATE archfiles SET size=?, ctime=?, inode=? WHERE path=?",
                       (now.st_size, now.st_ctime_ns, now.st_ino, rel))
        cache.refresh()
        assert _found(desk, cache, "kestrel") == [] and _found(desk, cache, "osprey")
    finally:
        cache.close()


def test_an_unchanged_archive_file_is_not_read_and_an_append_reads_only_its_new_bytes(
        desk: DeskFolder, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _kestrel_day(desk)
    cache = SearchCache(desk)
    checked: list[tuple[str, int]] = []
    real = SearchWriter._consumed_prefix

    def counting(self: SearchWriter, rel: str, st: Any, offset: int, prefix: str) -> Any:
        checked.append((rel, offset))
        return real(self, rel, st, offset, prefix)

    monkeypatch.setattr(SearchWriter, "_consumed_prefix", counting)
    try:
        cache.refresh()
        size = path.stat().st_size
        _past_the_racy_window(cache)
        checked.clear()
        assert cache.refresh() == 0 and checked == []  # nothing changed: no file is opened
        append_event(desk, "outbound", "kestrel reply", at="2026-11-21T06:00:00Z", session="s1")
        assert cache.refresh() == 1  # the prefix checked, then only the new line read
        assert checked == [(path.relative_to(desk.root).as_posix(), size)]
        assert _state(cache) == _cold(desk)[0]
    finally:
        cache.close()
