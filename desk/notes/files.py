"""Reading a working note (NOW.md, MISTAKES.md) that a command is about to change."""

from __future__ import annotations

from desk.layout import DeskFolder
from desk.storage.reading import SymlinkError


def read_for_change(desk: DeskFolder, path: str) -> bytes | None:
    """The note's bytes, None when it is absent. A symbolic link (or a note in a linked folder) is
    refused as the gate refuses it (`desk.transaction.link_refusal`: exit 3, the same finding as
    `desk validate`), before the uncommitted-changes check, which would call the link a person's
    edit (exit 4)."""
    try:
        return desk.read_if_present(path)
    except SymlinkError:
        from desk.transaction import link_refusal

        raise link_refusal(desk, path) from None
