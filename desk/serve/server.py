"""The MCP server: each tool one call into `desk.api.Desk`, its result the call's `.to_json()`.

What the model may do is deliberately narrower than the CLI (docs/agents.md): every write is made
as `Desk-Actor: assistant` and names the MCP client in a `Desk-Client` trailer; there is no
`resolve` (adjudication is a person's), no `migrate`, no hook management, no SOUL.md writes, and
no provenance fields (`source_event`, `evidence`, an event's or a preference's `at`, `meta`): the
harness attaches provenance, the model cannot invent it. Whose preferences and profile the server
reads and writes is fixed when it starts (`desk --user ID serve`, else the desk owner): no tool
takes a user, so a model can never reach another user's scope. A refusal (the gate, a bad
argument, a dirty file) comes back as a tool error whose text says what to change; nothing is
written then.

Desk calls go one at a time, always on the same thread: the recall cache kept warm on the `Desk`
(SQLite) must stay on the thread that opened it, and the desk lock already orders writers across
processes. Over stdio (one client) that thread is the event loop's own: while a call runs there
is nothing else for the loop to do but queue the client's next request, and a hop to a worker
thread and back costs more than a small call itself (docs/agents.md, Performance). Over HTTP the
calls run on one worker thread, so the loop stays free for other connections, and every request
must carry the server's bearer token (`desk.serve.token`): one without it is answered 401 by the
SDK's own bearer-auth middleware before its body is read or any desk call runs.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from desk.api import Desk
from desk.errors import DeskError
from desk.serve.token import ServeToken
from desk.serve.wire import Calls, Incoming, Outgoing, claimed_pipes
from desk.vocabulary import CONTEXT_MODES, FACT_KINDS, MEMORY_TYPES, NOW_SECTIONS, RECALL_KINDS

ACTOR = "assistant"
CLIENT_TRAILER = "Desk-Client"
ROOT_FILES = ("AGENTS.md", "SOUL.md", "NOW.md", "MEMORY.md", "MISTAKES.md")
INSTRUCTIONS = (
    "This server is the assistant's desk: its identity and memory kept as a git repository of "
    "Markdown files. Call `context` (or the `wake_up` prompt) at the start of a session. Save a "
    "durable fact, preference or decision with `remember` (one fact per memory, a short "
    "description, triggers that would make it relevant); look things up with `recall`. Every "
    "write is one reviewed git commit made as the assistant; the write gate refuses session-only "
    "notes and duplicates, and its error says what to change. SOUL.md is the persona people own: "
    "it is read-only here.")

T = TypeVar("T")


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


Result = Annotated[CallToolResult, dict[str, Any]]
"""A tool's answer: the API result's `.to_json()` as structured content (validated against the
published output schema by the SDK) and the same JSON, compact, in one text block."""


def structured(data: dict[str, Any]) -> CallToolResult:
    """`data` once as structured content and once as compact JSON text (see docs/agents.md)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def tool_error(exc: DeskError) -> ToolError:
    """The refusal as the model should read it: what was wrong, then what to do."""
    text = exc.message
    if exc.hint:
        text += f"\nhint: {exc.hint}"
    return ToolError(f"{exc.status}: {text}\nNothing was written.")


def client_name(ctx: Context | None) -> str:
    """The MCP client's name (and version) from its `initialize`, else `unknown`."""
    try:
        info = ctx.session.client_params.client_info  # type: ignore[union-attr]
    except (AttributeError, ValueError):  # ValueError: the SDK's "Context is not available outside of a request"
        return "unknown"
    name = " ".join(str(getattr(info, "name", "") or "").split()) or "unknown"
    version = " ".join(str(getattr(info, "version", "") or "").split())
    return f"{name} {version}" if version else name


def tracing_installed(provider: object) -> bool:
    """Whether `provider` (OpenTelemetry's global tracer provider) is one someone installed, not
    the API's default stand-in, whose spans are all no-ops."""
    from opentelemetry.trace import ProxyTracerProvider  # the SDK's own dependency

    return not isinstance(provider, ProxyTracerProvider)


def drop_idle_tracing(server: MCPServer) -> None:
    """Take the SDK's OpenTelemetry middleware off `server` unless a tracer provider is installed.

    The SDK puts it first on every server (a span per message, "a no-op until an OTel exporter is
    installed"; its own comment says to drop it from the list to opt out). Without a provider it
    still builds each span's attributes and runs the tracing API per call: a share of a call's
    fixed cost when the caches are cold, as they are between an assistant's calls
    (docs/agents.md, Performance). With a provider installed (e.g. `opentelemetry-instrument desk
    serve`) it stays.
    """
    from opentelemetry.trace import get_tracer_provider

    try:
        from mcp.server._otel import OpenTelemetryMiddleware
    except ImportError:  # moved in a later SDK: leave the server as the SDK made it
        return
    if not tracing_installed(get_tracer_provider()):
        server.middleware[:] = [m for m in server.middleware if not isinstance(m, OpenTelemetryMiddleware)]


class TokenCheck:
    """The SDK's `TokenVerifier` for the one token `desk serve --http` requires."""

    def __init__(self, token: ServeToken) -> None:
        self._token = token

    async def verify_token(self, token: str) -> AccessToken | None:
        if not self._token.matches(token):
            return None
        return AccessToken(token=token, client_id="desk-serve", scopes=[])


def build_server(desk: Desk, *, name: str = "desk", user: str | None = None,
                 inline: bool = False, token: ServeToken | None = None,
                 url: str = "http://127.0.0.1") -> MCPServer:
    """An MCP server over `desk`: the tools, resources and prompt of docs/agents.md.

    `user` (a user id; None: the desk owner) is the one user scope the preference tools and the
    wake-up read use; the model cannot choose another. `inline`: run each desk call on the event
    loop's thread (one client: stdio) rather than on the one worker thread (HTTP). `token`: over
    HTTP, the bearer token every request must carry; `url`, where the server listens, is the
    token's issuer (the SDK's auth settings ask for one; desk publishes no OAuth metadata).
    """
    if token is None:
        server = MCPServer(name, instructions=INSTRUCTIONS)
    else:
        server = MCPServer(name, instructions=INSTRUCTIONS, token_verifier=TokenCheck(token),
                           auth=AuthSettings(issuer_url=url, resource_server_url=None))  # type: ignore[arg-type]
    drop_idle_tracing(server)
    # One thread runs every desk call: the recall cache (SQLite) kept warm on `desk` must stay
    # on the thread that opened it, and calls into one Desk object go one at a time. Inline,
    # that thread is the loop's, and a call cannot be interleaved with another (it never awaits).
    worker = None if inline else ThreadPoolExecutor(max_workers=1, thread_name_prefix="desk-serve")
    # Each write goes through a `with_trailers` copy of `desk`, and a copy shares only what `desk`
    # had computed before it was made. The `Git` object (which keeps the identity and settings
    # one `git config` read) is made here, no git run, so every copy shares it, as an in-process
    # Desk reuses its own: otherwise each write before the first read ran `git config` again.
    _ = desk.git  # a cached property: made once, here

    async def run(fn: Callable[[], T]) -> T:
        if worker is None:
            return fn()
        return await asyncio.wrap_future(worker.submit(fn))

    async def call(fn: Callable[[], T]) -> T:
        try:
            return await run(fn)
        except DeskError as exc:
            raise tool_error(exc) from None

    async def answer(fn: Callable[[], dict[str, Any]]) -> CallToolResult:
        return structured(await call(fn))

    def writer(ctx: Context) -> Desk:
        return desk.with_trailers({CLIENT_TRAILER: client_name(ctx)})

    # -- memories --------------------------------------------------------------------------------

    @server.tool()
    async def remember(name: str, body: str, type: MemoryType, description: str, ctx: Context,
                 triggers: list[str] | None = None, importance: int | None = None,
                 expires: str | None = None) -> Result:
        """Create or update the memory `name` (one durable fact) through the write gate; one commit.

        `type`: preference, decision, convention, pitfall, fact or reference. `description`: one
        line (at most 150 characters) the index shows. `triggers`: words or phrases whose mention
        should bring the memory's body into context. `importance` 1-5. `expires`: an ISO 8601 UTC
        time after which the memory is no longer injected. Remembering an existing name updates
        it; session-only notes and duplicates are refused with the reason.
        """
        return await answer(lambda: writer(ctx).remember(
            name, body, type=type, description=description, triggers=triggers or (),
            importance=importance, expires=expires, actor=ACTOR).to_json())

    @server.tool()
    async def forget(name: str, ctx: Context, reason: str | None = None) -> Result:
        """Delete the memory `name` and its index line in one commit (git history keeps it)."""
        return await answer(lambda: writer(ctx).forget(name, reason=reason, actor=ACTOR).to_json())

    @server.tool()
    async def list_memories(type: MemoryType | None = None) -> Result:
        """The memories: name, type, description (optionally of one type)."""
        return await answer(lambda: desk.list(type=type).to_json())

    @server.tool()
    async def show_memory(name: str) -> Result:
        """The memory `name`: its frontmatter fields and body."""
        return await answer(lambda: desk.show(name).to_json())

    # -- reading ---------------------------------------------------------------------------------

    @server.tool()
    async def recall(query: str, limit: int = 5, kind: RecallKind = "all") -> Result:
        """Search memories and archived conversations for `query` (read-only).

        `limit` 1-10; `kind`: memory, conversation or all. Each hit has its score and provenance.
        """
        return await answer(lambda: desk.recall(query, limit=limit, kind=kind).to_json())

    @server.tool()
    async def context(mode: ContextMode = "wake", query: str | None = None, budget: int | None = None,
                      journal_days: int | None = None, pending: bool = False) -> Result:
        """What to read. `wake` (the start of a session): AGENTS.md, SOUL.md, NOW.md, MISTAKES.md,
        USER.md, the memory index, recent facts, and with `query` the memories it triggers.
        `spot` (a key turn during long work): NOW.md, MISTAKES.md and the newest `journal_days`
        journal days. `pending`: also your review-mode proposals a person has not accepted yet,
        each marked as not in memory. `markdown` is the text to read; what a budget trimmed is named."""
        def run() -> dict[str, Any]:
            result = desk.context(mode=mode, query=query, budget=budget, journal_days=journal_days,
                                  user=user, pending=pending)
            return {**result.to_json(), "markdown": result.text()}
        return await answer(run)

    # -- review mode (read-only: accepting or rejecting is a person's, never a tool) --------------

    @server.tool()
    async def review_list(rejected: bool = False) -> Result:
        """Your writes waiting for a person's review (review mode: not in memory until accepted):
        each proposal's id, subject, date and files, oldest first. `rejected`: the rejected ones
        too, with the reason (do not propose them again)."""
        return await answer(lambda: desk.proposals(rejected=rejected).to_json())

    @server.tool()
    async def review_show(proposal: str) -> Result:
        """Pending proposal `proposal` (its id from review_list): the diff from memory as it is now
        and the proposed files' text."""
        return await answer(lambda: desk.proposal(proposal).to_json())

    # -- working notes -----------------------------------------------------------------------------

    @server.tool()
    async def now_show(section: Section | None = None) -> Result:
        """NOW.md, the working note (or one section: doing, blocked, next, reminders)."""
        return await answer(lambda: desk.now_show(section=section).to_json())

    @server.tool()
    async def now_set(text: str, ctx: Context, section: Section | None = None) -> Result:
        """Replace one section of NOW.md (doing, blocked, next, reminders), or the whole note; one commit."""
        return await answer(lambda: writer(ctx).now_set(text, section=section, actor=ACTOR).to_json())

    @server.tool()
    async def now_append(text: str, ctx: Context, section: Section = "doing") -> Result:
        """Add `text` as an item to a section of NOW.md (default: doing); one commit."""
        return await answer(lambda: writer(ctx).now_append(text, section=section, actor=ACTOR).to_json())

    @server.tool()
    async def mistake_add(what: str, context: str, cause: str, avoid: str, ctx: Context,
                    memory: str | None = None) -> Result:
        """Record a reusable lesson in MISTAKES.md: what went wrong, in what context, why, and how
        to avoid it (optionally the memory it relates to); one commit."""
        return await answer(lambda: writer(ctx).mistake_add(what=what, context=context, cause=cause,
                                                    avoid=avoid, memory=memory, actor=ACTOR).to_json())

    @server.tool()
    async def fact_add(text: str, kind: FactKind, importance: int, key: str | None = None) -> Result:
        """Log a structured fact (kind: decision, convention, pitfall, outcome; importance 1-5;
        optional `key` naming what it is about) as raw evidence the nightly digest distils."""
        return await answer(lambda: desk.fact_add(text, kind=kind, importance=importance, key=key,
                                          actor=ACTOR).to_json())

    @server.tool()
    async def archive_append(kind: str, content: str, session: str | None = None) -> Result:
        """Append one event (e.g. kind `progress`, `tool`, `failure`) to the append-only archive."""
        return await answer(lambda: desk.archive_append(kind, content, session=session, actor=ACTOR).to_json())

    # -- preferences (the server's one user scope) ---------------------------------------------------

    @server.tool()
    async def pref_set(key: str, value: str, ctx: Context, expires: str | None = None) -> Result:
        """Set the user's preference `key` (e.g. `response.language`) to `value`: created,
        updated (a new revision) or unchanged (no commit); one commit. Keys are lowercase words
        joined by `.`, `_` or `-`; a key holds one value, a new value replaces the old one.
        `expires`: an ISO 8601 UTC time after which the preference no longer applies."""
        return await answer(lambda: writer(ctx).pref_set(key, value, user=user, expires=expires,
                                                         source="agent", actor=ACTOR).to_json())

    @server.tool()
    async def pref_list(all: bool = False) -> Result:
        """The user's preferences in force now (with `all`, expired ones too), by key (read-only)."""
        return await answer(lambda: desk.pref_list(user=user, all=all).to_json())

    # -- resources and the prompt --------------------------------------------------------------------

    def read_root(file: str) -> str:
        try:
            return desk.path(file).read_text("utf-8")
        except FileNotFoundError:
            return ""
        except (OSError, UnicodeDecodeError) as exc:
            raise ResourceError(f"cannot read {file}: {exc}") from None

    async def root_resource(file: str) -> str:
        return await run(functools.partial(read_root, file))

    for file in ROOT_FILES:
        server.resource(f"desk://{file}", name=file, mime_type="text/markdown",
                        description=f"The desk's {file}")(functools.partial(root_resource, file))

    @server.resource("desk://memory/{name}", mime_type="text/markdown",
                     description="The memory file memory/NAME.md")
    async def memory_resource(name: str) -> str:
        return await call(lambda: desk.show(name).text()) + "\n"

    @server.prompt()
    async def wake_up(query: str | None = None) -> str:
        """Load the desk at the start of a session (`desk context`)."""
        return await call(lambda: desk.context(query=query, user=user).text())

    return server


def base_url(http: tuple[str, int]) -> str:
    """`http://HOST:PORT` for a (host, port) the server listens on (an IPv6 host in brackets)."""
    host = f"[{http[0]}]" if ":" in http[0] else http[0]
    return f"http://{host}:{http[1]}"


def serve(desk: Desk, *, http: tuple[str, int] | None = None, user: str | None = None,
          token: ServeToken | None = None) -> None:
    """Run the server until the client hangs up: over stdio (desk calls inline on the event
    loop's thread, the wire read and written on the loop when it is a pipe: `desk.serve.wire`), or
    streamable HTTP at `http` (on one worker thread), each request required to carry `token`; its
    preference tools and wake-up read are `user`'s (None: the desk owner)."""
    if http is not None:
        if token is None:
            raise ValueError("desk serve over HTTP needs its bearer token")
        server = build_server(desk, user=user, token=token, url=base_url(http))
        server.run("streamable-http", host=http[0], port=http[1])
        return
    server = build_server(desk, user=user, inline=True)
    with claimed_pipes() as wire:
        if wire is None:  # a terminal or a file: the SDK's own stdio streams
            anyio.run(serve_sdk_stdio, server, backend="asyncio")
        else:
            anyio.run(serve_wire, server, *wire, backend="asyncio")


async def serve_wire(server: MCPServer, wire_in: int, wire_out: int) -> None:
    """`server` over the pipes `wire_in` and `wire_out` (non-blocking), as `MCPServer.run("stdio")`
    serves the SDK's stdio streams (its `run_stdio_async`), through its low-level server."""
    outgoing = Outgoing(wire_out)
    await _serve_streams(server, Incoming(wire_in, refuse=outgoing), outgoing)


async def serve_sdk_stdio(server: MCPServer) -> None:
    """`server` over the SDK's own stdio streams, as `MCPServer.run("stdio")` serves them."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await _serve_streams(server, read_stream, write_stream)


async def _serve_streams(server: MCPServer, read_stream: ReadStream[SessionMessage | Exception],
                         write_stream: WriteStream[SessionMessage]) -> None:
    """Serve until the end of input, and past it until every call read is answered (`Calls`)."""
    lowlevel = server._lowlevel_server  # mcp 2.x: no public name; MCPServer.run cannot take streams
    calls = Calls()
    await lowlevel.run(calls.reading(read_stream), calls.answering(write_stream),
                       lowlevel.create_initialization_options())
