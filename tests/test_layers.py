"""The house's one-way data flow holds: the import-linter contract in pyproject.toml, a layer table
that names packages (the same table as docs/design.md §5a), and no cycle between desk's packages."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent


def test_import_linter_contract_is_kept() -> None:
    lint = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    proc = subprocess.run([lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def contract_layers() -> list[list[str]]:
    """The layers contract's layers, top first, each a list of the names in it (parentheses,
    import-linter's mark of an optional name, taken off)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    layers = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    assert len(layers) == 1
    return [[name.strip().strip("()") for name in re.split(r"[:|]", layer)] for layer in layers[0]["layers"]]


def test_the_contract_names_packages_in_eight_layers_at_most() -> None:
    layers = contract_layers()
    assert len(layers) <= 8, layers
    names = [name for layer in layers for name in layer]
    assert len(names) == len(set(names)), names
    # A layer names desk's top-level packages and modules, never a module inside a package: a
    # module a package gains later takes its package's place without a change here.
    assert [n for n in names if n.count(".") != 1 or not n.startswith("desk.")] == []


def test_every_package_has_a_place_in_the_layers() -> None:
    placed = {name for layer in contract_layers() for name in layer}
    top = {p.stem if p.is_file() else p.name for p in (ROOT / "desk").iterdir()
           if (p.suffix == ".py" and p.stem not in ("__init__", "__main__")) or (p / "__init__.py").exists()}
    assert sorted(f"desk.{t}" for t in top if f"desk.{t}" not in placed) == []


def test_docs_design_table_is_the_contract() -> None:
    """docs/design.md §5a lists the same packages, layer by layer, in the same order."""
    text = (ROOT / "docs/design.md").read_text()
    section = text[text.index("## 5a."):]
    table = section[section.index("\n| layer |"):].strip().split("\n\n")[0]
    rows = table.splitlines()[2:]  # after the header and its rule
    assert rows, "docs/design.md §5a has no layer table"
    documented = [sorted(set(re.findall(r"`(desk\.[a-z_]+)`", row.split("|")[2]))) for row in rows]
    assert documented == [sorted(layer) for layer in contract_layers()]


def package_of(module: str) -> str:
    """The package a module stands for in the layers: a module of desk's top level is one (the layer
    table names desk.api and desk.config as it names desk.memory); any other module belongs to the
    package it is in, and a subpackage (desk.interchange.readers) to its top-level package."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def cycles(edges: dict[str, dict[str, tuple[str, str]]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in edges.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def package_graph() -> dict[str, dict[str, tuple[str, str]]]:
    """package -> {imported package: one (importer, imported) module pair that makes the edge}, from
    every import in desk (inside functions too; `if TYPE_CHECKING:` imports left out, as the
    import-linter contract leaves them)."""
    graph = grimp.build_graph("desk", exclude_type_checking_imports=True)
    edges: dict[str, dict[str, tuple[str, str]]] = defaultdict(dict)
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            a, b = package_of(module), package_of(imported)
            if a != b:
                edges[a].setdefault(b, (module, imported))
    return edges


def test_no_cycle_between_packages() -> None:
    edges = package_graph()
    found = cycles(edges)
    explained = [[f"{a} -> {b} ({edges[a][b][0]} imports {edges[a][b][1]})"
                  for a in component for b in component if b in edges.get(a, {})]
                 for component in found]
    assert explained == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The check above can fail: a two-package and a three-package cycle are found, a chain is not."""
    pair = ("m", "n")
    assert cycles({"a": {"b": pair}, "b": {"a": pair}}) == [["a", "b"]]
    assert cycles({"a": {"b": pair}, "b": {"c": pair}, "c": {"a": pair}, "d": {"a": pair}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b": pair}, "b": {"c": pair}}) == []
