"""Commands for the working desk: the archive, checkpoints, NOW.md, MISTAKES.md, conversations."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from desk.cli.output import emit, json_option, read_text_arg, invocation
from desk.vocabulary import ACTORS, NOW_SECTIONS



def _meta(pairs: tuple[str, ...]) -> dict[str, str]:
    from desk.errors import UsageError

    meta: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--meta {pair!r}: expected KEY=VALUE")
        meta[key] = value
    return meta


def _preview(text: object, width: int = 60) -> str:
    one = " ".join(str(text or "").split())
    return one if len(one) <= width else one[:width - 1] + "…"


# -- archive --------------------------------------------------------------------------------


@click.group("archive")
def archive_group() -> None:
    """The append-only JSONL archive of raw events (.system/archive/, one file per UTC day per clone).

    Appends are not committed one by one: `desk checkpoint` commits the archive's growth.
    """


@archive_group.command("append")
@click.argument("text", required=False)
@click.option("--kind", "-k", required=True,
              help="What happened: inbound, outbound, routine, approval, user_input, failure, progress, tool, …")
@click.option("--session", "-s", help="The conversation or run this event belongs to.")
@click.option("--actor", "-a", help="Who produced it (a person, the assistant, a tool).")
@click.option("--at", "at", metavar="TIME",
              help="When it happened (ISO 8601 with Z or an offset; default now). Goes to that UTC day's file.")
@click.option("--meta", "-m", "meta", multiple=True, metavar="KEY=VALUE",
              help="A string label on the event (repeatable).")
@click.option("--payload", metavar="JSON", help="Structured data: a JSON object.")
@click.option("--no-redact", is_flag=True, help="Keep known secret patterns instead of [REDACTED:kind].")
@json_option
def archive_append_command(text: str | None, kind: str, session: str | None, actor: str | None,
                           at: str | None, meta: tuple[str, ...], payload: str | None,
                           no_redact: bool) -> None:
    """Append one event; TEXT is its content (`-` reads stdin). Prints the new event id."""
    from desk.archive.store import append_event
    from desk.errors import UsageError

    content = read_text_arg(text, None, "event text") if text is not None else None
    data = None
    if payload is not None:
        try:
            data = json.loads(payload)
        except ValueError as exc:
            raise UsageError(f"--payload: not valid JSON ({exc})") from None
    if content is None and data is None:
        raise UsageError("give the event's TEXT (or `-` for stdin), or --payload JSON")
    record = append_event(invocation().desk(), kind, content, payload=data, session=session, actor=actor,
                          at=at, meta=_meta(meta), redact=not no_redact)
    emit(record, record["id"])


@archive_group.command("import")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--no-redact", is_flag=True, help="Keep known secret patterns instead of [REDACTED:kind].")
@click.option("--progress/--no-progress", default=None,
              help="Show a progress bar (default: when stderr is a terminal).")
@json_option
def archive_import_command(file: Path, no_redact: bool, progress: bool | None) -> None:
    """Append every event of FILE.jsonl (one JSON object a line) under one lock, batched fsync.

    Each line needs `kind`; `at` (kept: the event lands in the file of its UTC day), `content`,
    `payload`, `session`, `actor` and `meta` are optional. An `id` from another archive is kept
    as meta `desk.source_id`. The whole file is checked first: a bad line changes nothing.
    """
    from desk.archive.importing import import_events

    show = sys.stderr.isatty() and not invocation().json if progress is None else progress
    bar: Any = None

    def tick(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = click.progressbar(length=total, label="importing", file=sys.stderr)
            bar.__enter__()
        bar.update(done - bar.pos)

    try:
        result = import_events(invocation().desk(), file, redact=not no_redact,
                               progress=tick if show else None)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    emit(result.to_json(), f"imported {result.imported} events into {len(result.files)} file(s)")


def _event_json(event: Any) -> dict[str, Any]:
    return {**event.record, "path": event.path, "line": event.line}


@archive_group.command("list")
@click.option("--since", metavar="TIME", help="Only events at or after this time (ISO 8601 or a date).")
@click.option("--until", metavar="TIME", help="Only events before this time.")
@click.option("--kind", "-k", "kinds", multiple=True, help="Only events of this kind (repeatable).")
@click.option("--session", "-s", help="Only events of this session.")
@click.option("--limit", "-n", type=click.IntRange(min=1), help="Show only the last N matching events.")
@json_option
def archive_list_command(since: str | None, until: str | None, kinds: tuple[str, ...],
                         session: str | None, limit: int | None) -> None:
    """List archived events in time order: id, time, kind, session, actor and a preview."""
    from collections import deque

    from desk.archive.store import iter_events
    from desk.errors import Finding

    problems: list[Finding] = []
    events = iter_events(invocation().desk(), since=since, until=until, kinds=kinds or None,
                         session=session, problems=problems)
    shown = list(deque(events, maxlen=limit)) if limit else list(events)
    data = {"events": [_event_json(e) for e in shown],
            "problems": [p.to_json() for p in problems]}

    def human() -> str:
        lines = [f"{e.record['id']}  {e.record['at'][:19]}Z  {e.record['kind']:<10} "
                 f"{e.record.get('session') or '-':<12} {e.record.get('actor') or '-':<10} "
                 f"{_preview(e.record.get('content') if e.record.get('content') is not None else e.record.get('payload'))}"
                 for e in shown]
        lines += [f"warning: {p}" for p in problems]
        return "\n".join(lines) if lines else "no events"

    emit(data, human)


@archive_group.command("show")
@click.argument("event_id", metavar="ID")
@json_option
def archive_show_command(event_id: str) -> None:
    """Print the archived event ID (its file and line too)."""
    from desk.archive.store import find_event

    event = find_event(invocation().desk(), event_id)
    data = _event_json(event)
    emit(data, lambda: f"{event.path}:{event.line}\n"
         + json.dumps(event.record, ensure_ascii=False, indent=2, sort_keys=True))


@archive_group.command("verify")
@json_option
def archive_verify_command() -> None:
    """Check every record, the hash chains and committed history; name each broken record.

    Exit 3 when a record was altered, removed or damaged; a torn tail from a crash is a warning.
    """
    from desk.archive.verify import verify_archive
    from desk.errors import InvalidFileError

    report = verify_archive(invocation().desk())
    if not report.ok:
        exc = InvalidFileError([f for f in report.findings if f.severity == "error"],
                               hint="the archive is append-only evidence: restore the file from git "
                                    "(`git restore -- PATH`) or a backup")
        exc.details = {"files": report.files, "lines": report.lines,
                       "warnings": [f.to_json() for f in report.findings if f.severity != "error"]}
        raise exc
    emit(report.to_json(), lambda: "\n".join(
        [f"warning: {f}" for f in report.findings]
        + [f"ok: {report.files} file(s), {report.lines} line(s), chains intact"]))


# -- checkpoint -----------------------------------------------------------------------------


@click.command("checkpoint")
@click.option("--actor", type=click.Choice(ACTORS), default="assistant", show_default=True,
              help="Who is making the commit (the Desk-Actor trailer).")
@json_option
def checkpoint_command(actor: str) -> None:
    """Commit the archive's growth in one commit (trailers carry each file's head hash)."""
    from desk.archive.checkpoint import checkpoint

    result = checkpoint(invocation().desk(), actor=actor)

    def human() -> str:
        lines = [f"torn tail left for the next checkpoint: {p}" for p in result.skipped]
        if result.status == "unchanged":
            lines.append("nothing to checkpoint")
        else:
            lines.append(f"committed {result.events} event(s) in {len(result.files)} file(s) "
                         f"(commit {str(result.commit)[:7]})")
        return "\n".join(lines)

    emit(result.to_json(), human)


# -- NOW.md ---------------------------------------------------------------------------------


@click.group("now")
def now_group() -> None:
    """NOW.md, the assistant's hot working note: Doing, Blocked, Next, Reminders."""


@now_group.command("show")
@click.option("--section", type=click.Choice(NOW_SECTIONS), help="Print only this section.")
@json_option
def now_show_command(section: str | None) -> None:
    """Print NOW.md (or one section)."""
    from desk.notes.now import read_now

    note = read_now(invocation().desk())
    data = note.to_json()
    emit(data if section is None else {"section": section, "text": note.body(section)},
         (note.body(section) if section else note.render().rstrip("\n")))


_actor_option = click.option("--actor", type=click.Choice(ACTORS), default="assistant", show_default=True,
                             help="Who is making the change (the Desk-Actor trailer).")


@now_group.command("set")
@click.argument("text")
@click.option("--section", type=click.Choice(NOW_SECTIONS),
              help="Replace only this section ('' clears it); without it TEXT replaces the whole note.")
@_actor_option
@json_option
def now_set_command(text: str, section: str | None, actor: str) -> None:
    """Replace a section of NOW.md, or the whole note, with TEXT (`-` reads stdin). One commit."""
    from desk.notes.now import set_now

    body = read_text_arg(text, None, "text")
    result = set_now(invocation().desk(), body, section=section, actor=actor)
    emit(result.to_json(), _status_line(result.to_json()))


@now_group.command("append")
@click.argument("text")
@click.option("--section", type=click.Choice(NOW_SECTIONS), default="doing", show_default=True,
              help="The section to add to.")
@_actor_option
@json_option
def now_append_command(text: str, section: str, actor: str) -> None:
    """Add TEXT to a section of NOW.md (one line becomes a `- ` item; `-` reads stdin). One commit."""
    from desk.notes.now import append_now

    body = read_text_arg(text, None, "text")
    result = append_now(invocation().desk(), body, section=section, actor=actor)
    emit(result.to_json(), _status_line(result.to_json()))


def _status_line(data: dict[str, Any]) -> str:
    commit = f" (commit {str(data['commit'])[:7]})" if data.get("commit") else ""
    section = f" [{data['section']}]" if data.get("section") else ""
    return f"{data['status']}: {data['path']}{section}{commit}"


# -- MISTAKES.md ----------------------------------------------------------------------------


@click.group("mistake")
def mistake_group() -> None:
    """MISTAKES.md, the error book of high-value, reusable lessons."""


@mistake_group.command("add")
@click.option("--what", required=True, help="What went wrong.")
@click.option("--context", required=True, help="The situation it happened in.")
@click.option("--cause", required=True, help="Why it happened.")
@click.option("--avoid", required=True, help="How to avoid it next time.")
@click.option("--memory", metavar="NAME", help="The memory that fixes the behaviour (memory/NAME.md).")
@_actor_option
@json_option
def mistake_add_command(what: str, context: str, cause: str, avoid: str, memory: str | None,
                        actor: str) -> None:
    """Add an entry (id and UTC date) to MISTAKES.md in one commit; the same lesson again changes nothing."""
    from desk.notes.mistakes import add_mistake

    result = add_mistake(invocation().desk(), what=what, context=context, cause=cause, avoid=avoid,
                         memory=memory, actor=actor)
    data = result.to_json()
    commit = f" (commit {str(result.commit)[:7]})" if result.commit else ""
    emit(data, f"{result.status}: {result.mistake.id} in MISTAKES.md{commit}")


@mistake_group.command("list")
@json_option
def mistake_list_command() -> None:
    """List the entries of MISTAKES.md: id, date, what and how to avoid it."""
    from desk.notes.mistakes import list_mistakes

    entries = list_mistakes(invocation().desk())

    def human() -> str:
        if not entries:
            return "no mistakes recorded"
        return "\n".join(f"{e.id}  {e.date or '-'}  {e.what}\n    avoid: {e.avoid}"
                         + (f"\n    memory: {e.memory}" if e.memory else "") for e in entries)

    emit({"mistakes": [e.to_json() for e in entries]}, human)


# -- conversations --------------------------------------------------------------------------


@click.group("conversations")
def conversations_group() -> None:
    """Readable views of archived conversations under conversations/ (never the source of truth)."""


@conversations_group.command("render")
@click.option("--date", metavar="DAY", help="Only this UTC day (YYYY-MM-DD; default: every day).")
@click.option("--session", "-s", help="Only this session.")
@_actor_option
@json_option
def conversations_render_command(date: str | None, session: str | None, actor: str) -> None:
    """Regenerate conversations/DAY/SESSION.md from inbound/outbound events; one commit when changed."""
    from desk.archive.conversations import render_conversations

    result = render_conversations(invocation().desk(), date=date, session=session, actor=actor)
    emit(result.to_json(), (f"rendered {result.views} view(s), {len(result.files)} changed"
                            + (f" (commit {str(result.commit)[:7]})" if result.commit else "")))


COMMANDS = [archive_group, checkpoint_command, now_group, mistake_group, conversations_group]
