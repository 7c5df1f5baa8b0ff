"""desk.guard.checkup: `desk doctor` with git's reads started before the doctor's modules load
reports exactly what desk.guard.doctor.diagnose reports on its own."""

from __future__ import annotations

import json
import os
import re
import time

import pytest

from desk.gate import whole
from desk.guard import checkup, doctor
from desk.layout import DeskFolder
from desk.storage.lock import desk_lock
from tests.guard_helpers import memory_text, write

OLD = time.time() - 3600


def same(desk: DeskFolder) -> dict[str, object]:
    early = checkup.diagnose(desk).to_json()
    assert _ageless(early) == _ageless(doctor.diagnose(desk).to_json())
    return early


def _ageless(report: dict[str, object]) -> str:
    """The report with a lock's age in seconds left out: the two runs are a moment apart, and a
    lock 3600.9 s old in the first is 3601 s old in the second."""
    return re.sub(r"\(\d+ s old", "(N s old", json.dumps(report, sort_keys=True))


def test_the_early_reads_find_what_the_doctor_finds(desk: DeskFolder) -> None:
    assert same(desk)["status"] == "ok"
    write(desk.root, "memory/broken.md", "---\nname: broken\n---\nno description\n")
    write(desk.root, "memory/fine.md", memory_text("fine"))  # MEMORY.md left stale
    (desk.root / "memory/.desk-tmp-left").write_text("x")
    os.utime(desk.root / "memory/.desk-tmp-left", (OLD, OLD))
    found = same(desk)
    checks = {p["check"] for p in found["problems"]}  # type: ignore[attr-defined]
    assert checks == {"temp-file", "index-stale", "frontmatter-field"}


def test_a_stale_git_lock_is_judged_after_doctors_own_git_is_done(desk: DeskFolder) -> None:
    """The lock checks ask whether a git process works in the desk: the listing doctor started is
    not one (it is waited for first), so an old lock is `found`, not blamed on a running git."""
    lock = desk.git_dir / "refs/heads/main.lock"
    lock.write_text("")
    os.utime(lock, (OLD, OLD))
    for _ in range(3):
        problems = {p["path"]: p for p in same(desk)["problems"]}  # type: ignore[attr-defined]
        assert problems[".git/refs/heads/main.lock"]["status"] == "found"


def test_a_held_desk_lock_is_reported_and_nothing_is_left_running(desk: DeskFolder,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(whole, "DOCTOR_LOCK_WAIT", 0.1)
    with desk_lock(desk.lock_path):
        report = checkup.diagnose(desk)
    problems = {p.check: p for p in report.problems}
    assert problems["desk-lock"].status == "needs-person"
    assert checkup.diagnose(desk).ok  # the lock was given back


def test_repair_reads_after_the_repairs(desk: DeskFolder) -> None:
    temp = desk.root / "memory/.desk-tmp-old"
    temp.write_text("x")
    os.utime(temp, (OLD, OLD))
    report = checkup.diagnose(desk, repair=True)
    assert [p.status for p in report.problems if p.check == "temp-file"] == ["repaired"]
    assert not temp.exists() and checkup.diagnose(desk).ok


def test_doctor_looks_for_the_transactions_markers_by_their_name() -> None:
    from desk.transaction import PENDING_PREFIX

    assert doctor.PENDING_MARKERS == f"{PENDING_PREFIX}*.json"
