#!/usr/bin/env python3
"""Claude Code hook (Stop, PreCompact): archive the session transcript in the desk.

Claude Code hands the hook a JSON object on stdin with `session_id`, `transcript_path` and
`hook_event_name`. The transcript is a JSONL file that grows during the session; this runs desk's
importer on it (`desk import claude-code <transcript>`), which appends each user and assistant
message as one archive record (speaker, time, session), skipping the ones archived before, so
running it at every Stop archives nothing twice. The desk is $DESK_HOME (or the desk enclosing the
working directory). `desk checkpoint` (or the nightly `desk digest`) commits the archive's growth.

A hook must never break the session: problems go to stderr and the exit code stays 0. When desk
refuses, its own message (what is wrong, and its hint) is what is shown.
"""

from __future__ import annotations

import json
import subprocess
import sys


def main() -> int:
    try:
        hook = json.load(sys.stdin)
        path = str(hook["transcript_path"])
        done = subprocess.run(["desk", "import", "claude-code", path, "--no-progress"],
                              capture_output=True, text=True)
    except (OSError, ValueError, KeyError) as exc:
        print(f"desk_archive_transcript: {exc}", file=sys.stderr)
        return 0
    if done.returncode != 0:  # desk says what is wrong on stderr ("desk: error: ...", then its hint)
        detail = done.stderr.strip() or f"desk import exited with status {done.returncode}"
        print(f"desk_archive_transcript: {detail}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
