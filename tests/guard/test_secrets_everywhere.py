"""Every committed byte is scanned for secrets (issue 15.4): every field of an archive event,
archive growth appended with redaction off, every text file whatever its folder, file names, and
(issue 27.2) every commit message, by the commit-msg hook and before every desk commit.
A secret reaches a commit only when the allow-list in .system/desk.json names its fingerprint.

Secrets are built by concatenation so this repository never carries one literally.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from desk.layout import DeskFolder
from desk.text.secrets import scan
from tests.conftest import DeskRunner, git
from tests.guard_helpers import add_commit, commit, git_env, sh, write

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


# -- commit messages (issue 27.2): the commit-msg hook and every desk commit scan the whole message --

def test_the_commit_msg_hook_refuses_a_secret_anywhere_in_the_message(desk: DeskFolder) -> None:
    write(desk.root, "journal/2026-01-02.md", "# a journal day\n")
    sh(desk.root, "add", "journal/2026-01-02.md")
    head = git(desk.root, "rev-parse", "HEAD")
    for message in (f"subject {TOKEN}", f"subject\n\nthe body has {AWS} in it",
                    f"subject\n\nDesk-Reason: {TOKEN}", f"subject with _{TOKEN}",
                    "subject\n\nAuthorization: Basic " + base64.b64encode(b"admin:S3cr" b"etP4ss!").decode()):
        proc = commit(desk.root, message)
        assert proc.returncode != 0, message
        assert "commit message:" in proc.stderr and ": secret: " in proc.stderr, proc.stderr
        assert TOKEN not in proc.stderr and AWS not in proc.stderr
        assert git(desk.root, "rev-parse", "HEAD") == head
    assert commit(desk.root, "an ordinary message about the token budget").returncode == 0


def test_the_commit_msg_hook_scans_only_what_git_keeps_of_a_verbose_message(desk: DeskFolder) -> None:
    """`git commit -v` shows the staged diff below the scissors line, and git drops it from the
    commit: a person's own file (outside desk's folders, not desk's to check) holding a token-like
    example is no secret in the message; above the scissors line the same token is refused."""
    write(desk.root, "extras/example.env", f"GITHUB_TOKEN={TOKEN}\n")
    sh(desk.root, "add", "extras/example.env")
    head = git(desk.root, "rev-parse", "HEAD")
    env = git_env(GIT_EDITOR=f"sed -i '1s/^/add an example {TOKEN}/'")
    refused = sh(desk.root, "commit", "-q", "-v", env=env)
    assert refused.returncode != 0 and "commit message:1: secret: github-token" in refused.stderr, refused.stderr
    assert git(desk.root, "rev-parse", "HEAD") == head
    done = sh(desk.root, "commit", "-q", "-v", env=git_env(GIT_EDITOR="sed -i '1s/^/add an example file/'"))
    assert done.returncode == 0, done.stderr
    assert git(desk.root, "log", "-1", "--format=%s").strip() == "add an example file"


def test_the_commit_msg_hook_honours_the_allow_list_being_committed(desk: DeskFolder) -> None:
    config = json.loads((desk.root / ".system/desk.json").read_text())
    config.setdefault("secrets", {})["allow"] = [scan(AWS)[0].fingerprint]
    write(desk.root, ".system/desk.json", json.dumps(config, indent=2) + "\n")
    sh(desk.root, "add", ".system/desk.json")
    assert commit(desk.root, f"allow the documented example key {AWS}").returncode == 0
    write(desk.root, "journal/2026-01-02.md", "# a journal day\n")
    sh(desk.root, "add", "journal/2026-01-02.md")
    proc = commit(desk.root, f"again {AWS}, and {TOKEN}")
    assert proc.returncode != 0 and "github-token" in proc.stderr and "aws-access-key-id" not in proc.stderr


def test_desks_own_commits_refuse_a_secret_in_their_message(desk: DeskFolder, run: DeskRunner,
                                                          tmp_path: Path) -> None:
    """`forget --reason` and an import's source path go into trailers: refused with exit 3, naming
    the commit message, and nothing changes."""
    assert run("remember", "tone", "--type", "preference", "-d", "tone", "short answers").exit_code == 0
    head = git(desk.root, "rev-parse", "HEAD")
    refused = run("forget", "tone", "--reason", f"it held {TOKEN}")
    assert refused.exit_code == 3, refused.output
    assert "commit message" in refused.output and "github-token" in refused.output
    assert TOKEN not in refused.output
    assert git(desk.root, "rev-parse", "HEAD") == head and (desk.root / "memory/tone.md").exists()
    source = write(tmp_path / f"notes{TOKEN}", "fact.md", "---\ntitle: fact\n---\nthe build runs nightly\n")
    imported = run("import", "markdown", str(source.parent), "--no-progress")
    assert imported.exit_code == 3, imported.output
    assert "commit message" in imported.output and TOKEN not in imported.output
    assert git(desk.root, "rev-parse", "HEAD") == head
    assert git(desk.root, "status", "--porcelain").strip() == ""


def test_the_archive_redacts_the_new_shapes_and_disguises(desk: DeskFolder, run: DeskRunner) -> None:
    """Issue 27.2: a token glued after `_` or `%3D`, base64-wrapped, Basic credentials, a Hugging
    Face token: redacted on append like the shapes before."""
    hf = "h" + "f_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH"
    wrapped = base64.b64encode(f"token {TOKEN}".encode()).decode()
    basic = base64.b64encode(b"admin:" + b"S3cr" + b"etP4ss!").decode()
    for text in (f"id_{TOKEN}", f"cb?token%3D{TOKEN}&x=1", f"blob {wrapped}", f"Authorization: Basic {basic}",
                 f"hub {hf}"):
        assert run("archive", "append", "-k", "inbound", text).exit_code == 0
    stored = _archive_bytes(desk).decode()
    for secret in (TOKEN, wrapped, basic, hf):
        assert secret not in stored
    for kind in ("github-token", "basic-auth", "huggingface-token"):
        assert f"[REDACTED:{kind}]" in stored
