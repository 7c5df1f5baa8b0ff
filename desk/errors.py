"""The few error kinds desk raises, each with its exit code (docs/design.md §5) and a hint."""

from __future__ import annotations

from typing import NamedTuple


def quoted(value: str, limit: int = 60) -> str:
    """`value` as an error shows it: repr'd, and cut at `limit` characters."""
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
    """One problem in one file: `path:line: rule: message`; `column` 1-based, else 0. A NamedTuple:
    the gate's caches store a finding as its row of fields."""

    path: str
    line: int
    rule: str
    message: str
    severity: str = "error"
    column: int = 0

    def __str__(self) -> str:
        """`path:line: rule: message`; without `:line` for line 0 (the file as a whole)."""
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
