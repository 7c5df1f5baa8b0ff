"""desk.recall.git_state: memory/'s untracked files known from their record while the folder and
the index are as they were recorded, else listed by git (and recorded for the next read)."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from pathlib import Path

import pytest

from desk.layout import MEMORY_DIR, DeskFolder
from desk.memory.operations import remember
from desk.recall import git_state
from desk.recall.context import ContextRequest, build_context, render_markdown
from desk.recall.git_state import KnownUntracked, start_folder_state
from desk.storage.git import FolderState

NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc)
MEMORY = """---
name: {name}
type: preference
description: About {name}
triggers: [{name}]
created: 2026-11-01T00:00:00Z
updated: 2026-11-01T00:00:00Z
---
{body}
"""


def _remember(desk: DeskFolder, name: str) -> None:
    remember(desk, name, type="preference", description=f"About {name}", body=f"The {name} rule.",
             triggers=(name,), now=NOW)


def _age(desk: DeskFolder, seconds: int = 3600) -> None:
    """Set memory/'s and the index's mtime back, as on a desk last changed an hour ago (their
    ctime cannot be set back: the tests let `_RACY_NS` be 0)."""
    for path in (desk.path(MEMORY_DIR), desk.git.git_dir() / "index"):
        when = path.stat().st_mtime - seconds
        os.utime(path, (when, when))


def _truth(desk: DeskFolder) -> tuple[str | None, list[str]] | None:
    """What git itself says now, with its own untracked listing."""
    return FolderState(desk.git, MEMORY_DIR).result()


def _direct(found: tuple[str | None, list[str]] | None) -> tuple[str | None, list[str]]:
    """Leave out memory/sub/ (untracked files in a subfolder are named only by a listing)."""
    assert found is not None
    return found[0], [p for p in found[1] if not p.startswith("memory/sub/")]


def _known(desk: DeskFolder) -> tuple[KnownUntracked, tuple[str | None, list[str]] | None]:
    state = start_folder_state(desk)
    assert isinstance(state, KnownUntracked)
    return state, state.result()


def _git(desk: DeskFolder, *args: str) -> None:
    subprocess.run(["git", *args], cwd=desk.root, check=True, capture_output=True)


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(git_state, "_RACY_NS", 0)


def test_the_untracked_listing_is_recorded_and_then_not_run(desk: DeskFolder, settled: None) -> None:
    _remember(desk, "alpha")
    desk.path("memory/loose.md").write_text(MEMORY.format(name="loose", body="Loose."), "utf-8")
    _age(desk)
    first, found = _known(desk)
    assert first._untracked is not None  # no record yet: git lists them
    assert found == _truth(desk) and "memory/loose.md" in found[1]  # type: ignore[index]
    second, again = _known(desk)
    assert second._untracked is None  # recorded: no `ls-files -o`
    assert again == found


def test_every_change_to_untracked_files_shows(desk: DeskFolder, settled: None) -> None:
    """Each step is compared with git's own full answer, and the context with a fresh build."""
    _remember(desk, "alpha")
    steps = [
        lambda: desk.path("memory/loose.md").write_text(MEMORY.format(name="loose", body="One."), "utf-8"),
        lambda: desk.path("memory/loose.md").write_text(MEMORY.format(name="loose", body="Two."), "utf-8"),
        lambda: desk.path("memory/other.md").write_text(MEMORY.format(name="other", body="Other."), "utf-8"),
        lambda: _git(desk, "add", "memory/loose.md"),  # the index changes, the folder does not
        lambda: _git(desk, "rm", "-q", "--cached", "memory/loose.md"),
        lambda: os.replace(desk.path("memory/other.md"), desk.path("memory/moved.md")),
        lambda: desk.path("memory/loose.md").unlink(),
        lambda: desk.path("memory/sub").mkdir(),
        lambda: desk.path("memory/sub/deep.md").write_text("x", "utf-8"),
    ]
    for step in steps:
        _age(desk)
        _known(desk)  # recorded as the folder is now
        step()
        assert _direct(_known(desk)[1]) == _direct(_truth(desk)), step
        kept = render_markdown(build_context(desk, ContextRequest(query="loose other moved alpha", as_of=NOW)))
        (desk.cache_dir / "context.sqlite").unlink()
        (desk.cache_dir / "memory-untracked").unlink()
        assert kept == render_markdown(build_context(desk, ContextRequest(query="loose other moved alpha", as_of=NOW))), step


def test_a_folder_or_index_changed_within_the_racy_window_is_not_recorded(desk: DeskFolder) -> None:
    _remember(desk, "alpha")  # memory/ and the index were just written
    assert _known(desk)[1] == _truth(desk)
    assert not (desk.cache_dir / "memory-untracked").exists()
    assert _known(desk)[0]._untracked is not None


def test_a_damaged_or_foreign_record_is_listed_again(desk: DeskFolder, settled: None, tmp_path: Path) -> None:
    _remember(desk, "alpha")
    desk.path("memory/loose.md").write_text(MEMORY.format(name="loose", body="One."), "utf-8")
    _age(desk)
    _known(desk)
    record = desk.cache_dir / "memory-untracked"
    record.write_bytes(b"0 0 0\n" + record.read_bytes().partition(b"\n")[2])
    state, found = _known(desk)
    assert state._untracked is not None and found == _truth(desk)
    record.write_bytes(b"\xff\n\n")
    assert _known(desk)[1] == _truth(desk)
    _age(desk)
    _known(desk)
    whole = record.read_bytes()
    assert b"loose.md" in whole
    record.write_bytes(whole[:-3])  # cut short (a crash before the data reached the disk)
    state, found = _known(desk)
    assert state._untracked is not None and found == _truth(desk)


def test_a_linked_memory_folder_is_not_recorded(desk: DeskFolder, settled: None, tmp_path: Path) -> None:
    _remember(desk, "alpha")
    elsewhere = tmp_path / "elsewhere"
    os.replace(desk.path(MEMORY_DIR), elsewhere)
    os.symlink(elsewhere, desk.path(MEMORY_DIR))
    state, _ = _known(desk)
    assert state._untracked is not None and not (desk.cache_dir / "memory-untracked").exists()


def _ids_truth(desk: DeskFolder, names: list[str]) -> dict[str, str | None]:
    """git's own look-up of `names` at HEAD now."""
    return {**desk.git.objects.object_ids(names), "HEAD": desk.git.refs.head()}


NAMES = ["HEAD:memory", "HEAD:AGENTS.md", "HEAD:NOW.md", "HEAD:no-such-file.md"]


def _looked_up(desk: DeskFolder) -> None:
    state = start_folder_state(desk, NAMES[1:])
    assert state is not None
    assert state.ids["HEAD"] is not None  # asked: recorded
    state.close()


def test_heads_ids_are_recorded_by_commit_and_then_not_looked_up(desk: DeskFolder, identity: None) -> None:
    _remember(desk, "alpha")
    first = start_folder_state(desk, NAMES[1:])
    assert first is not None and first.looked_up  # no record yet: one cat-file
    assert first.ids == _ids_truth(desk, NAMES) and first.ids["HEAD:no-such-file.md"] is None
    first.close()
    second = start_folder_state(desk, NAMES[1:])
    assert second is not None and not second.looked_up  # recorded: no git process for them
    assert second.ids == _ids_truth(desk, NAMES)
    assert second.result() == _truth(desk)
    recall_side = git_state.search_git_state(desk)  # recall's names join the same commit's record
    assert recall_side.looked_up and recall_side.ids == _ids_truth(desk, ["HEAD:memory", "HEAD:.system/archive"])
    recall_side.close()
    assert not git_state.search_git_state(desk).looked_up
    third = start_folder_state(desk, NAMES[1:])
    assert third is not None and not third.looked_up  # the context's names were kept beside them
    third.close()
    desk.path("NOW.md").write_text("# Now\n\nSomething else, same commit count.\n", "utf-8")
    _git(desk, "commit", "-q", "-am", "now")  # a new HEAD: its own look-up
    fourth = start_folder_state(desk, NAMES[1:])
    assert fourth is not None and fourth.looked_up and fourth.ids == _ids_truth(desk, NAMES)
    assert fourth.ids["HEAD:NOW.md"] != second.ids["HEAD:NOW.md"]
    fourth.close()


def test_a_replace_ref_is_followed_as_git_follows_it(desk: DeskFolder, identity: None) -> None:
    """`git replace` makes git answer another tree for the same commit: no record is used while a
    replace ref may be in effect (loose or packed), and the answers are git's."""
    _remember(desk, "alpha")
    desk.path("NOW.md").write_text("# Now\n\nReplaced.\n", "utf-8")
    _git(desk, "commit", "-q", "-am", "other tree")
    other = desk.git.refs.head()
    _git(desk, "reset", "-q", "--hard", "HEAD~1")
    _looked_up(desk)  # recorded
    before = _ids_truth(desk, NAMES)
    assert other is not None and before["HEAD"] is not None
    _git(desk, "replace", before["HEAD"], other)
    replaced = _ids_truth(desk, NAMES)
    assert replaced["HEAD:NOW.md"] != before["HEAD:NOW.md"]  # git follows the replacement
    state = start_folder_state(desk, NAMES[1:])
    assert state is not None and state.looked_up and state.ids == replaced
    state.close()
    _git(desk, "pack-refs", "--all", "--prune")  # the replace ref packed; the loose folder gone
    (desk.git.git_dir() / "refs" / "replace").mkdir(exist_ok=True)
    (desk.git.git_dir() / "refs" / "replace").rmdir()
    for _ in range(2):
        state = start_folder_state(desk, NAMES[1:])
        assert state is not None and state.ids == replaced
        state.close()
    _git(desk, "replace", "-d", before["HEAD"])
    state = start_folder_state(desk, NAMES[1:])
    assert state is not None and state.ids == _ids_truth(desk, NAMES) == before
    state.close()


def test_a_damaged_or_foreign_ids_record_is_looked_up_again(desk: DeskFolder) -> None:
    _remember(desk, "alpha")
    _looked_up(desk)
    record = desk.cache_dir / "head-ids"
    whole = record.read_bytes()
    forged = whole.replace(whole[:40], b"0" * 40)  # another commit's record
    for damaged in (whole[:-3], forged, b"\xff\n\n", b"", whole.replace(b"\0", b"\n")):
        record.write_bytes(damaged)
        state = start_folder_state(desk, NAMES[1:])
        assert state is not None and state.looked_up and state.ids == _ids_truth(desk, NAMES)
        state.close()
    state = start_folder_state(desk, NAMES[1:])
    assert state is not None and not state.looked_up and state.ids == _ids_truth(desk, NAMES)


def test_replace_refs_moved_by_a_variable_are_followed_too(desk: DeskFolder, identity: None,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """GIT_REPLACE_REF_BASE puts replace refs outside refs/replace/: no record is used then."""
    _remember(desk, "alpha")
    desk.path("NOW.md").write_text("# Now\n\nReplaced elsewhere.\n", "utf-8")
    _git(desk, "commit", "-q", "-am", "other tree")
    other = desk.git.refs.head()
    _git(desk, "reset", "-q", "--hard", "HEAD~1")
    _looked_up(desk)  # recorded without the variable
    head = desk.git.refs.head()
    assert head is not None and other is not None
    monkeypatch.setenv("GIT_REPLACE_REF_BASE", "refs/elsewhere/")
    _git(desk, "replace", head, other)
    assert not (desk.git.git_dir() / "refs" / "replace").exists()
    moved = DeskFolder(desk.root)  # its git runs with the variable
    state = start_folder_state(moved, NAMES[1:])
    assert state is not None and state.looked_up and state.ids == _ids_truth(moved, NAMES)
    # the replacement's blob, as git with the variable answers (without it: the commit's own)
    assert state.ids["HEAD:NOW.md"] != _ids_truth(desk, ["HEAD:NOW.md"])["HEAD:NOW.md"]
    state.close()
