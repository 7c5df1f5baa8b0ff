"""`.system/desk.json`: the desk's identity, schema version, policies and budgets."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from desk.errors import DeskError, Finding, InvalidFileError
from desk.storage.reading import read_regular
from desk.vocabulary import CONFIG_PATH, DESK_ID_RE, DESK_SCHEMA, MEMORY_TYPES, SEARCHABLE_META, newer_schema

SCHEMA_VERSION = DESK_SCHEMA


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class DistillPolicy(_Strict):
    """docs/design.md §8.0's promotion rules for `desk digest` (docs/design.md §3)."""

    min_age_days: int = Field(default=30, ge=0)
    kinds: list[str] = ["decision", "convention", "pitfall"]
    min_importance: int = Field(default=4, ge=1, le=5)
    min_occurrences: int = Field(default=2, ge=1)
    min_confirmations: int = Field(default=2, ge=1)


class ContextBudgets(_Strict):
    """Token budgets per section of `desk context` (docs/design.md §4.1)."""

    total: int = Field(default=8000, ge=0)
    project_agents: int = Field(default=1500, ge=0)
    agents: int = Field(default=1500, ge=0)
    soul: int = Field(default=800, ge=0)
    now: int = Field(default=600, ge=0)
    mistakes: int = Field(default=800, ge=0)
    user: int = Field(default=600, ge=0)
    user_prefs: int = Field(default=400, ge=0)  # the selected user's profile line and preferences
    memory_index: int = Field(default=1500, ge=0)
    recent_facts: int = Field(default=400, ge=0)
    journal: int = Field(default=1500, ge=0)
    project_index: int = Field(default=800, ge=0)  # the --project scope's own MEMORY.md
    recalled: int = Field(default=1500, ge=0)


class ContextOptions(_Strict):
    """What `desk context` reads besides files (docs/context.md): recent facts, journal days."""

    recent_facts: int = Field(default=6, ge=0, le=50)
    journal_days: int = Field(default=1, ge=1, le=31)


class RecallOptions(_Strict):
    """The `meta` keys of an archived event whose values `desk recall` searches (docs/recall.md)."""

    meta_fields: list[str] = list(SEARCHABLE_META)


class Secrets(_Strict):
    """Findings of the secret scanner allowed by their sha256 fingerprint (never inline)."""

    allow: list[str] = []


ReviewMode = Literal["direct", "propose"]
ReviewKey = Literal["*", "preference", "decision", "convention", "pitfall", "fact", "reference"]


class ReviewOps(_Strict):
    """Review mode per operation for one memory type; an operation left out follows `*`."""

    create: ReviewMode | None = None  # None: the `*` setting (or `direct`)
    update: ReviewMode | None = None
    forget: ReviewMode | None = None
    rename: ReviewMode | None = None


class DeskConfig(_Strict):
    schema_version: int = Field(default=SCHEMA_VERSION, ge=1)
    desk_id: str
    distill: DistillPolicy = DistillPolicy()
    budgets: ContextBudgets = ContextBudgets()
    context: ContextOptions = ContextOptions()
    secrets: Secrets = Secrets()
    recall: RecallOptions = RecallOptions()
    # Review mode (docs/review.md): memory type or `*` -> `direct` | `propose`, or per operation.
    review: dict[ReviewKey, ReviewMode | ReviewOps] = {}

    def review_mode(self, type: str | None, operation: str) -> ReviewMode:
        """How the assistant's `operation` on a memory of `type` lands: `direct` or `propose`; the
        type's own setting wins over `*`, then `direct`."""
        every = self.review.get("*", "direct")
        for setting in (self.review.get(type) if type in MEMORY_TYPES else None, every):  # type: ignore[call-overload]
            if isinstance(setting, ReviewOps):
                mode: ReviewMode | None = getattr(setting, operation)
                if mode is not None:
                    return mode
            elif setting is not None:
                return setting
        return "direct"

    @field_validator("desk_id")
    @classmethod
    def _desk_id_format(cls, value: str) -> str:
        # Stamped into every record and scope id: a hand-edited id must keep its form.
        if DESK_ID_RE.fullmatch(value) is None:
            shown = value if len(value) <= 60 else value[:60] + "…"
            raise ValueError(f"{shown!r} is not a desk id: `desk-` and 32 lowercase hex digits, as "
                             "`desk init` made it")
        return value

    def to_bytes(self) -> bytes:
        data = self.model_dump(exclude_defaults=False)
        if not data["review"]:
            del data["review"]  # absent means every write is direct: a desk without it stays as it was
        if self.recall == RecallOptions():
            del data["recall"]  # absent means the default: a desk that never set it stays as it was
        return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode()


def new_config() -> DeskConfig:
    return DeskConfig(desk_id=f"desk-{uuid.uuid4().hex}")


def load_config(root: Path) -> DeskConfig:
    """Read and validate `.system/desk.json` (a broken file reported with its field; a newer one refused)."""
    path = root / CONFIG_PATH
    text = read_regular(path, root)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidFileError([Finding(CONFIG_PATH, exc.lineno, "config-json", exc.msg)]) from None
    newer = newer_schema(data.get("schema_version") if isinstance(data, dict) else None)
    if newer:
        raise DeskError(newer, hint="upgrade desk (`pip install -U desk`); nothing was changed")
    try:
        return DeskConfig.model_validate(data)
    except ValidationError as exc:
        unknown = [e for e in exc.errors() if e["type"] == "extra_forbidden"]
        raise InvalidFileError([
            Finding(CONFIG_PATH, field_line(text, loc), "config-field", f"{'.'.join(str(p) for p in loc)}: {msg}")
            for loc, msg in config_errors(exc)
        ], hint=("an unknown setting is usually one a newer desk wrote: every new setting comes with a "
                 "new schema_version, so upgrade desk on this machine (`pip install -U desk`), or "
                 "remove the setting by hand") if unknown else (
            "a desk keeps the id `desk init` gave it: put the committed one back (`git show "
            f"HEAD:{CONFIG_PATH}`)") if any(e["loc"][:1] == ("desk_id",) for e in exc.errors()) else None
        ) from None


def config_errors(exc: ValidationError) -> list[tuple[tuple[int | str, ...], str]]:
    """pydantic's errors as (loc, message), one per setting (a bad review value once, in plain words)."""
    seen: dict[tuple[int | str, ...], str] = {}
    for error in exc.errors():
        loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and (p.startswith("literal[")
                                                                          or p == "ReviewOps")))
        msg = error["msg"].removeprefix("Value error, ")
        if loc[:1] == ("review",) and len(loc) == 3 and loc[2] == "[key]":
            loc, msg = loc[:2], f"not a memory type: use `*` or one of {', '.join(MEMORY_TYPES)}"
        elif loc[:1] == ("review",) and len(loc) == 2 and len(error["loc"]) > 2:
            msg = ("must be `direct`, `propose`, or a map from create/update/forget/rename to one "
                   "of those")
        seen.setdefault(loc, msg)
    return [(loc, msg) for loc, msg in seen.items()  # a map with a bad operation: that operation alone
            if not any(len(other) > len(loc) and other[:len(loc)] == loc for other in seen)]


def field_line(text: bytes | str, loc: tuple[int | str, ...]) -> int:
    """The line of desk.json where the key of `loc` is written, each key looked for after the one
    before; the deepest key found wins (1 when none is)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    lines = text.split("\n")
    found, start = 1, 0
    for part in loc:
        if not isinstance(part, str):
            continue  # a list index: not a key in the file
        key = json.dumps(part)
        for number in range(start, len(lines)):
            if lines[number].lstrip().startswith(key) or f"{key}:" in lines[number].replace(" ", ""):
                found, start = number + 1, number + 1
                break
        else:
            break
    return found
