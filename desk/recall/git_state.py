"""What recall and context ask git first, startable before their own modules load.

A cold `desk recall` imports the ranker, the term tables and the stemmer (~10 ms) before the
search cache's refresh asks git which memory files differ from HEAD (~13 ms at 10,000 memories).
`Desk.recall` starts the git processes first (`search_git_state`) and hands them to the cache
(`SearchCache.take_asked`), so the two overlap. `Desk.context` does the same with memory/'s state
and the blobs of the files a read shows (`context_git_state`), which git answers while the context
modules load and the sections are read.
"""

from __future__ import annotations

from collections.abc import Iterable

from desk.errors import DeskError
from desk.layout import (AGENTS_FILE, ARCHIVE_DIR, INDEX_FILE, MEMORY_DIR, MISTAKES_FILE, NOW_FILE, SOUL_FILE,
                         DeskFolder, profile_path, project_index_path, scope_id)
from desk.storage.git import FolderState


def search_git_state(desk: DeskFolder) -> FolderState:
    """memory/ as git sees it (untracked files git ignores left out, as `git status` shows them)
    and HEAD's memory and archive trees (`FolderState.ids`)."""
    return desk.git.folder_state(MEMORY_DIR, ignored=False, also=[f"HEAD:{ARCHIVE_DIR}"])


def start_folder_state(desk: DeskFolder, also: Iterable[str] = ()) -> FolderState | None:
    """memory/ as git sees it, asked now (`Git.folder_state`; `also`: more object names to look
    up at the same HEAD); None when git cannot say."""
    try:
        return desk.git.folder_state(MEMORY_DIR, also=also)
    except DeskError:
        return None


def context_git_state(desk: DeskFolder, mode: str, query: str | None, user: str | None,
                      project: str | None) -> FolderState | None:
    """What a context read of `mode` asks git (`desk.recall.context.build_context` takes it):
    memory/'s state, when the read shows memories (the wake-up read, or any read with a query),
    with HEAD's blobs of the desk files it usually shows (`usual_reads`); None when it shows none."""
    if mode != "wake" and not (query is not None and query.strip()):
        return None
    return start_folder_state(desk, [f"HEAD:{rel}" for rel in usual_reads(mode, scope_id(user), project)])


def usual_reads(mode: str, scope: str, project: str | None) -> list[str]:
    """The desk files a read of `mode` shows unless a section is empty or over the budget."""
    if mode != "wake":
        return [NOW_FILE, MISTAKES_FILE]
    found = [AGENTS_FILE, SOUL_FILE, NOW_FILE, MISTAKES_FILE, profile_path(scope), INDEX_FILE]
    return found + ([project_index_path(project)] if project is not None else [])
