"""bench/retrieval/conversations.py: the retrieval benchmark's generator is deterministic, its labels
point at real turns, and what it writes is archive JSONL that `desk archive import` accepts."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import desk.api as desk_api

_PATH = Path(__file__).resolve().parents[1] / "bench" / "retrieval" / "conversations.py"


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_conversations", _PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_same_seed_same_conversations_byte_for_byte() -> None:
    gen = _generator()
    first = [gen.jsonl_lines(c) + [json.dumps(gen.questions_json(c))] for c in gen.generate_split(7, 2, sessions=8)]
    again = [gen.jsonl_lines(c) + [json.dumps(gen.questions_json(c))] for c in gen.generate_split(7, 2, sessions=8)]
    other = [gen.jsonl_lines(c) for c in gen.generate_split(8, 2, sessions=8)]
    assert first == again
    assert [c[:-1] for c in first] != other


def test_labels_point_at_real_turns_of_their_conversation() -> None:
    gen = _generator()
    convs = gen.generate_split(1, 1)
    assert {c.lang for c in convs} == {"en", "zh"}
    for conv in convs:
        turns = {t.id: t for t in conv.turns}
        assert len(turns) == len(conv.turns)  # ids unique
        assert {q.kind for q in conv.questions} == set(gen.KINDS)
        sessions = {t.session for t in conv.turns}
        assert len(sessions) > 20 and len(conv.turns) > 400
        for q in conv.questions:
            assert q.evidence and all(e in turns for e in q.evidence), q
            # the evidence is said by the person the question is about
            assert all(turns[e].speaker in q.text for e in q.evidence), q
            if q.kind == "multi":
                assert len({turns[e].session for e in q.evidence}) > 1, q
        times = [t.at for t in conv.turns]
        assert times == sorted(times)


def test_written_jsonl_imports_into_a_desk(tmp_path: Path) -> None:
    gen = _generator()
    conv = gen.generate("3", "zh", 0, sessions=3)
    desk = desk_api.init(tmp_path / "desk")
    imported = desk.archive_import(gen.write_jsonl(conv, tmp_path / "turns.jsonl")).to_json()
    assert imported["imported"] == len(conv.turns)
    listed = desk.archive_list().to_json()
    events = listed["events"] if isinstance(listed, dict) else listed
    assert [e["meta"]["desk.source_id"] for e in events] == [t.id for t in conv.turns]
    desk.close()


def _digest(gen, **kwargs) -> str:  # type: ignore[no-untyped-def]
    import hashlib

    h = hashlib.sha256()
    for c in gen.generate_split(7, 2, sessions=8, **kwargs):
        h.update("\n".join(gen.jsonl_lines(c) + [json.dumps(gen.questions_json(c), ensure_ascii=False)]).encode())
    return h.hexdigest()


def test_version_1_is_the_corpus_of_the_first_round_and_version_2_names_topics_sometimes() -> None:
    """Version 1 stays byte for byte what the first round measured (its figures stay
    reproducible); version 2 (the default) adds statements that name their topic, and only those."""
    gen = _generator()
    assert _digest(gen, version=1) == "98ae4f910972f364bb28d6a0c500c3bf359f89ac88a5582120d4a8151daa2e8b"
    assert gen.BENCHMARK_VERSION == 3 and _digest(gen) == _digest(gen, version=3) != _digest(gen, version=2)
    assert _digest(gen, version=2) != _digest(gen, version=1)
    extra = {t.split("{")[0] for lang in gen.EXTRA_STATE.values() for ts in lang.values() for t in ts}
    said = [t.text for c in gen.generate_split(1, 1) for t in c.turns]
    old = [t.text for c in gen.generate_split(1, 1, version=1) for t in c.turns]
    assert any(s.startswith(tuple(extra)) for s in said)
    assert not any(s.startswith(tuple(x for x in extra if x)) for s in old)


def test_version_3_adds_temporal_questions_after_version_2s_unchanged_ones() -> None:
    """Issue 33: "where did Mara live before moving to Lyon?" points at the earlier move, "what
    did Mara say about travelling last spring?" at her trips that season; the turns and every
    version-2 question stay as they were, so version 2's per-kind figures stay comparable."""
    gen = _generator()
    for old, new in zip(gen.generate_split(1, 1, version=2), gen.generate_split(1, 1, version=3)):
        assert old.turns == new.turns and new.questions[:len(old.questions)] == old.questions
        added = new.questions[len(old.questions):]
        assert added and {q.kind for q in added} == {"temporal"}
        turns = {t.id: t for t in new.turns}
        for q in added:
            at = [turns[e].at for e in q.evidence]
            if new.lang == "en" and "before" in q.text:  # the earlier of two statements
                assert len(at) == 1
            elif new.lang == "en":
                season = q.text.rsplit(" ", 1)[1].rstrip("?")
                assert {gen.SEASONS["en"][a.month % 12 // 3] for a in at} == {season}
