"""Which version of the fact format an archive record of kind `fact` is written in.

Facts are archive lines (append-only, never migrated), so the version lives with the fact
(`payload.schema_version`) and every reader accepts every earlier version forever. A fact without
the field is version 1; desk writes FACT_SCHEMA; a fact of a newer version is refused by every
reader with its `path:line`, never read as if it were older. Its own small module so that
desk.digest.facts (pydantic) and desk.digest.recent (which must not load pydantic) share the rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from desk.errors import DeskError

FACT_SCHEMA = 2
READABLE_FACT_SCHEMAS = (1, 2)
VERSION_KEY = "schema_version"


class NewerFactError(DeskError):
    """A fact written by a newer desk (exit 1): the reader stops rather than misread it."""


def fact_version(payload: Mapping[str, Any], *, where: str = "", fact_id: object = None) -> int:
    """The fact format version of `payload` (1 without the field).

    ValueError when the field is not a whole number >= 1 (an invalid fact, as a bad `kind` is);
    NewerFactError naming `where` (`path:line`) when it is newer than FACT_SCHEMA.
    """
    version = payload.get(VERSION_KEY, 1)
    if type(version) is not int or version < 1:
        raise ValueError(f"payload.{VERSION_KEY}: must be a whole number 1 or more, not {version!r}")
    if version > FACT_SCHEMA:
        raise NewerFactError(
            f"{where or 'archive'}: fact {fact_id if isinstance(fact_id, str) else '(no id)'} has "
            f"{VERSION_KEY} {version}: made by a newer desk (this desk reads fact versions "
            f"{', '.join(map(str, READABLE_FACT_SCHEMAS))}), so it is not read as an older one",
            hint="upgrade desk (`pip install -U desk`); nothing was changed")
    return version
