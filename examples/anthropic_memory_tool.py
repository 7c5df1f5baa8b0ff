"""Anthropic's memory tool (memory_20250818) backed by a desk, replayed offline.

With the Messages API, you declare the client-side tool `{"type": "memory_20250818", "name":
"memory"}`; the model answers with `tool_use` blocks such as `{"command": "view", "path":
"/memories"}`, your harness runs each one and sends back a `tool_result`. Here the harness runs
them with `desk.memory_tool.MemoryTool`, so every change the model makes is one reviewed git commit
through desk's write gate. The model's turns below are a recorded sequence, so this runs with no
key and no network: `python examples/anthropic_memory_tool.py [DESK_PATH]`.

Where the live call would go (with the `anthropic` package and a key):

    response = client.beta.messages.create(
        model=MODEL, max_tokens=2048, messages=messages,
        tools=[{"type": "memory_20250818", "name": "memory"}],
        betas=["context-management-2025-06-27"])
    uses = [block for block in response.content if block.type == "tool_use"]
    # run each with tool.run(block.input), append the results as the next user turn, repeat
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import desk
from desk.memory_tool import MemoryTool

REPORT_STYLE = """---
name: report-style
description: Report language and length preference (user correction)
type: preference
triggers: [report, writing]
---
Reports must be written in Chinese.
"""

# What the model sent, turn by turn, in a recorded session: the user said "write reports in
# Chinese from now on, and keep them short".
RECORDED_TOOL_USES = [
    {"id": "toolu_01", "input": {"command": "view", "path": "/memories"}},
    {"id": "toolu_02", "input": {"command": "create", "path": "/memories/report-style.md",
                                 "file_text": "Reports in Chinese."}},  # no frontmatter: refused
    {"id": "toolu_03", "input": {"command": "create", "path": "/memories/report-style.md",
                                 "file_text": REPORT_STYLE}},
    {"id": "toolu_04", "input": {"command": "str_replace", "path": "/memories/report-style.md",
                                 "old_str": "written in Chinese.",
                                 "new_str": "written in Chinese; keep the body under 500 characters."}},
    {"id": "toolu_05", "input": {"command": "view", "path": "/memories/report-style.md"}},
    {"id": "toolu_06", "input": {"command": "create", "path": "/memories/SOUL.md",
                                 "file_text": "I am terse."}},  # people own SOUL.md: refused
    {"id": "toolu_07", "input": {"command": "view", "path": "/memories/../.git/config"}},  # refused
    {"id": "toolu_08", "input": {"command": "view", "path": "/memories"}},
]


def main(root: Path) -> None:
    the_desk = desk.open(root) if (root / ".system").is_dir() else desk.init(root)
    tool = MemoryTool(the_desk)
    for use in RECORDED_TOOL_USES:
        result = tool.run(use["input"])
        block = result.tool_result(use["id"])  # what goes back to the model in the next request
        status = "error" if block.get("is_error") else "ok"
        print(f"{use['id']} {use['input']['command']} {use['input'].get('path', '')}: {status}")
        print("  " + result.content.replace("\n", "\n  "))
    print("\naudit trail (git log):")
    for commit in the_desk.log(limit=3).to_json()["commits"]:
        print(f"  {commit['subject']}  [{', '.join(f'{k}: {v[0]}' for k, v in commit['trailers'].items())}]")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp) / "desk")
