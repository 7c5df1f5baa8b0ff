"""Named crash points: the test hook that lets the kill matrix stop a real process at a write boundary.

`crash_point(name)` SIGKILLs the process (no `finally`, no flush: what a kill -9 leaves) when
DESK_TEST_CRASH_AT names that point; CRASH_POINTS lists the names so a misspelt one is caught."""

from __future__ import annotations

import os
import signal

CRASH_ENV = "DESK_TEST_CRASH_AT"
# The same points, where the process sends itself a Ctrl-C (SIGINT) instead: tests/test_interrupt.py.
INTERRUPT_ENV = "DESK_TEST_INTERRUPT_AT"
CRASH_POINTS = (
    "before-marker",        # nothing written yet
    "after-marker",         # the pending-mutation marker is durable, no object or file yet
    "after-objects",        # blobs, tree and commit object written (unreferenced), no file yet
    "after-write",          # after each work-tree file: `after-write:<path>`
    "after-index-refresh",  # the person's index refreshed in desk's copy (what `git add` would do)
    "after-update-ref",     # the branch moved: the commit is published, the index not yet
    "after-publish",        # the person's index published; the marker is still there
    "after-marker-cleared",
)
# desk sync's own (tests/sync/test_kill_sync.py; kills inside git are made by its hook and filter)
SYNC_CRASH_POINTS = ("sync-merged",)  # git merged into the work tree, desk's commit not made


def crash_point(name: str) -> None:
    """SIGKILL this process when DESK_TEST_CRASH_AT is `name`, SIGINT it when
    DESK_TEST_INTERRUPT_AT is (test hooks; a no-op otherwise)."""
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get(INTERRUPT_ENV) == name:
        os.kill(os.getpid(), signal.SIGINT)
