"""Putting back the bytes core.autocrlf changed, once desk's `-text` pins arrive in a clone: a
file whose only difference from HEAD is CR before LF was changed by git, not by anyone."""

from __future__ import annotations

from desk.errors import DeskError
from desk.gate.rules import MANAGED_DIRS, ROOT_FILES
from desk.layout import DeskFolder
from desk.storage.atomic import atomic_write


def restore_line_ends(desk: DeskFolder) -> list[str]:
    """Write back HEAD's bytes into each desk file that differs from them only by CRLF line ends
    (call it under the desk lock, after the pins' commit); the paths written."""
    git = desk.git
    changed = git.worktree.dirty(sorted(ROOT_FILES) + [d.rstrip("/") for d in MANAGED_DIRS])
    heads = git.objects.read_blobs([f"HEAD:{path}" for path in changed])
    restored = []
    for path in changed:
        committed = heads.get(f"HEAD:{path}")
        try:
            current = desk.read(path)
        except (OSError, DeskError):
            continue  # gone, or a link: not desk's to touch here
        if committed is not None and current != committed and current.replace(b"\r\n", b"\n") == committed:
            atomic_write(desk.path(path), committed)
            restored.append(path)
    return restored
