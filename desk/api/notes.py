"""Desk's methods for working notes (now, mistakes) and interchange with other tools."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

from desk.api.base import DeskBase, Progress

if TYPE_CHECKING:
    from desk.results import Exported, ImportPlan, MistakeAdded, MistakeList, NowChange, NowView


class NoteMethods(DeskBase):
    """Working notes, mistakes, and interchange with other tools."""

    def now_show(self, *, section: str | None = None) -> NowView:
        """NOW.md (or one section: doing, blocked, next, reminders)."""
        from desk.formats.now import section_name
        from desk.notes.now import read_now
        from desk.results.working import NowView

        return NowView(read_now(self), section_name(section))

    def now_set(self, text: str, *, section: str | None = None, actor: str = "assistant") -> NowChange:
        """Replace one section of NOW.md (or the whole note) with `text`; one commit."""
        from desk.notes.now import set_now
        from desk.results.working import NowChange

        return NowChange(set_now(self, text, section=section, actor=actor))

    def now_append(self, text: str, *, section: str = "doing", actor: str = "assistant") -> NowChange:
        """Add `text` to a section of NOW.md (one line becomes a `- ` item); one commit."""
        from desk.notes.now import append_now
        from desk.results.working import NowChange

        return NowChange(append_now(self, text, section=section, actor=actor))

    def mistake_add(self, *, what: str, context: str, cause: str, avoid: str,
                    memory: str | None = None, actor: str = "assistant") -> MistakeAdded:
        """Add an entry to MISTAKES.md in one commit (linked to `memory`, when given); the same
        lesson again changes nothing."""
        from desk.notes.mistakes import add_mistake
        from desk.results.working import MistakeAdded

        if memory is not None:
            memory = self._name(memory)
        return MistakeAdded(add_mistake(self, what=what, context=context, cause=cause, avoid=avoid,
                                        memory=memory, actor=actor))

    def mistake_list(self) -> MistakeList:
        """The entries of MISTAKES.md."""
        from desk.notes.mistakes import list_mistakes
        from desk.results.working import MistakeList

        return MistakeList(list_mistakes(self))

    def import_(self, format: str, source: str | Path, *, dry_run: bool = False,
                progress: Progress | None = None, now: dt.datetime | None = None,
                project: str | None = None, user: str | None = None,
                max_bytes: int | None = None) -> ImportPlan:
        """`desk import FORMAT SOURCE` (docs/import-export.md): each memory through the write gate,
        conversation records into the archive, in one commit; `dry_run` returns the plan. A
        malformed or too large source raises UsageError (exit 2), with nothing written.
        """
        from desk.interchange.importing import import_source
        from desk.results.interchange import ImportPlan

        return ImportPlan(import_source(self, format, Path(source), dry_run=dry_run, progress=progress,
                                        now=now, project=project, user=user, max_bytes=max_bytes))

    def export(self, format: str, dest: str | Path) -> Exported:
        """`desk export FORMAT DEST`: the memories as claude-code, openclaw, markdown or jsonl files."""
        from desk.interchange.exporting import export_desk
        from desk.results.interchange import Exported

        return Exported(export_desk(self, format, Path(dest)))
