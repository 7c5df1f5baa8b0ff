"""The `desk` command line: click declarations only, each command one call into `desk.api.Desk`.

A command's module is imported only when that command runs (`COMMANDS`); errors are mapped to
exit codes in one place, `DeskGroup.invoke` (docs/design.md §5).
"""

from __future__ import annotations

import os
import sys
from importlib import import_module
from itertools import islice
from typing import Any, NoReturn

import click

from desk import __version__
from desk.cli import start
from desk.cli.output import (PROJECT_HELP, USER_HELP, Invocation, SuggestingGroup, complete_project_names,
                             report_error)
from desk.errors import DeskError, UsageError

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


# Each command's module and first help paragraph, so `desk --help` imports none (tests/test_cli.py).
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("memory", "Scaffold a desk at PATH (default: the current folder) and make its first commit."),
    "remember": ("memory", "Create or update the memory NAME through the write gate (one commit)."),
    "set": ("memory", "Change fields of the memory NAME without restating its body (one commit)."),
    "rename": ("memory", "Rename the memory OLD to NEW in one commit (file, its name and MEMORY.md)."),
    "diff": ("memory", "Show what changed in the memory NAME, from git, as a unified diff."),
    "forget": ("memory", "Delete the memory NAME and its index line (one commit; history keeps it)."),
    "restore": ("memory", "Bring the memory NAME back from git history in one commit, through the write gate."),
    "show": ("memory", "Print the memory NAME."),
    "list": ("memory", "List the memories: name, type and description."),
    "history": ("memory", "Every revision of the memory NAME, from git, newest first (forgotten ones too)."),
    "log": ("memory", "The desk's audit trail: commits with their Desk-* trailers, newest first."),
    "reindex": ("memory", "Regenerate MEMORY.md from memory/ (after hand edits); commit it when it changed."),
    "validate": ("guard", "Run the desk's rules: the same gate the hooks and every desk write use."),
    "hooks": ("guard", "Install or remove desk's git hooks and merge drivers."),
    "edit": ("guard", "Open the memory NAME in $VISUAL or $EDITOR, validate it on save, and commit it."),
    "migrate": ("guard", "Upgrade an older desk's schema (desk.json, the conflict queue, memory files) in one commit."),
    "doctor": ("guard", "Check the desk's health: stale index, invalid files, commits that bypassed the "
                        "hooks, leftover temporary files, a torn archive tail, interrupted mutations, a "
                        "stale index.lock, the object store's size (with --repair, `git gc` when git's "
                        "housekeeping is overdue)."),
    "recall": ("read", "Search memories and archived conversations for QUERY; read-only."),
    "context": ("read", "Render what the assistant loads at the start of a session (the injection contract)."),
    "stats": ("read", "Memories by type, the resident index's token cost against the bodies', stale "
                      "memories, archive size."),
    "fact": ("digest", "Structured facts: raw evidence that `desk digest` distils into memories."),
    "digest": ("digest", "Write journal/D.md and distil old facts into memories, in one commit."),
    "conflicts": ("digest", "The conflict review queue: cases the digest opened when candidates tied (read-only)."),
    "review": ("review", "Proposed writes (review mode): list, show, accept or reject what the assistant proposed."),
    "resolve": ("digest", "Decide a conflict case: CANDIDATE becomes (or, for the incumbent, stays) the domain's memory."),
    "archive": ("working", "The append-only JSONL archive of raw events (.system/archive/, one file per UTC "
                           "day per clone)."),
    "checkpoint": ("working", "Commit the archive's growth in one commit (trailers carry each file's head hash)."),
    "now": ("working", "NOW.md, the assistant's hot working note: Doing, Blocked, Next, Reminders."),
    "mistake": ("working", "MISTAKES.md, the error book of high-value, reusable lessons."),
    "import": ("interchange", "Import memory from another tool's files in one commit, and its conversations "
                              "into the archive."),
    "export": ("interchange", "Export the desk's memories for another tool to read; the desk itself is not "
                              "changed."),
    "serve": ("serve", "Run desk as an MCP server (stdio by default) for assistants such as Claude Code."),
    "memory-tool": ("serve", "Run one Anthropic memory-tool call (view, create, str_replace, insert, delete, "
                             "rename)."),
    "setup": ("setup", "Wire desk into Claude Code, Claude Desktop or Cursor: the MCP server entry and "
                       "Claude Code's hooks, merged into their config files."),
    "ui": ("ui", "Open the local review page: memories, history with diffs, the context preview, the timeline "
                 "with the desk's health, and conflict cases."),
    "user": ("scopes", "The profile of the desk owner or of the user named by --user: show, set, unset."),
    "pref": ("scopes", "Preferences by stable key for the desk owner or the user named by --user."),
    "conversations": ("working", "Readable views of archived conversations under conversations/ (never the "
                                 "source of truth)."),
    "clone": ("sync", "Clone the desk at URL into PATH, install its hooks and merge drivers, and check it."),
    "sync": ("sync", "Fetch REMOTE (default: origin), merge it, check the result with the gate, and push."),
}


# Global options (whether each takes a value), also accepted after the subcommand: hoisted in front.
GLOBAL_OPTIONS: dict[str, bool] = {"--desk": True, "--user": True, "--project": True, "--verbose": False}


def hoist_global_options(args: list[str]) -> list[str]:
    """`args` with every global option (and its value) moved to the front, up to `--`."""
    front: list[str] = []
    rest: list[str] = []
    remaining = iter(args)
    for arg in remaining:
        name = arg.split("=", 1)[0]
        if arg == "--":
            rest += [arg, *remaining]
        elif name in GLOBAL_OPTIONS:
            front += [arg, *islice(remaining, GLOBAL_OPTIONS[name] and "=" not in arg)]
        else:
            rest.append(arg)
    return front + rest


class DeskGroup(SuggestingGroup):
    """A click group that loads each command's module on first use and maps DeskError to exit codes."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if ctx.parent is None:
            args = hoist_global_options(args)
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        entry = COMMANDS.get(name)
        if entry is None:
            return None
        commands: list[click.Command] = import_module(f"desk.cli.{entry[0]}").COMMANDS
        return next(c for c in commands if c.name == name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from COMMANDS, each first help paragraph whole (click's would cut it)."""
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """click's own code holds a Ctrl-C (desk.cli.start): click would print "Aborted!"."""
        start.set_mode(start.HOLD)
        return super().main(*args, **kwargs)

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            start.set_mode(start.RAISE)
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            usage_error(exc)
        except KeyboardInterrupt:
            sys.exit(start.report_interrupt())
        finally:
            start.set_mode(start.HOLD)

    def invoke(self, ctx: click.Context) -> object:
        try:
            start.set_mode(start.RAISE)
            return self._invoke_mapped(ctx)
        except KeyboardInterrupt:  # Ctrl-C: one line and 130, or 0 when a commit landed first
            sys.exit(start.report_interrupt())
        finally:
            start.set_mode(start.IGNORE)  # the command has ended: it has said what it did

    def _invoke_mapped(self, ctx: click.Context) -> object:
        """The command, its errors mapped to a message and an exit code."""
        try:
            return super().invoke(ctx)
        except DeskError as exc:
            report_error(ctx, exc)
            ctx.exit(exc.exit_code)
        except click.UsageError as exc:
            usage_error(exc)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except OSError as exc:  # the disk or the system refused a write or a read
            where = f" ({exc.filename})" if exc.filename else ""
            report_error(ctx, DeskError(
                f"{exc.strerror or exc}{where}",
                hint="desk leaves the desk as it was when a write fails (or finishes the change at "
                     "the next command); fix the cause (free space, permissions, the disk), then "
                     "run the command again; `desk doctor` checks the desk"))
            ctx.exit(1)
        except Exception as exc:  # a bug in desk: one clear line and exit 1, never a traceback
            if isinstance(exc.__cause__, KeyboardInterrupt):  # a Ctrl-C Python 3.11 wrapped (one
                raise exc.__cause__ from None  # landing in a class's __set_name__ while a module loads)
            if os.environ.get("DESK_DEBUG"):
                raise
            report_error(ctx, DeskError(
                f"internal error: {type(exc).__name__}: {exc}",
                hint="this is a bug in desk; `desk doctor` checks the desk, and DESK_DEBUG=1 shows "
                     "the traceback to report"))
            ctx.exit(1)


def usage_error(exc: click.UsageError) -> NoReturn:
    """click's own usage error, then desk's `hint:` line (under `--json`, one JSON object); exit 2."""
    path = exc.ctx.command_path if exc.ctx is not None else "desk"
    error = UsageError(exc.format_message(), hint=f"run `{path} --help` to see what it accepts")
    obj = exc.ctx.find_object(Invocation) if exc.ctx is not None else None
    if obj is not None and obj.json:
        report_error(exc.ctx, error)
    else:
        exc.show()
        if type(exc).__name__ != "NoArgsIsHelpError":  # click 8.2+: that one just printed the help
            click.echo(f"hint: {error.hint}", err=True)
    sys.exit(2)


@click.group(cls=DeskGroup, context_settings=CONTEXT_SETTINGS)
@click.option("--desk", "desk_path", type=click.Path(), metavar="PATH",
              help="The desk to use (default: the desk enclosing the current folder, else $DESK_HOME); "
                   "also accepted after the subcommand.")
@click.option("--user", metavar="ID", envvar="DESK_USER", help=USER_HELP)
@click.option("--project", metavar="NAME", envvar="DESK_PROJECT", help=PROJECT_HELP,
              shell_complete=complete_project_names)
@click.option("--verbose", is_flag=True,
              help="Say on stderr which desk is used when it comes from $DESK_HOME.")
@click.version_option(__version__, "--version", prog_name="desk")
@click.pass_context
def cli(ctx: click.Context, desk_path: str | None, user: str | None, project: str | None,
        verbose: bool) -> None:
    """Keep an AI assistant's identity and memory as a git repository of Markdown files.

    Start with `desk init PATH`, then `desk remember NAME ...`. Every change is one git commit;
    `desk log` shows the audit trail.
    """
    from pathlib import Path  # `desk --help` never needs it

    obj = ctx.ensure_object(Invocation)
    obj.desk_path = Path(desk_path) if desk_path is not None else None
    obj.user = user or None
    obj.project = project or None
    obj.verbose = verbose


def main() -> None:
    """Console-script entry point."""
    for n, arg in enumerate(sys.argv[1:], 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as exc:  # Python hands undecodable bytes over as lone surrogates
            bad = arg.encode("utf-8", "surrogateescape")[exc.start]
            report_error(None, UsageError(
                f"argument {n} ({arg.encode('utf-8', 'surrogateescape')!r}) is not valid UTF-8 "
                f"(byte {bad:#04x})", hint="desk reads and stores UTF-8 only: convert the text first, "
                "e.g. with `iconv -t UTF-8`"), as_json="--json" in sys.argv)
            sys.exit(2)
    cli(prog_name="desk")
