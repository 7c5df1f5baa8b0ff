"""`desk sync` names every incoming commit that adds a secret (issue 27.2), even one a later
commit removed: by commit id, path and kind, in the result (human and --json) and as a warning,
never printing the secret. It reports and integrates: the secret is in the remote's history
already. A person's `git pull` gets the same names from the post-merge hook.

Secrets are built by concatenation so this repository never carries one literally.
"""

from __future__ import annotations

import json
import subprocess

from click.testing import CliRunner

from desk.api import Desk
from desk.cli.main import cli
from desk.text.secrets import fingerprint
from tests.sync.conftest import Clones, git

TOKEN = "gh" + "p_" + "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zCaB3d"
AWS = "AKIA" + "IOSFODNN7EXAMPLQ"


def _push_added_then_removed(a: Desk) -> tuple[str, str, str]:
    """Three commits past the hooks (`--no-verify`), pushed: a journal day holding a token, its
    removal, and a message holding a key. (adding commit, removing commit, message commit)"""
    (a.root / "journal").mkdir(exist_ok=True)
    (a.root / "journal/2026-01-02.md").write_text(f"# a day\n\nthe bot uses {TOKEN} today\n")
    git(a.root, "add", "journal/2026-01-02.md")
    git(a.root, "commit", "-q", "--no-verify", "-m", "a journal day")
    added = git(a.root, "rev-parse", "HEAD").strip()
    (a.root / "journal/2026-01-02.md").write_text("# a day\n\nthe bot uses a token today\n")
    git(a.root, "commit", "-q", "--no-verify", "-am", "remove the token")
    removed = git(a.root, "rev-parse", "HEAD").strip()
    git(a.root, "commit", "-q", "--no-verify", "--allow-empty", "-m", f"rotate {AWS}\n\nDesk-Reason: old key {AWS}")
    message = git(a.root, "rev-parse", "HEAD").strip()
    git(a.root, "push", "-q", "origin", "main")
    return added, removed, message


def test_sync_names_each_incoming_commit_that_adds_a_secret_even_when_removed_later(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    added, removed, message = _push_added_then_removed(a)
    result = CliRunner().invoke(cli, ["--desk", str(b.root), "sync", "--json", "-q"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["status"] == "fast-forward"  # reported, not refused: the final tree is clean
    found = {(s["commit"], s["path"], s["kind"]) for s in data["secrets"]}
    assert found == {(added, "journal/2026-01-02.md", "github-token"),
                     (message, "commit message", "aws-access-key-id")}
    assert len([s for s in data["secrets"] if s["commit"] == message]) == 2  # the subject and the trailer
    assert {s["subject"] for s in data["secrets"] if s["commit"] == message} == {"rotate [REDACTED:aws-access-key-id]"}
    assert removed not in {s["commit"] for s in data["secrets"]}
    line = next(s for s in data["secrets"] if s["commit"] == added)
    assert line["line"] == 3 and line["fingerprint"] == fingerprint(TOKEN)
    assert TOKEN not in result.output and AWS not in result.output
    assert f"commit {added[:12]}" in result.stderr and "rotate that key" in result.stderr


def test_sync_text_and_a_merge_report_them_too_and_the_allow_list_silences_one(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    added, _removed, message = _push_added_then_removed(a)
    config = json.loads((b.root / ".system/desk.json").read_text())
    config.setdefault("secrets", {})["allow"] = [fingerprint(AWS)]
    (b.root / ".system/desk.json").write_text(json.dumps(config, indent=2) + "\n")
    git(b.root, "commit", "-q", "-am", "allow the documented example key")  # a local commit: a real merge
    result = CliRunner().invoke(cli, ["--desk", str(b.root), "sync", "-q"])
    assert result.exit_code == 0, result.output
    assert "merged origin/main" in result.stdout
    assert "secrets added by incoming commits: 1 in 1 commit" in result.stdout
    assert f"commit {added[:12]}" in result.stderr and f"commit {message[:12]}" not in result.stderr
    assert TOKEN not in result.output and AWS not in result.output


def test_a_persons_git_pull_is_told_of_them_by_the_post_merge_hook(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    added, _removed, _message = _push_added_then_removed(a)
    proc = subprocess.run(["git", "pull", "-q", "--no-rebase", "origin", "main"], cwd=b.root,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert f"commit {added[:12]}" in proc.stderr and "adds a secret" in proc.stderr
    assert TOKEN not in proc.stderr and AWS not in proc.stderr


def test_a_subject_holding_a_secret_is_shown_redacted_in_every_other_warning(clones: Clones) -> None:
    """The post-merge hook's message-rule warning and sync's rewritten-history refusal print
    commit subjects: a subject holding a token is shown redacted there too."""
    a, b = clones[0], clones[1]
    (a.root / "SOUL.md").write_text("# Soul\nchanged by the assistant\n")
    git(a.root, "commit", "-q", "--no-verify", "-am", f"soul {TOKEN}\n\nDesk-Actor: assistant")
    git(a.root, "push", "-q", "origin", "main")
    pulled = subprocess.run(["git", "pull", "-q", "--ff-only", "origin", "main"], cwd=b.root,
                            capture_output=True, text=True)
    assert "arrived unchecked" in pulled.stderr and "[REDACTED:github-token]" in pulled.stderr, pulled.stderr
    assert TOKEN not in pulled.stderr

    git(a.root, "reset", "-q", "--hard", "HEAD~1")
    git(a.root, "commit", "-q", "--no-verify", "--allow-empty", "-m", "another line of history")
    git(a.root, "push", "-q", "--force", "origin", "main")
    refused = CliRunner().invoke(cli, ["--desk", str(b.root), "sync"])
    assert refused.exit_code == 4 and "was rewritten" in refused.output, refused.output
    assert TOKEN not in refused.output and "[REDACTED:github-token]" in refused.output
