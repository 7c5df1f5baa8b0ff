"""desk.text.direction: the nine invisible direction controls, found on the bytes with their place."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from desk.text.direction import NAMES, describe, first_control


@pytest.mark.parametrize("char", sorted(NAMES))
def test_each_control_is_found_at_its_line_and_column(char: str) -> None:
    data = f"first line\nab报{char}c\n".encode()
    assert first_control(data) == (2, 4, char)
    assert describe(char).startswith(f"U+{ord(char):04X} ")


@pytest.mark.parametrize("text", [
    "plain text\n",
    "مرحبا بالعالم and English mixed\n",  # ordinary right-to-left text orders itself
    "שלום \u200f(mark)\u200e world\n",  # the marks move nothing: not counted
    "zero\u200bwidth and \u2060 joiner\n",
    "\u2028\u2029\u2065\u206a\u202f\n",  # neighbours of the two ranges
])
def test_text_without_controls_passes(text: str) -> None:
    assert first_control(text.encode()) is None


@given(st.text(), st.sampled_from(sorted(NAMES)), st.text())
def test_the_first_control_anywhere_is_found(before: str, char: str, after: str) -> None:
    text = before + char + after
    expected = next(i for i, c in enumerate(text) if c in NAMES)
    line = text.count("\n", 0, expected) + 1
    column = expected - (text.rfind("\n", 0, expected) + 1) + 1
    data = text.encode("utf-8", "surrogatepass")
    assert first_control(data) == (line, column, text[expected])
