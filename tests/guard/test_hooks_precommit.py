"""The pre-commit framework: `.pre-commit-hooks.yaml` is a valid manifest, and its hooks run through
real commits under the real `pre-commit` package.

pre-commit installs a remote hook repository from its git URL and builds a virtualenv for
`language: python`, which needs a network. The test instead declares the manifest's hooks as a
`repo: local` hook with `language: system`, taking id, entry, stages and the filename options from
the manifest itself, so what is tested is what users get, minus the install step.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from desk.layout import DeskFolder
from tests.guard_helpers import add_commit, commit, git_env, memory_text, sh, write

pre_commit = pytest.importorskip("pre_commit")
from pre_commit.clientlib import load_manifest  # noqa: E402

MANIFEST = Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml"
KEYS = ("id", "name", "entry", "pass_filenames", "always_run", "stages")


def local_config(manifest: list[dict]) -> dict:  # type: ignore[type-arg]
    hooks = []
    for hook in manifest:
        local = {key: hook[key] for key in KEYS if key in hook}
        # `desk ...` through the Python running the tests (the console script may not be on PATH)
        local["entry"] = f"{sys.executable} -m desk " + hook["entry"].removeprefix("desk ")
        local["language"] = "system"
        hooks.append(local)
    return {"repos": [{"repo": "local", "hooks": hooks}]}


def test_manifest_is_valid_for_pre_commit() -> None:
    hooks = load_manifest(str(MANIFEST))
    assert {h["id"] for h in hooks} == {"desk-validate", "desk-validate-message"}


@pytest.mark.slow
def test_pre_commit_framework_runs_desk_validate(desk: DeskFolder, tmp_path: Path) -> None:
    sh(desk.root, "config", "user.name", "Ada")  # pre-commit runs its own git calls
    sh(desk.root, "config", "user.email", "ada@example.org")
    env = git_env(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"))
    import subprocess

    def pre(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=desk.root, env=env,
                              capture_output=True, text=True)

    subprocess.run([sys.executable, "-m", "desk", "--desk", str(desk.root), "hooks", "uninstall"],
                   check=True, capture_output=True)
    config = local_config(load_manifest(str(MANIFEST)))
    write(desk.root, ".pre-commit-config.yaml", yaml.safe_dump(config, sort_keys=False))
    assert add_commit(desk.root, "use pre-commit", ".pre-commit-config.yaml").returncode == 0
    for hook_type in ("pre-commit", "commit-msg"):
        proc = pre("install", "--hook-type", hook_type)
        assert proc.returncode == 0, proc.stdout + proc.stderr

    write(desk.root, "memory/bad.md", "---\nname: bad\ntype: fact\n---\nbody\n")
    sh(desk.root, "add", "memory/bad.md", env=env)
    proc = commit(desk.root, "bad", env=env)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "desk validate" in out and "memory/bad.md:1: frontmatter-field" in out
    sh(desk.root, "rm", "-q", "--cached", "memory/bad.md")
    (desk.root / "memory/bad.md").unlink()

    # the fixer: MEMORY.md regenerated in the work tree, the commit fails, add it and commit again
    write(desk.root, "memory/good.md", memory_text("good"))
    sh(desk.root, "add", "memory/good.md")
    proc = commit(desk.root, "good", env=env)
    assert proc.returncode != 0 and "index-stale" in proc.stdout + proc.stderr
    assert "- [good](memory/good.md)" in (desk.root / "MEMORY.md").read_text()
    sh(desk.root, "add", "MEMORY.md")
    proc = commit(desk.root, "good", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    # the commit-msg stage
    write(desk.root, "SOUL.md", "# a new soul\n")
    sh(desk.root, "add", "SOUL.md")
    proc = commit(desk.root, "soul\n\nDesk-Actor: assistant", env=env)
    assert proc.returncode != 0 and "soul-unauthorized" in proc.stdout + proc.stderr
    proc = commit(desk.root, "soul\n\nDesk-Actor: assistant\nDesk-Authorized-By: Ada", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
