"""desk.recall.context.cache: the kept view of memory/ renders exactly what a fresh build renders.

Files written by a test are racy (modified within 3 s), so their views are never stored; each test
here sets the memory files' mtimes an hour back, as files a person wrote earlier would have.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from pathlib import Path

import pytest

from desk.layout import DeskFolder
from desk.memory.operations import remember
from desk.recall.context import ContextRequest, build_context, render_markdown
from desk.recall.context.cache import memory_view, scan_memory_folder
from desk.recall.git_state import start_folder_state
from tests.history_helpers import person

NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc)


def _remember(desk: DeskFolder, name: str, triggers: tuple[str, ...], **extra: object) -> None:
    remember(desk, name, type="preference", description=f"About {name}", body=f"The {name} rule.",
             triggers=triggers, now=NOW, **extra)  # type: ignore[arg-type]


def _settle(desk: DeskFolder, age: float = 3600) -> None:
    """Set every memory file's mtime `age` seconds back (distinct times, as real edits have)."""
    for i, path in enumerate(sorted(desk.path("memory").glob("*.md"))):
        when = path.stat().st_mtime - age - i
        os.utime(path, (when, when))


def _stored(desk: DeskFolder) -> list[tuple[str, str]]:
    path = desk.cache_dir / "context.sqlite"
    if not path.exists():
        return []
    with sqlite3.connect(path) as db:
        return db.execute("SELECT key, names FROM memory_view_v4").fetchall()


def _both(desk: DeskFolder, **kwargs: object) -> tuple[str, str]:
    """The context from the kept view and from a fresh build (the cache file removed)."""
    kept = build_context(desk, ContextRequest(**kwargs))  # type: ignore[arg-type]
    (desk.cache_dir / "context.sqlite").unlink()
    (desk.cache_dir / "entries.sqlite").unlink()
    fresh = build_context(desk, ContextRequest(**kwargs))  # type: ignore[arg-type]
    return (render_markdown(kept) + json.dumps(kept.to_json(), sort_keys=True),
            render_markdown(fresh) + json.dumps(fresh.to_json(), sort_keys=True))


def test_kept_view_renders_what_a_fresh_build_renders(desk: DeskFolder) -> None:
    _remember(desk, "report-style", ("Report", "报告", "weekly  summary"), importance=4)
    _remember(desk, "reporting-tool", ("reporting tool",))
    _remember(desk, "port-numbers", ("port",))
    _remember(desk, "temp-freeze", ("report",), expires="2026-11-29T18:00:00Z")
    desk.path("memory/broken.md").write_text("---\nname: broken\n", "utf-8")  # does not parse
    _settle(desk)
    build_context(desk, ContextRequest(query="x", as_of=NOW))  # builds and stores the view
    assert len(_stored(desk)) == 1
    for query in ("write the weekly REPORTS", "写报告", "the reporting tool, weekly summary", "airport", None):
        for as_of in (NOW, NOW + dt.timedelta(days=1)):  # before and after temp-freeze expires
            build_context(desk, ContextRequest(query="x", as_of=as_of))  # the view for this expired set, stored
            kept, fresh = _both(desk, query=query, as_of=as_of)
            assert kept == fresh, (query, as_of)
    out = render_markdown(build_context(desk, ContextRequest(query="write the weekly REPORTS", as_of=NOW)))
    assert "The report-style rule." in out and "The temp-freeze rule." in out
    assert "The port-numbers rule." not in out and "The reporting-tool rule." not in out
    assert "memory/broken.md left out" in out
    later = render_markdown(build_context(desk, ContextRequest(query="write the weekly REPORTS", as_of=NOW + dt.timedelta(days=1))))
    assert "The report-style rule." in later and "The temp-freeze rule." not in later  # expired
    assert "[temp-freeze]" not in later and "1 expired memory not shown" in later


def test_a_kept_view_answers_without_loading_the_entries(desk: DeskFolder) -> None:
    _remember(desk, "report-style", ("report",))
    _settle(desk)
    expected = render_markdown(build_context(desk, ContextRequest(query="report", as_of=NOW)))
    (desk.cache_dir / "entries.sqlite").unlink()
    assert render_markdown(build_context(desk, ContextRequest(query="nothing here", as_of=NOW))) == render_markdown(
        build_context(desk, ContextRequest(as_of=NOW)))
    assert not (desk.cache_dir / "entries.sqlite").exists()  # no memory was hit: no entry was read
    # a hit looks its entry up by blob id; the lost entry cache is rebuilt from the files
    assert render_markdown(build_context(desk, ContextRequest(query="report", as_of=NOW))) == expected


def test_a_kept_view_whose_lists_do_not_match_is_built_again(desk: DeskFolder) -> None:
    _remember(desk, "alpha", ("alpha",))
    _remember(desk, "beta", ("beta",))
    _settle(desk)
    expected = render_markdown(build_context(desk, ContextRequest(query="beta", as_of=NOW)))
    with sqlite3.connect(desk.cache_dir / "context.sqlite") as db:  # a damaged row
        db.execute("UPDATE memory_view_v4 SET names = 'alpha'")
    assert render_markdown(build_context(desk, ContextRequest(query="beta", as_of=NOW))) == expected
    with sqlite3.connect(desk.cache_dir / "context.sqlite") as db:
        assert db.execute("SELECT names FROM memory_view_v4").fetchone() == ("alpha\0beta",)


def test_any_change_to_memory_files_builds_the_view_again(desk: DeskFolder) -> None:
    _remember(desk, "alpha", ("alpha",))
    _remember(desk, "beta", ("beta",))
    _settle(desk)
    build_context(desk, ContextRequest(as_of=NOW))
    key = _stored(desk)[0][0]
    path = desk.path("memory/alpha.md")
    path.write_text(path.read_text("utf-8").replace("About alpha", "Alpha, edited by hand"), "utf-8")
    _settle(desk)
    out = render_markdown(build_context(desk, ContextRequest(query="alpha", as_of=NOW)))
    assert "Alpha, edited by hand" in out
    assert _stored(desk)[0][0] != key
    desk.path("memory/beta.md").unlink()
    out = render_markdown(build_context(desk, ContextRequest(query="beta", as_of=NOW)))
    assert "[beta]" not in out and "The beta rule." not in out
    assert _stored(desk)[0][1] == "alpha"


def test_a_view_is_not_kept_while_a_file_may_still_change_unseen(desk: DeskFolder) -> None:
    _remember(desk, "alpha", ("alpha",))
    _settle(desk)
    _remember(desk, "fresh", ("fresh",))  # written just now: racy
    assert scan_memory_folder(desk)[1] is False
    view = memory_view(desk, NOW)
    assert "[alpha]" in view.index_text and "[fresh]" in view.index_text and view.candidates("fresh") == ["fresh"]
    assert _stored(desk) == []
    _settle(desk)
    assert scan_memory_folder(desk)[1] is True


def test_a_symlinked_memory_file_is_left_out_as_the_entries_leave_it(desk: DeskFolder, tmp_path: Path) -> None:
    _remember(desk, "alpha", ("alpha",))
    outside = tmp_path / "secret.md"
    outside.write_text(desk.path("memory/alpha.md").read_text("utf-8").replace("alpha", "linked"), "utf-8")
    desk.path("memory/linked.md").symlink_to(outside)
    _settle(desk)
    build_context(desk, ContextRequest(as_of=NOW))
    out = render_markdown(build_context(desk, ContextRequest(query="linked", as_of=NOW)))
    assert "[linked]" not in out and "<desk-memory" not in out


# -- the key from git: HEAD's memory tree and the files git cannot vouch for (issue 17) ----------


def _context(desk: DeskFolder, query: str) -> str:
    return render_markdown(build_context(desk, ContextRequest(query=query, as_of=NOW)))


def _counting_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the views built from the files (not taken from the cache)."""
    import desk.recall.context.cache as context_cache

    built: list[int] = []
    real = context_cache.entries_in_worktree

    def counted(*args: object, **kwargs: object) -> object:
        built.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(context_cache, "entries_in_worktree", counted)
    return built


def _kept(desk: DeskFolder) -> None:
    """Settle the files, refresh git's stat data (as `git status` would) and build the view."""
    _settle(desk)
    person(desk.root, "update-index", "-q", "--refresh")
    build_context(desk, ContextRequest(as_of=NOW))
    assert len(_stored(desk)) == 1


def test_the_git_key_reuses_the_view_while_nothing_changed(desk: DeskFolder, monkeypatch: pytest.MonkeyPatch) -> None:
    _remember(desk, "alpha", ("alpha",))
    _remember(desk, "beta", ("beta",))
    _kept(desk)
    built = _counting_builds(monkeypatch)
    state = start_folder_state(desk)
    assert state is not None and state.result() == (person(desk.root, "rev-parse", "HEAD:memory").strip(), [])
    for _ in range(2):
        assert "The alpha rule." in _context(desk, "alpha")
    assert built == []  # taken from the cache both times


def test_same_size_hand_edits_show_also_in_the_second_desk_wrote_the_file(desk: DeskFolder) -> None:
    _remember(desk, "alpha", ("alpha",))
    _kept(desk)
    path = desk.path("memory/alpha.md")
    size = path.stat().st_size
    path.write_text(path.read_text("utf-8").replace("About alpha", "ABOUT ALPHA"), "utf-8")
    assert path.stat().st_size == size
    assert "— ABOUT ALPHA" in _context(desk, "alpha")  # the index line, from the view
    # written by desk and edited at once (most likely the same second: git's index entry is then
    # racily clean, and git compares the content)
    _remember(desk, "beta", ("beta",))
    path = desk.path("memory/beta.md")
    path.write_text(path.read_text("utf-8").replace("About beta", "ABOUT BETA"), "utf-8")
    assert "— ABOUT BETA" in _context(desk, "beta")


def test_files_added_ignored_and_removed_by_hand_show(desk: DeskFolder) -> None:
    _remember(desk, "alpha", ("alpha",))
    _remember(desk, "beta", ("beta",))
    _kept(desk)
    text = desk.path("memory/alpha.md").read_text("utf-8")
    desk.path("memory/gamma.md").write_text(text.replace("alpha", "gamma"), "utf-8")  # untracked
    out = _context(desk, "gamma")
    assert "The gamma rule." in out and "[gamma](memory/gamma.md) — About gamma" in out
    _kept(desk)
    desk.path(".gitignore").write_text(desk.path(".gitignore").read_text("utf-8") + "memory/delta.md\n", "utf-8")
    desk.path("memory/delta.md").write_text(text.replace("alpha", "delta"), "utf-8")  # ignored by git
    out = _context(desk, "delta")  # the files on disk, as without git
    assert "The delta rule." in out and "[delta](memory/delta.md) — About delta" in out
    _kept(desk)
    desk.path("memory/beta.md").unlink()  # tracked, removed from the work tree
    out = _context(desk, "beta")
    assert "[beta]" not in out and "The beta rule." not in out


def test_a_person_commit_a_reset_and_a_branch_switch_show(desk: DeskFolder) -> None:
    _remember(desk, "alpha", ("alpha",))
    _kept(desk)
    path = desk.path("memory/alpha.md")
    original = path.read_text("utf-8")
    person(desk.root, "checkout", "-q", "-b", "other")
    path.write_text(original.replace("About alpha", "Alpha on the other branch"), "utf-8")
    person(desk.root, "commit", "-q", "-am", "person: alpha on another branch")  # a person's commit
    assert "— Alpha on the other branch" in _context(desk, "alpha")  # the index line, from the view
    _kept(desk)
    person(desk.root, "checkout", "-q", "-")  # back: HEAD's tree and the file change together
    out = _context(desk, "alpha")
    assert "— About alpha" in out and "other branch" not in out
    _kept(desk)
    person(desk.root, "reset", "-q", "--hard", "other")
    assert "— Alpha on the other branch" in _context(desk, "alpha")


def test_a_memory_file_replaced_by_a_symlink_is_left_out(desk: DeskFolder, tmp_path: Path) -> None:
    _remember(desk, "alpha", ("alpha",))
    _remember(desk, "beta", ("beta",))
    _kept(desk)
    path = desk.path("memory/beta.md")
    outside = tmp_path / "beta.md"
    outside.write_text(path.read_text("utf-8").replace("The beta rule.", "Linked text."), "utf-8")
    path.unlink()
    path.symlink_to(outside)  # a tracked file, now a link: git reports the type change
    out = _context(desk, "beta")
    assert "Linked text." not in out and "[beta]" not in out and "[alpha](memory/alpha.md)" in out


def test_a_linked_memory_folder_is_scanned_file_by_file(desk: DeskFolder, tmp_path: Path) -> None:
    _remember(desk, "alpha", ("alpha",))
    _settle(desk)
    moved = tmp_path / "elsewhere"
    desk.path("memory").rename(moved)
    desk.path("memory").symlink_to(moved)  # git sees one untracked link, not the files behind it
    state = start_folder_state(desk)
    assert scan_memory_folder(desk, state) == scan_memory_folder(desk)  # the stat of every file


def _index_source(desk: DeskFolder) -> dict[str, object]:
    """The MEMORY.md source of a wake-up read."""
    result = build_context(desk, ContextRequest(as_of=NOW))
    (section,) = [s for s in result.sections if s.key == "memory_index"]
    (source,) = section.sources
    return source


def test_memory_md_s_source_names_its_blob_and_any_change_is_seen(desk: DeskFolder) -> None:
    """MEMORY.md's source names its blob, and every change of the file, even one that keeps its
    size and puts its mtime back, is seen; a link is never read through."""
    from desk.storage.git import blob_sha

    _remember(desk, "report-style", ("report",))
    index = desk.path("MEMORY.md")
    old = index.stat().st_mtime - 3600
    os.utime(index, (old, old))
    real = blob_sha(index.read_bytes())
    source = _index_source(desk)
    assert source["blob"] == real and source["committed"] is True
    data = index.read_bytes()
    index.write_bytes(data.replace(b"report", b"REPORT"))  # same size, mtime put back
    os.utime(index, (old, old))
    source = _index_source(desk)
    assert source["blob"] == blob_sha(index.read_bytes()) != real and source["committed"] is False
    index.unlink()
    index.symlink_to(desk.path("AGENTS.md"))
    source = _index_source(desk)
    assert "blob" not in source


def test_a_read_with_hits_opens_the_entry_cache_once(desk: DeskFolder, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hits' entries and their last commits (the HEAD mirror) come from one connection to
    entries.sqlite (each open sets WAL mode: ~0.3 ms); the answer is the one two opens gave."""
    from desk.storage import sqlite_cache

    for i in range(3):
        _remember(desk, f"lamp-{i}", ("lamp",))
    build_context(desk, ContextRequest(query="lamp", as_of=NOW))  # caches built
    expected = render_markdown(build_context(desk, ContextRequest(query="lamp", as_of=NOW)))
    opened: list[str] = []
    real = sqlite_cache._open

    def counted(path: Path | str, *args: object) -> sqlite3.Connection:
        opened.append(Path(path).name)
        return real(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(sqlite_cache, "_open", counted)
    result = build_context(desk, ContextRequest(query="lamp", as_of=NOW))
    assert len(result.recalled) == 3 and all(m["commit"] for m in result.recalled)  # from the mirror
    assert render_markdown(result) == expected
    assert opened.count("entries.sqlite") == 1
