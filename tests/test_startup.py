"""Start-up (issue 17.3): `import desk`, `desk --help` and each hot command load neither the heavy
dependencies they do not use (pydantic, GitPython, PyYAML, python-frontmatter, the MCP SDK) nor
desk's code for other verbs (a read loads no writer, a command builds only its own result module).
No timing here: each command runs in a fresh interpreter (`python -m desk` semantics), then the
test reads the modules it loaded; bench/bench_history.py, bench_core.py and bench_archive.py
measure what the absence is worth.

Which standard-library modules a command loads (subprocess, hashlib, dataclasses, tempfile ...) is
not checked: the standard library is used as it is meant to be (STYLE.md, "Simplicity budget")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from desk.layout import DeskFolder

# After the command: every loaded module.
_PROBE = """
import os, runpy, sys
sys.argv = ["desk", *sys.argv[1:]]
try:
    runpy.run_module("desk", run_name="__main__", alter_sys=True)
except SystemExit:
    pass
modules = sorted(sys.modules)
import json
with open(os.environ["PROBE_OUT"], "w") as out:
    json.dump({"modules": modules}, out)
"""

# The result modules: a command builds only its own (desk.results.base is everyone's).
RESULTS = {"desk.results.change", "desk.results.memory", "desk.results.guard", "desk.results.read", "desk.results.archive", "desk.results.working",
           "desk.results.scopes", "desk.results.sync", "desk.results.interchange"}
# Never on a hot path: the checkers, the writers of other verbs, and the heavy dependencies.
NEVER = {"pydantic", "git", "frontmatter", "mcp", "desk.guard.doctor", "desk.guard.hooks", "desk.setup.hooks", "desk.setup.init",
         "desk.setup.migrate", "desk.sync.run", "desk.interchange.importing", "desk.interchange.exporting"}


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


def test_import_desk_loads_no_heavy_dependency(tmp_path: Path) -> None:
    """`import desk` (the library's entry) loads none of the dependencies, nor the CLI's click."""
    out = tmp_path / "modules.json"
    code = ("import json, os, sys; import desk; "
            "json.dump(sorted(sys.modules), open(os.environ['PROBE_OUT'], 'w'))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={**os.environ, "PROBE_OUT": str(out)},
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert loaded({"modules": json.loads(out.read_text())}, {"click", "yaml"} | NEVER) == []


def test_help_loads_neither_the_api_nor_yaml(small_desk: DeskFolder, tmp_path: Path) -> None:
    data = probe(small_desk, tmp_path, "--help")
    assert "click" in data["modules"]  # type: ignore[operator]  # the probe ran the CLI
    assert loaded(data, {"desk.api", "desk.results", "desk.layout", "desk.storage", "desk.text", "yaml"}
                  | NEVER) == []


def test_recall_loads_its_result_module_only_and_no_yaml(small_desk: DeskFolder, tmp_path: Path) -> None:
    data = probe(small_desk, tmp_path, "recall", "topic", "--json")
    assert loaded(data, RESULTS) == ["desk.results.read"]
    assert loaded(data, {"yaml", "desk.storage.frontmatter", "desk.digest", "desk.gate.validate",
                         "desk.transaction"} | NEVER) == []


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
    assert "desk.gate.mirror" in data["modules"]  # type: ignore[operator]


def test_context_loads_its_result_module_only(small_desk: DeskFolder, tmp_path: Path) -> None:
    data = probe(small_desk, tmp_path, "context", "--query", "topic")
    assert loaded(data, RESULTS) == ["desk.results.read"]
    # reading the archive's recent facts needs no secret scanner (only writing an event does)
    assert loaded(data, {"yaml", "desk.transaction", "desk.gate.validate", "desk.text.secrets"} | NEVER) == []
    # the wake-up read's recent facts load while git answers; the spot check shows none
    assert "desk.digest.recent" in data["modules"]  # type: ignore[operator]
    assert loaded(probe(small_desk, tmp_path, "context", "--mode", "spot"), {"desk.digest", "desk.archive"}) == []


def test_remember_loads_its_result_module_only(small_desk: DeskFolder, tmp_path: Path) -> None:
    data = probe(small_desk, tmp_path, "remember", "note1", "A changed body about the topic.")
    assert loaded(data, RESULTS) == ["desk.results.change"]
    assert loaded(data, {"desk.recall", "desk.digest"} | NEVER) == []


def test_sync_with_nothing_to_do_loads_neither_the_gate_nor_the_merge_code(
        small_desk: DeskFolder, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run(["git", "-C", str(small_desk.root), "remote", "add", "origin", str(remote)], check=True)
    first = probe(small_desk, tmp_path, "sync")  # pushes the desk
    assert "desk.results.sync" in first["modules"]  # type: ignore[operator]
    data = probe(small_desk, tmp_path, "sync")
    assert loaded(data, RESULTS) == ["desk.results.sync"]
    assert loaded(data, {"yaml", "desk.gate.validate", "desk.sync.cases", "desk.recall", "desk.digest"}
                  | NEVER - {"desk.sync.run"}) == []


def test_archive_append_loads_no_memory_code(small_desk: DeskFolder, tmp_path: Path) -> None:
    data = probe(small_desk, tmp_path, "archive", "append", "-k", "note", "hello")
    assert loaded(data, RESULTS) == ["desk.results.archive"]
    # it runs no git: desk's git module is not loaded (the stopped-merge check reads files)
    assert loaded(data, {"yaml", "desk.memory", "desk.recall", "desk.digest", "desk.transaction",
                         "desk.storage.frontmatter", "desk.storage.git"} | NEVER) == []


def test_validate_all_on_an_unchanged_desk_loads_no_parser(small_desk: DeskFolder, tmp_path: Path) -> None:
    """An unchanged desk's `validate --all` takes its findings from the cache: the guard results
    only, no memory parser, no hooks, no transaction."""
    probe(small_desk, tmp_path, "validate", "--all")  # fills the cache
    data = probe(small_desk, tmp_path, "validate", "--all")
    assert loaded(data, RESULTS) == ["desk.results.guard"]
    assert loaded(data, {"yaml", "desk.formats.memory_file", "desk.storage.frontmatter", "desk.text.secrets",
                         "desk.transaction"} | NEVER) == []


def test_doctor_loads_no_hooks_installer(small_desk: DeskFolder, tmp_path: Path) -> None:
    """doctor reads which hooks are installed from desk.gate.installed_hooks; the installer
    (desk.setup.hooks) loads only to repair them, the transaction's recovery only for a pending
    mutation or a repair."""
    probe(small_desk, tmp_path, "doctor")
    data = probe(small_desk, tmp_path, "doctor")
    assert loaded(data, RESULTS) == ["desk.results.guard"]
    assert loaded(data, {"yaml", "desk.formats.memory_file", "desk.transaction"} | NEVER - {"desk.guard.doctor"}) == []


_HOOK_PROBE = """
import os, sys
from desk.cli.hook import main
code = main(sys.argv[1:])
modules = sorted(sys.modules)
import json
with open(os.environ["PROBE_OUT"], "w") as out:
    json.dump({"code": code, "modules": modules}, out)
"""


def test_the_pre_commit_hook_loads_neither_the_cli_nor_yaml(small_desk: DeskFolder, tmp_path: Path) -> None:
    """The hook's Python (`python -m desk.cli.hook pre-commit`) on a staged memory loads the gate
    and its parsers only: not click, the results, the API, doctor, PyYAML (the memory file's strict
    parser reads the frontmatter), nor the transaction (a staged path desk never published cannot be
    a write-back)."""
    path = small_desk.root / "memory/note1.md"
    path.write_text(path.read_text().replace("Body 1", "Body one"))
    subprocess.run(["git", "add", "memory/note1.md"], cwd=small_desk.root, check=True)
    out = tmp_path / "hook.json"
    done = subprocess.run([sys.executable, "-c", _HOOK_PROBE, "pre-commit"], cwd=small_desk.root,
                          env={**os.environ, "PROBE_OUT": str(out)}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    assert data["code"] == 0
    assert "desk.gate.validate" in data["modules"] and "desk.gate.verdicts" in data["modules"]
    assert "desk.formats.memory_file" in data["modules"] and "desk.text.secrets" in data["modules"]  # it parsed one
    assert loaded(data, {"click", "desk.results", "desk.api", "desk.guard.doctor", "yaml", "desk.transaction"}
                  | NEVER - {"desk.guard.hooks"}) == []  # the hooks' runner, not their installer


def test_every_lazily_exported_name_resolves_to_one_class() -> None:
    """desk and desk.results load their names on first use: each name in desk's `__all__` (the one
    public list) resolves to the object its home module holds, and a result class lives where
    desk.results._HOMES says. desk.api re-exports nothing (tests/test_public_api.py checks the list
    against docs/api.md)."""
    import desk
    import desk.api
    import desk.errors
    import desk.results
    import desk.api.revisions

    for name in desk.results._HOMES:
        found = getattr(desk.results, name)
        assert found.__module__ == f"desk.results.{desk.results._HOMES[name]}", name
        assert getattr(desk, name) is found, name
    for name in desk.__all__:
        if name != "__version__":
            home = {"desk.api": desk.api, "desk.errors": desk.errors, "desk.results": desk.results,
                    "desk.api.revisions": desk.api.revisions}[desk._HOMES[name]]
            assert getattr(desk, name) is getattr(home, name), name
    from desk import Recalled  # a from-import goes through the module's __getattr__ too

    assert Recalled is desk.results.Recalled
    with pytest.raises(AttributeError):
        desk.results.NoSuchResult  # noqa: B018
    with pytest.raises(AttributeError):
        desk.api.Recalled  # noqa: B018  (one way in: `desk`, not desk.api too)
