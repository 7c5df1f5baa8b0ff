"""How stored text is made safe for the structures it is rendered into: every text desk did not
write itself goes through these before it reaches a prompt, so it can never close or imitate the
structure around it."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable

# Characters some reader (a terminal, an editor, Python's str.splitlines, an LLM tokenizer) takes
# for a line break, besides `\n`.
LINE_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_BREAK_RE = re.compile(f"[{LINE_BREAKS}]")
_CONTROL_RE = re.compile("[\x00-\x08\x0e-\x1b\x1f\x7f-\x84\x86-\x9f]")
# Indent a reader may not see or may take for plain space, before `#` or its full-width twin `＃`.
_INVISIBLE = (" \t\u00a0\u00ad\u1680\u180e\u2000-\u200f\u202a-\u202f\u205f-\u2064\u2066-\u2069"
              "\u3000\ufeff")


@functools.cache
def _markdown_res() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """markdown_block's patterns (a heading, the indent before it, a setext underline, or a mix a
    reader may take for one, one of desk's own tags), compiled on first use."""
    return (re.compile(f"^[{_INVISIBLE}]*[#\uff03]"), re.compile(f"^[{_INVISIBLE}]+"),
            re.compile(f"^[{_INVISIBLE}]*[=\\-]+[{_INVISIBLE}]*$"),
            re.compile(r"<(?=/?(?:desk|memory|recalled_context|hit)\b|!--)", re.I))


TOKEN_CHARS = 16


def plain_text(text: str, *, breaks: str = "\n") -> str:
    """`text` with every line break a `\\n` (or `breaks`) and no other control character."""
    text = _BREAK_RE.sub(breaks, text.replace("\r\n", "\n"))
    return _CONTROL_RE.sub("", text)


def one_line(text: str) -> str:
    """`text` on one line: line breaks become spaces, runs of spaces stay as written."""
    return plain_text(text, breaks=" ").replace("\n", " ")


def markdown_block(text: str) -> str:
    """Stored text as a section body of `desk context`: a heading is demoted two levels, a setext
    underline and a `[desk` line are backslash-escaped, `<` of desk's elements or a comment escaped."""
    heading_re, lead_re, setext_re, own_tag_re = _markdown_res()
    out: list[str] = []
    previous = ""
    lines = plain_text(text).split("\n")
    # A file that opens with frontmatter (USER.md) keeps its closing `---`: no heading's underline.
    frontmatter = bool(lines) and lines[0] == "---"
    for i, line in enumerate(lines):
        if frontmatter and i > 0 and line == "---":
            frontmatter = False
        elif heading_re.match(line):
            line = "##" + lead_re.sub("", line)
        elif previous.strip() and setext_re.match(line):
            line = "\\" + lead_re.sub("", line)
        elif lead_re.sub("", line).lower().startswith("[desk"):
            line = "\\" + lead_re.sub("", line)
        line = own_tag_re.sub("&lt;", line)
        out.append(line)
        previous = line
    return "\n".join(out)


def xml_attr(value: object) -> str:
    """A quoted XML attribute value: escaped, one line (booleans as true/false)."""
    text = "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    return '"' + xml_text(one_line(text)).replace('"', "&quot;") + '"'


def xml_text(text: str) -> str:
    """XML text: line breaks normalised, control characters (never valid XML) dropped, `&`, `<`,
    `>` escaped, so recalled or injected memory text can never open or close an element."""
    text = plain_text(text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def injected_body(body: str) -> str:
    """A memory's body as context injects it: XML text (it sits in `<memory>`), each line also
    escaped as `markdown_block` does (the block sits in Markdown), trailing newlines dropped."""
    return markdown_block(xml_text(body)).rstrip("\n")


def boundary_token(parts: Iterable[str]) -> str:
    """A token no part can contain by design: the first TOKEN_CHARS hex digits of a hash of all parts."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return str(digest.hexdigest())[:TOKEN_CHARS]  # sha256 is untyped when it is CPython's own
