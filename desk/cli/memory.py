"""Commands for the desk itself and its single-fact memories."""

from __future__ import annotations

from pathlib import Path

import click

from desk.cli.output import (F, actor_option, complete_memory_names, invocation, json_option, project_option,
                             read_text_arg, render)
from desk.vocabulary import ACTORS, MEMORY_SCOPES, MEMORY_SOURCES, MEMORY_TYPES


@click.command("init")
@click.argument("path", type=click.Path(path_type=Path), default=".")
@click.option("--allow-nonempty", is_flag=True,
              help="Add a desk to a folder that already holds files (they are kept as they are).")
@click.option("--allow-nested", is_flag=True,
              help="Create the desk's own repository inside another repository's work tree.")
@json_option
def init_command(path: Path, allow_nonempty: bool, allow_nested: bool) -> None:
    """Scaffold a desk at PATH (default: the current folder) and make its first commit.

    Lays down AGENTS.md, SOUL.md, USER.md, NOW.md, MEMORY.md, MISTAKES.md, memory/, journal/,
    conversations/ and .system/. Running it again on a desk changes nothing.
    """
    from desk import api

    result = api.init(path, allow_nonempty=allow_nonempty, allow_nested=allow_nested).initialized
    assert result is not None  # init always says what it did
    render(result)


def _field_options(func: F) -> F:
    """The field options remember and set share, then those that empty a field (on an update, a
    field that is not given keeps its value)."""
    for flag, what in (("--no-expires", "expiry"), ("--no-importance", "importance"),
                       ("--no-triggers", "triggers")):
        func = click.option(flag, flag[2:].replace("-", "_"), is_flag=True,
                            help=f"Remove the memory's {what}.")(func)
    for option in reversed([
            click.option("--importance", type=click.IntRange(1, 5), help="1 (minor) to 5 (critical)."),
            click.option("--expires", metavar="TIME", help="UTC time (ISO 8601) after which it is no longer injected."),
            click.option("--valid-from", metavar="TIME", help="UTC time (ISO 8601) since which the fact is true."),
            click.option("--valid-to", metavar="TIME", help="UTC time (ISO 8601) since which the fact is no longer "
                         "true (kept, shown as such).")]):
        func = option(func)
    return func


def _cleared(**flags: bool) -> list[str]:
    return [name.removeprefix("no_") for name, on in flags.items() if on]


_AS_OF = click.option("--as-of", metavar="TIME",
                      help="Read the desk as committed at the last commit at or before this UTC time (docs/time.md).")


@click.command("remember")
@click.argument("name", shell_complete=complete_memory_names)
@click.argument("body", required=False)
@click.option("--type", "type_", type=click.Choice(MEMORY_TYPES),
              help="What kind of fact (required for a new memory).")
@click.option("--description", "-d", help="One line (≤150 characters) for the index (required for a new memory).")
@click.option("--trigger", "-t", "triggers", multiple=True,
              help="A word or phrase whose mention in a query recalls this memory (repeatable; "
                   "replaces the list on an update).")
@_field_options
@click.option("--source", type=click.Choice(MEMORY_SOURCES),
              help="Where the fact came from (default: user for --actor user, else agent).")
@click.option("--source-event", metavar="ID", help="The archive event id this came from (set by the harness).")
@actor_option
@click.option("--scope", type=click.Choice(MEMORY_SCOPES), default="durable", show_default=True,
              help="session-only facts are refused: they belong in NOW.md.")
@click.option("--body-file", type=click.Path(path_type=Path, dir_okay=False), help="Read the body from a file.")
@project_option
@json_option
def remember_command(name: str, body: str | None, type_: str | None, description: str | None,
                     triggers: tuple[str, ...], importance: int | None, expires: str | None,
                     source: str | None, source_event: str | None, actor: str, scope: str,
                     body_file: Path | None, valid_from: str | None, valid_to: str | None, **no: bool) -> None:
    """Create or update the memory NAME through the write gate (one commit).

    BODY is the fact itself; `-` reads it from stdin. Remembering an existing NAME updates it:
    options not given keep their values (`--no-triggers` and the like clear them); identical
    content changes nothing. NAME may be given as `x.md` or `memory/x.md`. Exit 3 when the
    gate rejects it, with nothing changed.
    """
    desk = invocation().desk()
    text = read_text_arg(body, body_file, "memory body")
    render(desk.remember(name, text, type=type_, description=description,
                         triggers=triggers or None, importance=importance, expires=expires,
                         source=source, source_event=source_event, actor=actor, scope=scope,
                         valid_from=valid_from, valid_to=valid_to, clear=_cleared(**no),
                         project=invocation().project))


@click.command("set")
@click.argument("name", shell_complete=complete_memory_names)
@click.option("--description", "-d", help="A new one-line description.")
@click.option("--type", "type_", type=click.Choice(MEMORY_TYPES), help="A new type.")
@click.option("--trigger", "-t", "triggers", multiple=True,
              help="Replace the triggers with these (repeatable).")
@click.option("--add-trigger", "add_triggers", multiple=True, metavar="WORD", help="Add a trigger (repeatable).")
@click.option("--remove-trigger", "remove_triggers", multiple=True, metavar="WORD",
              help="Remove a trigger (repeatable).")
@_field_options
@actor_option
@json_option
def set_command(name: str, description: str | None, type_: str | None, triggers: tuple[str, ...],
                add_triggers: tuple[str, ...], remove_triggers: tuple[str, ...],
                importance: int | None, expires: str | None, actor: str, valid_from: str | None,
                valid_to: str | None, **no: bool) -> None:
    """Change fields of the memory NAME without restating its body (one commit).

    Only the options given change; nothing given, or nothing different, changes nothing.
    """
    render(invocation().desk().set(
        name, description=description, type=type_, triggers=triggers or None,
        add_triggers=add_triggers, remove_triggers=remove_triggers, importance=importance,
        expires=expires, valid_from=valid_from, valid_to=valid_to, actor=actor, clear=_cleared(**no)))


@click.command("rename")
@click.argument("old", shell_complete=complete_memory_names)
@click.argument("new")
@actor_option
@json_option
def rename_command(old: str, new: str, actor: str) -> None:
    """Rename the memory OLD to NEW in one commit (file, its name and MEMORY.md).

    Only the name changes, so git records a rename and `desk history NEW` shows OLD's past.
    """
    render(invocation().desk().rename(old, new, actor=actor))


@click.command("diff")
@click.argument("name", shell_complete=complete_memory_names)
@click.argument("rev", required=False)
@json_option
def diff_command(name: str, rev: str | None) -> None:
    """Show what changed in the memory NAME, from git, as a unified diff.

    From REV (a commit, e.g. HEAD~2; default: before its last committed change) to the file as
    it is now, uncommitted edits included.
    """
    render(invocation().desk().diff(name, rev))


@click.command("forget")
@click.argument("name", shell_complete=complete_memory_names)
@click.option("--reason", "-r", help="Why it is forgotten (kept in the commit as Desk-Reason).")
@click.option("--actor", type=click.Choice(ACTORS), default="user", show_default=True,
              help="Who is making the change.")
@project_option
@json_option
def forget_command(name: str, reason: str | None, actor: str) -> None:
    """Delete the memory NAME and its index line (one commit; history keeps it).

    Prints the command that brings it back (`desk restore NAME`; `restore` in --json).
    """
    render(invocation().desk().forget(name, reason=reason, actor=actor, project=invocation().project))


@click.command("restore")
@click.argument("name", shell_complete=complete_memory_names)
@click.option("--from", "from_rev", metavar="REV",
              help="The commit whose version to bring back (any commit-ish: a commit id from "
                   "`desk history NAME`, HEAD~2, a tag).")
@actor_option
@project_option
@json_option
def restore_command(name: str, from_rev: str | None, actor: str) -> None:
    """Bring the memory NAME back from git history in one commit, through the write gate.

    Without --from: a forgotten memory comes back as it was when it was forgotten; an existing
    one goes back to the version before its current one. With --from REV: the memory as it was
    at REV (under the name it had there: `desk rename` is followed). The file comes back byte
    for byte; the commit says `Desk-Op: restore` and `Desk-Restored-From: <commit>`. Exit 1 when
    NAME never existed or did not exist at REV, 2 when REV is no commit, 3 when that version
    would not pass the gate today, 4 over uncommitted edits; nothing changes on any of them.
    """
    render(invocation().desk().restore(name, from_rev=from_rev, actor=actor, project=invocation().project))


@click.command("show")
@click.argument("name", shell_complete=complete_memory_names)
@_AS_OF
@project_option
@json_option
def show_command(name: str, as_of: str | None) -> None:
    """Print the memory NAME.

    An invalid file is printed as it is, its findings on stderr (`valid: false` in --json). With
    --project, the memory of that project. With --as-of, the revision committed then, under the
    name it had then, and (on stderr) the commit it came from.
    """
    render(invocation().desk().show(name, project=invocation().project, as_of=as_of))


@click.command("list")
@click.option("--type", "type_", type=click.Choice(MEMORY_TYPES), help="Only memories of this type.")
@_AS_OF
@project_option
@json_option
def list_command(type_: str | None, as_of: str | None) -> None:
    """List the memories: name, type and description.

    With --as-of, those committed then and valid then (none before the first commit).
    """
    render(invocation().desk().list(type=type_, project=invocation().project, as_of=as_of))


@click.command("history")
@click.argument("name", shell_complete=complete_memory_names)
@click.option("--timeline", is_flag=True,
              help="Each revision with its validity interval and the archive events that are its evidence.")
@project_option
@json_option
def history_command(name: str, timeline: bool) -> None:
    """Every revision of the memory NAME, from git, newest first (forgotten ones too).

    Follows `desk rename` and an unedited `git mv`, never a rename guessed from
    similar content. Exit 1 when no commit ever touched NAME. With --project, the
    memory of that project. --timeline: since when each value was true, until when, and who said so.
    """
    if timeline:
        render(invocation().desk().timeline(name, project=invocation().project))
        return
    render(invocation().desk().history(name, project=invocation().project))


@click.command("log")
@click.option("--limit", "-n", type=click.IntRange(min=1), help="Show at most this many commits.")
@json_option
def log_command(limit: int | None) -> None:
    """The desk's audit trail: commits with their Desk-* trailers, newest first."""
    render(invocation().desk().log(limit))


@click.command("reindex")
@click.option("--actor", type=click.Choice(ACTORS), default="user", show_default=True,
              help="Who is making the change.")
@json_option
def reindex_command(actor: str) -> None:
    """Regenerate MEMORY.md from memory/ (after hand edits); commit it when it changed."""
    render(invocation().desk().reindex(actor=actor))



COMMANDS = [init_command, remember_command, set_command, rename_command, diff_command, forget_command,
            restore_command, show_command, list_command, history_command, log_command, reindex_command]
