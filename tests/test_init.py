"""desk init: the file set, the first commit, refusals, identities, and a real wheel install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from desk.layout import DeskFolder
from desk.errors import DeskError
from desk.setup.init import init_desk
from tests.conftest import git, snapshot

EXPECTED = {"AGENTS.md", "SOUL.md", "USER.md", "NOW.md", "MEMORY.md", "MISTAKES.md", ".gitattributes",
            ".gitignore", ".system/desk.json", "memory/.gitkeep", "journal/.gitkeep",
            "conversations/.gitkeep", ".system/archive/.gitkeep"}


def test_init_lays_down_the_file_set_in_one_commit(tmp_path: Path) -> None:
    result = init_desk(tmp_path / "my-desk")
    root = tmp_path / "my-desk"
    assert result.status == "created"
    tracked = set(git(root, "ls-files").split())
    assert EXPECTED <= tracked
    assert git(root, "rev-list", "--count", "HEAD").strip() == "1"
    assert "Desk-Op: init" in git(root, "log", "-1", "--format=%B")
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    config = json.loads((root / ".system/desk.json").read_text())
    assert config["schema_version"] == 3 and config["desk_id"].startswith("desk-")
    assert config["distill"]["min_age_days"] == 30
    assert ".system/cache/" in (root / ".gitignore").read_text()
    agents = (root / "AGENTS.md").read_text()
    for needle in ("SOUL.md", "NOW.md", "MISTAKES.md", "MEMORY.md", "GENERATED", "never changes it silently",
                   "nightly digest never rewrites it", "current conversation wins"):
        assert needle in agents


def test_each_desk_gets_its_own_id(tmp_path: Path) -> None:
    init_desk(tmp_path / "a")
    init_desk(tmp_path / "b")
    ids = {json.loads((tmp_path / d / ".system/desk.json").read_text())["desk_id"] for d in "ab"}
    assert len(ids) == 2


def test_init_again_changes_nothing(tmp_path: Path) -> None:
    init_desk(tmp_path / "d")
    before = snapshot(tmp_path / "d")
    assert init_desk(tmp_path / "d").status == "exists"
    assert snapshot(tmp_path / "d") == before


def test_nonempty_folder_refused_unless_allowed(tmp_path: Path) -> None:
    folder = tmp_path / "stuff"
    folder.mkdir()
    (folder / "AGENTS.md").write_text("mine\n")
    with pytest.raises(DeskError, match="not empty"):
        init_desk(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["AGENTS.md"]
    result = init_desk(folder, allow_nonempty=True)
    assert result.kept == ["AGENTS.md"] and (folder / "AGENTS.md").read_text() == "mine\n"
    assert "AGENTS.md" not in git(folder, "ls-files").split()


def test_init_makes_a_sha1_repository_whatever_git_defaults_to(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """desk compares blob ids it computes in SHA-1 with git's: a SHA-256 default would make a desk
    whose first `remember` fails."""
    monkeypatch.setenv("GIT_DEFAULT_HASH", "sha256")
    from desk import api

    init_desk(tmp_path / "d")
    assert git(tmp_path / "d", "rev-parse", "--show-object-format").strip() == "sha1"
    change = api.open(tmp_path / "d").remember("pick", "Use pytest.", type="convention",
                                                 description="The test runner", triggers=["pytest"])
    assert change.value.status == "created" and change.value.commit
    assert git(tmp_path / "d", "status", "--porcelain") == ""


def test_an_existing_sha256_repository_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    subprocess.run(["git", "init", "-q", "--object-format=sha256", str(folder)], check=True)
    before = snapshot(folder)
    with pytest.raises(DeskError, match="sha256 object ids") as caught:
        init_desk(folder)
    assert "--object-format=sha1" in (caught.value.hint or "")
    assert snapshot(folder) == before


def test_folder_inside_another_repository_refused_unless_allowed(tmp_path: Path) -> None:
    outer = tmp_path / "project"
    outer.mkdir()
    git(outer, "init", "-q")
    with pytest.raises(DeskError, match="inside the git work tree"):
        init_desk(outer / "desk")
    assert not (outer / "desk").exists()
    init_desk(outer / "desk", allow_nested=True)
    assert Path(git(outer / "desk", "rev-parse", "--show-toplevel").strip()) == (outer / "desk").resolve()


def test_fallback_identity_and_configured_identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    init_desk(tmp_path / "anon")
    assert git(tmp_path / "anon", "log", "-1", "--format=%an <%ae>").strip() == "desk <desk@localhost>"
    git(tmp_path, "config", "--global", "user.name", "Grace Hopper")
    git(tmp_path, "config", "--global", "user.email", "grace@example.org")
    init_desk(tmp_path / "named")
    assert git(tmp_path / "named", "log", "-1", "--format=%an <%ae>").strip() == "Grace Hopper <grace@example.org>"


def test_the_fallback_note_names_the_half_of_the_identity_that_is_configured(tmp_path: Path) -> None:
    git(tmp_path, "config", "--global", "user.name", "Grace Hopper")
    result = init_desk(tmp_path / "half")
    assert result.fallback_identity == "Grace Hopper <desk@localhost>"
    assert git(tmp_path / "half", "log", "-1", "--format=%an <%ae>").strip() == "Grace Hopper <desk@localhost>"


def test_cli_init_json(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from desk.cli.main import cli

    result = CliRunner().invoke(cli, ["init", str(tmp_path / "d"), "--json"], catch_exceptions=False)
    assert result.exit_code == 0 and json.loads(result.output)["status"] == "created"
    again = CliRunner().invoke(cli, ["init", str(tmp_path / "d")], catch_exceptions=False)
    assert again.exit_code == 0 and "already a desk" in again.output
    DeskFolder(tmp_path / "d").config  # loads and validates


@pytest.mark.slow
def test_non_editable_install_ships_templates(tmp_path: Path) -> None:
    """`pip install .` (not editable) then `desk init` from another folder works."""
    project = Path(__file__).resolve().parents[1]
    env_dir = tmp_path / "venv"
    venv.create(env_dir, system_site_packages=True, with_pip=True)
    py = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(project)],
                   check=True, env=env, capture_output=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = subprocess.run([str(env_dir / "bin" / "desk"), "init", "fresh", "--json"], cwd=elsewhere, env=env,
                         check=True, capture_output=True, text=True).stdout
    assert json.loads(out)["status"] == "created"
    assert (elsewhere / "fresh" / "AGENTS.md").read_text().startswith("# AGENTS.md")
    located = subprocess.run([str(py), "-c", "import desk; print(desk.__file__)"], cwd=elsewhere, env=env,
                             check=True, capture_output=True, text=True).stdout
    assert str(env_dir) in located  # the installed copy, not this checkout
    assert sys.executable != str(py)
    # its hooks start that Python without `site` on the path it was installed on (issue 17.4),
    # and still refuse a broken memory and let a good one through
    fresh = elsewhere / "fresh"
    hook = (fresh / ".git" / "hooks" / "pre-commit").read_text()
    assert "DESK_START='import sys" in hook and str(env_dir) in hook
    git_env = {**env, "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.org",
               "GIT_COMMITTER_NAME": "A", "GIT_COMMITTER_EMAIL": "a@example.org"}
    (fresh / "memory" / "bad.md").write_text("---\nname: bad\n---\nno type\n")
    subprocess.run(["git", "add", "memory/bad.md"], cwd=fresh, env=git_env, check=True)
    proc = subprocess.run(["git", "commit", "-q", "-m", "bad"], cwd=fresh, env=git_env, capture_output=True,
                          text=True)
    assert proc.returncode != 0 and "memory/bad.md:1: frontmatter-field" in proc.stderr
    subprocess.run(["git", "rm", "-q", "--cached", "memory/bad.md"], cwd=fresh, env=git_env, check=True)
    (fresh / "NOW.md").write_text("# Now\n\nWriting the report.\n")
    subprocess.run(["git", "add", "NOW.md"], cwd=fresh, env=git_env, check=True)
    proc = subprocess.run(["git", "commit", "-q", "-m", "now"], cwd=fresh, env=git_env, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
