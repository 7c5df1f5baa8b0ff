"""The frontmatter fast path (`frontmatter.plain_mapping`): desk's own plain frontmatter read without
PyYAML, exactly as PyYAML reads it, and everything else left to PyYAML (issue 17.4).

The property: on hostile near-frontmatter text, whatever the fast path answers equals what
`yaml_mapping` answers (values, their types, each key's line) through both PyYAML loaders
(libyaml's CSafeLoader and the pure-Python SafeLoader), and where PyYAML refuses the text (a
finding) the fast path answered None. Outside the fast path the loaders do not always agree on
hostile text: libyaml reads `name: a<TAB>b` as "a\tb" where the Python scanner refuses it, the
Python parser reads `[? , x]` (a complex key) where libyaml refuses it, and on `0<TAB>: <CR>`
they refuse with different rules. desk therefore reads with the pure-Python SafeLoader on every
machine (`test_the_verdict_does_not_depend_on_libyaml`).
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from desk.errors import InvalidFileError
from desk.formats.memory_file import MemoryFile, MemoryMeta, parse_memory
from desk.storage import frontmatter

LOADERS = [yaml.SafeLoader] + ([yaml.CSafeLoader] if getattr(yaml, "__with_libyaml__", False) else [])

HOSTILE = ["\r", "\r\n", "\u2028", "\u2029", "\x85", "\x00", "\x7f", "\x9f", "\ufeff", "\u200b", "\u200d",
           "\ufffe", "\t", ": ", ":", " :", "- ", "-", " #", "#", "&a", "*a", "!!str ", "!x", "{", "}", "[", "]",
           ",", "'", "''", '"', "? ", "?", "|", ">", "%", "@", "`", "\\", "é", "报告", "ª", "Ⅻ", "𝔘", " ", "  ",
           "yes", "No", "ON", "off", "null", "Null", "~", "true", "y", "n", "0", "07", "0x1f", "1_000", "1:20",
           "12", "-3", "+4", "1e3", "1.5", ".inf", ".NaN", "2026-11-29", "2026-11-29T10:00:00Z",
           "2026-13-01T10:00:00Z", "2026-02-30T25:61:61Z", "2026-11-29 10:00:00", "2026-11-29T10:00:00+02:00",
           "<<", "=", "...", "---", "x" * 300]
WORDS = ["report", "Report style", "报告 风格", "a-b", "it's", "x:y", "a, b", "a]", "ab#c", "tab\there"]
KEYS = ["name", "description", "type", "triggers", "importance", "created", "schema", "evidence", "key",
        "Name", "on", "no", "null", "a b", "k-1", "_x", "x1", "", "1", "'q'", "? k"]


def piece() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(HOSTILE), st.sampled_from(WORDS), st.text(max_size=6))


def word() -> st.SearchStrategy[str]:
    return st.sampled_from(WORDS[:3] + ["report", "Fact", "报告"])


@st.composite
def value(draw: st.DrawFn) -> str:
    """Mostly a value desk could write with one hostile piece in it, so that the fast path reads
    most examples and each hostile piece meets it."""
    kind = draw(st.integers(0, 7))
    if kind <= 2:  # a word, a hostile piece inside, at the start or at the end
        parts = [draw(word()), draw(piece())]
        parts.insert(draw(st.integers(0, 2)), draw(word()))
        return "".join(parts[:draw(st.integers(1, 3))])
    if kind == 3:
        return "'" + draw(word()) + draw(piece()).replace("'", draw(st.sampled_from(["''", "'"]))) + "'"
    if kind == 4:
        return "[" + draw(st.sampled_from([", ", ",", " , ", ",  "])).join(
            draw(st.lists(st.one_of(word(), piece()), max_size=3))) + "]"
    if kind == 5:
        return str(draw(st.integers(-5, 10 ** 20)))
    if kind == 6:
        return draw(st.sampled_from(["2026-11-29T10:00:00Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
                                     "2026-02-29T10:00:00Z", "2024-02-29T24:00:00Z"]))
    return draw(st.sampled_from(HOSTILE))


@st.composite
def line(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 9))
    key = draw(st.sampled_from(KEYS[:9])) if draw(st.integers(0, 5)) else draw(
        st.one_of(st.sampled_from(KEYS), st.text(max_size=4)))
    if kind <= 4:
        return f"{key}: {draw(value())}"
    if kind <= 6:  # a key and its block list
        items = draw(st.lists(value(), max_size=3))
        indent = draw(st.sampled_from(["", "  ", "  ", "    "]))
        indents = [indent if draw(st.integers(0, 5)) else draw(st.sampled_from(["", " ", "  ", "   "]))
                   for _ in items]
        return "\n".join([f"{key}:"] + [f"{i}- {v}" for i, v in zip(indents, items)])
    if kind == 7:
        return f"{key}:{draw(piece())}{draw(value())}"
    if kind == 8:
        return draw(st.sampled_from(["", " ", "# a comment", "  more", "- loose", "...", "%YAML 1.1"]))
    return f"{key}:"


@st.composite
def good_line(draw: st.DrawFn) -> str:
    """A line as desk writes it."""
    key = draw(st.sampled_from(KEYS[:9]))
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return f"{key}: {draw(word())}"
    if kind == 1:
        return f"{key}: '{draw(word())}: {draw(word())}'"
    if kind == 2:
        return f"{key}: {draw(st.sampled_from(['3', '2026-11-29T10:00:00Z', '[a, b]', '[]']))}"
    return "\n".join([f"{key}:"] + [f"  - {w}" for w in draw(st.lists(word(), max_size=2))])


@st.composite
def frontmatter_text(draw: st.DrawFn) -> str:
    """A few lines as desk writes them around one line that may be hostile."""
    lines = draw(st.lists(good_line(), max_size=3))
    lines.insert(draw(st.integers(0, len(lines))), draw(line()))
    return "\n".join(lines) + (draw(st.sampled_from(["", "\r\n", "\n\n"])) if draw(st.integers(0, 9)) == 0
                                else "\n")


def typed(value: Any) -> Any:
    """`value` with every scalar's type made part of it: `1 == True` and `[] == None`-like slips
    would not hide a difference."""
    if isinstance(value, dict):
        return ("dict", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    if isinstance(value, dt.datetime):
        return ("datetime", value.isoformat(), repr(value.tzinfo))
    return (type(value).__name__, value)


def yaml_reading(text: str, loader: type) -> Any:
    try:
        meta, lines = frontmatter.yaml_mapping(text, "memory/x.md", 2, loader=loader)
    except InvalidFileError as exc:
        return ("refused", [f.rule for f in exc.findings])
    except ValueError:  # PyYAML's own constructor errors (a day that does not exist)
        return ("refused", ["value"])
    return typed(meta), lines


SETTINGS = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(frontmatter_text())
@example("name: report-style\ndescription: Report language and length\ntype: preference\n"
         "triggers:\n  - report\n  - 报告\ncreated: 2026-11-29T10:00:00Z\nschema: 2\n")
@example("triggers: [a, b]\nempty:\nafter: x\n")
@example("name: it's a-b x:y, z]\n")
@example("name: a\u200bb\n")
@example("name: 'a '' b # c: d'\n")
@example("created: 2026-02-30T10:00:00Z\n")
@example("name: x\n  - y\n")
@example("triggers:\n- a\n  - b\n")
@example("triggers: [x, report?]\n")  # `?` ends a plain scalar in a flow list (the Python scanner)
def test_the_fast_path_reads_exactly_what_pyyaml_reads_or_defers(text: str) -> None:
    fast = frontmatter.plain_mapping(text, 2)
    if fast is None:
        return  # PyYAML reads it, through the loader this machine has
    assert "\t" not in text
    for loader in LOADERS:  # both loaders read exactly what the fast path read
        assert yaml_reading(text, loader) == (typed(fast[0]), fast[1]), (text, loader)


def agrees(text: str) -> bool:
    """The property above for one text; True when the fast path read it."""
    test_the_fast_path_reads_exactly_what_pyyaml_reads_or_defers.hypothesis.inner_test(text)  # type: ignore[attr-defined]
    return frontmatter.plain_mapping(text, 2) is not None


def test_every_hostile_piece_in_every_place() -> None:
    """Each hostile piece at the start, in the middle and at the end of each kind of value, and as a
    key: the same property, over every combination (hypothesis draws only some)."""
    read = 0
    for bad in HOSTILE + WORDS:
        for value in (bad, f"report{bad}", f"{bad}report", f"a {bad} b", f"a{bad}b"):
            for text in (f"name: {value}\n", f"name: '{value}'\n", f"triggers: [x, {value}]\n",
                         f"triggers:\n  - {value}\n", f"triggers:\n- x\n- {value}\n",
                         f"name: x\n{value}: y\n", f"name: x\n{value}\n", f"{value}\nname: x\n"):
                read += agrees(text)
    assert read > 500  # the fast path met most of them


@pytest.mark.parametrize("meta", [
    MemoryMeta(name="report-style", description="Report language and length", type="preference",
               triggers=["report", "报告"], created=dt.datetime(2026, 11, 29, 10, tzinfo=dt.timezone.utc),
               updated=dt.datetime(2026, 11, 30, 23, 59, 59, tzinfo=dt.timezone.utc)),
    MemoryMeta(name="colon", description="Language: Chinese # not a comment", type="fact",
               triggers=["it's", "a b"], importance=5, source="user", key="k-1",
               expires=dt.datetime(2027, 1, 1, tzinfo=dt.timezone.utc)),
    MemoryMeta(name="plain", description="Plain words only", type="fact"),
])
def test_what_desk_writes_takes_the_fast_path(meta: MemoryMeta) -> None:
    data = MemoryFile(meta, "Body.\n").render()
    text = data.decode().split("---\n")[1]
    fast = frontmatter.plain_mapping(text, 2)
    assert fast is not None, text  # desk's own files never need PyYAML to be read
    assert (typed(fast[0]), fast[1]) == yaml_reading(text, LOADERS[-1])
    assert parse_memory(data, f"memory/{meta.name}.md", meta.name).meta == meta


@pytest.mark.parametrize("text, rule", [
    ("a: &x 1\nb: *x\n", "yaml-alias"),
    ("name: x\nname: y\n", "yaml-duplicate-key"),
    ("yes: x\n", "yaml-key"),
    ("- a\n", "frontmatter-not-mapping"),
    ("a:\n  - - - - x\n", "yaml-depth"),
    ("name: x\n\tbad: y\n", "yaml-syntax"),
])
def test_strict_framing_still_refuses(text: str, rule: str) -> None:
    assert frontmatter.plain_mapping(text, 2) is None
    with pytest.raises(InvalidFileError) as info:
        frontmatter.load_mapping(text, "memory/x.md", 2)
    assert info.value.findings[0].rule == rule


@pytest.mark.parametrize("text", ["name: a\tb\n", "triggers: [? , x]\n", "0\t: \r\n", "name: x\t\n"])
def test_the_verdict_does_not_depend_on_libyaml(text: str) -> None:
    """Where libyaml and the Python loader disagree, desk reads as the Python loader does, which
    every PyYAML install has: two machines give one file the same verdict."""
    try:
        meta, lines = frontmatter.load_mapping(text, "memory/x.md", 2)
        desk_reads: Any = (typed(meta), lines)
    except InvalidFileError as exc:
        desk_reads = ("refused", [f.rule for f in exc.findings])
    assert desk_reads == yaml_reading(text, yaml.SafeLoader)


def test_reading_a_desk_memory_imports_no_yaml() -> None:
    """The pre-commit hook reads a hand-edited memory in a fresh process: PyYAML (~10 ms to import)
    stays unloaded for desk's plain frontmatter, and loads for anything else."""
    code = ("import sys\nfrom desk.formats.memory_file import parse_memory\n"
            "parse_memory(b'---\\nname: a\\ndescription: d\\ntype: fact\\ntriggers:\\n  - t\\n"
            "created: 2026-11-29T10:00:00Z\\nschema: 2\\n---\\nBody.\\n', 'memory/a.md', 'a')\n"
            "print('yaml' in sys.modules)\n"
            "parse_memory(b'---\\nname: a\\ndescription: \"d\"\\ntype: fact\\n---\\nBody.\\n', 'memory/a.md', 'a')\n"
            "print('yaml' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]
