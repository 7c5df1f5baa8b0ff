"""A documented, deterministic token estimator that handles CJK text.

desk has no tokenizer dependency (no model, no network), so budgets are counted with a fixed rule
that leans slightly high for the BPE tokenizers assistants use today:

- each CJK ideograph, kana or hangul syllable counts 1 token (cl100k/o200k spend about 0.7 to 1.5
  tokens per Chinese character; 1 is the middle of that range, so budgets hold on either side);
- each run of ASCII letters and digits counts ceil(len / 4) tokens (the usual ~4 characters per
  English token), at least 1;
- each run of other letters (accented Latin, Cyrillic, ...) counts ceil(len / 3), at least 1;
- every other visible character (punctuation, symbols, emoji) counts 1; whitespace is free, except
  that each newline counts 1 (tokenizers spend tokens on line structure).

The same text always gives the same count on every machine: budgets, trimming and `desk stats`
figures are reproducible.
"""

from __future__ import annotations

import functools
import re

# Ideographs (CJK unified + extensions A, compatibility), kana, hangul, CJK/fullwidth punctuation
# handled separately below as symbols.
CJK_CLASS = ("\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
             "\U00020000-\U0002fa1f")
CJK_FIRST = "\u3040"  # the lowest character CJK_CLASS holds


@functools.cache
def _pieces() -> re.Pattern[str]:
    """The estimator's pattern, compiled on first use: its CJK ranges are slow for `re` to
    compile (a Python loop over 40,000 code points), which the pre-commit hook, importing this module
    through the memory index but never counting tokens, need not pay."""
    return re.compile(rf"(?P<cjk>[{CJK_CLASS}])|(?P<ascii>[A-Za-z0-9]+)|(?P<word>[^\W\d_{CJK_CLASS}]+)"
                      r"|(?P<nl>\n)|(?P<space>\s+)|(?P<other>.)", re.S)


@functools.cache
def _pieces_below_cjk() -> re.Pattern[str]:
    """The same pattern for a text with no character at or above U+3040, where no CJK range can
    match (`CJK_CLASS` starts there): without those ranges it compiles at once, and it cuts
    such a text into the same pieces (the `word` class differs only on CJK characters)."""
    return re.compile(r"(?P<ascii>[A-Za-z0-9]+)|(?P<word>[^\W\d_]+)|(?P<nl>\n)|(?P<space>\s+)|(?P<other>.)", re.S)


@functools.cache
def _counters() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str], dict[int, None]]:
    """The rule's pieces counted in C, for a text in which every letter and digit is ASCII
    (`_plain_tokens`): a greedy `[A-Za-z0-9]{1,4}` cuts a run of n letters and digits into
    ceil(n / 4) matches; a newline counts when it starts a whitespace run or follows a counted one
    (a run that starts with another space is one free piece, newlines included); every character
    that is neither an ASCII letter or digit nor whitespace counts 1 (punctuation, symbols, a dash:
    the rule's `other`, or `cjk` for the few such characters in its CJK ranges, 1 as well).
    The last pattern finds a letter or digit that is not ASCII (a word the rule counts by 3, a
    CJK character): such a text is counted piece by piece."""
    free = "".join(c for c in map(chr, range(128)) if c.isalnum() or c.isspace())
    return (re.compile(r"[A-Za-z0-9]{1,4}"), re.compile(r"(?<!\s)\n+"), re.compile(r"[^A-Za-z0-9\s]"),
            re.compile(r"[^\W\x00-\x7f]"), dict.fromkeys(map(ord, free)))


def _plain_tokens(text: str, ascii: bool) -> int:
    """`estimate_tokens` of a text whose letters and digits are all ASCII, without a Python step
    per piece (~3x faster: the context counts its sections' lines one by one)."""
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
