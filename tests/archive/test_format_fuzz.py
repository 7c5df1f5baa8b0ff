"""Fuzzing the archive line parser and record checks (issue 15.12): torn, hostile or huge lines
give records, warnings or an InvalidFileError naming path:line, never a traceback."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from desk.formats.archive import check_lines, parse_lines, record_problem
from desk.errors import DeskError, Finding

PATH = ".system/archive/2026-11-28.abcd1234.jsonl"
VALUES = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20),
                                st.floats(allow_nan=False, allow_infinity=False)),
                      lambda inner: st.one_of(st.lists(inner, max_size=3),
                                              st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                      max_leaves=8)
FIELDS = ["id", "desk_id", "at", "recorded_at", "kind", "session", "actor", "content", "payload", "meta", "prev"]


@st.composite
def record_line(draw: st.DrawFn) -> bytes:
    rec = {k: draw(VALUES) for k in draw(st.lists(st.sampled_from(FIELDS), max_size=6, unique=True))}
    if draw(st.booleans()):
        rec["at"] = draw(st.sampled_from(["2026-11-28T10:00:00Z", "2026-11-28T10:00:00.5Z", "9999-12-31T23:59:59Z",
                                           "0001-01-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-11-28"]))
    line = json.dumps(rec, ensure_ascii=draw(st.booleans())).encode()
    cut = draw(st.integers(0, len(line)))
    return line[:cut] if draw(st.integers(0, 5)) == 0 else line


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(record_line(), st.binary(max_size=30)), max_size=5), st.booleans())
def test_archive_lines_parse_or_fail_with_a_desk_error(lines: list[bytes], final_newline: bool) -> None:
    data = b"\n".join(lines) + (b"\n" if final_newline else b"")
    problems: list[Finding] = []
    try:
        records = parse_lines(data, PATH, problems)
    except DeskError as exc:
        assert PATH in str(exc) or exc.findings[0].path == PATH  # type: ignore[attr-defined]
        return
    for _line, _offset, rec in records:
        problem = record_problem(rec, "desk-0123", "2026-11-28")
        assert problem is None or isinstance(problem, str)
    try:
        check_lines(PATH, data, 0, "desk-0123", "2026-11-28")
    except DeskError:
        pass
