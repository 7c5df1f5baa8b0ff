"""desk: an AI assistant's identity and memory as a git repository of plain Markdown files.

The public Python API, for agent harnesses::

    import desk

    d = desk.open("~/my-desk")            # or desk.init(path) for a new desk: the same kind of object
    d.remember("report-style", "Reports in Chinese, under 500 characters.",
               type="preference", description="Report language and length", triggers=["report"])
    print(d.context(query="write the quarterly report").text())

Every CLI verb is a method of `Desk` (`desk X Y` is `Desk.x_y`); docs/api.md is the reference.
`__all__` is the one list of public names, each loaded from its module on first use (PEP 562).
"""

from __future__ import annotations

from importlib import import_module

# Not typing's: loading it would delay the console script's Ctrl-C handler (desk.cli.start).
TYPE_CHECKING = False
if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ loads each name on first use
    from typing import Any

    from desk.api import Desk, Progress, Time, clone, init, open, stopped_notice
    from desk.errors import (ConflictError, DeskError, Finding, GitError, InvalidFileError, NotADeskError,
                             RejectedError, UsageError)
    from desk.results import (Appended, ArchiveCheck, ArchivedEvent, AuditTrail, Checkpointed, Cloned,
                              ConflictCase, ConflictCases, Context, ConversationsRendered, Diagnosis,
                              Digested, EventList, Exported, HooksChange, Imported, ImportPlan, Initialized,
                              MemoryChange, MemoryDiff, MemoryList, Migrated, MistakeAdded, MistakeList,
                              NowChange, NowView, Outcome, PrefChanged, PrefList, PrefShown, Recalled,
                              Resolved, Restored, ShownMemory, Stats, Synced, Timeline, UserProfile,
                              Validation, Wrapped)
    from desk.api.revisions import MemoryRevisions, Revision, memory_revisions

__version__ = "0.1.0"

_API = ("open", "init", "clone", "Desk", "stopped_notice", "Time", "Progress")
_ERRORS = ("DeskError", "UsageError", "NotADeskError", "RejectedError", "ConflictError", "GitError",
           "InvalidFileError", "Finding")
_RESULTS = ("Outcome", "Wrapped",
            "Initialized", "MemoryChange", "Restored", "MemoryDiff", "ShownMemory", "MemoryList", "AuditTrail",
            "Validation", "HooksChange", "Diagnosis", "Recalled", "Context", "Stats",
            "Appended", "ArchivedEvent", "EventList", "Imported", "ArchiveCheck", "Checkpointed",
            "Digested", "ConflictCases", "ConflictCase", "Resolved", "Migrated",
            "NowView", "NowChange", "MistakeAdded", "MistakeList", "ConversationsRendered",
            "ImportPlan", "Exported", "Synced", "Cloned",
            "UserProfile", "PrefChanged", "PrefShown", "PrefList",
            "Timeline", "AgentSetupDone")
_REVISIONS = ("memory_revisions", "MemoryRevisions", "Revision")
_HOMES = {**dict.fromkeys(_API, "desk.api"), **dict.fromkeys(_ERRORS, "desk.errors"),
          **dict.fromkeys(_RESULTS, "desk.results"), **dict.fromkeys(_REVISIONS, "desk.api.revisions")}

__all__ = ["__version__", *_API, *_ERRORS, *_RESULTS, *_REVISIONS]


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'desk' has no attribute {name!r}")
    return getattr(import_module(home), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
