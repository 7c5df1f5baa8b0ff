"""The whole-desk checks' first steps, `validate_all` and `EarlyReads`: light to import, so that the
listing runs while the process loads the gate (desk.gate.work_tree does the work)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from typing import TYPE_CHECKING

from desk.layout import LISTED_FOLDER

if TYPE_CHECKING:
    import datetime as dt
    from contextlib import AbstractContextManager

    from desk.gate.checks import Report
    from desk.layout import DeskFolder
    from desk.storage.git import StartedListing

DOCTOR_LOCK_WAIT = 5.0  # desk.guard.doctor.LOCK_WAIT


def validate_all(desk: DeskFolder, now: dt.datetime | None = None, *, cached: bool = True) -> Report:
    """Every desk file in the work tree (tracked or not ignored): `desk validate --all`
    (desk.gate.work_tree.validate_listed says how). `cached=False` runs every rule on every file."""
    with closing(desk.git.worktree.start_work_tree_listing(LISTED_FOLDER)) as started:
        from desk.gate.work_tree import validate_listed

        return validate_listed(desk, started, now, cached=cached)


class EarlyReads:
    """The desk lock, held (`lock`: its entry raises the ConflictError met taking it), and the reads it started."""

    def __init__(self, desk: DeskFolder, commits: int) -> None:
        from desk.errors import ConflictError
        from desk.storage.lock import desk_lock

        # Only doctor without --repair comes here: a reader (a shared lock on a read-only desk).
        self.lock = _Held(desk_lock(desk.lock_path, timeout=DOCTOR_LOCK_WAIT, reading=True))
        self._git = desk.git
        self._history: Callable[[], list[str]] | None = None
        self._commits: list[str] | None = None
        self.listing: StartedListing | None = None
        try:
            self.lock.take()
        except ConflictError as exc:
            self.lock.refused = exc
            return
        self.listing = desk.git.worktree.start_work_tree_listing(LISTED_FOLDER)
        desk.git.config.start()
        self._history = desk.git.history.start_commit_ids(commits) if commits > 0 else list

    def history(self) -> list[str]:
        """The commits the history check reads (waits for `git rev-list`)."""
        if self._commits is None:
            self._commits = self._history() if self._history is not None else []
        return self._commits

    def finish(self) -> None:
        """Wait for every read started (their answers are kept): no git of doctor's own runs after."""
        if self.listing is not None:
            from desk.errors import GitError

            try:
                self.listing.result()
            except GitError:
                pass  # the rule check asks again and reports it
        if self._history is not None:
            self.history()
            self._git.config.values()


class _Held:
    """A lock taken before the `with` that releases it."""

    def __init__(self, lock: AbstractContextManager[None]) -> None:
        self._lock = lock
        self.refused: Exception | None = None

    def take(self) -> None:
        self._lock.__enter__()

    def __enter__(self) -> None:
        if self.refused is not None:
            raise self.refused

    def __exit__(self, *exc: object) -> None:
        if self.refused is None:
            self._lock.__exit__(*exc)  # type: ignore[arg-type]
