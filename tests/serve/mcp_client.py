"""Talk to a real `desk serve` process with the MCP SDK's own client (stdio or streamable HTTP)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession, Implementation, StdioServerParameters
from mcp.client.stdio import stdio_client


def server_env() -> dict[str, str]:
    """The test's environment for the server: HOME, git config and identity come from the test."""
    return {k: v for k, v in os.environ.items()
            if k in ("HOME", "XDG_CONFIG_HOME", "PATH") or k.startswith(("GIT_", "DESK_"))}


@asynccontextmanager
async def stdio_session(root: Path, client: str = "test-client",
                        options: tuple[str, ...] = ()) -> AsyncIterator[ClientSession]:
    """An initialised session with `python -m desk --desk ROOT [OPTIONS] serve`, the installed server."""
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "desk", "--desk", str(root), *options, "serve"], env=server_env())
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=Implementation(name=client, version="1.0")) as session:
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call `tool`; its structured result (the API result's `.to_json()`); fail on a tool error."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert len(result.content) == 1
    text = result.content[0].text  # type: ignore[union-attr]
    assert json.loads(text) == result.structured_content  # the text block carries the same JSON,
    assert text == json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))  # compact
    return result.structured_content


@contextmanager
def http_server(root: Path, *options: str) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """`python -m desk --desk ROOT serve --http 127.0.0.1:PORT [OPTIONS]` on a free port, once it
    accepts connections: (port, process); stopped on exit."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "desk", "--desk", str(root), "serve", "--http",
                             f"127.0.0.1:{port}", *options], env=server_env(), stderr=subprocess.PIPE)
    try:
        for _ in range(400):  # wait for the port to accept (bounded; not a timing assertion)
            if proc.poll() is not None:
                break
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield port, proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


@asynccontextmanager
async def http_session(port: int, token: str | None) -> AsyncIterator[ClientSession]:
    """An initialised session with the server at 127.0.0.1:PORT, sending `Authorization: Bearer
    TOKEN` (none when `token` is None), as docs/agents.md tells a client to."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with httpx2.AsyncClient(headers=headers) as client:
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session
