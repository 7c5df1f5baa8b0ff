"""What one `desk context` read is asked for (`ContextRequest`), the read orders and the budgets
(estimated tokens per section, from `.system/desk.json`, overridden per call)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desk.errors import DeskError, UsageError
from desk.layout import (AGENTS_FILE, CONFIG_PATH, INDEX_FILE, MISTAKES_FILE, NOW_FILE, PREFS_INDEX_FILE,
                         PROJECTS_DIR, SOUL_FILE, USER_FILE, DeskFolder)
from desk.vocabulary import CONTEXT_MODES

if TYPE_CHECKING:
    from desk.memory.past import Past

MODES = CONTEXT_MODES
FILE_SECTIONS = (  # budget key, label, desk path (None: the project's file)
    ("project_agents", f"{AGENTS_FILE} (project)", None),
    ("agents", AGENTS_FILE, AGENTS_FILE),
    ("soul", SOUL_FILE, SOUL_FILE),
    ("now", NOW_FILE, NOW_FILE),
    ("mistakes", MISTAKES_FILE, MISTAKES_FILE),
    ("user", USER_FILE, USER_FILE),
    ("user_prefs", "User profile and preferences", PREFS_INDEX_FILE),
    ("memory_index", INDEX_FILE, INDEX_FILE),
    ("project_index", f"{INDEX_FILE} (project)", PROJECTS_DIR),
)
READ_ORDER = {
    "wake": ["project_agents", "agents", "soul", "now", "mistakes", "user", "user_prefs", "memory_index",
             "project_index", "recent_facts"],
    "spot": ["now", "mistakes", "journal"],
}
BUDGET_KEYS = ("total", *(key for key, _, _ in FILE_SECTIONS), "recent_facts", "journal", "recalled")
OPTION_DEFAULTS = {"recent_facts": 6, "journal_days": 1}  # desk.config.ContextOptions' defaults
# Budget keys added after desks were first made: a desk.json without them reads their defaults
# (desk.config.ContextBudgets'; a test keeps the two equal) without loading pydantic.
LATER_BUDGETS = {"user_prefs": 400, "project_index": 800, "recent_facts": 400, "journal": 1500}


@dataclass(frozen=True, slots=True)
class ContextRequest:
    """One context read, as `Desk.context`, `desk context` and the MCP `context` tool ask for it."""

    mode: str = "wake"  # or "spot"
    query: str | None = None  # adds the memories whose triggers it hits
    budget: int | None = None  # the total
    section_budgets: Mapping[str, int] = field(default_factory=dict)  # keys of `BUDGET_KEYS`
    project_agents: Path | None = None  # the project's own AGENTS.md, read first
    as_of: dt.datetime | None = None  # the time the read treats as now (None: now)
    journal_days: int | None = None  # None: `.system/desk.json`'s
    user: str | None = None  # whose USER.md and preferences (None: the owner)
    project: str | None = None  # read beside the desk-wide memories
    past: Past | None = None  # `--as-of`: read the commit at or before `as_of` (docs/time.md)


def _fast_config(desk: DeskFolder) -> dict[str, Any] | None:
    try:
        found = json.loads(desk.read(CONFIG_PATH))
    except (OSError, ValueError, DeskError):
        return None
    return found if isinstance(found, dict) else None


def _configured_budgets(desk: DeskFolder) -> dict[str, int]:
    """The budgets of `.system/desk.json`: plain ones read as JSON, without pydantic; anything
    else through the validating loader, which says what is wrong."""
    found = (_fast_config(desk) or {}).get("budgets")
    if isinstance(found, dict) and all(type(v) is int and v >= 0 for v in found.values()):
        merged = {**LATER_BUDGETS, **found}
        if sorted(merged) == sorted(BUDGET_KEYS):
            return merged
    return desk.config.budgets.model_dump()


def configured_options(desk: DeskFolder) -> dict[str, int]:
    """`.system/desk.json` `context`: how many recent facts, how many journal days."""
    found = (_fast_config(desk) or {}).get("context", {})
    if isinstance(found, dict) and set(found) <= set(OPTION_DEFAULTS) and all(
            type(v) is int and 0 <= v <= (50 if k == "recent_facts" else 31) and (v >= 1 or k == "recent_facts")
            for k, v in found.items()):
        return {**OPTION_DEFAULTS, **found}
    return desk.config.context.model_dump()


def budgets_for(desk: DeskFolder, total: int | None, overrides: Mapping[str, int]) -> dict[str, int]:
    budgets = _configured_budgets(desk)
    for key, value in overrides.items():
        if key not in BUDGET_KEYS:
            raise UsageError(f"unknown budget section {key!r}; one of {', '.join(BUDGET_KEYS)}")
        if value < 0:
            raise UsageError(f"budget for {key} must be 0 or more, not {value}")
        budgets[key] = value
    if total is not None:
        if total < 0:
            raise UsageError(f"--budget must be 0 or more, not {total}")
        budgets["total"] = total
    return budgets
