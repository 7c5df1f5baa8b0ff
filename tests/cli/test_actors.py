"""Issue 32.3: every commit records who asked for it. A person typing `desk now`, `desk mistake add`,
`desk checkpoint` or `desk conversations render` is `user`; the harness paths say `assistant`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from desk.layout import DeskFolder
from tests.conftest import DeskRunner, git

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _actors(root: Path, count: int) -> list[tuple[str, str]]:
    """(subject, Desk-Actor) of the last `count` commits, newest first."""
    out = git(root, "log", f"-{count}", "--format=%s%x00%(trailers:key=Desk-Actor,valueonly)%x01")
    rows = [row.strip("\n").split("\0") for row in out.split("\x01") if row.strip()]
    return [(subject, actor.strip()) for subject, actor in rows]


def test_the_working_commands_typed_by_a_person_record_user(desk: DeskFolder, run: DeskRunner) -> None:
    for args in (["now", "append", "draft the report"], ["now", "set", "--section", "next", "send it"],
                 ["mistake", "add", "--what", "w", "--context", "c", "--cause", "c", "--avoid", "a"],
                 ["archive", "append", "-k", "inbound", "-s", "s1", "hello"], ["checkpoint"],
                 ["conversations", "render"]):
        done = run(*args)
        assert done.exit_code == 0, (args, done.output)
    actors = _actors(desk.root, 5)
    assert [subject.split(":")[0] for subject, _ in actors] == ["conversations", "checkpoint", "mistake", "now", "now"]
    assert {actor for _, actor in actors} == {"user"}, actors


def test_a_harness_says_assistant(desk: DeskFolder, run: DeskRunner, tmp_path: Path) -> None:
    assert run("now", "append", "--actor", "assistant", "draft").exit_code == 0
    assert run("archive", "append", "-k", "inbound", "hello").exit_code == 0
    assert run("checkpoint", "--actor", "assistant").exit_code == 0  # the cron line of examples/claude-code
    assert {actor for _, actor in _actors(desk.root, 2)} == {"assistant"}
    root = tmp_path / "loop"
    subprocess.run([sys.executable, str(EXAMPLES / "harness_loop.py"), str(root)], capture_output=True, check=True)
    made = [(s, a) for s, a in _actors(root, 20) if s.startswith(("now:", "checkpoint:"))]
    assert len(made) == 2 and {a for _, a in made} == {"assistant"}, made
    assert "checkpoint --actor assistant" in (EXAMPLES / "claude-code" / "README.md").read_text()
