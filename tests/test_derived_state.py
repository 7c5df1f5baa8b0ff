"""Every derived cache answers as a cold rebuild does, whatever desk and a person's git do in between.

A hypothesis state machine interleaves desk's operations (remember, forget, rename, archive
append, checkpoint, digest, sync with a second clone) with a person's git (`commit -a`, a rebase
that drops a commit, `reset --hard`, checkout of an old commit and back, `gc --prune=now`) on real
repositories. After every step it asks the desk what the caches serve (recall, context, validate
--all, list) twice: as the caches are, and with every file the registry (desk.storage.derived)
names moved away, so each answer is made from the files alone; then the caches are put back. The
two must be equal.
"""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

import desk.api as api
from desk.errors import DeskError
from desk.storage.derived import REGISTRY
from tests.sync.conftest import Clones, make_clones

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
AS_OF = "2026-12-01T00:00:00Z"
NAMES = ("alpha", "beta", "gamma")
QUERIES = ("alpha", "message", "beta body")


def answers(root: Path) -> list[Any]:
    """What the caches serve, from a fresh Desk (no warm state in this process)."""
    with api.open(root) as d:
        found: list[Any] = []
        for query in QUERIES:
            recalled = d.recall(query, now=AS_OF).to_json()
            recalled["query"].pop("query_id")
            found.append(recalled)
        found.append(d.context(query="alpha gamma", now=AS_OF).text())
        found.append(d.context(now=AS_OF).text())
        found.append(d.validate("all").to_json())
        found.append(d.list().to_json())
        return found


def cold_answers(root: Path, hold: Path) -> list[Any]:
    """`answers` with every registered cache and record moved away, then put back as it was."""
    git_dir = root / ".git"
    moved = []
    for entry in REGISTRY:
        for suffix in ("", "-wal", "-shm"):
            path = git_dir / f"{entry.path}{suffix}"
            if path.exists():
                target = hold / f"{entry.path}{suffix}"
                target.parent.mkdir(parents=True, exist_ok=True)
                path.rename(target)
                moved.append((path, target))
    try:
        return answers(root)
    finally:
        for entry in REGISTRY:
            for suffix in ("", "-wal", "-shm"):
                (git_dir / f"{entry.path}{suffix}").unlink(missing_ok=True)
        for path, target in moved:
            target.rename(path)


class DerivedState(RuleBasedStateMachine):
    template: Path

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="desk-derived-"))
        clones = Clones(self.tmp, self.template)
        self.a, self.b = clones[0], clones[1]
        self.hold = self.tmp / "hold"
        self.counter = 0
        self.detached = False

    def teardown(self) -> None:
        self.a.close()
        self.b.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _git(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=self.a.root, capture_output=True, text=True)

    def _desk(self, action: Any) -> None:
        self.counter += 1
        try:
            action()
        except DeskError as exc:
            assert exc.exit_code in (2, 3, 4), exc.message  # refused (unknown name, a rule, a conflict)
        finally:
            self.a.close()

    def _memory(self, name: str) -> Path:
        return self.a.root / "memory" / f"{name}.md"

    # -- desk ----------------------------------------------------------------------------------

    @precondition(lambda self: not self.detached)
    @rule(name=st.sampled_from(NAMES), n=st.integers(0, 3))
    def remember(self, name: str, n: int) -> None:
        self._desk(lambda: self.a.remember(name, f"{name} body {self.counter}", type="fact",
                                           description=f"{name} {n}", triggers=[name], now=NOW))

    @precondition(lambda self: not self.detached)
    @rule(name=st.sampled_from(NAMES))
    def forget(self, name: str) -> None:
        if self._memory(name).is_file():
            self._desk(lambda: self.a.forget(name))

    @precondition(lambda self: not self.detached)
    @rule(old=st.sampled_from(NAMES), new=st.sampled_from(NAMES))
    def rename(self, old: str, new: str) -> None:
        if old != new and self._memory(old).is_file() and not self._memory(new).exists():
            self._desk(lambda: self.a.rename(old, new))

    @precondition(lambda self: not self.detached)
    @rule(n=st.integers(0, 3))
    def archive_append(self, n: int) -> None:
        self._desk(lambda: self.a.archive_append("inbound", f"message {self.counter} about alpha",
                                                 session=f"s{n}", at=f"2026-11-29T1{n}:00:00Z"))

    @precondition(lambda self: not self.detached)
    @rule()
    def checkpoint(self) -> None:
        self._desk(self.a.checkpoint)

    @precondition(lambda self: not self.detached)
    @rule()
    def digest(self) -> None:
        self._desk(lambda: self.a.digest(date="2026-11-29", as_of="2026-11-29T23:59:00Z"))

    @precondition(lambda self: not self.detached)
    @rule(name=st.sampled_from(NAMES))
    def sync_with_a_second_clone(self, name: str) -> None:
        def both() -> None:
            self.b.remember(name, f"{name} body from b {self.counter}", type="fact",
                            description=f"{name} from b", triggers=[name], now=NOW)
            self.b.sync(now=NOW)
            self.a.sync(now=NOW)

        try:
            self._desk(both)
        finally:
            self.b.close()

    # -- a person's git ------------------------------------------------------------------------

    @precondition(lambda self: not self.detached)
    @rule(name=st.sampled_from(NAMES))
    def person_commits_an_edit(self, name: str) -> None:
        path = self._memory(name)
        if path.is_file():
            path.write_bytes(path.read_bytes() + f"Edited by hand {self.counter}.\n".encode())
            self.counter += 1
            if self._git("commit", "-q", "-a", "-m", "Edit by hand").returncode:
                self._git("checkout", "-q", "--", ".")  # the hook refused it: put the file back

    @precondition(lambda self: not self.detached)
    @rule()
    def person_rebases_a_commit_away(self) -> None:
        if self._git("rebase", "-q", "--onto", "HEAD~2", "HEAD~1").returncode:
            self._git("rebase", "--abort")

    @precondition(lambda self: not self.detached)
    @rule()
    def person_resets_hard(self) -> None:
        self._git("reset", "-q", "--hard", "HEAD~1")

    @precondition(lambda self: not self.detached)
    @rule()
    def person_checks_out_an_old_commit(self) -> None:
        self.detached = self._git("checkout", "-q", "--detach", "HEAD~1").returncode == 0

    @precondition(lambda self: self.detached)
    @rule()
    def person_checks_out_the_branch_again(self) -> None:
        assert self._git("checkout", "-q", "main").returncode == 0
        self.detached = False

    @rule()
    def person_collects_garbage(self) -> None:
        self._git("reflog", "expire", "--expire=now", "--all")
        self._git("gc", "-q", "--prune=now")

    # -- the property --------------------------------------------------------------------------

    @invariant()
    def every_cache_answers_as_a_cold_rebuild(self) -> None:
        warm = answers(self.a.root)
        assert warm == cold_answers(self.a.root, self.hold)


@pytest.fixture
def clones_template(tmp_path_factory: pytest.TempPathFactory, identity: None) -> Path:
    """A desk, its bare remote and two more clones, copied for each example (Clones)."""
    root = tmp_path_factory.mktemp("clones-template")
    make_clones(root)
    return root


def test_caches_answer_as_a_cold_rebuild_through_desk_and_git(clones_template: Path) -> None:
    DerivedState.template = clones_template
    # No shrinking: each step costs a cold rebuild, and a failing run of at most ten steps prints
    # them all (shrinking one took minutes).
    run_state_machine_as_test(DerivedState, settings=settings(
        max_examples=3, stateful_step_count=10, deadline=None,
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]))
