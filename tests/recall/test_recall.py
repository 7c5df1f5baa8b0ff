"""desk recall: docs/design.md §8.1's offline-verification list, the JSON contract field by field, the cache."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from desk import open as open_desk
from desk.layout import DeskFolder
from desk.errors import UsageError
from desk.memory.operations import remember
from desk.recall.search import normalize_query, recall
from desk.recall.render import render_xml
from desk.recall.search_cache import SearchCache
from desk.recall.records import text_terms
from desk.text.times import format_time
from tests.conftest import DeskRunner, git, snapshot
from tests.history_helpers import build_history, count_git, last_commit

# A fixed time after every memory and event these tests write with a time (`_remember` stamps
# 2026-11-20 unless told; appends pass `at`): the answers are the same on any day the tests run.
AS_OF = "2026-12-01T00:00:00Z"


def _remember(desk: DeskFolder, name: str, body: str, *, desc: str = "A fact", triggers: tuple[str, ...] = (),
              when: str = "2026-11-20T10:00:00Z", **extra: object) -> None:
    import datetime as dt

    remember(desk, name, type="fact", description=desc, body=body, triggers=triggers,
             now=dt.datetime.fromisoformat(when), **extra)  # type: ignore[arg-type]


def _say(desk: DeskFolder, text: str, *, at: str, kind: str = "inbound", session: str = "s1",
         meta: dict[str, str] | None = None) -> dict:
    from desk.archive.store import append_event

    return append_event(desk, kind, text, session=session, actor="user", at=at, meta=meta)


# -- normalize ---------------------------------------------------------------------------------

def test_query_normalization_folds_case_width_and_whitespace() -> None:
    q = normalize_query("  LAYERED   Memory  ", limit=5, as_of=AS_OF)
    assert q.text == "LAYERED Memory"
    assert q.normalized_text == "layered memory"
    assert q.terms == ("layer", "memori")  # Snowball stems
    assert normalize_query("ＬＡＹＥＲＥＤ\tmemory", as_of=AS_OF).terms == ("layer", "memori")
    assert q.query_id == normalize_query("layered memory", as_of=AS_OF).query_id  # same inputs, same id


def test_chinese_runs_become_character_bigrams_and_characters() -> None:
    assert normalize_query("分层记忆", as_of=AS_OF).terms == ("分", "分层", "层", "层记", "忆", "记", "记忆")
    # a stop word's characters are not asked for (什么, 时候), a particle never; other characters are
    terms = normalize_query("小明是什么时候领养狗的？", as_of=AS_OF).terms
    assert {"狗", "领养", "领", "养", "小明"} <= set(terms)
    assert not {"什", "么", "时", "候", "的", "是"} & set(terms)
    # the baseline rankers ask as they did: bigrams only
    assert normalize_query("分层记忆", as_of=AS_OF, ranker="coverage").terms == ("分层", "层记", "记忆")
    # the index also keeps every single character, so a one-character query finds it
    assert sorted(text_terms("用SQLite存储")) == sorted(["用", "sqlite", "存", "储", "存储"])


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "!!!", "？！。", "--- ..."])
def test_empty_and_punctuation_only_queries_are_refused(text: str) -> None:
    with pytest.raises(UsageError):
        normalize_query(text)


@pytest.mark.parametrize("limit", [0, 11, -1])
def test_limit_outside_1_to_10_is_refused(limit: int) -> None:
    with pytest.raises(UsageError, match="between 1 and 10"):
        normalize_query("memory", limit=limit)


def test_cli_refusals_exit_2_with_a_clear_message(run: DeskRunner) -> None:
    for args in (["   "], ["?!"], ["memory", "--limit", "11"], ["memory", "--limit", "0"]):
        result = run("recall", *args)
        assert result.exit_code == 2, args
        assert "desk: error:" in result.output


# -- candidates, scores, ranks ------------------------------------------------------------------

def test_english_hit_with_full_json_contract(desk: DeskFolder, run: DeskRunner) -> None:
    _remember(desk, "db-choice", "We selected SQLite in WAL mode for local persistence.",
              desc="Persistence decision", source_event="evt-42")
    _remember(desk, "report-style", "Reports are short and in Chinese.", desc="Report style")
    result = run("recall", "  SQLite   Persistence ", "--now", AS_OF, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) == {"query", "hits", "searched_records", "candidate_records", "empty_reason"}
    q = data["query"]
    assert q["text"] == "SQLite Persistence" and q["normalized_text"] == "sqlite persistence"
    assert q["terms"] == ["persist", "sqlite"] and q["limit"] == 5 and q["query_id"].startswith("query-")
    assert data["searched_records"] == 2 and data["candidate_records"] == 1 and data["empty_reason"] is None
    [hit] = data["hits"]
    assert set(hit) == {"rank", "id", "snippet", "scope", "provenance", "score_breakdown"}
    assert hit["rank"] == 1 and hit["id"] == "memory:db-choice"
    assert "SQLite in WAL mode" in hit["snippet"]
    assert hit["scope"] == {"desk_id": desk.config.desk_id, "memory_kind": "memory", "type": "fact"}
    prov = hit["provenance"]
    assert prov["path"] == "memory/db-choice.md" and prov["source"] == "user"
    assert prov["source_event"] == "evt-42"
    assert prov["commit"] == git(desk.root, "log", "-1", "--format=%H", "--", "memory/db-choice.md").strip()
    assert prov["uncommitted"] is False
    b = hit["score_breakdown"]
    assert b["matched_terms"] == ["persist", "sqlite"] and b["query_term_count"] == 2
    assert b["lexical_coverage"] == 1.0 and 0 < b["recency"] <= 1
    assert set(b["weights"]) == set(b["contributions"]) == {"content", "field", "context", "question", "session",
                                                          "time", "recency"}
    assert b["session_terms"] == []
    assert abs(sum(b["contributions"].values()) - b["total"]) < 1e-6
    own = b["contributions"]["content"] + b["contributions"]["field"]
    assert own > 0 and b["contributions"]["context"] == b["contributions"]["question"] == b["contributions"]["time"] == 0
    assert b["contributions"]["recency"] == pytest.approx(b["weights"]["recency"] * b["recency"] * own, abs=1e-5)
    # the previous default stays selectable, with its own breakdown
    old = run("recall", "SQLite Persistence", "--json", "--ranker", "coverage", "--now", AS_OF)
    c = json.loads(old.output)["hits"][0]["score_breakdown"]
    assert set(c["weights"]) == set(c["contributions"]) == {"coverage", "frequency", "recency"}
    assert abs(sum(c["weights"].values()) - 1) < 1e-9
    assert abs(sum(c["contributions"].values()) - c["total"]) < 1e-6


def test_chinese_query_finds_chinese_record(desk: DeskFolder) -> None:
    _remember(desk, "layers", "我们采用分层记忆设计：工作区、用户和远端三层。")
    _remember(desk, "other", "报告必须用中文撰写。")
    result = recall(desk, "分层记忆是怎么设计的", as_of=AS_OF)
    assert [h.id for h in result.hits][0] == "memory:layers"
    assert {"分层", "层记", "记忆"} <= set(result.hits[0].score_breakdown.matched_terms)


def test_conversation_records_with_event_provenance(desk: DeskFolder) -> None:
    rec = _say(desk, "Let's use SQLite WAL for persistence.", at="2026-11-28T09:00:00Z",
               meta={"channel": "chat"})
    _say(desk, "Sounds good, noted.", at="2026-11-28T09:01:00Z", kind="outbound")
    from desk.archive.store import append_event
    append_event(desk, "progress", "SQLite persistence progress event", at="2026-11-28T09:02:00Z")
    result = recall(desk, "sqlite persistence", as_of=AS_OF, kind="conversation")
    assert result.searched_records == 2  # progress events are not conversation records
    # the reply is found through its neighbour (conversational context), below the turn itself
    hit, reply = result.hits
    assert reply.score_breakdown.matched_terms == () and reply.score_breakdown.contributions["context"] > 0
    assert hit.id == f"event:{rec['id']}"
    assert hit.scope["memory_kind"] == "conversation" and hit.scope["type"] == "inbound"
    prov = hit.provenance
    assert prov["event_id"] == rec["id"] and prov["session"] == "s1" and prov["at"] == rec["at"]
    assert prov["file"].startswith(".system/archive/2026-11-28.") and prov["line"] == 1
    assert prov["meta"] == {"channel": "chat"}


def test_kind_and_limit_are_honoured(desk: DeskFolder) -> None:
    for i in range(4):
        _remember(desk, f"m{i}", f"alpha fact number {i}")
    _say(desk, "alpha from a conversation", at="2026-11-28T09:00:00Z")
    assert len(recall(desk, "alpha", limit=3, as_of=AS_OF).hits) == 3
    assert {h.scope["memory_kind"] for h in recall(desk, "alpha", kind="memory", as_of=AS_OF).hits} == {"memory"}
    only = recall(desk, "alpha", kind="conversation", as_of=AS_OF)
    assert [h.scope["memory_kind"] for h in only.hits] == ["conversation"] and only.searched_records == 1


def test_ties_break_by_coverage_then_time_then_id(desk: DeskFolder) -> None:
    # identical text and time: id ascending decides, whatever order they were written in
    _remember(desk, "b-twin", "kiwi banana", when="2026-11-20T10:00:00Z")
    _remember(desk, "a-twin", "banana kiwi", when="2026-11-20T10:00:00Z")
    ids = [h.id for h in recall(desk, "kiwi banana", ranker="seed", as_of="2026-11-20T10:00:00Z").hits]
    assert ids == ["memory:a-twin", "memory:b-twin"]
    # the default ranker ties them too (same terms, length, time): still id ascending, not write order
    _remember(desk, "c-newer", "kiwi, banana", when="2026-11-20T10:00:00Z")
    res = recall(desk, "kiwi banana", as_of="2026-11-20T10:00:00Z")
    assert [h.id for h in res.hits] == ["memory:a-twin", "memory:b-twin", "memory:c-newer"]
    assert len({h.score_breakdown.total for h in res.hits}) == 1


def test_newer_record_wins_a_tie_on_text(desk: DeskFolder) -> None:
    _remember(desk, "old", "kiwi banana", when="2026-10-01T10:00:00Z")
    _remember(desk, "new", "banana kiwi", when="2026-11-20T10:00:00Z")
    hits = recall(desk, "kiwi", as_of=AS_OF).hits
    assert [h.id for h in hits] == ["memory:new", "memory:old"]
    assert hits[0].score_breakdown.recency > hits[1].score_breakdown.recency


def test_expired_memories_never_appear(desk: DeskFolder) -> None:
    _remember(desk, "temp", "the staging password rotates weekly", expires="2026-11-25T00:00:00Z")
    assert [h.id for h in recall(desk, "staging password", as_of="2026-11-24T00:00:00Z").hits] == ["memory:temp"]
    late = recall(desk, "staging password", as_of=AS_OF)
    assert late.hits == () and late.searched_records == 0 and late.empty_reason == "no_records"


def test_no_match_is_explicit_and_renders_nothing(desk: DeskFolder, run: DeskRunner) -> None:
    _remember(desk, "db-choice", "We selected SQLite.")
    result = recall(desk, "kubernetes", as_of=AS_OF)
    assert result.hits == () and result.searched_records == 1 and result.candidate_records == 0
    assert result.empty_reason == "no_matching_terms"
    assert render_xml(result) == ""
    out = run("recall", "kubernetes", "--xml")
    assert out.exit_code == 0 and out.output == ""


def test_xml_carries_every_field_escaped(desk: DeskFolder, run: DeskRunner) -> None:
    _remember(desk, "tricky", 'Use <b>bold</b> & "quotes" </recalled_context> sparingly.')
    out = run("recall", "bold quotes", "--xml", "--now", AS_OF).output
    assert out.count("</recalled_context>") == 1 and out.rstrip().endswith("</recalled_context>")
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; \"quotes\" &lt;/recalled_context&gt;" in out
    for attr in ("query_id=", "normalized_query=", 'rank="1"', 'memory_kind="memory"', "total=",
                 "lexical_coverage=", "recency=", "content_contribution=", "context_contribution=", "path=",
                 "commit="):
        assert attr in out


BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


def test_direction_controls_show_escaped_in_text_and_xml_and_exact_in_json(desk: DeskFolder,
                                                                          run: DeskRunner) -> None:
    """Issue 27.8: a stored U+202E reversed what a person read on the terminal. The human and
    --xml renderings show every direction control and mark as `<U+XXXX>`; --json keeps the text."""
    text = f"pay invoice {BIDI} 1234 to account 5678"
    _say(desk, text, at="2026-11-28T09:00:00Z", session=f"s{BIDI}1")
    shown = [f"<U+{ord(c):04X}>" for c in BIDI]
    for args in ([], ["--xml"]):
        out = run("recall", "invoice", "--kind", "conversation", "--now", AS_OF, *args)
        assert out.exit_code == 0, out.output
        assert not any(c in out.output for c in BIDI), (args, out.output)
        marks = "".join(shown) if not args else "".join(s.replace("<", "&lt;").replace(">", "&gt;") for s in shown)
        assert marks in out.output, (args, out.output)
    exact = json.loads(run("recall", "invoice", "--kind", "conversation", "--now", AS_OF, "--json").output)
    assert BIDI in exact["hits"][0]["snippet"]


def test_recall_is_read_only(desk: DeskFolder, run: DeskRunner) -> None:
    _remember(desk, "db-choice", "We selected SQLite.")
    _say(desk, "sqlite it is", at="2026-11-28T09:00:00Z")
    before, head = snapshot(desk.root), git(desk.root, "rev-parse", "HEAD")
    for args in (["sqlite"], ["sqlite", "--json"], ["sqlite", "--xml"], ["nothing-matches"]):
        assert run("recall", *args).exit_code == 0
    assert snapshot(desk.root) == before
    assert git(desk.root, "rev-parse", "HEAD") == head
    assert git(desk.root, "status", "--porcelain", "--untracked-files=all") == \
        git(desk.root, "status", "--porcelain", "--untracked-files=all")
    ignored = git(desk.root, "status", "--porcelain", "--untracked-files=all", "--ignored").splitlines()
    assert [line for line in ignored if line.startswith("!!") and ".system/archive/" not in line] == []  # cache in .git/


# -- the derived cache -----------------------------------------------------------------------

def _answer(desk: DeskFolder, query: str) -> list[dict]:
    return [h.to_json() for h in recall(desk, query, as_of=AS_OF, limit=10).hits]


def test_deleting_the_cache_changes_no_answer(desk: DeskFolder) -> None:
    _remember(desk, "db-choice", "We selected SQLite in WAL mode.")
    _remember(desk, "report", "Reports in Chinese, 报告要短。")
    for i in range(30):
        _say(desk, f"message {i} about sqlite and 报告 number {i % 7}", at=f"2026-11-2{i % 9}T09:00:{i:02d}Z")
    queries = ["sqlite", "报告", "message number 3", "WAL mode sqlite"]
    warm = {q: _answer(desk, q) for q in queries}
    # edit, delete and append after the cache exists: tombstones must not leak into the statistics
    _remember(desk, "db-choice", "We moved to Postgres.")
    from desk.memory.operations import forget
    forget(desk, "report")
    _say(desk, "late sqlite message", at="2026-11-29T09:00:00Z")
    warm = {q: _answer(desk, q) for q in queries}
    shutil.rmtree(desk.cache_dir)
    assert {q: _answer(desk, q) for q in queries} == warm
    assert all(h["id"] != "memory:report" for q in queries for h in warm[q])


def test_cache_is_incremental_by_blob_and_offset(desk: DeskFolder) -> None:
    _remember(desk, "db-choice", "We selected SQLite.")
    _say(desk, "first sqlite message", at="2026-11-28T09:00:00Z")
    cache = SearchCache(desk)
    try:
        assert cache.refresh() == 2
        assert cache.refresh() == 0  # nothing changed: nothing re-read
        _say(desk, "second sqlite message", at="2026-11-28T10:00:00Z")
        assert cache.refresh() == 1  # only the appended line
        path = desk.path("memory/db-choice.md")
        path.write_bytes(path.read_bytes().replace(b"SQLite", b"Postgres"))
        assert cache.refresh() == 1
        [hit] = recall(desk, "postgres", cache=cache, as_of=AS_OF).hits
        assert hit.id == "memory:db-choice" and hit.provenance["uncommitted"] is True
        assert all(h.id != "memory:db-choice" for h in recall(desk, "sqlite", cache=cache, as_of=AS_OF).hits)
    finally:
        cache.close()


def test_rewritten_archive_file_is_read_again(desk: DeskFolder) -> None:
    _say(desk, "kiwi one", at="2026-11-28T09:00:00Z")
    _say(desk, "kiwi two", at="2026-11-28T10:00:00Z", session="s2")  # not a neighbour of "kiwi one"
    assert len(recall(desk, "kiwi", as_of=AS_OF).hits) == 2
    [path] = list(desk.path(".system/archive").glob("*.jsonl"))
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[1].replace(b"kiwi two", b"pear two"))
    assert [h.snippet for h in recall(desk, "kiwi", as_of=AS_OF).hits] == ["kiwi one"]


def test_torn_last_line_waits_until_complete(desk: DeskFolder) -> None:
    _say(desk, "kiwi one", at="2026-11-28T09:00:00Z")
    [path] = list(desk.path(".system/archive").glob("*.jsonl"))
    with open(path, "ab") as handle:
        handle.write(b'{"content": "kiwi torn"')
    assert [h.snippet for h in recall(desk, "kiwi", as_of=AS_OF).hits] == ["kiwi one"]


def test_broken_cache_file_is_rebuilt(desk: DeskFolder) -> None:
    _remember(desk, "db-choice", "We selected SQLite.")
    first = _answer(desk, "sqlite")
    (desk.cache_dir / "search.sqlite").write_bytes(b"not a database at all" * 100)
    for extra in ("-wal", "-shm"):
        (desk.cache_dir / f"search.sqlite{extra}").unlink(missing_ok=True)
    assert _answer(desk, "sqlite") == first


def test_tombstones_are_compacted_without_changing_answers(desk: DeskFolder, monkeypatch: pytest.MonkeyPatch) -> None:
    import desk.recall.search_cache as search_cache

    monkeypatch.setattr(search_cache, "COMPACT_MIN_DEAD", 2)
    for i in range(3):
        _say(desk, f"kiwi chat {i}", at=f"2026-11-2{i}T09:00:00Z")
    path = desk.path("memory/fruit.md")
    _remember(desk, "fruit", "kiwi and mango")
    cache = SearchCache(desk)
    try:
        for i in range(6):  # each hand edit tombstones the previous record of the file
            path.write_bytes(path.read_bytes().replace(b"mango", b"mango" + b" pear" * (i + 1), 1))
            cache.refresh()
            assert len(cache.columns.dead) <= cache.columns.count // 4 + 2
        answer = [h.to_json() for h in recall(desk, "kiwi pear", cache=cache, as_of=AS_OF).hits]
    finally:
        cache.close()
    shutil.rmtree(desk.cache_dir)
    assert _answer(desk, "kiwi pear")[:len(answer)] == answer


def test_refresh_reports_progress_up_to_the_total(desk: DeskFolder) -> None:
    folder = desk.path(".system/archive")
    line = json.dumps({"id": "x", "kind": "inbound", "content": "kiwi " * 50, "at": "2026-11-28T09:00:00Z",
                       "desk_id": desk.config.desk_id})
    (folder / "2026-11-28.testclone.jsonl").write_text("\n".join(
        line.replace('"x"', f'"e{i:05d}"') for i in range(3000)) + "\n", "utf-8")
    calls: list[tuple[int, int]] = []
    cache = SearchCache(desk)
    try:
        assert cache.refresh(lambda done, total: calls.append((done, total))) == 3000
    finally:
        cache.close()
    total = (folder / "2026-11-28.testclone.jsonl").stat().st_size
    assert len(calls) >= 3 and calls[-1] == (total, total)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_records_of_another_desk_are_never_recalled(desk: DeskFolder) -> None:
    mine = _say(desk, "kiwi from this desk", at="2026-11-28T09:00:00Z")
    folder = desk.path(".system/archive")
    foreign = {**mine, "id": "foreign-1", "desk_id": "desk-someone-else", "content": "kiwi from elsewhere"}
    (folder / "2026-11-28.otherclone.jsonl").write_text(json.dumps(foreign, sort_keys=True) + "\n", "utf-8")
    result = recall(desk, "kiwi", as_of=AS_OF)
    assert [h.id for h in result.hits] == [f"event:{mine['id']}"] and result.searched_records == 1


def test_as_of_takes_a_bare_date_like_the_other_commands(run: DeskRunner) -> None:
    assert run("recall", "anything", "--as-of", "2026-12-01", "--json").exit_code == 0
    assert run("context", "--as-of", "2026-12-01").exit_code == 0
    assert run("recall", "anything", "--as-of", "2026-12-01T10:00:00").exit_code == 2  # no zone


# -- provenance from the HEAD mirror (issue 17: no git process per hit) -------------------------

def test_memory_hits_carry_the_commit_git_log_shows(desk: DeskFolder) -> None:
    build_history(desk)  # person commits, a revert, merges, a rename, a forget and a re-remember
    result = recall(desk, "history", limit=10, kind="memory", as_of=AS_OF)
    names = sorted(p.stem for p in desk.path("memory").glob("*.md"))
    assert sorted(h.id.removeprefix("memory:") for h in result.hits) == names
    for hit in result.hits:
        sha, stamp = last_commit(desk.root, hit.id.removeprefix("memory:"))
        assert hit.provenance["commit"] == sha, hit.id
        assert hit.provenance["committed_at"] == format_time(dt.datetime.fromtimestamp(stamp, dt.timezone.utc))
        assert hit.provenance["uncommitted"] is False


def test_an_uncommitted_memory_has_no_commit(desk: DeskFolder) -> None:
    _remember(desk, "db-choice", "We selected SQLite in WAL mode.")
    new = desk.path("memory/db-choice.md").read_text().replace("db-choice", "db-later")
    desk.path("memory/db-later.md").write_text(new)
    hits = {h.id: h for h in recall(desk, "SQLite", as_of=AS_OF).hits}
    assert hits["memory:db-later"].provenance["commit"] is None
    assert hits["memory:db-later"].provenance["uncommitted"] is True
    assert hits["memory:db-choice"].provenance["uncommitted"] is False


def test_a_warm_recall_starts_no_git_process_per_hit(desk: DeskFolder, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(8):
        _remember(desk, f"note-{i}", f"A lantern note, number u{i}.")
    calls = count_git(tmp_path / "bin", monkeypatch)
    with open_desk(desk.root) as warm:
        for query in ("lantern", "u3"):
            warm.recall(query, limit=8, now=AS_OF)  # caches loaded, commit times read once
        started = len(calls())
        many = warm.recall("lantern", limit=8, now=AS_OF).to_json()["hits"]
        after_many = len(calls())
        one = warm.recall("u3", limit=8, now=AS_OF).to_json()["hits"]
        after_one = len(calls())
    assert len(many) == 8 and len(one) == 1
    assert after_many - started == after_one - after_many  # the same with 8 hits as with 1
    # The search cache's look at what changed in memory/ since it last read it (the work tree's
    # changes against HEAD; the memory and archive trees at that commit come from the record kept
    # by commit, desk.recall.git_state.KeptIds); the mirror reads HEAD from its ref file.
    look = [f"diff-index --name-only -z --no-renames {desk.git.refs.head()} -- :(literal)memory/",
            "ls-files -o -z --exclude-standard -- :(literal)memory/"]
    assert sorted(calls()[started:]) == sorted(look * 2)


def test_a_record_appended_this_second_is_found_by_the_next_recall(desk: DeskFolder) -> None:
    """Records carry microseconds; the default `as_of` (now) used to be cut to the second, so an
    event appended a moment before in the same second was after it and not searched."""
    from desk.archive.store import append_event
    from desk.recall.search import parse_as_of

    now = dt.datetime(2026, 5, 1, 12, 0, 0, 500_000, tzinfo=dt.timezone.utc)
    assert parse_as_of(None, now) >= now
    append_event(desk, "inbound", "the quokka protocol was approved", session="s1")
    with open_desk(desk.root) as d:
        hits = d.recall("quokka").to_json()["hits"]
    assert [h["scope"]["memory_kind"] for h in hits] == ["conversation"], hits


# -- issue 16: short, single-character and mixed-language queries; conversational context ----------

def test_one_chinese_character_finds_the_records_holding_it(desk: DeskFolder, run: DeskRunner) -> None:
    _remember(desk, "pet", "我家的猫叫饼干，很黏人。")
    _remember(desk, "other", "周五去超市买菜。")
    _say(desk, "猫今天又把花盆打翻了", at="2026-11-28T09:00:00Z")
    result = recall(desk, "猫", as_of=AS_OF, limit=10)
    assert result.query.terms == ("猫",)
    ids = {h.id for h in result.hits}
    assert len(ids) == 2 and "memory:pet" in ids and "memory:other" not in ids
    out = json.loads(run("recall", "猫", "--json", "--now", AS_OF).output)
    assert len(out["hits"]) == 2


def test_short_and_mixed_language_queries(desk: DeskFolder) -> None:
    _remember(desk, "orion", "Orion 项目的 deadline 是三月底。")
    _remember(desk, "maple", "Maple project deadline moved to April.")
    _remember(desk, "zh-only", "项目周会改到周二。")
    mixed = recall(desk, "Orion 项目 deadline", as_of=AS_OF)
    assert mixed.query.terms == ("deadlin", "orion", "目", "项", "项目")
    assert mixed.hits[0].id == "memory:orion"
    assert set(mixed.hits[0].score_breakdown.matched_terms) == {"deadlin", "orion", "目", "项", "项目"}
    assert {h.id for h in mixed.hits} == {"memory:orion", "memory:maple", "memory:zh-only"}
    # a short query made only of stop words still asks for them rather than nothing
    assert normalize_query("who", as_of=AS_OF).terms == ("who",)
    assert recall(desk, "go", as_of=AS_OF).hits == ()  # no record holds it: nothing, no error


def test_stop_words_and_stems(desk: DeskFolder) -> None:
    assert normalize_query("What did Mara name the new dogs?", as_of=AS_OF).terms == ("dog", "mara", "name", "new")
    assert not {"什么", "什", "么"} & set(normalize_query("小明的猫叫什么名字", as_of=AS_OF).terms)
    _remember(desk, "adopt", "We adopted a beagle puppy from the shelter.")
    assert [h.id for h in recall(desk, "adopting beagles", as_of=AS_OF).hits] == ["memory:adopt"]


def test_a_turn_is_found_through_the_question_it_answers(desk: DeskFolder) -> None:
    # the answer shares no word with the query; the turn before it (same session) does
    _say(desk, "Did you end up getting that dog you wanted?", at="2026-11-28T09:00:00Z", session="a")
    answer = _say(desk, "Yes! We named her Biscuit.", at="2026-11-28T09:01:00Z", session="a", kind="outbound")
    _say(desk, "Unrelated chatter about the weather.", at="2026-11-28T09:02:00Z", session="b")
    result = recall(desk, "dog", as_of=AS_OF, kind="conversation", limit=10)
    by_id = {h.id: h.score_breakdown for h in result.hits}
    b = by_id[f"event:{answer['id']}"]
    assert b.matched_terms == () and b.contributions["content"] == 0 and b.contributions["context"] == 0
    # the turn before ends with a question: it counts as the question this turn answers
    asked = result.hits[0].score_breakdown
    assert b.contributions["question"] == pytest.approx(b.weights["question"] * asked.total / (1 + asked.weights["recency"] * asked.recency), abs=1e-5)
    assert abs(sum(b.contributions.values()) - b.total) < 1e-6
    assert len(result.hits) == 2  # the other session's turn is no neighbour


def test_a_question_lifts_its_answer_more_than_a_statement_lifts_the_next_turn(desk: DeskFolder) -> None:
    """The question-answer pairing (issue 16): the turn after a question is its answer and gets
    `question` (1.0) times what the question said; the turn after a statement gets only
    `context` (0.1), and so does the turn before an answer (the reaction comes after)."""
    _say(desk, "Did you end up getting that dog?", at="2026-11-28T09:00:00Z", session="a")
    answer = _say(desk, "Yes! We named her Biscuit.", at="2026-11-28T09:01:00Z", session="a", kind="outbound")
    _say(desk, "I walked the neighbours' dog.", at="2026-11-28T10:00:00Z", session="b")
    after = _say(desk, "Nice, the weather was good for it.", at="2026-11-28T10:01:00Z", session="b", kind="outbound")
    hits = recall(desk, "dog", as_of=AS_OF, kind="conversation", limit=10).hits
    by_id = {h.id: h for h in hits}
    lifted, plain = by_id[f"event:{answer['id']}"].score_breakdown, by_id[f"event:{after['id']}"].score_breakdown
    assert lifted.contributions["question"] > 0 and lifted.contributions["context"] == 0
    assert plain.contributions["question"] == 0 and plain.contributions["context"] > 0
    assert [h.id for h in hits].index(f"event:{answer['id']}") < [h.id for h in hits].index(f"event:{after['id']}")
    # the question itself is lifted by its answer's score only as context (its answer matched nothing here)
    assert all(h.score_breakdown.contributions["question"] == 0 for h in hits if h.snippet.endswith("?"))


def test_the_speaker_and_captions_are_a_field_and_when_questions_favour_times(
        desk: DeskFolder, monkeypatch: pytest.MonkeyPatch) -> None:
    from desk.archive.store import append_event
    from desk.recall.rank import CONTEXT_PARAMS

    monkeypatch.setattr(CONTEXT_PARAMS, "time", 0.5)  # off by default (docs/recall.md): measured here

    mara = append_event(desk, "inbound", "Finally got the keys", session="s", actor="Mara",
                        at="2026-11-20T09:00:00Z", meta={"caption": "a photo of the new flat"})
    append_event(desk, "inbound", "Got the keys to the van", session="t", actor="Jonas", at="2026-11-21T09:00:00Z")
    hits = recall(desk, "Mara flat keys", as_of=AS_OF, kind="conversation").hits
    assert hits[0].id == f"event:{mara['id']}" and hits[0].score_breakdown.contributions["field"] > 0
    append_event(desk, "inbound", "We ran the race yesterday", session="u", actor="x", at="2026-11-22T09:00:00Z")
    append_event(desk, "inbound", "We ran the race, it was fun", session="v", actor="x", at="2026-11-22T09:00:00Z")
    when = recall(desk, "when did we run the race", as_of=AS_OF, kind="conversation").hits
    assert "yesterday" in when[0].snippet and when[0].score_breakdown.contributions["time"] > 0
    plain = recall(desk, "run the race", as_of=AS_OF, kind="conversation").hits
    assert all(h.score_breakdown.contributions["time"] == 0 for h in plain)


def test_a_chinese_query_finds_a_word_it_holds_only_next_to_a_particle(desk: DeskFolder) -> None:
    """Unigram + bigram queries (issue 16): 狗 sits in the query only inside 的狗 (a particle's
    bigram, dropped) and 狗取 (across two words, in no record): with bigrams alone the record
    about the dog shared no term with the question; the character finds it."""
    dog = _say(desk, "周五接回来一只小狗，起名叫糯米。", at="2026-11-28T09:00:00Z")
    _say(desk, "周末我们去公园散步了。", at="2026-11-28T09:05:00Z", session="s2")
    hits = recall(desk, "她给新养的狗取了什么名字？", as_of=AS_OF, kind="conversation", limit=10).hits
    assert [h.id for h in hits] == [f"event:{dog['id']}"]
    assert {"狗", "名"} <= set(hits[0].score_breakdown.matched_terms)
