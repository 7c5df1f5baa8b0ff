"""git's housekeeping after desk's commits (issue 34), through real git: `git gc --auto` started
when git's own sample says so (and not when gc.auto=0 or DESK_AUTO_GC=0), git's gc.pid lock held
while desk writes, and `desk doctor` reporting the object store and running `git gc`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

import desk as desk_api
from desk.errors import ConflictError
from desk.layout import DeskFolder
from desk.storage.git import Git, blob_sha
from desk.storage.git import housekeeping
from desk.storage.git.housekeeping import AUTO_GC_ENV, auto_gc_due, holding_gc_lock, start_auto_gc
from tests.conftest import DeskRunner, git


def loose_in_17(root: Path, count: int) -> None:
    """Loose blobs with ids starting 17 (the folder git samples for gc.auto) until it holds `count`."""
    folder, i = root / ".git/objects/17", 0
    while len(list(folder.glob("*"))) < count:
        data = f"sample {i}\n".encode()
        i += 1
        if blob_sha(data).startswith("17"):
            git_in(root, "hash-object", "-w", "--stdin", input=data)


def git_in(root: Path, *args: str, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=root, input=input, capture_output=True)


def counts(root: Path) -> dict[str, int]:
    lines = git(root, "count-objects", "-v").splitlines()
    return {k: int(v) for k, _, v in (line.partition(": ") for line in lines)}


def wait_until(check: object, limit: float = 60.0) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(autouse=True)
def auto_gc_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(AUTO_GC_ENV, raising=False)
    housekeeping._started.clear()


def test_a_remember_starts_git_gc_auto_when_git_would_and_it_packs_the_commit(desk: DeskFolder) -> None:
    git(desk.root, "config", "gc.auto", "300")  # git's sample: more than 2 loose objects in objects/17
    loose_in_17(desk.root, 2)
    assert not auto_gc_due(Git(desk.root))  # two is not more than 300/256 rounded up
    loose_in_17(desk.root, 3)
    assert auto_gc_due(Git(desk.root))
    d = desk_api.open(desk.root)
    d.remember("tz", "Paris time.", type="fact", description="timezone")
    d.remember("lang", "French.", type="fact", description="language")  # at once: the gc is not starved
    assert wait_until(lambda: counts(desk.root)["packs"] >= 1 and not (desk.git_dir / "gc.pid").exists())
    sha = git(desk.root, "rev-parse", "HEAD~1").strip()
    assert not (desk.git_dir / "objects" / sha[:2] / sha[2:]).exists()  # the commit is in the pack now
    assert git(desk.root, "show", "HEAD:memory/tz.md").count("Paris time.") == 1
    assert git_in(desk.root, "fsck", "--strict").returncode == 0
    # started once: the loose blobs no ref reaches stay (their grace) and start no gc per commit
    assert not start_auto_gc(Git(desk.root))


@pytest.mark.parametrize("setting", ["gc.auto=0", "env"])
def test_a_person_turning_auto_gc_off_is_honoured(desk: DeskFolder, setting: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    git(desk.root, "config", "gc.auto", "300")
    loose_in_17(desk.root, 3)
    if setting == "env":
        monkeypatch.setenv(AUTO_GC_ENV, "0")
    else:
        git(desk.root, "config", "gc.auto", "0")
    assert not start_auto_gc(Git(desk.root))
    desk_api.open(desk.root).remember("tz", "Paris time.", type="fact", description="timezone")
    assert counts(desk.root)["packs"] == 0 and not (desk.git_dir / "desk-gc.pid").exists()


def test_too_many_packs_is_due_by_gc_auto_pack_limit(desk: DeskFolder) -> None:
    git(desk.root, "config", "gc.autoPackLimit", "2")
    for i in range(3):
        git(desk.root, "-c", "user.name=Ada", "-c", "user.email=ada@example.org", "commit", "-q",
            "--allow-empty", "--no-verify", "-m", f"pack {i}")
        git(desk.root, "repack", "-q")  # one new pack of what is loose
    assert counts(desk.root)["packs"] == 3
    assert auto_gc_due(Git(desk.root))
    (desk.git_dir / "objects/pack" / next(p.name for p in (desk.git_dir / "objects/pack").glob("*.pack"))
     ).with_suffix(".keep").write_text("")
    assert not auto_gc_due(Git(desk.root))  # a kept pack is not counted, as git does not


def test_no_git_gc_starts_while_desk_writes(desk: DeskFolder) -> None:
    with holding_gc_lock(Git(desk.root)):
        refused = git_in(desk.root, "gc", "--prune=now")
        assert refused.returncode != 0 and b"already running" in refused.stderr, refused.stderr
    assert not (desk.git_dir / "gc.pid").exists()
    assert git_in(desk.root, "gc", "-q", "--prune=now").returncode == 0


def test_desk_waits_for_a_running_gc_but_not_for_its_own(desk: DeskFolder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(housekeeping, "GC_LOCK_WAIT", 0.3)
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        line = f"{sleeper.pid} {socket.gethostname()}"
        (desk.git_dir / "gc.pid").write_text(line)  # what a running `git gc` leaves, a live pid
        with pytest.raises(ConflictError, match="git gc"):
            desk_api.open(desk.root).remember("tz", "Paris time.", type="fact", description="timezone")
        assert not (desk.root / "memory/tz.md").exists()
        (desk.git_dir / "desk-gc.pid").write_text(line)  # the same, started by desk: no wait
        desk_api.open(desk.root).remember("tz", "Paris time.", type="fact", description="timezone")
        assert (desk.git_dir / "gc.pid").read_text() == line  # its lock left to it
    finally:
        sleeper.kill()
        sleeper.wait()
    desk_api.open(desk.root).remember("tz", "Berlin time.", type="fact", description="timezone")  # a dead pid


def test_doctor_reports_the_object_store_and_repair_runs_git_gc(desk: DeskFolder, run: DeskRunner,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(AUTO_GC_ENV, "0")
    for name in ("tz", "lang"):
        desk_api.open(desk.root).remember(name, f"About {name}.", type="fact", description=name)
    git(desk.root, "config", "gc.auto", "3")
    result = run("doctor", "--json")
    data = json.loads(result.output)
    assert result.exit_code == 3 and data["objects"]["overdue"] and data["objects"]["loose"] > 3
    assert [p["check"] for p in data["problems"]] == ["housekeeping"]
    assert "objects:" in run("doctor").output
    repaired = run("doctor", "--repair", "--json")
    data = json.loads(repaired.output)
    assert repaired.exit_code == 0, repaired.output
    assert data["problems"][0]["status"] == "repaired" and data["objects"]["packs"] >= 1
    git(desk.root, "config", "gc.auto", "0")  # a person who turned it off is never told it is overdue
    assert run("doctor").exit_code == 0


def test_a_gc_lock_file_a_killed_gc_left_does_not_stop_desk(desk: DeskFolder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(housekeeping, "GC_LOCK_WAIT", 30.0)
    lock = desk.git_dir / "gc.pid.lock"
    lock.write_text("")
    os.utime(lock, (time.time() - 60, time.time() - 60))
    started = time.monotonic()
    desk_api.open(desk.root).remember("tz", "Paris time.", type="fact", description="timezone")
    assert time.monotonic() - started < 30.0 and lock.exists()  # left to doctor's lock check
