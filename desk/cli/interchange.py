"""`desk import` and `desk export`: other tools' memory in, desk's memory out."""

from __future__ import annotations

from pathlib import Path

import click

from desk.cli.output import invocation, json_option, project_option, render, user_option
from desk.vocabulary import EXPORT_FORMATS, IMPORT_FORMATS


@click.command("import")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(IMPORT_FORMATS))
@click.argument("source", type=click.Path(path_type=Path))
@click.option("--dry-run", is_flag=True, help="Print the plan (create / update / unchanged / rejected, "
              "proposals, archive records) and write nothing.")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Report progress over the conversation records on stderr, a line every few seconds.")
@click.option("--max-mib", type=click.IntRange(min=1), metavar="N",
              help="Refuse a source whose files hold more than N MiB together, before reading it "
              "whole [default: $DESK_IMPORT_MAX_MIB, else 256].")
@project_option
@user_option
@json_option
def import_command(fmt: str, source: Path, dry_run: bool, progress: bool, max_mib: int | None) -> None:
    """Import memory from another tool's files in one commit, and its conversations into the archive.

    FORMAT is claude-code (a ~/.claude/projects/<project>/ folder, its memory/ folder, or one
    session's <session>.jsonl transcript), openclaw (a workspace), markdown (basic-memory, Obsidian or Letta notes), mem0 (its export
    JSON), chat-export (ChatGPT or Claude conversations.json) or jsonl (`desk export jsonl`).
    Every memory passes the write gate; refused ones are listed with the reason and the rest go
    on. Conversations become archive records (committed by `desk checkpoint`, like every
    append). A malformed source changes nothing (exit 2). --project NAME imports the memories
    into that project's scope; --user ID applies an OpenClaw USER.md's profile fields to that
    user's profile (refused for a source without profile data). A source larger than 256 MiB
    (--max-mib) is refused before it is read whole.
    docs/import-export.md describes each format.
    """
    from desk.cli.import_progress import ProgressLines

    lines = ProgressLines("import (validate, append the records)") if progress and not dry_run else None
    try:
        scope = invocation()
        result = scope.desk().import_(fmt, source, dry_run=dry_run, progress=lines, project=scope.project,
                                      user=scope.user,
                                      max_bytes=max_mib * 1024 * 1024 if max_mib is not None else None)
    finally:
        if lines is not None:
            lines.close()
    render(result)


@click.command("export")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(EXPORT_FORMATS))
@click.argument("dest", type=click.Path(path_type=Path))
@json_option
def export_command(fmt: str, dest: Path) -> None:
    """Export the desk's memories for another tool to read; the desk itself is not changed.

    FORMAT is claude-code (an auto-memory folder with its MEMORY.md), openclaw (a workspace),
    markdown (one file per memory, for Obsidian or basic-memory) or jsonl (one line per memory
    with its commit history). `desk import` reads each back unchanged.
    """
    render(invocation().desk().export(fmt, dest))


COMMANDS = [import_command, export_command]
