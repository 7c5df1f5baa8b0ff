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
