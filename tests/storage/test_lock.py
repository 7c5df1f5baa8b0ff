"""desk.storage.lock, the desk-wide lock, with real processes contending for it.

No test asserts a duration: fairness is read from the order in which the holders took the lock,
and "blocked" from the kernel's own list of waiters (/proc/locks).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from desk.errors import ConflictError
from desk.storage.lock import desk_lock

ROOT = Path(__file__).resolve().parents[2]

# A process that takes the lock over and over until the stop file appears: each time it writes its
# id to the log while holding the lock and does a little work, then asks again at once.
HAMMER = """
import sys
from pathlib import Path
from desk.storage.lock import desk_lock
lock, log, me, stop = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
while not stop.exists():
    with desk_lock(lock, timeout=120):
        with log.open("a") as file:
            file.write(me + "\\n")
        sum(i * i for i in range(20000))
"""

HOLD = """
import sys
from pathlib import Path
from desk.storage.lock import desk_lock
with desk_lock(Path(sys.argv[1]), timeout=10):
    print("held", flush=True)
    sys.stdin.read()  # until the test closes stdin
"""


def spawn(script: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", script, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)


def blocked_on(path: Path) -> int | None:
    """How many lock requests on `path` the kernel has queued (None where /proc/locks is missing)."""
    try:
        table = Path("/proc/locks").read_text()
    except OSError:
        return None
    st = path.stat()
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    return sum(1 for line in table.splitlines() if "->" in line and inode in line)


def wait_until(check: object, what: str, limit: float = 60.0) -> None:
    """Wait (without judging how long it took) until `check()` is true; fail after `limit` s."""
    deadline = time.monotonic() + limit
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail(f"never happened: {what}")
        time.sleep(0.01)


def test_every_waiter_gets_the_lock_while_others_hammer_it(tmp_path: Path) -> None:
    """Three processes take the lock again the moment they let go; a fourth still gets it, each time.

    Polling with LOCK_NB and a sleep (what desk did before) loses every race to them: four
    processes hammering one lock took it 596, 1, 1 and 1 times in 3 s, and the waiter here timed out.
    """
    lock, log, stop = tmp_path / "desk.lock", tmp_path / "order.log", tmp_path / "stop"
    hammers = [spawn(HAMMER, str(lock), str(log), f"h{h}", str(stop)) for h in range(3)]
    try:
        wait_until(lambda: log.exists() and set(log.read_text().split()) == {"h0", "h1", "h2"},
                   "every hammer took the lock")
        for _ in range(20):
            with desk_lock(lock, timeout=20):
                with log.open("a") as file:
                    file.write("waiter\n")
                sum(i * i for i in range(20000))  # the same work as the hammers
    finally:
        stop.touch()
        for proc in hammers:
            assert proc.wait(timeout=120) == 0
    order = log.read_text().split()
    first, last = order.index("waiter"), len(order) - order[::-1].index("waiter") - 1
    assert order.count("waiter") == 20
    assert set(order[first:last]) == {"waiter", "h0", "h1", "h2"}  # they hammered all along


def test_timeout_still_fires_and_the_abandoned_wait_lets_go(tmp_path: Path) -> None:
    lock = tmp_path / "desk.lock"
    holder = spawn(HOLD, str(lock))
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    with pytest.raises(ConflictError) as err:
        with desk_lock(lock, timeout=0.2):
            pytest.fail("took a lock another process holds")
    assert err.value.exit_code == 4
    assert err.value.message == f"another desk process has held {lock} for 0.2 s"
    assert "DESK_LOCK_TIMEOUT" in (err.value.hint or "")
    # The abandoned wait is still queued in its helper thread; when the holder lets go it takes the
    # lock and drops it at once, so the next caller gets it.
    assert holder.stdin is not None
    holder.stdin.close()
    assert holder.wait(timeout=30) == 0
    with desk_lock(lock, timeout=30):
        pass


def test_timeout_zero_and_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lock = tmp_path / "desk.lock"
    monkeypatch.setenv("DESK_LOCK_TIMEOUT", "0")
    with desk_lock(lock, timeout=5):
        with pytest.raises(ConflictError, match="for 0 s"):
            with desk_lock(lock):  # $DESK_LOCK_TIMEOUT
                pass
    with desk_lock(lock, timeout=30):
        pass  # free again once the abandoned wait has let go


def test_a_waiter_in_another_thread_gets_the_lock_when_it_is_released(tmp_path: Path) -> None:
    """Signals reach only the main thread; the blocking wait works in any thread."""
    lock = tmp_path / "desk.lock"
    got: list[str] = []
    holder = spawn(HOLD, str(lock))
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"

    def waiter() -> None:
        with desk_lock(lock, timeout=60):
            got.append(threading.current_thread().name)

    thread = threading.Thread(target=waiter, name="not-main")
    thread.start()
    if blocked_on(lock) is not None:
        wait_until(lambda: blocked_on(lock) == 1, "the thread queued on the lock")
    assert not got
    assert holder.stdin is not None
    holder.stdin.close()
    thread.join(timeout=60)
    assert got == ["not-main"]
    assert holder.wait(timeout=30) == 0


def test_a_killed_holder_never_leaves_the_lock_behind(tmp_path: Path) -> None:
    lock = tmp_path / "desk.lock"
    holder = spawn(HOLD, str(lock))
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    holder.kill()
    holder.wait(timeout=30)
    with desk_lock(lock, timeout=30):
        pass


# What a process that cannot write the lock's folder does: run in a mount namespace of its own
# (`unshare`) where the folder is a read-only bind mount (so root too is refused every write, as
# tests/storage/test_sqlite_cache.py does it), while the holders outside write it as usual.
READ_ONLY = """
import sys
from pathlib import Path
from desk.errors import ConflictError
from desk.storage.lock import desk_lock
lock, reading, timeout = Path(sys.argv[1]), sys.argv[2] == "reading", float(sys.argv[3])
try:
    with desk_lock(lock, timeout=timeout, reading=reading):
        print("held", flush=True)
        sys.stdin.read()  # until the test closes stdin
except ConflictError as exc:
    print("conflict", exc.exit_code, exc.message)
except Exception as exc:
    print("error", type(exc).__name__, getattr(exc, "exit_code", None), exc, "|", getattr(exc, "hint", None))
"""


def spawn_read_only(folder: Path, *args: str) -> subprocess.Popen[str]:
    """READ_ONLY with `args`, on a read-only bind mount of `folder` (skips where there is none)."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) for a read-only mount")
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" || exit 99; shift; exec "$@"'
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, str(folder),
                             "-", sys.executable, "-c", READ_ONLY, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def first_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line and proc.wait(timeout=30) == 99:
        pytest.skip(f"no read-only bind mount here (unshare): {proc.stderr.read() if proc.stderr else ''}")
    return line


def test_a_reader_of_a_read_only_desk_takes_a_shared_lock_that_writers_still_respect(tmp_path: Path) -> None:
    """The lock file cannot be opened for writing on a read-only mount (EROFS): a reader takes a
    shared lock on a read-only descriptor. Two readers hold it at once; a writer outside waits
    for them, a reader that comes while a writer waits queues behind it (the queue file is
    locked through a read-only descriptor too), and a reader waits for a writer (it is a lock,
    not none)."""
    lock = tmp_path / "desk.lock"
    with desk_lock(lock, timeout=5):  # made by a writer once, as every desk's is
        pass
    readers = [spawn_read_only(tmp_path, str(lock), "reading", "30") for _ in range(2)]
    got: list[str] = []

    def write() -> None:
        with desk_lock(lock, timeout=60):
            got.append("writer")

    writer = threading.Thread(target=write)
    try:
        assert [first_line(reader) for reader in readers] == ["held\n", "held\n"]
        with pytest.raises(ConflictError):
            with desk_lock(lock, timeout=0.2):
                pytest.fail("a writer took the lock readers hold")
        writer.start()  # queued behind the readers: a reader that comes now waits behind it
        if blocked_on(lock) is not None:
            wait_until(lambda: blocked_on(lock) == 1, "the writer queued on the lock")
        late = spawn_read_only(tmp_path, str(lock), "reading", "0.3")
        assert first_line(late) == f"conflict 4 another desk process has held {lock} for 0.3 s\n"
        assert late.wait(timeout=30) == 0 and not got
    finally:
        for reader in readers:
            assert reader.stdin is not None
            reader.stdin.close()
            assert reader.wait(timeout=30) == 0
        if writer.is_alive():
            writer.join(timeout=60)
    assert got == ["writer"]
    holder = spawn(HOLD, str(lock))
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    try:
        reader = spawn_read_only(tmp_path, str(lock), "reading", "0.2")
        assert first_line(reader) == f"conflict 4 another desk process has held {lock} for 0.2 s\n"
        assert reader.wait(timeout=30) == 0
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        assert holder.wait(timeout=30) == 0


def test_a_read_only_desk_with_no_lock_file_is_read_without_one(tmp_path: Path) -> None:
    reader = spawn_read_only(tmp_path, str(tmp_path / "desk.lock"), "reading", "5")
    try:
        assert first_line(reader) == "held\n"
    finally:
        assert reader.stdin is not None
        reader.stdin.close()
        assert reader.wait(timeout=30) == 0
    assert sorted(tmp_path.iterdir()) == []


def test_a_writer_on_a_read_only_desk_is_told_which_folder_with_a_hint(tmp_path: Path) -> None:
    lock = tmp_path / "desk.lock"
    with desk_lock(lock, timeout=5):
        pass
    writer = spawn_read_only(tmp_path, str(lock), "writing", "5")
    line = first_line(writer)
    assert writer.wait(timeout=30) == 0
    assert line.startswith(f"error ReadOnlyDeskError 1 cannot write in {tmp_path} (Read-only file system): "), line
    assert "| run it where the desk is writable" in line
