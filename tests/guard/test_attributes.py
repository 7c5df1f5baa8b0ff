"""The `attribute` rule (issue 27, points 4 and 6): `.gitattributes` lines that make git change
desk's files (line ends, a filter, an encoding) or merge them with another driver are refused by
the hook and by `validate --all`, naming the attribute; desk's own lines pin `-text`, so
core.autocrlf changes nothing. Real commits through the installed hooks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from desk.gate.attributes import PROBES, attribute_problems, only_desk_lines
from desk.formats.hook_files import TEXT_PINS, missing_attributes
from desk.gate.rules import MANAGED_DIRS, ROOT_FILES
from desk.gate.whole import validate_all
from desk.layout import DeskFolder, template_bytes
from desk.memory.operations import remember
from tests.guard_helpers import add_commit, sh, write


def _append(desk: DeskFolder, line: str) -> None:
    with (desk.root / ".gitattributes").open("a") as file:
        file.write(line + "\n")


@pytest.mark.parametrize(("line", "path", "named"), [
    ("SOUL.md merge=desk-derived", "SOUL.md", "`merge=desk-derived`"),
    ("AGENTS.md merge=union", "AGENTS.md", "`merge=union`"),
    ("memory/*.md merge=desk-index", "memory/new.md", "`merge=desk-index`"),
    ("* text eol=crlf", ".gitattributes", "`text` `eol=crlf`"),
    ("USER.md text=auto", "USER.md", "`text=auto`"),
    ("USER.md !text crlf", "USER.md", "`crlf`"),  # `crlf` alone is undone by the `-text` pin
    (".system/*.json filter=lfs", ".system/desk.json", "`filter=lfs`"),
    ("SOUL.md working-tree-encoding=UTF-16", "SOUL.md", "`working-tree-encoding=UTF-16`"),
    ("NOW.md ident", "NOW.md", "`ident`"),
    ("[attr]sneaky filter=x\nUSER.md sneaky", "USER.md", "`filter=x`"),  # a macro
])
def test_the_hook_refuses_an_attribute_on_desks_files_naming_it(desk: DeskFolder, line: str, path: str,
                                                                 named: str) -> None:
    _append(desk, line)
    proc = add_commit(desk.root, "attributes", ".gitattributes")
    assert proc.returncode != 0, proc.stderr
    assert f"{path}:1: attribute: .gitattributes gives {named}" in proc.stderr
    assert ("attribute" in {f.rule for f in validate_all(desk).findings})


def test_a_persons_own_attributes_and_desks_union_index_pass(desk: DeskFolder) -> None:
    _append(desk, "*.pdf binary\nnotes/*.txt text eol=crlf filter=lfs\nMEMORY.md merge=union")
    _append(desk, "memory/*.md -merge\n* -diff")
    proc = add_commit(desk.root, "own attributes", ".gitattributes")
    assert proc.returncode == 0, proc.stderr
    assert validate_all(desk).ok


def test_validate_all_names_an_encoding_not_the_bytes_it_leaves(desk: DeskFolder) -> None:
    """Checked out through `working-tree-encoding=UTF-16`, SOUL.md's work-tree bytes hold NULs: the
    finding is the attribute, not a `binary` (or `bidi-control`) one about bytes git never commits."""
    _append(desk, "SOUL.md working-tree-encoding=UTF-16")
    assert sh(desk.root, "commit", "-q", "--no-verify", "-m", "encoding", "--", ".gitattributes").returncode == 0
    soul = desk.root / "SOUL.md"
    soul.write_bytes(soul.read_text().encode("utf-16"))  # as a checkout through the attribute writes it
    found = [(f.path, f.rule) for f in validate_all(desk).findings]
    assert found == [("SOUL.md", "attribute")]


def test_core_autocrlf_true_checks_desks_files_out_byte_for_byte(desk: DeskFolder) -> None:
    """Git for Windows' default made every write exit 4 ("MEMORY.md has uncommitted changes")."""
    sh(desk.root, "config", "core.autocrlf", "true")
    for path in ("MEMORY.md", "NOW.md", "SOUL.md"):
        (desk.root / path).unlink()
    sh(desk.root, "checkout", "--", ".")
    assert b"\r\n" not in (desk.root / "MEMORY.md").read_bytes()
    assert remember(desk, "foo", type="fact", description="d", triggers=["foo"], body="Foo.").status == "created"
    assert sh(desk.root, "status", "--porcelain").stdout == ""


def test_hooks_install_pins_text_on_an_older_desk(desk: DeskFolder) -> None:
    from desk.setup.hooks import install

    text = (desk.root / ".gitattributes").read_text()
    old = "".join(line + "\n" for line in text.splitlines() if not line.endswith("-text") and "byte for byte" not in line
                  and "below that sets" not in line)
    write(desk.root, ".gitattributes", old)
    assert add_commit(desk.root, "older attributes", ".gitattributes").returncode == 0
    assert [a for _, a in missing_attributes(old)] == ["-text"] * len(TEXT_PINS)
    actions = install(desk.root).merge_drivers
    assert "-text pins added" in actions[".gitattributes"]
    assert missing_attributes((desk.root / ".gitattributes").read_text()) == []
    assert sh(desk.root, "status", "--porcelain").stdout == ""
    assert install(desk.root).merge_drivers.get(".gitattributes") is None  # nothing left to add


def test_desks_own_lines_need_no_git_and_cover_its_files() -> None:
    template = template_bytes("dot-gitattributes").decode()
    assert only_desk_lines([template]) and missing_attributes(template) == []
    assert not only_desk_lines([template + "SOUL.md merge=desk-derived\n"])
    assert set(TEXT_PINS) == set(ROOT_FILES) | {f"{d}**" for d in MANAGED_DIRS}
    assert all(any(p == d.rstrip("/") or p.startswith(d) for d in MANAGED_DIRS) or p in ROOT_FILES
               for p in PROBES)
    assert attribute_problems("SOUL.md", {"text": "unset", "eol": "crlf"}) == []
    assert attribute_problems("SOUL.md", {"crlf": "input"}) == ["crlf=input"]
    assert attribute_problems("memory/x.md", {"merge": "desk-memory"}) == []


def test_a_committed_cache_is_refused_and_never_read(desk: DeskFolder, tmp_path: Path) -> None:
    """A cache made on another desk, committed where caches once lived: the gate refuses it
    (`cache-committed`), and desk never opens it (its caches are in .git/desk-cache/)."""
    from click.testing import CliRunner

    from desk.cli.main import cli
    from desk.setup.init import init_desk

    init_desk(tmp_path / "other")
    other = DeskFolder(tmp_path / "other")
    remember(other, "foo", type="fact", description="d", triggers=["foo"], body="SECRET from elsewhere.")
    assert "SECRET" in CliRunner().invoke(cli, ["--desk", str(other.root), "context", "--query", "foo"]).output
    remember(desk, "foo", type="fact", description="d", triggers=["foo"], body="Foo here.")
    (desk.root / ".system/cache").mkdir(exist_ok=True)
    for cached in other.cache_dir.glob("*.sqlite"):
        shutil.copy(cached, desk.root / ".system/cache" / cached.name)
    sh(desk.root, "add", "-f", ".system/cache")
    proc = sh(desk.root, "commit", "-q", "-m", "caches")
    assert proc.returncode != 0 and ".system/cache/context.sqlite:1: cache-committed" in proc.stderr
    assert sh(desk.root, "commit", "-q", "--no-verify", "-m", "caches").returncode == 0
    assert ".system/cache/context.sqlite" in {f.path for f in validate_all(desk).findings if f.rule == "cache-committed"}
    output = CliRunner().invoke(cli, ["--desk", str(desk.root), "context", "--query", "foo"]).output
    assert "Foo here." in output and "SECRET" not in output
    # removing it is allowed
    sh(desk.root, "rm", "-rq", "--cached", ".system/cache")
    assert sh(desk.root, "commit", "-q", "-m", "drop caches").returncode == 0


def test_hooks_install_puts_back_what_core_autocrlf_converted_before_the_pins(desk: DeskFolder) -> None:
    """A clone checked out with CRLF (core.autocrlf=true) before the pins: once they are committed,
    git sees the CRLF too. Files differing from HEAD only by CR before LF are written as committed;
    a person's real edit is left alone."""
    from desk.setup.hooks import install

    text = (desk.root / ".gitattributes").read_text()
    write(desk.root, ".gitattributes", "".join(line + "\n" for line in text.splitlines()
                                               if not line.endswith(" -text")))
    assert add_commit(desk.root, "older attributes", ".gitattributes").returncode == 0
    sh(desk.root, "config", "core.autocrlf", "true")
    for path in ("MEMORY.md", "NOW.md", "SOUL.md"):
        (desk.root / path).unlink()
    sh(desk.root, "checkout", "--", ".")
    assert b"\r\n" in (desk.root / "NOW.md").read_bytes()
    mistakes = (desk.root / "MISTAKES.md").read_bytes() + b"a person's own line\n"
    (desk.root / "MISTAKES.md").write_bytes(mistakes)
    actions = install(desk.root).merge_drivers
    assert "LF line ends put back in 3 files" in actions[".gitattributes"]
    assert b"\r\n" not in (desk.root / "NOW.md").read_bytes()
    assert sh(desk.root, "status", "--porcelain").stdout == " M MISTAKES.md\n"
    assert (desk.root / "MISTAKES.md").read_bytes() == mistakes


def test_migrate_pins_text_and_says_so(desk: DeskFolder) -> None:
    import desk.api as api

    text = (desk.root / ".gitattributes").read_text()
    write(desk.root, ".gitattributes", "".join(line + "\n" for line in text.splitlines()
                                               if not line.endswith(" -text")))
    assert add_commit(desk.root, "older attributes", ".gitattributes").returncode == 0
    plan = api.open(desk.root).migrate(dry_run=True).value.to_json()
    said = [c["change"] for c in plan["changes"] if c["path"] == ".gitattributes"]
    assert said and said[0].startswith("-text pinned on AGENTS.md, SOUL.md")
    assert api.open(desk.root).migrate().value.status == "migrated"
    assert missing_attributes((desk.root / ".gitattributes").read_text()) == []
