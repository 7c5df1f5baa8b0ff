"""desk.transaction's hand-over of the person's index: git refreshes a hard link of it, so the
person's file is never written in place, and nothing is left behind when git changes nothing."""

from __future__ import annotations

import datetime as dt
import os

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
