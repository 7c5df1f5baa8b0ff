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


def _unstamped(text: str) -> str:
    """`text` without the `created:`/`updated:`/`schema:` lines `desk edit` stamps on save."""
    return "".join(line for line in text.splitlines(keepends=True)
                   if not line.startswith(("created: ", "updated: ", "schema: ")))


def runs(tmp_path: Path) -> int:
    return int((tmp_path / "editor" / "count").read_text())


def test_edit_creates_and_commits(desk: DeskFolder, run: DeskRunner, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDITOR", editor(tmp_path, GOOD))
    result = run("edit", "pref", "--json")
    assert result.exit_code == 0, result.output
    assert '"status": "created"' in result.output
    saved = (desk.root / "memory/pref.md").read_text()
    assert _unstamped(saved) == GOOD  # kept as saved, times and the format version added
    assert "\nschema: 2\n---\n" in saved  # the last frontmatter line, as desk writes it
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
    assert _unstamped((desk.root / "memory/pref.md").read_text()) == GOOD


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


def _path_with(tmp_path: Path, **tools: str) -> str:
    """A PATH folder holding git, sh, cat and cp (desk and the stand-in editor run them) and `tools`
    ({name: script}), alone."""
    import shutil

    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name in ("git", "sh", "cat", "cp"):
        (folder / name).symlink_to(shutil.which(name) or name)
    for name, script in tools.items():
        (folder / name).symlink_to(script)
    return str(folder)


def test_no_editor_at_all_is_a_usage_error(desk: DeskFolder, run: DeskRunner, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", _path_with(tmp_path))
    result = run("edit", "pref")
    assert result.exit_code == 2 and "$VISUAL and $EDITOR are unset and neither vi nor nano" in result.output
    assert "hint:" in result.output


@pytest.mark.parametrize("fallback", ["vi", "nano"])
def test_without_visual_or_editor_vi_then_nano_is_the_editor_as_in_git(
        desk: DeskFolder, run: DeskRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fallback: str) -> None:
    """Issue 32: git falls back to vi when no editor is configured; desk does too, then nano."""
    monkeypatch.setenv("PATH", _path_with(tmp_path, **{fallback: editor(tmp_path, GOOD)}))
    result = run("edit", "pref")
    assert result.exit_code == 0, result.output
    assert runs(tmp_path) == 1 and "Prefer short answers." in (desk.root / "memory" / "pref.md").read_text()


def test_edit_stamps_created_and_updated_and_bumps_updated(desk: DeskFolder, run: DeskRunner,
                                                           tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 9.5: a new memory gets created/updated; editing one moves `updated` only."""
    import json

    monkeypatch.setenv("EDITOR", editor(tmp_path, GOOD))
    assert run("edit", "pref").exit_code == 0
    first = json.loads(run("show", "pref", "--json").output)
    assert first["created"] == first["updated"]
    stats = json.loads(run("stats", "--json").output)
    assert "pref" not in json.dumps(stats["memories"]["unverified"])
    text = (desk.root / "memory/pref.md").read_text()
    later = text.replace(f"updated: {first['updated']}", "updated: 2020-01-01T00:00:00Z")
    later = later.replace(f"created: {first['created']}", "created: 2020-01-01T00:00:00Z")
    (desk.root / "memory/pref.md").write_text(later)
    sh(desk.root, "commit", "-qam", "backdate")
    other = tmp_path / "second"
    other.mkdir()
    monkeypatch.setenv("EDITOR", editor(other, later.replace("Prefer short", "Prefer very short")))
    assert run("edit", "pref").exit_code == 0
    second = json.loads(run("show", "pref", "--json").output)
    assert second["created"] == "2020-01-01T00:00:00Z" and second["updated"] > "2026"
    assert "Prefer very short answers." in second["body"]


def test_the_template_is_block_style(desk: DeskFolder, run: DeskRunner, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    seen = tmp_path / "seen.md"
    monkeypatch.setenv("EDITOR", f"cp \"$1\" {seen} && true")
    script = tmp_path / "copy.sh"
    script.write_text(f"#!/bin/sh\ncp \"$1\" {seen}\n")
    script.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(script))
    assert run("edit", "fresh").exit_code == 0  # saved unchanged: nothing happens
    assert "triggers:\n- fresh\n" in seen.read_text() and "[" not in seen.read_text()


def test_end_of_input_at_edit_again_is_a_clear_message(desk: DeskFolder, run: DeskRunner, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDITOR", editor(tmp_path, BAD))
    result = run("edit", "pref", input="")
    assert result.exit_code == 3 and "Aborted!" not in result.output
    assert "end of input" in result.output and "hint: `desk edit pref`" in result.output
    assert not (desk.root / "memory/pref.md").exists()


def test_an_editor_failure_has_a_hint(desk: DeskFolder, run: DeskRunner,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDITOR", "false")
    result = run("edit", "pref")
    assert result.exit_code == 1 and "exited with status 1" in result.output and "hint:" in result.output
