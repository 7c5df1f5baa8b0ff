"""What git leaves in its folder, read as files: no git process, and not desk.storage.git (which
loads subprocess), so that every command can ask at start-up for the price of a few `stat`s."""

from __future__ import annotations

from pathlib import Path


def stopped_operation(git_dir: Path) -> str | None:
    """What a person's git left half-done in the clone whose git folder is `git_dir`: `merge`
    (MERGE_HEAD: a `git pull` or `git merge` stopped on a conflict), `rebase` (a `git pull
    --rebase` or `git rebase` stopped), else None."""
    if (git_dir / "MERGE_HEAD").is_file():
        return "merge"
    if (git_dir / "rebase-merge").is_dir() or (git_dir / "rebase-apply").is_dir():
        return "rebase"
    return None
