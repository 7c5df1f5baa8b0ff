"""Text normalisation shared by the write gate and recall: NFKC, casefold, collapsed whitespace."""

from __future__ import annotations

import unicodedata


def normalize(text: str) -> str:
    """NFKC, casefold, every run of whitespace one space, trimmed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def content_key(text: str) -> str:
    """A fingerprint of `text` that ignores case, width and spacing differences."""
    import hashlib  # here: the pre-commit hook never keys a body

    return hashlib.sha256(normalize(text).encode()).hexdigest()
