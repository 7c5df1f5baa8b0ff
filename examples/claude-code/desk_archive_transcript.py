#!/usr/bin/env python3
"""Claude Code hook (Stop, PreCompact): archive the session transcript's new lines in the desk.

Claude Code hands the hook a JSON object on stdin with `session_id`, `transcript_path` and
`hook_event_name`. The transcript is a JSONL file that grows during the session; this appends
the lines not archived yet to the desk's append-only archive (`desk archive append`, kind
`transcript`, one event per chunk under the archive's record limit), each event's `meta`
saying which lines it holds, so running it again archives nothing twice. The desk is $DESK_HOME
(or the desk enclosing the working directory). `desk checkpoint` (or the nightly `desk digest`)
commits the archive's growth.

A hook must never break the session: problems go to stderr and the exit code stays 0.
"""

from __future__ import annotations

import json
import subprocess
import sys

KIND = "transcript"
CHUNK_BYTES = 512 * 1024  # well under the archive's 1 MiB record limit


def desk(*args: str, text: str | None = None) -> str:
    return subprocess.run(["desk", *args], input=text, capture_output=True, text=True, check=True).stdout


def archived_lines(session: str) -> int:
    """How many transcript lines of `session` the archive already holds."""
    events = json.loads(desk("archive", "list", "--session", session, "--kind", KIND, "-n", "1", "--json"))
    last = events.get("events") or []
    return int(last[-1]["meta"].get("lines_to", 0)) if last else 0


def chunks(lines: list[str], first: int) -> list[tuple[int, int, str]]:
    """(first line, last line, text) chunks of at most CHUNK_BYTES (a longer line goes alone)."""
    out: list[tuple[int, int, str]] = []
    start, size, block = first, 0, []
    for n, line in enumerate(lines, first + 1):
        if block and size + len(line.encode()) > CHUNK_BYTES:
            out.append((start + 1, n - 1, "\n".join(block)))
            start, size, block = n - 1, 0, []
        block.append(line)
        size += len(line.encode()) + 1
    if block:
        out.append((start + 1, first + len(lines), "\n".join(block)))
    return out


def main() -> int:
    try:
        hook = json.load(sys.stdin)
        session, path = str(hook["session_id"]), str(hook["transcript_path"])
        event = str(hook.get("hook_event_name", "Stop"))
        with open(path, encoding="utf-8") as file:
            lines = file.read().splitlines()
        done = archived_lines(session)
        for first, last, text in chunks(lines[done:], done):
            desk("archive", "append", "-", "--kind", KIND, "--session", session, "--actor", "claude-code",
                 "--meta", f"hook={event}", "--meta", f"transcript={path}",
                 "--meta", f"lines_from={first}", "--meta", f"lines_to={last}", text=text)
    except (OSError, ValueError, KeyError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or exc
        print(f"desk_archive_transcript: {detail}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
