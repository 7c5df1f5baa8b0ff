"""commit.gpgSign: desk signs its own commits as git would sign the person's (`git commit-tree`
ignores the setting, so desk passes `-S`); a signer that fails refuses the change with nothing
written. Signed with a throwaway SSH key (gpg.format=ssh), as a person configures it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from desk import api
from desk.errors import GitError
from desk.layout import DeskFolder
from tests.conftest import git, snapshot


def _ssh_signing(root: Path, key: Path) -> None:
    git(root, "config", "gpg.format", "ssh")
    git(root, "config", "user.signingKey", str(key))
    git(root, "config", "commit.gpgSign", "true")


@pytest.fixture
def ssh_key(tmp_path: Path) -> Path:
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "desk-test", "-f", str(key)],
                   check=True)
    return key


def test_desk_signs_its_commits_when_commit_gpgsign_is_set(desk: DeskFolder, ssh_key: Path) -> None:
    _ssh_signing(desk.root, ssh_key)
    change = api.open(desk.root).remember("signed", "Sign everything.", type="convention",
                                          description="Commits are signed", triggers=["sign"])
    assert change.value.commit
    raw = git(desk.root, "cat-file", "commit", "HEAD")
    assert "gpgsig -----BEGIN SSH SIGNATURE-----" in raw
    allowed = desk.root.parent / "allowed"
    allowed.write_text(f"* {(ssh_key.parent / 'key.pub').read_text()}")
    git(desk.root, "config", "gpg.ssh.allowedSignersFile", str(allowed))
    git(desk.root, "verify-commit", "HEAD")  # raises unless the signature is good
    assert git(desk.root, "status", "--porcelain") == ""


@pytest.mark.parametrize("value, signs", [("true", True), ("yes", True), ("1", True), ("false", False),
                                          ("0", False), ("off", False)])
def test_the_setting_is_read_as_git_reads_a_boolean(desk: DeskFolder, value: str, signs: bool) -> None:
    git(desk.root, "config", "commit.gpgSign", value)
    from desk.storage.git import Git

    assert Git(desk.root).config.signs_commits() is signs


def test_without_the_setting_commits_are_unsigned(desk: DeskFolder) -> None:
    api.open(desk.root).remember("plain", "Plain commits.", type="fact", description="Unsigned",
                                 triggers=["plain"])
    assert "gpgsig" not in git(desk.root, "cat-file", "commit", "HEAD")


def test_a_signer_that_fails_refuses_the_change_and_changes_nothing(desk: DeskFolder, tmp_path: Path) -> None:
    _ssh_signing(desk.root, tmp_path / "no-such-key")
    before = snapshot(desk.root)
    with pytest.raises(GitError, match="could not sign desk's commit") as caught:
        api.open(desk.root).remember("signed", "Sign everything.", type="convention",
                                     description="Commits are signed", triggers=["sign"])
    assert "commit.gpgSign false" in (caught.value.hint or "")
    assert snapshot(desk.root) == before
