"""The registry of derived state (desk.storage.derived) and its code fingerprint (desk.storage.code_print)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

import desk.layout as layout
import desk.storage.code_print as code_print_module
from desk.api import init
from desk.storage.code_print import MEMO_FILE, code_print, import_graph, module_path
from desk.storage.derived import CACHE_FOLDER, NOT_DERIVED, REGISTRY, RETIRED, registered
from desk.storage.sqlite_cache import open_cache

ROOT = Path(__file__).resolve().parents[2]
CONTEXT = registered("context").builders


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the desk package whose sources a test may edit. The copies are all written just
    now, so the memo would keep none of them (the racy rule): the window is closed instead, as
    for sources installed long ago (each edit still moves a file's ctime)."""
    monkeypatch.setattr(code_print_module, "_RACY_NS", 0)
    copy = tmp_path / "src" / "desk"
    shutil.copytree(ROOT / "desk", copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def test_every_builder_is_a_module_and_every_name_is_unique() -> None:
    for entry in REGISTRY:
        assert entry.builders, entry.name
        for builder in entry.builders:
            assert module_path(builder) is not None, (entry.name, builder)
    for names in ([entry.name for entry in REGISTRY], [entry.path for entry in REGISTRY]):
        assert len(names) == len(set(names))
    assert registered("search.sqlite") is registered("search")
    assert CACHE_FOLDER == layout.CACHE_FOLDER
    with pytest.raises(KeyError):
        registered("nothing")


def test_every_file_desk_derives_is_registered(tmp_path: Path) -> None:
    """What desk leaves in .git/desk-cache/ and beside git's own files after the commands that
    make caches is exactly what the registry names (or the records the registry leaves to others)."""
    with init(tmp_path / "desk") as desk:
        desk.remember("report-style", "Reports in Chinese, under 500 characters.", type="preference",
                      description="Report language", triggers=["report"])
        desk.recall("report")
        desk.context(query="write the report")
        desk.validate("all")
        desk.doctor()
        git_dir = desk.git_dir
    made = {f"{CACHE_FOLDER}/{p.name}" for p in (git_dir / CACHE_FOLDER).iterdir()}
    made |= {p.name for p in git_dir.iterdir() if p.name.startswith("desk-") and p.is_file()}
    registered_paths = {entry.path for entry in REGISTRY}
    side = {f"{path}{suffix}" for path in registered_paths if path.endswith(".sqlite") for suffix in ("-wal", "-shm")}
    assert {name for name in made - registered_paths - side if not name.startswith(NOT_DERIVED)} == set()
    assert {f"{CACHE_FOLDER}/{name}" for name in ("entries.sqlite", "search.sqlite", "verdicts.sqlite",
                                                  "context.sqlite", MEMO_FILE)} <= made
    assert not set(RETIRED) & made


def test_changing_any_module_a_builder_imports_changes_its_fingerprint(package: Path, tmp_path: Path) -> None:
    """Editing a desk module moves the fingerprint of exactly the caches whose builders import it
    (directly or not) and of no other; putting it back restores them. text/tokens.py, which the
    context view's old hand list missed, moves the context view's."""
    memo = tmp_path / "memo"
    graphs = {entry.name: set(import_graph(entry.builders, memo, package)[0]) for entry in REGISTRY}
    assert {"desk.text.tokens", "desk.formats.memory_index", "desk.layout", "desk.text.escape"} <= graphs["context"]
    assert "yaml" in import_graph(CONTEXT, memo, package)[1]  # the frontmatter reader's library
    before = {entry.name: code_print(entry.builders, memo, package) for entry in REGISTRY}
    for name in sorted(set().union(*graphs.values())) + ["desk.serve.token"]:
        found = module_path(name, package)
        assert found is not None, name
        path = Path(found[0])
        original = path.read_bytes()
        path.write_bytes(original + b"\n# one more line\n")
        moved = {entry.name for entry in REGISTRY if code_print(entry.builders, memo, package) != before[entry.name]}
        assert moved == {cache for cache, graph in graphs.items() if name in graph}, name
        path.write_bytes(original)
    assert {entry.name: code_print(entry.builders, memo, package) for entry in REGISTRY} == before


def test_an_unrelated_module_does_not_change_it_until_a_builder_imports_it(package: Path, tmp_path: Path) -> None:
    memo = tmp_path / "memo"
    unrelated = package / "serve" / "token.py"
    assert "desk.serve.token" not in import_graph(CONTEXT, memo, package)[0]
    before = code_print(CONTEXT, memo, package)
    unrelated.write_bytes(unrelated.read_bytes() + b"\nX = 1\n")
    assert code_print(CONTEXT, memo, package) == before
    # An import inside a function, added to a module the builder imports: now it is in the graph.
    tokens = package / "text" / "tokens.py"
    tokens.write_bytes(tokens.read_bytes() + b"\n\ndef _later():\n    from desk.serve import token\n")
    assert "desk.serve.token" in import_graph(CONTEXT, memo, package)[0]
    changed = code_print(CONTEXT, memo, package)
    unrelated.write_bytes(unrelated.read_bytes() + b"\nY = 2\n")
    assert code_print(CONTEXT, memo, package) not in (before, changed)


def test_imports_only_a_type_checker_sees_are_not_followed(package: Path, tmp_path: Path) -> None:
    (package / "probe.py").write_bytes(b"from typing import TYPE_CHECKING\nimport typing\n"
                                       b"if TYPE_CHECKING:\n    from desk.serve import token\n"
                                       b"if typing.TYPE_CHECKING:\n    import desk.serve.server\n"
                                       b"else:\n    import desk.text.tokens\n")
    graph = import_graph(["desk.probe"], None, package)[0]
    assert "desk.serve.token" not in graph and "desk.serve.server" not in graph
    assert {"desk.text.tokens", "desk"} <= set(graph)


def test_the_memo_is_used_only_while_a_source_keeps_its_stat(package: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A memo row stands while the file's size, mtime and ctime hold (a planted hash is believed);
    a same-size edit with the mtime put back still moves the ctime, so the file is read again. A
    file written within the racy window is not kept in the memo."""
    memo = tmp_path / "memo"
    tokens = package / "text" / "tokens.py"
    before = code_print(CONTEXT, memo, package)
    rows = json.loads((memo / MEMO_FILE).read_bytes())
    rows["files"][str(tokens)][3] = "planted"
    (memo / MEMO_FILE).write_text(json.dumps(rows))
    planted = code_print(CONTEXT, memo, package)
    assert planted != before  # the row was used, the file not read
    stamp = tokens.stat()
    tokens.write_bytes(tokens.read_bytes()[:-1] + b"#")  # the same size: the last newline becomes a comment
    os.utime(tokens, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert (tokens.stat().st_size, tokens.stat().st_mtime_ns) == (stamp.st_size, stamp.st_mtime_ns)
    edited = code_print(CONTEXT, memo, package)
    assert edited not in (before, planted)
    monkeypatch.setattr(code_print_module, "_RACY_NS", 10**12)  # everything written just now
    tokens.write_bytes(tokens.read_bytes()[:-1] + b"\n")
    assert code_print(CONTEXT, memo, package) == before  # read again: back to the first bytes
    kept = json.loads((memo / MEMO_FILE).read_bytes())["files"][str(tokens)]
    assert kept[2] != tokens.stat().st_ctime_ns  # the racy row was not kept


def test_a_cache_another_code_made_is_emptied_when_opened(tmp_path: Path) -> None:
    """The one invalidation rule for SQLite caches: a registered file whose recorded fingerprint
    is not the running code's loses every table; an unregistered one is left alone."""
    folder = tmp_path / ".git" / CACHE_FOLDER
    schema = "CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v TEXT);"
    for name, emptied in (("search.sqlite", True), ("mine.sqlite", False)):
        db = open_cache(folder / name, schema)
        db.execute("INSERT INTO t VALUES ('a', 'b')")
        db.execute("CREATE TABLE old_layout_v1 (x)")
        if emptied:
            assert db.execute("SELECT code FROM desk_code").fetchone() == (registered(name).fingerprint(tmp_path / ".git"),)
            db.execute("UPDATE desk_code SET code = 'another version of desk'")
        db.close()
        db = open_cache(folder / name, schema)
        rows = db.execute("SELECT * FROM t").fetchall()
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert (rows == [], "old_layout_v1" not in tables) == (emptied, emptied), name
        db.close()
    with sqlite3.connect(folder / "search.sqlite") as db:
        db.execute("DROP TABLE desk_code")  # a file an older desk made: no fingerprint at all
    db = open_cache(folder / "search.sqlite", schema)
    assert db.execute("SELECT count(*) FROM desk_code").fetchone() == (1,)
    db.close()
