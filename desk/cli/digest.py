"""Commands for facts, the nightly digest and the conflict review queue."""

from __future__ import annotations

import sys

import click

from desk.cli.output import SuggestingGroup, invocation, json_option, project_option, read_text_arg, render
from desk.vocabulary import FACT_KINDS


@click.group("fact", cls=SuggestingGroup)
def fact_group() -> None:
    """Structured facts: raw evidence that `desk digest` distils into memories."""


@fact_group.command("add")
@click.argument("text")
@click.option("--kind", required=True, type=click.Choice(FACT_KINDS),
              help="decision, convention or pitfall can become memories; outcome never does.")
@click.option("--importance", default=3, show_default=True, type=click.IntRange(1, 5),
              help="1 (minor) to 5 (critical); 4 or more is promoted without repetition.")
@click.option("--key", metavar="K",
              help="The question this fact answers, e.g. runtime.python-version (lowercase words "
                   "joined by . _ -): facts sharing a key compete, and a newer value supersedes.")
@click.option("--session", metavar="S", help="The session the fact came from.")
@click.option("--actor", metavar="A", help="Who stated it (user, assistant, a tool).")
@click.option("--at", metavar="TIME", help="When it was stated (UTC, ISO 8601; default now); at most 24 hours "
              "ahead of now.")
@click.option("--no-redact", is_flag=True, help="Store known secret patterns as they are (only those secrets.allow names; another is refused, exit 3).")
@click.option("--valid-from", metavar="TIME", help="Since when the fact is true (UTC, ISO 8601; default: when stated).")
@click.option("--valid-to", metavar="TIME", help="Since when the fact is no longer true (UTC, ISO 8601).")
@project_option
@json_option
def fact_add_command(text: str, kind: str, importance: int, key: str | None, session: str | None,
                     actor: str | None, at: str | None, no_redact: bool, valid_from: str | None,
                     valid_to: str | None) -> None:
    """Validate a fact and append it to the archive (kind `fact`); prints its event id.

    TEXT is the fact itself; `-` reads it from stdin. Not committed on its own: `desk checkpoint`
    or `desk digest` commits archive growth. Exit 3 for an invalid fact, with nothing written.
    """
    content = read_text_arg(text, None, "fact")
    render(invocation().desk().fact_add(content, kind=kind, importance=importance, key=key,
                                        session=session, actor=actor, at=at, redact=not no_redact,
                                        project=invocation().project, valid_from=valid_from,
                                        valid_to=valid_to))


@click.command("digest")
@click.option("--date", "date", metavar="D", help="The day to journal, YYYY-MM-DD (default: the day of --as-of).")
@click.option("--as-of", "as_of", metavar="TIME",
              help="The run's clock (UTC, ISO 8601; default now): later events are not seen, and "
                   "facts count once they are old enough relative to it.")
@click.option("--summarizer", metavar="CMD",
              help="A command that reads the day's events as JSONL on stdin and prints a Markdown "
                   "narrative (e.g. an LLM CLI); checked for size and secrets before it is used.")
@project_option
@json_option
def digest_command(date: str | None, as_of: str | None, summarizer: str | None) -> None:
    """Write journal/D.md and distil old facts into memories, in one commit.

    By default (policy in .system/desk.json) facts at least 30 days old, of kind
    decision/convention/pitfall, important (>= 4) or repeated, become memory files (source: digest). A new value replaces a keyed memory only with 2 newer
    confirmations; ties go to .system/conflicts.json. Never writes NOW.md. No commit when nothing
    changed, so running it twice commits once. With --project NAME, distils that project's facts
    into projects/NAME/memory/ and its MEMORY.md instead (no journal).
    """
    render(invocation().desk().digest(date=date, as_of=as_of, summarizer=summarizer,
                                      project=invocation().project))


@click.group("conflicts", invoke_without_command=True)
@click.option("--all", "show_all", is_flag=True, help="Include superseded and resolved cases.")
@json_option
@click.pass_context
def conflicts_group(ctx: click.Context, show_all: bool) -> None:
    """The conflict review queue: cases the digest opened when candidates tied (read-only).

    Without a subcommand, the same as `desk conflicts list`. The queue is for people: it is never
    shown to the model (not in `desk context`, not in `desk serve`).
    """
    if ctx.invoked_subcommand is None:
        render(invocation().desk().conflicts_list(include_closed=show_all))


@conflicts_group.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include superseded and resolved cases.")
@json_option
def conflicts_list_command(show_all: bool) -> None:
    """Open cases (all with --all): id, revision, domain key, candidates, and how to show each."""
    render(invocation().desk().conflicts_list(include_closed=show_all))


@conflicts_group.command("show")
@click.argument("case")
@json_option
def conflicts_show_command(case: str) -> None:
    """One case in full: the incumbent and every tied challenger with content, importance, evidence
    ids and their archived text, the latest time, and the exact `desk resolve` command for each."""
    render(invocation().desk().conflicts_show(case))


@click.command("resolve")
@click.argument("case")
@click.argument("candidate")
@click.option("--expected-revision", type=int, metavar="N",
              help="The case revision you reviewed; another one is stale (exit 4). On a terminal: "
                   "the case's revision as desk reads it before asking for the rationale.")
@click.option("--event-id", metavar="E",
              help="A unique id for this decision (default on a terminal: review:CASE:rN): retrying "
                   "with the same id and arguments changes nothing; reusing it for another choice is "
                   "refused (exit 4).")
@click.option("--actor", metavar="A", help="Who decides (a person, e.g. an email address; default on a "
              "terminal: user).")
@click.option("--rationale", metavar="R", help="Why: recorded in the audit and the commit (asked for "
              "on a terminal when not given).")
@json_option
def resolve_command(case: str, candidate: str, expected_revision: int | None, event_id: str | None,
                    actor: str | None, rationale: str | None) -> None:
    """Decide a conflict case: CANDIDATE becomes (or, for the incumbent, stays) the domain's memory.

    On a terminal, `desk resolve CASE CANDIDATE` is enough: desk reads the case's revision and
    makes the event id, asks why, and records the decision as `user`'s. The case is still checked
    when the decision is written (exit 4 when it moved while you answered). Without a terminal
    (a script, a pipe) --expected-revision, --event-id, --actor and --rationale are required.

    All checks run before anything is written (exit 4 when the case is closed, at another revision,
    or its evidence or active memory changed: review again). One commit holds the memory, MEMORY.md,
    the closed case and a line of the append-only audit (.system/adjudications.<clone>.jsonl).
    For people only: the model is never offered this command.
    """
    desk = invocation().desk()
    if not sys.stdin.isatty():
        missing = [flag for flag, value in (("--expected-revision", expected_revision), ("--event-id", event_id),
                                            ("--actor", actor), ("--rationale", rationale)) if value is None]
        if missing:
            raise click.UsageError(f"without a terminal, desk resolve needs {', '.join(missing)} (see "
                                   f"`desk conflicts show {case} --json`: resolve_args)")
    else:
        shown = desk.conflicts_show(case).to_json()["case"]
        labels = {c["id"]: c["label"] for c in shown["candidates"]}
        if candidate not in labels:
            raise click.UsageError(f"{candidate} is not a candidate of case {case}; its candidates are "
                                   + ", ".join(labels))
        if expected_revision is None:
            expected_revision = int(shown["revision"])
        event_id = event_id or f"review:{case}:r{expected_revision}"
        actor = actor or "user"
        if rationale is None:
            click.echo(f"case {case} revision {expected_revision} ({shown.get('key') or shown['domain']}): "
                       f"accepting {candidate}: {labels[candidate]}", err=True)
            rationale = click.prompt("Why (recorded in the audit and the commit)", err=True)
    assert expected_revision is not None and event_id is not None and actor is not None and rationale is not None
    render(desk.resolve(case, candidate, expected_revision=expected_revision, event_id=event_id, actor=actor,
                        rationale=rationale))


COMMANDS = [fact_group, digest_command, conflicts_group, resolve_command]
