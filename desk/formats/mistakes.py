"""MISTAKES.md's format: entries `## M-0001 · 2026-01-02` with What, Context, Cause, Avoid and an
optional link to the memory that fixes the behaviour; anything else is left alone."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from desk.layout import MEMORY_DIR
from desk.text.normalize import normalize

FIELDS = ("what", "context", "cause", "avoid")
MAX_FIELD = 1000
_HEADING = re.compile(r"^## (M-\d{4,})\s*(?:·\s*(\d{4}-\d{2}-\d{2}))?.*$")
_FIELD = re.compile(r"^- \*{0,2}(What|Context|Cause|Avoid|Memory):\*{0,2}\s*(.*)$", re.IGNORECASE)
_LINK = re.compile(r"^\[([^\]]+)\]\([^)]*\)$")


@dataclass(frozen=True)
class Mistake:
    id: str
    date: str | None
    what: str
    context: str
    cause: str
    avoid: str
    memory: str | None
    line: int

    def key(self) -> tuple[str, ...]:
        return tuple(normalize(getattr(self, f)) for f in FIELDS)

    def render(self) -> str:
        lines = [f"## {self.id} · {self.date}", "",
                 f"- **What:** {self.what}", f"- **Context:** {self.context}",
                 f"- **Cause:** {self.cause}", f"- **Avoid:** {self.avoid}"]
        if self.memory:
            lines.append(f"- **Memory:** [{self.memory}]({MEMORY_DIR}/{self.memory}.md)")
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def parse_mistakes(text: str) -> list[Mistake]:
    """The entries of MISTAKES.md, in file order (the preamble and stray text are ignored)."""
    found: list[Mistake] = []
    current: dict[str, str] | None = None
    head: tuple[str, str | None, int] = ("", None, 0)

    def close() -> None:
        if current is not None:
            memory = current.get("memory")
            if memory and (m := _LINK.match(memory)):
                memory = m.group(1)
            found.append(Mistake(head[0], head[1], current.get("what", ""), current.get("context", ""),
                                 current.get("cause", ""), current.get("avoid", ""), memory or None,
                                 head[2]))

    for number, line in enumerate(text.splitlines(), 1):
        if m := _HEADING.match(line):
            close()
            current, head = {}, (m.group(1), m.group(2), number)
        elif line.startswith("## "):
            close()
            current = None
        elif current is not None and (f := _FIELD.match(line)):
            current[f.group(1).lower()] = f.group(2).strip()
    close()
    return found


def relink_mistakes(text: str, old: str, new: str) -> str | None:
    """MISTAKES.md `text` with every link to memory `old` pointing at `new`, or None when none links to it."""
    lines = text.splitlines(keepends=True)
    changed = False
    for i, line in enumerate(lines):
        f = _FIELD.match(line.rstrip("\r\n"))
        if f and f.group(1).lower() == "memory" and (m := _LINK.match(f.group(2).strip())) \
                and m.group(1) == old:
            ending = line[len(line.rstrip("\r\n")):]
            lines[i] = f"{line[:f.start(2)]}[{new}]({MEMORY_DIR}/{new}.md){ending}"
            changed = True
    return "".join(lines) if changed else None
