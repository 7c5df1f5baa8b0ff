"""What `desk clone` refuses in the tree it cloned, before it is checked out and before any of
desk's code reads or writes in it.

A clone runs no hook, so what another clone committed with `--no-verify` arrives unchecked. Most
of it is the gate's to report (`desk doctor` runs after the clone), but three things act on this
machine as soon as the tree is checked out and desk starts working in it, so the clone is refused
(and nothing is kept) instead: a symbolic link anywhere (`.system/cache` linked to a folder outside
would have desk write there; the gate's `symlink` rule), a committed cache (`cache-committed`), and
a `.gitattributes` line that changes how git checks out or merges desk's files (`attribute`,
desk.gate.attributes). `desk sync` refuses the same through the gate before HEAD moves
(desk.gate.validate.validate_range).
"""

from __future__ import annotations

from desk.errors import Finding
from desk.gate.attributes import check_attributes
from desk.gate.rules import SYMLINK_MODE, UNMANAGED_DIRS, file_verdict
from desk.storage.git import Git


def tree_refusals(git: Git, rev: str = "HEAD") -> list[Finding]:
    """The gate's `symlink`, `cache-committed` and `attribute` findings on the tree of `rev`, read
    from the object store (nothing is checked out)."""
    findings: list[Finding] = []
    links = git.worktree.symlinks(rev)
    for path in links:
        findings += file_verdict(path, b"", desk_id="", mode=SYMLINK_MODE).findings
    with git.index.tree_index(rev) as at:
        paths = at.worktree.index_paths()
        for path in paths:
            if path.startswith(UNMANAGED_DIRS) and path not in links:
                findings += file_verdict(path, b"", desk_id="").findings
        return findings + check_attributes(at, paths)
