"""What `desk clone` refuses in the tree it cloned, before checkout: what acts on this machine as
soon as desk works in it (a symlink, a committed cache, a `.gitattributes` line changing how git
checks out desk's files). The rest is the gate's (`desk doctor` runs after the clone)."""

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
