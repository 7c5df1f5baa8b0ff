"""What every part of `Desk` shares: the desk on disk, trailers, closing, argument checks."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Self

from desk.errors import UsageError
from desk.layout import MEMORY_DIR, DeskFolder
from desk.vocabulary import REASON_MAX

if TYPE_CHECKING:
    from desk.results import Cloned, Initialized

Progress = Callable[[int, int], None]  # progress(done, total), e.g. for a progress bar
Time = str | dt.datetime  # ISO 8601 with Z or an offset, or an aware datetime

def words(value: Any, what: str) -> Any:
    """`value` unless it is one string where a list of strings belongs (it would iterate by character)."""
    if isinstance(value, (str, bytes)):
        raise UsageError(f"{what} must be a list of strings, not one string {value!r}",
                         hint=f"wrap it in a list: {what}=[{value!r}]")
    return value


def require_reason(reason: str | None) -> None:
    """`forget --reason` is at most REASON_MAX characters (exit 2, naming its length)."""
    if reason is not None and len(reason) > REASON_MAX:
        raise UsageError(f"--reason is {len(reason):,} characters; the limit is {REASON_MAX:,}",
                         hint="say why in a sentence or two: the commit keeps it as Desk-Reason")


class DeskBase(DeskFolder):
    """The desk on disk with what each group of `Desk`'s methods shares."""

    initialized: Initialized | None = None  # what `desk.init` did; None from `desk.open`
    cloned: Cloned | None = None  # what `desk.clone` did
    _search_cache: Any = None  # recall's SearchCache, kept warm across calls until close()
    _dense: Any = None  # hybrid recall's DenseIndex per embedder (name or object), warm until close()

    def with_trailers(self, trailers: Mapping[str, str]) -> Self:
        """This desk, for commits that also carry `trailers` after each operation's own (which win);
        the copy shares this object's caches. UsageError for a bad key or an empty value."""
        import copy
        import re

        for key, value in trailers.items():
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9-]*", key):
                raise UsageError(f"trailer key {key!r} must be letters, digits and `-`")
            if not " ".join(str(value).split()):
                raise UsageError(f"trailer {key} needs a value")
        clone = copy.copy(self)
        clone.trailers = {**self.trailers, **trailers}
        return clone

    def close(self) -> None:
        """Release what recall keeps open between calls (its search cache). Safe to call twice."""
        if self._search_cache is not None:
            self._search_cache.close()
            self._search_cache = None
        for index in (self._dense or {}).values():
            index.close()
        self._dense = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _name(self, name: str, project: str | None = None) -> str:
        """A memory name from what a person typed: `x`, `x.md`, `memory/x.md` or a path to it."""
        from desk.layout import PROJECTS_DIR, project_problem
        from desk.formats.memory_file import memory_name_arg

        if project is None or project_problem(project):  # a bad project name is refused later
            return memory_name_arg(name, self.root / MEMORY_DIR)
        name = name.removeprefix("./").removeprefix(f"{PROJECTS_DIR}/{project}/")  # the desk-relative path
        return memory_name_arg(name, self.root / PROJECTS_DIR / project / MEMORY_DIR)
