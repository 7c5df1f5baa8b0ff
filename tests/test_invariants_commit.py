"""A second writer moves HEAD in the middle of a desk commit: desk never drops the other commit,
and it checks its change again on the HEAD it finally lands on (issue 35).

A person's plain `git commit`, through desk's installed hooks, is made from one of the commit
path's named points (`desk.storage.crash.crash_point`, the kill matrix's hook): after desk read
HEAD and built its commit (`after-objects`: the branch is then moved by compare-and-swap), or
after its gate ran on the HEAD the memory mirror recorded (`after-marker`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from desk import transaction
from desk.errors import InvalidFileError
from desk.layout import DeskFolder
from desk.memory.operations import remember
from tests.conftest import git
from tests.guard_helpers import add_commit, sh, write


def _person_at(monkeypatch: pytest.MonkeyPatch, root: Path, point: str, commit: Callable[[], None]) -> list[str]:
    """Make the person's commit once, when desk's commit reaches `point`; returns its sha (once made)."""
    made: list[str] = []

    def pause(name: str) -> None:
        if name == point and not made:
            commit()
            made.append(git(root, "rev-parse", "HEAD").strip())

    monkeypatch.setattr(transaction, "crash_point", pause)
    return made


def _note(desk: DeskFolder) -> Callable[[], None]:
    def commit() -> None:
        write(desk.root, "journal/by-hand.md", "# by hand\n\nWritten by a person.\n")
        proc = add_commit(desk.root, "person: a note", "journal/by-hand.md")
        assert proc.returncode == 0, proc.stderr
    return commit


def _remember(desk: DeskFolder, name: str) -> None:
    remember(desk, name, type="fact", description=f"about {name}", body=f"{name} is a fact worth keeping.")


@pytest.fixture
def paused(desk: DeskFolder, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, Callable[[], None]], list[str]]:
    _remember(desk, "alpha")  # the mirror has a recorded HEAD

    def at(point: str, commit: Callable[[], None]) -> list[str]:
        return _person_at(monkeypatch, desk.root, point, commit)
    return at


@pytest.mark.parametrize("point", ["before-marker", "after-marker", "after-objects"])
def test_a_commit_made_while_desk_commits_is_kept_and_desk_lands_on_top(
        desk: DeskFolder, paused: Callable[[str, Callable[[], None]], list[str]], point: str) -> None:
    made = paused(point, _note(desk))
    _remember(desk, "beta")
    assert made, "the person's commit was not made"
    subjects = git(desk.root, "log", "--format=%s").splitlines()
    assert subjects[:2] == ["remember: beta", "person: a note"]  # retried on the person's commit, not over it
    assert git(desk.root, "rev-parse", "HEAD~1").strip() == made[0]
    tree = git(desk.root, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert {"journal/by-hand.md", "memory/alpha.md", "memory/beta.md"} <= set(tree)
    assert git(desk.root, "status", "--porcelain") == ""


def _memory_by_hand(desk: DeskFolder) -> Callable[[], None]:
    """A person adds a memory and the MEMORY.md that lists it (made with desk's own renderer)."""
    from desk.formats.memory_file import parse_memory
    from desk.formats.memory_index import IndexEntry, render_lines

    def commit() -> None:
        path = write(desk.root, "memory/gamma.md", (desk.root / "memory/alpha.md").read_text()
                     .replace("name: alpha", "name: gamma").replace("alpha is", "gamma is"))
        assert path.exists()
        lines = {f"memory/{p.name}": IndexEntry.of(parse_memory(p.read_bytes(), p.name)).line()
                 for p in sorted((desk.root / "memory").glob("*.md"))}
        (desk.root / "MEMORY.md").write_bytes(render_lines(lines))
        proc = add_commit(desk.root, "person: gamma", "memory/gamma.md", "MEMORY.md")
        assert proc.returncode == 0, proc.stderr
    return commit


def _memory_without_index(desk: DeskFolder) -> Callable[[], None]:
    """A person adds memory/Beta.md with `git commit --no-verify` (MEMORY.md left as it was)."""
    def commit() -> None:
        write(desk.root, "memory/Beta.md", (desk.root / "memory/alpha.md").read_text()
              .replace("name: alpha", "name: Beta").replace("alpha is", "Beta is"))
        sh(desk.root, "add", "--", "memory/Beta.md")
        proc = sh(desk.root, "commit", "-q", "--no-verify", "-m", "person: Beta")
        assert proc.returncode == 0, proc.stderr
    return commit


@pytest.mark.parametrize(("point", "person"), [("after-marker", _memory_by_hand),
                                               ("after-objects", _memory_without_index)])
def test_a_change_checked_on_the_recorded_head_is_checked_again_on_the_head_it_lands_on(
        desk: DeskFolder, paused: Callable[[str, Callable[[], None]], list[str]], point: str,
        person: Callable[[DeskFolder], Callable[[], None]]) -> None:
    # desk checked memory/beta.md and MEMORY.md on the HEAD its mirror recorded; the person's
    # commit makes them wrong on the HEAD desk would land on: refused, naming the rule.
    # (after-marker: HEAD moved past the mirror's before desk read it, and gamma is missing from
    # desk's MEMORY.md; after-objects: desk's compare-and-swap lost, the person's index holds none
    # of desk's paths, and memory/Beta.md differs from beta only in case.)
    made = paused(point, person(desk))
    with pytest.raises(InvalidFileError) as refused:
        _remember(desk, "beta")
    assert {f.rule for f in refused.value.findings} & {"index-stale", "memory-name-case"}
    assert made and git(desk.root, "rev-parse", "HEAD").strip() == made[0]
    assert not (desk.root / "memory/beta.md").exists()
