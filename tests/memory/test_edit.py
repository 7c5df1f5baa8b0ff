"""`desk edit NAME` with a tiny editor script standing in for a person."""

from __future__ import annotations

from pathlib import Path

import pytest

from desk.layout import DeskFolder
from tests.conftest import DeskRunner
from tests.guard_helpers import head, memory_text, sh

GOOD = memory_text("pref", description="Edited by hand", body="Prefer short answers.")
BAD = "---\nname: pref\ntype: nonsense\n---\nbody\n"


def editor(tmp_path: Path, *versions: str) -> str:
    """An editor that writes versions[0] on its first run, versions[1] on its second, ..."""
    folder = tmp_path / "editor"
    folder.mkdir(exist_ok=True)
    for i, text in enumerate(versions):
        (folder / f"v{i}").write_text(text)
    script = folder / "edit.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"n=$(cat {folder}/count 2>/dev/null || echo 0)\n"
        f"cp {folder}/v$n \"$1\"\n"
        f"echo $((n + 1)) > {folder}/count\n")
    script.chmod(0o755)
    return str(script)


def runs(tmp_path: Path) -> int:
    return int((tmp_path / "editor" / "count").read_text())


def test_edit_creates_and_commits(desk: DeskFolder, run: DeskRunner, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDITOR", editor(tmp_path, GOOD))
    result = run("edit", "pref", "--json")
    assert result.exit_code == 0, result.output
    assert '"status": "created"' in result.output
    assert (desk.root / "memory/pref.md").read_text() == GOOD  # kept exactly as saved
    assert "- [pref](memory/pref.md) — Edited by hand" in (desk.root / "MEMORY.md").read_text()
    message = sh(desk.root, "log", "-1", "--format=%B").stdout
    assert "Desk-Op: edit" in message and "Desk-Memory: pref" in message
    assert sh(desk.root, "status", "--porcelain").stdout == ""


def test_visual_wins_over_editor(desk: DeskFolder, run: DeskRunner, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VISUAL", editor(tmp_path, GOOD))
    monkeypatch.setenv("EDITOR", "false")
    assert run("edit", "pref").exit_code == 0


def test_errors_offer_re_edit(desk: DeskFolder, run: DeskRunner, tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDITOR", editor(tmp_path, BAD, GOOD))
    result = run("edit", "pref", input="y\n")
    assert result.exit_code == 0, result.output
    assert "memory/pref.md:3: frontmatter-field: type:" in result.output
    assert runs(tmp_path) == 2
    assert (desk.root / "memory/pref.md").read_text() == GOOD


def test_abort_changes_nothing(desk: DeskFolder, run: DeskRunner, tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import snapshot

    before = snapshot(desk.root)
    monkeypatch.setenv("EDITOR", editor(tmp_path, BAD))
    result = run("edit", "pref", input="n\n")
    assert result.exit_code == 3 and "aborted; nothing changed" in result.output
    assert snapshot(desk.root) == before
    assert not list((desk.git_dir / "desk-edit").iterdir())


def test_secret_is_refused_on_save(desk: DeskFolder, run: DeskRunner, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "gl" + "pat-" + "aB3dE5gH7jK9mN1pQ2rS"
    monkeypatch.setenv("EDITOR", editor(tmp_path, memory_text("pref", body=f"Use {secret}.")))
    result = run("edit", "pref", input="n\n")
    assert result.exit_code == 3 and "secret: gitlab-token" in result.output
    assert secret not in result.output


def test_unchanged_edit_makes_no_commit(desk: DeskFolder, run: DeskRunner, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    run("remember", "pref", "--type", "fact", "-d", "A pref", "-t", "x", "Prefer tea.")
    before = head(desk.root)
    monkeypatch.setenv("EDITOR", "true")
    result = run("edit", "pref")
    assert result.exit_code == 0 and result.output.startswith("unchanged")
    assert head(desk.root) == before


def test_edit_existing_updates(desk: DeskFolder, run: DeskRunner, tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    run("remember", "pref", "--type", "fact", "-d", "A pref", "-t", "x", "Prefer tea.")
    monkeypatch.setenv("EDITOR", editor(tmp_path, GOOD))
    result = run("edit", "pref")
    assert result.exit_code == 0 and result.output.startswith("updated")
    assert "Edited by hand" in (desk.root / "MEMORY.md").read_text()


def test_uncommitted_edits_are_not_overwritten(desk: DeskFolder, run: DeskRunner, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    run("remember", "pref", "--type", "fact", "-d", "A pref", "-t", "x", "Prefer tea.")
    (desk.root / "memory/pref.md").write_text(GOOD)
    monkeypatch.setenv("EDITOR", editor(tmp_path, GOOD))
    result = run("edit", "pref")
    assert result.exit_code == 4 and "uncommitted changes" in result.output


def test_no_editor_is_a_usage_error(desk: DeskFolder, run: DeskRunner) -> None:
    result = run("edit", "pref")
    assert result.exit_code == 2 and "$VISUAL or $EDITOR" in result.output
