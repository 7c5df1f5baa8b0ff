"""Desk's methods for facts, the digest, conflicts and the archive."""

from __future__ import annotations

import builtins
import datetime as dt
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desk.api.base import DeskBase, Progress, Time, words
from desk.errors import UsageError

if TYPE_CHECKING:
    from desk.results import (Appended, ArchiveCheck, ArchivedEvent, Checkpointed, ConflictCase,
                              ConflictCases, ConversationsRendered, Digested, EventList, Imported, Resolved)


class HistoryMethods(DeskBase):
    """Facts, the digest, conflicts and the archive."""

    def fact_add(self, text: str, *, kind: str, importance: int = 3, key: str | None = None,
                 session: str | None = None, actor: str | None = None, at: str | None = None,
                 redact: bool = True, project: str | None = None, valid_from: str | None = None,
                 valid_to: str | None = None) -> Appended:
        """Validate a fact and append it to the archive (kind `fact`); not committed on its own.
        RejectedError (exit 3) for an invalid fact, with nothing written."""
        from desk.digest.facts import add_fact
        from desk.results.archive import Appended

        return Appended(add_fact(self, text, kind=kind, importance=importance, key=key,
                                 session=session, actor=actor, at=at, redact=redact, project=project,
                                 valid_from=valid_from, valid_to=valid_to))

    def digest(self, *, date: str | dt.date | None = None, as_of: Time | None = None,
               summarizer: str | None = None, project: str | None = None) -> Digested:
        """Write journal/D.md and distil old facts into memories: one commit, none when unchanged
        (with `project`, that project's facts into its own memory folder, no journal)."""
        from desk.digest.run import digest
        from desk.results.working import Digested

        return Digested(digest(self, date=date, as_of=as_of, summarizer=summarizer, project=project))

    def conflicts_list(self, *, include_closed: bool = False) -> ConflictCases:
        """The conflict review queue: open cases (all cases with `include_closed`). Read-only."""
        from desk.digest.conflicts import open_cases
        from desk.results.working import ConflictCases

        cases = self._cases()
        return ConflictCases(cases if include_closed else open_cases(cases), include_closed)

    conflicts = conflicts_list  # `desk conflicts` without a subcommand

    def conflicts_show(self, case: str) -> ConflictCase:
        """One case (any status) in full, with its evidence's archived text (desk.digest.review)."""
        from desk.archive.store import iter_events
        from desk.digest.review import review
        from desk.errors import DeskError
        from desk.results.working import ConflictCase

        found = next((c for c in self._cases() if c["id"] == case), None)
        if found is None:
            raise DeskError(f"no conflict case {case}", hint="list them with `desk conflicts --all`")
        wanted = {e for c in found["candidates"] for e in c["evidence"]}
        evidence: dict[str, dict[str, Any] | None] = dict.fromkeys(wanted)
        for event in iter_events(self, kinds=["fact"]):
            if event.record.get("id") in wanted:
                evidence[event.record["id"]] = {k: event.record.get(k) for k in ("at", "content", "session")}
        return ConflictCase(review(self, found, evidence), evidence)

    def _cases(self) -> builtins.list[dict[str, Any]]:
        """The queue's cases; a broken queue's hint names the last commit where it was good."""
        from desk.errors import InvalidFileError
        from desk.layout import CONFLICTS_FILE
        from desk.formats.queue import parse_queue
        from desk.gate.checks import last_good_hint

        try:
            return parse_queue(self.read_if_present(CONFLICTS_FILE))
        except InvalidFileError as exc:
            exc.hint = last_good_hint(self, CONFLICTS_FILE)
            raise

    def resolve(self, case: str, candidate: str, *, expected_revision: int, event_id: str, actor: str,
                rationale: str, now: Time | None = None) -> Resolved:
        """A person's decision on conflict case `case`: `candidate` becomes (or stays) the domain's
        value, in one commit. ConflictError (exit 4) when the case moved since; the same call again
        returns status `unchanged`."""
        from desk.digest.resolve import resolve
        from desk.results.working import Resolved

        return Resolved(resolve(self, case, candidate, expected_revision=expected_revision,
                                event_id=event_id, actor=actor, rationale=rationale, now=now))

    def archive_append(self, kind: str, content: str | None = None, *,
                       payload: dict[str, Any] | None = None, session: str | None = None,
                       actor: str | None = None, at: Time | None = None,
                       meta: Mapping[str, str] | None = None, redact: bool = True) -> Appended:
        """Append one event (content and/or a JSON-object payload) to its UTC day's archive file
        (not committed: `checkpoint` commits the archive's growth)."""
        from desk.archive.store import append_event
        from desk.results.archive import Appended

        if content is None and payload is None:
            raise UsageError("give the event's TEXT (or `-` for stdin), or --payload JSON")
        return Appended(append_event(self, kind, content, payload=payload, session=session,
                                     actor=actor, at=at, meta=dict(meta or {}), redact=redact))

    def archive_import(self, path: str | Path, *, redact: bool = True,
                       progress: Progress | None = None) -> Imported:
        """Append every event of a JSONL file under one lock; a bad line changes nothing."""
        from desk.archive.importing import import_events
        from desk.results.archive import Imported

        return Imported(import_events(self, Path(path), redact=redact, progress=progress))

    def archive_list(self, *, since: Time | None = None, until: Time | None = None,
                     kinds: Iterable[str] | None = None, session: str | None = None,
                     limit: int | None = None) -> EventList:
        """Archived events with since <= at < until, in time order; `limit` keeps the last N."""
        from collections import deque
        from desk.results.archive import ArchivedEvent, EventList

        from desk.archive.store import iter_events
        from desk.errors import Finding

        problems: list[Finding] = []
        events = iter_events(self, since=since, until=until, kinds=words(kinds, "kinds") or None,
                             session=session, problems=problems)
        shown = list(deque(events, maxlen=limit)) if limit else list(events)
        return EventList([ArchivedEvent.of(e) for e in shown], problems)

    def archive_show(self, event_id: str) -> ArchivedEvent:
        """The archived event `event_id`, with its file and line."""
        from desk.archive.store import find_event
        from desk.results.archive import ArchivedEvent

        return ArchivedEvent.of(find_event(self, event_id))

    def archive_verify(self) -> ArchiveCheck:
        """Check every record, the hash chains and committed history (InvalidFileError: a broken record)."""
        from desk.archive.verify import verify_archive
        from desk.errors import InvalidFileError
        from desk.results.archive import ArchiveCheck

        report = verify_archive(self)
        if not report.ok:
            exc = InvalidFileError([f for f in report.findings if f.severity == "error"],
                                   hint="the archive is append-only evidence: restore the file from git "
                                        "(`git restore -- PATH`) or a backup")
            exc.details = {"files": report.files, "lines": report.lines,
                           "warnings": [f.to_json() for f in report.findings if f.severity != "error"]}
            raise exc
        return ArchiveCheck(report)

    def checkpoint(self, *, actor: str = "assistant", progress: Progress | None = None) -> Checkpointed:
        """Commit the archive's growth in one commit (status `unchanged` when there is none)."""
        from desk.archive.checkpoint import checkpoint
        from desk.results.archive import Checkpointed

        return Checkpointed(checkpoint(self, actor=actor, progress=progress))

    def conversations_render(self, *, date: str | None = None, session: str | None = None,
                             actor: str = "assistant") -> ConversationsRendered:
        """Regenerate conversations/DAY/SESSION.md from the archive; one commit when changed."""
        from desk.archive.conversations import render_conversations
        from desk.results.working import ConversationsRendered

        return ConversationsRendered(render_conversations(self, date=date, session=session, actor=actor))
