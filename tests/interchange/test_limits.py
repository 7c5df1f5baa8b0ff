"""`desk import` against hostile sizes: YAML alias bombs in foreign notes, sources past the
import limit, files that lie about their size, FIFOs. Each is refused naming the file (and line)
with the desk exactly as it was; the ones that would eat the machine if the limit broke run in a
child whose address space is capped, so a regression fails the test instead of the machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import desk as desk_api
from desk.errors import UsageError
from desk.interchange.foreign import read_note
from desk.layout import DeskFolder
from tests.conftest import DeskRunner, git, snapshot

MIB = 1024 * 1024
CHILD_MEMORY = 1024 * MIB  # the address space a child import may use: far above a sane import of these


def bomb(levels: int = 9, width: int = 9) -> str:
    """A "billion laughs" note: `width ** levels` strings behind a few hundred bytes of YAML."""
    lines = ["---", f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join([*lines, "title: bomb", "---", "A note.", ""])


def import_in_child(desk: DeskFolder, *args: str, env: dict[str, str] | None = None
                    ) -> subprocess.CompletedProcess[str]:
    """`python -m desk --desk ROOT import ARGS` with its address space capped at CHILD_MEMORY."""
    def cap() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))

    return subprocess.run([sys.executable, "-m", "desk", "--desk", str(desk.root), "import", *args],
                          capture_output=True, text=True, preexec_fn=cap, timeout=300,
                          env={**os.environ, **(env or {})})


def commits(desk: DeskFolder) -> int:
    return int(git(desk.root, "rev-list", "--count", "HEAD"))


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_AS is POSIX")
@pytest.mark.parametrize("dry_run", [True, False])
def test_a_yaml_alias_bomb_in_a_note_is_refused_at_its_line_and_writes_nothing(
        desk: DeskFolder, identity: None, tmp_path: Path, dry_run: bool) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "ok.md").write_text("---\ntitle: Fine\n---\nA fine note.\n")
    (vault / "bomb.md").write_text(bomb())
    assert len((vault / "bomb.md").read_bytes()) < 600
    before, count = snapshot(desk.root), commits(desk)
    done = import_in_child(desk, "markdown", str(vault), *(["--dry-run"] if dry_run else []))
    assert done.returncode == 2, done.stderr
    # a4 (file line 6) is the first anchor whose aliases pass 10,000 values: 9**5
    assert "bomb.md:6: frontmatter is not valid YAML" in done.stderr and "alias" in done.stderr
    assert "MemoryError" not in done.stderr
    assert snapshot(desk.root) == before and commits(desk) == count


@pytest.mark.parametrize("text, line", [
    ("---\na: &a [1, *a]\n---\nbody\n", 2),                    # a list that contains itself
    ("---\ntitle: t\nm: &m {k: *m}\n---\nbody\n", 3),           # a mapping that contains itself
    ("\n\n---\n\ntitle: x\nkey: \"a\" b\n---\nbody\n", 6),   # a syntax error, after blank lines
    ("---\ntitle: x\nkey: \"a\" b\n---\nbody\n", 3),
])
def test_refused_yaml_names_the_line_of_the_file(desk: DeskFolder, tmp_path: Path, text: str, line: int) -> None:
    (tmp_path / "note.md").write_text(text)
    with pytest.raises(UsageError) as caught:
        desk_api.open(desk.root).import_("markdown", tmp_path / "note.md", dry_run=True)
    assert caught.value.message.startswith(f"note.md:{line}: frontmatter is not valid YAML"), caught.value.message


def test_aliases_that_expand_a_little_still_import(desk: DeskFolder, tmp_path: Path) -> None:
    (tmp_path / "note.md").write_text(
        "---\ntitle: Shared tags\nbase: &base [deploy, fridays]\ntags: *base\n"
        "defaults: &d {type: decision}\nmerged:\n  <<: *d\n  extra: 1\n---\nWe deploy on Fridays.\n")
    report = desk_api.open(desk.root).import_("markdown", tmp_path / "note.md", dry_run=True).to_json()
    assert [m["action"] for m in report["memories"]] == ["create"]
    note = read_note(tmp_path / "note.md", "note.md")
    assert note.meta["tags"] == ["deploy", "fridays"]
    assert note.meta["merged"] == {"type": "decision", "extra": 1}


def test_aliases_past_the_cap_are_refused_even_when_small_on_disk(desk: DeskFolder, tmp_path: Path) -> None:
    # 3 levels of 25: 15,625 values from one line of 25 strings, over the 10,000 an alias may add
    (tmp_path / "note.md").write_text(bomb(levels=3, width=25))
    with pytest.raises(UsageError, match=r"note\.md:4: .*aliases expand it past 10000"):
        desk_api.open(desk.root).import_("markdown", tmp_path / "note.md", dry_run=True)
    (tmp_path / "note.md").write_text(bomb(levels=2, width=25))  # 625: fine
    assert desk_api.open(desk.root).import_("markdown", tmp_path / "note.md", dry_run=True).to_json()["memories"]


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_AS is POSIX")
def test_a_source_past_the_limit_is_refused_before_it_is_read(desk: DeskFolder, tmp_path: Path) -> None:
    export = tmp_path / "conversations.json"
    with open(export, "wb") as handle:  # 1 GiB, sparse: what a read would cost, no disk
        handle.truncate(1024 * MIB)
    before = snapshot(desk.root)
    done = import_in_child(desk, "chat-export", str(export), "--dry-run")
    assert done.returncode == 2, done.stderr
    assert "conversations.json: the source passes the import limit of 256 MiB" in done.stderr
    assert "--max-mib" in done.stderr and "DESK_IMPORT_MAX_MIB" in done.stderr
    assert snapshot(desk.root) == before


def test_the_limit_comes_from_the_option_then_the_environment(run: DeskRunner, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    export = tmp_path / "export.json"
    export.write_text(json.dumps({"results": [{"id": "m1", "memory": "x" * (2 * MIB)}]}))
    result = run("import", "mem0", str(export), "--dry-run", "--max-mib", "1")
    assert result.exit_code == 2 and "export.json: the source passes the import limit of 1 MiB" in result.output
    assert run("import", "mem0", str(export), "--dry-run", "--max-mib", "3").exit_code == 0
    monkeypatch.setenv("DESK_IMPORT_MAX_MIB", "1")
    assert "limit of 1 MiB" in run("import", "mem0", str(export), "--dry-run").output
    assert run("import", "mem0", str(export), "--dry-run", "--max-mib", "3").exit_code == 0  # the option wins
    monkeypatch.setenv("DESK_IMPORT_MAX_MIB", "lots")
    result = run("import", "mem0", str(export), "--dry-run")
    assert result.exit_code == 2 and "$DESK_IMPORT_MAX_MIB must be a whole number of MiB" in result.output
    assert run("import", "mem0", str(export), "--max-mib", "0").exit_code == 2


def test_the_limit_holds_for_a_folder_s_files_together(desk: DeskFolder, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    for name in ("a", "b", "c"):  # each under the 1 MiB a note may have; 1.2 MiB together
        (vault / f"{name}.md").write_text(f"# {name}\n" + "word " * (80 * 1024))
    before = snapshot(desk.root)
    with pytest.raises(UsageError) as caught:
        desk_api.open(desk.root).import_("markdown", vault, max_bytes=MIB)
    assert caught.value.message.startswith("c.md: the source passes the import limit of 1 MiB")
    assert snapshot(desk.root) == before
    assert len(desk_api.open(desk.root).import_("markdown", vault, dry_run=True,
                                                  max_bytes=2 * MIB).to_json()["memories"]) == 3


@pytest.mark.skipif(not Path("/proc/self/smaps").is_file(), reason="Linux /proc")
def test_a_file_that_says_it_is_empty_is_read_no_further_than_the_limit(desk: DeskFolder) -> None:
    # /proc files report a size of 0 and hold kilobytes: the size checked first is not trusted
    assert Path("/proc/self/smaps").stat().st_size == 0
    with pytest.raises(UsageError, match=r"^smaps: the source passes the import limit"):
        desk_api.open(desk.root).import_("mem0", Path("/proc/self/smaps"), dry_run=True, max_bytes=100)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_a_fifo_is_refused_without_waiting_for_a_writer(desk: DeskFolder, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "export.json")
    with pytest.raises(UsageError, match=r"export\.json: not a regular file"):
        desk_api.open(desk.root).import_("mem0", tmp_path / "export.json", dry_run=True)
