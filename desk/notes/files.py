"""Reading a working note (NOW.md, MISTAKES.md) that a command is about to change."""

from __future__ import annotations

from desk.layout import DeskFolder
from desk.storage.reading import SymlinkError


def read_for_change(desk: DeskFolder, path: str) -> bytes | None:
    """The note's bytes, None when absent; a link is refused as the gate refuses it (exit 3), before
    the uncommitted-changes check would call it a person's edit."""
    try:
        return desk.read_if_present(path)
    except SymlinkError:
        from desk.transaction import link_refusal

        raise link_refusal(desk, path) from None
