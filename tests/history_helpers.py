"""A desk with the history `git log -n1 -- path` has to see through, for the tests of each memory's
last commit (desk.gate.mirror, recall, context): desk's own commits, a person's commits (an edit,
an edit and its revert), a branch merged with --no-ff, a conflicting merge resolved by hand to a
third version, a rename by `git mv`, and a forget followed by a re-remember."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from desk.layout import DeskFolder
from desk.formats.memory_index import memory_path
from desk.gate.mirror import head_mirror
from desk.memory.operations import forget, remember
from tests.guard_helpers import git_env

NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc)
NAMES = ("alpha", "beta", "gamma", "delta", "epsilon")


def person(root: Path, *args: str) -> str:
    """git as a person runs it, hooks off (what they commit is not what is tested here)."""
    return subprocess.run(["git", "-c", "core.hooksPath=/dev/null", *args], cwd=root, env=git_env(),
                          capture_output=True, check=True, text=True).stdout


def last_commit(root: Path, name: str) -> tuple[str, int]:
    """What git itself says: `git log -n1 -- memory/<name>.md` (its commit and committer time)."""
    sha, stamp = person(root, "log", "-n1", "--format=%H %ct", "--", memory_path(name)).split()
    return sha, int(stamp)


def edit(desk: DeskFolder, name: str, body: str) -> None:
    """A person's edit of a memory's body (the frontmatter stays valid)."""
    path = desk.path(memory_path(name))
    text = path.read_text("utf-8")
    head, _, _ = text.rpartition("---\n")
    path.write_text(head + "---\n" + body + "\n", "utf-8")


def add(desk: DeskFolder, name: str, body: str) -> None:
    remember(desk, name, type="fact", description=f"About {name}", body=body,
             triggers=("history", name), now=NOW)


def build_history(desk: DeskFolder, *, sync_each_step: bool = False) -> None:
    """Make the history the module docstring lists; with `sync_each_step` the mirror follows every
    step, else it catches up over all of a person's work at once (at desk's next mutation)."""
    root = desk.root

    def step() -> None:
        if sync_each_step:
            with head_mirror(desk):
                pass

    for name in NAMES:
        add(desk, name, f"The first word on {name}.")
    edit(desk, "alpha", "Alpha, edited by a person.")
    person(root, "commit", "-qam", "person: alpha")
    step()
    original = desk.path(memory_path("beta")).read_bytes()
    edit(desk, "beta", "Beta, briefly changed.")
    person(root, "commit", "-qam", "person: beta")
    step()
    desk.path(memory_path("beta")).write_bytes(original)
    person(root, "commit", "-qam", "person: beta back")  # the same blob as before, a newer commit
    step()
    # A branch merged with --no-ff: gamma and a new memory come from the side, alpha from main.
    person(root, "checkout", "-qb", "side")
    edit(desk, "gamma", "Gamma, changed on a side branch.")
    person(root, "commit", "-qam", "side: gamma")
    desk.path(memory_path("zeta")).write_bytes(desk.path(memory_path("gamma")).read_bytes()
                                               .replace(b"name: gamma", b"name: zeta"))
    person(root, "add", "memory/zeta.md")
    person(root, "commit", "-qm", "side: zeta")
    person(root, "checkout", "-q", "main")
    edit(desk, "alpha", "Alpha, edited again on main.")
    person(root, "commit", "-qam", "main: alpha")
    person(root, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    step()
    # Both sides change delta; the merge keeps neither: the merge commit is delta's last commit.
    person(root, "checkout", "-qb", "other")
    edit(desk, "delta", "Delta as the other branch has it.")
    person(root, "commit", "-qam", "other: delta")
    person(root, "checkout", "-q", "main")
    edit(desk, "delta", "Delta as main has it.")
    person(root, "commit", "-qam", "main: delta")
    subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "merge", "-q", "other"], cwd=root,
                   env=git_env(), capture_output=True)  # conflicts: resolved below
    edit(desk, "delta", "Delta as the two were reconciled.")
    person(root, "add", "memory/delta.md")
    person(root, "commit", "-qm", "merge other")
    step()
    # A rename by hand: the new path's last commit is the rename.
    person(root, "mv", "memory/epsilon.md", "memory/eta.md")
    desk.path(memory_path("eta")).write_text(
        desk.path(memory_path("eta")).read_text("utf-8").replace("name: epsilon", "name: eta"), "utf-8")
    person(root, "commit", "-qam", "person: epsilon is eta")
    step()
    # Forget and remember again: the re-remember is the last commit.
    forget(desk, "beta")
    add(desk, "beta", "Beta, remembered anew.")


def count_git(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[str]]:
    """Put a `git` first on PATH that notes its arguments in a log, then runs the real git (a real
    git, counted; not a mock). Returns a function giving the calls so far. Objects that captured
    the environment before (a DeskFolder's Git) keep the old PATH: open the desk afterwards."""
    real = shutil.which("git")
    assert real is not None
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "git-calls.log"
    wrapper = folder / "git"
    # `git -C <desk> ARGS` is noted as `ARGS`
    wrapper.write_text(f'#!/bin/sh\ncase "$1" in -C) shown=$(shift 2; printf "%s" "$*");; *) shown="$*";; esac\n'
                       f'printf "%s\\n" "$shown" >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return lambda: log.read_text().splitlines() if log.exists() else []
