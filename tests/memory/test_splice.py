"""MEMORY.md spliced, not rebuilt: each mutation puts its memory's one line into HEAD's MEMORY.md
(desk.formats.memory_index.splice_lines, desk.gate.mirror), and the result is always byte for byte the
index rendered from the memory files; anything the mirror cannot vouch for is rendered whole."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from desk.errors import DeskError
from desk.layout import INDEX_FILE, DeskFolder
from desk.gate import mirror as mirror_module
from desk.formats.memory_index import EMPTY, HEADER, IndexEntry, render_index, splice_lines
from desk.gate.entries import entries_in_worktree
from desk.gate.mirror import head_mirror
from desk.memory.operations import CLEAN_NOTE, forget, remember
from desk.memory.revise import rename
from desk.setup.init import init_desk
from tests.history_helpers import person

NOW = dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.timezone.utc)
LATER = dt.datetime(2027, 1, 1, tzinfo=dt.timezone.utc)
NAMES = ["a", "a-b", "a.b", "a0", "b", "m", "m0", "zeta", "x_1"]
DESCRIPTIONS = st.text(st.sampled_from("ab Z9—报告，](.-_é"), min_size=1, max_size=12).map(str.strip).filter(bool)


def _entry(name: str, description: str, expires: str | None = None) -> IndexEntry:
    return IndexEntry(name, "fact", description, expires, "")


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(NAMES), DESCRIPTIONS),
       st.dictionaries(st.sampled_from(NAMES), st.none() | DESCRIPTIONS, min_size=1, max_size=3),
       st.booleans())
def test_splicing_lines_equals_rendering_the_whole_index(before: dict[str, str],
                                                        change: dict[str, str | None], expiring: bool) -> None:
    expires = "2027-01-01T00:00:00Z" if expiring else None
    entries = {name: _entry(name, text) for name, text in before.items()}
    lines = {name: None if text is None else _entry(name, text, expires).line() for name, text in change.items()}
    after = {**entries, **{name: _entry(name, text, expires) for name, text in change.items() if text is not None}}
    for name in (n for n, text in change.items() if text is None):
        after.pop(name, None)
    assert splice_lines(render_index(entries.values()), lines) == render_index(after.values())


def test_splice_refuses_what_desk_did_not_write() -> None:
    good = render_index([_entry("a", "one"), _entry("c", "three")])
    assert splice_lines(good.replace(b"# MEMORY.md", b"# MEMORY"), {"b": "- [b](memory/b.md) — two"}) is None
    assert splice_lines(good + b"a stray line", {"b": "- [b](memory/b.md) — two"}) is None
    assert splice_lines(good.replace(b"- [c]", b"* [c]"), {"d": "- [d](memory/d.md) — four"}) is None
    assert splice_lines(good, {"a": None, "c": None}) == (HEADER + "\n" + EMPTY).encode()
    with pytest.raises(ValueError):
        splice_lines(good, {"b": "- [c](memory/c.md) — not b's line"})


def _rendered(desk: DeskFolder) -> bytes:
    return render_index(entries_in_worktree(desk).values())


def _assert_index_exact(desk: DeskFolder) -> None:
    expected = _rendered(desk)
    assert desk.path(INDEX_FILE).read_bytes() == expected
    assert desk.git.objects.blob_at("HEAD", INDEX_FILE) == expected


OPS = st.lists(st.tuples(st.sampled_from(["remember", "update", "forget", "rename"]), st.sampled_from(NAMES),
                         st.sampled_from(NAMES), DESCRIPTIONS, st.booleans()), min_size=1, max_size=5)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(OPS)
def test_mutations_splice_to_exactly_the_rendered_index(tmp_path_factory: pytest.TempPathFactory,
                                                        ops: list[tuple[str, str, str, str, bool]]) -> None:
    """Random remember/update/forget/rename sequences: after each, MEMORY.md (work tree and HEAD) is
    exactly the index of the memory files, and the mirror vouches for it, so the next one splices."""
    root = tmp_path_factory.mktemp("splice") / "desk"
    init_desk(root)
    desk = DeskFolder(root)
    landed = False
    for op, name, other, description, expiring in ops:
        try:
            if op in ("remember", "update"):
                remember(desk, name, type="fact", description=description, body=f"{op} {name}: {description}",
                         triggers=["word"], expires=LATER if expiring else None, now=NOW)
            elif op == "forget":
                forget(desk, name)
            else:
                rename(desk, name, other)
            landed = True
        except DeskError:
            pass  # no such memory, a name taken, the gate refused: nothing changed either way
        _assert_index_exact(desk)
        if landed:
            with head_mirror(desk) as mirror:
                assert mirror.index_exact
                assert mirror.index_note(CLEAN_NOTE) is not None


def _remember(desk: DeskFolder, name: str, description: str = "a fact") -> None:
    remember(desk, name, type="fact", description=description, body=f"The fact about {name}.",
             triggers=["word"], now=NOW)


def test_a_persons_commit_of_memory_files_renders_the_whole_index_again(desk: DeskFolder) -> None:
    for name in ("alpha", "beta"):
        _remember(desk, name)
    # A person adds a memory and commits a MEMORY.md that leaves it out, past the hooks.
    desk.path("memory/gamma.md").write_bytes(desk.path("memory/beta.md").read_bytes().replace(b"beta", b"gamma"))
    person(desk.root, "add", "memory/gamma.md")
    person(desk.root, "commit", "-q", "--no-verify", "-m", "person: gamma, index stale")
    with head_mirror(desk) as mirror:
        assert not mirror.index_exact  # the commit changed memory/: nothing noted holds
        assert mirror.index_note(CLEAN_NOTE) is None
    _remember(desk, "delta")
    _assert_index_exact(desk)  # gamma's line is there: rendered from every row, not spliced
    assert b"[gamma]" in desk.path(INDEX_FILE).read_bytes()
    with head_mirror(desk) as mirror:
        assert mirror.index_exact


def test_a_persons_commit_of_other_files_keeps_the_notes(desk: DeskFolder) -> None:
    _remember(desk, "alpha")
    desk.path("NOW.md").write_text("doing: things\n")
    person(desk.root, "commit", "-q", "-am", "person: now")
    with head_mirror(desk) as mirror:
        assert mirror.index_exact and mirror.index_note(CLEAN_NOTE) is not None


def test_another_index_code_renders_the_whole_index(desk: DeskFolder, monkeypatch: pytest.MonkeyPatch) -> None:
    _remember(desk, "alpha")
    monkeypatch.setattr(mirror_module, "render_version", lambda: "another version")
    with head_mirror(desk) as mirror:
        assert not mirror.index_exact
    _remember(desk, "beta")
    _assert_index_exact(desk)
    with head_mirror(desk) as mirror:
        assert mirror.index_exact  # noted under the version now running


def test_another_scanner_scans_the_whole_index_again(desk: DeskFolder, monkeypatch: pytest.MonkeyPatch) -> None:
    from desk.text import secrets

    _remember(desk, "alpha")
    with head_mirror(desk) as mirror:
        assert mirror.index_note(CLEAN_NOTE) == f"{secrets.scanner_version()} 1"
    monkeypatch.setattr(secrets, "scanner_version", lambda: "another scanner")
    _remember(desk, "beta")
    with head_mirror(desk) as mirror:
        assert mirror.index_note(CLEAN_NOTE) == "another scanner 1"


def test_a_hand_edited_committed_index_is_caught_and_then_repaired(desk: DeskFolder, tmp_path: Path) -> None:
    for name in ("alpha", "beta"):
        _remember(desk, name)
    index = desk.path(INDEX_FILE)
    index.write_bytes(index.read_bytes().replace(b"a fact", b"an edited fact", 1))
    person(desk.root, "commit", "-q", "--no-verify", "-am", "person: hand edit of MEMORY.md")
    from desk.gate.whole import validate_all

    assert [f.rule for f in validate_all(desk).errors] == ["index-stale"]
    _remember(desk, "gamma")
    _assert_index_exact(desk)
    assert validate_all(desk).ok


def test_reindex_repairs_a_committed_hand_edit_and_the_next_mutation_splices_again(desk: DeskFolder) -> None:
    from desk.memory.operations import reindex

    for name in ("alpha", "beta"):
        _remember(desk, name)
    index = desk.path(INDEX_FILE)
    index.write_bytes(index.read_bytes().replace(b"- [beta]", b"- [gamma]"))
    person(desk.root, "commit", "-q", "--no-verify", "-am", "person: hand edit of MEMORY.md")
    assert reindex(desk).status == "updated"
    _assert_index_exact(desk)
    _remember(desk, "delta")
    _assert_index_exact(desk)
    with head_mirror(desk) as mirror:
        assert mirror.index_exact and mirror.index_note(CLEAN_NOTE) is not None
