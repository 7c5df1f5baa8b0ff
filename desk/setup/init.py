"""`desk init`: lay down a desk from templates/ and make its first commit."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from desk.config import new_config
from desk.layout import (ARCHIVE_DIR, CONFIG_PATH, CONVERSATIONS_DIR, INDEX_FILE, JOURNAL_DIR, MEMORY_DIR,
                         TEMPLATE_FILES, DeskFolder, is_desk, template_bytes)
from desk.errors import DeskError, UsageError
from desk.setup.hooks import install
from desk.storage.git import Git, toplevel
from desk.formats.memory_index import render_index
from desk.transaction import commit_message, transaction

# Folders git would not keep while empty.
KEPT_FOLDERS = (MEMORY_DIR, JOURNAL_DIR, CONVERSATIONS_DIR, ARCHIVE_DIR)


@dataclass
class InitResult:
    status: str  # created | exists
    path: Path
    commit: str | None = None
    kept: list[str] = field(default_factory=list)  # files that were already there, left untouched
    hooks: str | None = None  # why the git hooks were not installed (None: installed)
    fallback_identity: str | None = None  # "name <email>" desk commits as when git has none

    def to_json(self) -> dict[str, object]:
        return {"status": self.status, "path": str(self.path), "commit": self.commit,
                "kept": self.kept, "hooks_not_installed": self.hooks,
                "fallback_identity": self.fallback_identity}


def desk_files() -> dict[str, bytes]:
    """Every file a new desk starts with, by path (desk.json gets a fresh desk id)."""
    return {**{path: template_bytes(name) for path, name in TEMPLATE_FILES.items()},
            INDEX_FILE: render_index([]), CONFIG_PATH: new_config().to_bytes(),
            **{f"{folder}/.gitkeep": b"" for folder in KEPT_FOLDERS}}


def init_desk(path: Path, *, allow_nonempty: bool = False, allow_nested: bool = False) -> InitResult:
    """Scaffold a desk at `path` (git init, the file set, the first commit); an existing desk is left
    as it is; a non-empty or nested folder is refused unless allowed."""
    path = path.expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise UsageError(f"{path} exists and is not a folder")
    if not path.exists() and not (blocking := _nearest_existing(path)).is_dir():
        raise UsageError(f"{path}: {blocking} is a file, not a folder",
                         hint="choose a PATH whose parents are folders (or none yet)")
    if is_desk(path):
        return InitResult("exists", path)
    # A folder holding only `.git` (`git init` then `desk init .`) is empty.
    if path.exists() and any(p.name != ".git" for p in path.iterdir()) and not allow_nonempty:
        raise DeskError(f"{path} is not empty and is not a desk",
                        hint="choose a new or empty folder, or pass --allow-nonempty to add a desk "
                             "to it (existing files are kept)")
    existing = path if path.exists() else _nearest_existing(path)
    top = toplevel(existing)
    if top is not None and top.resolve() != path and not allow_nested:
        raise DeskError(f"{path} is inside the git work tree of {top}",
                        hint="a desk is a repository of its own: choose a folder outside it, or "
                             "pass --allow-nested to create a nested repository")
    path.mkdir(parents=True, exist_ok=True)
    git = Git(path)
    if top is None or top.resolve() != path:
        git.init()
    elif git.objects.object_format() != "sha1":
        raise DeskError(f"{path} is a git repository with {git.objects.object_format()} object ids, which desk "
                        "cannot write yet (it compares blob ids in SHA-1)",
                        hint="create the desk in a new or empty folder (`desk init` makes a SHA-1 "
                             "repository), or in a repository made with `git init --object-format=sha1`")
    desk = DeskFolder(path)
    files = desk_files()
    kept = sorted(p for p in files if (path / p).exists())
    writes: dict[str, bytes | None] = {p: data for p, data in files.items() if p not in kept}
    with transaction(desk) as tx:
        sha = tx.commit(writes, commit_message("init: new desk", {"Desk-Op": "init", "Desk-Actor": "user"}))
    fallback = git.config.fallback_identity()
    try:
        install(path)  # desk's git hooks: hand edits pass the same gate
    except DeskError as exc:  # core.hooksPath set: the desk works; the person wires the hooks
        return InitResult("created", path, sha, kept, f"{exc.message}. {exc.hint}", fallback)
    return InitResult("created", path, sha, kept, fallback_identity=fallback)


def _nearest_existing(path: Path) -> Path:
    return next((parent for parent in path.parents if parent.exists()), Path("/"))
