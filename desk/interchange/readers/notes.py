"""Shared pieces of the Markdown readers: bullets of a MEMORY.md, and a note as a memory item."""

from __future__ import annotations

import re
from dataclasses import dataclass

from desk.interchange.foreign import ForeignNote
from desk.interchange.items import MemoryItem, derive_triggers, one_line, tag_list
from desk.formats.memory_file import name_problem
from desk.vocabulary import MEMORY_TYPES

# A section heading's words that say what its bullets are (OpenClaw's MEMORY.md groups them).
_SECTION_TYPES = (
    ("preference", ("prefer", "偏好", "喜欢", "style", "taste")),
    ("decision", ("decision", "decided", "决定", "决策")),
    ("convention", ("convention", "rule", "规则", "约定", "规范")),
    ("pitfall", ("pitfall", "mistake", "lesson", "教训", "坑", "错误")),
    ("reference", ("reference", "link", "参考", "资源")),
)
# Foreign note types (basic-memory's `type`, mem0 categories) that have a desk counterpart.
FOREIGN_TYPES = {"note": "fact", "person": "fact", "project": "fact", "memory": "fact",
                 "preferences": "preference", "decisions": "decision", "rules": "convention",
                 "rule": "convention", "lesson": "pitfall", "link": "reference"}


@dataclass(frozen=True)
class Bullet:
    line: int
    section: str
    text: str


def bullets(text: str) -> list[Bullet]:
    """Top-level `- ` / `* ` items with their indented continuation, and the heading above them."""
    found: list[Bullet] = []
    section = ""
    current: list[str] = []
    start = 0

    def close() -> None:
        if current and "\n".join(current).strip():
            found.append(Bullet(start, section, "\n".join(current).strip()))
        current.clear()

    for number, line in enumerate(text.split("\n"), 1):
        item = re.match(r"^[-*+]\s+(.*)$", line)
        heading = re.match(r"^#{1,6}\s+(.*)$", line)
        if item:
            close()
            current.append(item.group(1))
            start = number
        elif heading:
            close()
            section = heading.group(1).strip()
        elif current and line.strip() and line[:1].isspace():
            current.append(line.strip())  # an indented continuation or sub-item
        else:
            close()
    close()
    return found


def section_type(section: str) -> str:
    lowered = section.casefold()
    for desk_type, words in _SECTION_TYPES:
        if any(w in lowered for w in words):
            return desk_type
    return "fact"


def desk_type(value: object, default: str = "fact") -> str:
    """A foreign type word as a desk type: desk's own, a known counterpart, else `default`."""
    if isinstance(value, str):
        word = value.strip().casefold()
        if word in MEMORY_TYPES:
            return word
        return FOREIGN_TYPES.get(word, default)
    return default


def note_memory(note: ForeignNote, origin: str, type_: str, title: str) -> MemoryItem:
    """A note as one memory: desk's own fields when the note carries them (a desk export)."""
    meta = note.meta
    description = meta.get("description") if isinstance(meta.get("description"), str) else None
    description = one_line(description or "") or one_line(note.body) or one_line(title)
    name = meta.get("name")
    triggers = meta.get("triggers")
    own = isinstance(name, str) and name_problem(name) is None and meta.get("type") in MEMORY_TYPES
    if own and triggers is None:
        triggers = []  # a desk memory file without triggers: none, as desk wrote it
    if not (isinstance(triggers, list) and all(isinstance(t, str) for t in triggers)):
        triggers = derive_triggers(tag_list(meta.get("tags")), title, description)
    importance = meta.get("importance")
    return MemoryItem(
        title=title, body=note.body, type=type_, description=description, origin=origin,
        triggers=list(triggers),
        importance=importance if isinstance(importance, int) and not isinstance(importance, bool)
        and 1 <= importance <= 5 else None,
        name=name if isinstance(name, str) and name_problem(name) is None else None)
