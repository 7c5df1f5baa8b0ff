"""Every committed byte is scanned for secrets (issue 15.4): every field of an archive event,
archive growth appended with redaction off, every text file whatever its folder, and file names.
A secret reaches a commit only when the allow-list in .system/desk.json names its fingerprint.

Secrets are built by concatenation so this repository never carries one literally.
"""

from __future__ import annotations

import json
from pathlib import Path

from desk.layout import DeskFolder
from desk.text.secrets import scan
from tests.conftest import DeskRunner, git
from tests.guard_helpers import add_commit, write

TOKEN = "gh" + "p_" + "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zCaB3d"
AWS = "AKIA" + "IOSFODNN7EXAMPLQ"


def _archive_bytes(desk: DeskFolder) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((desk.root / ".system/archive").glob("*.jsonl")))


def test_ids_holding_a_secret_are_refused_and_nothing_is_written(desk: DeskFolder, run: DeskRunner) -> None:
    for args in (["--session", TOKEN], ["--actor", AWS], ["--session", TOKEN, "--no-redact"]):
        result = run("archive", "append", "-k", "inbound", *args, "hello")
        assert result.exit_code == 2, result.output
        assert "looks like a secret" in result.output and TOKEN not in result.output
    assert _archive_bytes(desk) == b""


def test_meta_and_payload_keys_are_redacted_like_values(desk: DeskFolder, run: DeskRunner) -> None:
    result = run("archive", "append", "-k", "inbound", "--meta", f"{TOKEN}=v",
                 "--payload", json.dumps({AWS: 1, "nested": {TOKEN: [TOKEN]}}), "hello")
    assert result.exit_code == 0, result.output
    stored = _archive_bytes(desk).decode()
    assert TOKEN not in stored and AWS not in stored
    assert "[REDACTED:github-token]" in stored and "[REDACTED:aws-access-key-id]" in stored


def _set_allow(desk: DeskFolder, fingerprints: list[str]) -> None:
    config = json.loads((desk.root / ".system/desk.json").read_text())
    config.setdefault("secrets", {})["allow"] = fingerprints
    write(desk.root, ".system/desk.json", json.dumps(config, indent=2) + "\n")
    assert add_commit(desk.root, "the allow-list", ".system/desk.json").returncode == 0


def test_unredacted_secrets_reach_the_archive_and_a_commit_only_when_allowed(desk: DeskFolder,
                                                                           run: DeskRunner) -> None:
    refused = run("archive", "append", "-k", "inbound", "--no-redact", f"the key is {AWS}")
    assert refused.exit_code == 3 and "secrets.allow" in refused.output, refused.output
    assert AWS not in refused.output and _archive_bytes(desk) == b""  # refused at append, not later
    fingerprint = scan(AWS)[0].fingerprint
    _set_allow(desk, [fingerprint])
    assert run("archive", "append", "-k", "inbound", "--no-redact", f"the key is {AWS}").exit_code == 0
    assert AWS in _archive_bytes(desk).decode()
    _set_allow(desk, [])  # allowed when appended, not any more: the checkpoint's scan refuses it
    head = git(desk.root, "rev-parse", "HEAD")
    blocked = run("checkpoint")
    assert blocked.exit_code == 3, blocked.output
    assert ".system/archive/" in blocked.output and ":1: secret: aws-access-key-id" in blocked.output
    assert git(desk.root, "rev-parse", "HEAD") == head
    _set_allow(desk, [fingerprint])
    assert run("checkpoint").exit_code == 0


def test_every_text_file_and_every_file_name_is_scanned_by_the_hook(desk: DeskFolder) -> None:
    cases = {
        "conversations/chat.md": f"# chat\n\nuser: my token is {TOKEN}\n",
        "SOUL.md": (desk.root / "SOUL.md").read_text() + f"\nkey {AWS}\n",
        "AGENTS.md": (desk.root / "AGENTS.md").read_text() + f"\npassword: {'Tr0ub4' + 'dor&3xK!'}\n",
        f"journal/{TOKEN}.md": "# a journal day\n",
    }
    for rel, text in cases.items():
        write(desk.root, rel, text)
        proc = add_commit(desk.root, f"add {rel}", rel)
        assert proc.returncode != 0, rel
        assert "secret" in proc.stderr and rel.split("/")[0] in proc.stderr, proc.stderr
        if TOKEN not in rel:  # a file name is the finding's location: it is named as it is
            assert TOKEN not in proc.stderr and AWS not in proc.stderr
        git(desk.root, "reset", "-q", "--", rel)
        if rel in ("SOUL.md", "AGENTS.md"):
            git(desk.root, "checkout", "-q", "--", rel)
        else:
            Path(desk.root, rel).unlink()
