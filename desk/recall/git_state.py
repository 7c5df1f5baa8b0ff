"""What the search cache asks git on each refresh, startable before the search modules load.

A cold `desk recall` imports the ranker, the term tables and the stemmer (~10 ms) before the
search cache's refresh asks git which memory files differ from HEAD (~13 ms at 10,000 memories).
`Desk.recall` starts the git processes first (`search_git_state`) and hands them to the cache
(`SearchCache.take_asked`), so the two overlap.
"""

from __future__ import annotations

from desk.layout import ARCHIVE_DIR, MEMORY_DIR, DeskFolder
from desk.storage.git import FolderState


def search_git_state(desk: DeskFolder) -> FolderState:
    """memory/ as git sees it (untracked files git ignores left out, as `git status` shows them)
    and HEAD's memory and archive trees (`FolderState.ids`)."""
    return desk.git.folder_state(MEMORY_DIR, ignored=False, also=[f"HEAD:{ARCHIVE_DIR}"])
