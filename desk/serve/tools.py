"""The MCP server's tools: each one call into `desk.api.Desk` (docs/agents.md lists them).

They mirror the CLI: an update keeps every field it does not name; `project` and `user` are on
every tool whose command takes `--project`/`--user`, defaulting to the server's (`desk serve
--project/--user`); a write is made as the assistant through the same gate. Each tool's
arguments are checked against its declared ones (`strict`): an argument the tool does not take
is refused by name, never dropped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, cast

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from desk.api import Desk
from desk.vocabulary import CONTEXT_MODES, FACT_KINDS, MEMORY_SCOPES, MEMORY_TYPES, NOW_SECTIONS, RECALL_KINDS

ACTOR = "assistant"
Answer = Callable[[Callable[[], dict[str, Any]]], Awaitable[CallToolResult]]
Writer = Callable[[Context], Desk]
ToolFunction = Callable[..., Awaitable[CallToolResult]]


def _enum(words: tuple[str, ...]) -> dict[str, Any]:
    """JSON schema extras listing `words` (desk itself still checks the value, with its hint)."""
    return {"enum": list(words)}


MemoryType = Annotated[str, Field(description="What kind of memory this is.",
                                  json_schema_extra=_enum(MEMORY_TYPES))]
FactKind = Annotated[str, Field(description="What kind of fact this is.", json_schema_extra=_enum(FACT_KINDS))]
Section = Annotated[str, Field(description="A section of NOW.md.", json_schema_extra=_enum(NOW_SECTIONS))]
ContextMode = Annotated[str, Field(description="wake: the start of a session; spot: the key-turn spot "
                                   "check during long work (NOW.md, MISTAKES.md, the newest journal days).",
                                   json_schema_extra=_enum(CONTEXT_MODES))]
RecallKind = Annotated[str, Field(description="Search memory files, archived conversations, or both.",
                                  json_schema_extra=_enum(RECALL_KINDS))]
Scope = Annotated[str, Field(description="durable: holds across sessions (the only kind memory keeps); "
                             "session: true for this session only, which is refused (put it in NOW.md).",
                             json_schema_extra=_enum(MEMORY_SCOPES))]
Project = Annotated[str | None, Field(description="The project scope (a slug) whose memories this is "
                                      "about; omitted: the server's project, else desk-wide.")]
User = Annotated[str | None, Field(description="The user whose preferences and profile these are (an "
                                   "email or account id); omitted: the server's user, else the desk owner.")]
AsOf = Annotated[str | None, Field(description="Read the desk as it was then (ISO 8601 UTC, e.g. "
                                  "2026-03-01T00:00:00Z): the memories committed at the last commit at or "
                                  "before it and valid then. Leave it out for the desk as it is now.")]
Result = Annotated[CallToolResult, dict[str, Any]]
"""A tool's answer: the API result's `.to_json()` as structured content (validated against the
published output schema by the SDK) and the same JSON, compact, in one text block."""


def strict(tool: Tool) -> Tool:
    """`tool` with an argument model that forbids what it does not declare (`extra="forbid"`,
    also published as `additionalProperties: false`): the SDK's own model ignores an unknown
    argument, so `remember(..., scope="session")` was once committed as durable."""
    model = tool.fn_metadata.arg_model
    forbidding = cast("type[BaseModel]", type(model.__name__, (model,), {
        "model_config": {**model.model_config, "extra": "forbid"}, "__module__": model.__module__}))
    metadata = tool.fn_metadata.model_copy(update={"arg_model": forbidding})
    return tool.model_copy(update={"fn_metadata": metadata,
                                   "parameters": forbidding.model_json_schema(by_alias=True)})


def agent_tools(desk: Desk, answer: Answer, writer: Writer, *, project: str | None = None,
                user: str | None = None) -> list[ToolFunction]:
    """The tools over `desk`: `answer` runs a desk call and renders its result (or refusal),
    `writer` is the desk a write goes through (naming the client); `project` and `user` are the
    server's defaults for the tools' own arguments."""
    tools: list[ToolFunction] = []

    def tool(fn: ToolFunction) -> ToolFunction:
        tools.append(fn)
        return fn

    def where(given: str | None) -> str | None:
        return project if given is None else given

    def who(given: str | None) -> str | None:
        return user if given is None else given

    # -- memories --------------------------------------------------------------------------------

    @tool
    async def remember(name: str, body: str, ctx: Context, type: MemoryType | None = None,
                       description: str | None = None, triggers: list[str] | None = None,
                       importance: int | None = None, expires: str | None = None,
                       clear: list[str] | None = None, scope: Scope = "durable",
                       project: Project = None) -> Result:
        """Save one durable fact as the memory `name` (a lowercase slug), or update it; one commit.

        A new memory needs `type` (preference, decision, convention, pitfall, fact, reference) and
        `description` (one line, at most 150 characters, what the index shows). On an update, every
        field you leave out keeps its value: send only what changes. `triggers`: words or phrases
        whose mention should bring the body into context (replaces the list). `importance` 1-5.
        `expires`: an ISO 8601 UTC time after which it is no longer injected. `clear`: fields to
        empty (triggers, importance, expires). The write gate refuses, saying why and writing
        nothing: session-only notes (scope session), a body already recorded in another memory or
        in AGENTS.md/SOUL.md, and broken fields. Under review mode the write becomes a proposal a
        person accepts (status `proposed`).
        """
        return await answer(lambda: writer(ctx).remember(
            name, body, type=type, description=description, triggers=triggers, importance=importance,
            expires=expires, clear=clear or (), scope=scope, actor=ACTOR, project=where(project)).to_json())

    @tool
    async def forget(name: str, ctx: Context, reason: str | None = None, project: Project = None) -> Result:
        """Delete the memory `name` and its index line in one commit, with your `reason` (kept in
        the commit). Git history keeps it: `restore` brings it back."""
        return await answer(lambda: writer(ctx).forget(name, reason=reason, actor=ACTOR,
                                                       project=where(project)).to_json())

    @tool
    async def restore(name: str, ctx: Context, from_rev: str | None = None, project: Project = None) -> Result:
        """Bring the memory `name` back from git history in one commit: a forgotten memory as it was
        when forgotten, an existing one as it was before its last change, or its version at commit
        `from_rev`. Refused when that version would not pass the write gate today."""
        return await answer(lambda: writer(ctx).restore(name, from_rev=from_rev, actor=ACTOR,
                                                        project=where(project)).to_json())

    @tool
    async def list_memories(type: MemoryType | None = None, project: Project = None, as_of: AsOf = None) -> Result:
        """The memories: name, type, description (optionally of one type); read-only. `as_of`:
        the list as it was at that time."""
        return await answer(lambda: desk.list(type=type, project=where(project), as_of=as_of).to_json())

    @tool
    async def show_memory(name: str, project: Project = None, as_of: AsOf = None) -> Result:
        """The memory `name`: its frontmatter fields and body; read-only. `as_of`: the revision
        committed then, with the commit it came from ("what did I believe on 1 March?")."""
        return await answer(lambda: desk.show(name, project=where(project), as_of=as_of).to_json())

    # -- reading ---------------------------------------------------------------------------------

    @tool
    async def recall(query: str, limit: int = 5, kind: RecallKind = "all", project: Project = None,
                     as_of: AsOf = None) -> Result:
        """Search memories (desk-wide and the project's) and archived conversations for `query`;
        read-only. `limit` 1-10. Each hit has its score and provenance; a memory no longer true is
        marked so. `as_of`: search what the desk held at that time."""
        return await answer(lambda: desk.recall(query, limit=limit, kind=kind, project=where(project),
                                                as_of=as_of).to_json())

    @tool
    async def context(mode: ContextMode = "wake", query: str | None = None, budget: int | None = None,
                      journal_days: int | None = None, pending: bool = False,
                      project: Project = None, user: User = None, as_of: AsOf = None) -> Result:
        """What to read. `wake` (the start of a session): AGENTS.md, SOUL.md, NOW.md, MISTAKES.md,
        USER.md, the memory index, recent facts, and with `query` the memories it triggers.
        `spot` (a key turn during long work): NOW.md, MISTAKES.md and the newest `journal_days`
        journal days. `pending`: also your review-mode proposals a person has not accepted yet,
        each marked as not in memory. `as_of`: the memory as it stood then. `markdown` is the text
        to read; what a budget trimmed is named."""
        def run() -> dict[str, Any]:
            result = desk.context(mode=mode, query=query, budget=budget, journal_days=journal_days,
                                  user=who(user), project=where(project), pending=pending, as_of=as_of)
            return {**result.to_json(), "markdown": result.text()}
        return await answer(run)

    # -- review mode and the conflict queue (read-only: verdicts are a person's, never a tool's) --

    @tool
    async def review_list(rejected: bool = False) -> Result:
        """Your writes waiting for a person's review (review mode: not in memory until accepted):
        each proposal's id, subject, date and files, oldest first. `rejected`: the rejected ones
        too, with the reason (do not propose them again)."""
        return await answer(lambda: desk.proposals(rejected=rejected).to_json())

    @tool
    async def review_show(proposal: str) -> Result:
        """Pending proposal `proposal` (its id from review_list): the diff from memory as it is now
        and the proposed files' text."""
        return await answer(lambda: desk.proposal(proposal).to_json())

    @tool
    async def conflicts_list(include_closed: bool = False) -> Result:
        """The conflict review queue: cases where the digest found competing values for one memory
        and left the choice to a person (open ones; `include_closed`: all). Read-only: only a
        person resolves a case."""
        return await answer(lambda: desk.conflicts_list(include_closed=include_closed).to_json())

    @tool
    async def conflicts_show(case: str) -> Result:
        """One conflict case (its id from conflicts_list): the active memory, each candidate value
        with its evidence and diff. Read-only."""
        return await answer(lambda: desk.conflicts_show(case).to_json())

    # -- working notes -----------------------------------------------------------------------------

    @tool
    async def now_show(section: Section | None = None) -> Result:
        """NOW.md, the working note (or one section: doing, blocked, next, reminders)."""
        return await answer(lambda: desk.now_show(section=section).to_json())

    @tool
    async def now_set(text: str, ctx: Context, section: Section | None = None) -> Result:
        """Replace one section of NOW.md (doing, blocked, next, reminders), or the whole note; one
        commit. Session-only notes belong here, not in memory."""
        return await answer(lambda: writer(ctx).now_set(text, section=section, actor=ACTOR).to_json())

    @tool
    async def now_append(text: str, ctx: Context, section: Section = "doing") -> Result:
        """Add `text` as an item to a section of NOW.md (default: doing); one commit."""
        return await answer(lambda: writer(ctx).now_append(text, section=section, actor=ACTOR).to_json())

    @tool
    async def mistake_add(what: str, context: str, cause: str, avoid: str, ctx: Context,
                          memory: str | None = None) -> Result:
        """Record a reusable lesson in MISTAKES.md: what went wrong, in what context, why, and how
        to avoid it (optionally the memory it relates to); one commit."""
        return await answer(lambda: writer(ctx).mistake_add(what=what, context=context, cause=cause,
                                                            avoid=avoid, memory=memory, actor=ACTOR).to_json())

    @tool
    async def fact_add(text: str, kind: FactKind, importance: int, key: str | None = None,
                       project: Project = None) -> Result:
        """Log a structured fact (kind: decision, convention, pitfall, outcome; importance 1-5;
        optional `key` naming what it is about) as raw evidence the nightly digest distils."""
        return await answer(lambda: desk.fact_add(text, kind=kind, importance=importance, key=key,
                                                  actor=ACTOR, project=where(project)).to_json())

    @tool
    async def archive_append(kind: str, content: str, session: str | None = None) -> Result:
        """Append one event (e.g. kind `progress`, `tool`, `failure`) to the append-only archive."""
        return await answer(lambda: desk.archive_append(kind, content, session=session, actor=ACTOR).to_json())

    # -- preferences -------------------------------------------------------------------------------

    @tool
    async def pref_set(key: str, value: str, ctx: Context, expires: str | None = None, user: User = None) -> Result:
        """Set the user's preference `key` (e.g. `response.language`) to `value`: created,
        updated (a new revision) or unchanged (no commit); one commit. Keys are lowercase words
        joined by `.`, `_` or `-`; a key holds one value, a new value replaces the old one.
        `expires`: an ISO 8601 UTC time after which the preference no longer applies."""
        return await answer(lambda: writer(ctx).pref_set(key, value, user=who(user), expires=expires,
                                                         source="agent", actor=ACTOR).to_json())

    @tool
    async def pref_get(key: str, user: User = None) -> Result:
        """The user's preference `key` with its revision and expiry (`active`: in force now); read-only."""
        return await answer(lambda: desk.pref_get(key, user=who(user)).to_json())

    @tool
    async def pref_list(all: bool = False, user: User = None) -> Result:
        """The user's preferences in force now (with `all`, expired ones too), by key; read-only."""
        return await answer(lambda: desk.pref_list(user=who(user), all=all).to_json())

    @tool
    async def pref_delete(key: str, ctx: Context, user: User = None) -> Result:
        """Delete the user's preference `key` (the exact key) in one commit."""
        return await answer(lambda: writer(ctx).pref_delete(key, user=who(user), actor=ACTOR).to_json())

    @tool
    async def pref_history(key: str, user: User = None) -> Result:
        """Every change to the user's preference `key`, newest first (from git); read-only."""
        return await answer(lambda: desk.pref_history(key, user=who(user)).to_json())

    return tools
