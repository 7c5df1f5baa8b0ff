"""`desk validate --all`'s entry, `validate_all`: git starts listing the work tree first.

A module of its own, light to import (desk.storage.git only), so that the listing (`git
ls-files`, about as costly as `git status`) runs while the process loads the gate (the rules, the
memory-set rules, the verdict cache and SQLite): desk.guard.validate does the work
(`validate_listed`) and re-exports this function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import datetime as dt

    from desk.guard.validate import Report
    from desk.layout import DeskFolder

LISTED_FOLDER = ".system/"  # HEAD's tree of it is listed too: every path `needs_old` names lives there


def validate_all(desk: DeskFolder, now: dt.datetime | None = None, *, cached: bool = True) -> Report:
    """Every desk file in the work tree (tracked or not ignored): `desk validate --all`
    (desk.guard.validate.validate_listed says how). `cached=False` runs every rule on every file."""
    started = desk.git.start_work_tree_listing(LISTED_FOLDER)
    from desk.guard.validate import validate_listed

    return validate_listed(desk, started, now, cached=cached)
