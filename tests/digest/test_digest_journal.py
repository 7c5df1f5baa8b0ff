"""The journal renderer as a pure function: deterministic, capped, narrative kept across reruns."""

from __future__ import annotations

import datetime as dt

import pytest

from desk.errors import RejectedError
from desk.digest.journal import MAX_ITEMS, check_narrative, existing_narrative, render_journal

DAY = dt.date(2026, 11, 29)


def event(i: int, kind: str = "inbound", **fields: object) -> dict[str, object]:
    return {"id": f"e{i:05d}", "at": f"2026-11-29T{8 + i // 3600 % 12:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
            "kind": kind, "session": fields.pop("session", "s1"), "content": f"message {i}", **fields}


def test_same_inputs_same_bytes_and_sections() -> None:
    events = [event(1), event(2, "fact", content="Use WAL.",
                              payload={"kind": "pitfall", "importance": 4, "key": "storage.mode"}),
              event(3, "failure", content="disk\nfull", session=None),
              event(4, "fact", content="x", payload={"kind": "mood", "importance": 4})]
    first = render_journal(DAY, events)
    assert first == render_journal(DAY, list(events))
    text = first.decode()
    assert text.startswith("# Journal 2026-11-29\n")
    assert "- 4 events in 1 session, 08:00–08:00 UTC" in text
    assert "## Pitfalls\n\n- 08:00 **storage.mode** Use WAL. _(importance 4, `e00002`)_" in text
    assert "## Failures\n\n- 08:00: disk full" in text
    assert "1 fact event without a valid kind" in text
    # The day's commits are named by the command that lists them, never copied from git history.
    assert ("## Memory and mistake changes\n\n- `git log --since=2026-11-29T00:00:00Z "
            "--until=2026-11-29T23:59:59Z -- memory/ MISTAKES.md`") in text
    assert "## Decisions" not in text and "## Narrative" not in text


def test_long_sections_are_capped() -> None:
    events = [event(i, "failure") for i in range(MAX_ITEMS + 7)]
    text = render_journal(DAY, events).decode()
    assert text.count("\n- 0") + text.count("\n- 1") >= MAX_ITEMS
    assert "… and 7 more failures" in text


def test_narrative_round_trips_even_with_its_own_headings() -> None:
    narrative = "A long day.\n\n## Overview\n\nThe summary has its own overview.\n"
    text = render_journal(DAY, [event(1)], narrative)
    assert existing_narrative(text) == narrative
    assert existing_narrative(render_journal(DAY, [event(1)])) is None
    assert existing_narrative(None) is None


def test_check_narrative_refuses_bad_summaries() -> None:
    assert check_narrative(b"  Fine.\n\n") == "Fine.\n"
    for bad in (b"", b"   \n", b"\xff\xfe", b"a\0b", b"x" * 20000):
        with pytest.raises(RejectedError):
            check_narrative(bad)


def test_notes_are_listed_one_line_each_and_long_ones_are_cut() -> None:
    from desk.digest.journal import NOTE_CHARS

    long = "word " * NOTE_CHARS
    events = [event(1, "note", content="# 2026-11-29\n\n- DNS pending.\r\n- Review ## desk: AGENTS.md"),
              event(2, "note", content=long), event(3, "note", content="  "), event(4, content="not a note")]
    text = render_journal(DAY, events).decode()
    notes = text[text.index("## Notes\n"):].split("\n\n")[1].split("\n")
    assert notes[0] == "- 08:00: # 2026-11-29 - DNS pending. - Review ## desk: AGENTS.md"
    assert len(notes[1]) <= len("- 08:00: ") + NOTE_CHARS and notes[1].endswith("…") and len(notes[1]) > 400
    assert len(notes) == 2 and "not a note" not in text[text.index("## Notes"):]
    assert "## Notes" not in render_journal(DAY, [event(1)]).decode()
