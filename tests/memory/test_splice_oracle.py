"""desk.formats.memory_index.splice_lines gives, for every input, exactly what its earlier form gave (kept
here as the oracle): that form cut the body out of the index and copied it whole about six times per
changed line; this one bisects the index in place and copies it once (one line) or into a buffer and
out (more lines). Hostile indexes: no header, unsorted or malformed lines, no final newline, \\r,
NUL, invalid UTF-8, the empty-index line, the header alone; hostile changes: lines of another name,
lines that do not encode (the ValueError, its message, is compared too)."""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import example, given, settings
from hypothesis import strategies as st

from desk.formats.memory_index import EMPTY, HEADER, splice_lines

HEAD = (HEADER + "\n").encode()


def _find_line(body: bytes, key: bytes) -> tuple[int | None, bool]:
    lo, hi = 0, len(body)
    while lo < hi:
        mid = (lo + hi) // 2
        start = body.rfind(b"\n", lo, mid) + 1 if mid > lo else lo
        if start < lo:
            start = lo
        end = body.index(b"\n", start)
        close = body.find(b"](", start, end)
        if not body.startswith(b"- [", start) or close < 0:
            return None, False
        name = body[start + 3:close]
        if name == key:
            return start, True
        if name < key:
            lo = end + 1
        else:
            hi = start
    return lo, False


def oracle(index: bytes, lines: Mapping[str, str | None]) -> bytes | None:
    """splice_lines as it was (main da8feef)."""
    head = (HEADER + "\n").encode()
    empty = EMPTY.encode()
    if not index.startswith(head):
        return None
    body = index[len(head):]
    if body == empty:
        body = b""
    elif not body.endswith(b"\n"):
        return None
    for name, line in sorted(lines.items()):
        key = name.encode()
        start, found = _find_line(body, key)
        if start is None:
            return None
        end = body.index(b"\n", start) + 1 if found else start
        new = b"" if line is None else line.encode() + b"\n"
        if line is not None and not line.startswith(f"- [{name}]("):
            raise ValueError(f"{line!r} is not {name}'s index line")
        body = body[:start] + new + body[end:]
    return head + (body or empty)


NAMES = ["a", "a-", "a-b", "ab", "b", "m", "m0", "z", "\u00e9", "\u62a5"]


def _line(name: str, description: str) -> str:
    return f"- [{name}](memory/{name}.md) \u2014 {description}"


DESCRIPTIONS = st.text(st.sampled_from("ab \u2014\u62a5](\r\u2028\u200b\x00<\n"), max_size=6)
GOOD = st.builds(_line, st.sampled_from(NAMES), DESCRIPTIONS)
HOSTILE_LINE = st.sampled_from([
    "", "no link here", "- [a]", "- [a](", "- [b](memory/b.md)\r", "<<<<<<< ours", "=======",
    ">>>>>>> theirs", "- [\u202e](x)", "\u2028", "\ufeff- [a](memory/a.md)", "- [a](memory/a.md) \r x",
    EMPTY.rstrip("\n"), "- [a](memory/a.md) \ud800"])
BODY_LINE = st.one_of(GOOD.map(str.encode), HOSTILE_LINE.map(lambda s: s.encode("utf-8", "surrogatepass")),
                      st.sampled_from([b"\xff", b"- [a\xe2\x80](memory/a.md)", b"\x00", b"- [\x80](x)"]),
                      st.binary(max_size=8))


@st.composite
def indexes(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(BODY_LINE, max_size=8))
    if draw(st.booleans()):
        lines = sorted(set(lines))
    body = b"\n".join(lines) + draw(st.sampled_from([b"\n", b"\n", b"", b"\r\n", b"\n\n"]))
    prefix = draw(st.sampled_from([HEAD, HEAD, HEAD, HEAD[:-1], b"\xef\xbb\xbf" + HEAD, b""]))
    if draw(st.integers(0, 5)) == 0:
        body = draw(st.sampled_from([EMPTY.encode(), b"", EMPTY.encode() + b"\n", b"\n"]))
    return prefix + body


CHANGES = st.dictionaries(st.sampled_from(NAMES), st.none() | GOOD | HOSTILE_LINE, max_size=4)


def _outcome(index: bytes, lines: dict[str, str | None], splice: object) -> object:
    try:
        return splice(index, lines)  # type: ignore[operator]
    except (ValueError, UnicodeError) as exc:
        return type(exc), str(exc)


@settings(max_examples=3000, deadline=None)
@given(indexes(), CHANGES)
@example(HEAD, {"a": _line("a", "x")})
@example(HEAD + EMPTY.encode(), {"a": _line("a", "x")})
@example(HEAD + EMPTY.encode(), {"a": None})
@example(HEAD + b"- [a](memory/a.md) x\n", {"a": None})
@example(HEAD + b"- [a](memory/a.md) x\n", {"a": None, "b": _line("b", "y")})
@example(HEAD + b"- [a](memory/a.md) x\n- [b](memory/b.md) y\n", {"a": None, "b": None})
@example(HEAD + b"- [b](memory/b.md)\n- [a](memory/a.md)\n", {"a": _line("a", "y"), "m": None})
@example(HEAD + b"- [a](memory/a.md) x\n", {"b": _line("a", "y")})
def test_splice_lines_equals_the_earlier_form(index: bytes, lines: dict[str, str | None]) -> None:
    assert _outcome(index, lines, splice_lines) == _outcome(index, lines, oracle)


def test_a_large_index_spliced_one_line_and_three() -> None:
    names = [f"m{i:05d}" for i in range(0, 20000, 2)]
    index = HEAD + "".join(_line(n, "fact \u2014 \u62a5") + "\n" for n in names).encode()
    one = {"m00001": _line("m00001", "new")}
    three = {**one, "m00002": None, "m19998": _line("m19998", "changed")}
    for lines in (one, three):
        spliced = splice_lines(index, lines)
        assert spliced == oracle(index, lines)
        assert spliced is not None and type(spliced) is bytes
    assert splice_lines(index, one).split(b"\n")[2:5] == [  # type: ignore[union-attr]
        _line(n, d).encode() for n, d in (("m00000", "fact \u2014 \u62a5"), ("m00001", "new"),
                                          ("m00002", "fact \u2014 \u62a5"))]
