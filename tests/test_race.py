"""A person's plain `git commit` racing desk: every commit holds exactly its own author's files.

Two desk writers run real `remember` calls while a person, in the same work tree, writes journal
notes and commits them with plain `git add` + `git commit` through desk's installed hooks. desk
commits beside the person's index (private index, compare-and-swap of the branch, git's own
index lock for the hand-over), so none of desk's files can be swept into the person's commits,
no desk command fails, and every commit's MEMORY.md matches that commit's memory files.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
from pathlib import Path

import pytest

from desk.layout import DeskFolder
from tests.conftest import git
from tests.guard_helpers import add_commit, commit

DESK_WRITERS = 2
EACH = 12
# What a person retries: git's own refusals while another git holds its lock or has moved HEAD
# since `git commit` read it (git reads HEAD and the index before it locks), and the hook's word
# for the latter. Both leave everything as it was.
LOCKED = ("index.lock", "cannot lock ref", "HEAD moved while this commit was starting")


def _desk_writer(root: str, worker: int) -> None:
    from desk.memory.operations import remember

    desk = DeskFolder(Path(root))
    for i in range(EACH):
        remember(desk, f"d{worker}-{i:02d}", type="fact", description=f"desk writer {worker} fact {i}",
                 body=f"Desk writer {worker} learned fact {i}.")


def _person(root: str, stop: multiprocessing.synchronize.Event, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    """Commit journal notes by hand until told to stop; retry only when git says its lock is held."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "Person", "GIT_AUTHOR_EMAIL": "p@example.org",
           "GIT_COMMITTER_NAME": "Person", "GIT_COMMITTER_EMAIL": "p@example.org"}

    def git_(*args: str) -> subprocess.CompletedProcess[str]:
        for _ in range(200):  # bounded: a stuck index must fail the test, not hang it
            proc = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True)
            if proc.returncode == 0 or not any(word in proc.stderr for word in LOCKED):
                return proc
            retries[0] += 1
        return proc

    retries, commits, failures = [0], 0, []
    n = 0
    while not stop.is_set() or n < 3:
        n += 1
        rel = f"journal/person-{n:03d}.md"
        Path(root, rel).write_text(f"# note {n}\n\nWritten by hand.\n")
        for proc in (git_("add", "--", rel), git_("commit", "-q", "-m", f"person note {n}")):
            if proc.returncode != 0:
                failures.append(proc.stderr)
        commits += 1
    out.put((commits, retries[0], failures))


@pytest.mark.slow
def test_a_persons_commits_and_desks_never_mix(desk: DeskFolder) -> None:
    ctx = multiprocessing.get_context("fork")
    stop, out = ctx.Event(), ctx.Queue()
    person = ctx.Process(target=_person, args=(str(desk.root), stop, out))
    person.start()
    writers = [ctx.Process(target=_desk_writer, args=(str(desk.root), w)) for w in range(DESK_WRITERS)]
    for w in writers:
        w.start()
    for w in writers:
        w.join(timeout=300)
    stop.set()
    commits, _retries, failures = out.get(timeout=600)
    person.join(timeout=60)
    assert [w.exitcode for w in writers] == [0] * DESK_WRITERS  # no desk command failed
    assert failures == [], failures  # no person command failed (beyond git's "lock held, try again")

    log = git(desk.root, "log", "--format=%x1e%an%x1f%s", "--name-only", "--no-renames")
    seen_person = seen_desk = 0
    for entry in log.split("\x1e")[1:]:
        head, _, names = entry.partition("\n")
        author, subject = head.split("\x1f")
        files = set(names.split())
        if subject.startswith("person note"):
            seen_person += 1
            assert author == "Person" and len(files) == 1 and all(f.startswith("journal/person-") for f in files), \
                (subject, files)
        elif subject.startswith("remember: d"):
            seen_desk += 1
            name = subject.removeprefix("remember: ")
            assert files == {f"memory/{name}.md", "MEMORY.md"}, (subject, files)
    assert seen_person == commits and seen_desk == DESK_WRITERS * EACH

    # every commit's MEMORY.md lists exactly that commit's memory files
    for sha in git(desk.root, "rev-list", "HEAD").split():
        listed = {line.split("](memory/")[1].split(".md)")[0]
                  for line in git(desk.root, "show", f"{sha}:MEMORY.md").splitlines() if "](memory/" in line}
        files = {Path(p).stem for p in git(desk.root, "ls-tree", "--name-only", sha, "memory/").split()
                 if p.endswith(".md")}
        assert listed == files, sha
    assert git(desk.root, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(desk.root, "fsck", "--full", "--no-dangling").strip() == ""


# -- the write-back itself, made deterministic ----------------------------------------------------
# What the race above hits by chance: a plain `git commit` reads the index, desk publishes a commit,
# then git takes index.lock and writes the index it read back over desk's. The tests do exactly
# that with a copy of the index.


def _written_back(desk: DeskFolder, name: str) -> bytes:
    """desk remembers `name` while a `git commit` that read the index before holds on to it; then
    git writes that index back. Returns the index desk published (for comparison)."""
    from desk.memory.operations import remember

    read_by_git = (desk.git_dir / "index").read_bytes()
    remember(desk, name, type="fact", description=f"about {name}", body=f"{name} is a fact.")
    published = (desk.git_dir / "index").read_bytes()
    (desk.git_dir / "index").write_bytes(read_by_git)
    return published


def _person_commits(desk: DeskFolder, rel: str) -> None:
    Path(desk.root, rel).write_text("# a note\n\nWritten by hand.\n")
    proc = add_commit(desk.root, f"person: {rel}", rel)
    assert proc.returncode == 0, proc.stderr


def test_the_hook_heals_an_index_written_back_over_a_desk_commit(desk: DeskFolder) -> None:
    from desk.memory.operations import remember

    remember(desk, "first", type="fact", description="about first", body="first is a fact.")
    _written_back(desk, "second")
    assert "memory/second.md" in git(desk.root, "diff", "--cached", "--name-only")  # the damage
    _person_commits(desk, "journal/person-1.md")
    assert git(desk.root, "show", "--name-only", "--format=", "HEAD").split() == ["journal/person-1.md"]
    assert git(desk.root, "status", "--porcelain", "--untracked-files=all") == ""
    assert "memory/second.md" in git(desk.root, "ls-files", "memory/")


def test_desk_heals_an_index_written_back_over_its_commit(desk: DeskFolder) -> None:
    from desk.memory.operations import remember

    _written_back(desk, "second")
    remember(desk, "third", type="fact", description="about third", body="third is a fact.")
    assert git(desk.root, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(desk.root, "diff", "--cached", "--name-only", "HEAD") == ""


def test_a_persons_own_unstaging_is_not_taken_for_a_write_back(desk: DeskFolder) -> None:
    """`git rm --cached` of one memory leaves MEMORY.md as HEAD has it: the person's choice stands
    (the hook refuses the commit, which would leave MEMORY.md listing an untracked file)."""
    from desk.memory.operations import remember

    remember(desk, "kept", type="fact", description="about kept", body="kept is a fact.")
    git(desk.root, "rm", "-q", "--cached", "memory/kept.md")
    proc = commit(desk.root, "untrack")
    assert "memory/kept.md" not in git(desk.root, "ls-files", "memory/")  # not put back
    assert proc.returncode != 0, proc.stderr
