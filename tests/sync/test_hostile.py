"""A hostile remote (issue 27, points 3, 4 and 6): what another clone committed with `--no-verify`
must not make desk write outside the desk, trust a cache it did not make, change desk's bytes on
checkout or merge a protected file with another driver. `desk clone` refuses the tree before it
is checked out; `desk sync` refuses it before HEAD moves."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import desk.api as api
from desk.cli.main import cli
from desk.errors import RejectedError
from tests.sync.conftest import Clones, git


def _push(clone: api.Desk, message: str, *paths: str) -> None:
    git(clone.root, "add", "-f", "--", *paths)
    git(clone.root, "commit", "-q", "--no-verify", "-m", message)
    git(clone.root, "push", "-q", "origin", "main")


def _link_cache_outside(clone: api.Desk, outside: Path) -> None:
    outside.mkdir()
    os.symlink(outside, clone.root / ".system/cache")
    _push(clone, "hostile cache link", ".system/cache")


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*"))


def test_clone_refuses_a_cache_folder_linked_outside_and_keeps_nothing(clones: Clones, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _link_cache_outside(clones[0], outside)
    result = CliRunner().invoke(cli, ["clone", str(clones.remote), str(tmp_path / "fresh"), "--json"])
    assert result.exit_code == 3, result.output
    data = json.loads(result.stdout)
    assert [(f["path"], f["rule"]) for f in data["findings"]] == [(".system/cache", "symlink")]
    assert not (tmp_path / "fresh").exists()
    assert _files(outside) == []  # no cache, no doctor's verdicts written through the link


def test_clone_refuses_committed_cache_files_and_links_to_outside_sqlite(clones: Clones, tmp_path: Path) -> None:
    a = clones[0]
    outside = tmp_path / "verdicts.sqlite"
    outside.write_bytes(b"")
    (a.root / ".system/cache").mkdir(exist_ok=True)
    os.symlink(outside, a.root / ".system/cache/verdicts.sqlite")
    (a.root / ".system/cache/context.sqlite").write_bytes(b"SQLite format 3\0 made elsewhere")
    _push(a, "hostile caches", ".system/cache")
    with pytest.raises(RejectedError) as err:
        api.clone(str(clones.remote), tmp_path / "fresh")
    found = [(f["path"], f["rule"]) for f in err.value.details["findings"]]
    assert found == [(".system/cache/verdicts.sqlite", "symlink"), (".system/cache/context.sqlite", "cache-committed")]
    assert not (tmp_path / "fresh").exists() and outside.read_bytes() == b""


def test_sync_refuses_a_linked_cache_folder_before_head_moves(clones: Clones, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _link_cache_outside(clones[0], outside)
    b = clones[1]
    before = git(b.root, "rev-parse", "HEAD")
    with pytest.raises(RejectedError) as err:
        b.sync()
    assert ".system/cache:1: symlink" in err.value.message
    assert git(b.root, "rev-parse", "HEAD") == before and not (b.root / ".system/cache").is_symlink()
    b.remember("foo", "Foo body.", type="fact", description="d", triggers=["foo"])
    b.context()
    assert _files(outside) == []
    assert (b.git_dir / "desk-cache" / "verdicts.sqlite").is_file()


@pytest.mark.parametrize(("line", "named"), [
    ("SOUL.md merge=desk-derived", "`merge=desk-derived`"),
    ("* text eol=crlf", "`text` `eol=crlf`"),
    ("AGENTS.md filter=lfs", "`filter=lfs`"),
    (".system/** working-tree-encoding=UTF-16", "`working-tree-encoding=UTF-16`"),
    ("USER.md merge=union", "`merge=union`"),
])
def test_sync_and_clone_refuse_attributes_that_remap_desks_files(clones: Clones, tmp_path: Path,
                                                                 line: str, named: str) -> None:
    a, b = clones[0], clones[1]
    with (a.root / ".gitattributes").open("a") as file:
        file.write(line + "\n")
    _push(a, "hostile attributes", ".gitattributes")
    before = git(b.root, "rev-parse", "HEAD")
    result = CliRunner().invoke(cli, ["--desk", str(b.root), "sync", "--json"])
    assert result.exit_code == 3, result.output
    findings = json.loads(result.stdout)["findings"]
    assert [f["rule"] for f in findings] and {f["rule"] for f in findings} == {"attribute"}
    assert any(named in f["message"] for f in findings), findings
    assert git(b.root, "rev-parse", "HEAD") == before
    with pytest.raises(RejectedError) as err:
        api.clone(str(clones.remote), tmp_path / "fresh")
    assert named in err.value.message and not (tmp_path / "fresh").exists()


def test_a_two_sided_soul_edit_still_stops_when_the_driver_line_is_refused(clones: Clones) -> None:
    """The red team's case: the remote maps SOUL.md to desk-derived and edits it; this clone edits
    it too. The sync is refused naming the attribute, and neither side's SOUL.md is lost."""
    a, b = clones[0], clones[1]
    with (a.root / ".gitattributes").open("a") as file:
        file.write("SOUL.md merge=desk-derived\n")
    (a.root / "SOUL.md").write_text("# Soul\n\ntheirs\n")
    _push(a, "remap SOUL.md", ".gitattributes", "SOUL.md")
    (b.root / "SOUL.md").write_text("# Soul\n\nours\n")
    git(b.root, "commit", "-qam", "our soul")
    with pytest.raises(RejectedError) as err:
        b.sync(push=False)
    assert "SOUL.md:1: attribute" in err.value.message and "merge=desk-derived" in err.value.message
    assert (b.root / "SOUL.md").read_text() == "# Soul\n\nours\n"
    assert git(b.root, "status", "--porcelain").strip() == ""


def test_attributes_before_desks_pins_change_nothing_and_are_accepted(clones: Clones, tmp_path: Path) -> None:
    """`* text eol=crlf` above desk's `-text` pins gives desk's files nothing (the later line wins,
    as git says): accepted, and the clone's files are byte for byte the committed ones."""
    a = clones[0]
    text = (a.root / ".gitattributes").read_text()
    (a.root / ".gitattributes").write_text("* text eol=crlf\n" + text)
    _push(a, "crlf for a person's own files", ".gitattributes")
    fresh = api.clone(str(clones.remote), tmp_path / "fresh")
    assert b"\r\n" not in (fresh.root / "MEMORY.md").read_bytes()
    assert fresh.remember("foo", "Foo body.", type="fact", description="d", triggers=["foo"]).value.status == "created"
    assert clones[1].sync().value.status == "fast-forward"


def test_core_autocrlf_true_does_not_make_every_write_a_conflict(clones: Clones, tmp_path: Path) -> None:
    """Git for Windows' default: core.autocrlf=true. desk's `-text` pins keep the checkout byte-exact,
    so writes do not exit 4 ("MEMORY.md has uncommitted changes") while `git status` is clean."""
    subprocess.run(["git", "config", "--global", "core.autocrlf", "true"], check=True)  # the test's own HOME
    fresh = api.clone(str(clones.remote), tmp_path / "fresh")
    assert b"\r\n" not in (fresh.root / "MEMORY.md").read_bytes()
    assert fresh.remember("foo", "Foo body.", type="fact", description="d", triggers=["foo"]).value.status == "created"
    assert fresh.now_set("working on it").value is not None
    assert git(fresh.root, "status", "--porcelain").strip() == ""


def test_an_older_desk_cloned_under_core_autocrlf_gains_its_pins_and_lf_files(clones: Clones, tmp_path: Path) -> None:
    """A desk made before the `-text` pins, cloned where core.autocrlf=true: the clone adds the
    pins (one commit) and writes desk's files again as committed, so nothing looks edited."""
    a = clones[0]
    text = (a.root / ".gitattributes").read_text()
    (a.root / ".gitattributes").write_text("".join(
        line + "\n" for line in text.splitlines() if not line.endswith(" -text") and not line.startswith("#")))
    _push(a, "attributes of an older desk", ".gitattributes")
    subprocess.run(["git", "config", "--global", "core.autocrlf", "true"], check=True)
    fresh = api.clone(str(clones.remote), tmp_path / "fresh")
    assert "-text" in (fresh.root / ".gitattributes").read_text()
    assert b"\r\n" not in (fresh.root / "MEMORY.md").read_bytes()
    assert git(fresh.root, "status", "--porcelain").strip() == ""
    assert fresh.remember("foo", "Foo body.", type="fact", description="d", triggers=["foo"]).value.status == "created"
