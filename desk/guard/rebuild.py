"""`desk doctor --rebuild`: drop every derived cache and record (desk.storage.derived) and make the
ones a read makes again, so the next command runs warm."""

from __future__ import annotations

from desk.gate.whole import DOCTOR_LOCK_WAIT, validate_all
from desk.layout import DeskFolder
from desk.gate.mirror import head_mirror, project_heads
from desk.recall.context import ContextRequest, build_context
from desk.recall.search_cache import SearchCache
from desk.storage.derived import drop_all
from desk.storage.lock import desk_lock


def rebuild(desk: DeskFolder) -> list[str]:
    """Drop every registered cache under the desk lock, then make what a read makes; returns the
    dropped paths, relative to the git folder."""
    with desk_lock(desk.lock_path, timeout=DOCTOR_LOCK_WAIT):
        dropped = drop_all(desk.git_dir)
        with head_mirror(desk):
            pass
        with project_heads(desk):
            pass
    validate_all(desk)
    build_context(desk, ContextRequest(mode="wake", query="desk"))
    cache = SearchCache(desk)
    try:
        cache.refresh()
    finally:
        cache.close()
    return dropped
