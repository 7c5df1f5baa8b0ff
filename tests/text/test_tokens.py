"""desk.text.tokens: the estimator's pattern for text below U+3040 counts what the full one counts."""

from __future__ import annotations

import re

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from desk.text import terms
from desk.text.normalize import normalize
from desk.text.tokens import CJK_CLASS, CJK_FIRST, estimate_tokens

# The estimator's rule with its one full pattern (the CJK ranges compiled), match by match.
_FULL = re.compile(rf"(?P<cjk>[{CJK_CLASS}])|(?P<ascii>[A-Za-z0-9]+)|(?P<word>[^\W\d_{CJK_CLASS}]+)"
                   r"|(?P<nl>\n)|(?P<space>\s+)|(?P<other>.)", re.S)


def full_count(text: str) -> int:
    total = 0
    for match in _FULL.finditer(text):
        kind = match.lastgroup
        if kind in ("cjk", "nl", "other"):
            total += 1
        elif kind == "ascii":
            total += (len(match.group()) + 3) // 4
        elif kind == "word":
            total += (len(match.group()) + 2) // 3
    return total


PIECES = ["SQLite", "wal_mode", "café", "naïve", "—", "ß", "İ", "Ωmega", "é1abc", "abcé", "٣", "①", "ﬁ",
          " ", "\n", " \n", "\t\n\n", "\r\n", "\u2028", "\u00a0", "\x1c", "_", "-", "🎉", "報告", "カタ", "한",
          "\u303f", "\u3040", "x" * 9]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=8)), max_size=24))
def test_every_text_counts_as_the_full_pattern_counts(parts: list[str]) -> None:
    text = "".join(parts)
    assert estimate_tokens(text) == full_count(text)


ASCII_PIECES = ["SQLite", "wal_mode", "x" * 9, "abcd", "abcde", "42", " ", "\n", " \n", "\n \n", "\t\n\n", "\r\n",
                "\x0b", "\x0c", "\x1c", "\x1f", "\x00", "\x7f", "_", "-", "#", "\\"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(ASCII_PIECES), st.text(alphabet=st.characters(max_codepoint=127),
                                                                    max_size=8)), max_size=40))
def test_an_ascii_text_counts_as_the_full_pattern_counts(parts: list[str]) -> None:
    """ASCII text is counted in C (`_ascii_tokens`), not piece by piece: the same count."""
    text = "".join(parts)
    assert text.isascii()
    assert estimate_tokens(text) == full_count(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(PIECES + ASCII_PIECES), st.text(max_size=8)), min_size=1, max_size=60))
def test_a_long_text_with_a_few_non_ascii_characters_counts_as_the_full_pattern_counts(parts: list[str]) -> None:
    """A long text whose letters and digits are all ASCII (MEMORY.md's lines have a dash) is
    counted in C; one with any other letter or digit piece by piece: the same count."""
    text = "".join(parts)
    text += "line of English text — with a dash,\n  indented\n\n" * max(1, (300 - len(text)) // 45 + 1)
    assert estimate_tokens(text) == full_count(text)
    assert estimate_tokens(text + "x\n") == full_count(text + "x\n")


def test_ascii_examples() -> None:
    assert estimate_tokens("abcd abcde") == 1 + 2
    assert estimate_tokens("a\n\nb") == 4  # two newlines after a letter: both count
    assert estimate_tokens("a \n\nb") == 2  # a run that starts with a space is free, newlines too
    assert estimate_tokens("a\r\nb") == 2  # CRLF: the \r starts the run
    assert estimate_tokens("\n") == 1 and estimate_tokens("") == 0
    assert estimate_tokens("x_y-z\x00") == 6  # "_", "-" and a NUL are one token each


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=ord(CJK_FIRST) - 1), max_size=60))
def test_below_u3040_the_words_are_the_full_pattern_s_words(text: str) -> None:
    """query_terms and text_terms cut such a text with `[^\\W_]+` instead of the CJK-aware patterns
    (they look at the normalised text: NFKC makes some characters below U+3040 CJK ones)."""
    normalized = normalize(text)
    assume(not normalized or max(normalized) < CJK_FIRST)
    assert [("", w) for w in terms._words_below_cjk().findall(normalized)] == terms._terms().findall(normalized)
    assert terms._words_below_cjk().findall(normalized) == terms._words_re().findall(normalized)


def test_a_character_that_normalises_into_cjk_is_searched_as_cjk() -> None:
    assert terms.text_terms("⼀") == ["一"]  # U+2F00 (a Kangxi radical) is U+4E00 after NFKC
    assert terms.query_terms("⼀ café") == ["café", "一"]


def test_examples() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("- [db](memory/db.md) — We chose SQLite.\n") == full_count(
        "- [db](memory/db.md) — We chose SQLite.\n")
    assert estimate_tokens("naïve café — 报告") == full_count("naïve café — 报告")
    assert estimate_tokens("a \nb\n\nc") == 5  # the newline after a space is part of the space: free
