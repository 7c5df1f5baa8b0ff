"""Memory files: strict framing, safe YAML, strict types, exact round trips."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from desk.errors import InvalidFileError
from desk.formats.memory_file import (MEMORY_SCHEMA, MEMORY_TYPES, MemoryFile, MemoryMeta, name_problem, parse_memory,
                              stamp_schema)

GOOD = (b"---\nname: report-style\ndescription: Report language and length\ntype: preference\n"
        b"triggers:\n  - report\n  - \xe6\x8a\xa5\xe5\x91\x8a\ncreated: 2026-11-29T10:00:00Z\n---\n"
        b"Reports must be written in Chinese.\n")


def refused(data: bytes, name: str = "report-style") -> InvalidFileError:
    with pytest.raises(InvalidFileError) as info:
        parse_memory(data, f"memory/{name}.md", name)
    return info.value


# GOOD as desk writes it: the format version stamped as the last frontmatter line.
STAMPED = GOOD.replace(b"\n---\n", b"\nschema: 2\n---\n")


def test_good_file_parses_and_round_trips() -> None:
    memory = parse_memory(GOOD, "memory/report-style.md", "report-style")
    assert memory.meta.triggers == ["report", "报告"]
    assert memory.meta.created == dt.datetime(2026, 11, 29, 10, tzinfo=dt.timezone.utc)
    assert (memory.meta.schema, memory.meta.schema_version) == (None, 1)  # no key: version 1
    assert memory.render(memory.meta.schema) == GOOD  # shown as it is
    assert memory.render() == STAMPED  # every write stamps the current version
    again = parse_memory(STAMPED, "memory/report-style.md", "report-style")
    assert again == memory and again.meta.schema == MEMORY_SCHEMA == 2 and again.render() == STAMPED
    assert "schema" not in memory.meta.to_json() and again.meta.to_json()["schema"] == 2


def test_a_newer_memory_file_is_refused_with_its_line_and_a_hint() -> None:
    error = refused(STAMPED.replace(b"schema: 2", b"schema: 99"))
    assert [(f.line, f.rule) for f in error.findings] == [(9, "memory-schema")]
    assert "99 was written by a newer desk" in error.findings[0].message
    assert "upgrade desk" in error.findings[0].message and "upgrade desk" in (error.hint or "")
    assert str(error.findings[0]).startswith("memory/report-style.md:9: memory-schema: schema: 99")


@pytest.mark.parametrize("value, message", [
    (b"true", "expected a whole number"), (b"'2'", "expected a whole number"), (b"2.0", "expected a whole number"),
    (b"0", "must be 1 or more"), (b"-1", "must be 1 or more"), (b"[2]", "expected a whole number"),
    (b"1" + b"0" * 400, "newer desk"),  # a huge number is a newer version, not a crash
])
def test_bad_schema_values_are_named(value: bytes, message: str) -> None:
    error = refused(STAMPED.replace(b"schema: 2", b"schema: " + value))
    assert error.findings[0].line == 9 and error.findings[0].message.startswith("schema: ")
    assert message in error.findings[0].message


def test_schema_1_written_out_is_read_as_version_1() -> None:
    memory = parse_memory(STAMPED.replace(b"schema: 2", b"schema: 1"), "memory/report-style.md", "report-style")
    assert memory.meta.schema_version == 1 and memory.render() == STAMPED


def test_stamp_schema_adds_one_line_and_keeps_every_other_byte() -> None:
    hand = (b"---\ntype: fact   # a comment\nname: report-style\ndescription: \"quoted\"\ntriggers: [a, b]\n"
            b"---\nBody with\nschema: 1\n---\nlines.\n")
    stamped = stamp_schema(hand, "memory/report-style.md")
    assert stamped == hand.replace(b"b]\n---\n", b"b]\nschema: 2\n---\n", 1)
    assert stamp_schema(stamped, "memory/report-style.md") == stamped  # current: as it is
    assert stamp_schema(STAMPED.replace(b"schema: 2", b"schema: 1"), "memory/report-style.md") == STAMPED
    assert stamp_schema(GOOD, "memory/report-style.md") == STAMPED
    with pytest.raises(InvalidFileError) as info:
        stamp_schema(STAMPED.replace(b"schema: 2", b"schema: 3"), "memory/report-style.md")
    assert info.value.findings[0].rule == "memory-schema"  # never downgraded
    odd = STAMPED.replace(b"schema: 2", b"schema:\n  1")  # the value on its own line
    with pytest.raises(InvalidFileError) as info:
        stamp_schema(odd, "memory/report-style.md")
    assert "by hand" in (info.value.hint or "")


TEN = dt.datetime(2026, 11, 29, 10, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize("value, expected", [
    (b"2026-11-29T12:00:00+02:00", TEN),        # YAML's own timestamp, with an offset
    (b"2026-11-29 10:00:00Z", TEN),             # YAML allows a space
    (b"2026-11-29T10:00:00.9Z", TEN),           # the file keeps whole seconds
    (b"'2026-11-29T10:00:00z'", TEN),           # quoted: desk.text.times reads it
    (b"2026-11-29", TEN.replace(hour=0)),       # YAML's date: midnight UTC
    (b"'2026-11-29'", TEN.replace(hour=0)),     # the same date quoted
])
def test_time_fields_read_like_every_other_time(value: bytes, expected: dt.datetime) -> None:
    data = GOOD.replace(b"created: 2026-11-29T10:00:00Z", b"created: " + value)
    memory = parse_memory(data, "memory/report-style.md", "report-style")
    assert memory.meta.created == expected and memory.meta.created.tzinfo is dt.timezone.utc
    assert b"created: " + expected.strftime("%Y-%m-%dT%H:%M:%SZ").encode() + b"\n" in memory.render()


@pytest.mark.parametrize("value, message", [
    (b"2026-11-29T10:00:00", "created: 2026-11-29 10:00:00 has no timezone"),   # YAML: a naive datetime
    (b"'2026-11-29T10:00:00'", "created: '2026-11-29T10:00:00' has no timezone"),
    ("'2026-11-29\u200bT10:00:00Z'".encode(), "is not an ISO 8601 time"),  # a zero-width space
    (b"'2026-02-30'", "is not a real time"),
    (b"12", "created: expected a UTC time like 2026-11-29T10:00:00Z, got 12"),
])
def test_bad_time_fields_are_named(value: bytes, message: str) -> None:
    error = refused(GOOD.replace(b"created: 2026-11-29T10:00:00Z", b"created: " + value))
    assert [f.rule for f in error.findings] == ["frontmatter-field"]
    assert message in error.findings[0].message and error.findings[0].line == 8


# Each malformed file, the file line the error must name, and the rule.
CORPUS = {
    "unclosed frontmatter": (b"---\nname: report-style\ntype: fact\nbody\n", 1, "frontmatter-unclosed"),
    "no frontmatter": (b"just text\n", 1, "frontmatter-missing"),
    "bom": (b"\xef\xbb\xbf" + GOOD, 1, "bom"),
    "top-level list": (b"---\n- name\n- type\n---\nbody\n", 2, "frontmatter-not-mapping"),
    "alias bomb": (b"---\na: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n---\nbody\n", 2, "yaml-alias"),
    "duplicate keys": (GOOD.replace(b"type: preference\n", b"type: preference\ntype: fact\n"), 5,
                       "yaml-duplicate-key"),
    "1 MiB frontmatter": (b"---\nname: x\ndescription: " + b"a" * (1 << 20) + b"\n---\nbody\n", 1, "file-size"),
    "big frontmatter": (b"---\nname: x\ndescription: " + b"a" * 9000 + b"\n---\nbody\n", 2, "frontmatter-size"),
    # 10k-deep nesting is over the frontmatter cap; 3k-deep fits under it and hits the depth limit.
    "10k-deep nesting": (b"---\nname: " + b"[" * 10000 + b"]" * 10000 + b"\n---\nbody\n", 2, "frontmatter-size"),
    "3k-deep nesting": (b"---\nname: " + b"[" * 3000 + b"]" * 3000 + b"\n---\nbody\n", 2, "yaml-depth"),
    "deep mapping": (b"---\nname:\n  a:\n    b:\n      c: 1\n---\nbody\n", 5, "yaml-depth"),
    "binary bytes": (GOOD + b"\x00\x01\x02", 11, "binary"),
    "invalid utf-8": (GOOD.replace(b"Chinese", b"Chin\xffse"), 10, "encoding"),
    "crlf": (GOOD.replace(b"\n", b"\r\n"), 1, "line-endings"),
    "yes where a string is expected": (GOOD.replace(b"Report language and length", b"yes"), 3,
                                       "frontmatter-field"),
    "012 where a string is expected": (GOOD.replace(b"  - report\n", b"  - 012\n"), 5, "frontmatter-field"),
    "bare date where a string is expected": (GOOD.replace(b"Report language and length", b"2024-01-02"), 3,
                                             "frontmatter-field"),
    "unknown key": (GOOD.replace(b"type: preference\n", b"type: preference\nmood: happy\n"), 5,
                    "frontmatter-field"),
    "unknown type": (GOOD.replace(b"type: preference", b"type: feeling"), 4, "frontmatter-field"),
    "missing description": (GOOD.replace(b"description: Report language and length\n", b""), 1,
                            "frontmatter-field"),
    "empty body": (GOOD.replace(b"Reports must be written in Chinese.\n", b"\n"), 10, "body-empty"),
    "name differs from file stem": (GOOD.replace(b"name: report-style", b"name: other"), 2, "name-mismatch"),
    "naive time": (GOOD.replace(b"10:00:00Z", b"10:00:00"), 8, "frontmatter-field"),
    "importance out of range": (GOOD.replace(b"type: preference\n", b"type: preference\nimportance: 9\n"), 5,
                                "frontmatter-field"),
    "yaml syntax": (GOOD.replace(b"type: preference", b"type: [unclosed"), 5, "yaml-syntax"),
}


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_malformed_files_are_refused_with_path_and_line(case: str) -> None:
    data, line, rule = CORPUS[case]
    error = refused(data)
    finding = error.findings[0]
    assert (finding.path, finding.line, finding.rule) == ("memory/report-style.md", line, rule), str(error)
    assert str(finding).startswith(f"memory/report-style.md:{line}: {rule}: ")


def test_field_errors_name_the_field() -> None:
    error = refused(GOOD.replace(b"Report language and length", b"yes"))
    assert "description:" in error.message and "quote the value" in error.message


@pytest.mark.parametrize("name", ["../x", "CON", "con", "a/b", "x" * 81, "", "-lead", "Upper", "trail.",
                                  "nul.txt", "a b"])
def test_bad_names_are_refused(name: str) -> None:
    assert name_problem(name) is not None
    data = GOOD.replace(b"name: report-style", b"name: '" + name.encode() + b"'")
    error = refused(data, "report-style")
    assert error.findings[0].line == 2 and "name" in error.message


@pytest.mark.parametrize("name", ["a", "report-style", "v1.2_notes", "x" * 80, "0day"])
def test_good_names_are_accepted(name: str) -> None:
    assert name_problem(name) is None


# -- property: every file desk writes reads back to the same bytes -------------------------------

_text = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=40)
_line = _text.map(str.strip).filter(bool)
_time = st.datetimes(min_value=dt.datetime(1971, 1, 1), max_value=dt.datetime(2999, 1, 1),
                     timezones=st.just(dt.timezone.utc)).map(lambda t: t.replace(microsecond=0))


@st.composite
def memories(draw: st.DrawFn) -> MemoryFile:
    name = draw(st.from_regex(r"[a-z0-9][a-z0-9_-]{0,20}", fullmatch=True).filter(lambda n: not name_problem(n)))
    meta = MemoryMeta(
        name=name, description=draw(_line), type=draw(st.sampled_from(MEMORY_TYPES)),
        triggers=draw(st.lists(_line, max_size=4)), importance=draw(st.none() | st.integers(1, 5)),
        source=draw(st.none() | st.sampled_from(["user", "agent", "digest", "import"])),
        source_event=draw(st.none() | _line), evidence=draw(st.lists(_line, max_size=3)),
        key=draw(st.none() | _line), expires=draw(st.none() | _time), created=draw(st.none() | _time),
        updated=draw(st.none() | _time))
    body = draw(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0\r"),
                        min_size=1, max_size=200).map(str.strip).filter(bool))
    return MemoryFile(meta, body + "\n")


@settings(max_examples=150, deadline=None)
@given(memories())
def test_write_read_write_is_identity(memory: MemoryFile) -> None:
    data = memory.render()
    again = parse_memory(data, f"memory/{memory.name}.md", memory.name)
    assert again == memory and again.meta.schema == MEMORY_SCHEMA
    assert again.render() == data
    # A file without the key (an older desk's) is stamped by `desk migrate` to what desk writes.
    old = memory.render(schema=None)
    assert b"\nschema:" not in old.split(b"\n---\n", 1)[0]
    assert stamp_schema(old, f"memory/{memory.name}.md") == data


def test_shared_objects_are_written_out_not_aliased() -> None:
    """created and updated are often the very same datetime object: no `&id001`/`*id001`."""
    now = dt.datetime(2026, 11, 29, 10, tzinfo=dt.timezone.utc)
    tags = ["report"]
    memory = MemoryFile(MemoryMeta(name="a", description="d", type="fact", triggers=tags, evidence=tags,
                                   created=now, updated=now), "Body.\n")
    data = memory.render()
    assert b"&" not in data and b"*" not in data
    assert parse_memory(data, "memory/a.md", "a") == memory
