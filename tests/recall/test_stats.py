"""desk stats and the token estimator."""

from __future__ import annotations

import datetime as dt
import json

from desk.layout import DeskFolder
from desk.memory.operations import remember
from desk.recall.stats import desk_stats
from desk.text.tokens import estimate_tokens
from tests.conftest import DeskRunner, snapshot

NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc)


def test_estimator_rules() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("report") == 2            # ceil(6 / 4)
    assert estimate_tokens("a bc defg") == 3         # one per short word, whitespace free
    assert estimate_tokens("报告必须用中文") == 7       # one per CJK character
    assert estimate_tokens("hello, 世界!\n") == 2 + 1 + 2 + 1 + 1
    assert estimate_tokens("naïve") == 2             # non-ASCII letters: ceil(len / 3)
    assert estimate_tokens("x" * 4000) == 1000


def test_stats_counts_types_tokens_and_staleness(desk: DeskFolder, run: DeskRunner) -> None:
    old = NOW - dt.timedelta(days=400)
    remember(desk, "report-style", type="preference", description="Report style", body="报告必须用中文。" * 20,
             now=old)
    remember(desk, "db-choice", type="decision", description="DB", body="We chose SQLite. " * 30, now=NOW)
    remember(desk, "freeze", type="decision", description="Freeze", body="Code freeze this week.",
             expires="2026-11-30T00:00:00Z", now=NOW)
    stats = desk_stats(desk, now=NOW + dt.timedelta(days=2))
    assert stats.memories == 3 and stats.by_type == {"decision": 2, "preference": 1}
    assert stats.expired == ["freeze"] and stats.unverified == ["report-style"]
    assert stats.index_tokens == estimate_tokens(desk.path("MEMORY.md").read_text())
    bodies = sum(estimate_tokens(desk.path(f"memory/{n}.md").read_text().split("\n---\n", 1)[1])
                 for n in ("report-style", "db-choice", "freeze"))
    assert stats.body_tokens == bodies and stats.body_tokens > stats.index_tokens
    before = snapshot(desk.root)
    data = json.loads(run("stats", "--json").output)
    assert data["memories"]["total"] == 3 and data["tokens"]["bodies_on_disk"] == bodies
    assert snapshot(desk.root) == before


def test_stats_archive_size(desk: DeskFolder, run: DeskRunner) -> None:
    from desk.archive.store import append_event

    for i in range(5):
        append_event(desk, "inbound", f"message {i}", at=f"2026-11-2{i}T10:00:00Z")
    data = json.loads(run("stats", "--json").output)
    files = list(desk.path(".system/archive").glob("*.jsonl"))
    assert data["archive"] == {"files": 5, "events": 5, "bytes": sum(f.stat().st_size for f in files)}
    assert "5 events in 5 files" in run("stats").output
