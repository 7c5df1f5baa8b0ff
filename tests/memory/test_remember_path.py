"""remember's commit path (issue 17.2): the git processes it starts, and the facts about HEAD the
gate takes from the memory mirror instead of git, checked against what git itself holds."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from desk.errors import InvalidFileError
from desk.layout import DeskFolder
from desk.gate.mirror import head_mirror
from desk.memory.operations import remember
from desk.text.secrets import scan
from tests.conftest import git
from tests.guard_helpers import add_commit, memory_text, sh, write

NOW = dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.timezone.utc)
TOKEN = "gh" + "p_" + "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zCaB3d"  # built so this file holds no secret


def _remember(desk: DeskFolder, name: str, body: str) -> str | None:
    return remember(desk, name, type="fact", description=f"About {name}", body=body, triggers=["t"],
                    now=NOW).commit


def _git_commands(trace: Path) -> list[str]:
    """The git commands a GIT_TRACE file shows started, by name (`update-index`, ...)."""
    lines = trace.read_text().splitlines() if trace.exists() else []
    return [line.split("built-in: git ", 1)[1].split()[0] for line in lines if "built-in: git " in line]


def test_remember_starts_only_the_commits_own_git_processes(desk: DeskFolder, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    _remember(desk, "warm-up", "The mirror of HEAD exists after a first mutation.")
    trace = tmp_path / "trace.txt"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    fresh = DeskFolder(desk.root)  # a new process's view: nothing cached in the Git object
    sha = _remember(fresh, "traced", "A memory remembered while git traces its processes.")
    monkeypatch.delenv("GIT_TRACE")
    assert sha == git(desk.root, "rev-parse", "HEAD").strip()
    # No rev-parse, ls-tree or cat-file: HEAD from its ref file, the rest from the mirror.
    # Left: the config (the identity, and whether the person set core.fsync: desk asks git to flush
    # its objects otherwise); the two blobs (the memory, MEMORY.md); the tree in desk's private
    # index, which already holds HEAD's (desk made HEAD), so no read-tree; the commit; then under
    # git's index lock what the person staged, their index refreshed for desk's paths in a copy, and
    # the compare-and-swap of the branch.
    assert _git_commands(trace) == ["config", "hash-object", "hash-object", "update-index", "write-tree",
                                    "commit-tree", "diff-index", "update-index", "update-ref"]
    assert git(desk.root, "status", "--porcelain") == ""
    assert git(desk.root, "diff", "--cached", "--name-only") == ""
    assert git(desk.root, "update-index", "--refresh") == ""  # every entry's stat data as git writes it
    assert "error" not in git(desk.root, "fsck", "--no-progress").lower()


def _set_allow(root: Path, fingerprints: list[str], *, commit: bool) -> None:
    config = json.loads((root / ".system/desk.json").read_text())
    config.setdefault("secrets", {})["allow"] = fingerprints
    write(root, ".system/desk.json", json.dumps(config, indent=2) + "\n")
    if commit:
        assert add_commit(root, "the allow-list", ".system/desk.json").returncode == 0


@pytest.mark.parametrize("old_mirror", [False, True], ids=["mirror", "mirror-without-desk-json"])
def test_the_gate_reads_heads_allow_list_never_an_uncommitted_edit(desk: DeskFolder, old_mirror: bool) -> None:
    body = f"The deploy token is {TOKEN} for the staging box."
    fingerprint = scan(body)[0].fingerprint
    _remember(desk, "warm-up", "The mirror of HEAD exists after a first mutation.")
    if old_mirror:  # a mirror written before it kept desk.json's blob: learnt on the next sync
        with head_mirror(desk) as mirror:
            mirror.db.execute("DELETE FROM head_meta_v2 WHERE key = 'config_blob'")
            mirror.db.commit()
    _set_allow(desk.root, [fingerprint], commit=False)  # allowed only in the work tree
    head = git(desk.root, "rev-parse", "HEAD")
    with pytest.raises(InvalidFileError, match="secret"):
        _remember(desk, "deploy", body)
    assert git(desk.root, "rev-parse", "HEAD") == head and not (desk.root / "memory/deploy.md").exists()
    _set_allow(desk.root, [fingerprint], commit=True)  # a person commits it: the mirror catches up
    assert _remember(desk, "deploy", body) is not None
    _set_allow(desk.root, [], commit=True)  # and takes it back
    with pytest.raises(InvalidFileError, match="secret"):
        _remember(desk, "deploy", body + " Rotated monthly.")


def test_the_mirrors_names_equal_ignoring_case_are_those_git_icase_finds(desk: DeskFolder) -> None:
    """The gate's `memory-name-case` rule asks the mirror, not `git ls-files ':(icase)'`: the same
    answer, ASCII case folded only (git compares bytes; `É` and `é` are different names to it)."""
    names = ["report-style", "Report-Style", "REPORT-style", "café", "CAFÉ", "cafÉ", "other"]
    for name in names:
        write(desk.root, f"memory/{name}.md", memory_text(name))
    sh(desk.root, "add", "memory")
    assert sh(desk.root, "commit", "-q", "--no-verify", "-m", "a person's files").returncode == 0
    asked = ["memory/report-style.md", "memory/Café.md", "memory/cafe.md", "memory/new.md"]
    with head_mirror(desk) as mirror:
        for path in asked:
            expected = git(desk.root, "ls-files", "-z", "--", f":(icase,literal){path}").split("\0")
            assert sorted(mirror.like([path])) == sorted(p for p in expected if p), path
        assert mirror.like([".system/desk.json"]) == []
