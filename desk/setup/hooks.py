"""`desk hooks install | uninstall`: desk's git hooks and merge drivers, installed as pre-commit
installs its own: a marker line, a foreign hook kept as `<hook>.legacy` and run first, restored
on uninstall, `core.hooksPath` refused. What the hooks run is desk.guard.hooks."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from desk.errors import DeskError
from desk.formats.hook_files import (HOOK_ENTRY, HOOK_TYPES, LEGACY, MERGE_DRIVERS, MERGE_ENTRY, PIN_COMMENT,
                                     SAFE_PATH, attributes_with_missing, desk_attribute_lines, is_ours,
                                     missing_attributes, read_text_or_empty)
from desk.gate.installed_hooks import hooks_folder
from desk.layout import GITATTRIBUTES, DeskFolder, is_desk
from desk.storage.git import Git
from desk.storage.git.worktree import ARCHIVE_EXCLUDE


@dataclass(slots=True)
class HooksResult:
    """What install/uninstall did to each hook: `{hook: action}`."""

    folder: Path
    actions: dict[str, str] = field(default_factory=dict)
    merge_drivers: dict[str, str] = field(default_factory=dict)  # install only: drivers and .gitattributes

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"folder": str(self.folder), "hooks": self.actions}
        if self.merge_drivers:
            data["merge_drivers"] = self.merge_drivers
        return data


def hook_script(hook: str, python: str | None = None) -> str:
    import shlex
    from importlib import resources  # installing only: a hook run never loads these

    template = resources.files("desk._hooks").joinpath("desk-hook.sh").read_text("utf-8")
    start = fast_start(python)
    python = python or sys.executable
    return (template.replace("@HOOK@", hook).replace("'@PYTHON@'", shlex.quote(python))
            .replace("'@START@'", shlex.quote(start or "")))


# What a hook's Python may import: desk, the wheel's data packages, and desk's dependencies with theirs.
START_MODULES = ("desk", "desk._hooks", "desk._templates", "click", "pydantic", "pydantic_core",
                 "typing_extensions", "annotated_types", "typing_inspection", "yaml", "_yaml", "frontmatter",
                 "git", "gitdb", "smmap", "Stemmer")


@lru_cache(maxsize=None)
def fast_start(python: str | None = None) -> str | None:
    """The code (`python -S -c CODE HOOK ARGS`) an installed hook starts Python with: `site` skipped
    and this process's module path. None (the plain `-m desk.cli.hook` start) unless `python` is
    this interpreter and every START_MODULES module is found in the same file by the plain path
    search (an editable install's finder is a `site` import hook)."""
    import importlib.util

    if python not in (None, sys.executable):  # a venv's python links to its base: compare names
        return None
    from_env = set(os.environ.get("PYTHONPATH", "").split(os.pathsep)) - {""}
    first = 0 if getattr(sys.flags, "safe_path", False) else 1  # sys.path[0]: the script's folder
    folders = [p for p in sys.path[first:] if p and p not in from_env]
    for name in START_MODULES:
        try:
            here = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            here = None
        if here is not None and (getattr(_plain_spec(name, folders), "origin", None) != here.origin
                                 or here.origin is None):
            return None
    import json  # a list of strings in JSON is one in Python: double quotes, easy to read in the shell

    return ("import sys\n"
            f"sys.path[0:1] = {json.dumps(folders)}\n"
            "try:\n"
            f"    from {HOOK_ENTRY} import start\n"
            "except ImportError:\n"
            "    import os\n"
            f'    os.execv(sys.executable, [sys.executable, "{SAFE_PATH}", "-m", "{HOOK_ENTRY}", *sys.argv[1:]])\n'
            "start(sys.argv[1:])\n")


def _plain_spec(name: str, folders: list[str]) -> object | None:
    """The spec a Python started with `-S` and `folders` as its path finds for `name`."""
    from importlib.machinery import PathFinder

    parent, _, _child = name.rpartition(".")
    if not parent:
        return PathFinder.find_spec(name, folders)
    outer = _plain_spec(parent, folders)
    locations = getattr(outer, "submodule_search_locations", None)
    return PathFinder.find_spec(name, list(locations)) if locations else None


def install(root: Path, python: str | None = None) -> HooksResult:
    """Install desk's hooks and merge drivers (.git/config; `.gitattributes` when the desk has none)."""
    drivers = install_merge_drivers(root, python)  # first: they work even where the hooks are refused
    result = install_hooks(root, python)
    result.merge_drivers = drivers
    return result


def merge_driver_command(driver: str, python: str | None = None) -> str:
    """The driver as git runs it: the Python that installed it, else `desk` on PATH when it is gone."""
    import shlex

    args = f"{driver} %O %A %B %P"
    return (f'PY={shlex.quote(python or sys.executable)}; if [ -x "$PY" ]; then "$PY" {SAFE_PATH} -m '
            f"{MERGE_ENTRY} {args}; else desk hooks merge {args}; fi")


def install_merge_drivers(root: Path, python: str | None = None) -> dict[str, str]:
    """`merge.desk-<driver>.*` in .git/config, and `.gitattributes` when absent (committed)."""
    actions = write_merge_drivers(Git(root), python)
    attributes = root / GITATTRIBUTES
    if not attributes.exists() and is_desk(root):
        from desk.transaction import commit_message, transaction

        lines = "".join(f"{pattern} {attribute}\n" for pattern, attribute in desk_attribute_lines())
        data = ("# desk's merge drivers (docs/sync.md); defined in .git/config by `desk hooks install`\n"
                + lines.replace("\nAGENTS.md -text", "\n" + PIN_COMMENT + "AGENTS.md -text", 1)).encode()
        with transaction(DeskFolder(root)) as tx:
            tx.commit({GITATTRIBUTES: data}, commit_message(
                "hooks: add .gitattributes (desk's merge drivers)", {"Desk-Op": "hooks", "Desk-Actor": "user"}))
        actions[GITATTRIBUTES] = "added and committed"
    elif "merge=desk-memory" not in read_text_or_empty(attributes):
        actions[GITATTRIBUTES] = ("exists without desk's merge drivers; add the lines of docs/sync.md "
                                  "\"Merge drivers\" to it and commit")
    elif missing_attributes(read_text_or_empty(attributes)) and is_desk(root):
        actions[GITATTRIBUTES] = _add_missing_attributes(DeskFolder(root))
    return actions


def write_merge_drivers(git: Git, python: str | None = None) -> dict[str, str]:
    """`merge.desk-<driver>.*` in .git/config (no commit): each driver's action."""
    actions = {}
    for driver in MERGE_DRIVERS:
        key = f"merge.desk-{driver}"
        command = merge_driver_command(driver, python)
        before = git.config.get(f"{key}.driver")
        git.config.set(f"{key}.name", f"desk: {driver} merge (never conflict markers)")
        git.config.set(f"{key}.driver", command)
        actions[f"desk-{driver}"] = "installed" if before is None else (
            "updated" if before != command else "ok")
    git.config.set("diff.desk-archive.textconv", "cat")  # the archive's JSON lines, shown as text
    # An archive file not yet checkpointed is ignored by `git status` (this clone only).
    exclude = git.git_path("info/exclude")
    text = read_text_or_empty(exclude)
    if ARCHIVE_EXCLUDE not in text.splitlines():
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with exclude.open("a", encoding="utf-8") as file:
            file.write(("" if not text or text.endswith("\n") else "\n")
                       + "# desk: archive files until `desk checkpoint` commits them\n" + ARCHIVE_EXCLUDE + "\n")
    return actions


def _add_missing_attributes(desk: DeskFolder) -> str:
    """Append desk's missing lines (merge drivers, `-text` pins) to a clean .gitattributes; one commit."""
    from desk.transaction import commit_message, transaction

    with transaction(desk) as tx:
        if desk.git.worktree.dirty([GITATTRIBUTES]):
            return "lacks some of desk's lines and has uncommitted changes; commit them, then run this again"
        data = attributes_with_missing(read_text_or_empty(desk.path(GITATTRIBUTES)))
        if data is None:
            return "ok"
        tx.commit({GITATTRIBUTES: data}, commit_message(
            "hooks: add desk's missing lines to .gitattributes", {"Desk-Op": "hooks", "Desk-Actor": "user"}))
        from desk.setup.line_ends import restore_line_ends

        restored = restore_line_ends(desk)  # what core.autocrlf checked out before the pins
    return "updated and committed (desk's missing merge lines and -text pins added)" + (
        f"; LF line ends put back in {len(restored)} file{'s' * (len(restored) != 1)}" if restored else "")


def install_hooks(root: Path, python: str | None = None) -> HooksResult:
    """Install desk's git hooks (HOOK_TYPES) in the repository at `root`."""
    folder = hooks_folder(Git(root))
    folder.mkdir(parents=True, exist_ok=True)
    result = HooksResult(folder)
    for hook in HOOK_TYPES:
        path, legacy = folder / hook, folder / (hook + LEGACY)
        action = "installed"
        if path.exists() or path.is_symlink():
            if is_ours(path):
                action = "updated"
            elif legacy.exists() or legacy.is_symlink():
                raise DeskError(f"{path} and {legacy} both exist and neither is desk's",
                                hint="merge them into one, then run `desk hooks install` again")
            else:
                os.replace(path, legacy)
                action = "installed (kept the existing hook as " + legacy.name + ", run first)"
        from desk.storage.atomic import atomic_write

        atomic_write(path, hook_script(hook, python).encode())
        os.chmod(path, 0o755)
        result.actions[hook] = action
    return result


def uninstall(root: Path) -> HooksResult:
    """Remove desk's hooks and put back any hook they had replaced."""
    folder = hooks_folder(Git(root))
    result = HooksResult(folder)
    for hook in HOOK_TYPES:
        path, legacy = folder / hook, folder / (hook + LEGACY)
        if not path.exists() or not is_ours(path):
            result.actions[hook] = "not desk's; left alone" if path.exists() else "not installed"
            continue
        path.unlink()
        if legacy.exists() or legacy.is_symlink():
            os.replace(legacy, path)
            result.actions[hook] = "removed (restored the previous hook)"
        else:
            result.actions[hook] = "removed"
    return result
