"""Results of the archive verbs (archive append/list/show/import/verify, checkpoint; fact add)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from desk.results.base import Outcome, Wrapped, counted, preview
from desk.text.direction import visible

if TYPE_CHECKING:
    from desk.archive.checkpoint import CheckpointResult
    from desk.archive.importing import ImportResult
    from desk.archive.store import ArchiveEvent
    from desk.archive.verify import VerifyReport
    from desk.errors import Finding


@dataclass(frozen=True)
class Appended(Outcome):
    """One archived record as written (`archive_append`, `fact_add`); `.id` is its event id."""

    record: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.record["id"])

    def to_json(self) -> dict[str, Any]:
        return dict(self.record)

    def text(self) -> str:
        return self.id


@dataclass(frozen=True)
class ArchivedEvent(Outcome):
    """One archived event and where it sits: desk-relative file and 1-based line."""

    record: dict[str, Any]
    path: str
    line: int

    @classmethod
    def of(cls, event: ArchiveEvent) -> ArchivedEvent:
        return cls(event.record, event.path, event.line)

    def to_json(self) -> dict[str, Any]:
        return {**self.record, "path": self.path, "line": self.line}

    def text(self) -> str:
        return (f"{self.path}:{self.line}\n"
                + json.dumps(self.record, ensure_ascii=False, indent=2, sort_keys=True))


@dataclass(frozen=True)
class EventList(Outcome):
    """Archived events in time order, and torn fragments skipped on the way."""

    events: list[ArchivedEvent]
    problems: list[Finding]

    def to_json(self) -> dict[str, Any]:
        return {"events": [e.to_json() for e in self.events],
                "problems": [p.to_json() for p in self.problems]}

    def text(self) -> str:
        lines = []
        for e in self.events:
            r = e.record
            shown = r.get("content") if r.get("content") is not None else (
                json.dumps(r["payload"], ensure_ascii=False) if r.get("payload") is not None else None)
            lines.append(f"{r['id']}  {r['at'][:19]}Z  {r['kind']:<10} {visible(r.get('session') or '-'):<12} "
                         f"{visible(r.get('actor') or '-'):<10} {preview(shown)}")
        lines += [f"warning: {p}" for p in self.problems]
        return "\n".join(lines) if lines else "no events"


class Imported(Wrapped["ImportResult"]):
    """How many events an import appended, and to which files."""

    def text(self) -> str:
        r = self.value
        done = f"imported {counted(r.imported, 'event')} into {counted(len(r.files), 'file')}"
        return done + (f"; {counted(r.skipped, 'event')} already archived, skipped" if r.skipped else "")


class ArchiveCheck(Wrapped["VerifyReport"]):
    """An intact archive's verification (a broken one raises InvalidFileError instead)."""

    def text(self) -> str:
        r = self.value
        return "\n".join([f"warning: {f}" for f in r.findings]
                         + [f"ok: {counted(r.files, 'file')}, {counted(r.lines, 'line')}, chains intact"])


class Checkpointed(Wrapped["CheckpointResult"]):
    """The commit of the archive's growth (status `unchanged` when there was none)."""

    def text(self) -> str:
        r = self.value
        done = ("nothing to checkpoint" if r.status == "unchanged" else
                f"committed {counted(r.events, 'event')} in {counted(len(r.files), 'file')} (commit {str(r.commit)[:7]})")
        return "\n".join([*(f"torn tail left for the next checkpoint: {p}" for p in r.skipped), done])
