"""desk.storage.config_cache: git's config values kept between processes under the stat of every
file git reads them from; any change to one of them (or to the environment choosing them) is
noticed, and what cannot be keyed safely is never kept."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from desk.layout import DeskFolder
from desk.storage.config_cache import CACHE_FILE, config_files
from desk.storage.git import Git
from tests.history_helpers import count_git

HOUR_AGO = time.time() - 3600


def _age(paths: list[str]) -> None:
    """Files written more than two seconds ago (else they are "racy" and nothing is kept)."""
    for path in paths:
        if os.path.exists(path):
            os.utime(path, (HOUR_AGO, HOUR_AGO))


def _config(root: Path, *args: str) -> None:
    subprocess.run(["git", "config", *args], cwd=root, check=True)


def _values(desk: DeskFolder) -> dict[str, str]:
    return Git(desk.root).config_values()


def _files(desk: DeskFolder) -> list[str]:
    return config_files(desk.git_dir, os.environ, None)


def test_a_second_process_reads_the_kept_values_without_git(desk: DeskFolder, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    _config(desk.root, "user.name", "Kept Name")
    _age(_files(desk))
    calls = count_git(tmp_path / "bin", monkeypatch)
    assert _values(desk)["user.name"] == "Kept Name"
    assert any(c.startswith("config --get-regexp") for c in calls())
    assert (desk.git_dir / CACHE_FILE).exists()
    before = len(calls())
    assert _values(desk)["user.name"] == "Kept Name"
    assert len(calls()) == before  # no git process: the kept answer


@pytest.mark.parametrize("where", ["repository", "global"])
def test_a_change_to_any_config_file_is_noticed(desk: DeskFolder, isolated_home: Path, where: str) -> None:
    _config(desk.root, "user.name", "First")
    _age(_files(desk))
    assert _values(desk)["user.name"] == "First"
    if where == "repository":
        _config(desk.root, "user.name", "Second")
    else:  # a global name does not override the repository's: a global hooksPath shows instead
        Path(os.environ["GIT_CONFIG_GLOBAL"]).write_text("[core]\n\thooksPath = /elsewhere\n")
    values = _values(desk)
    assert (values["user.name"], values.get("core.hookspath")) == (
        ("Second", None) if where == "repository" else ("First", "/elsewhere"))


def test_same_size_rewrite_in_the_same_second_is_not_kept(desk: DeskFolder) -> None:
    _config(desk.root, "user.name", "Aaaa")
    # Not aged: written just now, so a rewrite within the same clock tick could keep its stat.
    assert _values(desk)["user.name"] == "Aaaa"
    assert not (desk.git_dir / CACHE_FILE).exists()


def test_includes_and_injected_config_are_never_kept(desk: DeskFolder, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    extra = tmp_path / "extra.gitconfig"
    extra.write_text("[user]\n\tname = Included\n")
    _config(desk.root, "include.path", str(extra))
    _age([*_files(desk), str(extra)])
    assert _values(desk)["user.name"] == "Included"
    assert not (desk.git_dir / CACHE_FILE).exists()  # extra.gitconfig is not in the key
    subprocess.run(["git", "config", "--unset", "include.path"], cwd=desk.root, check=True)
    _age(_files(desk))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "user.name")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "Injected")
    assert _values(desk)["user.name"] == "Injected"
    assert not (desk.git_dir / CACHE_FILE).exists()


def test_a_garbled_cache_costs_only_the_git_process(desk: DeskFolder) -> None:
    _config(desk.root, "user.name", "Name")
    _age(_files(desk))
    (desk.git_dir / CACHE_FILE).write_text("{not json")
    assert _values(desk)["user.name"] == "Name"
    (desk.git_dir / CACHE_FILE).write_text('{"key": 1, "system": null, "values": {"user.name": "Forged"}}')
    assert _values(desk)["user.name"] == "Name"


def test_the_system_file_git_reads_is_in_the_key(desk: DeskFolder, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    system = tmp_path / "system.gitconfig"
    system.write_text("[core]\n\thooksPath = /first\n")
    monkeypatch.delenv("GIT_CONFIG_NOSYSTEM")
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(system))
    _age([*_files(desk), str(system)])
    assert _values(desk)["core.hookspath"] == "/first"
    assert (desk.git_dir / CACHE_FILE).exists()  # kept, with the system file named by git itself
    system.write_text("[core]\n\thooksPath = /second\n")
    assert _values(desk)["core.hookspath"] == "/second"
