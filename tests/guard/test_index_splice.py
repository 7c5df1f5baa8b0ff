"""The gate's splice of HEAD's MEMORY.md (desk.gate.index_rule._patched_index) gives, for every
input, exactly what its earlier form gave: that form, kept here as the oracle, cut the header off,
split the body and joined it again with three more copies of the whole file (~2.6 ms of the gate
at 50,000 memories). Hostile bases: no header, an unsorted or malformed body, no final newline,
\\r, NUL, invalid UTF-8, the empty-index line, lines whose `](` is missing; hostile changes: lines
that are not index lines or do not encode."""

from __future__ import annotations

import bisect
from collections.abc import Mapping

from hypothesis import example, given, settings
from hypothesis import strategies as st

from desk.gate.index_rule import _patched_index
from desk.layout import memory_name
from desk.formats.memory_index import EMPTY, HEADER

HEAD = (HEADER + "\n").encode()


def oracle(base: bytes, changed: Mapping[str, str | None]) -> bytes | None:
    """_patched_index as it was (main da8feef)."""
    head = (HEADER + "\n").encode()
    if not base.startswith(head):
        return None
    body = base[len(head):]
    lines = [] if body == EMPTY.encode() else body.split(b"\n")[:-1]

    def key(line: bytes) -> bytes:
        return line[3:line.index(b"](")]

    try:
        for path, line in sorted(changed.items()):
            name = memory_name(path)
            if name is None:
                continue
            at = bisect.bisect_left(lines, name.encode(), key=key)
            if at < len(lines) and key(lines[at]) == name.encode():
                del lines[at]
            if line is not None:
                new = line.encode()
                lines.insert(bisect.bisect_left(lines, key(new), key=key), new)
    except ValueError:
        return None
    return head + (b"\n".join(lines) + b"\n" if lines else EMPTY.encode())


NAMES = ["a", "a-", "a-b", "ab", "b", "m", "m0", "z", "\u00e9", "\u62a5"]


def _line(name: str, description: str) -> str:
    return f"- [{name}](memory/{name}.md) \u2014 {description}"


DESCRIPTIONS = st.text(st.sampled_from("ab \u2014\u62a5](\r\u2028\u200b\x00<"), max_size=6)
GOOD = st.builds(_line, st.sampled_from(NAMES), DESCRIPTIONS)
HOSTILE_LINE = st.sampled_from([
    "", "no link here", "- [a]", "- [a](", "- [b](memory/b.md)\r", "<<<<<<< ours", "=======",
    ">>>>>>> theirs", "- [\u202e](x)", "\u2028", "\ufeff- [a](memory/a.md)", "- [a](memory/a.md) \r x",
    EMPTY.rstrip("\n")])
BODY_LINE = st.one_of(GOOD.map(str.encode), HOSTILE_LINE.map(str.encode),
                      st.sampled_from([b"\xff", b"- [a\xe2\x80](memory/a.md)", b"\x00", b"- [\x80](x)"]),
                      st.binary(max_size=8))


@st.composite
def bases(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(BODY_LINE, max_size=8))
    if draw(st.booleans()):
        lines = sorted(set(lines))
    body = b"\n".join(lines) + draw(st.sampled_from([b"\n", b"", b"\r\n", b"\n\n"]))
    prefix = draw(st.sampled_from([HEAD, HEAD, HEAD, HEAD[:-1], b"\xef\xbb\xbf" + HEAD, b""]))
    if draw(st.integers(0, 9)) == 0:
        body = draw(st.sampled_from([EMPTY.encode(), b"", EMPTY.encode() + b"\n"]))
    return prefix + body


PATHS = st.sampled_from([f"memory/{n}.md" for n in NAMES] + ["NOW.md", "memory/x/y.md", "memory/a.txt"])
CHANGES = st.dictionaries(PATHS, st.none() | GOOD | HOSTILE_LINE | st.just("- [a](memory/a.md) \ud800"),
                          max_size=4)


@settings(max_examples=2000, deadline=None)
@given(bases(), CHANGES)
@example(HEAD + EMPTY.encode(), {"memory/a.md": _line("a", "x")})
@example(HEAD, {"memory/a.md": _line("a", "x")})
@example(HEAD + b"- [b](memory/b.md) \xe2\x80\x94 x", {"memory/a.md": None})
@example(HEAD + b"- [b](memory/b.md)\n- [a](memory/a.md)\n", {"memory/a.md": _line("a", "y")})
@example(HEAD + b"no link\n- [a](memory/a.md)\n", {"memory/m.md": _line("m", "y")})
def test_patched_index_equals_the_earlier_form(base: bytes, changed: dict[str, str | None]) -> None:
    assert _patched_index(base, changed) == oracle(base, changed)


def test_a_large_sorted_index_is_patched_in_place() -> None:
    names = [f"m{i:05d}" for i in range(0, 20000, 2)]
    base = HEAD + "".join(_line(n, "fact \u2014 \u62a5") + "\n" for n in names).encode()
    change = {"memory/m00001.md": _line("m00001", "new"), "memory/m00002.md": None,
              "memory/m19998.md": _line("m19998", "changed")}
    patched = _patched_index(base, change)
    assert patched == oracle(base, change)
    assert patched is not None
    lines = patched.decode().splitlines()
    assert lines[2:5] == [_line("m00000", "fact \u2014 \u62a5"), _line("m00001", "new"),
                          _line("m00004", "fact \u2014 \u62a5")]
    assert lines[-1] == _line("m19998", "changed")
    assert _patched_index(HEAD + EMPTY.encode(), {"memory/m00002.md": None}) == HEAD + EMPTY.encode()
