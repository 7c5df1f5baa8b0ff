"""NOW.md, the assistant's hot working note: `## Doing`, `## Blocked`, `## Next`, `## Reminders`.

docs/design.md §8.2: short, task-oriented, updated by the assistant during work (never by the digest).
Each change is one commit through the transaction, refused when NOW.md has a person's
uncommitted edits. A section can be targeted; the rest of the file is kept byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from desk.layout import NOW_FILE, DeskFolder
from desk.errors import RejectedError, UsageError
from desk.notes.files import read_for_change
from desk.text.escape import plain_text
from desk.transaction import commit_message, transaction
from desk.vocabulary import NOW_SECTIONS

TITLES = {name: name.capitalize() for name in NOW_SECTIONS}
MAX_BYTES = 16 * 1024  # a hot note is read at every wake-up; lasting facts belong in memory/
_HEADING = re.compile(r"^## +(.+?)\s*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")  # CommonMark's code fence: a `## ` inside is code


def _fence_after(line: str, fence: str | None) -> str | None:
    """The open code fence after `line`, given the one open before it (None: not in a fence)."""
    opened = _FENCE.match(line.rstrip("\n"))
    if fence is not None:
        closes = opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) \
            and not opened.group(2).strip()
        return None if closes else fence
    if opened and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
        return opened.group(1)
    return None


@dataclass
class NowNote:
    """NOW.md split into a preamble and `## ` sections (raw text kept, so edits stay surgical)."""

    preamble: str
    sections: list[tuple[str, str]] = field(default_factory=list)  # (heading line, raw body)

    @classmethod
    def parse(cls, text: str) -> NowNote:
        lines = text.splitlines(keepends=True)
        note = cls("")
        current: list[str] = []
        heading: str | None = None
        fence: str | None = None  # the open code fence: a person's NOW.md may quote Markdown
        for line in lines:
            was, fence = fence, _fence_after(line, fence)
            if was is not None or fence is not None:
                current.append(line)  # a fence line, or code inside one
            elif _HEADING.match(line.rstrip("\n")):
                if heading is None:
                    note.preamble = "".join(current)
                else:
                    note.sections.append((heading, "".join(current)))
                heading, current = line if line.endswith("\n") else line + "\n", []
            else:
                current.append(line)
        if heading is None:
            note.preamble = "".join(current)
        else:
            note.sections.append((heading, "".join(current)))
        return note

    def render(self) -> str:
        text = self.preamble + "".join(h + b for h, b in self.sections)
        return text.rstrip("\n") + "\n"

    def _find(self, section: str) -> int | None:
        for i, (heading, _body) in enumerate(self.sections):
            m = _HEADING.match(heading.rstrip("\n"))
            if m and m.group(1).strip().lower() == section:
                return i
        return None

    def body(self, section: str) -> str:
        i = self._find(section)
        return self.sections[i][1].strip("\n") if i is not None else ""

    def set_body(self, section: str, body: str) -> None:
        # A `## ` line inside a section's text would start a section of its own (two "Next"s):
        # demote it to a sub-heading so the note keeps its four sections.
        body = re.sub(r"(?m)^##(?=\s)", "###", body)
        fence: str | None = None
        for line in body.splitlines():
            fence = _fence_after(line, fence)
        if fence is not None:  # left open, it would swallow every later section: close it
            body = body.rstrip("\n") + "\n" + fence
        raw = "\n" + body.strip("\n") + "\n\n" if body.strip() else "\n"
        i = self._find(section)
        if i is not None:
            self.sections[i] = (self.sections[i][0], raw)
            return
        # A missing section goes back in its canonical place (before the next one that exists).
        later = [j for s in NOW_SECTIONS[NOW_SECTIONS.index(section) + 1:] if (j := self._find(s)) is not None]
        at = min(later) if later else len(self.sections)
        fence = None
        for line in (self.preamble + "".join(h + b for h, b in self.sections[:at])).splitlines():
            fence = _fence_after(line, fence)
        if fence is not None:  # a person's text left a fence open: the new heading would be code
            if at:
                self.sections[at - 1] = (self.sections[at - 1][0],
                                         self.sections[at - 1][1].rstrip("\n") + "\n" + fence + "\n\n")
            else:
                self.preamble = self.preamble.rstrip("\n") + "\n" + fence + "\n\n"
        if at == len(self.sections) and self.sections and not self.sections[-1][1].endswith("\n\n"):
            self.sections[-1] = (self.sections[-1][0], self.sections[-1][1].rstrip("\n") + "\n\n")
        self.sections.insert(at, (f"## {TITLES[section]}\n", raw))

    def to_json(self) -> dict[str, object]:
        return {"path": NOW_FILE, "text": self.render(),
                "sections": {name: self.body(name) for name in NOW_SECTIONS}}


@dataclass
class NowResult:
    status: str  # updated | unchanged
    section: str | None
    commit: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"status": self.status, "path": NOW_FILE, "section": self.section, "commit": self.commit}


def section_name(section: str | None) -> str | None:
    """`section` as NOW.md names it (`Doing` -> `doing`); UsageError naming the choices."""
    if section is None:
        return None
    name = section.strip().lower()
    if name not in NOW_SECTIONS:
        raise UsageError(f"--section {section!r}: choose one of {', '.join(NOW_SECTIONS)}")
    return name


def read_now(desk: DeskFolder) -> NowNote:
    data = desk.read_if_present(NOW_FILE)
    return NowNote.parse(data.decode("utf-8") if data is not None else "")


def set_now(desk: DeskFolder, text: str, *, section: str | None = None, actor: str = "assistant") -> NowResult:
    """Replace one section's text (empty clears it), or the whole note when no section is given.

    A line break other than `\n` (lone CR, U+2028, NEL, ...) becomes a space and other control
    characters are dropped (`desk.text.escape.plain_text`): only a newline starts a line.
    """
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
        where = f" {section}" if section else ""
        subject = f"now: {verb}{where}" if section else "now: replace the note"
        message = commit_message(subject, {"Desk-Op": "now", "Desk-Actor": actor,
                                           "Desk-Section": section})
        sha = tx.commit({NOW_FILE: new}, message)
    return NowResult("updated", section, sha)
