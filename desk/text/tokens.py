"""A deterministic token estimator that handles CJK text (no tokenizer dependency), leaning slightly
high: a CJK character counts 1, a run of ASCII letters and digits ceil(len / 4), a run of other
letters ceil(len / 3), any other visible character and each newline 1, other whitespace nothing.
"""

from __future__ import annotations

import functools
import re

# Ideographs (CJK unified + extensions A, compatibility), kana, hangul (CJK punctuation: symbols).
CJK_CLASS = ("\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
             "\U00020000-\U0002fa1f")
CJK_FIRST = "\u3040"  # the lowest character CJK_CLASS holds


@functools.cache
def _pieces() -> re.Pattern[str]:
    """The estimator's pattern, compiled on first use: its CJK ranges are slow for `re` to compile."""
    return re.compile(rf"(?P<cjk>[{CJK_CLASS}])|(?P<ascii>[A-Za-z0-9]+)|(?P<word>[^\W\d_{CJK_CLASS}]+)"
                      r"|(?P<nl>\n)|(?P<space>\s+)|(?P<other>.)", re.S)


@functools.cache
def _pieces_below_cjk() -> re.Pattern[str]:
    """`_pieces` for a text below U+3040 (where `CJK_CLASS` starts), without the CJK ranges."""
    return re.compile(r"(?P<ascii>[A-Za-z0-9]+)|(?P<word>[^\W\d_]+)|(?P<nl>\n)|(?P<space>\s+)|(?P<other>.)", re.S)


@functools.cache
def _counters() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str], dict[int, None]]:
    """The rule counted in C for a text whose letters and digits are ASCII: `{1,4}` runs, newlines
    that start a whitespace run, other non-space characters; the last pattern finds a letter or
    digit that is not ASCII (such a text is counted piece by piece)."""
    free = "".join(c for c in map(chr, range(128)) if c.isalnum() or c.isspace())
    return (re.compile(r"[A-Za-z0-9]{1,4}"), re.compile(r"(?<!\s)\n+"), re.compile(r"[^A-Za-z0-9\s]"),
            re.compile(r"[^\W\x00-\x7f]"), dict.fromkeys(map(ord, free)))


def _plain_tokens(text: str, ascii: bool) -> int:
    """`estimate_tokens` of a text whose letters and digits are all ASCII, without a Python step per piece."""
    chunks, newlines, others, _, free = _counters()
    other = len(text.translate(free)) if ascii else len(others.findall(text))
    return len(chunks.findall(text)) + sum(map(len, newlines.findall(text))) + other


def estimate_tokens(text: str) -> int:
    """The estimated token count of `text` (see the module docstring for the rule)."""
    if text.isascii():
        return _plain_tokens(text, True)
    if _counters()[3].search(text) is None:
        return _plain_tokens(text, False)
    total = 0
    pieces = _pieces_below_cjk() if max(text) < CJK_FIRST else _pieces()
    for match in pieces.finditer(text):
        kind = match.lastgroup
        if kind == "cjk" or kind == "nl" or kind == "other":
            total += 1
        elif kind == "ascii":
            total += (len(match.group()) + 3) // 4
        elif kind == "word":
            total += (len(match.group()) + 2) // 3
    return total
