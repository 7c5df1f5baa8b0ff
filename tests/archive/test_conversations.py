"""`desk conversations render`: deterministic Markdown views of inbound/outbound events."""

from __future__ import annotations

import json

from desk.archive.store import append_event, iter_events
from desk.archive.conversations import view_path
from desk.layout import DeskFolder

from tests.conftest import DeskRunner, git


def _events(desk: DeskFolder) -> None:
    append_event(desk, "inbound", "hi\n# not a heading", session="s1", actor="ada", at="2026-11-29T10:00:00Z")
    append_event(desk, "outbound", "hello", session="s1", at="2026-11-29T10:00:05Z")
    append_event(desk, "progress", "internal", session="s1", at="2026-11-29T10:00:06Z")
    append_event(desk, "inbound", "earlier", session="s1", at="2026-11-29T09:00:00Z")
    append_event(desk, "inbound", "other day", session="s1", at="2026-11-28T09:00:00Z")
    append_event(desk, "inbound", "no session", at="2026-11-29T11:00:00Z")


def test_render_writes_one_view_per_day_and_session_in_one_commit(desk: DeskFolder, run: DeskRunner) -> None:
    _events(desk)
    start = int(git(desk.root, "rev-list", "--count", "HEAD"))
    data = json.loads(run("conversations", "render", "--json").output)
    assert data["status"] == "committed" and data["events"] == 5
    assert data["files"] == ["conversations/2026-11-28/s1.md", "conversations/2026-11-29/no-session.md",
                             "conversations/2026-11-29/s1.md"]
    assert int(git(desk.root, "rev-list", "--count", "HEAD")) == start + 1
    view = desk.path("conversations/2026-11-29/s1.md").read_text()
    assert view.index("earlier") < view.index("> hi") < view.index("hello")
    assert "> # not a heading" in view and "internal" not in view
    assert "**`ada`** · 10:00:00Z · inbound" in view
    # the archive itself is not committed by a render
    assert git(desk.root, "ls-files", "--others", "--", ".system/archive").strip()


def test_render_is_deterministic_and_commits_nothing_the_second_time(desk: DeskFolder, run: DeskRunner,
                                                                    identity: None) -> None:
    _events(desk)
    run("conversations", "render")
    first = desk.path("conversations/2026-11-29/s1.md").read_bytes()
    start = int(git(desk.root, "rev-list", "--count", "HEAD"))
    desk.path("conversations/2026-11-29/s1.md").unlink()
    git(desk.root, "-c", "user.name=T", "-c", "user.email=t@example.org", "commit", "-qam", "drop a view")
    data = json.loads(run("conversations", "render", "--date", "2026-11-29", "--json").output)
    assert data["files"] == ["conversations/2026-11-29/s1.md"]
    assert desk.path("conversations/2026-11-29/s1.md").read_bytes() == first
    assert json.loads(run("conversations", "render", "--json").output)["status"] == "unchanged"
    assert int(git(desk.root, "rev-list", "--count", "HEAD")) == start + 2


def test_render_filters_by_session_and_refuses_edited_views(desk: DeskFolder, run: DeskRunner) -> None:
    _events(desk)
    data = json.loads(run("conversations", "render", "--session", "s1", "--date", "2026-11-28", "--json").output)
    assert data["files"] == ["conversations/2026-11-28/s1.md"]
    run("conversations", "render")
    view = desk.path("conversations/2026-11-29/s1.md")
    view.write_text(view.read_text() + "a person's note\n")
    append_event(desk, "outbound", "later", session="s1", at="2026-11-29T12:00:00Z")
    result = run("conversations", "render")
    assert result.exit_code == 4 and "conversations/2026-11-29/s1.md" in result.output
    assert view.read_text().endswith("a person's note\n")


def test_date_is_a_utc_day_whatever_the_offset(desk: DeskFolder, run: DeskRunner) -> None:
    _events(desk)
    # 01:00 at +05:00 is 20:00 UTC the day before: that UTC day's view is rendered.
    data = json.loads(run("conversations", "render", "--date", "2026-11-29T01:00:00+05:00", "--json").output)
    assert data["files"] == ["conversations/2026-11-28/s1.md"] and data["events"] == 1
    refused = run("conversations", "render", "--date", "2026-11-29T01:00", "--json")
    assert refused.exit_code == 2 and "no timezone" in refused.output


def test_unsafe_session_names_get_a_safe_unique_file() -> None:
    a, b = view_path("2026-11-29", "A/B"), view_path("2026-11-29", "a-b")
    assert a != b and a.startswith("conversations/2026-11-29/a-b-") and "/" not in a.split("2026-11-29/")[1]
    assert view_path("2026-11-29", "../../etc") != "conversations/etc.md"
    assert ".." not in view_path("2026-11-29", "../../etc")


def test_session_and_actor_cannot_add_structure_to_a_view(desk: DeskFolder, run: DeskRunner) -> None:
    from desk.archive.store import append_event, iter_events

    append_event(desk, "inbound", "hello", session="evil\n## Injected", actor="a**b",
                 at="2026-11-29T10:00:00Z")
    run("conversations", "render")
    view = next((desk.root / "conversations/2026-11-29").glob("*.md")).read_text()
    assert "\n## Injected" not in view and "`evil ## Injected`" in view and "**`a**b`**" in view


def test_a_view_stays_under_the_gate_s_limit_and_says_what_it_left_out(desk: DeskFolder, run: DeskRunner) -> None:
    """A 1 MB message (an archive record holds up to 1 MiB) once made a view over the gate's 1 MiB, so the
    render was refused for good: the view now cuts a long message and stops before the limit,
    saying where the rest is; the archive keeps every byte."""
    from desk.archive.conversations import MESSAGE_CHARS, VIEW_BYTES
    from desk.gate.rules import TEXT_LIMIT

    huge = "x" * 1_000_000
    first = append_event(desk, "inbound", huge, session="big day", at="2026-11-29T10:00:00Z")
    for i in range(60):  # 60 messages of 15,000 characters: 900 KB, more than a view holds
        append_event(desk, "outbound", f"reply {i} " + "y" * 15_000, session="big day",
                     at=f"2026-11-29T11:{i:02d}:00Z")
    data = json.loads(run("conversations", "render", "--json").output)
    assert data["status"] == "committed", data
    path = desk.path(data["files"][0])
    view = path.read_bytes()
    assert VIEW_BYTES < TEXT_LIMIT and len(view) <= VIEW_BYTES
    text = view.decode()
    assert "x" * MESSAGE_CHARS in text and "x" * (MESSAGE_CHARS + 1) not in text
    assert f"_… {1_000_000 - MESSAGE_CHARS} more characters: `desk archive show {first['id']}`_" in text
    shown = text.count("> reply ")
    assert 0 < shown < 60
    assert text.rstrip().endswith(f"_{60 - shown} more messages of this day not shown: a view is at most "
                                  f"{VIEW_BYTES // 1024} KiB; the archive holds them all (`desk archive list "
                                  "--since 2026-11-29 --until 2026-11-30 --session 'big day'`)._")
    assert run("validate", "--all").exit_code == 0
    assert json.loads(run("conversations", "render", "--json").output)["status"] == "unchanged"


def test_a_view_shows_direction_controls_escaped(desk: DeskFolder, run: DeskRunner) -> None:
    """Issue 27.8: a message's U+202E (or any direction control or mark) reordered the view in a
    terminal or Markdown viewer; the view shows each as `<U+XXXX>`, the archive keeps the bytes."""
    controls = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
    append_event(desk, "inbound", f"send {controls} money", session="s1", actor=f"eve{controls}",
                 at="2026-11-29T10:00:00Z")
    assert run("conversations", "render").exit_code == 0
    view = desk.path("conversations/2026-11-29/s1.md").read_text()
    assert not any(c in view for c in controls), view
    shown = "".join(f"<U+{ord(c):04X}>" for c in controls)
    assert f"> send {shown} money" in view and f"**`eve{shown}`**" in view
    assert [e.record["content"] for e in iter_events(desk)] == [f"send {controls} money"]
    listed = run("archive", "list").output  # the archive's own listing shows them escaped too
    assert not any(c in listed for c in controls) and f"eve{shown}" in listed and f"send {shown[:40]}" in listed
