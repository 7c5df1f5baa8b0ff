"""The `desk` command line: click declarations only.

Each command parses its options, makes one call into the public API (`desk.api.Desk`) and
renders the result with `desk.cli.output.render`. The API is imported only when a command runs, so
`desk --help` pays for click alone. Errors are mapped to exit
codes in one place, `DeskGroup.invoke` (docs/design.md §5: 1 error, 2 usage, 3 rejected, 4 conflict).
"""

from __future__ import annotations

from pathlib import Path

import click

from desk import __version__
from desk.cli.output import Invocation, report_error
from desk.errors import DeskError

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class DeskGroup(click.Group):
    """A click group that turns DeskError into a message and the design's exit code."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except DeskError as exc:
            report_error(ctx, exc)
            ctx.exit(exc.exit_code)


@click.group(cls=DeskGroup, context_settings=CONTEXT_SETTINGS)
@click.option("--desk", "desk_path", type=click.Path(path_type=Path), metavar="PATH",
              help="The desk to use (default: $DESK_HOME, else the desk enclosing the current folder).")
@click.version_option(__version__, "--version", prog_name="desk")
@click.pass_context
def cli(ctx: click.Context, desk_path: Path | None) -> None:
    """Keep an AI assistant's identity and memory as a git repository of Markdown files.

    Start with `desk init PATH`, then `desk remember NAME ...`. Every change is one git commit;
    `desk log` shows the audit trail.
    """
    ctx.ensure_object(Invocation).desk_path = desk_path


def _register() -> None:
    """Add each command module's COMMANDS: memories, guard, reading, digest, working desk."""
    from desk.cli import digest, guard, memory, read, working

    for module in (memory, guard, read, digest, working):
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="desk")
