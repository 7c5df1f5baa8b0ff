"""desk: an AI assistant's identity and memory as a git repository of plain Markdown files.

The public Python API, for agent harnesses::

    import desk

    d = desk.open("~/my-desk")            # or desk.init(path) for a new desk: the same kind of object
    d.remember("report-style", "Reports in Chinese, under 500 characters.",
               type="preference", description="Report language and length", triggers=["report"])
    print(d.context(query="write the quarterly report").text())

Every CLI verb is a method of `Desk` (`desk X Y` is `Desk.x_y`); results have `.to_json()`,
exactly the CLI's `--json`, and `.text()`; errors are `DeskError`s carrying the CLI's exit code.
docs/api.md is the reference. `__all__` below is the one list of public names: each imports from
`desk` (`from desk import Synced`), and tests/test_public_api.py checks that every name
docs/api.md shows is in it. Names are loaded from their modules on first use (PEP 562), so
`import desk` (and `desk --help`) stays light.
"""

from __future__ import annotations

from importlib import import_module

# Not typing's: the console script's Ctrl-C handler (desk.cli.start) is installed once this
# package is loaded, and `typing` would keep that window open longer; type checkers read any
# TYPE_CHECKING as true.
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
                              Resolved, ShownMemory, Stats, Synced, UserProfile, Validation, Wrapped)
    from desk.results import Restored
    from desk.results import Timeline
    from desk.api.revisions import MemoryRevisions, Revision, memory_revisions

__version__ = "0.1.0"

# Opening a desk, and the two type aliases the methods' signatures use
_API = ("open", "init", "clone", "Desk", "stopped_notice", "Time", "Progress")
# What a failure raises (docs/api.md "Errors")
_ERRORS = ("DeskError", "UsageError", "NotADeskError", "RejectedError", "ConflictError", "GitError",
           "InvalidFileError", "Finding")
# What the methods return (docs/api.md "Results"); desk.results._HOMES says which module holds each
_RESULTS = ("Outcome", "Wrapped",
            "Initialized", "MemoryChange", "Restored", "MemoryDiff", "ShownMemory", "MemoryList", "AuditTrail",
            "Validation", "HooksChange", "Diagnosis", "Recalled", "Context", "Stats",
            "Appended", "ArchivedEvent", "EventList", "Imported", "ArchiveCheck", "Checkpointed",
            "Digested", "ConflictCases", "ConflictCase", "Resolved", "Migrated",
            "NowView", "NowChange", "MistakeAdded", "MistakeList", "ConversationsRendered",
            "ImportPlan", "Exported", "Synced", "Cloned",
            "UserProfile", "PrefChanged", "PrefShown", "PrefList",
            "Timeline", "AgentSetupDone")
# A memory's history with each commit's diff (docs/api.md "Reading"), beside `Desk.history`
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
