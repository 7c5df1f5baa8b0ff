"""kill -9 leaves git's lock files (issue 15.7): desk records the git processes it starts, removes at
once the locks a dead one left, and doctor reports every `*.lock` under .git with a hint that says
what --repair will do. Real lock files, real dead processes (a killed `sleep`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from desk.layout import DeskFolder
from desk.memory.operations import remember
from desk.storage.git import LOCK_HINT
from desk.storage.git_locks import CHILD_RECORD_PREFIX, process_alive
from tests.conftest import DeskRunner
from tests.guard_helpers import commit, memory_text, sh, write

OLD = time.time() - 3600


def dead_pid() -> int:
    """The pid of a process that was killed with SIGKILL and reaped."""
    proc = subprocess.Popen(["sleep", "30"])
    proc.kill()
    proc.wait()
    assert not process_alive(proc.pid)
    return proc.pid


def doctor(run: DeskRunner, *args: str) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    result = run("doctor", "--json", *args)
    return result.exit_code, json.loads(result.output), ""


def problems(data: dict) -> dict[str, dict[str, str]]:  # type: ignore[type-arg]
    return {p["path"]: p for p in data["problems"]}


def leave_lock(desk: DeskFolder, rel: str, owner: int | None) -> Path:
    """`rel` under .git, as a killed git process leaves it; recorded as taken by `owner` (a desk git
    child) in a dead desk process's record, when given."""
    lock = desk.git_dir / rel
    if owner is not None:
        record = desk.git_dir / f"{CHILD_RECORD_PREFIX}{dead_pid()}.txt"
        record.write_text(f"{owner} {time.time_ns()} {lock}\n")
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_bytes(b"0" * 41)
    return lock


def test_a_ref_lock_left_by_a_killed_desk_git_is_removed_by_the_next_command(desk: DeskFolder,
                                                                             run: DeskRunner) -> None:
    lock = leave_lock(desk, "refs/heads/main.lock", dead_pid())
    code, data, _ = doctor(run)
    found = problems(data)[".git/refs/heads/main.lock"]
    assert code == 3 and found["status"] == "found" and "died holding it" in found["message"]
    result = run("remember", "after", "--type", "fact", "-d", "after the kill", "-t", "x", "Body.")
    assert result.exit_code == 0, result.output
    assert not lock.exists() and not list(desk.git_dir.glob(f"{CHILD_RECORD_PREFIX}*"))
    assert run("doctor").exit_code == 0


def test_desks_private_index_locks_never_block(desk: DeskFolder, run: DeskRunner) -> None:
    for name in ("desk-index.lock", "desk-person-index.lock"):
        leave_lock(desk, name, None)
    remember(desk, "after", type="fact", description="d", triggers=["x"], body="Body.")
    assert not (desk.git_dir / "desk-index.lock").exists()
    assert not (desk.git_dir / "desk-person-index.lock").exists()


def test_a_lock_of_unknown_owner_waits_for_the_threshold_and_the_hint_says_so(desk: DeskFolder,
                                                                              run: DeskRunner) -> None:
    lock = leave_lock(desk, "refs/heads/main.lock", None)
    result = run("remember", "blocked", "--type", "fact", "-d", "d", "-t", "x", "Body.")
    assert result.exit_code == 4 and "refs/heads/main.lock" in result.output
    assert "5 minutes old" in result.output and lock.exists()
    assert "5 minutes old" in LOCK_HINT
    code, data, text = doctor(run, "--repair")
    found = problems(data)[".git/refs/heads/main.lock"]
    assert code == 3 and found["status"] == "needs-person" and f"rm {lock}" in found["message"]
    assert lock.exists()
    text = run("doctor").output
    assert "--repair" not in text.splitlines()[-1]  # nothing it could fix: it does not suggest it
    os.utime(lock, (OLD, OLD))
    code, data, _ = doctor(run)
    assert problems(data)[".git/refs/heads/main.lock"]["status"] == "found"
    assert "run `desk doctor --repair`" in run("doctor").output
    code, data, _ = doctor(run, "--repair")
    assert code == 0 and problems(data)[".git/refs/heads/main.lock"]["status"] == "repaired"
    assert not lock.exists()
    assert run("remember", "works", "--type", "fact", "-d", "d", "-t", "x", "Body.").exit_code == 0


def test_a_live_git_child_keeps_its_lock(desk: DeskFolder, run: DeskRunner) -> None:
    """A recorded owner that still runs is never robbed of its lock."""
    alive = subprocess.Popen(["sleep", "30"])
    try:
        lock = leave_lock(desk, "refs/heads/main.lock", alive.pid)
        code, data, _ = doctor(run, "--repair")
        found = problems(data)[".git/refs/heads/main.lock"]
        assert found["status"] == "note" and "still at work" in found["message"]
        assert "rm " not in found["message"] and lock.exists()
    finally:
        alive.kill()
        alive.wait()


def test_a_killed_desk_process_leaves_a_record_the_next_command_uses(desk: DeskFolder,
                                                                     tmp_path: Path) -> None:
    """A real desk process killed with SIGKILL while its git child holds a lock: the record names
    the child, and the next command removes the lock at once."""
    script = tmp_path / "hold.py"
    script.write_text(
        "import os, sys, time\n"
        "from desk.layout import DeskFolder\n"
        "from desk.transaction import transaction\n"
        "desk = DeskFolder(__import__('pathlib').Path(sys.argv[1]))\n"
        "with transaction(desk):\n"
        "    desk.git.run('update-ref', 'refs/heads/held', 'HEAD')  # recorded: a git child\n"
        "    time.sleep(30)\n")
    git_dir = desk.git_dir
    # a git child that takes refs/heads/main.lock and hangs there: git's own lock, a real process
    hold = git_dir / "refs/heads/main.lock"
    proc = subprocess.Popen([sys.executable, str(script), str(desk.root)], start_new_session=True)
    try:
        deadline = time.time() + 20
        record = None
        while time.time() < deadline:
            records = list(git_dir.glob(f"{CHILD_RECORD_PREFIX}*.txt"))
            if records and records[0].read_text().strip():
                record = records[0]
                break
            time.sleep(0.05)
        assert record is not None
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
    assert record.exists()  # kill -9: nothing cleaned up
    pid = int(record.read_text().split()[0])
    assert not process_alive(pid)
    hold.write_bytes(b"")  # what the killed update-ref would have left
    os.utime(hold, None)
    remember(desk, "after", type="fact", description="d", triggers=["x"], body="Body.")
    assert not hold.exists() and not record.exists()


def test_a_pid_given_to_another_process_does_not_keep_a_dead_commands_lock(desk: DeskFolder,
                                                                           run: DeskRunner) -> None:
    """The record names a desk process and its git by pid and start time: a live process that got
    one of those pids since (another start time) is not the owner, and the lock goes at once."""
    from desk.storage.git_locks import process_start

    other = subprocess.Popen(["sleep", "30"])
    try:
        start = process_start(other.pid)
        assert start is not None and process_alive(other.pid, start)
        assert not process_alive(other.pid, start + 1)
        lock = desk.git_dir / "refs/heads/main.lock"
        record = desk.git_dir / f"{CHILD_RECORD_PREFIX}{other.pid}-{start + 1}.txt"
        record.write_text(f"{other.pid}:{start + 1} {time.time_ns()} {lock}\n")
        lock.write_bytes(b"0" * 41)
        result = run("remember", "after", "--type", "fact", "-d", "after the kill", "-t", "x", "Body.")
        assert result.exit_code == 0, result.output
        assert not lock.exists() and not record.exists()
    finally:
        other.kill()
        other.wait()


def test_a_persons_running_git_keeps_even_a_dead_commands_lock(desk: DeskFolder, run: DeskRunner) -> None:
    """While a git that may take locks works in the desk, a lock a dead desk git left might be that
    git's by now: doctor leaves it, and removes it once that git is done. A reader does not count."""
    lock = leave_lock(desk, "refs/heads/main.lock", dead_pid())
    reader = subprocess.Popen(["git", "cat-file", "--batch"], cwd=desk.root, stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL)
    writer = subprocess.Popen(["git", "hash-object", "-w", "--stdin"], cwd=desk.root, stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL)
    try:
        code, data, _ = doctor(run, "--repair")
        found = problems(data)[".git/refs/heads/main.lock"]
        assert found["status"] == "needs-person" and f"rm {lock}" in found["message"]
        assert lock.exists()
        os.utime(lock, (OLD, OLD))  # old enough for the unknown-owner rule: still not while git runs
        code, data, _ = doctor(run, "--repair")
        found = problems(data)[".git/refs/heads/main.lock"]
        assert found["status"] == "needs-person" and "a git process is running" in found["message"]
        assert lock.exists()
    finally:
        for proc in (writer, reader):
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait()
    reader = subprocess.Popen(["git", "cat-file", "--batch"], cwd=desk.root, stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL)
    try:
        code, data, _ = doctor(run, "--repair")
        assert problems(data)[".git/refs/heads/main.lock"]["status"] == "repaired"
        assert not lock.exists()
    finally:
        assert reader.stdin is not None
        reader.stdin.close()
        reader.wait()


def test_the_next_command_lets_a_killed_commands_git_finish_first(desk: DeskFolder, run: DeskRunner) -> None:
    """desk killed alone leaves its git running to its end: the next command waits for it before
    it settles anything that git is still writing."""
    from desk.storage.git_locks import process_start

    still = subprocess.Popen(["sleep", "1"])  # stands for the orphaned git child
    record = desk.git_dir / f"{CHILD_RECORD_PREFIX}{dead_pid()}.txt"
    record.write_text(f"{still.pid}:{process_start(still.pid)} {time.time_ns()} {desk.git_dir / 'index.lock'}\n")
    result = run("remember", "after", "--type", "fact", "-d", "after the kill", "-t", "x", "Body.")
    assert result.exit_code == 0, result.output
    assert still.poll() is not None  # it had ended before the command went on
    assert not record.exists()
