"""What a secret looks like once cheaply decoded (percent-encoding, base64 runs, HTTP Basic
credentials), with offsets into the text given, so a finding maps back to its characters."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

# A percent escape of a printable ASCII character: a secret is ASCII, and a multi-byte escape
# decodes to a character no pattern matches.
_PERCENT = re.compile(r"%(2[0-9A-Fa-f]|[3-6][0-9A-Fa-f]|7[0-9A-Ea-e])")
# A run of base64 (standard or URL-safe alphabet) long enough to hold the shortest token a
# pattern knows once encoded; the view joining wrapped lines rejoins a run an encoder wrapped.
BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{16,}={0,2}")  # tried where a run starts
_HEX = re.compile(r"[0-9a-fA-F\-]+")
# `Authorization: Basic <base64 of user:password>`: short enough to miss the run above.
_BASIC = re.compile(r"(?i:basic)[ \t]+([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=_\-])")
_CREDENTIALS = re.compile(r"([^:\s]{0,128}):(\S{3,128})")


def percent_decoded(text: str) -> tuple[str, Callable[[int], int]] | None:
    """`text` with its printable ASCII percent escapes decoded (`token%3Dghp_...` reads
    `token=ghp_...`), and a map from each decoded offset to the text's; None when there is none."""
    if "%" not in text or not _PERCENT.search(text):
        return None
    parts: list[str] = []
    origins: list[int] = []
    pos = 0
    for match in _PERCENT.finditer(text):
        parts.append(text[pos:match.start()])
        origins.extend(range(pos, match.start()))
        parts.append(chr(int(match.group(1), 16)))
        origins.append(match.start())
        pos = match.end()
    parts.append(text[pos:])
    origins.extend(range(pos, len(text)))
    return "".join(parts), origins.__getitem__


def base64_texts(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, decoded) for each base64 run in `text` that decodes to printable text (a run
    glued to a word tried from each of its first four characters; hex and one-case runs skipped)."""
    for match in BASE64_RUN.finditer(text):
        run = match.group()
        if _HEX.fullmatch(run) or run.islower() or run.isupper():
            continue  # base64 of text mixes capitals and small letters; names and paths do not
        import base64  # here: most texts hold no run to decode (the commit-msg hook's process)
        import binascii

        body = run.rstrip("=").replace("-", "+").replace("_", "/")
        for skip in range(4):
            part = body[skip:]
            if len(part) % 4 == 1:
                continue
            try:
                decoded = base64.b64decode(part + "=" * (-len(part) % 4), validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError, ValueError):
                continue
            if decoded.isprintable() or _printable_lines(decoded):
                yield match.start() + skip, match.end(), decoded
                break


def basic_credentials(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, password) for each `Basic <base64 of user:password>` in `text` (the scheme in
    any case but mixed within its letters after the first: `Basic`, `basic`, `BASIC`)."""
    if "asic" not in text and "ASIC" not in text:
        return
    import base64
    import binascii

    for match in _BASIC.finditer(text):
        try:
            decoded = base64.b64decode(match.group(1), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        credentials = _CREDENTIALS.fullmatch(decoded)
        if credentials is not None:
            yield match.start(1), match.end(1), credentials.group(2)


def _printable_lines(text: str) -> bool:
    return all(line.isprintable() for line in text.splitlines())
