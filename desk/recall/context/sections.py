"""A `desk context` Section and how it is trimmed to its budget: whatever is trimmed is named (a
`[desk context: …]` note and `left_out`), never dropped silently. Text arrives escaped."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from desk.text.tokens import estimate_tokens

_IMPORTANCE = re.compile(r"importance\W{0,3}([1-5])", re.I)
_ENTRY = "#### "  # a MISTAKES.md `## ` entry once escaped (`markdown_block` demotes two levels)


@dataclass(slots=True)
class Section:
    """One section: its text within its budget, what was left out, its sources (set while trimming)."""

    key: str
    label: str
    path: str | None
    text: str
    budget: int
    left_out: list[str] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)
    # (text, its tokens): `text` is reassigned while trimming
    _counted: tuple[str, int] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def tokens(self) -> int:
        counted = self._counted
        if counted is None or counted[0] is not self.text:
            counted = self._counted = (self.text, estimate_tokens(self.text))
        return counted[1]

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "label": self.label, "path": self.path, "sources": self.sources,
                "tokens": self.tokens, "budget": self.budget, "trimmed": bool(self.left_out),
                "left_out": self.left_out, "text": self.text}


def _note(text: str) -> str:
    return f"[desk context: {text}]"


def _trim_lines(key: str, label: str, shown: str, text: str, limit: int) -> Section:
    """Keep the first lines that fit; say which lines were left out. The lines are taken one at a
    time: MEMORY.md of 10,000 memories is 600 kB, and its budget shows a few dozen lines."""
    section = Section(key, label, shown, text, limit)
    if _fits(text, limit):
        return section
    body = text.rstrip("\n")
    total = body.count("\n") + 1

    def note(count: int) -> str:
        return _note(f"{label} trimmed to its budget of {limit} tokens: lines {count + 1}-{total} "
                     f"of {total} left out; open {shown} for the rest")

    room = limit - estimate_tokens(note(total)) - 1
    kept: list[str] = []
    start = 0
    while start >= 0:
        end = body.find("\n", start)
        line = body[start:] if end < 0 else body[start:end]
        room -= estimate_tokens(line) + 1
        if room < 0:
            break
        kept.append(line)
        start = end + 1 if end >= 0 else -1
    section.text = "\n".join([*kept, note(len(kept))]) + "\n"
    section.left_out = [f"lines {len(kept) + 1}-{total}"]
    tokens = estimate_tokens(section.text)
    if tokens > limit:
        section.text, section.left_out = "", ["the whole file"]
    else:
        section._counted = (section.text, tokens)
    return section


def _fits(text: str, limit: int, chunk: int = 8192) -> bool:
    """`estimate_tokens(text) <= limit`, counted in pieces that stop once over the limit. Pieces
    end after a newline that follows a non-space character, so their counts add up to the whole's."""
    total, start = 0, 0
    while start < len(text):
        end = text.find("\n", start + chunk)
        while end > 0 and text[end - 1].isspace():
            end = text.find("\n", end + 1)
        end = len(text) if end < 0 else end + 1
        total += estimate_tokens(text[start:end])
        if total > limit:
            return False
        start = end
    return total <= limit


def _trim_entries(key: str, label: str, shown: str, text: str, limit: int, query: str) -> Section:
    """MISTAKES.md: keep the highest-value `## ` entries that fit: `importance: N`, then the query
    terms shared, then the newest."""
    section = Section(key, label, shown, text, limit)
    if estimate_tokens(text) <= limit:
        return section
    from desk.text.terms import text_terms  # only when MISTAKES.md is over its budget

    parts = re.split(f"(?m)^(?={_ENTRY})", text)
    preamble, entries = (parts[0], parts[1:]) if not parts[0].startswith(_ENTRY) else ("", parts)
    wanted = set(text_terms(query))
    ranked = sorted(range(len(entries)), key=lambda i: (
        -_importance(entries[i]), -len(wanted.intersection(text_terms(entries[i]))), -i))
    chosen: set[int] = set()
    for i in ranked:
        trial = chosen | {i}
        if estimate_tokens(_assemble(preamble, entries, trial, label)) <= limit:
            chosen = trial
    section.left_out = [_title(entries[i]) for i in range(len(entries)) if i not in chosen]
    body = _assemble(preamble, entries, chosen, label)
    if estimate_tokens(body) > limit:
        body, section.left_out = "", ["the whole file"]
    section.text = body
    return section


def _importance(entry: str) -> int:
    match = _IMPORTANCE.search(entry)
    return int(match.group(1)) if match else 0


def _title(entry: str) -> str:
    return entry.split("\n", 1)[0].removeprefix(_ENTRY).strip()


def _assemble(preamble: str, entries: list[str], chosen: set[int], label: str) -> str:
    left = [_title(e) for i, e in enumerate(entries) if i not in chosen]
    text = preamble + "".join(entries[i] for i in sorted(chosen))
    if left:
        text = text.rstrip("\n") + "\n\n" + _note(
            f"{label} trimmed to its budget: {len(left)} lower-value "
            f"{'entry' if len(left) == 1 else 'entries'} left out: " + _some(left, "; ")) + "\n"
    return text


def _some(names: list[str], sep: str, most: int = 6) -> str:
    """At most `most` names and a count of the rest: a trim note must not outgrow its budget."""
    shown = sep.join(names[:most])
    return shown + (f"{sep}and {len(names) - most} more" if len(names) > most else "")
