"""Hybrid recall (issue 16.3): a plugged-in dense retriever fused with the lexical ranking.

The embedder is tests/recall/trigram_embedder.py (hashed character trigrams, deterministic), named
by module path and, through a distribution installed into a temporary folder on sys.path, by an
entry point of the `desk.embedders` group.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from desk import open as open_desk
from desk.archive.store import append_event
from desk.layout import DeskFolder
from desk.recall import hybrid
from desk.recall.hybrid import RRF_K, fuse, installed_embedders, load_embedder
from desk.recall.search_cache import CACHE_FILE
from tests.conftest import DeskRunner, git, snapshot
from tests.recall.trigram_embedder import TrigramEmbedder

# A fixed time after every turn's `at` (all in November 2026). Every append here passes `at`, so
# each record lands in its `at` day's archive file, never today's, and recall is asked as of this
# time: the results are the same on any day the tests run.
AS_OF = "2026-12-01T00:00:00Z"
MODULE = "tests.recall.trigram_embedder"
TURNS = ["the kestrel launch moved to march", "budget review for the falcon team",
         "lunch at noon with bruno", "kestrel budget approved at four thousand",
         "the falcon deploy failed twice", "weekly status report is due friday"]


def _archive(desk: DeskFolder, turns: list[str] = TURNS) -> None:
    for i, text in enumerate(turns):
        append_event(desk, "inbound", text, at=f"2026-11-2{i % 9}T10:00:0{i % 10}Z", session="s1")


def _cosine(a: list[float], b: list[float]) -> float:
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(x * x for x in b))
    return sum(x * y for x, y in zip(a, b)) / (na * nb) if na and nb else 0.0


def _recall(d: Any, query: str, **kw: Any) -> dict[str, Any]:
    return d.recall(query, now=AS_OF, limit=10, **kw).to_json()


def test_a_misspelt_query_the_lexical_ranking_misses_is_found_by_the_dense_one(desk: DeskFolder) -> None:
    _archive(desk)
    with open_desk(desk.root) as d:
        assert _recall(d, "kestral")["hits"] == []  # no shared term
        fused = _recall(d, "kestral", embedder=TrigramEmbedder())
    assert fused["query"]["embedder"] == "trigram-test/64"
    top = fused["hits"][0]
    assert "kestrel" in top["snippet"]
    b = top["score_breakdown"]
    assert b["fusion"] == "rrf" and b["rrf_k"] == RRF_K
    assert b["lexical"] == {"rank": None, "score_breakdown": None}
    assert b["dense"]["rank"] == 1 and b["dense"]["embedder"] == "trigram-test/64"
    assert b["contributions"] == {"lexical_rrf": 0.0, "dense_rrf": round(1 / (RRF_K + 1), 9)}
    assert b["total"] == b["contributions"]["dense_rrf"]


def test_the_breakdown_names_both_ranks_and_its_contributions_sum_to_the_total(desk: DeskFolder) -> None:
    _archive(desk)
    embedder = TrigramEmbedder()
    with open_desk(desk.root) as d:
        lexical = [h["id"] for h in _recall(d, "kestrel budget")["hits"]]
        hits = _recall(d, "kestrel budget", embedder=embedder)["hits"]
    query_vector = embedder._one("kestrel budget")
    by_cosine = sorted(((-_cosine(query_vector, embedder._one(t)), t) for t in TURNS))
    dense = [t for _, t in by_cosine]
    assert len(hits) == len(TURNS)  # every record has a vector, so each is in the dense ranking
    totals = []
    for hit in hits:
        b = hit["score_breakdown"]
        text = hit["snippet"]
        assert b["dense"]["rank"] == dense.index(text) + 1
        assert b["dense"]["cosine"] == pytest.approx(-by_cosine[dense.index(text)][0], abs=1e-6)
        if hit["id"] in lexical:
            assert b["lexical"]["rank"] == lexical.index(hit["id"]) + 1
            assert b["lexical"]["score_breakdown"]["total"] > 0
            assert b["contributions"]["lexical_rrf"] == round(1 / (RRF_K + b["lexical"]["rank"]), 9)
        else:
            assert b["lexical"]["rank"] is None and b["contributions"]["lexical_rrf"] == 0.0
        assert b["contributions"]["dense_rrf"] == round(1 / (RRF_K + b["dense"]["rank"]), 9)
        assert sum(b["contributions"].values()) == pytest.approx(b["total"], abs=1e-9)
        totals.append(b["total"])
    assert totals == sorted(totals, reverse=True)
    assert set(lexical) <= {h["id"] for h in hits}


def test_fusion_orders_by_the_summed_reciprocal_ranks() -> None:
    class B:  # a lexical breakdown as fuse() reads it
        matched_terms = ("x",)

        def to_json(self) -> dict[str, Any]:
            return {}

    lexical: list[Any] = [(B(), 1), (B(), 2), (B(), 3)]
    dense = [(3, 0.9), (4, 0.8), (1, 0.1)]
    fused = fuse(lexical, dense, 10, "e/2", lambda doc: f"r{doc}")
    assert [doc for _, doc in fused] == [1, 3, 2, 4]  # 1/61+1/63 > 1/63+1/61 tie -> better rank, id
    first = fused[0][0]
    assert (first.lexical_rank, first.dense_rank) == (1, 3)
    assert first.total == round(round(1 / 61, 9) + round(1 / 63, 9), 9) == sum(first.contributions.values())


def test_vectors_are_cached_and_only_new_records_are_embedded(desk: DeskFolder) -> None:
    _archive(desk)
    embedder = TrigramEmbedder()
    with open_desk(desk.root) as d:
        _recall(d, "kestrel", embedder=embedder)
        assert sorted(t for call in embedder.calls[:-1] for t in call) == sorted(TURNS)
        assert embedder.calls[-1] == ["kestrel"]
        embedder.calls.clear()
        _recall(d, "falcon", embedder=embedder)
        assert embedder.calls == [["falcon"]]  # nothing new: only the query
        embedder.calls.clear()
        append_event(desk, "outbound", "the osprey nest is empty", at="2026-11-29T10:00:00Z")
        _recall(d, "osprey", embedder=embedder)
        assert embedder.calls == [["the osprey nest is empty"], ["osprey"]]
    # another process: the vectors come from .git/desk-cache/embeddings.sqlite, outside the work tree
    assert (desk.cache_dir / hybrid.CACHE_FILE).is_file()
    ignored = [line for line in git(desk.root, "status", "--porcelain", "--ignored").splitlines()
               if line.startswith("!!") and ".system/archive/" not in line]  # the archive: ignored until committed
    assert ignored == []  # no cache here
    fresh = TrigramEmbedder()
    with open_desk(desk.root) as d:
        _recall(d, "osprey", embedder=fresh)
        # the search cache rebuilt from scratch: its record numbers start over, the vectors stay
        for suffix in ("", "-wal", "-shm"):
            Path(f"{desk.cache_dir / CACHE_FILE}{suffix}").unlink(missing_ok=True)
    with open_desk(desk.root) as d:
        hits = _recall(d, "osprey", embedder=fresh)["hits"]
    assert fresh.calls == [["osprey"], ["osprey"]]
    assert "osprey" in hits[0]["snippet"]


def test_a_changed_record_is_embedded_again_and_filters_hold(desk: DeskFolder) -> None:
    from desk.memory.operations import remember

    _archive(desk)
    now = dt.datetime(2026, 11, 25, tzinfo=dt.timezone.utc)  # a fixed clock, before AS_OF
    remember(desk, "kestrel-plan", type="decision", description="The kestrel plan",
             body="Kestrel ships in March.", now=now)
    embedder = TrigramEmbedder()
    with open_desk(desk.root) as d:
        _recall(d, "kestrel", embedder=embedder)
        embedder.calls.clear()
        remember(desk, "kestrel-plan", type="decision", description="The kestrel plan",
                 body="Kestrel ships in April.", now=now)
        memories = _recall(d, "kestrel", embedder=embedder, kind="memory")["hits"]
        assert [[t.strip() for t in call] for call in embedder.calls] == [
            ["kestrel-plan The kestrel plan Kestrel ships in April."], ["kestrel"]]
        conversation = _recall(d, "kestrel", embedder=embedder, kind="conversation")["hits"]
    assert [h["id"] for h in memories] == ["memory:kestrel-plan"]
    assert "April" in memories[0]["snippet"]
    assert len(conversation) == len(TURNS) and all(h["id"].startswith("event:") for h in conversation)


# -- naming an embedder -------------------------------------------------------------------------


def _installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A distribution declaring `trigram` in the `desk.embedders` group, on sys.path."""
    site = tmp_path / "site"
    info = site / "desk_test_embedders-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: desk-test-embedders\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[desk.embedders]\ntrigram = {MODULE}:factory\n"
                                           f"broken = {MODULE}:raising_factory\n")
    monkeypatch.syspath_prepend(str(site))


def test_an_embedder_named_by_entry_point_and_by_module_path_gives_the_same_answer(
        desk: DeskFolder, run: DeskRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _archive(desk)
    _installed(tmp_path, monkeypatch)
    assert {"trigram", "broken"} <= set(installed_embedders())
    by_name = run("recall", "kestral", "--embedder", "trigram", "--now", AS_OF, "--json")
    by_path = run("recall", "kestral", "--embedder", f"{MODULE}:factory", "--now", AS_OF, "--json")
    assert by_name.exit_code == 0 and by_path.exit_code == 0, by_name.output + by_path.output
    assert json.loads(by_name.stdout) == json.loads(by_path.stdout)
    assert json.loads(by_name.stdout)["hits"][0]["score_breakdown"]["dense"]["rank"] == 1
    monkeypatch.setenv("DESK_EMBEDDER", "trigram")
    assert json.loads(run("recall", "kestral", "--now", AS_OF, "--json").stdout) == json.loads(by_name.stdout)
    monkeypatch.setenv("DESK_EMBEDDER", "")  # empty: off
    off = json.loads(run("recall", "kestral", "--now", AS_OF, "--json").stdout)
    assert off["hits"] == [] and "embedder" not in off["query"]
    xml = run("recall", "kestral", "--embedder", "trigram", "--now", AS_OF, "--xml").stdout
    assert "dense_rrf_contribution=" in xml and "kestrel" in xml


@pytest.mark.parametrize(("spec", "code", "words"), [
    ("nosuch", 2, "no embedder of that name"),
    ("nosuch_module_xyz:factory", 2, "no module named 'nosuch_module_xyz'"),
    (f"{MODULE}:missing", 2, "has no 'missing'"),
    (f"{MODULE}:failing_factory", 1, "model file /models/none.bin not found"),
    (f"{MODULE}:not_an_embedder", 1, "not an embedder"),
    (f"{MODULE}:raising_factory", 1, "CUDA out of memory"),
    ("broken", 1, "CUDA out of memory"),
    (f"{MODULE}:wrong_dimension_factory", 1, "dimension 32, not its declared 64"),
])
def test_a_bad_embedder_is_a_clear_error_and_writes_nothing(
        desk: DeskFolder, run: DeskRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        spec: str, code: int, words: str) -> None:
    _archive(desk)
    _installed(tmp_path, monkeypatch)
    assert run("recall", "kestrel", "--now", AS_OF).exit_code == 0  # the search cache exists already
    before = snapshot(desk.root)
    result = run("recall", "kestrel", "--embedder", spec, "--now", AS_OF)
    assert result.exit_code == code, result.output
    assert words in result.stderr and "hint:" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""
    as_json = run("recall", "kestrel", "--embedder", spec, "--now", AS_OF, "--json")
    assert as_json.exit_code == code and json.loads(as_json.stdout)["status"] == "error"
    assert snapshot(desk.root) == before
    vectors = desk.cache_dir / hybrid.CACHE_FILE
    if vectors.exists():
        with sqlite3.connect(vectors) as db:
            assert db.execute("SELECT count(*) FROM vectors").fetchone() == (0,)


def test_the_api_takes_an_embedder_object_and_refuses_what_is_not_one(desk: DeskFolder) -> None:
    from desk.errors import DeskError, UsageError

    _archive(desk)
    with open_desk(desk.root) as d:
        assert _recall(d, "kestral", embedder=TrigramEmbedder())["hits"]
        with pytest.raises(DeskError, match="not an embedder") as refused:
            d.recall("kestrel", embedder=object())
        assert refused.value.exit_code == 1
        with pytest.raises(UsageError):
            d.recall("kestrel", embedder="  ")
    assert isinstance(load_embedder(f"{MODULE}:factory"), TrigramEmbedder)


def test_the_first_hybrid_recall_shows_embedding_progress(desk: DeskFolder, run: DeskRunner,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    _archive(desk, [f"turn {i} about kestrels" for i in range(150)])
    monkeypatch.setenv("DESK_PROGRESS_INTERVAL", "0")
    result = run("recall", "kestrel", "--embedder", f"{MODULE}:factory", "--now", AS_OF, "--json")
    assert result.exit_code == 0
    assert "desk: embedding records for recall: 64/150 records" in result.stderr
    assert "desk: embedding records for recall: done" in result.stderr
    json.loads(result.stdout)


def test_a_search_cache_rebuilt_in_process_is_mapped_again_without_embedding_again(desk: DeskFolder) -> None:
    """A rebuild numbers the records anew (here an event appended to an early day moves ahead of
    later days' records): the dense ranking must follow the new numbers, not the old."""
    _archive(desk)
    embedder = TrigramEmbedder()
    with open_desk(desk.root) as d:
        _recall(d, "kestrel", embedder=embedder)
        append_event(desk, "inbound", "an osprey over the harbour", at="2026-11-20T09:00:00Z", session="s1")
        _recall(d, "osprey", embedder=embedder)  # numbered last, incrementally
        d._search_cache.rebuild()  # numbered by file now: it moves to the front
        embedder.calls.clear()
        warm = _recall(d, "ospray harbor", embedder=embedder)
        assert embedder.calls == [["ospray harbor"]]  # vectors reused, only the query embedded
    with open_desk(desk.root) as cold:
        assert _recall(cold, "ospray harbor", embedder=TrigramEmbedder()) == warm
    assert "osprey" in warm["hits"][0]["snippet"]


def test_a_rebuild_of_the_search_cache_drops_the_vectors_no_live_record_has(desk: DeskFolder) -> None:
    from desk.memory.operations import remember

    now = dt.datetime(2026, 11, 25, tzinfo=dt.timezone.utc)  # a fixed clock, before AS_OF
    remember(desk, "kestrel-plan", type="decision", description="The kestrel plan",
             body="Kestrel ships in March.", now=now)
    embedder = TrigramEmbedder()

    def texts() -> list[str]:
        with sqlite3.connect(desk.cache_dir / hybrid.CACHE_FILE) as db:
            return sorted(h for (h,) in db.execute("SELECT hash FROM vectors"))

    with open_desk(desk.root) as d:
        _recall(d, "kestrel", embedder=embedder)
        remember(desk, "kestrel-plan", type="decision", description="The kestrel plan",
                 body="Kestrel ships in April.", now=now)
        _recall(d, "kestrel", embedder=embedder)
        assert len(texts()) == 2  # the changed memory's old vector is kept until a rebuild
        d._search_cache.rebuild()
        _recall(d, "kestrel", embedder=embedder)
    kept = texts()
    assert len(kept) == 1  # only the April text's vector: the March one had no live record
    with open_desk(desk.root) as d:
        hits = _recall(d, "kestrel", embedder=embedder, kind="memory")["hits"]
    assert "April" in hits[0]["snippet"] and texts() == kept
