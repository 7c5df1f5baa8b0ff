"""Fuzzing the frontmatter parser and the memory file on top of it (issue 15.12): whatever the
bytes, the answer is a parsed file or an InvalidFileError naming the file, never a traceback."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from desk.errors import DeskError
from desk.formats.memory_file import parse_memory
from desk.storage import frontmatter

HOSTILE = ["\r", "\r\n", "\u2028", "\x85", "\x00", "\ufeff", "\u200b", "---", "\t", ": ", "- ", "&a", "*a",
           "!!python/object:os.system", "{", "[", "'", '"', "#", "? ", "|", ">", "%YAML 1.1", "\\", "é", "报告",
           "\udcff", "9999-12-31T23:59:59Z", "1e309", ".nan", "<<: *a"]
KEYS = ["name", "description", "type", "triggers", "importance", "expires", "source", "created", "updated",
        "evidence", "key", "source_event", "other"]


@st.composite
def memory_like(draw: st.DrawFn) -> bytes:
    """Bytes close enough to a memory file to get past the first checks, with hostile pieces."""
    piece = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=12))
    lines = [f"{draw(st.sampled_from(KEYS))}:{draw(piece)}{draw(piece)}" for _ in range(draw(st.integers(0, 6)))]
    if draw(st.booleans()):
        lines.append(f"triggers:\n  - {draw(piece)}\n  - {draw(piece)}")
    text = ("---\n" + "\n".join(lines) + ("\n---\n" if draw(st.booleans()) else "\n") + draw(piece)
            + draw(st.text(max_size=40)))
    return text.encode("utf-8", "surrogatepass") + draw(st.binary(max_size=4))


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.one_of(memory_like(), st.binary(max_size=200)))
def test_frontmatter_and_memory_files_fail_only_with_desk_errors(data: bytes) -> None:
    for parse in (lambda: frontmatter.parse(data, "memory/x.md"), lambda: parse_memory(data, "memory/x.md", "x")):
        try:
            parse()
        except DeskError as exc:
            assert "memory/x.md" in str(exc) or any(f.path == "memory/x.md" for f in getattr(exc, "findings", []))
