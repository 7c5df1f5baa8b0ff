"""`desk hooks install | uninstall`: marker, chaining a foreign hook, core.hooksPath, fallbacks."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from desk.layout import DeskFolder
from desk.formats.hook_files import HOOK_TYPES, MARKER
from desk.setup.hooks import install
from desk.setup.init import init_desk
from tests.conftest import DeskRunner
from tests.guard_helpers import add_commit, git_env, memory_text, sh, write

INVALID = "---\nname: bad\n---\nno type\n"


def hook_dir(root: Path) -> Path:
    return root / ".git" / "hooks"


def foreign_hook(root: Path, hook: str, exit_code: int = 0) -> bytes:
    script = (f"#!/bin/sh\necho ran >> \"$(git rev-parse --show-toplevel)/{hook}.ran\"\n"
              f"exit {exit_code}\n").encode()
    path = hook_dir(root) / hook
    path.write_bytes(script)
    path.chmod(0o755)
    return script


def test_init_installs_marked_hooks(desk: DeskFolder) -> None:
    for hook in HOOK_TYPES:
        path = hook_dir(desk.root) / hook
        assert MARKER in path.read_text()
        assert path.stat().st_mode & stat.S_IXUSR
        assert repr(sys.executable) in path.read_text() or sys.executable in path.read_text()


def test_install_is_idempotent(desk: DeskFolder, run: DeskRunner) -> None:
    result = run("hooks", "install", "--json")
    assert result.exit_code == 0
    assert json.loads(result.output)["hooks"] == {hook: "updated" for hook in HOOK_TYPES}
    assert not (hook_dir(desk.root) / "pre-commit.legacy").exists()


def test_foreign_hook_chained_and_restored(desk: DeskFolder, run: DeskRunner) -> None:
    run("hooks", "uninstall")
    assert not (hook_dir(desk.root) / "pre-commit").exists()
    original = foreign_hook(desk.root, "pre-commit")
    result = run("hooks", "install")
    assert result.exit_code == 0 and "kept the existing hook" in result.output
    assert (hook_dir(desk.root) / "pre-commit.legacy").read_bytes() == original
    # both run: the foreign hook first, then desk's rules
    write(desk.root, "memory/bad.md", INVALID)
    proc = add_commit(desk.root, "bad", "memory/bad.md")
    assert proc.returncode != 0 and "memory/bad.md:1: frontmatter-field" in proc.stderr
    assert (desk.root / "pre-commit.ran").read_text() == "ran\n"
    sh(desk.root, "rm", "-q", "--cached", "memory/bad.md")
    (desk.root / "memory/bad.md").unlink()
    # a failing foreign hook still blocks a valid commit
    foreign_hook(desk.root, "pre-commit.legacy", exit_code=1)
    write(desk.root, "journal/a.md", "fine\n")
    assert add_commit(desk.root, "fine", "journal/a.md").returncode != 0
    (hook_dir(desk.root) / "pre-commit.legacy").write_bytes(original)
    result = run("hooks", "uninstall")
    assert "restored the previous hook" in result.output
    assert (hook_dir(desk.root) / "pre-commit").read_bytes() == original
    assert not (hook_dir(desk.root) / "pre-commit.legacy").exists()
    assert not (hook_dir(desk.root) / "commit-msg").exists()


def test_uninstall_leaves_a_foreign_hook_alone(desk: DeskFolder, run: DeskRunner) -> None:
    run("hooks", "uninstall")
    original = foreign_hook(desk.root, "commit-msg")
    result = run("hooks", "uninstall", "--json")
    assert json.loads(result.output)["hooks"]["commit-msg"] == "not desk's; left alone"
    assert (hook_dir(desk.root) / "commit-msg").read_bytes() == original


def test_both_hook_and_legacy_foreign_is_refused(desk: DeskFolder, run: DeskRunner) -> None:
    run("hooks", "uninstall")
    foreign_hook(desk.root, "pre-commit")
    foreign_hook(desk.root, "pre-commit.legacy")
    result = run("hooks", "install")
    assert result.exit_code == 1 and "both exist" in result.output


def test_core_hooks_path_refused_with_the_manual_way(desk: DeskFolder, run: DeskRunner) -> None:
    sh(desk.root, "config", "core.hooksPath", str(desk.root.parent / "shared-hooks"))
    result = run("hooks", "install")
    assert result.exit_code == 1
    assert "core.hooksPath is set" in result.output
    assert "-m desk.cli.hook pre-commit" in result.output and "git config --unset core.hooksPath" in result.output
    assert not (desk.root.parent / "shared-hooks").exists()


def test_init_with_global_hooks_path_still_creates_the_desk(tmp_path: Path, isolated_home: Path) -> None:
    (isolated_home / ".gitconfig").write_text("[core]\n\thooksPath = /somewhere/else\n")
    result = init_desk(tmp_path / "d")
    assert result.status == "created" and result.hooks and "core.hooksPath" in result.hooks
    assert not (tmp_path / "d" / ".git" / "hooks" / "pre-commit").exists()
    from click.testing import CliRunner

    from desk.cli.main import cli

    shown = CliRunner().invoke(cli, ["init", str(tmp_path / "e")], catch_exceptions=False)
    assert shown.exit_code == 0 and "warning: the git hooks were not installed" in shown.output


def test_falls_back_to_desk_on_path(desk: DeskFolder, tmp_path: Path) -> None:
    install(desk.root, python=str(tmp_path / "gone" / "python"))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    launcher = bindir / "desk"
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} -m desk \"$@\"\n")
    launcher.chmod(0o755)
    env = git_env(PATH=f"{bindir}:/usr/bin:/bin")
    write(desk.root, "memory/bad.md", INVALID)
    sh(desk.root, "add", "memory/bad.md", env=env)
    proc = sh(desk.root, "commit", "-q", "-m", "bad", env=env)
    assert proc.returncode != 0 and "memory/bad.md:1: frontmatter-field" in proc.stderr
    sh(desk.root, "reset", "-q")
    write(desk.root, "SOUL.md", "# changed\n")
    sh(desk.root, "add", "SOUL.md", env=env)
    proc = sh(desk.root, "commit", "-q", "-m", "s\n\nDesk-Actor: assistant", env=env)
    assert proc.returncode != 0 and "soul-unauthorized" in proc.stderr


def test_hook_ignores_inherited_git_variables(desk: DeskFolder, tmp_path: Path) -> None:
    """A commit made from elsewhere with GIT_DIR/GIT_WORK_TREE set still validates this desk."""
    write(desk.root, "memory/bad.md", INVALID)
    env = git_env(GIT_DIR=str(desk.root / ".git"), GIT_WORK_TREE=str(desk.root))
    sh(tmp_path, "add", "memory/bad.md", env=env)
    proc = sh(desk.root, "commit", "-q", "-m", "bad", env=env)
    assert proc.returncode != 0 and "memory/bad.md:1:" in proc.stderr


def test_hook_in_a_plain_repository_does_nothing(tmp_path: Path) -> None:
    """Hooks copied into a repository that is not a desk let commits through."""
    root = tmp_path / "plain"
    root.mkdir()
    sh(root, "init", "-q")
    install(root)
    write(root, "memory/bad.md", INVALID)
    assert add_commit(root, "x", "memory/bad.md").returncode == 0


def test_valid_commit_passes_both_hooks(desk: DeskFolder) -> None:
    write(desk.root, "memory/ok.md", memory_text("ok"))
    from tests.guard_helpers import reindex_text

    reindex_text(desk.root)
    proc = add_commit(desk.root, "ok\n\nDesk-Actor: user", "memory/ok.md", "MEMORY.md")
    assert proc.returncode == 0, proc.stderr
    assert os.path.exists(desk.root / "memory/ok.md")


def test_a_merge_with_desks_index_driver_gives_the_exact_index(desk: DeskFolder) -> None:
    """desk's MEMORY.md merge driver merges index lines by name: no conflict, no stale index."""
    from tests.guard_helpers import reindex_text

    def add(name: str) -> None:
        write(desk.root, f"memory/{name}.md", memory_text(name))
        reindex_text(desk.root)
        assert add_commit(desk.root, f"add {name}", f"memory/{name}.md", "MEMORY.md").returncode == 0

    add("a-first")
    add("c-last")
    sh(desk.root, "checkout", "-q", "-b", "other")
    add("b-one")
    sh(desk.root, "checkout", "-q", "main")
    add("b-two")
    proc = sh(desk.root, "merge", "--no-edit", "other")
    assert proc.returncode == 0, proc.stderr
    committed = sh(desk.root, "show", "HEAD:MEMORY.md").stdout
    lines = [line for line in committed.splitlines() if line.startswith("- ")]
    assert lines == sorted(lines) and len(lines) == 4


def test_merge_with_an_unsorted_union_index_is_fixed(desk: DeskFolder) -> None:
    """A merge without conflicts skips pre-commit; pre-merge-commit catches MEMORY.md's union merge
    (the merge of desks whose .gitattributes predates desk's merge drivers)."""
    from tests.guard_helpers import reindex_text

    def add(name: str) -> None:
        write(desk.root, f"memory/{name}.md", memory_text(name))
        reindex_text(desk.root)
        assert add_commit(desk.root, f"add {name}", f"memory/{name}.md", "MEMORY.md").returncode == 0

    write(desk.root, ".gitattributes", "MEMORY.md merge=union\n")
    assert add_commit(desk.root, "desk 0.1 attributes", ".gitattributes").returncode == 0
    add("a-first")
    add("c-last")
    sh(desk.root, "checkout", "-q", "-b", "other")
    add("b-one")
    sh(desk.root, "checkout", "-q", "main")
    add("b-two")  # both sides insert between a-first and c-last: the union puts ours first
    proc = sh(desk.root, "merge", "--no-edit", "other")
    # git merge wrote the tree before the hook ran: the fixer writes the work tree and names the
    # exact command that concludes the merge
    assert proc.returncode != 0 and "index-stale" in proc.stderr
    assert "`git add MEMORY.md && git commit --no-edit`" in proc.stderr
    lines = [line for line in (desk.root / "MEMORY.md").read_text().splitlines() if line.startswith("- ")]
    assert lines == sorted(lines) and len(lines) == 4
    sh(desk.root, "add", "MEMORY.md")
    proc = sh(desk.root, "commit", "--no-edit")
    assert proc.returncode == 0, proc.stderr
    assert len(sh(desk.root, "log", "-1", "--format=%P").stdout.split()) == 2
    assert (desk.root / "MEMORY.md").read_text() == sh(desk.root, "show", "HEAD:MEMORY.md").stdout
    assert sh(desk.root, "status", "--porcelain").stdout == ""


def test_a_chained_foreign_hook_runs_for_desks_own_commits_too(desk: DeskFolder, run: DeskRunner) -> None:
    """desk's own commits skip the hooks only when they are desk's alone (--no-verify saves the
    shells); a person's chained hook still runs for them."""
    from desk.memory.operations import remember

    remember(desk, "a", type="fact", description="a", body="First fact.")
    assert not (desk.root / "pre-commit.ran").exists()  # only desk's hooks: nothing else to run
    run("hooks", "uninstall")
    foreign_hook(desk.root, "pre-commit")
    run("hooks", "install")
    remember(desk, "b", type="fact", description="b", body="Second fact.")
    assert (desk.root / "pre-commit.ran").read_text() == "ran\n"


def test_hooks_help_names_every_hook_it_installs(run: DeskRunner) -> None:
    """Issue 9.10: the help of `desk hooks` and `desk hooks install` names each installed hook."""
    for args in (("hooks", "-h"), ("hooks", "install", "-h")):
        text = run(*args).output
        for hook in HOOK_TYPES:
            assert hook in text, (args, hook)


def test_a_folder_inside_a_desk_names_the_enclosing_desk(desk: DeskFolder) -> None:
    """Issue 9.10: `desk --desk DESK/memory list` names DESK instead of suggesting a nested init."""
    from click.testing import CliRunner

    from desk.cli.main import cli

    result = CliRunner().invoke(cli, ["--desk", str(desk.root / "memory"), "list"])
    assert result.exit_code != 0
    assert f"inside the desk at {desk.root}" in result.output
    assert f"--desk {desk.root}`" in result.output and "desk init" not in result.output


def test_commit_msg_reads_every_trailer_spelling_git_accepts(desk: DeskFolder) -> None:
    """Issue 15.5: the SOUL.md guard through a real `git commit`, with the spellings git accepts."""
    from tests.guard_helpers import commit

    for n, message in enumerate(["soul\n\nDesk-Actor:\n  assistant\n", "soul\n\nDesk-Actor : assistant\n",
                                 "soul\n\ndesk-actor:\tassistant\n", "soul\n\nDESK-ACTOR:assistant\n",
                                 "soul\n\nSigned-off-by: A <a@example.org>\nDesk-Actor:\n\tassistant\n"]):
        write(desk.root, "SOUL.md", f"# soul {n}\n")
        sh(desk.root, "add", "SOUL.md")
        proc = commit(desk.root, message)
        assert proc.returncode != 0 and "soul-unauthorized" in proc.stderr, message
    proc = commit(desk.root, "soul\n\nDesk-Actor : assistant\nDesk-Authorized-By:\n  Ada Lovelace\n")
    assert proc.returncode == 0, proc.stderr


def test_pre_commit_of_a_memory_edit_starts_two_git_reads(desk: DeskFolder, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The staged diff and one `cat-file --batch`; HEAD (before and after) is read from its ref
    file, and no `git config`, whose identity only desk's own commits need (issue 17: each git
    start is a few ms of every commit)."""
    from desk.guard.hooks import run_pre_commit
    from tests.guard_helpers import reindex_text
    from tests.history_helpers import count_git

    write(desk.root, "memory/ok.md", memory_text("ok"))
    reindex_text(desk.root)
    assert add_commit(desk.root, "ok\n\nDesk-Actor: user", "memory/ok.md", "MEMORY.md").returncode == 0
    write(desk.root, "memory/ok.md", memory_text("ok", body="Edited by hand."))
    sh(desk.root, "add", "--", "memory/ok.md")
    calls = count_git(tmp_path / "bin", monkeypatch)
    run = run_pre_commit(desk.root)
    assert run.code == 0, [str(f) for f in run.findings]
    # Both start together (the blob reader before the gate's modules load): their order is the OS's.
    assert sorted(c.split()[0] for c in calls()) == ["cat-file", "diff"], calls()
