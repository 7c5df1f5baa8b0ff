"""The typed results of the public API (`desk.api.Desk`'s methods).

Every result has `.to_json()`, exactly what the CLI prints under `--json`, and `.text()`, the
CLI's human output, so the CLI only chooses between them (and exits with `.exit_code`). Where an
operation already returns a typed dataclass, the result carries it as `.value`; otherwise the
result's own fields are the data. The operation modules are imported for type checking only, and
the few renderers a `.text()` needs inside that method, so importing the results (which every
command does) does not load recall, doctor or the hooks.
"""

from __future__ import annotations

from desk.results.base import Outcome, Wrapped
from desk.results.interchange import Exported, ImportPlan
from desk.results.memory import (AuditTrail, Context, Diagnosis, HooksChange, Initialized, MemoryChange,
                                 MemoryDiff, MemoryList, Recalled, ShownMemory, Stats, Validation)
from desk.results.scopes import PrefChanged, PrefList, PrefShown, UserProfile
from desk.results.sync import Cloned, Synced
from desk.results.working import (Appended, ArchiveCheck, ArchivedEvent, Checkpointed, ConflictCase, ConflictCases,
                                  ConversationsRendered, Digested, EventList, Imported, MistakeAdded,
                                  Migrated, MistakeList, NowChange, NowView, Resolved)

__all__ = [
    "Outcome", "Wrapped",
    "Initialized", "MemoryChange", "MemoryDiff", "ShownMemory", "MemoryList", "AuditTrail",
    "Validation", "HooksChange", "Diagnosis", "Recalled", "Context", "Stats",
    "Appended", "ArchivedEvent", "EventList", "Imported", "ArchiveCheck", "Checkpointed",
    "Digested", "ConflictCases", "ConflictCase", "Resolved", "Migrated", "NowView", "NowChange", "MistakeAdded",
    "MistakeList", "ConversationsRendered", "ImportPlan", "Exported", "Synced", "Cloned", "UserProfile",
    "PrefChanged", "PrefShown", "PrefList",
]
