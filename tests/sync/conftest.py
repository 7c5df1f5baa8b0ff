"""A bare remote on a file path and three clones of one desk.

Making them costs ~1.5 s (init, two `desk clone`s, a sync), so they are made once per test run
and copied into each test's folder (the clones' remote address rewritten to the copy's remote;
each copy gets fresh clone ids, as desk mints one for a copied git directory).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import desk.api as api
from desk.api import Desk

NAMES = ("a", "b", "c")
_TEMPLATE: list[Path] = []


def git(root: Path, *args: str, check: bool = True) -> str:
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if check and proc.returncode:
        raise AssertionError(f"git {' '.join(args)}: {proc.stderr}")
    return proc.stdout


def make_clones(tmp: Path) -> None:
    """desk init a, a bare remote, `desk sync` from a, `desk clone` b and c."""
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(tmp / "remote.git")], check=True)
    first = api.init(tmp / "a")
    git(first.root, "remote", "add", "origin", str(tmp / "remote.git"))
    first.sync()
    for name in NAMES[1:]:
        api.clone(str(tmp / "remote.git"), tmp / name)


class Clones:
    """Three clones of one desk (`clones[0]` ... `clones[2]`) and their bare remote."""

    def __init__(self, tmp: Path, template: Path | None = None) -> None:
        self.remote = tmp / "remote.git"
        if template is None:
            make_clones(tmp)
        else:
            for name in ("remote.git", *NAMES):
                shutil.copytree(template / name, tmp / name, symlinks=True)
            for name in NAMES:
                git(tmp / name, "remote", "set-url", "origin", str(self.remote))
                (tmp / name / ".git" / "desk-clone-id").unlink(missing_ok=True)
        self.desks = [api.open(tmp / name) for name in NAMES]

    def __getitem__(self, i: int) -> Desk:
        return self.desks[i]


@pytest.fixture
def clone_template(tmp_path_factory: pytest.TempPathFactory, identity: None) -> Path:
    if not _TEMPLATE:
        root = tmp_path_factory.mktemp("clones-template")
        make_clones(root)
        _TEMPLATE.append(root)
    return _TEMPLATE[0]


@pytest.fixture
def clones(tmp_path: Path, clone_template: Path) -> Clones:
    return Clones(tmp_path, clone_template)
