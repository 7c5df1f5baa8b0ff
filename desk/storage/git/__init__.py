"""The one package that talks to git (its command line, as pre-commit's `git.py`), split by git
concept as dulwich splits it; every git output is parsed here and callers get typed data.
Why not GitPython: docs/design.md §7."""

from desk.storage.git.folder import FolderState
from desk.storage.git.history import Commit, HistoryStep
from desk.storage.git.locks import IndexLock, desk_left_index_lock, release_private_index_lock, release_stale_index_lock
from desk.storage.git.objects import blob_sha
from desk.storage.git.parse import RawChange, WorkTreeListing
from desk.storage.git.repo import Git, hook_index, hook_toplevel, staged_git, staged_snapshot, toplevel
from desk.storage.git.run import LOCK_HINT, LOCK_STALE_AFTER, Answer, clean_env
from desk.storage.git.trailers import parse_trailers
from desk.storage.git.worktree import StartedListing
from desk.storage.hashing import sha1_hex

__all__ = [
    "LOCK_HINT", "LOCK_STALE_AFTER", "Answer", "Commit", "FolderState", "Git", "HistoryStep", "IndexLock", "RawChange",
    "StartedListing", "WorkTreeListing", "blob_sha", "clean_env", "desk_left_index_lock", "hook_index", "hook_toplevel",
    "parse_trailers", "release_private_index_lock", "release_stale_index_lock", "sha1_hex", "staged_git",
    "staged_snapshot", "toplevel",
]
