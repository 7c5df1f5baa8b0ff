"""Commands for the read side: recall, context and stats. None of them changes the desk."""

from __future__ import annotations

from pathlib import Path

import click

from desk.cli.output import invocation, json_option, print_json, project_option, render, user_option
from desk.vocabulary import CONTEXT_FORMATS, CONTEXT_MODES, RANKERS, RECALL_KINDS

# Archive bytes (about 10,000 events) from which a recall's cache refresh shows progress at once.
ANNOUNCE_BYTES = 4 * 1024 * 1024


@click.command("recall")
@click.argument("query")
@click.option("--limit", "-n", type=int, default=5, show_default=True,
              help="How many hits to return, 1 to 10.")
@click.option("--kind", type=click.Choice(RECALL_KINDS), default="all",
              show_default=True, help="Search memory files, archived conversation records, or both.")
@click.option("--as-of", metavar="TIME",
              help="What the desk believed then: its memories as committed at the last commit at or before "
                   "this UTC time (ISO 8601) and valid then, the records archived up to it (docs/time.md).")
@click.option("--now", metavar="TIME",
              help="Evaluate the desk as it is at this UTC time: recency, expiry, and records after it hidden.")
@click.option("--ranker", type=click.Choice(RANKERS), default="default",
              show_default=True, help="Scoring formula: desk's default (BM25 in conversational context, docs/recall.md), the previous default (coverage), the baseline formula (0.85 coverage + 0.15 recency), or plain BM25.")
@click.option("--xml", "as_xml", is_flag=True, help="Print a <recalled_context> XML block instead.")
@click.option("--all-scopes", is_flag=True,
              help="Search every project's memories too (default: desk-wide and --project's only).")
@click.option("--embedder", metavar="NAME", envvar="DESK_EMBEDDER",
              help="Hybrid recall: fuse a dense retriever's ranking with the lexical one. An entry "
                   "point of the desk.embedders group or package.module:factory; default "
                   "$DESK_EMBEDDER, else off (an empty value turns it off).")
@project_option
@json_option
def recall_command(query: str, limit: int, kind: str, as_of: str | None, now: str | None, ranker: str,
                   as_xml: bool, all_scopes: bool, embedder: str | None) -> None:
    """Search memories and archived conversations for QUERY; read-only.

    Each hit carries its scope, provenance (file and commit, or archive event) and the score
    breakdown. Exit 2 for an empty or punctuation-only query or a limit outside 1..10.
    """
    from desk.errors import UsageError

    if as_xml and invocation().json:
        raise UsageError("give --json or --xml, not both")
    from desk.cli.progress import stderr_progress

    embedder = embedder.strip() if embedder else None
    project = invocation().project
    root = click.get_current_context().find_root()
    if all_scopes and root.get_parameter_source("project") is click.core.ParameterSource.ENVIRONMENT \
            and root.params.get("project") == project:  # $DESK_PROJECT yields to --all-scopes
        project = None
    with stderr_progress("indexing the archive for recall", unit="bytes", announce=ANNOUNCE_BYTES) as lines, \
            stderr_progress("embedding records for recall", unit="records", enabled=bool(embedder)) as embedded:
        result = invocation().desk().recall(query, limit=limit, kind=kind, as_of=as_of, ranker=ranker,
                                            progress=lines, project=project,
                                            all_scopes=all_scopes, embedder=embedder or None,
                                            embed_progress=embedded if embedder else None, now=now)
    if as_xml:
        click.echo(result.xml(), nl=False)
        return
    render(result)


def _section_budgets(values: tuple[str, ...]) -> dict[str, int]:
    from desk.errors import UsageError

    out = {}
    for value in values:
        key, sep, number = value.partition("=")
        if not sep or not number.strip().isdigit():
            raise UsageError(f"--section-budget wants SECTION=TOKENS, got {value!r}")
        out[key.strip()] = int(number)
    return out


@click.command("context")
@click.option("--mode", type=click.Choice(CONTEXT_MODES), default="wake", show_default=True,
              help="wake: what the assistant loads at the start of a session; spot: the key-turn spot "
                   "check during long work (NOW.md, MISTAKES.md, the newest journal days).")
@click.option("--journal-days", type=click.IntRange(1, 31), metavar="N",
              help="Spot check: how many of the newest journal days to read (default from "
                   ".system/desk.json, 1).")
@click.option("--query", "-q", metavar="TEXT",
              help="Also inject the bodies of memories whose triggers TEXT hits (none when nothing hits).")
@click.option("--budget", type=int, metavar="TOKENS", help="Total token budget (default from .system/desk.json).")
@click.option("--section-budget", "section_budget", multiple=True, metavar="SECTION=TOKENS",
              help="Override one section's budget, e.g. mistakes=400 (repeatable).")
@click.option("--project-agents", type=click.Path(path_type=Path, dir_okay=False), metavar="PATH",
              help="The current project's AGENTS.md, read first.")
@click.option("--format", "fmt", type=click.Choice(CONTEXT_FORMATS), default="markdown",
              show_default=True, help="Markdown to inject, or JSON with the sections and token estimates.")
@click.option("--as-of", metavar="TIME",
              help="What the desk believed then: MEMORY.md, the recalled memories and the files as committed at "
                   "the last commit at or before this UTC time, read at that time (docs/time.md).")
@click.option("--now", metavar="TIME",
              help="Treat this UTC time as now (expired memories and preferences, recent facts, journal days).")
@click.option("--pending", is_flag=True,
              help="Also list review mode's pending proposals, each marked as pending (docs/review.md).")
@user_option
@project_option
@json_option
def context_command(mode: str, journal_days: int | None, query: str | None, budget: int | None,
                    section_budget: tuple[str, ...], project_agents: Path | None, fmt: str,
                    as_of: str | None, now: str | None, pending: bool) -> None:
    """Render what the assistant loads at the start of a session (the injection contract).

    --mode wake (default): project AGENTS.md, AGENTS.md, SOUL.md, NOW.md, MISTAKES.md, USER.md, the
    user's profile and preferences, MEMORY.md, the --project's MEMORY.md, recent facts. --mode spot:
    NOW.md, MISTAKES.md, the newest journal days. Then, with --query, trigger-hit memories. Every
    section has a budget; what is trimmed is named. With --user, that user's USER.md and preferences
    replace the owner's, and nothing of any other user is loaded. With --project, that project's
    memories are loaded beside the desk-wide ones, never another project's.
    """
    result = invocation().desk().context(mode=mode, query=query, budget=budget,
                                         section_budgets=_section_budgets(section_budget),
                                         project_agents=project_agents, as_of=as_of or None,
                                         journal_days=journal_days, user=invocation().user,
                                         project=invocation().project, pending=pending, now=now or None)
    if fmt == "json" or invocation().json:
        print_json(result.to_json())
    else:
        click.echo(result.text(), nl=False)


@click.command("stats")
@click.option("--unverified-days", type=click.IntRange(min=1), default=180, show_default=True,
              help="A memory not updated for this many days counts as long-unverified.")
@json_option
def stats_command(unverified_days: int) -> None:
    """Memories by type, the resident index's token cost against the bodies', stale memories, archive size."""
    render(invocation().desk().stats(unverified_days=unverified_days))


COMMANDS = [recall_command, context_command, stats_command]
