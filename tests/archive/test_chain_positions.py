"""The archive's chain rules hold at every position of a file (issue 35): only the first line may
start a chain (null `prev`), the first line may not claim a predecessor, and only a fragment the
next record's `prev` hashes is a torn write; any other damaged line is an error, wherever it is.
Each case is checked on the whole file and on an append after each possible committed prefix, and
the reader (`parse_lines`) agrees with the check.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from desk.archive.store import append_event, clone_id
from desk.errors import Finding, InvalidFileError
from desk.formats.archive import check_archive_change, line_hash, parse_lines, record_json
from desk.layout import DeskFolder

NOW = dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.timezone.utc)
COUNT = 4


@pytest.fixture
def chain(desk: DeskFolder) -> tuple[str, list[bytes]]:
    """The archive path and the lines (without newlines) of a file of COUNT records."""
    for i in range(COUNT):
        append_event(desk, "inbound", f"message {i}", at=NOW, now=NOW)
    path = f".system/archive/{NOW:%Y-%m-%d}.{clone_id(desk)}.jsonl"
    return path, desk.path(path).read_bytes().splitlines()


def _rechained(lines: list[bytes], at: int, prev: str | None) -> list[bytes]:
    """`lines` with line `at` given `prev` and every later line's prev made to hash its predecessor
    again: what a forger who knows the chain rule would write."""
    out = lines[:at]
    for i, line in enumerate(lines[at:], at):
        rec = json.loads(line)
        rec["prev"] = prev if i == at else line_hash(out[-1])
        out.append(record_json(rec).encode())
    return out


def _findings(desk: DeskFolder, path: str, lines: list[bytes], committed: int = 0) -> list[Finding]:
    """The check of a commit that adds `lines[committed:]` to a file of `lines[:committed]`."""
    old = b"".join(line + b"\n" for line in lines[:committed]) or None
    return check_archive_change(path, old, b"".join(line + b"\n" for line in lines), desk.config.desk_id)


def _errors(findings: list[Finding]) -> list[tuple[int, str]]:
    return [(f.line, f.rule) for f in findings if f.severity == "error"]


def test_the_untouched_chain_is_accepted_whole_and_as_every_append(desk: DeskFolder,
                                                                   chain: tuple[str, list[bytes]]) -> None:
    path, lines = chain
    for committed in range(COUNT + 1):
        assert _findings(desk, path, lines, committed) == []


@pytest.mark.parametrize("at", range(1, COUNT))
def test_a_null_prev_after_the_first_line_is_a_chain_error(desk: DeskFolder, chain: tuple[str, list[bytes]],
                                                           at: int) -> None:
    path, lines = chain
    forged = _rechained(lines, at, None)
    for committed in range(at + 1):  # the forged line in the commit, after any committed prefix
        assert _errors(_findings(desk, path, forged, committed)) == [(at + 1, "archive-chain")], committed


def test_the_first_line_may_not_claim_a_predecessor(desk: DeskFolder, chain: tuple[str, list[bytes]]) -> None:
    path, lines = chain
    assert json.loads(lines[0])["prev"] is None  # the one place a null prev belongs
    forged = _rechained(lines, 0, line_hash(b"a line cut from the top"))
    assert _errors(_findings(desk, path, forged)) == [(1, "archive-chain")]


@pytest.mark.parametrize("at", range(COUNT))
def test_a_damaged_line_is_an_error_wherever_it_is_even_followed_by_a_record(
        desk: DeskFolder, chain: tuple[str, list[bytes]], at: int) -> None:
    path, lines = chain
    damaged = [*lines[:at], lines[at][: len(lines[at]) // 2], *lines[at + 1:]]  # cut, not closed by the next
    for committed in range(at + 1):
        found = _findings(desk, path, damaged, committed)
        assert (at + 1, "archive-record") in _errors(found), committed
        assert all(f.rule != "archive-torn" for f in found), committed
    with pytest.raises(InvalidFileError):
        parse_lines(b"".join(line + b"\n" for line in damaged), path, [])


@pytest.mark.parametrize("at", range(COUNT))
def test_a_fragment_the_next_record_hashes_is_a_torn_write_wherever_it_is(
        desk: DeskFolder, chain: tuple[str, list[bytes]], at: int) -> None:
    path, lines = chain
    fragment = lines[at][: len(lines[at]) // 2]
    torn = [*lines[:at], fragment, *_rechained(lines[at:], 0, line_hash(fragment))]  # appended after the tear
    # the records after the fragment keep their own ids: the fragment took no sequence number
    found = _findings(desk, path, torn)
    assert [(f.line, f.rule, f.severity) for f in found] == [(at + 1, "archive-torn", "warning")]
    problems: list[Finding] = []
    assert len(parse_lines(b"".join(line + b"\n" for line in torn), path, problems)) == COUNT
    assert [(f.line, f.rule) for f in problems] == [(at + 1, "archive-torn")]
