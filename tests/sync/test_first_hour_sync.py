"""Issue 32 point 4, between clones: `desk sync` is quiet unless --progress, and the hooks and merge
drivers find desk again after the virtualenv that installed them moved (`desk doctor --repair`
rewrites them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from desk.cli.main import cli
from desk.setup.hooks import install
from tests.sync.conftest import Clones, git


def _sync(root: Path, *options: str) -> str:
    result = CliRunner().invoke(cli, ["--desk", str(root), "sync", *options])
    assert result.exit_code == 0, result.output
    return result.stderr


def _remember(root: Path, name: str, body: str) -> None:
    result = CliRunner().invoke(cli, ["--desk", str(root), "remember", name, "--type", "fact", "-d", name,
                                      "-t", name, body])
    assert result.exit_code == 0, result.output


def test_sync_prints_no_git_progress_unless_asked(clones: Clones) -> None:
    a = clones[0]
    _remember(a.root, "quiet", "Quiet.")
    assert "objects:" not in _sync(a.root)  # the push happened, silently
    _remember(a.root, "loud", "Loud.")
    assert "desk: writing objects:" in _sync(a.root, "--progress")


def test_hooks_and_drivers_outlive_a_moved_virtualenv_and_doctor_repairs_them(clones: Clones, tmp_path: Path) -> None:
    a, b = clones[0], clones[1]
    moved = tmp_path / "old-venv" / "python"
    moved.parent.mkdir()
    moved.symlink_to(sys.executable)
    install(b.root, str(moved))
    moved.unlink()  # the virtualenv moved away: that Python is gone
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}

    _remember(a.root, "shared", "One.\nTwo.\n")
    _sync(a.root)
    _sync(b.root)
    (a.root / "memory" / "shared.md").write_text((a.root / "memory" / "shared.md").read_text()
                                                .replace("One.", "One, from a."))
    git(a.root, "commit", "-qam", "a's edit\n\nDesk-Actor: user")
    _sync(a.root)
    path = b.root / "memory" / "shared.md"
    path.write_text(path.read_text().replace("Two.", "Two, from b."))
    hooked = subprocess.run(["git", "commit", "-qam", "b's edit\n\nDesk-Actor: user"], cwd=b.root, env=env,
                            capture_output=True, text=True)
    assert hooked.returncode == 0, hooked.stderr  # the hooks ran through `desk` on PATH
    pulled = subprocess.run(["git", "pull", "-q", "--no-rebase", "origin", "main"], cwd=b.root, env=env,
                            capture_output=True, text=True)
    # the memory driver ran through `desk hooks merge` (a driver that cannot start is a conflict)
    assert pulled.returncode == 0 and "CONFLICT" not in pulled.stdout + pulled.stderr, pulled.stdout + pulled.stderr
    assert "<<<<<<<" not in path.read_text()

    doctor = CliRunner().invoke(cli, ["--desk", str(b.root), "doctor"])
    assert doctor.exit_code == 3 and "name a Python that is gone" in doctor.output
    assert "merge driver desk-memory" in doctor.output and "pre-commit" in doctor.output
    repaired = CliRunner().invoke(cli, ["--desk", str(b.root), "doctor", "--repair"])
    assert "repaired: hooks:" in repaired.output
    assert str(moved) not in (b.git_dir / "hooks" / "pre-commit").read_text()
    assert str(moved) not in git(b.root, "config", "merge.desk-memory.driver")
    assert "Python that is gone" not in CliRunner().invoke(cli, ["--desk", str(b.root), "doctor"]).output


@pytest.mark.parametrize("python", ["/no/such/venv/bin/python", "/usr/bin/python3 with space"])
def test_the_driver_command_names_its_python_for_doctor(python: str) -> None:
    from desk.formats.hook_files import driver_python
    from desk.setup.hooks import merge_driver_command

    assert driver_python(merge_driver_command("memory", python)) == python
    assert driver_python(f"{python.replace(' ', '')} -P -m desk.cli.merge memory %O %A %B %P") == python.replace(" ", "")
