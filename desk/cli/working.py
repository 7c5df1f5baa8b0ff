"""Commands for the working desk: the archive, checkpoints, NOW.md, MISTAKES.md, conversations."""

from __future__ import annotations

import json
from pathlib import Path

import click

from desk.cli.output import SuggestingGroup, actor_option, invocation, json_option, read_text_arg, render
from desk.vocabulary import NOW_SECTIONS


def _meta(pairs: tuple[str, ...]) -> dict[str, str]:
    from desk.errors import UsageError

    meta: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--meta {pair!r}: expected KEY=VALUE")
        meta[key] = value
    return meta


_NO_REDACT = click.option("--no-redact", is_flag=True, help="Keep known secret patterns instead of [REDACTED:kind] "
                          "(only those secrets.allow in .system/desk.json names; another is refused, exit 3).")


# -- archive --------------------------------------------------------------------------------


@click.group("archive", cls=SuggestingGroup)
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
              help="When it happened (ISO 8601 with Z or an offset; default now); at most 24 hours ahead of "
                   "now. Goes to that UTC day's file.")
@click.option("--meta", "-m", "meta", multiple=True, metavar="KEY=VALUE",
              help="A string label on the event (repeatable).")
@click.option("--payload", metavar="JSON", help="Structured data: a JSON object.")
@_NO_REDACT
@json_option
def archive_append_command(text: str | None, kind: str, session: str | None, actor: str | None,
                           at: str | None, meta: tuple[str, ...], payload: str | None,
                           no_redact: bool) -> None:
    """Append one event; TEXT is its content (`-` reads stdin). Prints the new event id."""
    from desk.errors import UsageError

    content = read_text_arg(text, None, "event text") if text is not None else None
    data = None
    if payload is not None:
        try:
            data = json.loads(payload)
        except ValueError as exc:
            raise UsageError(f"--payload: not valid JSON ({exc})") from None
        except RecursionError:
            raise UsageError("--payload: JSON nested too deeply",
                             hint="archive payloads nest at most 64 levels; flatten it") from None
    render(invocation().desk().archive_append(kind, content, payload=data, session=session, actor=actor,
                                              at=at, meta=_meta(meta), redact=not no_redact))


@archive_group.command("import")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@_NO_REDACT
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Print a progress line to stderr every few seconds while it runs.")
@json_option
def archive_import_command(file: Path, no_redact: bool, progress: bool) -> None:
    """Append every event of FILE.jsonl (one JSON object a line) under one lock, batched fsync.

    Each line needs `kind`; `at` (kept: the event lands in the file of its UTC day), `content`,
    `payload`, `session`, `actor` and `meta` are optional. An `id` from another archive is kept
    as meta `desk.source_id`. The whole file is checked first: a bad line (an `at` more than 24
    hours after now is one) changes nothing.
    """
    from desk.cli.progress import stderr_progress

    with stderr_progress(f"importing {file.name}", unit="events", enabled=progress) as lines:
        result = invocation().desk().archive_import(file, redact=not no_redact, progress=lines)
    render(result)



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
    render(invocation().desk().archive_list(since=since, until=until, kinds=kinds or None,
                                            session=session, limit=limit))


@archive_group.command("show")
@click.argument("event_id", metavar="ID")
@json_option
def archive_show_command(event_id: str) -> None:
    """Print the archived event ID (its file and line too)."""
    render(invocation().desk().archive_show(event_id))


@archive_group.command("verify")
@json_option
def archive_verify_command() -> None:
    """Check every record, the hash chains and committed history; name each broken record.

    Exit 3 when a record was altered, removed or damaged; a torn tail from a crash is a warning.
    """
    render(invocation().desk().archive_verify())


# -- checkpoint -----------------------------------------------------------------------------


@click.command("checkpoint")
@actor_option
@json_option
def checkpoint_command(actor: str) -> None:
    """Commit the archive's growth in one commit (trailers carry each file's head hash)."""
    from desk.cli.progress import stderr_progress

    with stderr_progress("checkpoint", unit="files") as lines:
        result = invocation().desk().checkpoint(actor=actor, progress=lines)
    render(result)


# -- NOW.md ---------------------------------------------------------------------------------


@click.group("now", cls=SuggestingGroup)
def now_group() -> None:
    """NOW.md, the assistant's hot working note: Doing, Blocked, Next, Reminders."""


@now_group.command("show")
@click.option("--section", type=click.Choice(NOW_SECTIONS), help="Print only this section.")
@json_option
def now_show_command(section: str | None) -> None:
    """Print NOW.md (or one section)."""
    render(invocation().desk().now_show(section=section))


@now_group.command("set")
@click.argument("text")
@click.option("--section", type=click.Choice(NOW_SECTIONS),
              help="Replace only this section ('' clears it); without it TEXT replaces the whole note.")
@actor_option
@json_option
def now_set_command(text: str, section: str | None, actor: str) -> None:
    """Replace a section of NOW.md, or the whole note, with TEXT (`-` reads stdin). One commit."""
    body = read_text_arg(text, None, "text")
    render(invocation().desk().now_set(body, section=section, actor=actor))


@now_group.command("append")
@click.argument("text")
@click.option("--section", type=click.Choice(NOW_SECTIONS), default="doing", show_default=True,
              help="The section to add to.")
@actor_option
@json_option
def now_append_command(text: str, section: str, actor: str) -> None:
    """Add TEXT to a section of NOW.md (one line becomes a `- ` item; `-` reads stdin). One commit."""
    body = read_text_arg(text, None, "text")
    render(invocation().desk().now_append(body, section=section, actor=actor))



# -- MISTAKES.md ----------------------------------------------------------------------------


@click.group("mistake", cls=SuggestingGroup)
def mistake_group() -> None:
    """MISTAKES.md, the error book of high-value, reusable lessons."""


@mistake_group.command("add")
@click.option("--what", required=True, help="What went wrong.")
@click.option("--context", required=True, help="The situation it happened in.")
@click.option("--cause", required=True, help="Why it happened.")
@click.option("--avoid", required=True, help="How to avoid it next time.")
@click.option("--memory", metavar="NAME", help="The memory that fixes the behaviour: NAME, NAME.md or memory/NAME.md.")
@actor_option
@json_option
def mistake_add_command(what: str, context: str, cause: str, avoid: str, memory: str | None,
                        actor: str) -> None:
    """Add an entry (id and UTC date) to MISTAKES.md in one commit; the same lesson again changes nothing."""
    render(invocation().desk().mistake_add(what=what, context=context, cause=cause, avoid=avoid,
                                           memory=memory, actor=actor))


@mistake_group.command("list")
@json_option
def mistake_list_command() -> None:
    """List the entries of MISTAKES.md: id, date, what and how to avoid it."""
    render(invocation().desk().mistake_list())


# -- conversations --------------------------------------------------------------------------


@click.group("conversations", cls=SuggestingGroup)
def conversations_group() -> None:
    """Readable views of archived conversations under conversations/ (never the source of truth)."""


@conversations_group.command("render")
@click.option("--date", metavar="DAY", help="Only this UTC day (YYYY-MM-DD; default: every day).")
@click.option("--session", "-s", help="Only this session.")
@actor_option
@json_option
def conversations_render_command(date: str | None, session: str | None, actor: str) -> None:
    """Regenerate conversations/DAY/SESSION.md from inbound/outbound events; one commit when changed."""
    render(invocation().desk().conversations_render(date=date, session=session, actor=actor))


COMMANDS = [archive_group, checkpoint_command, now_group, mistake_group, conversations_group]
