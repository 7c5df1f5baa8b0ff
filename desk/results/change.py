"""The result of every memory mutation (remember, set, rename, forget, reindex, edit, restore)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from desk.results.base import Wrapped, commit_suffix

if TYPE_CHECKING:
    from desk.memory.edit import EditResult
    from desk.memory.operations import MutationResult
    from desk.memory.restore import RestoreResult


class MemoryChange(Wrapped["MutationResult | EditResult"]):
    """remember, forget, reindex, edit: the status, the path and the commit (None: none made)."""

    def text(self) -> str:
        r = self.value
        pending = getattr(r, "pending", [])
        if r.status == "renamed":
            return f"renamed: {r.path}{commit_suffix(r.commit)}"
        if r.status == "proposed":
            proposal = getattr(r, "proposal", None)
            return (f"proposed: {r.path} as proposal {proposal} (review mode: a person reviews it with "
                    f"`desk review show {proposal}`)")
        if r.status == "written":
            return ("MEMORY.md regenerated; memory/ has uncommitted edits ("
                    + ", ".join(pending) + "): review them and commit them with MEMORY.md")
        if r.status == "not-created":
            return f"not created: {r.path} (the template was saved unchanged; nothing was written)"
        restore = getattr(r, "restore", None)
        undo = f"\nto bring it back: {restore}" if restore else ""
        return f"{r.status}: {r.path}{commit_suffix(r.commit)}{undo}"

    def warnings(self) -> list[str]:
        return [f"desk: warning: {w}" for w in getattr(self.value, "warnings", [])]


class Restored(Wrapped["RestoreResult"]):
    """`desk restore`: status `restored` (one commit) or `unchanged`, the commit whose version came
    back (`restored_from`, and `from_path`, the memory's path there), the new commit."""

    def text(self) -> str:
        r = self.value
        source = r.restored_from[:7] + ("" if r.from_path == r.path else f" ({r.from_path})")
        if r.status == "unchanged":
            return f"unchanged: {r.path} is already the version of {source}"
        return f"restored: {r.path} from {source}{commit_suffix(r.commit)}"

    def warnings(self) -> list[str]:
        return [f"desk: warning: {w}" for w in self.value.warnings]
