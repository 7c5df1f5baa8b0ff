"""DESK_PLAIN_GIT=1 (desk.storage.plain_git): desk's commits made through git's own commands are
the commits the in-process path makes: the same trees, messages and identities, the same person's
index afterwards, a person's staged work left staged. The switch is read once per process, so each
way runs in a child process of its own, on its own copy of one desk."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from desk.layout import DeskFolder
from tests.conftest import git

CHILD = """
import sys, datetime as dt
from pathlib import Path
from desk.layout import DeskFolder
from desk.memory.operations import forget, remember
desk = DeskFolder(Path(sys.argv[1]))
now = dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.timezone.utc)
remember(desk, "kept", type="fact", description="Kept both ways", body="A fact with a line\\r\\nand a tab\\t.", now=now)
remember(desk, "gone", type="fact", description="Gone both ways", body="A fact forgotten next.", now=now)
remember(desk, "kept", type="fact", description="Kept both ways", body="The fact, changed.", now=now)
forget(desk, "gone")
"""


def _run(root: Path, trace: Path, *, plain: bool) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DESK_PLAIN_GIT"}
    env["GIT_TRACE"] = str(trace)
    if plain:
        env["DESK_PLAIN_GIT"] = "1"
    proc = subprocess.run([sys.executable, "-c", CHILD, str(root)], env=env, capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()


def _commits(root: Path) -> list[str]:
    """Every commit's tree, identities and message, its dates left out (each way commits at its own time)."""
    out = git(root, "log", "--format=%T%n%an <%ae>%n%cn <%ce>%n%B%x00")
    return [re.sub(r"\s+$", "", record) for record in out.split("\0") if record.strip()]


def _git_commands(trace: Path) -> set[str]:
    return {line.split("built-in: git ", 1)[1].split()[0]
            for line in trace.read_text().splitlines() if "built-in: git " in line}


def test_git_own_commands_make_the_same_commits_and_index(desk: DeskFolder, tmp_path: Path) -> None:
    (desk.root / "notes.txt").write_text("a person's own work, staged\n")
    git(desk.root, "add", "notes.txt")
    fast, plain = tmp_path / "fast", tmp_path / "plain"
    for copy in (fast, plain):
        shutil.copytree(desk.root, copy, symlinks=True)
        git(copy, "update-index", "-q", "--refresh")  # a copy's stat data is new
    _run(fast, tmp_path / "fast.trace", plain=False)
    _run(plain, tmp_path / "plain.trace", plain=True)
    # each way took its own path: git wrote the trees and the commits only under the switch
    assert not {"write-tree", "commit-tree", "hash-object"} & _git_commands(tmp_path / "fast.trace")
    assert {"write-tree", "commit-tree", "hash-object"} <= _git_commands(tmp_path / "plain.trace")
    assert _commits(plain) == _commits(fast)
    assert len(_commits(plain)) == len(_commits(desk.root)) + 4
    for root in (fast, plain):
        assert git(root, "diff", "--cached", "--name-only") == "notes.txt\n"  # still staged, not committed
        assert git(root, "status", "--porcelain") == "A  notes.txt\n"
        assert git(root, "update-index", "--refresh") == ""  # every entry's stat data as git writes it
        assert git(root, "fsck", "--full", "--no-dangling").strip() == ""
        assert "notes.txt" not in git(root, "log", "--name-only", "--format=")
    assert git(plain, "ls-files", "-s") == git(fast, "ls-files", "-s")
    assert (plain / "MEMORY.md").read_bytes() == (fast / "MEMORY.md").read_bytes()
