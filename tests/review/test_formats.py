"""The conflict queue's and the audit's formats against hostile input: schema, versions, chains."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from desk.formats.audit import check_audit_change, parse_audit, render_line
from desk.formats.queue import event_id_problem, parse_queue, queue_findings, render_queue

P = ".system/conflicts.json"


def case(n: int = 0, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": f"case-{n:016x}", "domain": "key:a", "key": "a", "revision": n + 1, "status": "open",
        "opened": "2026-11-29T00:00:00Z", "closed": None, "superseded_by": None, "note": None,
        "fingerprint": "sha256:" + "0" * 64, "active": None, "observed_fact_ids": ["f1"],
        "candidates": [{"id": "cand-" + "1" * 12, "role": "challenger", "content": "A.", "kind": "decision",
                        "importance": 5, "evidence": ["f1"], "latest": "2026-09-01T00:00:00Z"}],
        "resolution": None}
    data.update(changes)
    return data


def rules(cases: list[dict[str, Any]], version: int = 2) -> list[str]:
    text = json.dumps({"schema_version": version, "cases": cases}, indent=2)
    return [f.rule for f in queue_findings(P, text.encode())]


def test_a_good_queue_round_trips_and_v1_reads() -> None:
    cases = [case(0, status="superseded", closed="t", superseded_by=case(1)["id"]), case(1)]
    assert parse_queue(render_queue(cases)) == cases
    v1 = [{k: v for k, v in c.items() if k != "resolution"} for c in cases]
    assert parse_queue(json.dumps({"schema_version": 1, "cases": v1}).encode()) == cases


@pytest.mark.parametrize("bad, rule", [
    ([case(id="case-" + "0" * 16 + "\n")], "conflicts-schema"),  # `$` before a final newline: refused
    ([case(revision=True)], "conflicts-schema"),
    ([case(revision="1")], "conflicts-schema"),
    ([case(status="done")], "conflicts-schema"),
    ([case(extra=1)], "conflicts-schema"),
    ([case(candidates=[])], "conflicts-schema"),
    ([case(revision=2)], "conflicts-chain"),
    ([case(0), case(1)], "conflicts-chain"),  # two open cases of one domain
    ([case(0, status="superseded", closed="t", superseded_by="case-" + "f" * 16), case(1)], "conflicts-chain"),
    ([case(0, status="resolved", closed="t")], "conflicts-chain"),  # no resolution
    ([case(0, closed="t")], "conflicts-chain"),
    ([case(0), case(0, domain="key:b", revision=1)], "conflicts-chain"),  # the same id twice
])
def test_broken_queues_are_named(bad: list[dict[str, Any]], rule: str) -> None:
    assert rule in rules(bad)


@pytest.mark.parametrize("data, rule", [
    (b'{"schema_version": 2, "cases": [NaN]}', "conflicts-json"),
    (b'{"schema_version": 3, "cases": []}', "conflicts-version"),
    (b'{"schema_version": true, "cases": []}', "conflicts-schema"),
    (b'[]', "conflicts-schema"),
    (b'\xef\xbb\xbf{}', "conflicts-json"),
    (b'{"schema_version": 2, "cases": []}\r\n{', "conflicts-json"),
])
def test_broken_files_are_named(data: bytes, rule: str) -> None:
    assert [f.rule for f in queue_findings(P, data)][:1] == [rule]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_any_bytes_give_findings_or_cases_never_a_traceback(data: bytes) -> None:
    found = queue_findings(P, data)
    assert all(f.path == P and f.line >= 1 for f in found)


@pytest.mark.parametrize("event", ["", "e\n", "\u200be", "a b", "x" * 201, "-a", "é"])
def test_event_ids_are_matched_whole(event: str) -> None:
    assert event_id_problem(event) is not None
    assert event_id_problem("review:case-1:r1") is None


def record(event: str) -> dict[str, Any]:
    return {"event": event, "case": "c", "revision": 1, "domain": "d", "key": None, "candidate": "x",
            "role": "challenger", "outcome": "kept", "content": "A\r\nB\u2028", "evidence": [],
            "actor": "ada", "rationale": "why", "before": None, "after": None, "at": "t", "desk_id": "D"}


def audit(*events: str) -> bytes:
    data = b""
    for event in events:
        data += render_line(record(event), data)
    return data


def test_an_audit_chains_and_only_grows() -> None:
    old, new = audit("e1"), audit("e1", "e2")
    records, problems = parse_audit("a", new, "D")
    assert problems == [] and [r["event"] for r in records] == ["e1", "e2"]
    assert new.count(b"\n") == 2  # \r, \n and U+2028 in a field never start a line
    assert check_audit_change("a", old, new, "D") == []
    assert [f.rule for f in check_audit_change("a", new, old, "D")] == ["audit-append-only"]
    assert [f.rule for f in check_audit_change("a", new, None, "D")] == ["audit-append-only"]
    edited = new.replace(b'"why"', b'"WHY"', 1)
    assert [f.rule for f in parse_audit("a", edited, "D")[1]] == ["audit-chain"]
    assert "audit-record" in [f.rule for f in parse_audit("a", new[:-3], "D")[1]]
    assert "audit-record" in [f.rule for f in parse_audit("a", audit("e1") + audit("e1"), "D")[1]]
    assert "audit-record" in [f.rule for f in parse_audit("a", new, "other")[1]]
    bad = new.replace(b'"revision":1', b'"revision":true', 1)
    assert "audit-record" in [f.rule for f in parse_audit("a", bad, "D")[1]]
