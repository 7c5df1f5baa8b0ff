"""The gate scans only the lines a desk commit splices into a MEMORY.md known clean
(desk.gate.validate, `KnownHead.index_clean`), and its findings are exactly the whole scan's."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from desk.errors import InvalidFileError
from desk.gate import rules
from desk.gate.validate import KnownHead, validate_writes
from desk.layout import INDEX_FILE, DeskFolder
from desk.formats.memory_file import MemoryFile, MemoryMeta, parse_memory
from desk.formats.memory_index import IndexEntry, memory_path
from desk.gate.mirror import head_mirror
from desk.memory.operations import remember
from desk.text.secrets import clean_lines

NOW = dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.timezone.utc)
KEY = "gh" + "p_" + "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC1234"  # built so no scanner flags this file
PIECES = ["token=", KEY[:20], KEY[20:], KEY, "\u200b", "ｔｏｋｅｎ＝", "aB3dE5gH7jK9", "报告，", " ", "x"]


def _writes(desk: DeskFolder, name: str, description: str) -> tuple[dict[str, bytes | None], KnownHead]:
    memory = MemoryFile(MemoryMeta(name=name, description=description, type="fact", triggers=["w"],
                                   created=NOW, updated=NOW), "A fact.\n")
    with head_mirror(desk) as mirror:
        index = mirror.render_index({name: IndexEntry.of(memory)})
        known = KnownHead(mirror.commit, mirror.head_blobs([name]), None, index, True)
    return {memory_path(name): memory.render(), INDEX_FILE: index}, known


def _base(desk: DeskFolder) -> None:
    for name in ("alpha", "omega"):
        remember(desk, name, type="fact", description=f"the {name} fact", body=f"About {name}.",
                 triggers=["w"], now=NOW)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=5).map("".join).map(str.strip).filter(bool))
@example(KEY * 4)  # clean (the keys run together), but over 150 characters: the memory does not parse
@example(KEY)
def test_one_line_scan_finds_exactly_what_the_whole_scan_finds(desk: DeskFolder, monkeypatch: pytest.MonkeyPatch,
                                                              description: str) -> None:
    if not desk.git.refs.head() or desk.git.objects.blob_at("HEAD", "memory/alpha.md") is None:
        _base(desk)
    writes, known = _writes(desk, "middle", description)
    scanned: list[str] = []
    scan_items = rules._secret_items

    def spy(path: str, text: str, *args: Any, **kwargs: Any) -> Any:
        scanned.append(path)
        return scan_items(path, text, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(rules, "_secret_items", spy)
        fast = validate_writes(desk, writes, "remember: middle\n", NOW, known)
    line = f"- [middle](memory/middle.md) — {description}"
    try:  # a memory that does not parse (a description over 150 characters) has no line to splice
        parse_memory(writes[memory_path("middle")] or b"", memory_path("middle"), "middle")
        parses = True
    except InvalidFileError:
        parses = False
    # MEMORY.md's text is scanned only when its new line is not clean (its name always is).
    assert scanned.count(INDEX_FILE) == 1 + (not (parses and clean_lines(line)))
    unclean = KnownHead(known.commit, known.blobs, known.like, known.index, index_clean=False)
    whole = validate_writes(desk, writes, "remember: middle\n", NOW, unclean)
    assert [f.to_json() for f in fast.findings] == [f.to_json() for f in whole.findings]


def test_a_claimed_clean_index_that_is_not_a_splice_is_scanned_whole(desk: DeskFolder) -> None:
    _base(desk)
    writes, known = _writes(desk, "middle", "a plain fact")
    index = writes[INDEX_FILE]
    assert index is not None
    writes[INDEX_FILE] = index.replace(b"the omega fact", b"the omega fact " + KEY.encode())
    report = validate_writes(desk, writes, "remember: middle\n", NOW, known)
    assert {(f.path, f.rule) for f in report.errors} == {(INDEX_FILE, "secret"), (INDEX_FILE, "index-stale")}
    secret = next(f for f in report.errors if f.rule == "secret")
    assert secret.line == index.count(b"\n", 0, index.index(b"the omega fact")) + 1
