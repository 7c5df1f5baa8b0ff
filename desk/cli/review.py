"""`desk review`: a person's verdict on what the assistant proposed under review mode (docs/review.md)."""

from __future__ import annotations

import click

from desk.cli.output import actor_option, invocation, json_option, render


@click.group("review", invoke_without_command=True)
@click.option("--rejected", is_flag=True, help="Include rejected proposals (kept with their reason).")
@json_option
@click.pass_context
def review_group(ctx: click.Context, rejected: bool) -> None:
    """Proposed writes (review mode): list, show, accept or reject what the assistant proposed.

    With `review` set in .system/desk.json, the assistant's writes of the types and operations it
    names become proposals (refs/desk/proposals/ID) instead of commits on the branch. Without a
    subcommand, the same as `desk review list`. The assistant may list and show proposals; only a
    person accepts or rejects one.
    """
    if ctx.invoked_subcommand is None:
        render(invocation().desk().proposals(rejected=rejected))


@review_group.command("list")
@click.option("--rejected", is_flag=True, help="Include rejected proposals (kept with their reason).")
@json_option
def review_list_command(rejected: bool) -> None:
    """The pending proposals, oldest first: id, what each does, who proposed it, when."""
    render(invocation().desk().proposals(rejected=rejected))


@review_group.command("show")
@click.argument("proposal")
@json_option
def review_show_command(proposal: str) -> None:
    """Proposal ID as a unified diff against the branch as it is now; when a memory it changes
    moved on the branch since, the three-way view (the branch's change and the proposal's, each
    from the proposal's base)."""
    render(invocation().desk().proposal(proposal))


@review_group.command("accept")
@click.argument("proposal")
@click.option("--edit", is_flag=True, help="Open the proposed file in $VISUAL or $EDITOR and land your version.")
@actor_option
@json_option
def review_accept_command(proposal: str, edit: bool, actor: str) -> None:
    """Land proposal ID on the branch as one commit: its trailers plus Desk-Reviewed-By, through the
    gate again. Refused (exit 4) when a memory it changes moved on the branch since, (exit 3) when
    it changes anything but memory files; the assistant may not accept (exit 2)."""
    def editor(_path: str, proposed: str) -> str | None:
        return click.edit(proposed, extension=".md", require_save=False)

    render(invocation().desk().accept(proposal, actor=actor, edit=editor if edit else None))


@review_group.command("reject")
@click.argument("proposal")
@click.option("--reason", required=True, metavar="R", help="Why: kept with the rejected proposal (Desk-Reason).")
@actor_option
@json_option
def review_reject_command(proposal: str, reason: str, actor: str) -> None:
    """Reject proposal ID: it moves to refs/desk/rejected/ID with the reason, never deleted; the
    assistant may not reject (exit 2)."""
    render(invocation().desk().reject(proposal, reason=reason, actor=actor))


COMMANDS = [review_group]
