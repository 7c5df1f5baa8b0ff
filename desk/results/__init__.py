"""The typed results of the public API: `.to_json()` is the CLI's `--json`, `.text()` its output.

Each class is loaded from its module on first use (PEP 562): a command builds only its own module's.
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
    from desk.results.memory import AuditTrail, Initialized, MemoryDiff, MemoryList, ShownMemory, Timeline
    from desk.results.read import Context, Recalled, Stats
    from desk.results.scopes import PrefChanged, PrefList, PrefShown, UserProfile
    from desk.results.sync import Cloned, Synced
    from desk.results.working import (ConflictCase, ConflictCases, ConversationsRendered, Digested, Migrated,
                                      MistakeAdded, MistakeList, NowChange, NowView, Resolved)

_HOMES = {name: home for home, names in {
    "archive": "Appended ArchiveCheck ArchivedEvent Checkpointed EventList Imported",
    "base": "Outcome Wrapped",
    "change": "MemoryChange Restored",
    "guard": "AgentSetupDone Diagnosis HooksChange Validation",
    "interchange": "Exported ImportPlan",
    "memory": "AuditTrail Initialized MemoryDiff MemoryList ShownMemory Timeline",
    "read": "Context Recalled Stats",
    "scopes": "PrefChanged PrefList PrefShown UserProfile",
    "sync": "Cloned Synced",
    "working": "ConflictCase ConflictCases ConversationsRendered Digested Migrated MistakeAdded MistakeList "
               "NowChange NowView Resolved",
}.items() for name in names.split()}


def __getattr__(name: str) -> Any:
    """Load a result class from its module on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'desk.results' has no attribute {name!r}")
    return getattr(import_module(f"desk.results.{home}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
