"""The kill matrix of `desk resolve`: SIGKILL a real process at every write boundary, then recover.

A real `python -m desk resolve` runs with DESK_TEST_CRASH_AT naming one boundary of the commit
path (desk.storage.crash): before and after the intent marker, after the objects, after each of the
four files (the audit line, the queue, MEMORY.md, the memory), after the index refresh (what `git
add` would do), after the branch moved, after the index was published, after the marker was
cleared. The process kills itself there with SIGKILL. Then the next command, the same resolve
retried (or `desk doctor --repair` first), must leave exactly one decision: one audit line, one
resolve commit, the case resolved, the memory holding the chosen value, a clean `git fsck`, no
marker and no lock left; retrying once more changes nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import desk as desk_api
from desk.archive.store import clone_id
from desk.layout import DeskFolder
from desk.formats.memory_index import render_index
from desk.gate.entries import entries_in_worktree
from desk.setup.init import init_desk
from desk.storage.crash import CRASH_ENV, CRASH_POINTS
from tests.conftest import git
from tests.digest.test_resolve import NOW, audit_records, commits, pick, tie_against_incumbent

CHOICE = "Use Postgres."
FILES = [".system/adjudications.{clone}.jsonl", ".system/conflicts.json", "MEMORY.md", "memory/storage.db.md"]
POINTS = ["before-marker", "after-marker", "after-objects",
          *(f"after-write:{f}" for f in FILES),
          "after-index-refresh", "after-update-ref", "after-publish", "after-marker-cleared"]
LANDED = {"after-update-ref", "after-publish", "after-marker-cleared"}  # the branch had moved
# Every file written, the branch not moved: recovery finishes the commit (rolls forward). Killed
# earlier than these, recovery puts the files back (rolls back) and the retry decides anew.
FINISHED = {"after-write:memory/storage.db.md", "after-index-refresh"}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """One desk with an open case (SQLite against a MySQL/Postgres tie), copied for each kill."""
    root = tmp_path_factory.mktemp("template") / "desk"
    init_desk(root)
    d = desk_api.open(root)
    case = tie_against_incumbent(d)
    return root, case


def resolve_args(case: dict[str, Any]) -> list[str]:
    return ["resolve", case["id"], pick(case, CHOICE), "--expected-revision", str(case["revision"]),
            "--event-id", "review:kill", "--actor", "ada@example.org", "--rationale", "Needs PostGIS."]


def retry(root: Path, case: dict[str, Any]) -> Any:
    return desk_api.open(root).resolve(case["id"], pick(case, CHOICE), expected_revision=case["revision"],
                                       event_id="review:kill", actor="ada@example.org",
                                       rationale="Needs PostGIS.", now=NOW).value


def kill_at(root: Path, case: dict[str, Any], point: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k.startswith("GIT_CONFIG")}
    env[CRASH_ENV] = point
    proc = subprocess.run([sys.executable, "-m", "desk", "--desk", str(root), *resolve_args(case)],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == -9, f"{point} never fired: {proc.returncode} {proc.stdout} {proc.stderr}"


def assert_one_decision(d: DeskFolder) -> None:
    assert [r["event"] for r in audit_records(d)] == ["review:kill"]
    assert len(commits(d)) == 1
    assert d.path("memory/storage.db.md").read_text().endswith(f"\n{CHOICE}\n")
    assert git(d.root, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(d.root, "diff", "--cached", "--name-only") == ""
    assert not list(d.git_dir.glob("desk-pending-*")) and not (d.git_dir / "index.lock").exists()
    assert git(d.root, "fsck", "--full", "--no-dangling").strip() == ""
    assert (d.root / "MEMORY.md").read_bytes() == render_index(entries_in_worktree(d).values())
    [case] = desk_api.open(d.root).conflicts_list(include_closed=True).cases[-1:]
    assert case["status"] == "resolved"


def copy_of(template: Path, tmp_path: Path) -> DeskFolder:
    root = tmp_path / "desk"
    shutil.copytree(template, root, symlinks=True)
    return DeskFolder(root)


def test_every_named_crash_point_is_in_the_matrix() -> None:
    named = {p.split(":")[0] for p in POINTS}
    assert named == set(CRASH_POINTS) and len(POINTS) >= 8


@pytest.mark.parametrize("point", POINTS)
def test_the_next_resolve_rolls_forward_or_back(template: tuple[Path, dict[str, Any]], tmp_path: Path,
                                               point: str) -> None:
    root, case = template
    d = copy_of(root, tmp_path)
    point = point.format(clone=clone_id(d))
    kill_at(d.root, case, point)
    landed = len(commits(d)) == 1
    assert landed == (point in LANDED)
    result = retry(d.root, case)  # the next command: recovery first, then the decision (once)
    assert result.status == ("unchanged" if point in LANDED | FINISHED else "resolved")
    assert_one_decision(d)
    assert retry(d.root, case).status == "unchanged"
    assert_one_decision(d)


@pytest.mark.parametrize("point", ["after-write:MEMORY.md", "after-index-refresh", "after-update-ref"])
def test_doctor_repair_settles_it_and_is_idempotent(template: tuple[Path, dict[str, Any]], tmp_path: Path,
                                                    point: str) -> None:
    root, case = template
    d = copy_of(root, tmp_path)
    kill_at(d.root, case, point)
    first = desk_api.open(d.root).doctor(repair=True)
    again = desk_api.open(d.root).doctor(repair=True)
    assert again.to_json() == desk_api.open(d.root).doctor(repair=True).to_json()
    assert not list(d.git_dir.glob("desk-pending-*")), first.to_json()
    assert len(commits(d)) == (1 if point in LANDED | FINISHED else 0)  # forward, or back
    assert git(d.root, "status", "--porcelain", "--untracked-files=all") == ""
    retry(d.root, case)
    assert_one_decision(d)


def test_a_tampered_marker_is_refused_fail_closed(template: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    from desk.errors import ConflictError
    from tests.conftest import snapshot

    root, case = template
    d = copy_of(root, tmp_path)
    kill_at(d.root, case, "after-write:MEMORY.md")
    [marker] = d.git_dir.glob("desk-pending-*")
    text = marker.read_text()
    before = snapshot(d.root)
    for tampered in (text.replace('"new": "', '"new": "0', 1), "{not json"):
        marker.write_text(tampered)
        with pytest.raises(ConflictError) as err:
            retry(d.root, case)
        assert "altered" in err.value.message and marker.exists()
        assert {k: v for k, v in snapshot(d.root).items() if "desk-pending" not in k} == {
            k: v for k, v in before.items() if "desk-pending" not in k}  # refused, nothing touched
    report = desk_api.open(d.root).doctor(repair=True)  # may regenerate MEMORY.md; never acts on the marker
    assert report.exit_code == 3 and marker.exists() and commits(d) == []
