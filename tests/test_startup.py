"""Start-up (issue 17.3): each hot command imports only what it uses. No timing here: each command
runs in a fresh interpreter (`python -m desk` semantics), then the test reads the modules it loaded
and the regex tables it compiled. A module named here as absent was loaded by that command before
issue 17.3 (or would cost start-up time for nothing); bench/bench_history.py, bench_core.py and
bench_archive.py measure what the absence is worth."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from desk.layout import DeskFolder

# After the command: every loaded module, and how many CJK tables desk.text.terms compiled.
_PROBE = """
import os, runpy, sys
sys.argv = ["desk", *sys.argv[1:]]
try:
    runpy.run_module("desk", run_name="__main__", alter_sys=True)
except SystemExit:
    pass
terms = sys.modules.get("desk.text.terms")
lazy = [getattr(terms, name, None) for name in ("_terms", "_cjk", "_words_re")] if terms else []
compiled = sum(f.cache_info().currsize for f in lazy) if lazy and all(lazy) else None
modules = sorted(sys.modules)  # before json is imported here
tokens = sys.modules.get("desk.text.tokens")
token_tables = tokens._pieces.cache_info().currsize if tokens else None
piece_tables = tokens._pieces_below_cjk.cache_info().currsize if tokens else None
# the dataclasses desk's loaded modules define (each cost ~0.2-0.4 ms to create at start-up)
made = sorted(f"{name}.{cls.__name__}" for name, module in list(sys.modules.items()) if name.startswith("desk")
              for cls in vars(module).values()
              if isinstance(cls, type) and cls.__module__ == name and "__dataclass_fields__" in cls.__dict__)
import json
with open(os.environ["PROBE_OUT"], "w") as out:
    json.dump({"modules": modules, "cjk_tables": compiled, "token_tables": token_tables,
               "piece_tables": piece_tables, "dataclasses": made}, out)
"""

# The result modules: a command builds only its own (desk.results.base is everyone's).
RESULTS = {"desk.results.change", "desk.results.memory", "desk.results.guard", "desk.results.read", "desk.results.archive", "desk.results.working",
           "desk.results.scopes", "desk.results.sync", "desk.results.interchange"}
# Never on a hot path: the checkers, the writers of other verbs, and the heavy dependencies.
NEVER = {"pydantic", "git", "frontmatter", "mcp", "desk.guard.doctor", "desk.guard.hooks", "desk.scaffold",
         "desk.migrate", "desk.sync.run", "desk.interchange.importing", "desk.interchange.exporting"}


def probe(desk: DeskFolder, tmp_path: Path, *argv: str) -> dict[str, object]:
    out = tmp_path / "probe.json"
    empty = tmp_path / "cwd"  # `-c` puts the current folder on sys.path: not one holding `desk/`
    empty.mkdir(exist_ok=True)
    env = {**os.environ, "PROBE_OUT": str(out), "DESK_HOME": str(desk.root)}
    done = subprocess.run([sys.executable, "-c", _PROBE, *argv], cwd=empty, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    data: dict[str, object] = json.loads(out.read_text())
    return data


def loaded(data: dict[str, object], names: set[str]) -> list[str]:
    """Which of `names` (or their submodules) the command loaded."""
    modules = data["modules"]
    assert isinstance(modules, list)
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@pytest.fixture
def small_desk(desk: DeskFolder, identity: None) -> DeskFolder:
    from desk.api import Desk

    d = Desk(desk.root)
    for i in range(3):
        d.remember(f"note{i}", f"Body {i} about the topic.", type="fact", description=f"note {i}",
                   triggers=["topic"])
    d.recall("topic")  # build the caches: the commands below run warm, as they mostly do
    d.context(query="topic")
    d.close()
    return desk


def test_help_loads_neither_the_api_nor_yaml(small_desk: DeskFolder, tmp_path: Path) -> None:
    data = probe(small_desk, tmp_path, "--help")
    assert loaded(data, {"desk.api", "desk.results", "desk.layout", "desk.storage", "desk.text", "yaml",
                         "sqlite3", "hashlib", "json"} | NEVER) == []


def test_recall_loads_its_result_module_only_and_no_yaml(small_desk: DeskFolder, tmp_path: Path) -> None:
    data = probe(small_desk, tmp_path, "recall", "topic", "--json")
    assert loaded(data, RESULTS) == ["desk.results.read"]
    assert loaded(data, {"yaml", "desk.storage.frontmatter", "desk.digest", "desk.guard.validate",
                         "desk.transaction", "hashlib"} | NEVER) == []  # hashlib: OpenSSL, ~3 ms
    # git's read-only commands are spawned without `subprocess` (with `selectors`: ~2 ms); `signal`
    # is the CLI's own: its Ctrl-C handler (desk.cli.start)
    assert loaded(data, {"subprocess", "selectors"}) == []
    assert data["cjk_tables"] == 0  # an ASCII query and ASCII memories: no CJK table compiled


def test_recall_of_chinese_text_still_compiles_the_cjk_tables(small_desk: DeskFolder, tmp_path: Path) -> None:
    """The lazy tables are compiled when a text needs them (the ASCII fast path is not the only one)."""
    data = probe(small_desk, tmp_path, "recall", "分层记忆", "--json")
    assert data["cjk_tables"] == 1


def test_recall_makes_no_dataclass_of_its_own(small_desk: DeskFolder, tmp_path: Path) -> None:
    """Recall's and its result's record types are NamedTuples or plain classes: a frozen dataclass
    costs ~0.35 ms to create, each time a process starts (issue 17.3)."""
    data = probe(small_desk, tmp_path, "recall", "topic", "--json")
    made = data["dataclasses"]
    assert isinstance(made, list)
    assert [c for c in made if c.startswith(("desk.recall.", "desk.results.read.", "desk.text."))] == []


def test_a_recall_of_a_desk_of_conversations_opens_no_memory_mirror(
        desk: DeskFolder, identity: None, small_desk: DeskFolder, tmp_path: Path) -> None:
    """The HEAD mirror (and the memory index it opens) names a memory hit's last commit: a desk
    whose search cache holds no memory (the 100,000-record bench's) never loads it. A desk with
    memories imports it while git answers the refresh, whatever the hits."""
    from desk.api import Desk

    conversations = DeskFolder(tmp_path / "talk")
    subprocess.run([sys.executable, "-m", "desk", "init", str(conversations.root)], check=True, capture_output=True)
    with Desk(conversations.root) as d:
        d.archive_append("inbound", "the quokka crossed the road", session="s1")
        assert [h.id.split(":")[0] for h in d.recall("quokka").value.hits] == ["event"]  # cache built
    data = probe(conversations, tmp_path, "recall", "quokka", "--json")
    assert loaded(data, {"desk.memory", "yaml"} | NEVER) == []
    data = probe(small_desk, tmp_path, "recall", "topic", "--json")
    assert "desk.memory.mirror" in data["modules"]  # type: ignore[operator]


def test_context_loads_its_result_module_only(small_desk: DeskFolder, tmp_path: Path) -> None:
    data = probe(small_desk, tmp_path, "context", "--query", "topic")
    assert loaded(data, RESULTS) == ["desk.results.read"]
    # reading the archive's recent facts needs no secret scanner (only writing an event does)
    assert loaded(data, {"desk.transaction", "desk.guard.validate", "desk.text.secrets"} | NEVER) == []
    assert loaded(data, {"subprocess", "selectors"}) == []  # git spawned without them (~2 ms)
    # the wake-up read's recent facts load while git answers; the spot check shows none
    assert "desk.digest.recent" in data["modules"]  # type: ignore[operator]
    assert loaded(probe(small_desk, tmp_path, "context", "--mode", "spot"), {"desk.digest", "desk.archive"}) == []


def test_context_of_a_desk_without_cjk_text_loads_no_openssl_and_no_cjk_table(
        small_desk: DeskFolder, tmp_path: Path) -> None:
    """Its hashes (the view and parse keys, the boundary, the files' blobs) are CPython's own, and
    its token counts need the CJK ranges only for text that holds a character from U+3040 up."""
    data = probe(small_desk, tmp_path, "context", "--query", "topic")
    assert loaded(data, {"hashlib", "_hashlib"}) == []
    assert data["token_tables"] == 0
    # every section's letters and digits are ASCII (a dash is not a letter): counted in C, no
    # piece-by-piece pattern compiled
    assert data["piece_tables"] == 0
    made = data["dataclasses"]
    assert isinstance(made, list)
    assert [c for c in made if c.startswith(("desk.recall.", "desk.results.read.", "desk.digest.", "desk.archive.",
                                             "desk.text."))] == []
    small_desk.path("NOW.md").write_text("# Now\n\n正在写分层记忆的文档。\n", "utf-8")
    assert probe(small_desk, tmp_path, "context", "--query", "topic")["token_tables"] == 1


def test_remember_loads_its_result_module_only(small_desk: DeskFolder, tmp_path: Path) -> None:
    data = probe(small_desk, tmp_path, "remember", "note1", "A changed body about the topic.")
    assert loaded(data, RESULTS) == ["desk.results.change"]
    assert loaded(data, {"desk.recall", "desk.digest", "tempfile", "shutil"} | NEVER) == []


def test_sync_with_nothing_to_do_loads_neither_the_gate_nor_the_merge_code(
        small_desk: DeskFolder, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run(["git", "-C", str(small_desk.root), "remote", "add", "origin", str(remote)], check=True)
    first = probe(small_desk, tmp_path, "sync")  # pushes the desk
    assert "desk.results.sync" in first["modules"]  # type: ignore[operator]
    data = probe(small_desk, tmp_path, "sync")
    assert loaded(data, RESULTS) == ["desk.results.sync"]
    assert loaded(data, {"yaml", "desk.guard.validate", "desk.sync.cases", "desk.recall", "desk.digest",
                         "tempfile", "shutil"} | NEVER - {"desk.sync.run"}) == []


def test_archive_append_loads_no_memory_code(small_desk: DeskFolder, tmp_path: Path) -> None:
    data = probe(small_desk, tmp_path, "archive", "append", "-k", "note", "hello")
    assert loaded(data, RESULTS) == ["desk.results.archive"]
    # it runs no git: neither desk's git module nor subprocess (the stopped-merge check reads files)
    assert loaded(data, {"yaml", "sqlite3", "desk.memory", "desk.recall", "desk.digest", "desk.transaction",
                         "desk.storage.frontmatter", "desk.storage.git", "subprocess"} | NEVER) == []


def test_validate_all_on_an_unchanged_desk_loads_neither_openssl_nor_the_parsers(
        small_desk: DeskFolder, tmp_path: Path) -> None:
    """An unchanged desk's `validate --all` takes its findings from the cache: the guard results
    only, the listing digested without OpenSSL, no memory parser, no hooks, no transaction."""
    probe(small_desk, tmp_path, "validate", "--all")  # fills the cache
    data = probe(small_desk, tmp_path, "validate", "--all")
    assert loaded(data, RESULTS) == ["desk.results.guard"]
    assert loaded(data, {"hashlib", "_hashlib", "yaml", "desk.memory.file", "desk.storage.frontmatter",
                         "desk.text.secrets", "desk.transaction"} | NEVER) == []


def test_doctor_loads_neither_the_hooks_installer_nor_openssl(small_desk: DeskFolder, tmp_path: Path) -> None:
    """doctor reads which hooks are installed from desk.guard.hook_files; the installer
    (desk.guard.hooks) loads only to repair them, the transaction's recovery only for a pending
    mutation or a repair."""
    probe(small_desk, tmp_path, "doctor")
    data = probe(small_desk, tmp_path, "doctor")
    assert loaded(data, RESULTS) == ["desk.results.guard"]
    assert loaded(data, {"hashlib", "_hashlib", "yaml", "desk.memory.file", "desk.transaction"}
                  | NEVER - {"desk.guard.doctor"}) == []


_HOOK_PROBE = """
import os, sys
from desk.cli.hook import main
code = main(sys.argv[1:])
modules = sorted(sys.modules)  # before json is imported here
records = sorted(f"{m}.{n}" for m in list(sys.modules) if m.startswith("desk")
                 for n, v in vars(sys.modules[m]).items()
                 if isinstance(v, type) and v.__module__ == m and "__dataclass_fields__" in v.__dict__)
import json
with open(os.environ["PROBE_OUT"], "w") as out:
    json.dump({"code": code, "modules": modules, "dataclasses": records}, out)
"""


def test_the_pre_commit_hook_builds_no_dataclass_and_no_cli(small_desk: DeskFolder, tmp_path: Path) -> None:
    """The hook's Python (`python -m desk.cli.hook pre-commit`) on a staged memory: the records on
    its path (the gate's, DeskFolder, the memory file and index entry, the frontmatter document,
    the secret finding) are plain classes and NamedTuples, so `dataclasses` (with `inspect`, `ast`,
    `dis`, `tokenize`: ~6 ms) never loads; neither do click, the results, doctor, the installer,
    OpenSSL, nor the transaction (a staged path desk never published cannot be a write-back)."""
    path = small_desk.root / "memory/note1.md"
    path.write_text(path.read_text().replace("Body 1", "Body one"))
    subprocess.run(["git", "add", "memory/note1.md"], cwd=small_desk.root, check=True)
    out = tmp_path / "hook.json"
    done = subprocess.run([sys.executable, "-c", _HOOK_PROBE, "pre-commit"], cwd=small_desk.root,
                          env={**os.environ, "PROBE_OUT": str(out)}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    assert data["code"] == 0
    assert "desk.guard.validate" in data["modules"] and "desk.guard.verdicts" in data["modules"]
    assert data["dataclasses"] == []
    assert "desk.memory.file" in data["modules"] and "desk.text.secrets" in data["modules"]  # it parsed one
    assert loaded(data, {"click", "desk.results", "desk.api", "desk.guard.doctor", "hashlib", "_hashlib",
                         "shutil", "tempfile", "yaml", "dataclasses", "inspect", "desk.transaction"}) == []


def test_every_lazily_exported_name_resolves_to_one_class() -> None:
    """desk, desk.api and desk.results load their re-exports on first use: each name in their
    `__all__` resolves, to the same object everywhere, and a result class lives where _HOMES says."""
    import desk
    import desk.api
    import desk.results

    for name in desk.results.__all__:
        found = getattr(desk.results, name)
        assert found.__module__ == f"desk.results.{desk.results._HOMES[name]}", name
        assert getattr(desk.api, name) is found, name
    for name in desk.api.__all__:
        assert getattr(desk.api, name) is not None, name
    for name in desk.__all__:
        if name != "__version__":
            assert getattr(desk, name) is getattr(desk.api, name, None) or name in desk._ERRORS, name
    from desk.api import Recalled  # a from-import goes through the module's __getattr__ too

    assert Recalled is desk.results.Recalled
    with pytest.raises(AttributeError):
        desk.results.NoSuchResult  # noqa: B018
    with pytest.raises(AttributeError):
        desk.api.NoSuchResult  # noqa: B018
