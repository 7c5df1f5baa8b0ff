"""`desk serve`: the desk as an MCP server (tools, resources, a prompt) for assistants.

Built on the official MCP Python SDK (the optional `mcp` extra: `pip install 'desk[mcp]'`), and,
like the CLI, a thin rendering of the public API (`desk.api.Desk`): it imports nothing else of
desk. `desk.serve.server` imports the SDK; this package's top does not, so the CLI can say how to
install it when it is missing.
"""

from __future__ import annotations

MCP_MISSING_HINT = "install the MCP extra: pip install 'desk[mcp]' (or pip install 'mcp>=2.3,<3')"
