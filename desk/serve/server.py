"""The MCP server: each tool one call into `desk.api.Desk`, its result the call's `.to_json()`.

What the model may do is deliberately narrower than the CLI (docs/agents.md): every write is made
as `Desk-Actor: assistant` and names the MCP client in a `Desk-Client` trailer; there is no
`resolve` (adjudication is a person's), no `migrate`, no hook management, no SOUL.md writes, and
no provenance fields (`source_event`, `evidence`, an event's or a preference's `at`, `meta`): the
harness attaches provenance, the model cannot invent it. The tools themselves are in
`desk.serve.tools`; whose scope a tool reads or writes is its `project`/`user` argument, else the
server's (`desk serve --project/--user`). A refusal (the gate, a bad
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
from typing import Any, TypeVar

import anyio
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp.types import CallToolResult, TextContent

from desk.api import Desk
from desk.errors import DeskError
from desk.serve.token import ServeToken
from desk.serve.tools import agent_tools, strict
from desk.serve.wire import Calls, Incoming, Outgoing, claimed_pipes

CLIENT_TRAILER = "Desk-Client"
ROOT_FILES = ("AGENTS.md", "SOUL.md", "NOW.md", "MEMORY.md", "MISTAKES.md")
INSTRUCTIONS = (
    "This server is the assistant's desk: its identity and memory kept as a git repository of "
    "Markdown files. Call `context` (or the `wake_up` prompt) at the start of a session. Save a "
    "durable fact, preference or decision with `remember` (one fact per memory, a short "
    "description, triggers that would make it relevant; to update one, remember its name again "
    "with only what changes); look things up with `recall`. Every "
    "write is one reviewed git commit made as the assistant; the write gate refuses session-only "
    "notes and duplicates, and its error says what to change. SOUL.md is the persona people own: "
    "it is read-only here.")

T = TypeVar("T")


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


def build_server(desk: Desk, *, name: str = "desk", user: str | None = None, project: str | None = None,
                 inline: bool = False, token: ServeToken | None = None,
                 url: str = "http://127.0.0.1") -> MCPServer:
    """An MCP server over `desk`: the tools, resources and prompt of docs/agents.md.

    `user` (a user id; None: the desk owner) and `project` (None: desk-wide) are the scopes a
    tool uses when its call names none. `inline`: run each desk call on the event
    loop's thread (one client: stdio) rather than on the one worker thread (HTTP). `token`: over
    HTTP, the bearer token every request must carry; `url`, where the server listens, is the
    token's issuer (the SDK's auth settings ask for one; desk publishes no OAuth metadata).
    """
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

    tools = [strict(Tool.from_function(fn)) for fn in agent_tools(desk, answer, writer, project=project, user=user)]
    if token is None:
        server = MCPServer(name, instructions=INSTRUCTIONS, tools=tools)
    else:
        server = MCPServer(name, instructions=INSTRUCTIONS, tools=tools, token_verifier=TokenCheck(token),
                           auth=AuthSettings(issuer_url=url, resource_server_url=None))  # type: ignore[arg-type]
    drop_idle_tracing(server)

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
        return await call(lambda: desk.context(query=query, user=user, project=project).text())

    return server


def base_url(http: tuple[str, int]) -> str:
    """`http://HOST:PORT` for a (host, port) the server listens on (an IPv6 host in brackets)."""
    host = f"[{http[0]}]" if ":" in http[0] else http[0]
    return f"http://{host}:{http[1]}"


def serve(desk: Desk, *, http: tuple[str, int] | None = None, user: str | None = None,
          project: str | None = None, token: ServeToken | None = None) -> None:
    """Run the server until the client hangs up: over stdio (desk calls inline on the event
    loop's thread, the wire read and written on the loop when it is a pipe: `desk.serve.wire`), or
    streamable HTTP at `http` (on one worker thread), each request required to carry `token`; its
    tools' default scopes are `user`'s (None: the desk owner) and `project`'s (None: desk-wide)."""
    if http is not None:
        if token is None:
            raise ValueError("desk serve over HTTP needs its bearer token")
        server = build_server(desk, user=user, project=project, token=token, url=base_url(http))
        server.run("streamable-http", host=http[0], port=http[1])
        return
    server = build_server(desk, user=user, project=project, inline=True)
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
