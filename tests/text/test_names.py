"""One name rule for every name that becomes a path (issue 15.10): whole-string matches only."""

from __future__ import annotations

import json

import pytest

from desk.layout import DeskFolder
from desk.text.names import path_name_problem
from tests.conftest import DeskRunner, git


@pytest.mark.parametrize("name", ["foo\n", "foo\r", "con", "con.md", "nul.txt", "Com1", "x.", "", "a/b",
                                  "x.md", "report.md"])
def test_names_that_cannot_be_files_are_refused(name: str) -> None:
    assert path_name_problem(name, limit=80) is not None


def test_a_memory_name_ending_in_a_newline_is_refused_and_nothing_changes(desk: DeskFolder,
                                                                            run: DeskRunner) -> None:
    head = git(desk.root, "rev-parse", "HEAD")
    result = run("remember", "foo\n", "--type", "fact", "-d", "d", "-t", "foo", "Foo body.")
    assert result.exit_code == 3 and "lowercase slug" in result.output
    assert git(desk.root, "rev-parse", "HEAD") == head
    assert not list((desk.root / "memory").glob("foo*"))


@pytest.mark.parametrize("field,value", [("--kind", "note\n")])
def test_an_archive_kind_ending_in_a_newline_is_refused(run: DeskRunner, field: str, value: str) -> None:
    result = run("archive", "append", field, value, "text")
    assert result.exit_code != 0


def test_a_fact_key_ending_in_a_newline_is_refused(run: DeskRunner) -> None:
    result = run("fact", "add", "Python is 3.12", "--kind", "convention", "--importance", "3",
                 "--key", "runtime.python\n")
    assert result.exit_code == 3 and "key must be lowercase words" in result.output


@pytest.mark.parametrize("session", ["con", "nul", "aux.md", "s1\n"])
def test_a_session_id_that_is_not_a_safe_file_name_gets_a_hashed_view(desk: DeskFolder, run: DeskRunner,
                                                                      session: str) -> None:
    assert run("archive", "append", "--kind", "inbound", "--session", session, "--actor", "user",
               "--at", "2026-11-29T10:00:00Z", "hello").exit_code == 0
    out = json.loads(run("conversations", "render", "--json").output)
    (view,) = out["files"]
    stem = view.rsplit("/", 1)[1][:-3]
    assert stem != session.strip() and "\n" not in stem and path_name_problem(stem, limit=80) is None
