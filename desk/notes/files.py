"""Reading a working note (NOW.md, MISTAKES.md) that a command is about to change."""

from __future__ import annotations

from desk.errors import InvalidFileError
from desk.layout import DeskFolder
from desk.storage.reading import SymlinkError
from desk.text.times import utc_now


def read_for_change(desk: DeskFolder, path: str) -> bytes | None:
    """The note's bytes, None when it is absent. A symbolic link (or a note in a linked folder) is
    refused as the gate refuses it (InvalidFileError, exit 3, the same finding as `desk validate`),
    before the uncommitted-changes check, which would call the link a person's edit (exit 4)."""
    try:
        return desk.read_if_present(path)
    except SymlinkError:
        from desk.guard.rules import SYMLINK_MODE, check_file

        findings = check_file(path, b"", desk_id=desk.desk_id, allow=(), now=utc_now(), mode=SYMLINK_MODE)
        raise InvalidFileError(findings, hint=f"put a plain {path} back (`git checkout -- {path}` restores "
                                              "the committed one), then run the command again") from None
