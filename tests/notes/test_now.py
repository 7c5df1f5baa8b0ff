"""`desk now show|set|append`: NOW.md sections, one commit per change."""

from __future__ import annotations

import json
from pathlib import Path

from desk.layout import DeskFolder
from desk.formats.now import NowNote
from desk.notes.now import append_now, read_now, set_now

from tests.conftest import DeskRunner, git, snapshot


def _count(desk: DeskFolder) -> int:
    return int(git(desk.root, "rev-list", "--count", "HEAD"))


def test_append_and_set_target_one_section_each_one_commit(desk: DeskFolder, run: DeskRunner) -> None:
    start = _count(desk)
    template = desk.path("NOW.md").read_text()
    assert run("now", "append", "write the archive").exit_code == 0
    assert run("now", "append", "--section", "blocked", "waiting for review").exit_code == 0
    assert run("now", "set", "--section", "next", "bench\nthen docs").exit_code == 0
    assert _count(desk) == start + 3
    note = read_now(desk)
    assert note.body("doing") == "- write the archive"
    assert note.body("blocked") == "- waiting for review"
    assert note.body("next") == "bench\nthen docs"
    assert note.body("reminders") == ""
    text = desk.path("NOW.md").read_text()
    assert text.startswith(template.split("## Doing")[0])  # the preamble is kept byte for byte
    assert text.index("## Doing") < text.index("## Blocked") < text.index("## Next") < text.index("## Reminders")
    message = git(desk.root, "log", "-1", "--format=%B")
    assert "Desk-Op: now" in message and "Desk-Section: next" in message
    assert git(desk.root, "show", "--name-only", "--format=", "HEAD").split() == ["NOW.md"]


def test_same_text_again_is_unchanged_without_a_commit(desk: DeskFolder, run: DeskRunner) -> None:
    run("now", "set", "--section", "next", "bench")
    start = _count(desk)
    data = json.loads(run("now", "set", "--section", "next", "bench", "--json").output)
    assert data["status"] == "unchanged" and data["commit"] is None
    assert _count(desk) == start


def test_set_clears_a_section_and_replaces_the_whole_note(desk: DeskFolder, run: DeskRunner) -> None:
    run("now", "append", "one")
    run("now", "set", "--section", "doing", "")
    assert read_now(desk).body("doing") == ""
    assert run("now", "set", "# mine\n\n## Doing\n\n- all new\n").exit_code == 0
    assert desk.path("NOW.md").read_text() == "# mine\n\n## Doing\n\n- all new\n"
    assert run("now", "set", "  ").exit_code == 2


def test_a_missing_section_is_put_back_in_its_place(desk: DeskFolder, identity: None) -> None:
    desk.path("NOW.md").write_text("# NOW\n\n## Doing\n\n- a\n\n## Reminders\n\n- r\n")
    git(desk.root, "-c", "user.name=T", "-c", "user.email=t@example.org", "commit", "-qam", "hand edit")
    append_now(desk, "b", section="next")
    assert desk.path("NOW.md").read_text() == "# NOW\n\n## Doing\n\n- a\n\n## Next\n\n- b\n\n## Reminders\n\n- r\n"


def test_show_prints_the_note_or_a_section(desk: DeskFolder, run: DeskRunner) -> None:
    set_now(desk, "ship it", section="next")
    assert "## Next" in run("now", "show").output
    assert run("now", "show", "--section", "next").output.strip() == "ship it"
    data = json.loads(run("now", "show", "--json").output)
    assert data["sections"]["next"] == "ship it" and data["path"] == "NOW.md"


def test_show_of_a_section_that_does_not_exist_is_a_usage_error(desk: DeskFolder) -> None:
    """Through the API (and so `desk serve`'s now_show) an unknown section answered empty text as
    if the section were empty; the CLI's choice list refused it. Both refuse it now."""
    import pytest

    import desk as desk_api
    from desk.errors import UsageError

    set_now(desk, "ship it", section="next")
    with desk_api.open(desk.root) as d:
        with pytest.raises(UsageError, match="choose one of doing, blocked, next, reminders"):
            d.now_show(section="bad")
        assert d.now_show(section="Next").to_json()["text"] == "ship it"


def test_uncommitted_edits_are_refused_and_kept(desk: DeskFolder, run: DeskRunner) -> None:
    desk.path("NOW.md").write_text(desk.path("NOW.md").read_text() + "\nmy own line\n")
    before = snapshot(desk.root)
    result = run("now", "append", "x")
    assert result.exit_code == 4 and "NOW.md" in result.output
    assert snapshot(desk.root) == before


def test_an_oversize_note_is_rejected(desk: DeskFolder, run: DeskRunner) -> None:
    before = snapshot(desk.root)
    assert run("now", "set", "--section", "next", "x" * 20000).exit_code == 3
    assert snapshot(desk.root) == before


def test_parse_render_round_trip_keeps_unknown_sections() -> None:
    text = "# N\n\nintro\n\n## Doing\n\n- a\n\n## Ideas\n\nfree text\n\n## Next\n"
    note = NowNote.parse(text)
    assert note.render() == text
    note.set_body("next", "- b")
    assert note.render() == text + "\n- b\n"
    assert note.body("ideas") == "free text"


def test_section_text_cannot_start_a_section_of_its_own(desk: DeskFolder) -> None:
    from desk.notes.now import read_now, set_now

    set_now(desk, "waiting\n## Next\n- injected", section="blocked")
    set_now(desk, "real", section="next")
    text = (desk.root / "NOW.md").read_text()
    assert text.splitlines().count("## Next") == 1 and "### Next" in text.splitlines()
    assert read_now(desk).body("next") == "real"


def test_a_heading_inside_a_code_fence_is_not_a_section(desk: DeskFolder, identity: None) -> None:
    """A person's NOW.md quoting Markdown in a fence: `## Next` inside it was taken for the Next
    section, so `desk now append --section next` wrote after the fence, outside the real one
    (and sync's NOW.md merge, which parses the same way, saw two Next sections)."""
    text = "# NOW\n\n## Doing\n\n````md\n## Next\n```\n## Blocked\n````\n\n~~~\n## Next\n~~~\n\n## Next\n\n- a\n"
    note = NowNote.parse(text)
    assert [h for h, _ in note.sections] == ["## Doing\n", "## Next\n"] and note.render() == text
    assert note.body("next") == "- a" and "## Blocked" in note.body("doing")
    desk.path("NOW.md").write_text(text)
    git(desk.root, "-c", "user.name=T", "-c", "user.email=t@example.org", "commit", "-qam", "hand edit")
    append_now(desk, "b", section="next")
    assert desk.path("NOW.md").read_text() == text + "- b\n"
    unclosed = NowNote.parse("## Doing\n\n```\n## Next\n")  # an unclosed fence runs to the end
    assert [h for h, _ in unclosed.sections] == ["## Doing\n"]


def test_a_section_s_text_cannot_leave_a_code_fence_open(desk: DeskFolder) -> None:
    """Text with an unclosed fence would turn every later heading into code: the sections after
    it would vanish and the next append would add a second `## Next`. It is closed at its end."""
    set_now(desk, "```\ncode, never closed", section="doing")
    append_now(desk, "b", section="next")
    note = read_now(desk)
    assert [h.strip() for h, _ in note.sections] == ["## Doing", "## Blocked", "## Next", "## Reminders"]
    assert note.body("doing") == "```\ncode, never closed\n```" and note.body("next") == "- b"
    set_now(desk, "# my note\n\n```\nunclosed")  # the whole note: a missing section is added after it
    append_now(desk, "c", section="next")
    append_now(desk, "d", section="next")
    note = read_now(desk)
    assert [h.strip() for h, _ in note.sections] == ["## Next"] and note.body("next") == "- c\n- d"
    assert note.preamble == "# my note\n\n```\nunclosed\n```\n\n"


def test_a_linked_note_is_refused_as_the_gate_refuses_it(desk: DeskFolder, run: DeskRunner,
                                                         tmp_path: Path) -> None:
    """NOW.md or MISTAKES.md replaced by a symbolic link (to a file outside the desk): `now set`,
    `now append` and `mistake add` give the gate's own refusal naming the link (exit 3, the
    finding `desk validate` gives), not "uncommitted changes" (exit 4); nothing is written
    through the link, nothing committed."""
    outside = tmp_path / "outside.md"
    outside.write_text("# somebody else's file\n")
    for note, argv in (("NOW.md", ["now", "set", "hello"]), ("NOW.md", ["now", "append", "hello"]),
                       ("MISTAKES.md", ["mistake", "add", "--what", "w", "--context", "c", "--cause", "c",
                                        "--avoid", "a"])):
        (desk.root / note).unlink()
        (desk.root / note).symlink_to(outside)
        gate = run("validate", "--all", "--json")
        [finding] = [f for f in json.loads(gate.output)["findings"] if f["path"] == note]
        before = snapshot(desk.root)
        result = run(*argv, "--json")
        assert result.exit_code == 3, result.output
        refusal = json.loads(result.output)
        assert refusal["findings"] == [finding] and finding["rule"] == "symlink"
        assert f"git checkout -- {note}" in refusal["hint"]
        assert snapshot(desk.root) == before
        assert outside.read_text() == "# somebody else's file\n"
        git(desk.root, "checkout", "--", note)
