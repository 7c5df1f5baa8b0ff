"""Talk to a real `desk serve` process with the MCP SDK's own client (stdio or streamable HTTP)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
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
