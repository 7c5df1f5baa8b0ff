"""I/O faults injected in process (issue 15.13), the way SQLite's tests inject them: `os.write`
fails with ENOSPC and `os.fsync` with EIO at the Nth call, for every N a command makes, in
remember (create and update), forget, archive append, checkpoint, digest and resolve.

After each fault the command has failed with an error that says what happened (a DeskError, or an
OSError naming the errno) and the desk is exactly as before, or (when the fault hit after the
commit landed) exactly as after; never in between. The same command then succeeds, and the desk
validates and `git fsck` is clean.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import desk as desk_api
from desk.errors import DeskError
from desk.layout import DeskFolder
from tests.conftest import git

FIXED = "2026-03-02T10:00:00Z"


class Fault(Exception):
    pass


@contextmanager
def failing_at(n: int) -> Iterator[list[int]]:
    """Make the n-th call of os.write or os.fsync (counted together) fail; yields [calls, fired]."""
    real_write, real_fsync = os.write, os.fsync
    seen = [0, 0]

    def tick(kind: str) -> None:
        seen[0] += 1
        if seen[0] == n:
            seen[1] = 1
            code = errno.ENOSPC if kind == "write" else errno.EIO
            raise OSError(code, os.strerror(code))

    def write(fd: int, data: bytes) -> int:  # type: ignore[type-arg]
        tick("write")
        return real_write(fd, data)

    def fsync(fd: int) -> None:
        tick("fsync")
        real_fsync(fd)

    os.write, os.fsync = write, fsync  # type: ignore[assignment]
    try:
        yield seen
    finally:
        os.write, os.fsync = real_write, real_fsync


def snapshot(root: Path) -> dict[str, object]:
    files = {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
             if p.is_file() and ".git" not in p.relative_to(root).parts
             and ".system/cache" not in str(p.relative_to(root))}
    return {"head": git(root, "rev-parse", "HEAD"), "files": files,
            "index": git(root, "ls-files", "-s"), "status": git(root, "status", "--porcelain", "-uall")}


def _prepared(template: Path, target: Path) -> DeskFolder:
    shutil.copytree(template, target, symlinks=True)
    return DeskFolder(target)


OPS: dict[str, Callable[[desk_api.Desk], object]] = {
    "remember-create": lambda d: d.remember("tea", "Green tea, no sugar.", type="preference",
                                            description="Drink of choice", triggers=["tea"]),
    "remember-update": lambda d: d.remember("base", "The base fact, revised.", type="fact",
                                            description="A base fact", triggers=["base"]),
    "forget": lambda d: d.forget("base"),
    "archive-append": lambda d: d.archive_append("inbound", "hello", session="s1"),
    "checkpoint": lambda d: d.checkpoint(),
    "digest": lambda d: d.digest(date="2026-03-01", as_of=FIXED),
    "resolve": lambda d: _resolve(d),
}


def _resolve(d: desk_api.Desk) -> object:
    """Choose a challenger of the template's open case (a retry with the same event id is the
    same decision: desk returns the first result)."""
    [case] = d.conflicts_list().cases
    chosen = next(c["id"] for c in case["candidates"] if c["content"] == "Use Python 3.12.")
    return d.resolve(case["id"], chosen, expected_revision=case["revision"], event_id="review:faults",
                     actor="ada@example.org", rationale="The fault test decides.", now=FIXED)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("faults") / "desk"
    d = desk_api.init(root)
    for value in ("Use Python 3.11.", "Use Python 3.12."):  # a tie: one open conflict case
        d.fact_add(value, kind="decision", importance=5, key="runtime.python", at="2025-12-01T10:00:00Z")
    d.digest(as_of="2026-02-28T00:00:00Z")
    assert len(d.conflicts_list().cases) == 1
    d.remember("base", "The base fact.", type="fact", description="A base fact", triggers=["base"])
    d.archive_append("inbound", "an event to checkpoint", session="s0", at="2026-03-01T09:00:00Z")
    d.fact_add("Deploys go through the staging box.", kind="convention", importance=4,
               at="2026-03-01T09:30:00Z")
    d.close()
    return root


@pytest.mark.parametrize("op", sorted(OPS))
def test_a_fault_at_any_write_or_fsync_leaves_the_desk_before_or_after(op: str, template: Path,
                                                                      tmp_path: Path) -> None:
    # What the command does with no fault: the "after" state, and how many calls it makes.
    clean = _prepared(template, tmp_path / "clean")
    with failing_at(0) as seen, desk_api.open(clean.root) as d:
        OPS[op](d)
    calls = seen[0]
    assert calls > 0, "the operation wrote nothing: the test would prove nothing"
    after = snapshot(clean.root)
    for n in range(1, calls + 1):
        root = tmp_path / f"n{n}"
        prepared = _prepared(template, root)
        before = snapshot(prepared.root)
        with failing_at(n) as seen, desk_api.open(root) as d:
            try:
                OPS[op](d)
                failed: BaseException | None = None
            except (DeskError, OSError) as exc:
                failed = exc
        assert seen[1], f"fault {n} did not fire"
        state = snapshot(root)
        if failed is not None:
            message = str(getattr(failed, "message", failed))
            assert message, (op, n)
            landed = state["head"] != before["head"]
            if op == "archive-append":
                assert state["files"] == before["files"], (op, n, "a failed append left bytes")
            elif landed:
                # The fault hit after the branch moved: the change is complete (HEAD's tree is
                # after's tree), and the next command brings the work tree and index in line.
                assert git(root, "rev-parse", "HEAD^{tree}") == git(clean.root, "rev-parse", "HEAD^{tree}"), (op, n)
            else:
                assert state == before, (op, n, failed)
        with desk_api.open(root) as d:  # the same command again, no fault: it works
            if failed is not None and not (op != "archive-append" and state["head"] != before["head"]):
                OPS[op](d)
            report = d.validate("all")
            assert report.report.ok, (op, n, [str(f) for f in report.report.findings])
        left = [line for line in git(root, "status", "--porcelain", "-uall").splitlines()
                if not line.endswith(".jsonl")]  # archive growth waits for a checkpoint
        assert left == [], (op, n, left)
        assert git(root, "fsck", "--no-dangling").strip() == "", (op, n)
        assert not list(root.rglob(".desk-tmp-*")), (op, n, "a temporary file was left")
        shutil.rmtree(root)
    assert after["head"] != snapshot(template)["head"] or op == "archive-append"


def test_the_cli_names_the_fault_and_changes_nothing(template: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from desk.cli.main import cli

    root = _prepared(template, tmp_path / "cli").root
    before = snapshot(root)
    with failing_at(1):
        result = CliRunner().invoke(cli, ["--desk", str(root), "remember", "tea", "--type", "preference",
                                          "-d", "Drink of choice", "-t", "tea", "Green tea."])
    assert result.exit_code == 1, result.output
    assert "No space left on device" in result.output and "hint:" in result.output
    assert "internal error" not in result.output and "Traceback" not in result.output
    assert snapshot(root) == before


# A real full disk: a small tmpfs, in a mount namespace of the test's own (unshare), filled up to
# `free` KiB for each `free` of _FREE_KIB; the desk is copied in fresh each time. SQLite and git
# meet it in C, where failing_at cannot reach. After the two commands on the full disk, the same
# remember runs again with space ("retry").
_FREE_KIB = range(0, 129, 8)
_FULL_DISK = r"""
mnt=$1 template=$2 python=$3; shift 3
mount -t tmpfs -o size=2m tmpfs "$mnt" || exit 99
state() { git -C "$mnt/d" rev-parse HEAD; git -C "$mnt/d" status --porcelain -uall; }
marker() { ls "$mnt/d/.git"/desk-pending-* >/dev/null 2>&1 && echo marker || echo none; }
remember="remember tea --type preference -d Drink -t tea Green_tea"
for free in "$@"; do
  rm -rf "$mnt"/* && cp -a "$template" "$mnt/d" || exit 98
  before=$(state) head=$(git -C "$mnt/d" rev-parse HEAD)
  for argv in "$remember" "recall body"; do
    avail=$(df -k --output=avail "$mnt" | tail -1)
    [ "$avail" -gt "$free" ] && dd if=/dev/zero of="$mnt/fill" bs=1k count=$((avail - free)) 2>/dev/null
    out=$("$python" -m desk --desk "$mnt/d" $argv 2>&1); rc=$?
    rm -f "$mnt/fill"
    after=$(state)
    moved=$([ "$head" = "$(git -C "$mnt/d" rev-parse HEAD)" ] && echo kept || echo moved)
    echo "@@ $free ${argv%% *} $rc $([ "$before" = "$after" ] && echo same || echo changed) $moved $(marker)"
    echo "$out" | head -3
    before=$after head=$(git -C "$mnt/d" rev-parse HEAD)
  done
  out=$("$python" -m desk --desk "$mnt/d" $remember 2>&1); rc=$?
  tree=$([ -z "$(git -C "$mnt/d" status --porcelain -uall)" ] && echo clean || echo dirty)
  echo "@@ $free retry $rc $tree $([ "$head" = "$(git -C "$mnt/d" rev-parse HEAD)" ] && echo kept || echo moved) $(marker)"
  echo "$out" | head -3
done
"""


Run = tuple[int, str, int, str, str, str, str]


def _full_disk_runs(root: Path, where: Path) -> list[Run]:
    """(free KiB, command, exit code, work tree and index "same"/"changed" (for the retry: git
    status "clean"/"dirty"), HEAD "kept"/"moved", a pending marker in .git "marker"/"none",
    output) of each run on the full tmpfs; "retry" is the remember run again with space."""
    import re
    import subprocess
    import sys

    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) to mount a small tmpfs of its own")
    where.mkdir()
    proc = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", _FULL_DISK, "sh",
                           str(where), str(root), sys.executable, *map(str, _FREE_KIB)],
                          capture_output=True, text=True)
    if proc.returncode == 99 or proc.returncode and "@@" not in proc.stdout:
        pytest.skip(f"no tmpfs could be mounted here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    parts = re.split(r"^@@ (\d+) (\w+) (\d+) (\w+) (\w+) (\w+)\n", proc.stdout, flags=re.M)[1:]
    return [(int(parts[i]), parts[i + 1], int(parts[i + 2]), parts[i + 3], parts[i + 4], parts[i + 5], parts[i + 6])
            for i in range(0, len(parts), 7)]


@pytest.fixture(scope="module")
def full_disk_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Run]:
    root = tmp_path_factory.mktemp("full") / "desk"
    with desk_api.init(root) as d:
        for n in range(6):
            d.remember(f"m{n}", f"body {n} of a memory", type="fact", description=f"Fact {n}", triggers=[f"t{n}"])
        d.recall("body")  # the caches are there, as on a desk in use
    return _full_disk_runs(root, tmp_path_factory.mktemp("mnt") / "mnt")


def test_a_full_disk_is_named_with_a_hint_and_moves_no_branch(full_disk_runs: list[Run]) -> None:
    """`desk remember` and `desk recall` on a really full disk: success, or exit 1 saying "No
    space left on device" with a hint (never an internal error such as SQLite's "cannot rollback -
    no transaction is active"), and a failed remember moves no branch."""
    assert {cmd for _, cmd, *_ in full_disk_runs} == {"remember", "recall", "retry"}
    assert any(rc == 1 for _, _, rc, *_ in full_disk_runs), "the disk was never full: the test proves nothing"
    assert any(rc == 0 for _, cmd, rc, *_ in full_disk_runs if cmd == "remember")
    for free, cmd, rc, change, head, _, out in full_disk_runs:
        if cmd == "retry":
            continue
        assert "internal error" not in out and "Traceback" not in out, (free, cmd, out)
        if rc:
            assert rc == 1 and "No space left on device" in out and "hint:" in out, (free, cmd, out)
        if cmd == "recall":
            assert (change, head) == ("same", "kept"), (free, out)
        elif rc == 0:  # a commit that landed is reported as made, even if a cache could not keep it
            assert head == "moved" and out.startswith("created: memory/tea.md"), (free, out)
        else:
            assert head == "kept", (free, out)


# The same full tmpfs, each command on a desk without its caches (a fresh clone, or after `rm -rf
# .git/desk-cache`): SQLite then creates them there, and says "disk I/O error" (SQLITE_IOERR, not
# SQLITE_FULL) when its shared-memory file cannot grow (issue 27.8).
_COLD_FULL_DISK = r"""
mnt=$1 template=$2 python=$3; shift 3
mount -t tmpfs -o size=2m tmpfs "$mnt" || exit 99
for free in "$@"; do
  for argv in "list" "context --query body" "recall body" "remember tea --type preference -d Drink -t tea Green_tea"; do
    rm -rf "$mnt"/* && cp -a "$template" "$mnt/d" && rm -rf "$mnt/d/.git/desk-cache" || exit 98
    avail=$(df -k --output=avail "$mnt" | tail -1)
    [ "$avail" -gt "$free" ] && dd if=/dev/zero of="$mnt/fill" bs=1k count=$((avail - free)) 2>/dev/null
    out=$("$python" -m desk --desk "$mnt/d" $argv 2>&1); rc=$?
    echo "@@ $free ${argv%% *} $rc"
    echo "$out" | head -3
  done
done
"""


@pytest.mark.slow
def test_a_full_disk_met_by_sqlite_creating_a_cache_says_no_space(tmp_path: Path) -> None:
    """Issue 27.8: SQLite's "disk I/O error" on a full disk was reported as "internal error: ...
    a bug in desk". Every run succeeds or exits 1 with "No space left on device (the cache file)"
    and the hint to free space."""
    import re
    import subprocess
    import sys

    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) to mount a small tmpfs of its own")
    root = tmp_path / "template"
    with desk_api.init(root) as d:
        for n in range(20):
            d.remember(f"m{n}", f"body {n} of a memory " * 20, type="fact", description=f"Fact {n}",
                       triggers=[f"t{n}"])
    (tmp_path / "mnt").mkdir()
    proc = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", _COLD_FULL_DISK, "sh",
                           str(tmp_path / "mnt"), str(root), sys.executable, *map(str, range(0, 97, 8))],
                          capture_output=True, text=True, cwd=tmp_path / "mnt")
    if proc.returncode == 99 or proc.returncode and "@@" not in proc.stdout:
        pytest.skip(f"no tmpfs could be mounted here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    parts = re.split(r"^@@ (\d+) (\w+) (\d+)\n", proc.stdout, flags=re.M)[1:]
    runs = [(int(parts[i]), parts[i + 1], int(parts[i + 2]), parts[i + 3]) for i in range(0, len(parts), 4)]
    assert len(runs) == 13 * 4
    cache_full = [out for _, _, rc, out in runs if rc and ".git/desk-cache/" in out]
    assert cache_full, "SQLite never met the full disk: the test proves nothing"
    for free, cmd, rc, out in runs:
        assert "internal error" not in out and "Traceback" not in out, (free, cmd, out)
        assert rc in (0, 1), (free, cmd, out)
        if rc:
            assert "No space left on device" in out and "hint:" in out and "free space" in out, (free, cmd, out)


def test_a_full_disk_leaves_the_work_tree_as_it_was_or_a_marker_the_next_command_settles(
        full_disk_runs: list[Run]) -> None:
    """A remember the full disk stopped leaves the work tree and index as they were, or (when the
    disk filled between two of its file writes, so the old files could not be put back either) its
    pending marker in .git; the same remember with space settles the marker first and then works:
    nothing pending, nothing left over in `git status`."""
    failed = [run for run in full_disk_runs if run[1] == "remember" and run[2] == 1]
    assert failed, "no remember failed: the test proves nothing"
    for free, _, _, change, _, marker, out in failed:
        assert change == "same" or marker == "marker", (free, out)
    retries = [run for run in full_disk_runs if run[1] == "retry"]
    assert len(retries) == len(_FREE_KIB)
    for free, _, rc, tree, _, marker, out in retries:
        assert (rc, tree, marker) == (0, "clean", "none"), (free, out)


@contextmanager
def full_from(n: int) -> Iterator[list[int]]:
    """The disk fills at the n-th os.write and stays full: that write and every later one fail
    with ENOSPC (fsync still works: it writes nothing new). Yields [calls, fired]."""
    real_write = os.write
    seen = [0, 0]

    def write(fd: int, data: bytes) -> int:  # type: ignore[type-arg]
        seen[0] += 1
        if n and seen[0] >= n:
            seen[1] = 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    os.write = write  # type: ignore[assignment]
    try:
        yield seen
    finally:
        os.write = real_write


@pytest.mark.parametrize("op", ["remember-create", "remember-update"])
def test_a_disk_that_stays_full_leaves_the_desk_as_it_was_or_a_marker_to_undo_it(op: str, template: Path,
                                                                                 tmp_path: Path) -> None:
    """The disk fills during a commit and stays full, so putting the old files back can fail too.
    Then the pending marker stays (it was dropped, and the work tree kept half a change that
    `desk doctor` called healthy); once there is space, the next command undoes the rest. The
    removals of the undo come first: they free what its rewrites need."""
    clean = _prepared(template, tmp_path / "clean")
    with full_from(0) as seen, desk_api.open(clean.root) as d:
        OPS[op](d)
    calls = seen[0]
    kept = 0
    for n in range(1, calls + 1):
        root = tmp_path / f"n{n}"
        _prepared(template, root)
        before = snapshot(root)
        with full_from(n) as seen, desk_api.open(root) as d:
            try:
                OPS[op](d)
                raised = False
            except OSError:
                raised = True
        assert seen[1], f"fault {n} did not fire"
        markers = list((root / ".git").glob("desk-pending-*"))
        if not raised:  # only what desk derives failed after the commit landed (records it can do without)
            assert snapshot(root)["head"] != before["head"] and not markers, (op, n, "no error and no commit")
        elif snapshot(root) != before:
            assert snapshot(root)["head"] == before["head"] and markers, (op, n, "half a change, no marker")
            kept += 1
        with desk_api.open(root) as d:  # space again: the next command settles the marker first
            d.list()
            d.now_show()
            OPS[op](d)
            assert d.validate("all").report.ok, (op, n)
        assert not list((root / ".git").glob("desk-pending-*")), (op, n)
        assert git(root, "status", "--porcelain", "-uall", "--", "memory", "MEMORY.md") == "", (op, n)
        shutil.rmtree(root)
    assert calls > 0


def test_a_failed_atomic_write_names_the_file(tmp_path: Path) -> None:
    """os.write's ENOSPC names no file; atomic_write's error names the one it was replacing."""
    from desk.storage.atomic import atomic_write

    target = tmp_path / "NOW.md"
    target.write_bytes(b"as it was\n")
    with failing_at(1), pytest.raises(OSError) as caught:
        atomic_write(target, b"new text\n")
    assert (caught.value.errno, caught.value.filename) == (errno.ENOSPC, str(target))
    assert target.read_bytes() == b"as it was\n" and sorted(tmp_path.iterdir()) == [target]
