"""Shared CLI plumbing: the per-invocation options, `--json`, rendering and error reports."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click
import click.shell_completion

from desk.errors import DeskError
from desk.vocabulary import ACTORS

if TYPE_CHECKING:
    from pathlib import Path

    from desk import Desk, Outcome

F = TypeVar("F", bound=Callable[..., Any])


_WARNED = False  # the missing-hooks warning: once per process


class Invocation:
    """What the group options and `--json` leave for the command and the error handler."""

    def __init__(self) -> None:
        self.desk_path: Path | None = None
        self.json = False
        self.user: str | None = None  # --user (or $DESK_USER): None is the desk owner
        self.project: str | None = None  # --project (or $DESK_PROJECT): None is desk-wide
        self.verbose = False  # --verbose: name a desk found through $DESK_HOME

    def desk(self) -> Desk:
        """The desk the command works on; the first call warns of missing hooks or a stopped pull."""
        from desk import api

        desk = api.open(self.desk_path)
        if desk.found_by == "env" and self.verbose and not self.json:  # not the folder the person stands in
            click.echo(f"desk: using {desk.root} ($DESK_HOME)", err=True)
        global _WARNED
        if not _WARNED:
            _WARNED = True
            missing = api.missing_setup(desk)
            if missing:
                click.echo(f"desk: warning: this clone lacks desk's {', '.join(missing)}; "
                           f"install them with `desk --desk {desk.root} hooks install`", err=True)
            resuming = click.get_current_context(silent=True)
            stopped = None if resuming is not None and resuming.params.get("resume") else api.stopped_notice(desk)
            if stopped:  # (not for `desk sync --continue` itself)
                click.echo(f"desk: warning: {stopped}", err=True)
        return desk


def complete_memory_names(ctx: click.Context, _param: click.Parameter,
                          incomplete: str) -> list[click.shell_completion.CompletionItem]:
    """Shell completion for a memory NAME: the memory files of the desk (and --project) named."""
    project = ctx.find_root().params.get("project") or None
    return _completions(ctx, incomplete, lambda desk: desk.memory_names(project=project))


def complete_project_names(ctx: click.Context, _param: click.Parameter,
                           incomplete: str) -> list[click.shell_completion.CompletionItem]:
    """Shell completion for --project NAME: the project folders of the desk."""
    return _completions(ctx, incomplete, lambda desk: desk.project_names())


def _completions(ctx: click.Context, incomplete: str,
                 names: Callable[[Desk], list[str]]) -> list[click.shell_completion.CompletionItem]:
    from click.shell_completion import CompletionItem

    from desk import api

    try:
        desk = api.open(ctx.find_root().params.get("desk_path"))
    except DeskError:
        return []
    return [CompletionItem(n) for n in names(desk) if n.startswith(incomplete)]


class SuggestingGroup(click.Group):
    """A command group that answers a mistyped subcommand with "did you mean …?"."""

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        name = click.utils.make_str(args[0]) if args else ""
        if args and self.get_command(ctx, name) is None and not ctx.resilient_parsing \
                and not name.startswith("-"):
            import difflib

            close = difflib.get_close_matches(name, self.list_commands(ctx), n=2, cutoff=0.6)
            ctx.fail(f"No such command {name!r}." + (f" Did you mean {' or '.join(map(repr, close))}?" if close else ""))
        return super().resolve_command(ctx, args)


def invocation() -> Invocation:
    return click.get_current_context().ensure_object(Invocation)


def _set_json(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    ctx.ensure_object(Invocation).json = value
    return value


USER_HELP = ("The user whose scope this is (an email or account id; default: $DESK_USER, else the "
             "desk owner).")
PROJECT_HELP = ("The project scope (a slug): memories under projects/NAME/ (default: $DESK_PROJECT, "
                "else desk-wide).")


def _scope_option(name: str, metavar: str, help: str, complete: Any = None) -> Callable[[F], F]:
    """`--user`/`--project` on a command's own help (hoisted to the group; the callback serves a
    direct call of the command)."""
    def remember(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
        if value is not None:
            setattr(ctx.ensure_object(Invocation), name, value)
        return value

    return click.option(f"--{name}", metavar=metavar, expose_value=False, callback=remember, help=help,
                        shell_complete=complete)


user_option = _scope_option("user", "ID", USER_HELP)
project_option = _scope_option("project", "NAME", PROJECT_HELP, complete_project_names)


actor_option = click.option("--actor", type=click.Choice(ACTORS), default="user", show_default=True,
                            help="Who is making the change (the Desk-Actor trailer).")


def json_option(func: F) -> F:
    """`--json`: one JSON object on stdout instead of human output."""
    return click.option("--json", "as_json", is_flag=True, expose_value=False, is_eager=True,
                        callback=_set_json, help="Print one JSON object instead of text.")(func)


def render(result: Outcome) -> None:
    """Print an API result: its warnings on stderr, then `.to_json()` under `--json`, else `.text()`;
    exit with the result's exit code when it is not 0."""
    for line in result.warnings():
        click.echo(line, err=True)
    if invocation().json:
        print_json(result.to_json())
    else:
        text = result.text()
        if text:
            click.echo(text)
    if result.exit_code:
        click.get_current_context().exit(result.exit_code)


def print_json(data: dict[str, Any]) -> None:
    import json

    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def report_error(ctx: click.Context | None, exc: DeskError, *, as_json: bool = False) -> None:
    """One error message (or JSON object) and its hint; `as_json` without a click context."""
    obj = ctx.find_object(Invocation) if ctx is not None else None
    if not exc.hint:  # every error says what to do next
        from desk.errors import InvalidFileError, UsageError

        command = f"desk {ctx.invoked_subcommand}" if ctx is not None and ctx.invoked_subcommand else "desk"
        exc.hint = ("fix what is named above, then check with `desk validate --all`"
                    if isinstance(exc, InvalidFileError) else f"see `{command} -h` for the arguments it takes"
                    if isinstance(exc, UsageError) else f"see `{command} -h`; `desk doctor` checks the desk's health")
    if as_json or (obj is not None and obj.json):
        print_json(exc.to_json())
        return
    label = {"rejected": "rejected", "conflict": "conflict"}.get(exc.status, "error")
    lines = exc.message.splitlines() or [""]
    click.echo(f"desk: {label}: {lines[0]}", err=True)
    for line in lines[1:]:
        click.echo(f"  {line}", err=True)
    if exc.hint:
        click.echo(f"hint: {exc.hint}", err=True)


def read_text_arg(value: str | None, file: Path | None, what: str) -> str:
    """Text from an argument, `-` (stdin) or a file."""
    from desk.errors import UsageError

    if value is not None and file is not None:
        raise UsageError(f"give the {what} as an argument or with a file, not both")
    if file is not None:
        try:
            return file.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {file}: {exc}") from None
    if value == "-":
        data = sys.stdin.buffer.read()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(f"stdin is not valid UTF-8 (byte {data[exc.start]:#04x} at offset {exc.start})",
                             hint="convert it first, e.g. `iconv -f LATIN1 -t UTF-8`") from None
    if value is None:
        raise UsageError(f"missing the {what}: give it as an argument, `-` for stdin, or a file")
    return value
