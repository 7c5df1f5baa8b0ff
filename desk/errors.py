"""The few error kinds desk raises, each with its exit code (docs/design.md §5) and a hint.

The library raises these; the CLI turns them into one message and an exit code in one place
(`desk.cli.main.DeskGroup.invoke`). Nothing else decides exit codes; the public API (`desk.api`)
raises them unchanged, exit code included.
"""

from __future__ import annotations

from typing import NamedTuple


def quoted(value: str, limit: int = 60) -> str:
    """`value` as an error shows it: repr'd, and cut at `limit` characters (a 120 KB argument was
    echoed whole onto the terminal, burying the message and its hint)."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}… ({len(value):,} characters)"


class DeskError(Exception):
    """An error a user can act on. `hint` says what to do next."""

    exit_code = 1
    status = "error"

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details: dict[str, object] = {}  # extra fields for the --json error object

    def to_json(self) -> dict[str, object]:
        return {"status": self.status, **self.details, "error": type(self).__name__,
                "message": self.message, "hint": self.hint}


class UsageError(DeskError):
    """A bad argument or option (exit 2)."""

    exit_code = 2


class NotADeskError(DeskError):
    """No desk where one was expected (exit 1)."""


class RejectedError(DeskError):
    """The gate or validation refused a change (exit 3). Nothing was changed."""

    exit_code = 3
    status = "rejected"


class ConflictError(DeskError):
    """Stale revision, a file with a person's uncommitted edits, or a lock timeout (exit 4)."""

    exit_code = 4
    status = "conflict"


class GitError(DeskError):
    """git itself failed; the message carries git's own words."""


class Finding(NamedTuple):
    """One problem in one file: `path:line: rule: message`.

    A NamedTuple: the gate's caches store a finding as its row of fields (`[*finding, condition]`,
    `Finding(*row)`). `column` (1-based) where the rule knows where in the line, else 0.
    """

    path: str
    line: int
    rule: str
    message: str
    severity: str = "error"
    column: int = 0

    def __str__(self) -> str:
        """`path:line: rule: message`; without `:line` when there is no line (line 0: a problem
        in an argument, or in the file as a whole), never a made-up `:0:`."""
        where = f"{self.path}:{self.line}" if self.line > 0 else self.path
        return f"{where}: {self.rule}: {self.message}"

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "column": self.column, "rule": self.rule,
                "message": self.message, "severity": self.severity}


class InvalidFileError(RejectedError):
    """A file failed validation; `findings` name each `path:line` and field."""

    def __init__(self, findings: list[Finding], hint: str | None = None) -> None:
        super().__init__("\n".join(str(f) for f in findings), hint)
        self.findings = findings

    def to_json(self) -> dict[str, object]:
        data = super().to_json()
        data["findings"] = [f.to_json() for f in self.findings]
        return data
