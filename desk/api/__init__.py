"""The public Python API: `desk.open(path)` and `desk.init(path)` return a `Desk`.

A `Desk` has one method per CLI verb (`desk X Y` is `Desk.x_y`), grouped by concern, one module
each. Operation modules are imported inside the methods, so a command pays only for what it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from desk.api.base import Progress as Progress, Time as Time  # re-exported: desk.Progress, desk.Time
from desk.api.guard import GuardMethods
from desk.api.history import HistoryMethods
from desk.api.memories import MemoryMethods
from desk.api.notes import NoteMethods
from desk.api.reads import ReadMethods
from desk.api.review import ReviewMethods
from desk.api.users import UserMethods
from desk.layout import DeskFolder, find_desk


class Desk(MemoryMethods, ReadMethods, HistoryMethods, UserMethods, NoteMethods, GuardMethods, ReviewMethods):
    """A desk: a git repository of Markdown files holding an assistant's identity and memory."""


def open(path: str | Path | None = None) -> Desk:  # noqa: A001 - `desk.open(path)` is the API's name
    """The desk at `path`, else the desk enclosing the current folder, else `$DESK_HOME`."""
    folder = find_desk(explicit=Path(path) if path is not None else None)
    return Desk(folder.root, found_by=folder.found_by)


def last_landed() -> tuple[str, str] | None:
    """The last commit this process moved a desk's branch to, as (sha, subject), else None."""
    import sys

    transaction = sys.modules.get("desk.transaction")
    landed = getattr(transaction, "LANDED", None)
    return landed[-1] if landed else None


def stopped_notice(desk: DeskFolder) -> str | None:
    """What to run when a person's `git pull` is stopped on a conflict in this clone, else None."""
    from desk.storage.gitdir import stopped_operation  # not desk.git: `archive append` runs no git

    if stopped_operation(desk.git_dir) is None:
        return None
    from desk.sync.stopped import stopped_notice as notice

    return notice(desk)


def missing_setup(desk: DeskFolder) -> list[str]:
    """The hooks and merge drivers the clone holding `desk` lacks (the CLI warns once)."""
    from desk.formats.hook_files import missing_setup as missing

    return missing(desk.root, desk.git_dir)


def clone(url: str, path: str | Path | None = None, *,
          progress: Callable[[str], None] | None = None) -> Desk:
    """Clone the desk at `url` into `path`, install its hooks and merge drivers, make the clone's
    id and run `doctor` once; `Desk.cloned` says what was done."""
    from desk.guard.doctor import diagnose
    from desk.results.sync import Cloned
    from desk.sync.run import clone as clone_desk

    root, setup = clone_desk(url, Path(path) if path is not None else None, progress=progress)
    desk = Desk(root)
    desk.cloned = Cloned(root, setup, diagnose(desk))
    return desk


def init(path: str | Path, *, allow_nonempty: bool = False, allow_nested: bool = False) -> Desk:
    """Scaffold a desk at `path` (git init, templates, hooks, first commit) and open it;
    `Desk.initialized` says what was done. A non-empty or nested folder is refused unless allowed."""
    from desk.results.memory import Initialized
    from desk.setup.init import init_desk

    result = init_desk(Path(path), allow_nonempty=allow_nonempty, allow_nested=allow_nested)
    desk = Desk(result.path)
    desk.initialized = Initialized(result)
    return desk
