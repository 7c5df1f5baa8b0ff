"""desk.storage.git.config: the config values desk needs, asked of `git config` itself, once per Git.

git's own command reads the files, includes and precedence, so desk agrees with git on hostile
values too; each case compares with `git config --get`, asked of git directly."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from desk.storage.git import Git
from desk.storage.git.config import parse_config
from tests.conftest import git
from tests.history_helpers import count_git


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    return root


def _git_says(root: Path, key: str) -> str:
    return git(root, "config", "--get", key).removesuffix("\n")


@pytest.mark.parametrize("value", [
    "Ada\nLovelace",  # a newline (git writes it as \n, reads it back as one)
    "a=b=c",  # `=` in the value
    "  spaced  out  ",  # leading and trailing spaces kept (git quotes them)
    "Zoë \u200b\u202e zero-width and bidi",
    "ends with a backslash \\",
    "tab\there; semicolon # and hash",
    "x" * 20_000,  # a huge value
])
def test_a_hostile_value_is_read_as_git_reads_it(tmp_path: Path, value: str) -> None:
    root = _repo(tmp_path)
    git(root, "config", "user.name", value)
    assert _git_says(root, "user.name") == value
    assert Git(root).config.values()["user.name"] == value
    assert Git(root).config.identity_args() == ["-c", "user.email=desk@localhost"]  # the name is set


def test_a_newline_in_a_value_cannot_forge_another_key(tmp_path: Path) -> None:
    """A value holding `\\ncommit.gpgsign true` (what a line-based reader would take for a second
    key) stays one value."""
    root = _repo(tmp_path)
    git(root, "config", "user.email", "a@example.org\ncommit.gpgsign true")
    values = Git(root).config.values()
    assert values["user.email"] == "a@example.org\ncommit.gpgsign true"
    assert "commit.gpgsign" not in values and not Git(root).config.signs_commits()


def test_a_key_without_a_value_is_true_as_git_reads_it(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    with (root / ".git" / "config").open("a") as config:
        config.write("[commit]\n\tgpgsign\n")
    assert git(root, "config", "--type=bool", "--get", "commit.gpgsign").strip() == "true"
    assert Git(root).config.values()["commit.gpgsign"] == ""
    assert Git(root).config.signs_commits()


def test_included_files_are_read(tmp_path: Path, isolated_home: Path) -> None:
    """`include.path` (in the repository's config) and `includeIf` (in the global one): git follows
    them, so desk sees what they set."""
    root = _repo(tmp_path)
    (tmp_path / "identity.inc").write_text("[user]\n\tname = From An Include\n")
    git(root, "config", "include.path", str(tmp_path / "identity.inc"))
    (tmp_path / "email.inc").write_text("[user]\n\temail = included@example.org\n")
    (isolated_home / ".gitconfig").write_text(f'[includeIf "gitdir:{root}/"]\n\tpath = {tmp_path / "email.inc"}\n')
    values = Git(root).config.values()
    assert values["user.name"] == _git_says(root, "user.name") == "From An Include"
    assert values["user.email"] == _git_says(root, "user.email") == "included@example.org"
    assert Git(root).config.identity_args() == []


def test_the_repository_overrides_the_global_config(tmp_path: Path, isolated_home: Path) -> None:
    root = _repo(tmp_path)
    (isolated_home / ".gitconfig").write_text("[user]\n\tname = Global Name\n\temail = global@example.org\n")
    assert Git(root).config.values()["user.name"] == "Global Name"
    git(root, "config", "user.name", "Repository Name")
    values = Git(root).config.values()
    assert values["user.name"] == _git_says(root, "user.name") == "Repository Name"
    assert values["user.email"] == "global@example.org"  # only what the repository sets is overridden


def test_no_identity_anywhere_gives_desks_fallback(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    assert Git(root).config.identity_args() == ["-c", "user.name=desk", "-c", "user.email=desk@localhost"]
    assert Git(root).config.fallback_identity() == "desk <desk@localhost>"


def test_config_is_read_once_per_git_and_shared_with_with_env(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """One `git config` process per Git (and the Gits `with_env` makes from it); a new Git reads
    again, so a change made meanwhile is seen by the next desk command."""
    root = _repo(tmp_path)
    git(root, "config", "user.name", "First")
    calls = count_git(tmp_path / "bin", monkeypatch)
    repo = Git(root)
    assert repo.config.values()["user.name"] == "First"
    assert repo.with_env(GIT_INDEX_FILE=str(tmp_path / "other-index")).config.values()["user.name"] == "First"
    assert repo.config.durable_args() == ["-c", "core.fsync=committed"] and not repo.config.signs_commits()
    assert len([c for c in calls() if c.startswith("config")]) == 1
    subprocess.run(["git", "config", "user.name", "Second"], cwd=root, check=True)
    assert repo.config.values()["user.name"] == "First"  # this Git's answer
    assert Git(root).config.values()["user.name"] == "Second"


def test_set_is_seen_by_the_same_git(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    repo = Git(root)
    assert "core.hookspath" not in repo.config.values()
    repo.config.set("core.hooksPath", "hooks dir/with = sign")
    assert repo.config.values()["core.hookspath"] == "hooks dir/with = sign" == repo.config.get("core.hooksPath")


def test_parse_config_reads_every_record_kind() -> None:
    assert parse_config(b"user.name\nA\nB\0commit.gpgsign\0user.name\nlast\0") == {
        "user.name": "last", "commit.gpgsign": ""}
    assert parse_config(b"") == {}
