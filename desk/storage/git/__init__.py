"""The one package that talks to git, split by git concept as dulwich splits it.

desk drives git's own command line, like pre-commit's `git.py`, rather than GitPython's object
layer: GitPython's `IndexFile.commit` lost commits under concurrent writers on this machine and never
fsyncs or signs (docs/design.md §7), and importing it would blow the pre-commit hook's and the CLI
start-up budgets. Every git output is parsed here and nowhere else; callers get typed data.

- `run`: starting git (`subprocess`), its errors, the lock files it may take
- `repo`: `Git`, one work tree, with a part per concept; the hook's repository
- `refs`, `objects`, `worktree` (+ `folder`), `index`, `locks`, `config`, `history`, `merging`
- `parse`: `-z` lists, `ls-files`, `ls-tree`, `--raw` diffs; `trailers`: commit message trailers
"""

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
