"""Commands for one desk on many machines: clone, sync."""

from __future__ import annotations

from pathlib import Path

import click

from desk.cli.output import invocation, json_option, render
from desk.vocabulary import ACTORS


def _progress(line: str) -> None:
    click.echo(f"desk: {line}", err=True)


@click.command("clone")
@click.argument("url")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr.")
@json_option
def clone_command(url: str, path: Path | None, quiet: bool) -> None:
    """Clone the desk at URL into PATH, install its hooks and merge drivers, and check it.

    URL is anything `git clone` accepts (a folder, ssh://, https://); credentials stay with git's
    credential helpers, and an address with an embedded password is refused. The clone gets its
    own clone id (its archive files) and `desk doctor` runs once.
    """
    from desk import api

    desk = api.clone(url, path, progress=None if quiet else _progress)
    assert desk.cloned is not None
    render(desk.cloned)


@click.command("sync")
@click.argument("remote", required=False)
@click.option("--no-push", is_flag=True, help="Fetch and integrate only; push nothing.")
@click.option("--continue", "resume", is_flag=True,
              help="Settle and finish a `git pull` (merge or rebase) that stopped on a conflict in "
                   "this clone, e.g. a memory deleted on one side and changed on the other; "
                   "nothing is fetched or pushed.")
@click.option("--progress", is_flag=True,
              help="Show git's progress (counting, receiving, writing objects) on stderr; quiet by default.")
@click.option("--quiet", "-q", is_flag=True, hidden=True, help="No progress lines (the default now).")
@click.option("--actor", type=click.Choice(ACTORS), default="user", show_default=True,
              help="Who asks for the sync (a harness hook: assistant); the Desk-Actor of its commits.")
@json_option
def sync_command(remote: str | None, no_push: bool, resume: bool, progress: bool, quiet: bool, actor: str) -> None:
    """Fetch REMOTE (default: origin), merge it, check the result with the gate, and push.

    History is never rewritten and never force-pushed. A memory changed differently on both sides
    keeps one version and opens a conflict case (`desk conflicts`). Exit 4 when the remote rewrote
    history (the commits it would lose are named) or kept moving; exit 1 when it cannot be reached,
    with nothing changed; exit 3 when incoming commits break the rules (a fast-forward is checked
    before it moves anything). docs/sync.md explains every case.
    """
    render(invocation().desk().sync(remote, push=not no_push, progress=_progress if progress and not quiet
                                    else None, resume=resume, actor=actor))


COMMANDS = [clone_command, sync_command]
