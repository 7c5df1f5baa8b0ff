"""No reader follows a symlink inside a desk; the gate refuses a symlink anywhere in the tracked
tree (issue 15.2). The links are real, committed with `--no-verify` as a hostile clone would."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from desk.errors import DeskError
from desk.gate.whole import validate_all
from desk.layout import DeskFolder
from desk.memory.operations import remember
from desk.storage.reading import SymlinkError, read_regular
from tests.conftest import DeskRunner
from tests.guard_helpers import add_commit, sh, write


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "outside.txt"
    path.write_text("SECRET\n")
    return path


def link(root: Path, rel: str, target: Path) -> None:
    full = root / rel
    full.unlink(missing_ok=True)
    full.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, full)


def test_soul_linked_outside_is_never_printed_by_context(desk: DeskFolder, run: DeskRunner,
                                                          secret: Path) -> None:
    link(desk.root, "SOUL.md", secret)
    sh(desk.root, "add", "SOUL.md")
    assert sh(desk.root, "commit", "-q", "--no-verify", "-m", "link").returncode == 0
    result = run("context")
    assert result.exit_code == 0
    assert "SECRET" not in result.output
    assert "SOUL.md was not read: it is a symbolic link" in result.output
    result = run("context", "--format", "json")
    assert "SECRET" not in result.output
    # the gate names it, with path and hint, in validate --all and in the hook
    findings = [(f.path, f.rule) for f in validate_all(desk).findings]
    assert ("SOUL.md", "symlink") in findings
    write(desk.root, "NOW.md", "# NOW\n\nchanged\n")
    proc = add_commit(desk.root, "touch", "NOW.md", "SOUL.md")
    assert proc.returncode == 0  # SOUL.md is committed already; NOW.md is fine
    link(desk.root, "USER.md", secret)
    proc = add_commit(desk.root, "user link", "USER.md")
    assert proc.returncode != 0 and "USER.md:1: symlink" in proc.stderr


def test_a_symlink_anywhere_in_the_tracked_tree_is_refused(desk: DeskFolder, secret: Path) -> None:
    link(desk.root, "notes/elsewhere.md", secret)  # not one of desk's folders
    proc = add_commit(desk.root, "a link", "notes/elsewhere.md")
    assert proc.returncode != 0 and "notes/elsewhere.md:1: symlink" in proc.stderr
    assert "replace the link with the file itself" in proc.stderr
    sh(desk.root, "commit", "-q", "--no-verify", "-m", "a link")
    assert ("notes/elsewhere.md", "symlink") in [(f.path, f.rule) for f in validate_all(desk).findings]


def test_readers_refuse_links_and_linked_folders(desk: DeskFolder, run: DeskRunner, secret: Path,
                                                 tmp_path: Path) -> None:
    remember(desk, "foo", type="fact", description="d", triggers=["foo"], body="Foo body.")
    outside = tmp_path / "memdir"
    outside.mkdir()
    (outside / "foo.md").write_text((desk.root / "memory/foo.md").read_text().replace("Foo body", "SECRET"))
    link(desk.root, "memory/foo.md", outside / "foo.md")
    result = run("show", "foo")
    assert result.exit_code != 0 and "SECRET" not in result.output
    assert "symbolic link" in result.output and "hint:" in result.output
    assert "SECRET" not in run("context", "--query", "foo").output
    assert "SECRET" not in run("recall", "foo").output
    # NOW.md and MISTAKES.md readers
    link(desk.root, "NOW.md", secret)
    result = run("now", "show")
    assert result.exit_code == 1 and "SECRET" not in result.output and "NOW.md: refused" in result.output
    # a folder on the way that is a link (the last component is a plain file)
    with pytest.raises(SymlinkError):
        read_regular(desk.root / "memory" / "foo.md", desk.root)
    (desk.root / "memory/foo.md").unlink()
    os.rename(desk.root / "memory", tmp_path / "real-memory")
    os.symlink(outside, desk.root / "memory")
    with pytest.raises(SymlinkError):
        desk.read("memory/foo.md")
    assert "SECRET" not in run("context", "--query", "foo").output
    assert "SECRET" not in json.dumps(run("list", "--json").output)


def test_read_regular_is_plain_bytes_and_missing_is_file_not_found(desk: DeskFolder) -> None:
    assert desk.read("SOUL.md") == (desk.root / "SOUL.md").read_bytes()
    with pytest.raises(FileNotFoundError):
        desk.read("nope.md")
    assert desk.read_if_present("nope.md") is None
    fifo = desk.root / "fifo.md"
    os.mkfifo(fifo)
    with pytest.raises(DeskError):  # not a plain file: refused, never blocks
        desk.read("fifo.md")


def test_a_cache_folder_linked_outside_is_refused_and_never_written(desk: DeskFolder, run: DeskRunner,
                                                                   tmp_path: Path) -> None:
    """Issue 27.3: `.system/cache` committed as a link to a folder outside the desk. The gate names
    it; desk's caches live in .git/desk-cache/, so nothing desk does writes through it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    assert not (desk.root / ".system/cache").exists()  # desk keeps nothing there any more
    link(desk.root, ".system/cache", outside)
    sh(desk.root, "add", "-f", ".system/cache")
    proc = sh(desk.root, "commit", "-q", "-m", "link")
    assert proc.returncode != 0 and ".system/cache:1: symlink" in proc.stderr
    assert sh(desk.root, "commit", "-q", "--no-verify", "-m", "link").returncode == 0
    assert (".system/cache", "symlink") in [(f.path, f.rule) for f in validate_all(desk).findings]
    assert run("remember", "foo", "--type", "fact", "--description", "d", "--trigger", "foo", "Foo.").exit_code == 0
    assert run("context", "--query", "foo").exit_code == 0 and run("recall", "foo").exit_code == 0
    run("doctor")
    assert list(outside.iterdir()) == []
    assert (desk.git_dir / "desk-cache" / "context.sqlite").is_file()
