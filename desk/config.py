"""`.system/desk.json`: the desk's identity, schema version, policies and budgets."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from desk.errors import DeskError, Finding, InvalidFileError
from desk.storage.reading import read_regular
from desk.vocabulary import CONFIG_PATH, DESK_ID_RE, DESK_SCHEMA, newer_schema

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
    """What `desk context` reads besides files (docs/context.md): how many recent facts the
    wake-up read shows (seed 000: at most 6) and how many journal days the spot check reads."""

    recent_facts: int = Field(default=6, ge=0, le=50)
    journal_days: int = Field(default=1, ge=1, le=31)


class Secrets(_Strict):
    """Findings of the secret scanner allowed by their sha256 fingerprint (never inline)."""

    allow: list[str] = []


class DeskConfig(_Strict):
    schema_version: int = Field(default=SCHEMA_VERSION, ge=1)
    desk_id: str
    distill: DistillPolicy = DistillPolicy()
    budgets: ContextBudgets = ContextBudgets()
    context: ContextOptions = ContextOptions()
    secrets: Secrets = Secrets()

    @field_validator("desk_id")
    @classmethod
    def _desk_id_format(cls, value: str) -> str:
        # Made once by `desk init` and kept for life (the `config` rule); a hand-edited id with a
        # newline, a quote or 10,000 characters would be stamped into every record and scope id.
        if DESK_ID_RE.fullmatch(value) is None:
            shown = value if len(value) <= 60 else value[:60] + "…"
            raise ValueError(f"{shown!r} is not a desk id: `desk-` and 32 lowercase hex digits, as "
                             "`desk init` made it")
        return value

    def to_bytes(self) -> bytes:
        return (json.dumps(self.model_dump(), indent=2, ensure_ascii=False) + "\n").encode()


def new_config() -> DeskConfig:
    return DeskConfig(desk_id=f"desk-{uuid.uuid4().hex}")


def load_config(root: Path) -> DeskConfig:
    """Read and validate `.system/desk.json`; a broken file is reported with its field.

    A desk of a newer schema raises DeskError: it is never read (or written) as if it were older.
    """
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
            Finding(CONFIG_PATH, field_line(text, e["loc"]), "config-field",
                    f"{'.'.join(str(p) for p in e['loc'])}: {e['msg'].removeprefix('Value error, ')}")
            for e in exc.errors()
        ], hint=("an unknown setting is usually one a newer desk wrote: every new setting comes with a "
                 "new schema_version, so upgrade desk on this machine (`pip install -U desk`), or "
                 "remove the setting by hand") if unknown else (
            "a desk keeps the id `desk init` gave it: put the committed one back (`git show "
            f"HEAD:{CONFIG_PATH}`)") if any(e["loc"][:1] == ("desk_id",) for e in exc.errors()) else None
        ) from None


def field_line(text: bytes | str, loc: tuple[int | str, ...]) -> int:
    """The line of desk.json where the top-level key of `loc` is written (1 when not found)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    key = json.dumps(str(loc[0])) if loc else None
    for number, line in enumerate(text.split("\n"), 1):
        if key is not None and line.lstrip().startswith(key):
            return number
    return 1
