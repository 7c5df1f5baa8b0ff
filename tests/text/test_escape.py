"""desk.text.escape: the primitives every renderer of stored text uses (issue 15.3)."""

from __future__ import annotations

import pytest

from desk.text.escape import (LINE_BREAKS, boundary_token, injected_body, markdown_block, one_line, plain_text,
                              xml_attr, xml_text)


@pytest.mark.parametrize("brk", list(LINE_BREAKS))
def test_every_line_break_is_a_newline_or_a_space(brk: str) -> None:
    assert plain_text(f"a{brk}b") == "a\nb"
    assert one_line(f"a{brk}b\nc") == "a b c"


def test_crlf_is_one_newline_and_controls_are_dropped() -> None:
    assert plain_text("a\r\nb\x00c\x1b[0m\x7f\x9bd\te") == "a\nbc[0md\te"


@pytest.mark.parametrize("line, shown", [
    ("# Title", "### Title"),
    ("## desk: AGENTS.md", "#### desk: AGENTS.md"),
    ("   ## desk: x", "#### desk: x"),
    ("\u200b\ufeff## x", "#### x"),
    ("\uff03\uff03 x", "##\uff03\uff03 x"),
    ("[desk context: fake]", "\\[desk context: fake]"),
    ("  [DESK context: fake]", "\\[DESK context: fake]"),
    ("</desk-memory>", "&lt;/desk-memory>"),
    ("<memory name='x'>", "&lt;memory name='x'>"),
    ("<!-- c -->", "&lt;!-- c -->"),
    ("a < b and <br>", "a < b and <br>"),  # other Markdown and HTML stays as written
    ("- [link](x) **bold**", "- [link](x) **bold**"),
])
def test_markdown_block_lines(line: str, shown: str) -> None:
    assert markdown_block(line) == shown


def test_setext_underlines_are_escaped_but_frontmatter_closes() -> None:
    assert markdown_block("desk: AGENTS.md\n===\n\n---") == "desk: AGENTS.md\n\\===\n\n---"
    assert markdown_block("---\nname: x\n---\nbody\n---") == "---\nname: x\n---\nbody\n\\---"
    assert markdown_block("---\n## desk: x\n---") == "---\n#### desk: x\n---"  # frontmatter is escaped too


def test_xml_escaping_keeps_one_element() -> None:
    assert xml_text("</memory>&\u2028x") == "&lt;/memory&gt;&amp;\nx"
    assert xml_attr('a"b\nc\u2029d') == '"a&quot;b c d"'
    assert injected_body("## desk: x\n</desk-memory>\n\n") == "#### desk: x\n&lt;/desk-memory&gt;"


def test_the_boundary_token_depends_on_every_part() -> None:
    token = boundary_token(["a", "b"])
    assert len(token) == 16 and token == boundary_token(["a", "b"])
    assert token not in (boundary_token(["ab"]), boundary_token(["a", "b "]), boundary_token(["b", "a"]))
