"""The commit-msg hook's first look at a message, in a process that imports only the scanner.

Every message is scanned for secrets (a token in a subject or a trailer is pushed with the
commit). The hook's shell passes the plainest messages itself (hooks/desk-hook.sh); for the rest
Python starts, and the full check (desk.guard.hooks.run_commit_msg: the allow-list, the staged
paths, the message rules) loads git's wrapper and the rules. Most messages need none of it: no
secret, and no trailer the message rules read.
"""

from __future__ import annotations


def needs_full_check(message: str) -> bool:
    """Whether `message` holds a secret (before the allow-list, which only the full check reads)
    or could carry a Desk-Actor or Desk-Op trailer, which the message rules read: any mention of
    `desk` in any case (U+212A KELVIN SIGN lowercases to k, so it counts)."""
    from desk.text.secrets import scan

    return "desk" in message.lower() or bool(scan(message))
