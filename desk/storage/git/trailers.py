"""Commit message trailers (`Key: value` lines at a message's end), found as git finds them."""

from __future__ import annotations

import re

_SPACE = " \t\n\v\f\r"  # C's isspace(), which git uses: never Unicode spaces
_KEY = re.compile(r"(?:[A-Za-z0-9-]+[ \t]*)?:")  # a key (letters, digits, `-`), spaces, the colon
_COMMENT = "#"
_SCISSORS = "# ------------------------ >8 ------------------------"
_GIT_PREFIXES = ("Signed-off-by: ", "(cherry picked from commit ")


def parse_trailers(message: str) -> dict[str, list[str]]:
    """The trailers of a commit message, `{key as written: [values]}`, found as `git interpret-trailers
    --parse` finds them with git's default configuration (the last paragraph, folded values unfolded,
    comments and what follows a scissors line ignored)."""
    lines = _message_lines(message)
    start = _trailer_block_start(lines)
    if start is None:
        return {}
    items: list[list[str]] = []  # [key, value as written, continuation lines...]
    last: list[str] | None = None
    for line in lines[start:]:
        if last is not None and (line == "" or line[0] in _SPACE):
            last.append(line)
            continue
        at = _separator(line)  # -1 for a comment line: it ends the value above, like any non-trailer
        last = [line[:at].strip(_SPACE), line[at + 1:]] if at >= 1 else None
        if last is not None:
            items.append(last)
    trailers: dict[str, list[str]] = {}
    for key, *value in items:
        trailers.setdefault(key, []).append(_unfold("\n".join(value)))
    return trailers


def _message_lines(message: str) -> list[str]:
    """The message's lines without what git ignores at its end (scissors, comments, blank lines)."""
    lines = message.split("\n")
    terminated = lines[-1] == ""  # whether the last line ends with a newline
    if terminated:
        lines.pop()
    if _SCISSORS in lines[:-1] or (lines and lines[-1] == _SCISSORS and terminated):
        lines = lines[:lines.index(_SCISSORS)]
        terminated = True
    end = None  # the first of the trailing ignorable lines
    conflicts = False
    for i, line in enumerate(lines):
        if line.startswith(_COMMENT) or line == "":
            end = i if end is None else end
        elif line == "Conflicts:" and (i + 1 < len(lines) or terminated):
            # what old git versions added to merge messages
            conflicts = True
            end = i if end is None else end
        elif conflicts and line.startswith("\t"):
            pass  # a path under Conflicts:
        elif end is not None:
            end, conflicts = None, False
    return lines if end is None else lines[:end]


def _blank(line: str) -> bool:
    return not line.strip(_SPACE)


def _trailer_block_start(lines: list[str]) -> int | None:
    """The index of the trailer block's first line, or None when the message has none."""
    # the first paragraph is the title and never holds trailers
    title_end = next((i for i, line in enumerate(lines) if not line.startswith(_COMMENT) and _blank(line)), len(lines))
    only_spaces, recognized = True, False
    trailers = others = maybe_continued = 0
    for i in range(len(lines) - 1, title_end - 1, -1):
        line = lines[i]
        if line.startswith(_COMMENT):
            others += maybe_continued
            maybe_continued = 0
            continue
        if _blank(line):
            if only_spaces:
                continue
            others += maybe_continued
            if (recognized and trailers * 3 >= others) or (trailers and not others):
                return i + 1
            return None
        only_spaces = False
        if line.startswith(_GIT_PREFIXES):
            trailers += 1
            maybe_continued = 0
            recognized = True
        elif _separator(line) >= 1 and line[0] not in _SPACE:
            trailers += 1
            maybe_continued = 0
        elif line[0] in _SPACE:
            maybe_continued += 1
        else:
            others += 1 + maybe_continued
            maybe_continued = 0
    return None


def _separator(line: str) -> int:
    """Where the `:` of a `Key: value` line is, or -1: a key, then only spaces before the colon."""
    found = _KEY.match(line)
    return found.end() - 1 if found else -1


def _unfold(value: str) -> str:
    """A folded value on one line: each newline and the whitespace after it become one space."""
    return re.sub("\n[" + _SPACE + "]*", " ", value).strip(_SPACE)
