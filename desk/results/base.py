"""The base of every API result: `.to_json()` (the CLI's `--json`) and `.text()` (its human output)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from desk.text.direction import visible
from desk.text.plural import counted

__all__ = ["Outcome", "Wrapped", "commit_suffix", "counted", "preview"]


class _HasJson(Protocol):
    def to_json(self) -> Any: ...


T = TypeVar("T", bound=_HasJson)


class Outcome:
    """What every API method returns."""

    @property
    def exit_code(self) -> int:
        """The CLI's exit code for this result: 0, or 3 when a check found errors."""
        return 0

    def to_json(self) -> dict[str, Any]:
        """The CLI's `--json` object."""
        raise NotImplementedError

    def text(self) -> str:
        """The CLI's human output (for people; it may change between versions)."""
        raise NotImplementedError

    def warnings(self) -> list[str]:
        """Lines the CLI prints on stderr, whatever the output format."""
        return []


@dataclass(frozen=True)
class Wrapped(Outcome, Generic[T]):
    """A result that carries the operation's own typed result as `value`. A subclass adds no field
    and no `@dataclass` (it inherits the frozen dataclass's methods as they are)."""

    value: T

    def to_json(self) -> dict[str, Any]:
        return dict(self.value.to_json())


def commit_suffix(commit: object) -> str:
    return f" (commit {str(commit)[:7]})" if commit else ""


def preview(text: object, width: int = 60) -> str:
    """`text` on one line, cut at `width`, its direction controls shown as `<U+202E>`."""
    one = " ".join(str(text or "").split())
    return visible(one if len(one) <= width else one[:width - 1] + "…")

