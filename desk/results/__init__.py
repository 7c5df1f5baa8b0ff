"""The typed results of the public API (`desk.api.Desk`'s methods).

Every result has `.to_json()` (exactly the CLI's `--json`) and `.text()` (its human output), so the
CLI only chooses between them and exits with `.exit_code`. A result wraps the operation's own
dataclass as `.value` where there is one. Each class is loaded from its module on first use (PEP
562), so a command builds only its own module's dataclasses (docs/design.md §6, start-up).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ loads each name on first use
    from desk.results.archive import (Appended, ArchiveCheck, ArchivedEvent, Checkpointed, EventList,
                                      Imported)
    from desk.results.base import Outcome, Wrapped
    from desk.results.change import MemoryChange, Restored
    from desk.results.interchange import Exported, ImportPlan
    from desk.results.guard import AgentSetupDone, Diagnosis, HooksChange, Validation
    from desk.results.memory import AuditTrail, Initialized, MemoryDiff, MemoryList, ShownMemory
    from desk.results.memory import Timeline
    from desk.results.read import Context, Recalled, Stats
    from desk.results.scopes import PrefChanged, PrefList, PrefShown, UserProfile
    from desk.results.sync import Cloned, Synced
    from desk.results.working import (ConflictCase, ConflictCases, ConversationsRendered, Digested, Migrated,
                                      MistakeAdded, MistakeList, NowChange, NowView, Resolved)

# Where each result class lives (the modules above). The public list is desk/__init__.py's `__all__`
# (every class here is in it: tests/test_public_api.py).
_HOMES = {
    **dict.fromkeys(("Appended", "ArchiveCheck", "ArchivedEvent", "Checkpointed", "EventList", "Imported"),
                    "archive"),
    **dict.fromkeys(("Outcome", "Wrapped"), "base"),
    **dict.fromkeys(("Exported", "ImportPlan"), "interchange"),
    **dict.fromkeys(("MemoryChange", "Restored"), "change"),
    **dict.fromkeys(("AgentSetupDone", "Diagnosis", "HooksChange", "Validation"), "guard"),
    **dict.fromkeys(("AuditTrail", "Initialized", "MemoryDiff", "MemoryList", "ShownMemory"), "memory"),
    "Timeline": "memory",
    **dict.fromkeys(("Context", "Recalled", "Stats"), "read"),
    **dict.fromkeys(("PrefChanged", "PrefList", "PrefShown", "UserProfile"), "scopes"),
    **dict.fromkeys(("Cloned", "Synced"), "sync"),
    **dict.fromkeys(("ConflictCase", "ConflictCases", "ConversationsRendered", "Digested", "Migrated",
                     "MistakeAdded", "MistakeList", "NowChange", "NowView", "Resolved"), "working"),
}


def __getattr__(name: str) -> Any:
    """Load a result class from its module on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'desk.results' has no attribute {name!r}")
    return getattr(import_module(f"desk.results.{home}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
