"""The public Python API: `desk.open(path)` and `desk.init(path)` return a `Desk`.

A `Desk` is the desk on disk (`desk.layout.DeskFolder`) with a method for every CLI verb; the CLI
and the agent-facing server are two thin renderings of these calls.
"""

from __future__ import annotations

from pathlib import Path

from desk.layout import DeskFolder, find_desk

__all__ = ["Desk", "open", "init"]


class Desk(DeskFolder):
    """A desk: a git repository of Markdown files holding an assistant's identity and memory."""


def open(path: str | Path | None = None) -> Desk:  # noqa: A001 - `desk.open(path)` is the API's name
    """The desk at `path`, else `$DESK_HOME`, else the desk enclosing the current folder."""
    folder = find_desk(explicit=Path(path) if path is not None else None)
    return Desk(folder.root)


def init(path: str | Path, *, allow_nonempty: bool = False, allow_nested: bool = False) -> Desk:
    """Scaffold a desk at `path` (git init, templates, hooks, first commit) and open it."""
    from desk.scaffold import init_desk

    result = init_desk(Path(path), allow_nonempty=allow_nonempty, allow_nested=allow_nested)
    return Desk(result.path)
