"""A bare remote on a file path and three clones of one desk."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import desk.api as api
from desk.api import Desk

NOW_FIXED = "2026-11-30T12:00:00Z"


def git(root: Path, *args: str, check: bool = True) -> str:
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if check and proc.returncode:
        raise AssertionError(f"git {' '.join(args)}: {proc.stderr}")
    return proc.stdout


class Clones:
    def __init__(self, tmp: Path) -> None:
        self.remote = tmp / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(self.remote)], check=True)
        first = api.init(tmp / "a")
        git(first.root, "remote", "add", "origin", str(self.remote))
        first.sync()
        self.desks = [first] + [api.clone(str(self.remote), tmp / name) for name in ("b", "c")]

    def __getitem__(self, i: int) -> Desk:
        return self.desks[i]


@pytest.fixture
def clones(tmp_path: Path, identity: None) -> Clones:
    return Clones(tmp_path)
