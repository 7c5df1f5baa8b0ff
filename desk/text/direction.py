"""Invisible bidirectional controls: text that a reviewer reads in one order and a model in another.

The embedding, override and isolate controls (U+202A-U+202E, U+2066-U+2069) reorder what is
displayed, not what is stored ("Trojan Source", CVE-2021-42574); ordinary right-to-left text needs
none of them. Searched on the UTF-8 bytes, so a file is not decoded for the check.
"""

from __future__ import annotations

import re

NAMES = {
    "\u202a": "LEFT-TO-RIGHT EMBEDDING", "\u202b": "RIGHT-TO-LEFT EMBEDDING",
    "\u202c": "POP DIRECTIONAL FORMATTING", "\u202d": "LEFT-TO-RIGHT OVERRIDE",
    "\u202e": "RIGHT-TO-LEFT OVERRIDE", "\u2066": "LEFT-TO-RIGHT ISOLATE",
    "\u2067": "RIGHT-TO-LEFT ISOLATE", "\u2068": "FIRST STRONG ISOLATE",
    "\u2069": "POP DIRECTIONAL ISOLATE",
}
_CONTROLS = re.compile(b"\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]")
# What `visible` escapes: the controls and the marks (LRM, RLM, ALM), which still hide in a terminal.
_SHOWN = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")


def first_control(data: bytes) -> tuple[int, int, str] | None:
    """The first direction control in UTF-8 `data`: its 1-based line and column (in characters)
    and the character; None when there is none."""
    found = _CONTROLS.search(data)
    if found is None:
        return None
    start = data.rfind(b"\n", 0, found.start()) + 1
    column = len(data[start:found.start()].decode("utf-8", "replace")) + 1
    return data.count(b"\n", 0, found.start()) + 1, column, found.group().decode()


def describe(char: str) -> str:
    """`U+202E RIGHT-TO-LEFT OVERRIDE`."""
    return f"U+{ord(char):04X} {NAMES[char]}"


def visible(text: str) -> str:
    """`text` with each direction control or mark shown as `<U+202E>`, displayed in stored order."""
    return _SHOWN.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)
