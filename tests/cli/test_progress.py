"""Progress lines (issue 9.15): a line every interval, on any stderr, driven by an injected clock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from desk.cli.progress import ProgressLines
from desk.layout import DeskFolder
from tests.conftest import DeskRunner


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_line_per_interval_and_none_for_quick_work() -> None:
    clock, out = Clock(), []
    with ProgressLines("importing x", out.append, unit="events", interval=3, clock=clock,
                       heartbeat=False) as lines:
        lines(10, 100)
        clock.now += 2.9
        lines(20, 100)
        assert out == []  # under one interval: silent
        clock.now += 0.2
        lines(30, 100)
        clock.now += 1
        lines(40, 100)
        clock.now += 3
        lines(90, 100)
    assert out == ["desk: importing x: 30/100 events (30%), 3 s",
                   "desk: importing x: 90/100 events (90%), 7 s",
                   "desk: importing x: done, 7 s"]


def test_work_that_ends_within_the_interval_prints_nothing() -> None:
    clock, out = Clock(), []
    with ProgressLines("checkpoint", out.append, interval=3, clock=clock, heartbeat=False) as lines:
        lines(1, 2)
        clock.now += 1
    assert out == []


def test_the_heartbeat_reports_a_step_that_calls_nothing() -> None:
    clock, out = Clock(), []
    lines = ProgressLines("checkpoint", out.append, interval=3, clock=clock, heartbeat=False)
    clock.now += 5
    lines.beat()  # what the heartbeat thread calls every interval
    assert out == ["desk: checkpoint: working, 5 s"]


@pytest.mark.parametrize("verb", ["checkpoint", "recall"])
def test_checkpoint_and_recall_print_progress_on_a_non_terminal(desk: DeskFolder, run: DeskRunner,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 verb: str) -> None:
    for i in range(3):
        assert run("archive", "append", "--kind", "inbound", "--at", f"2026-11-2{i + 1}T10:00:00Z",
                   f"event {i} about reports").exit_code == 0
    monkeypatch.setenv("DESK_PROGRESS_INTERVAL", "0")
    args = ["checkpoint"] if verb == "checkpoint" else ["recall", "reports", "--json"]
    result = run(*args)
    assert result.exit_code == 0
    label = "checkpoint" if verb == "checkpoint" else "indexing the archive for recall"
    assert f"desk: {label}: " in result.stderr and f"desk: {label}: done" in result.stderr
    if verb == "recall":
        json.loads(result.stdout)  # stdout stays one JSON object


def test_work_announced_by_its_size_prints_its_first_line_at_once() -> None:
    clock, out = Clock(), []
    with ProgressLines("indexing", out.append, unit="bytes", interval=3, clock=clock, heartbeat=False,
                       announce=1000) as lines:
        lines(0, 999)  # below the size: quiet as usual
        assert out == []
    with ProgressLines("indexing", out.append, unit="bytes", interval=3, clock=clock, heartbeat=False,
                       announce=1000) as lines:
        lines(0, 5000)
        lines(100, 5000)  # then one line per interval again
        clock.now += 3
        lines(4000, 5000)
    assert out == ["desk: indexing: 0/5000 bytes (0%), 0 s", "desk: indexing: 4000/5000 bytes (80%), 3 s",
                   "desk: indexing: done, 3 s"]


def test_the_first_recall_after_an_import_shows_progress_at_once_on_a_non_terminal(
        desk: DeskFolder, run: DeskRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first recall after importing many events builds the search cache: with the size
    threshold lowered to this small import, its progress shows at once (the default interval,
    no clock tricks), and the recall that follows, with nothing to index, prints nothing."""
    import desk.cli.read as read

    events = tmp_path / "history.jsonl"
    events.write_text("".join(json.dumps({"kind": "inbound", "at": f"2026-11-2{i % 9}T10:00:00Z",
                                          "content": f"turn {i} about the kestrel report"}) + "\n"
                              for i in range(2000)), encoding="utf-8")
    assert run("archive", "import", str(events)).exit_code == 0
    archived = sum(p.stat().st_size for p in desk.path(".system/archive").glob("*.jsonl"))
    monkeypatch.delenv("DESK_PROGRESS_INTERVAL", raising=False)
    monkeypatch.setattr(read, "ANNOUNCE_BYTES", archived)
    first = run("recall", "kestrel", "--json")
    assert first.exit_code == 0
    assert f"desk: indexing the archive for recall: 0/{archived} bytes (0%)" in first.stderr
    assert "desk: indexing the archive for recall: done" in first.stderr
    assert len(json.loads(first.stdout)["hits"]) == 5
    second = run("recall", "kestrel", "--json")
    assert second.exit_code == 0 and second.stderr == ""
