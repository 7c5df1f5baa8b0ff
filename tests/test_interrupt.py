"""Ctrl-C (SIGINT) at any moment of a real `desk` process (issue 27.8): exit 130 with the one line
`desk: interrupted` and nothing changed, or, once the commit landed, exit 0 saying so; never a
traceback, click's "Aborted!" or exit 1. Only exit codes and the shape of stderr are asserted,
never a time."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from desk.layout import DeskFolder
from desk.storage.crash import CRASH_POINTS, INTERRUPT_ENV
from tests.conftest import git

DESK = Path(sys.executable).with_name("desk")  # the console script, as a person runs it
PACKAGE = Path(__file__).resolve().parent.parent / "desk"
ENTRY = {PACKAGE / "__init__.py", PACKAGE / "cli" / "__init__.py", PACKAGE / "cli" / "start.py"}
COMMITTED = re.compile(r"desk: interrupted after the change was committed: remember: \S+ \(commit [0-9a-f]{7}\)\n")


def _remember(desk: DeskFolder, name: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([str(DESK), "--desk", str(desk.root), "remember", name, "--type", "fact", "-d",
                             "A fact", "-t", name, f"The fact called {name}."],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})


def _clean(desk: DeskFolder) -> bool:
    return git(desk.root, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.parametrize("point", [p for p in CRASH_POINTS if p != "after-write"] + ["after-write:memory/tea.md"])
def test_a_ctrl_c_at_each_step_of_a_commit_is_one_line(desk: DeskFolder, identity: None, point: str) -> None:
    """The process sends itself SIGINT at each named step of `desk remember`'s commit: before the
    branch moves, exit 130 and the desk as it was; after, exit 0 naming the commit, and the next
    command finds the desk whole (its recovery finishes the index the Ctrl-C cut short)."""
    head = git(desk.root, "rev-parse", "HEAD")
    proc = _remember(desk, "tea", {INTERRUPT_ENV: point})
    out, err = proc.communicate()
    assert "Traceback" not in err and "Aborted" not in err, err
    landed = git(desk.root, "rev-parse", "HEAD") != head
    if point in ("after-update-ref", "after-publish", "after-marker-cleared"):
        assert landed and proc.returncode == 0, (proc.returncode, err)
        assert COMMITTED.fullmatch(err), err
        assert git(desk.root, "log", "-1", "--format=%s") == "remember: tea\n"
    else:
        assert not landed and (proc.returncode, err, out) == (130, "desk: interrupted\n", ""), (proc.returncode, err)
        assert _clean(desk) and not desk.path("memory/tea.md").exists()
    after = _remember(desk, "coffee")
    out, err = after.communicate()
    assert after.returncode == 0, err
    assert _clean(desk)


@pytest.mark.slow
def test_a_ctrl_c_from_outside_at_many_moments_is_one_line_or_a_reported_commit(desk: DeskFolder,
                                                                                identity: None) -> None:
    """SIGINT from outside while the process starts, loads, commits and exits: a loop over
    moments spread across a whole run (its length measured first, so no delay is assumed).
    Before Python has started desk's entry point the interpreter is on its own: a process killed
    before Python handles SIGINT at all (-2, nothing printed), or a KeyboardInterrupt traceback
    with no frame in desk's code; both are counted, never desk's."""
    import time

    started = time.monotonic()
    probe = _remember(desk, "probe")
    probe.communicate()
    span = time.monotonic() - started
    shapes: dict[str, int] = {}
    for n in range(40):
        proc = _remember(desk, f"m{n}")
        time.sleep(span * n / 40)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate()
        if proc.returncode == 130:
            assert (err, out) == ("desk: interrupted\n", ""), err
            shape = "interrupted"
        elif proc.returncode == 0:
            assert err == "" and out.startswith(f"created: memory/m{n}.md") or COMMITTED.fullmatch(err), (out, err)
            shape = "committed"
        else:
            # Before Python has started desk's entry point, SIGINT is the interpreter's: the
            # default action (-2, nothing said), or Python's own KeyboardInterrupt from its
            # start-up (site, the .pth files, the script finding `desk`): a traceback, or "Fatal
            # Python error: init_import_site" with one (exit 1, or -2 as Python re-raises it)
            assert proc.returncode in (1, -signal.SIGINT), (proc.returncode, err)
            assert err == "" or err.rstrip().endswith("KeyboardInterrupt"), err
            # desk's own frames, if any, are the loading of the entry module itself (the package
            # `__init__`s and desk.cli.start's first lines, before its handler exists)
            files = {Path(f).resolve() for f in re.findall(r'File "([^"]+)"', err)}
            assert not {f for f in files if f.is_relative_to(PACKAGE)} - ENTRY, err
            shape = "python-start-up"
        shapes[shape] = shapes.get(shape, 0) + 1
        git(desk.root, "status")  # nothing to assert: a stopped run's index is the next command's
    assert shapes.get("interrupted", 0) > 0, shapes  # the loop reached desk's own work
    finish = _remember(desk, "last")
    assert finish.communicate() and finish.returncode == 0
    assert _clean(desk)


def test_a_ctrl_c_while_git_moves_the_branch_waits_for_git(desk: DeskFolder, identity: None, tmp_path: Path) -> None:
    """A Ctrl-C while `git update-ref` is moving the branch (slowed here by a reference-transaction
    hook) must not let desk decide "not landed" before git is done: the files were put back and
    the pending marker cleared while git then moved HEAD, leaving MEMORY.md dirty with no marker,
    and the next `desk remember` refused (exit 4). Now desk waits for its git child to end."""
    import time

    started, done = tmp_path / "hook-started", tmp_path / "hook-done"
    hook = desk.git_dir / "hooks" / "reference-transaction"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\n"
                    f'if [ "$1" = prepared ] && grep -q " HEAD$" ; then touch "{started}"; sleep 1; touch "{done}"; fi\n'
                    "exit 0\n")
    hook.chmod(0o755)
    proc = _remember(desk, "slow")
    while not started.exists() and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate()
    for _ in range(500):  # git, left running, would move HEAD after desk has exited
        if done.exists():
            break
        time.sleep(0.01)
    time.sleep(0.2)
    hook.unlink()
    assert proc.returncode == 0 and COMMITTED.fullmatch(err), (proc.returncode, err)
    after = _remember(desk, "next")  # recovery brings the person's index up to date
    assert after.communicate() and after.returncode == 0
    assert _clean(desk)
