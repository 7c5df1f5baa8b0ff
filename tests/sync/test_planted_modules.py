"""A remote plants Python modules at the desk's root (`desk/`, `click/`, `yaml.py`, `pydantic/`):
git starts desk's hooks and merge drivers in the work tree, and none of them may import what is
there. Each planted module writes a marker file outside the desk when imported; every hook and
driver runs through real git (a hand commit, a merge, a pull, a rebase, `desk sync`) and no marker
appears, while the same modules do run when Python is started the old way (`-m` without `-P`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import desk.api as api
from desk.formats.hook_files import missing_setup, unsafe_drivers
from desk.gate.installed_hooks import installed
from tests.guard_helpers import git_env, memory_text, reindex_text, sh, write
from tests.sync.conftest import Clones, git
from tests.sync.test_sync import no_markers, remember

PLANTED = {"desk/__init__.py": "desk", "click/__init__.py": "click", "yaml.py": "yaml",
           "pydantic/__init__.py": "pydantic", "desk/cli/__init__.py": "desk.cli"}


def plant(clone: api.Desk, markers: Path) -> None:
    """Commit the planted modules as a remote would (no hook ran there) and push them."""
    for rel, name in PLANTED.items():
        write(clone.root, rel, f"import pathlib\npathlib.Path({str(markers)!r}, {name!r}).write_text('ran')\n")
    git(clone.root, "add", *PLANTED)
    git(clone.root, "commit", "-q", "--no-verify", "-m", "add some tooling")
    git(clone.root, "push", "-q", "origin", "main")


def ran(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


def diverge(a: api.Desk, b: api.Desk, tag: str) -> None:
    """a pushes one new memory, b makes another: MEMORY.md changed on both sides (its driver runs)."""
    remember(a, f"from-a-{tag}", f"A's fact {tag}.")
    a.sync()
    remember(b, f"from-b-{tag}", f"B's fact {tag}.")


def both_in_index(b: api.Desk, tag: str) -> None:
    index = (b.root / "MEMORY.md").read_text()
    assert f"[from-a-{tag}]" in index and f"[from-b-{tag}]" in index, index
    no_markers(b)
    assert b.validate("all").exit_code == 0


def test_nothing_planted_at_the_root_runs_in_a_hook_or_a_merge_driver(clones: Clones, tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    a, b = clones[0], clones[1]
    plant(a, markers)
    git(b.root, "pull", "-q", "--ff-only", "origin", "main")  # a fast-forward runs no hook
    assert (b.root / "yaml.py").exists() and (b.root / "desk" / "__init__.py").exists()

    # The control: started the old way, Python imports the planted package from the work tree.
    subprocess.run([sys.executable, "-m", "desk.cli.hook", "pre-commit"], cwd=b.root, env=git_env(),
                   capture_output=True)
    assert "desk" in ran(markers)
    for marker in markers.iterdir():
        marker.unlink()

    # A hand commit: pre-commit and commit-msg (its message names desk, so Python starts).
    write(b.root, "memory/broken.md", "---\nname: broken\n---\n")
    sh(b.root, "add", "memory/broken.md")
    refused = sh(b.root, "commit", "-q", "-m", "desk: a broken memory")
    assert refused.returncode != 0 and "memory/broken.md" in refused.stderr  # the real hook ran
    write(b.root, "memory/by-hand.md", memory_text("by-hand"))
    (b.root / "memory" / "broken.md").unlink()
    reindex_text(b.root)
    sh(b.root, "add", "-A", "memory", "MEMORY.md")
    done = sh(b.root, "commit", "-q", "-m", "desk: a memory by hand")
    assert done.returncode == 0, done.stderr

    # A person's merge (`git pull`): the MEMORY.md driver, pre-merge-commit and post-merge.
    diverge(a, b, "merge")
    pulled = sh(b.root, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
    assert pulled.returncode == 0, pulled.stderr
    both_in_index(b, "merge")

    # A rebase (`git pull --rebase`): the driver on each replayed commit, post-rewrite.
    diverge(a, b, "rebase")
    rebased = sh(b.root, "pull", "-q", "--rebase", "origin", "main")
    assert rebased.returncode == 0, rebased.stderr
    both_in_index(b, "rebase")

    # desk sync's own merge.
    diverge(a, b, "sync")
    assert b.sync().value.status == "merged"
    both_in_index(b, "sync")

    assert ran(markers) == []


def test_an_older_desks_merge_drivers_are_made_safe_before_sync_merges(clones: Clones, tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    a, b = clones[0], clones[1]
    plant(a, markers)
    git(b.root, "pull", "-q", "--ff-only", "origin", "main")
    for driver in ("index", "memory"):  # as `desk hooks install` wrote them before the safe path
        git(b.root, "config", f"merge.desk-{driver}.driver",
            f"{sys.executable} -m desk.cli.merge {driver} %O %A %B %P")
    config = (b.root / ".git" / "config").read_text()
    assert sorted(unsafe_drivers(config)) == ["desk-index", "desk-memory"]
    assert any("desk-index" in line for line in missing_setup(b.root, b.root / ".git"))

    diverge(a, b, "sync")
    result = b.sync()
    assert result.value.status == "merged"
    assert any("merge drivers were rewritten" in w for w in result.warnings())
    both_in_index(b, "sync")
    assert unsafe_drivers((b.root / ".git" / "config").read_text()) == []
    assert ran(markers) == []


def test_a_hook_without_the_safe_path_is_outdated_and_doctor_repairs_it(clones: Clones) -> None:
    b = clones[1]
    hook = b.root / ".git" / "hooks" / "pre-commit"
    text = hook.read_text()
    assert "-P -m desk.cli.hook" in text
    hook.write_text(text.replace("-P -m desk.cli.hook", "-m desk.cli.hook"))
    git(b.root, "config", "merge.desk-now.driver", f"{sys.executable} -m desk.cli.merge now %O %A %B %P")
    assert installed(b.root)["pre-commit"] == "outdated"

    report = b.doctor().to_json()
    hooks = [p for p in report["problems"] if p["check"] == "hooks"]
    assert hooks and "pre-commit" in hooks[0]["path"] and "merge driver desk-now" in hooks[0]["path"]

    b.doctor(repair=True)
    assert installed(b.root)["pre-commit"] == "ok"
    assert unsafe_drivers((b.root / ".git" / "config").read_text()) == []
