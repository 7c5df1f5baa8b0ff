"""Shared fixtures: real git repositories in temporary folders, never the real home directory."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from desk.cli.main import cli
from desk.layout import DeskFolder
from desk.setup.init import init_desk


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME, git's global config and the identity come from the test, not the machine."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
                "DESK_HOME", "GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "VISUAL", "EDITOR"):
        monkeypatch.delenv(key, raising=False)
    return home


@pytest.fixture
def identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """A configured git identity, set through the environment."""
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Ada Lovelace")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "ada@example.org")


@pytest.fixture
def desk(tmp_path: Path) -> DeskFolder:
    """A freshly initialised desk in a temporary folder."""
    root = tmp_path / "desk"
    init_desk(root)
    return DeskFolder(root)


class DeskRunner:
    """Runs the CLI in-process against one desk with CliRunner."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | None = None) -> Result:
        return self.runner.invoke(cli, ["--desk", str(self.root), *args], input=input,
                                  catch_exceptions=False)


@pytest.fixture
def run(desk: DeskFolder) -> DeskRunner:
    return DeskRunner(desk.root)


def git(root: Path, *args: str) -> str:
    """Run git in `root` for a test's own checks."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k.startswith("GIT_CONFIG")}
    return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True,
                          text=True).stdout


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file in the work tree and the git dir's refs/HEAD: to prove nothing changed."""
    files: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith(".system/cache/") and not rel.startswith(".git/objects/"):
            if rel.startswith(".git/") and rel not in (".git/HEAD", ".git/index") and not rel.startswith(".git/refs/"):
                continue
            files[rel] = path.read_bytes()
    return files


@pytest.fixture
def cwd(tmp_path: Path) -> Iterator[Path]:
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old)


def allow_secrets(desk: DeskFolder, *texts: str) -> None:
    """Name every secret in `texts` in the work tree's secrets.allow (desk.json), as a person
    would to keep a known non-secret (or a deliberate one) as it is."""
    import json

    from desk.text.secrets import scan

    path = desk.root / ".system/desk.json"
    config = json.loads(path.read_text())
    allow = config.setdefault("secrets", {}).setdefault("allow", [])
    allow += [s.fingerprint for t in texts for s in scan(t) if s.fingerprint not in allow]
    path.write_text(json.dumps(config, indent=2) + "\n")
