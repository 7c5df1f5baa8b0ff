"""How stored text is made safe for the structures it is rendered into: pure functions, one place.

Every text desk did not write itself (a memory's name, description, triggers and body; NOW.md,
MISTAKES.md, USER.md, SOUL.md, AGENTS.md; archive content, facts, journal lines; profile values)
goes through these before it reaches a prompt, so it can never close or imitate the structure
around it (issue 15.3). Whoever renders stored text into a prompt uses them, and nothing else:

- `plain_text(text)`: the first step for every stored text. `\\r\\n` becomes `\\n`; every other
  character a reader may take for a line break (lone CR, VT, FF, FS/GS/RS, NEL, U+2028, U+2029)
  becomes `breaks` (a newline by default: a file written with old Mac line ends still reads as
  lines; each line is then escaped on its own); other control characters (C0 but tab and newline,
  DEL, C1) are dropped.
- `one_line(text)`: a field that must stay on one line (a list item, a heading, a note, an
  attribute): `plain_text` with every line break a space.
- `markdown_block(text)`: stored text shown as the body of a `## desk: …` section of `desk
  context`. Line by line: a line that is a Markdown heading (`#` or full-width `＃` after any indent,
  zero-width characters included) is demoted two levels and its indent dropped, so no stored line
  ever reads as `# ` or `## ` (the levels desk's own headings use); a setext underline (`===`, `---` under text) is backslash-escaped, so it
  cannot turn the line above into a heading; a line starting with `[desk` is backslash-escaped
  (desk's own notes read `[desk context: …]`); `<` is escaped as `&lt;` where it would open or
  close one of desk's elements (`<desk-…>`, `<memory>`, `<recalled_context>`, `<hit>`) or an HTML
  comment (desk's header is one). The rest of the Markdown is left as written.
- `xml_text(text)` / `xml_attr(value)`: text and attribute values inside desk's XML blocks
  (`<desk-memory>`, `<recalled_context>`): `plain_text` first, then `&`, `<`, `>` (and `"` in an
  attribute) escaped; an attribute is one line.
- `boundary_token(parts)`: the per-render token in `desk context`'s header and section headings,
  like a MIME boundary: a hash of everything rendered, so the output is byte-for-byte the same for
  the same desk and `--as-of`, and no stored text can predict (contain) the token of the render it
  is part of.

Beside the token estimator, so the memory index can count a body's tokens as context will inject
it (`desk.formats.memory_index.IndexEntry.injected_tokens`) without importing recall.
"""

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
# Indent a reader may not see or may take for plain space (spaces, tabs, no-break and the other
# Unicode spaces, zero-width and other invisible format characters) before `#` or its full-width
# twin `＃` (NFKC makes it `#`).
_INVISIBLE = (" \t\u00a0\u00ad\u1680\u180e\u2000-\u200f\u202a-\u202f\u205f-\u2064\u2066-\u2069"
              "\u3000\ufeff")


@functools.cache
def _markdown_res() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """markdown_block's patterns (a heading, the indent before it, a setext underline, one of desk's
    own tags), compiled on first use: only `desk context` renders Markdown blocks."""
    # A setext underline is `=+` or `-+`; a mix (`===---`) is not one in CommonMark, but other
    # renderers (and a reader) may take it for one, so it is escaped too.
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
    """Stored text as a section body of `desk context`: it cannot start a heading of desk's levels,
    a desk note or one of desk's elements (see the module docstring)."""
    heading_re, lead_re, setext_re, own_tag_re = _markdown_res()
    out: list[str] = []
    previous = ""
    lines = plain_text(text).split("\n")
    # A file that opens with YAML frontmatter (USER.md) keeps its closing `---` as written: it ends
    # the frontmatter there, it does not underline a heading.
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
