"""`python -m desk.cli.claude_hook archive|prompt --desk PATH [--project P] [--user U]`: the
Claude Code hooks `desk setup claude-code` writes.

Claude Code gives a hook its event as JSON on stdin. `archive` (PreCompact, SessionEnd) imports
the session's transcript (`transcript_path`) into the desk's archive, as `desk import claude-code`
does: each message once, however often it runs. `prompt` (UserPromptSubmit) prints the memories
whose triggers the prompt (`prompt`) hits, which Claude Code adds to the model's context; nothing
when none is hit. A refusal is desk's own message on stderr and exit 1, which Claude Code shows
and goes on (exit 2 would block the prompt).
"""

from __future__ import annotations

import argparse
import json
import sys

from desk.errors import DeskError


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m desk.cli.claude_hook")
    parser.add_argument("event", choices=("archive", "prompt"))
    parser.add_argument("--desk", required=True)
    parser.add_argument("--project")
    parser.add_argument("--user")
    args = parser.parse_args(argv)
    try:
        hook = json.loads(sys.stdin.buffer.read().decode("utf-8", "replace") or "{}")
        if not isinstance(hook, dict):
            raise ValueError("not a JSON object")
    except ValueError as exc:
        print(f"desk: {args.event} hook: stdin is not Claude Code's hook input ({exc})", file=sys.stderr)
        return 1
    from desk import api

    try:
        desk = api.open(args.desk)
        if args.event == "archive":
            if not hook.get("transcript_path"):
                return 0  # a session with no transcript yet: nothing to archive
            desk.import_("claude-code", str(hook["transcript_path"]), project=args.project)
            return 0
        if not str(hook.get("prompt") or "").strip():
            return 0
        found = desk.context(query=str(hook["prompt"]), project=args.project, user=args.user)
        recalled = [s.text for s in found.value.sections if s.key == "recalled" and s.text.strip()]
        if found.value.recalled and recalled:
            print(recalled[0].rstrip("\n"))
        return 0
    except DeskError as exc:
        print(f"desk: {args.event} hook: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
