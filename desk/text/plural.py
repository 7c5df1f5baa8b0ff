"""Counts in human output: `1 file`, `2 files` (never `1 files` or `file(s)`)."""

from __future__ import annotations


def counted(n: int, word: str, plural: str | None = None) -> str:
    """`n` with its noun in the right number; `plural` for an irregular one (`memories`)."""
    return f"{n} {word if n == 1 else plural or word + 's'}"
