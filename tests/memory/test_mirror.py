"""desk.gate.mirror: each memory's last commit, kept in the HEAD mirror, equals what
`git log -n1 -- memory/<name>.md` says, however HEAD got where it is."""

from __future__ import annotations

import shutil

import pytest

from desk.layout import DeskFolder
from desk.formats.memory_index import memory_path
from desk.gate.mirror import head_mirror, project_heads
from tests.history_helpers import add, build_history, edit, last_commit, person


def _names(desk: DeskFolder) -> list[str]:
    return sorted(p.stem for p in desk.path("memory").glob("*.md"))


def _assert_like_git(desk: DeskFolder) -> None:
    names = _names(desk)
    with head_mirror(desk) as mirror:
        committed = mirror.committed(names)
    assert sorted(committed) == names
    for name in names:
        assert (committed[name].commit, committed[name].time) == last_commit(desk.root, name), name


@pytest.mark.parametrize("sync_each_step", [False, True], ids=["catch-up", "step-by-step"])
def test_last_commits_equal_git_log_after_persons_merges_and_forgets(desk: DeskFolder,
                                                                     sync_each_step: bool) -> None:
    build_history(desk, sync_each_step=sync_each_step)
    # The history has what the test is about (a guard against a builder that silently does less).
    subjects = {name: person(desk.root, "log", "-1", "--format=%s", last_commit(desk.root, name)[0]).strip()
                for name in ("alpha", "beta", "gamma", "delta", "eta", "zeta")}
    assert subjects == {"alpha": "main: alpha", "beta": "remember: beta", "gamma": "side: gamma",
                        "delta": "merge other", "eta": "person: epsilon is eta", "zeta": "side: zeta"}
    _assert_like_git(desk)
    shutil.rmtree(desk.cache_dir)  # rebuilt from nothing: one walk over the whole history
    _assert_like_git(desk)


def test_a_person_reverting_a_file_makes_a_new_last_commit(desk: DeskFolder) -> None:
    add(desk, "alpha", "The first word.")
    with head_mirror(desk):
        pass
    original = desk.path(memory_path("alpha")).read_bytes()
    edit(desk, "alpha", "Changed.")
    person(desk.root, "commit", "-qam", "change")
    desk.path(memory_path("alpha")).write_bytes(original)
    person(desk.root, "commit", "-qam", "change back")
    _assert_like_git(desk)  # the blob at HEAD is the recorded one, its last commit is not


def test_a_merge_taking_the_side_that_never_changed_the_file(desk: DeskFolder) -> None:
    # main changes alpha after the side branched off; the merge takes the side's (older) alpha, so
    # git's answer lies before the commit the mirror last recorded, reached through the side.
    add(desk, "alpha", "The first word.")
    add(desk, "beta", "Beta.")
    original = desk.path(memory_path("alpha")).read_bytes()
    person(desk.root, "branch", "side")
    edit(desk, "alpha", "Changed on main.")
    person(desk.root, "commit", "-qam", "main: alpha")
    with head_mirror(desk):
        pass  # recorded: main's commit
    person(desk.root, "checkout", "-q", "side")
    edit(desk, "beta", "Beta on the side.")
    person(desk.root, "commit", "-qam", "side: beta")
    person(desk.root, "checkout", "-q", "main")
    person(desk.root, "merge", "-q", "--no-ff", "--no-commit", "side")
    desk.path(memory_path("alpha")).write_bytes(original)
    person(desk.root, "add", "memory/alpha.md")
    person(desk.root, "commit", "-qm", "merge side, keep its alpha")
    _assert_like_git(desk)


def test_rewritten_history_is_rebuilt(desk: DeskFolder) -> None:
    add(desk, "alpha", "The first word.")
    add(desk, "beta", "Beta.")
    with head_mirror(desk):
        pass
    edit(desk, "beta", "Beta, amended.")
    person(desk.root, "commit", "-q", "-a", "--amend", "-m", "beta, amended")
    _assert_like_git(desk)
    person(desk.root, "reset", "-q", "--hard", "HEAD~1")  # HEAD goes back: beta is gone
    _assert_like_git(desk)


def test_desks_own_commit_is_recorded_and_its_time_read_once(desk: DeskFolder) -> None:
    add(desk, "alpha", "The first word.")
    add(desk, "alpha", "The second word.")
    with head_mirror(desk) as mirror:
        assert mirror.committed(["alpha"])["alpha"].commit == person(desk.root, "rev-parse", "HEAD").strip()
        assert mirror.committed(["alpha", "missing"]).keys() == {"alpha"}
    _assert_like_git(desk)


# -- project memories (desk.gate.mirror.ProjectHeads) -----------------------------------------

def _git_last(desk: DeskFolder, path: str) -> tuple[str, int] | None:
    out = person(desk.root, "log", "-n1", "--format=%H %ct", "--", path).split()
    return (out[0], int(out[1])) if out else None


def _assert_projects_like_git(desk: DeskFolder) -> None:
    paths = sorted(str(p.relative_to(desk.root)) for p in desk.path("projects").glob("*/memory/*.md"))
    with project_heads(desk) as heads:
        committed = heads.committed(paths + ["projects/gone/memory/never.md"])
    assert sorted(committed) == paths
    for path in paths:
        assert (committed[path].commit, committed[path].time) == _git_last(desk, path), path


def test_project_last_commits_follow_head_through_desk_and_person_commits(desk: DeskFolder) -> None:
    import desk as desk_api
    from desk.layout import project_memory_path

    d = desk_api.open(desk.root)
    args = dict(type="decision", description="Runtime", triggers=["runtime"])
    d.remember("runtime", "Billing runs Python 3.12.", project="billing", **args)  # type: ignore[arg-type]
    d.remember("runtime", "Search runs Python 3.11.", project="search", **args)  # type: ignore[arg-type]
    _assert_projects_like_git(desk)  # rebuilt from nothing
    d.remember("runtime", "Billing runs Python 3.13.", project="billing", **args)  # type: ignore[arg-type]
    path = desk.path(project_memory_path("search", "runtime"))
    path.write_text(path.read_text().replace("3.11", "3.10"))
    person(desk.root, "commit", "-qam", "a person's edit")
    _assert_projects_like_git(desk)  # caught up from the recorded commit
    d.forget("runtime", project="search")
    _assert_projects_like_git(desk)
    person(desk.root, "reset", "-q", "--hard", "HEAD~2")  # history rewritten: rebuilt
    _assert_projects_like_git(desk)
    shutil.rmtree(desk.cache_dir)
    _assert_projects_like_git(desk)
