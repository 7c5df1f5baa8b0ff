"""Commands that guard the desk: validate, hooks, edit, doctor."""

from __future__ import annotations

import click

from desk.cli.output import SuggestingGroup, actor_option, invocation, json_option, render


@click.command("validate")
@click.option("--staged", is_flag=True,
              help="Check what is staged for commit (the staged blobs, not the work tree). Default.")
@click.option("--all", "all_files", is_flag=True,
              help="Check every desk file in the work tree, and the whole memory index.")
@click.option("--fix", is_flag=True,
              help="With --staged: rewrite a stale MEMORY.md in the work tree (then `git add` it).")
@json_option
def validate_command(staged: bool, all_files: bool, fix: bool) -> None:
    """Run the desk's rules: the same gate the hooks and every desk write use.

    Prints one line per finding, `path:line: rule-id: message`, with how to fix it. Exit 3 when
    any error is found; warnings alone exit 0. The rules are listed in docs/guard.md.
    """
    from desk.errors import UsageError

    if staged and all_files:
        raise UsageError("give --staged or --all, not both",
                         hint="--staged checks what a commit would record; --all checks the work tree")
    if fix and all_files:
        raise UsageError("--fix works with --staged only", hint="run `desk reindex` to fix MEMORY.md in the work tree")
    render(invocation().desk().validate("all" if all_files else "staged", fix=fix))


@click.group("hooks", cls=SuggestingGroup)
def hooks_group() -> None:
    """Install or remove desk's git hooks and merge drivers.

    The hooks: pre-commit, commit-msg, pre-merge-commit (the gate), post-merge and post-rewrite
    (after a `git pull`: settle the merge, report what arrived unchecked). The merge drivers live
    in .git/config, which git never copies to a clone; `install` also adds .gitattributes when the
    desk has none, and the lines an older desk's lacks (merge lines, `-text` pins).
    """


@hooks_group.command("install")
@json_option
def hooks_install_command() -> None:
    """Install the hooks and merge drivers; a foreign hook is kept, run first.

    pre-commit and pre-merge-commit run the gate on what is being committed (and regenerate a
    stale MEMORY.md), commit-msg checks the message rules, post-merge and post-rewrite settle what
    a `git pull` brought (regenerated indexes, conflict cases) and report what arrived unchecked.
    The merge drivers go in .git/config (and .gitattributes when the desk has none; desk's missing
    lines, such as the `-text` pins that keep desk's files byte for byte whatever core.autocrlf
    says, are appended and committed). Refused when core.hooksPath is set: the message says how to
    wire the hooks by hand.
    """
    render(invocation().desk().hooks_install())


@hooks_group.command("uninstall")
@json_option
def hooks_uninstall_command() -> None:
    """Remove desk's hooks and restore the hooks they had replaced."""
    render(invocation().desk().hooks_uninstall())


@hooks_group.command("run", hidden=True, context_settings={"ignore_unknown_options": True})
@click.argument("hook")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hooks_run_command(hook: str, args: tuple[str, ...]) -> None:
    """What an installed hook runs when the Python that installed it is gone."""
    from desk.cli.hook import main

    click.get_current_context().exit(main([hook, *args]))


@hooks_group.command("merge", hidden=True)
@click.argument("args", nargs=5)
def hooks_merge_command(args: tuple[str, ...]) -> None:
    """What a merge driver runs when the Python that installed it is gone."""
    from desk.cli.merge import main

    click.get_current_context().exit(main(list(args)))


@click.command("edit")
@click.argument("name")
@actor_option
@json_option
def edit_command(name: str, actor: str) -> None:
    """Open the memory NAME in $VISUAL or $EDITOR, validate it on save, and commit it.

    A new NAME starts from a template. When the saved file breaks a rule you can edit it again
    or abort (nothing changes). Commits with `Desk-Op: edit`.
    """
    def ask(findings: str) -> bool:
        from desk.errors import RejectedError

        click.echo(findings, err=True)
        try:
            return click.confirm("Edit again? (no aborts and changes nothing)", default=True, err=True)
        except click.exceptions.Abort:  # end of input (or ^C): no answer is no, said plainly
            click.echo("", err=True)
            raise RejectedError(f"no answer to \"Edit again?\" (end of input); the edit of {name} is "
                                "aborted and nothing changed",
                                hint=f"`desk edit {name}` starts again from the committed file") from None

    render(invocation().desk().edit(name, actor=actor, ask=ask))


@click.command("doctor")
@click.option("--repair", is_flag=True,
              help="Fix what is safe to fix; list what needs a person. Never discards uncommitted edits. "
                   "Needs a desk you can write (without it doctor also checks a read-only desk).")
@click.option("--commits", type=click.IntRange(min=0), default=200, show_default=True,
              help="How many recent commits to check for rule breaks that bypassed the hooks.")
@click.option("--rebuild", is_flag=True,
              help="First drop every derived cache in .git/ (search, context, verdicts, entries, records) "
                   "and make them again. Never touches the desk's files or history.")
@json_option
def doctor_command(repair: bool, commits: int, rebuild: bool) -> None:
    """Check the desk's health: stale index, invalid files, commits that bypassed the hooks,
    leftover temporary files, a torn archive tail, interrupted mutations, a stale index.lock,
    the object store's size (with --repair, `git gc` when git's housekeeping is overdue).

    Exit 3 when a problem remains (after --repair: one that needs a person).
    """
    render(invocation().desk().doctor(repair=repair, commits=commits, rebuild=rebuild))


@click.command("migrate")
@click.option("--dry-run", is_flag=True, help="Say what would change; write nothing.")
@json_option
def migrate_command(dry_run: bool) -> None:
    """Upgrade an older desk's schema (desk.json, the conflict queue, memory files) in one commit.

    An older desk works as it is (readers accept the previous schema; reading never rewrites), and
    each file is upgraded by its next write anyway; this upgrades them all at once and says what
    changed. A desk newer than this desk is refused, never downgraded.
    """
    render(invocation().desk().migrate(dry_run=dry_run))


COMMANDS = [validate_command, hooks_group, edit_command, doctor_command, migrate_command]
