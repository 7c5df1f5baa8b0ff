"""NOW.md's format: `## Doing`, `## Blocked`, `## Next`, `## Reminders`, each a section of free text;
a section can be changed, the rest of the file is kept byte for byte."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from desk.errors import UsageError
from desk.layout import NOW_FILE
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


def _open_fence(text: str) -> str | None:
    """The code fence `text` leaves open, if any."""
    fence: str | None = None
    for line in text.splitlines():
        fence = _fence_after(line, fence)
    return fence


@dataclass
class NowNote:
    """NOW.md split into a preamble and `## ` sections (raw text kept, so edits stay surgical)."""

    preamble: str
    sections: list[tuple[str, str]] = field(default_factory=list)  # (heading line, raw body)

    @classmethod
    def parse(cls, text: str) -> NowNote:
        parts: list[tuple[str, list[str]]] = [("", [])]  # the preamble, then (heading line, body lines)
        fence: str | None = None  # the open code fence: a person's NOW.md may quote Markdown
        for line in text.splitlines(keepends=True):
            was, fence = fence, _fence_after(line, fence)
            if was is None and fence is None and _HEADING.match(line.rstrip("\n")):
                parts.append((line if line.endswith("\n") else line + "\n", []))
            else:
                parts[-1][1].append(line)  # text, a fence line, or code inside one
        return cls("".join(parts[0][1]), [(heading, "".join(body)) for heading, body in parts[1:]])

    def render(self) -> str:
        text = self.preamble + "".join(h + b for h, b in self.sections)
        return text.rstrip("\n") + "\n"

    def _find(self, section: str) -> int | None:
        return next((i for i, (heading, _body) in enumerate(self.sections)
                     if (m := _HEADING.match(heading.rstrip("\n"))) and m.group(1).strip().lower() == section), None)

    def body(self, section: str) -> str:
        i = self._find(section)
        return self.sections[i][1].strip("\n") if i is not None else ""

    def set_body(self, section: str, body: str) -> None:
        # A `## ` line inside a section's text would start a section of its own (two "Next"s):
        # demote it to a sub-heading so the note keeps its four sections.
        body = re.sub(r"(?m)^##(?=\s)", "###", body)
        fence = _open_fence(body)
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
        fence = _open_fence(self.preamble + "".join(h + b for h, b in self.sections[:at]))
        if fence is not None:  # a person's text left a fence open: the new heading would be code
            if at:
                self.sections[at - 1] = (self.sections[at - 1][0],
                                         self.sections[at - 1][1].rstrip("\n") + "\n" + fence + "\n\n")
            else:
                self.preamble = self.preamble.rstrip("\n") + "\n" + fence + "\n\n"
        if at == len(self.sections) and self.sections and not self.sections[-1][1].endswith("\n\n"):
            self.sections[-1] = (self.sections[-1][0], self.sections[-1][1].rstrip("\n") + "\n\n")
        self.sections.insert(at, (f"## {TITLES[section]}\n", raw))

    def section(self, label: str) -> str | None:
        """The raw text of section `label` as a merge case names it (`preamble`: before the first)."""
        if label == "preamble":
            return self.preamble
        return next((body for heading, body in self.sections if heading_key(heading) == label), None)

    def to_json(self) -> dict[str, object]:
        return {"path": NOW_FILE, "text": self.render(),
                "sections": {name: self.body(name) for name in NOW_SECTIONS}}


def heading_key(heading: str) -> str:
    """A section's heading line as a merge case names it (`## Doing` -> `doing`)."""
    return heading.strip().lower().lstrip("# ").strip()


def section_name(section: str | None) -> str | None:
    """`section` as NOW.md names it (`Doing` -> `doing`); UsageError naming the choices."""
    if section is None:
        return None
    name = section.strip().lower()
    if name not in NOW_SECTIONS:
        raise UsageError(f"--section {section!r}: choose one of {', '.join(NOW_SECTIONS)}")
    return name
