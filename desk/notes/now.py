"""NOW.md, the assistant's working note (`## Doing`, `## Blocked`, `## Next`, `## Reminders`):
one commit per change, refused over a person's uncommitted edit; the rest kept byte for byte."""

from __future__ import annotations

import re
from dataclasses import dataclass

from desk.layout import NOW_FILE, DeskFolder
from desk.errors import RejectedError, UsageError
from desk.formats.now import MAX_BYTES, NowNote, section_name
from desk.notes.files import read_for_change
from desk.text.escape import plain_text
from desk.transaction import commit_message, transaction


@dataclass
class NowResult:
    status: str  # updated | unchanged
    section: str | None
    commit: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"status": self.status, "path": NOW_FILE, "section": self.section, "commit": self.commit}


def read_now(desk: DeskFolder) -> NowNote:
    data = desk.read_if_present(NOW_FILE)
    return NowNote.parse(data.decode("utf-8") if data is not None else "")


def set_now(desk: DeskFolder, text: str, *, section: str | None = None, actor: str = "assistant") -> NowResult:
    """Replace one section's text (empty clears it), or the whole note; a line break other than `\\n`
    becomes a space (`desk.text.escape.plain_text`)."""
    name = section_name(section)
    text = plain_text(text, breaks=" ")
    if name is None and not text.strip():
        raise UsageError("refusing to empty NOW.md; clear one section with --section NAME ''")

    def change(note: NowNote) -> str:
        if name is None:
            return text.rstrip("\n") + "\n"
        note.set_body(name, text)
        return note.render()

    return _update(desk, change, name, "set", actor)


def append_now(desk: DeskFolder, text: str, *, section: str = "doing", actor: str = "assistant") -> NowResult:
    """Add TEXT at the end of a section (default Doing); one line becomes a `- ` list item."""
    name = section_name(section) or "doing"
    text = plain_text(text, breaks=" ")  # a CR or U+2028 in the text must not start a line
    if not text.strip():
        raise UsageError("nothing to append: the text is empty")
    item = text.strip("\n")
    if "\n" not in item and not re.match(r"^\s*([-*+]|\d+\.)\s", item):
        item = f"- {item}"

    def change(note: NowNote) -> str:
        current = note.body(name)
        note.set_body(name, f"{current}\n{item}" if current else item)
        return note.render()

    return _update(desk, change, name, "append", actor)


def _update(desk: DeskFolder, change: object, section: str | None, verb: str, actor: str) -> NowResult:
    with transaction(desk) as tx:
        old = read_for_change(desk, NOW_FILE) or b""  # a link refused before it reads as an edit
        tx.require_clean([NOW_FILE])
        new = change(NowNote.parse(old.decode("utf-8", "replace"))).encode()  # type: ignore[operator]
        if new == old:
            return NowResult("unchanged", section)
        if len(new) > MAX_BYTES:
            raise RejectedError(f"{NOW_FILE} would be {len(new)} bytes; the limit is {MAX_BYTES}",
                                hint="keep it a short working note: trim done items, move lasting "
                                     "facts to memory with `desk remember`")
        subject = f"now: {verb} {section}" if section else "now: replace the note"
        sha = tx.commit({NOW_FILE: new}, commit_message(subject, {"Desk-Op": "now", "Desk-Actor": actor,
                                                                  "Desk-Section": section}))
    return NowResult("updated", section, sha)
