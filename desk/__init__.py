"""desk: an AI assistant's identity and memory as a git repository of plain Markdown files.

The public Python API, for agent harnesses::

    import desk

    d = desk.open("~/my-desk")            # or desk.init(path) for a new desk: the same kind of object
    d.remember("report-style", "Reports in Chinese, under 500 characters.",
               type="preference", description="Report language and length", triggers=["report"])
    print(d.context(query="write the report").text())

Every CLI verb is a method of `Desk` (`desk X Y` is `Desk.x_y`); results have `.to_json()`,
exactly the CLI's `--json`, and `.text()`; errors are `DeskError`s carrying the CLI's exit code.
docs/api.md is the reference. Names are loaded on first use, so `import desk` (and `desk --help`)
stays light.
"""

from __future__ import annotations

from importlib import import_module

# Not typing's: the console script's Ctrl-C handler (desk.cli.start) is installed once this
# package is loaded, and `typing` would keep that window open longer; type checkers read any
# TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ loads each name on first use
    from typing import Any

    from desk.api import Desk, init, open
    from desk.errors import (ConflictError, DeskError, Finding, GitError, InvalidFileError, NotADeskError,
                             RejectedError, UsageError)
    from desk.results import (Appended, ArchiveCheck, ArchivedEvent, AuditTrail, Checkpointed, ConflictCases,
                              Context, ConversationsRendered, Diagnosis, Digested, EventList, HooksChange,
                              Imported, Initialized, MemoryChange, MemoryList, MistakeAdded, MistakeList,
                              NowChange, NowView, Outcome, Recalled, ShownMemory, Stats, Validation, Wrapped)

__version__ = "0.1.0"

_ERRORS = ("DeskError", "UsageError", "NotADeskError", "RejectedError", "ConflictError", "GitError",
           "InvalidFileError", "Finding")
_RESULTS = ("Outcome", "Wrapped", "Initialized", "MemoryChange", "ShownMemory", "MemoryList",
            "AuditTrail", "Validation", "HooksChange", "Diagnosis", "Recalled", "Context", "Stats",
            "Appended", "ArchivedEvent", "EventList", "Imported", "ArchiveCheck", "Checkpointed",
            "Digested", "ConflictCases", "NowView", "NowChange", "MistakeAdded", "MistakeList",
            "ConversationsRendered")
_HOMES = {"open": "desk.api", "init": "desk.api", "Desk": "desk.api",
          **{name: "desk.errors" for name in _ERRORS}, **{name: "desk.results" for name in _RESULTS}}

__all__ = ["__version__", "open", "init", "Desk", *_ERRORS, *_RESULTS]


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'desk' has no attribute {name!r}")
    return getattr(import_module(home), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
