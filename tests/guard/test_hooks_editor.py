"""The editor loop (issue 9.1): a person edits memory files and commits with plain git through the
installed hooks. Each way of committing succeeds on the first try, or on the second with the exact
command the hook names; the hook never writes over what the person wrote in the work tree."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from desk.layout import DeskFolder
from desk.memory.operations import remember
from tests.guard_helpers import reindex_text, sh, write


def edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def committed(root: Path, rel: str) -> str:
    return sh(root, "show", f"HEAD:{rel}").stdout


def foo(desk: DeskFolder) -> None:
    remember(desk, "foo", type="fact", description="old desc", triggers=["foo"], body="Foo body.")


def clean(root: Path) -> bool:
    return sh(root, "status", "--porcelain").stdout == ""


def test_commit_a_after_editing_a_description(desk: DeskFolder) -> None:
    foo(desk)
    edit(desk.root, "memory/foo.md", "old desc", "new desc")
    proc = sh(desk.root, "commit", "-qam", "desc")
    assert proc.returncode == 0, proc.stderr
    assert "files were modified by this hook" in proc.stderr
    assert "— new desc" in committed(desk.root, "MEMORY.md")
    assert (desk.root / "MEMORY.md").read_text() == committed(desk.root, "MEMORY.md")
    assert clean(desk.root)


def test_add_memory_folder_then_commit(desk: DeskFolder) -> None:
    foo(desk)
    edit(desk.root, "memory/foo.md", "old desc", "new desc")
    write(desk.root, "memory/bar.md", "---\nname: bar\ndescription: A new one\ntype: fact\n"
                                      "triggers:\n- bar\n---\nBar body.\n")
    sh(desk.root, "add", "memory/")
    proc = sh(desk.root, "commit", "-qm", "two")
    assert proc.returncode == 0, proc.stderr
    index = committed(desk.root, "MEMORY.md")
    assert "- [bar](memory/bar.md) — A new one" in index and "— new desc" in index
    # a person's file without `schema:` (format version 1) is committed exactly as written, in one go
    assert committed(desk.root, "memory/bar.md") == (desk.root / "memory/bar.md").read_text()
    assert "schema:" not in committed(desk.root, "memory/bar.md")
    assert "\nschema: 2\n---\n" in committed(desk.root, "memory/foo.md")  # desk's stamp, kept
    assert clean(desk.root)


def test_removing_the_version_line_by_hand_commits_on_the_first_try(desk: DeskFolder) -> None:
    foo(desk)
    before = (desk.root / "MEMORY.md").read_bytes()
    edit(desk.root, "memory/foo.md", "schema: 2\n", "")
    proc = sh(desk.root, "commit", "-qam", "no version line")
    assert proc.returncode == 0, proc.stderr
    assert "schema" not in committed(desk.root, "memory/foo.md")
    assert (desk.root / "MEMORY.md").read_bytes() == before  # the index never shows the version
    assert clean(desk.root)


def test_a_staged_memory_index_with_unstaged_memory_edits_is_never_reverted(desk: DeskFolder) -> None:
    """The issue's loop: MEMORY.md staged (reindexed from the work tree), the memory file not. The
    hook writes nothing, and its hint is the exact command that makes the next commit go through."""
    foo(desk)
    edit(desk.root, "memory/foo.md", "old desc", "new desc")
    reindex_text(desk.root)
    sh(desk.root, "add", "MEMORY.md")
    before = {rel: (desk.root / rel).read_bytes() for rel in ("MEMORY.md", "memory/foo.md")}
    proc = sh(desk.root, "commit", "-qm", "desc")
    assert proc.returncode != 0
    assert "memory/foo.md has changes that are not staged" in proc.stderr
    assert {rel: (desk.root / rel).read_bytes() for rel in before} == before  # nothing reverted
    assert "`git add memory/ MEMORY.md`" in proc.stderr
    sh(desk.root, "add", "memory/", "MEMORY.md")
    proc = sh(desk.root, "commit", "-qm", "desc")
    assert proc.returncode == 0, proc.stderr
    assert "— new desc" in committed(desk.root, "MEMORY.md") and clean(desk.root)


def test_commit_of_named_paths_names_the_exact_command(desk: DeskFolder) -> None:
    foo(desk)
    edit(desk.root, "memory/foo.md", "old desc", "new desc")
    proc = sh(desk.root, "commit", "-qm", "desc", "--", "memory/foo.md")
    assert proc.returncode != 0
    command = re.search(r"run it again as `([^`]+)`", proc.stderr)
    assert command is not None, proc.stderr
    assert "— new desc" in (desk.root / "MEMORY.md").read_text()
    args = shlex.split(command.group(1))
    assert args[:2] == ["git", "commit"]
    proc = sh(desk.root, "commit", "-qm", "desc", *args[2:])
    assert proc.returncode == 0, proc.stderr
    assert "— new desc" in committed(desk.root, "MEMORY.md") and clean(desk.root)


def test_rename_with_git_mv_and_commit_a(desk: DeskFolder) -> None:
    foo(desk)
    assert sh(desk.root, "mv", "memory/foo.md", "memory/bar.md").returncode == 0
    edit(desk.root, "memory/bar.md", "name: foo", "name: bar")
    proc = sh(desk.root, "commit", "-qam", "rename foo to bar")
    assert proc.returncode == 0, proc.stderr
    index = committed(desk.root, "MEMORY.md")
    assert "- [bar](memory/bar.md) — old desc" in index and "foo" not in index
    assert clean(desk.root)
    follows = sh(desk.root, "log", "--follow", "--format=%s", "--", "memory/bar.md").stdout.split("\n")
    assert follows[0] == "rename foo to bar" and len([s for s in follows if s]) == 2


def test_rename_whose_fixed_name_is_not_staged_quotes_the_persons_file(desk: DeskFolder) -> None:
    foo(desk)
    sh(desk.root, "mv", "memory/foo.md", "memory/bar.md")
    edit(desk.root, "memory/bar.md", "name: foo", "name: bar")  # fixed in the editor, not staged
    proc = sh(desk.root, "commit", "-qm", "rename")
    assert proc.returncode != 0
    assert "memory/bar.md:2: name-mismatch: name: 'foo' differs from the file name 'bar.md'" in proc.stderr
    assert "the file in the work tree differs (it says `name: bar`)" in proc.stderr
    assert "`git add memory/bar.md`" in proc.stderr
    assert (desk.root / "memory/bar.md").read_text().count("name: bar") == 1  # untouched
    sh(desk.root, "add", "memory/bar.md")
    proc = sh(desk.root, "commit", "-qm", "rename")
    assert proc.returncode == 0, proc.stderr
    assert "- [bar](memory/bar.md)" in committed(desk.root, "MEMORY.md") and clean(desk.root)


def test_a_persons_own_work_tree_index_is_left_alone(desk: DeskFolder) -> None:
    """A MEMORY.md the person changed and did not stage is theirs: the commit gets the right index,
    the work tree keeps theirs."""
    foo(desk)
    mine = (desk.root / "MEMORY.md").read_text() + "my own line\n"
    (desk.root / "MEMORY.md").write_text(mine)
    edit(desk.root, "memory/foo.md", "old desc", "new desc")
    sh(desk.root, "add", "memory/foo.md")
    proc = sh(desk.root, "commit", "-qm", "desc")
    assert proc.returncode == 0, proc.stderr
    assert "your own MEMORY.md in the work tree was left as it is" in proc.stderr
    assert (desk.root / "MEMORY.md").read_text() == mine
    assert "— new desc" in committed(desk.root, "MEMORY.md")


def test_conflict_markers_are_an_unresolved_merge_conflict(desk: DeskFolder) -> None:
    """Issue 9.3: a memory file a merge left with markers is reported as such, with path:line and
    how to resolve it, by the hook and by `validate --all`, not as a YAML error."""
    from desk.gate.whole import validate_all

    foo(desk)
    text = (desk.root / "memory/foo.md").read_text()
    conflicted = text.replace("description: old desc\n", "<<<<<<< HEAD\ndescription: ours\n=======\n"
                              "description: theirs\n>>>>>>> other\n")
    (desk.root / "memory/foo.md").write_text(conflicted)
    line = conflicted.splitlines().index("<<<<<<< HEAD") + 1
    proc = sh(desk.root, "commit", "-qam", "half merged")
    assert proc.returncode != 0
    assert f"memory/foo.md:{line}: merge-conflict: unresolved merge conflict" in proc.stderr
    assert "delete the `<<<<<<<`, `=======` and `>>>>>>>` lines" in proc.stderr
    assert "yaml" not in proc.stderr.lower()
    rules = {(f.path, f.line, f.rule) for f in validate_all(desk).findings}
    assert ("memory/foo.md", line, "merge-conflict") in rules
    # a setext heading underline alone is no conflict
    write(desk.root, "journal/2026-01-01.md", "Title\n=======\n\ntext\n")
    assert not [f for f in validate_all(desk).findings if f.path.startswith("journal/")]
