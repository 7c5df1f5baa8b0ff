"""The commit-msg hook's check of a message: a first look that imports only the scanner, then the
full check (`message_findings`), which most messages never need."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from desk.errors import Finding
    from desk.storage.git import Git


SCISSORS = " ------------------------ >8 ------------------------"


def committed_part(message: str) -> str:
    """What git keeps of a message file: everything above the scissors line (core.commentChar, `#` by
    default)."""
    lines = message.split("\n")
    for i, line in enumerate(lines):
        if line[1:] == SCISSORS and line[:1] not in ("", " "):
            return "\n".join(lines[:i])
    return message


def needs_full_check(message: str) -> bool:
    """Whether `message` holds a secret or could carry a Desk-Actor or Desk-Op trailer (any `desk` in
    any case; U+212A KELVIN SIGN lowercases to k)."""
    from desk.text.secrets import scan

    message = committed_part(message)
    return "desk" in message.lower() or bool(scan(message))


def message_findings(root: Path, message: str) -> list[Finding]:
    """The secret scanner over the whole message (the allow-list of the desk.json being committed, else
    HEAD's) and the message rules against the staged paths."""
    import datetime as dt

    from desk.gate.rules import check_message, message_secret_verdict
    from desk.storage.git import parse_trailers, staged_git

    findings: list[Finding] = []
    message = committed_part(message)
    secrets = message_secret_verdict(message)
    if secrets.findings:
        findings += secrets.findings_at(_committed_allow(staged_git(root)), dt.datetime.max)
    if {key.lower() for key in parse_trailers(message)} & {"desk-actor", "desk-op"}:
        findings += check_message(message, staged_git(root).worktree.staged_paths())
    return findings


def _committed_allow(git: Git) -> frozenset[str]:
    """The allowed secret fingerprints of the desk.json being committed (else HEAD's)."""
    from desk.gate.checks import config_values
    from desk.layout import CONFIG_PATH

    blob = git.worktree.ls_staged_files([CONFIG_PATH]).get(CONFIG_PATH)
    data = git.objects.read_blobs([blob]).get(blob) if blob else git.objects.blob_at("HEAD", CONFIG_PATH)
    found = config_values(data)
    return found[1] if found else frozenset()
