"""desk.transaction's hand-over of the person's index: git refreshes a hard link of it, so the
person's file is never written in place, and nothing is left behind when git changes nothing."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

from desk.layout import DeskFolder
from desk.memory.operations import remember
from desk.transaction import transaction
from tests.conftest import git
from tests.guard_helpers import add_commit, commit

NOW = dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.timezone.utc)


def test_the_persons_index_is_replaced_never_written_through_desks_link(desk: DeskFolder) -> None:
    index = desk.git_dir / "index"
    kept = desk.git_dir / "test-kept-index"
    os.link(index, kept)  # the person's index file as it was, by inode
    before = kept.read_bytes()
    remember(desk, "linked", type="fact", description="About links", body="A fact.", triggers=["t"], now=NOW)
    assert kept.read_bytes() == before  # the old file untouched: git wrote a new one
    assert not os.path.samefile(index, kept)
    assert git(desk.root, "ls-files", "-s", "memory/linked.md").split()[1] == git(
        desk.root, "rev-parse", "HEAD:memory/linked.md").strip()
    assert git(desk.root, "status", "--porcelain") == ""
    assert not (desk.git_dir / "desk-person-index").exists()
    assert not (desk.git_dir / "index.lock").exists()


def test_a_commit_git_finds_nothing_to_refresh_for_leaves_no_lock_and_no_link(desk: DeskFolder) -> None:
    index = desk.git_dir / "index"
    inode, before = index.stat().st_ino, index.read_bytes()
    with transaction(desk) as tx:  # the same bytes as HEAD: git leaves the index as it is
        sha = tx.commit({"NOW.md": (desk.root / "NOW.md").read_bytes()}, "the same bytes")
    assert git(desk.root, "rev-parse", "HEAD").strip() == sha
    assert index.stat().st_ino == inode and index.read_bytes() == before
    assert not (desk.git_dir / "index.lock").exists()
    assert not (desk.git_dir / "desk-person-index").exists()
    assert git(desk.root, "status", "--porcelain") == ""
    done = commit(desk.root, "a person's commit after it", "--allow-empty")  # the index is free
    assert done.returncode == 0, done.stderr


def test_without_an_index_the_person_gets_one(desk: DeskFolder) -> None:
    (desk.git_dir / "index").unlink()
    remember(desk, "fresh", type="fact", description="About a fresh index", body="A fact.", triggers=["t"],
             now=NOW)
    assert "memory/fresh.md" in git(desk.root, "ls-files", "memory/")
    assert not (desk.git_dir / "index.lock").exists()


def test_a_racily_clean_entry_of_the_persons_index_stays_racy(desk: DeskFolder) -> None:
    """git trusts an index entry's stat data only for files older than the index file itself (a
    file changed in the second the index was written may look clean: "racy git"). desk hands git
    the person's index as it is, timestamp included, so git still checks such a file's content,
    and a change in it is not lost when desk refreshes its own paths (a copy, younger than the
    file, would have made the entry look clean for good)."""
    root = desk.root
    git(root, "config", "core.trustctime", "false")  # the test sets mtimes; ctime cannot be set
    notes = root / "notes.txt"
    notes.write_text("aaaa\n")
    assert add_commit(root, "a person's file", "notes.txt").returncode == 0
    when = int(notes.stat().st_mtime) - 100
    os.utime(notes, (when, when))
    git(root, "update-index", "--refresh")  # the entry records mtime `when`
    with open(notes, "r+b") as edit:  # same size, same inode, the mtime set back: only content differs
        edit.write(b"bbbb\n")
    os.utime(notes, (when, when))
    os.utime(desk.git_dir / "index", (when, when))  # the index written in that same second
    # (a status that may write the index would smudge the entry itself: this one must not)
    assert git(root, "--no-optional-locks", "status", "--porcelain", "--", "notes.txt").strip() == "M notes.txt"
    remember(desk, "racy", type="fact", description="About racy git", body="A fact.", triggers=["t"], now=NOW)
    assert git(root, "status", "--porcelain", "--", "notes.txt").strip() == "M notes.txt"


def test_a_desk_with_gits_split_index_commits_and_the_persons_git_works(desk: DeskFolder) -> None:
    """`core.splitIndex` (git rewrites only a small part of a large index at each change): desk's
    commits leave a split index git reads, and the person's own status, add and commit (through
    desk's hooks) work on it."""
    root = desk.root
    git(root, "config", "core.splitIndex", "true")
    git(root, "update-index", "--split-index")
    assert list(desk.git_dir.glob("sharedindex.*"))
    for name in ("split-one", "split-two"):
        remember(desk, name, type="fact", description=f"About {name}", body=f"{name} fact.", triggers=["t"],
                 now=NOW)
    assert git(root, "status", "--porcelain") == ""
    assert "memory/split-two.md" in git(root, "ls-files", "memory/")
    assert b"link" in (desk.git_dir / "index").read_bytes()  # still split: git wrote only the split part
    (root / "notes.txt").write_text("a person's notes\n")
    assert add_commit(root, "a person's file", "notes.txt").returncode == 0
    memory = root / "memory" / "split-one.md"
    memory.write_text(memory.read_text().replace("split-one fact.", "split-one fact, edited by hand."))
    done = add_commit(root, "a person's edit of a memory", "memory/split-one.md")  # desk's pre-commit hook runs
    assert done.returncode == 0, done.stderr
    assert git(root, "status", "--porcelain") == ""
    remember(desk, "split-three", type="fact", description="About three", body="Three.", triggers=["t"], now=NOW)
    assert git(root, "status", "--porcelain") == ""
    assert "error" not in git(root, "fsck", "--no-progress").lower()


def test_a_config_that_has_git_write_the_index_leaves_it_to_git(desk: DeskFolder, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """core.fsync (the index fsynced), index.skipHash: git's update-index refreshes the person's
    index, as the person's config asks."""
    for key, value in (("core.fsync", "index"), ("index.skipHash", "true")):
        git(desk.root, "config", key, value)
        trace = tmp_path / f"{key}.trace"
        monkeypatch.setenv("GIT_TRACE", str(trace))
        remember(DeskFolder(desk.root), f"config-{key.split('.')[1].lower()}", type="fact", description=f"About {key}",
                 body=f"A fact with {key} set.", triggers=["t"], now=NOW)
        monkeypatch.delenv("GIT_TRACE")
        assert "built-in: git update-index" in trace.read_text()
        git(desk.root, "config", "--unset", key)
    assert git(desk.root, "status", "--porcelain") == ""


def test_a_persons_version_4_index_is_refreshed_by_git_and_stays_version_4(desk: DeskFolder) -> None:
    """Index version 4 (what `feature.manyFiles` sets): git's update-index refreshes it, and the
    person's git and desk's hooks keep working on it."""
    root = desk.root
    git(root, "update-index", "--index-version", "4")
    remember(desk, "four", type="fact", description="About version 4", body="A fact.", triggers=["t"], now=NOW)
    assert (desk.git_dir / "index").read_bytes()[4:8] == (4).to_bytes(4, "big")
    assert git(root, "status", "--porcelain") == ""
    memory = root / "memory" / "four.md"
    memory.write_text(memory.read_text().replace("A fact.", "A fact, edited by hand."))
    done = add_commit(root, "a person's edit", "memory/four.md")  # desk's pre-commit hook runs
    assert done.returncode == 0, done.stderr
    remember(desk, "five", type="fact", description="About five", body="Five.", triggers=["t"], now=NOW)
    assert git(root, "status", "--porcelain") == ""
    assert (desk.git_dir / "index").read_bytes()[4:8] == (4).to_bytes(4, "big")


def test_a_persons_staged_work_stays_staged_through_desks_commits(desk: DeskFolder) -> None:
    """desk's commits (new, changed and forgotten memories, a body with \\r\\n and a tab) are built
    in desk's private index: a file the person staged stays staged and out of desk's commits, and
    the person's index afterwards holds stat data git trusts."""
    from desk.memory.operations import forget

    root = desk.root
    (root / "notes.txt").write_text("a person's own work, staged\n")
    git(root, "add", "notes.txt")
    before = len(git(root, "rev-list", "HEAD").split())
    remember(desk, "kept", type="fact", description="Kept", body="A fact with a line\r\nand a tab\t.", now=NOW)
    remember(desk, "gone", type="fact", description="Gone", body="A fact forgotten next.", now=NOW)
    remember(desk, "kept", type="fact", description="Kept", body="The fact, changed.", now=NOW)
    forget(desk, "gone")
    assert len(git(root, "rev-list", "HEAD").split()) == before + 4
    assert git(root, "diff", "--cached", "--name-only") == "notes.txt\n"  # still staged, not committed
    assert git(root, "status", "--porcelain") == "A  notes.txt\n"
    assert git(root, "update-index", "--refresh") == ""  # every entry's stat data as git writes it
    assert git(root, "fsck", "--full", "--no-dangling").strip() == ""
    assert "notes.txt" not in git(root, "log", "--name-only", "--format=")
    assert git(root, "show", "HEAD~3:memory/kept.md").endswith("A fact with a line\nand a tab\t.\n")


def _flushes(desk: DeskFolder, trace: Path, name: str) -> dict[str, int]:
    """What git reported flushing (trace2's fsync counters) per git command while desk remembered `name`."""
    import json

    trace.unlink(missing_ok=True)
    os.environ["GIT_TRACE2_EVENT"] = str(trace)
    try:
        remember(desk, name, type="fact", description=f"About {name}", body=f"The fact about {name}.",
                 triggers=[name], now=dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc))
    finally:
        del os.environ["GIT_TRACE2_EVENT"]
    commands: dict[str, str] = {}
    flushed: dict[str, int] = {}
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        if event.get("event") == "start":
            argv = [a for a in event["argv"][1:] if not a.startswith("-") and "=" not in a]
            commands[event["sid"]] = argv[0] if argv else ""
        elif event.get("category") == "fsync" and event.get("key") == "fsync/hardware-flush":
            command = commands.get(event["sid"], "?")
            flushed[command] = flushed.get(command, 0) + int(event["value"])
    return flushed


def test_desks_commit_objects_are_flushed_unless_the_person_chose_otherwise(desk: DeskFolder, tmp_path: Path) -> None:
    """git flushes no loose object by default (core.fsync); desk asks for `committed` on the
    objects of its own commits, so a commit HEAD names survives a power loss, and leaves a
    person's own core.fsync as it is."""
    flushed = _flushes(desk, tmp_path / "trace.json", "durable")
    assert flushed.get("hash-object", 0) >= 2 and flushed.get("write-tree", 0) >= 1, flushed
    assert flushed.get("commit-tree", 0) >= 1, flushed
    git(desk.root, "config", "core.fsync", "none")
    assert _flushes(DeskFolder(desk.root), tmp_path / "trace.json", "as-configured") == {}  # a new command
