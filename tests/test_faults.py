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
