"""`desk serve` (the MCP server) and `desk memory-tool` (one memory-tool call): the agent's side."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from desk.cli.output import invocation, print_json, project_option, user_option
from desk.errors import DeskError, UsageError

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _loopback(value: str) -> tuple[str, int]:
    """HOST:PORT with a loopback host (the token travels in clear HTTP; the MCP SDK guards exactly
    these hosts against DNS rebinding)."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--http must be HOST:PORT, e.g. 127.0.0.1:8765, not {value!r}")
    if host not in LOOPBACK:
        raise UsageError(f"--http host {host!r} is not a loopback address",
                         hint="the server speaks plain HTTP: listen on 127.0.0.1, ::1 or localhost")
    return host, int(port)


@click.command("serve")
@click.option("--http", "http", metavar="HOST:PORT",
              help="Serve streamable HTTP at http://HOST:PORT/mcp (loopback only) instead of stdio; "
              "every request needs the header `Authorization: Bearer TOKEN`.")
@click.option("--token-file", type=click.Path(path_type=Path), metavar="PATH",
              help="With --http: the token is the one line of PATH (mode 0600) [default: "
              ".git/desk-serve-token, made on the first start].")
@user_option
@project_option
def serve_command(http: str | None, token_file: Path | None) -> None:
    """Run desk as an MCP server (stdio by default) for assistants such as Claude Code.

    Tools: remember, forget, restore, recall, context, list_memories, show_memory, now_show,
    now_set, now_append, mistake_add, fact_add, archive_append, pref_set, pref_get, pref_list,
    pref_delete, pref_history, review_list, review_show, conflicts_list, conflicts_show (docs/agents.md).
    Resources: desk://AGENTS.md, SOUL.md, NOW.md, MEMORY.md, MISTAKES.md and desk://memory/{name};
    the prompt wake_up. Writes are commits by the assistant naming the client, through the write
    gate. A tool's `project`/`user` argument picks its scope; when a call names none, --project
    (else desk-wide) and --user (else the desk owner) do. An argument a tool does not take is
    refused by name. Over stdio the server exits at the end of its input, once every
    request it read is answered. Over --http a request without the token is refused (401) and
    touches nothing; where the token is is printed on stderr at start. Needs the `mcp` extra:
    pip install 'desk[mcp]'.
    """
    address = _loopback(http) if http is not None else None
    if token_file is not None and address is None:
        raise UsageError("--token-file is for --http (a stdio server is reached by its own client only)")
    desk = invocation().desk()
    try:
        from desk.serve.server import base_url, serve
    except ImportError as exc:
        from desk.serve import MCP_MISSING_HINT

        raise DeskError(f"desk serve needs the MCP Python SDK, which is not installed ({exc})",
                        hint=MCP_MISSING_HINT) from None
    token = None
    if address is not None:
        from desk.serve.token import serve_token

        token = serve_token(desk.git_dir, token_file)
        made = " (made now, mode 0600)" if token.created else ""
        click.echo(f"desk serve: streamable HTTP at {base_url(address)}/mcp\n"
                   f"each request needs the header `Authorization: Bearer TOKEN`, TOKEN the line of "
                   f"{token.path}{made}", err=True)
    import logging  # the SDK logs each failed call at INFO; rich (when installed) would box it

    plain = logging.StreamHandler()  # stderr, set before the SDK's own basicConfig (then a no-op)
    plain.setFormatter(logging.Formatter("desk serve: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[plain])
    serve(desk, http=address, user=invocation().user, project=invocation().project, token=token)


@click.command("memory-tool")
@click.option("--root", default="/memories", show_default=True, metavar="DIR",
              help="The directory the model sees (the memory tool's /memories).")
@click.option("--client", default="memory-tool", show_default=True, metavar="NAME",
              help="The harness's name, recorded in each commit's Desk-Client trailer.")
@project_option
def memory_tool_command(root: str, client: str) -> None:
    """Run one Anthropic memory-tool call (view, create, str_replace, insert, delete, rename).

    Reads the tool_use input as JSON on stdin ({"command": "view", "path": "/memories"}) and
    prints the tool result as JSON: {"content": TEXT, "is_error": BOOL}. Each change is one commit
    by the assistant through the write gate; a refusal is a result with is_error true (exit 0:
    the text goes back to the model). With --project, /memories is that project's memory folder.
    Exit 2 when stdin is not one JSON object.
    """
    import json

    from desk.memory_tool import MemoryTool

    data = sys.stdin.buffer.read()
    try:
        call = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"stdin is not a JSON tool input: {exc}",
                         hint='pipe one object, e.g. {"command": "view", "path": "/memories"}') from None
    if not isinstance(call, dict):
        raise UsageError("stdin must be one JSON object (the tool_use block's `input`)",
                         hint='e.g. {"command": "view", "path": "/memories"}')
    result = MemoryTool(invocation().desk(), root=root, client=client, project=invocation().project).run(call)
    print_json(result.to_json())


COMMANDS = [serve_command, memory_tool_command]
