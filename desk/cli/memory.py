"""Commands for the desk itself and its single-fact memories."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from desk.cli.output import emit, json_option, read_text_arg, invocation
from desk.errors import RejectedError
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
    from desk.scaffold import init_desk

    result = init_desk(path, allow_nonempty=allow_nonempty, allow_nested=allow_nested)

    def human() -> str:
        if result.status == "exists":
            return f"{result.path} is already a desk; nothing changed"
        lines = [f"created a desk in {result.path} (commit {result.commit[:7] if result.commit else '-'})"]
        if result.kept:
            lines.append("kept existing files: " + ", ".join(result.kept))
        if result.hooks:
            lines.append(f"warning: the git hooks were not installed: {result.hooks}")
        lines.append("next: fill in SOUL.md, then `desk remember NAME --type T --description D BODY`")
        return "\n".join(lines)

    emit(result.to_json(), human)


@click.command("remember")
@click.argument("name")
@click.argument("body", required=False)
@click.option("--type", "type_", required=True, type=click.Choice(MEMORY_TYPES), help="What kind of fact.")
@click.option("--description", "-d", required=True, help="One line (≤150 characters) for the index.")
@click.option("--trigger", "-t", "triggers", multiple=True,
              help="A word or phrase whose mention in a query recalls this memory (repeatable).")
@click.option("--importance", type=click.IntRange(1, 5), help="1 (minor) to 5 (critical).")
@click.option("--expires", metavar="TIME", help="UTC time (ISO 8601) after which it is no longer injected.")
@click.option("--source", type=click.Choice(MEMORY_SOURCES),
              help="Where the fact came from (default: user for --actor user, else agent).")
@click.option("--source-event", metavar="ID", help="The archive event id this came from (set by the harness).")
@click.option("--actor", type=click.Choice(ACTORS), default="user", show_default=True,
              help="Who is making the change (the Desk-Actor trailer).")
@click.option("--scope", type=click.Choice(MEMORY_SCOPES), default="durable", show_default=True,
              help="session-only facts are refused: they belong in NOW.md.")
@click.option("--body-file", type=click.Path(path_type=Path, dir_okay=False), help="Read the body from a file.")
@json_option
def remember_command(name: str, body: str | None, type_: str, description: str,
                     triggers: tuple[str, ...], importance: int | None, expires: str | None,
                     source: str | None, source_event: str | None, actor: str, scope: str,
                     body_file: Path | None) -> None:
    """Create or update the memory NAME through the write gate (one commit).

    BODY is the fact itself; `-` reads it from stdin. Remembering an existing NAME updates it;
    identical content changes nothing. Exit 3 when the gate rejects it, with nothing changed.
    """
    from desk.memory.operations import remember

    desk = invocation().desk()
    try:
        text = read_text_arg(body, body_file, "memory body")
        result = remember(desk, name, type=type_, description=description, body=text,
                          triggers=triggers, importance=importance, expires=expires, source=source,
                          source_event=source_event, actor=actor, scope=scope)
    except RejectedError as exc:
        exc.details = {"name": name, "path": f"memory/{name}.md", "commit": None,
                       "reason": getattr(exc, "reason", None) or "invalid"}
        raise
    emit(result.to_json(), lambda: _mutation_text(result.to_json()))


@click.command("forget")
@click.argument("name")
@click.option("--reason", "-r", help="Why it is forgotten (kept in the commit as Desk-Reason).")
@click.option("--actor", type=click.Choice(ACTORS), default="user", show_default=True,
              help="Who is making the change.")
@json_option
def forget_command(name: str, reason: str | None, actor: str) -> None:
    """Delete the memory NAME and its index line (one commit; history keeps it)."""
    from desk.memory.operations import forget

    result = forget(invocation().desk(), name, reason=reason, actor=actor)
    emit(result.to_json(), lambda: _mutation_text(result.to_json()))


@click.command("show")
@click.argument("name")
@json_option
def show_command(name: str) -> None:
    """Print the memory NAME."""
    from desk.memory.operations import show

    path, memory = show(invocation().desk(), name)
    data = {"path": path, **memory.meta.to_json(), "body": memory.body}
    emit(data, lambda: memory.render().decode().rstrip("\n"))


@click.command("list")
@click.option("--type", "type_", type=click.Choice(MEMORY_TYPES), help="Only memories of this type.")
@json_option
def list_command(type_: str | None) -> None:
    """List the memories: name, type and description."""
    from desk.memory.operations import list_memories

    entries, invalid = list_memories(invocation().desk(), type_)
    data = {"memories": [{"name": e.name, "type": e.type, "description": e.description,
                          "expires": e.expires, "path": f"memory/{e.name}.md"} for e in entries],
            "invalid": [f.to_json() for f in invalid]}
    for finding in invalid:
        click.echo(f"desk: warning: {finding} (left out; fix it, then `desk reindex`)", err=True)

    def human() -> str:
        if not entries:
            return "no memories yet"
        width = max(len(e.name) for e in entries)
        return "\n".join(f"{e.name:<{width}}  {e.type:<10}  {e.description}" for e in entries)

    emit(data, human)


@click.command("history")
@click.argument("name")
@json_option
def history_command(name: str) -> None:
    """Every revision of the memory NAME, from git, newest first (forgotten ones too)."""
    from desk.memory.operations import history

    commits = history(invocation().desk(), name)
    emit({"name": name, "commits": [c.to_json() for c in commits]}, lambda: _log_text(commits))


@click.command("log")
@click.option("--limit", "-n", type=click.IntRange(min=1), help="Show at most this many commits.")
@json_option
def log_command(limit: int | None) -> None:
    """The desk's audit trail: commits with their Desk-* trailers, newest first."""
    from desk.memory.operations import log

    commits = log(invocation().desk(), limit)
    emit({"commits": [c.to_json() for c in commits]}, lambda: _log_text(commits))


@click.command("reindex")
@click.option("--actor", type=click.Choice(ACTORS), default="user", show_default=True,
              help="Who is making the change.")
@json_option
def reindex_command(actor: str) -> None:
    """Regenerate MEMORY.md from memory/ (after hand edits); commit it when it changed."""
    from desk.memory.operations import reindex

    result = reindex(invocation().desk(), actor=actor)

    def human() -> str:
        if result.status == "written":
            return ("MEMORY.md regenerated; memory/ has uncommitted edits ("
                    + ", ".join(result.pending) + "): review them and commit them with MEMORY.md")
        return _mutation_text(result.to_json())

    emit(result.to_json(), human)


def _mutation_text(data: dict[str, Any]) -> str:
    commit = f" (commit {str(data['commit'])[:7]})" if data.get("commit") else ""
    return f"{data['status']}: {data['path']}{commit}"


def _log_text(commits: list[Any]) -> str:
    if not commits:
        return "no commits"
    lines = []
    for c in commits:
        extra = ", ".join(f"{k.removeprefix('Desk-').lower()}={'/'.join(v)}"
                          for k, v in c.trailers.items() if k != "Desk-Op")
        lines.append(f"{c.sha[:7]}  {c.date[:19]}  {c.subject}" + (f"  [{extra}]" if extra else ""))
    return "\n".join(lines)


COMMANDS = [init_command, remember_command, forget_command, show_command, list_command,
            history_command, log_command, reindex_command]
