"""The kill -9 matrix of `desk sync` and `desk rename` (issue 27.7): desk and every git process it
started are SIGKILLed together at a named point, then one ordinary desk command must leave the
desk writable, with nothing lost and `git fsck` clean.

Real processes and a real remote (a bare repository in the test's folder). The kills come from
inside git, where desk cannot pause itself: a reference-transaction hook (git holds the ref locks
then: `prepared`, or has moved the ref and not yet let go: `committed`) and a smudge filter (git
is checking files out: the torn checkout, with the file being written left empty), both
tests/sync/kill_tree.py, which is also put before a merge driver); and one desk crash point
(desk.storage.crash). Points: the fetch, the fast-forward's checkout and its ref update, a merge
driver at work (git's `.merge_file_*` files out), the merge's checkout, the merge done and not committed,
the merge commit before and after it moved the branch, the push's tracking ref, and rename's
compare-and-swap of the branch before and after it moved.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from desk.storage.crash import CRASH_ENV, SYNC_CRASH_POINTS
from desk.storage.git_locks import CHILD_RECORD_PREFIX
from desk.storage.integration import RECORD, RESCUED
from tests.sync.conftest import Clones, git

KILLER = Path(__file__).with_name("kill_tree.py")
INCOMING = ["b-one", "b-two", "b-three"]  # what clone b brings (ff and merge scenarios)
MINE = "mine"  # what clone a committed before its sync was killed (merge, push, rename)

# point: (scenario, what kills)
POINTS = {
    "fetch": ("ff", "ref:prepared:refs/desk/incoming"),
    "ff-checkout": ("ff", "smudge:memory/b-three.md"),
    "ff-ref": ("ff", "ref:prepared:refs/heads/main"),
    "merge-checkout": ("merge", "smudge:memory/b-three.md"),
    "merge-driver": ("merge", "driver:index"),
    "merged": ("merge", "crash:sync-merged"),
    "merge-commit": ("merge", "ref:prepared:refs/heads/main"),
    "merge-committed": ("merge", "ref:committed:refs/heads/main"),
    "push": ("push", "ref:prepared:refs/remotes/origin/main"),
    "rename": ("rename", "ref:prepared:refs/heads/main"),
    "rename-committed": ("rename", "ref:committed:refs/heads/main"),
}


def desk_cli(root: Path, *args: str, kill: str | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m desk ARGS` in `root` as its own process; `kill` names the point to die at."""
    env = {k: v for k, v in os.environ.items() if k not in ("DESK_TEST_KILL", CRASH_ENV)}
    if kill is not None and kill.startswith("crash:"):
        env[CRASH_ENV] = kill.removeprefix("crash:")
    elif kill is not None:
        env["DESK_TEST_KILL"] = kill
        env["DESK_TEST_KILL_BELOW"] = str(os.getpid())
    return subprocess.run([sys.executable, "-m", "desk", "--desk", str(root), *args], env=env,
                          capture_output=True, text=True)


def arm(root: Path) -> None:
    """The hook and the filter that kill at the point $DESK_TEST_KILL names (idle without it)."""
    hook = root / ".git/hooks/reference-transaction"
    hook.write_text(f'#!/bin/sh\n[ -n "$DESK_TEST_KILL" ] || exit 0\nexec "{sys.executable}" "{KILLER}" ref "$@"\n')
    smudge = root / ".git/desk-test-smudge"
    smudge.write_text(f'#!/bin/sh\ncase "$DESK_TEST_KILL" in smudge:*) exec "{sys.executable}" "{KILLER}" '
                      'smudge "$1";; esac\nexec cat\n')
    for script in (hook, smudge):
        script.chmod(0o755)
    git(root, "config", "filter.desktestkill.smudge", f"{smudge} %f")
    for driver in ("index",):  # MEMORY.md's: both sides changed it in the merge scenario
        key = f"merge.desk-{driver}.driver"
        command = git(root, "config", "--get", key).strip()
        git(root, "config", key, f'{{ [ "$DESK_TEST_KILL" != driver:{driver} ] || "{sys.executable}" '
                                 f'"{KILLER}" driver {driver}; }} && {command}')
    (root / ".git/info").mkdir(exist_ok=True)
    (root / ".git/info/attributes").write_text("*.md filter=desktestkill\n")


def remember(root: Path, name: str) -> None:
    result = desk_cli(root, "remember", name, "--type", "fact", "-d", f"The {name} fact", "-t", name,
                      f"What {name} says.")
    assert result.returncode == 0, result.stderr


def prepare(clones: Clones, scenario: str) -> Path:
    """Clone a, ready for its sync (or rename) to be killed; b has pushed what a will fetch."""
    a = clones[0].root
    if scenario in ("ff", "merge"):
        for name in INCOMING:
            clones[1].remember(name, f"What {name} says.", type="fact", description=f"The {name} fact",
                               triggers=[name])
        clones[1].sync()
    if scenario in ("merge", "push", "rename"):
        remember(a, MINE)  # acknowledged before the kill: it must survive
    arm(a)
    return a


def kill(a: Path, scenario: str, how: str) -> None:
    args = ["rename", MINE, f"{MINE}-renamed"] if scenario == "rename" else ["sync"]
    result = desk_cli(a, *args, kill=how)
    assert result.returncode == -9, f"{how} never fired: {result.returncode} {result.stdout} {result.stderr}"


def leftovers(root: Path) -> list[str]:
    """What would block the desk or a person's git: lock files (not desk's own flock files),
    desk's records of interrupted work, a merge in progress."""
    git_dir = root / ".git"
    found = [p.relative_to(git_dir).as_posix() for p in git_dir.rglob("*.lock")
             if not Path(f"{p}.queue").exists() and "objects" not in p.parts]
    found += [p.name for p in git_dir.glob("desk-pending-*")]
    found += [name for name in (RECORD, "MERGE_HEAD") if (git_dir / name).exists()]
    return sorted(found)


def files_at(root: Path, rev: str) -> set[str]:
    return set(git(root, "ls-tree", "-r", "--name-only", rev, "--", "memory").split())


def assert_writable_and_whole(a: Path) -> None:
    assert leftovers(a) == []
    assert git(a, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(a, "fsck", "--full", "--no-dangling").strip() == ""


def assert_nothing_lost(clones: Clones, a: Path, scenario: str) -> None:
    """After a full sync both ways: the remote and clone a hold every memory acknowledged."""
    result = desk_cli(a, "sync")
    assert result.returncode == 0, result.stdout + result.stderr
    assert_writable_and_whole(a)
    held = files_at(a, "HEAD")
    expected = {"memory/after.md"}
    if scenario in ("ff", "merge"):
        expected |= {f"memory/{n}.md" for n in INCOMING}
    if scenario in ("merge", "push"):
        expected.add(f"memory/{MINE}.md")
    if scenario == "rename":  # the rename landed (finished) or never happened: one of the two
        renamed = {f"memory/{MINE}.md", f"memory/{MINE}-renamed.md"} & held
        assert len(renamed) == 1, held
        expected |= renamed
    assert expected <= held, (expected - held, held)
    assert files_at(clones.remote, "main") == held  # pushed: the other clones get it all
    assert git(clones.remote, "fsck", "--full", "--no-dangling").strip() == ""


@pytest.mark.parametrize("point", sorted(POINTS))
def test_the_next_desk_command_makes_the_desk_writable(clones: Clones, point: str) -> None:
    scenario, how = POINTS[point]
    a = prepare(clones, scenario)
    kill(a, scenario, how)
    remembered = desk_cli(a, "remember", "after", "--type", "fact", "-d", "After the kill", "-t", "after",
                          "Written right after the kill.")
    assert remembered.returncode == 0, remembered.stdout + remembered.stderr  # one command: writable
    assert_writable_and_whole(a)
    assert not list((a / ".git").glob(f"{CHILD_RECORD_PREFIX}*"))
    assert_nothing_lost(clones, a, scenario)


def variants(points: list[str], quick: str) -> list[object]:
    """`points`, all but `quick` marked slow: each case is a few seconds, and the matrix above
    already kills at every point."""
    return [p if p == quick else pytest.param(p, marks=pytest.mark.slow) for p in points]


@pytest.mark.parametrize("point", variants(["ff-checkout", "ff-ref", "merge-checkout", "merged", "merge-committed"],
                                           "ff-checkout"))
def test_doctor_repair_undoes_a_torn_sync(clones: Clones, point: str) -> None:
    scenario, how = POINTS[point]
    a = prepare(clones, scenario)
    kill(a, scenario, how)
    found = desk_cli(a, "doctor", "--json")
    assert found.returncode == 3
    checks = {p["check"] for p in json.loads(found.stdout)["problems"]}
    assert "interrupted-sync" in checks or "git-lock" in checks, checks
    repaired = desk_cli(a, "doctor", "--repair", "--json")
    report = json.loads(repaired.stdout)
    assert repaired.returncode == 0, report
    assert_writable_and_whole(a)
    assert desk_cli(a, "doctor", "--repair").returncode == 0  # nothing left: idempotent
    remember(a, "after")
    assert_nothing_lost(clones, a, scenario)


@pytest.mark.parametrize("point", variants(["ff-checkout", "merge-checkout", "merged"], "merged"))
def test_sync_continue_undoes_a_torn_sync(clones: Clones, point: str) -> None:
    scenario, how = POINTS[point]
    a = prepare(clones, scenario)
    kill(a, scenario, how)
    resumed = desk_cli(a, "sync", "--continue", "--json")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "sync-undone"
    assert_writable_and_whole(a)
    remember(a, "after")
    assert_nothing_lost(clones, a, scenario)


def test_the_torn_checkout_is_the_one_the_red_team_saw(clones: Clones) -> None:
    """An empty memory file, new files untracked, index.lock left: and one command settles it."""
    a = prepare(clones, "ff")
    kill(a, "ff", POINTS["ff-checkout"][1])
    assert (a / "memory/b-three.md").read_bytes() == b""
    assert "index.lock" in leftovers(a) and RECORD in leftovers(a)
    untracked = git(a, "status", "--porcelain", "--untracked-files=all")
    assert "?? memory/b-one.md" in untracked
    remember(a, "after")
    assert not (a / "memory/b-three.md").exists() and not (a / "memory/b-one.md").exists()
    assert not (a / ".git" / RESCUED).exists()  # an empty or incoming file is not rescued: it is git's
    assert_writable_and_whole(a)


def test_sync_crash_points_are_in_the_matrix() -> None:
    assert {how.removeprefix("crash:") for _, how in POINTS.values() if how.startswith("crash:")} == set(
        SYNC_CRASH_POINTS)


def test_a_file_that_is_neither_sides_is_kept_before_it_is_put_back(clones: Clones) -> None:
    """A person wrote into a torn file before the next command: the undo keeps their bytes."""
    a = prepare(clones, "ff")
    kill(a, "ff", POINTS["ff-checkout"][1])
    (a / "memory/b-three.md").write_text("A person's words, typed into the torn file.\n")
    remember(a, "after")
    [kept] = (a / ".git" / RESCUED).rglob("b-three.md")
    assert kept.read_text() == "A person's words, typed into the torn file.\n"
    assert_writable_and_whole(a)


def test_a_refused_fast_forward_leaves_a_persons_edit_alone(clones: Clones) -> None:
    """git refuses to move a file a person is editing: nothing changes, and desk's settling of the
    failed integration does not touch that file either (its record keeps the person's paths)."""
    a = clones[0].root
    remember(a, "shared")
    assert desk_cli(a, "sync").returncode == 0
    clones[1].sync()
    clones[1].remember("shared", "What shared says, revised on b.")
    clones[1].sync()
    edited = "---\nname: shared\n---\nA person's unsaved thought.\n"
    (a / "memory/shared.md").write_text(edited)
    refused = desk_cli(a, "sync")
    assert refused.returncode == 4, refused.stdout + refused.stderr
    assert (a / "memory/shared.md").read_text() == edited
    assert leftovers(a) == [] and not (a / ".git" / RESCUED).exists()
    assert git(a, "status", "--porcelain") == " M memory/shared.md\n"


def test_a_push_killed_on_the_remote_names_the_lock_left_there(clones: Clones) -> None:
    """Killed while the remote's `git receive-pack` (desk's grandchild, for a remote on a path)
    holds the remote's branch lock: the desk itself is writable at once; the remote's lock is not
    desk's to take (another machine may push through a shared folder), so sync names it."""
    a = prepare(clones, "push")
    hook = clones.remote / "hooks/reference-transaction"
    hook.write_text(f'#!/bin/sh\n[ -n "$DESK_TEST_KILL" ] || exit 0\nexec "{sys.executable}" "{KILLER}" ref "$@"\n')
    hook.chmod(0o755)
    kill(a, "push", "ref:prepared:refs/heads/main")
    left = clones.remote / "refs/heads/main.lock"
    assert left.exists()
    remember(a, "after")  # writable at once
    assert_writable_and_whole(a)
    blocked = desk_cli(a, "sync")
    assert blocked.returncode == 4 and str(left) in blocked.stderr and "rm " in blocked.stderr
    for lock in clones.remote.rglob("*.lock"):
        lock.unlink()  # what the hint says, once no clone is pushing
    assert_nothing_lost(clones, a, "push")
