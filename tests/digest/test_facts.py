"""Fact validation (docs/design.md §8.0's MemoryFact) and reading facts back from archive records."""

from __future__ import annotations

import datetime as dt

import pytest

from desk.errors import RejectedError
from desk.digest.fact_version import NewerFactError
from desk.digest.facts import fact_from_record, key_problem, validate_fact


@pytest.mark.parametrize("key", ["runtime.python-version", "storage.sqlite.journal_mode", "a", "x1.y2"])
def test_good_keys(key: str) -> None:
    assert key_problem(key) is None


@pytest.mark.parametrize("key", ["", "Runtime", "runtime..version", ".x", "x.", "use python 3.11",
                                 "a/b", "x" * 81, "é"])
def test_bad_keys(key: str) -> None:
    assert key_problem(key) is not None


def test_validate_fact_strips_and_accepts() -> None:
    fact = validate_fact("  Use WAL.  ", kind="decision", importance=5, key="storage.mode")
    assert fact.content == "Use WAL." and fact.payload() == {
        "kind": "decision", "importance": 5, "key": "storage.mode", "schema_version": 2}


@pytest.mark.parametrize("args, field", [
    (dict(content="  ", kind="decision", importance=3), "content"),
    (dict(content="x", kind="opinion", importance=3), "kind"),
    (dict(content="x", kind="decision", importance=0), "importance"),
    (dict(content="x", kind="decision", importance=6), "importance"),
    (dict(content="x", kind="decision", importance=3, key="Bad Key"), "key"),
])
def test_invalid_facts_are_rejected_naming_the_field(args: dict, field: str) -> None:
    content = args.pop("content")
    with pytest.raises(RejectedError) as err:
        validate_fact(content, **args)
    assert field in err.value.message


def test_fact_from_record_validates_hand_appended_records() -> None:
    record = {"id": "e1", "at": "2026-10-01T10:00:00.000001Z", "kind": "fact", "content": "Use WAL.",
              "payload": {"kind": "pitfall", "importance": 4, "key": None}, "session": "s1"}
    fact = fact_from_record(record)
    assert fact.at == dt.datetime(2026, 10, 1, 10, 0, 0, 1, tzinfo=dt.timezone.utc)
    assert (fact.kind, fact.importance, fact.key, fact.session) == ("pitfall", 4, None, "s1")
    for broken in ({**record, "payload": None}, {**record, "content": ""},
                   {**record, "payload": {"kind": "pitfall", "importance": "4"}},
                   {**record, "payload": {"kind": "mood", "importance": 4}}):
        with pytest.raises(ValueError):
            fact_from_record(broken)


def test_fact_versions_every_earlier_one_read_a_newer_one_refused() -> None:
    record = {"id": "e1", "at": "2026-10-01T10:00:00Z", "kind": "fact", "content": "Use WAL.",
              "payload": {"kind": "pitfall", "importance": 4, "key": None}}
    v1 = fact_from_record(record)  # no schema_version: version 1, as every fact before it
    v2 = fact_from_record({**record, "payload": {**record["payload"], "schema_version": 2}})
    assert v1 == v2
    for bad in (0, -1, True, "2", 2.0, None):
        with pytest.raises(ValueError, match="schema_version"):
            fact_from_record({**record, "payload": {**record["payload"], "schema_version": bad}})
    # A newer fact may mean other fields: it is refused before they are read, naming where it is.
    newer = {**record, "payload": {"schema_version": 3, "weight": 0.7}}
    with pytest.raises(NewerFactError) as info:
        fact_from_record(newer, ".system/archive/2026-10-01.abc.jsonl:7")
    assert info.value.exit_code == 1
    assert info.value.message.startswith(".system/archive/2026-10-01.abc.jsonl:7: fact e1 has schema_version 3: "
                                         "made by a newer desk")
    assert "upgrade desk" in (info.value.hint or "")
