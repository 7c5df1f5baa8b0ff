"""The example harness loop keeps working (it is documentation people will copy)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import git

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "harness_loop.py"


def test_harness_loop_runs_and_leaves_an_audit_trail(tmp_path: Path) -> None:
    root = tmp_path / "desk"
    out = subprocess.run([sys.executable, str(EXAMPLE), str(root)], capture_output=True, text=True, check=True)
    assert "remember report-style: created" in out.stdout
    assert "gate refused a session-only note" in out.stdout
    assert "the current conversation wins" in out.stdout
    assert "remember report-style again: updated" in out.stdout
    subjects = git(root, "log", "--format=%s").splitlines()
    assert subjects.count("remember: report-style") == 2 and subjects[0].startswith("checkpoint:")
    assert len(list((root / "memory").glob("*.md"))) == 1
    assert git(root, "status", "--porcelain") == ""
