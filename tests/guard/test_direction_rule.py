"""The `bidi-control` rule: text a person reviews as memory may not hold an invisible direction
control (CVE-2021-42574), whoever writes it: desk's own writes, and a person's `git commit`
through the installed pre-commit hook. The raw archive and the views that quote it are exempt."""

from __future__ import annotations

from desk.layout import DeskFolder
from tests.conftest import DeskRunner, git, snapshot
from tests.guard_helpers import add_commit, head, memory_text, reindex_text, sh, write

RLO, PDF, RLI, PDI = "\u202e", "\u202c", "\u2067", "\u2069"


def test_remember_refuses_a_control_in_the_body_or_description_and_changes_nothing(
        desk: DeskFolder, run: DeskRunner) -> None:
    before = snapshot(desk.root)
    body = run("remember", "cleanup", f"Always run {RLO}sstset fr- mr{PDF} first.", "--type", "pitfall",
               "-d", "Clean-up order", "-t", "cleanup")
    assert body.exit_code == 3, body.output
    assert "bidi-control" in body.output and "U+202E RIGHT-TO-LEFT OVERRIDE" in body.output
    described = run("remember", "cleanup", "Run tests first.", "--type", "pitfall",
                    "-d", f"Clean-up {RLI}order{PDI}", "-t", "cleanup")
    assert described.exit_code == 3 and "U+2067" in described.output, described.output
    assert snapshot(desk.root) == before


def test_now_and_user_writes_are_refused_too(desk: DeskFolder, run: DeskRunner) -> None:
    before = snapshot(desk.root)
    assert run("now", "set", "--section", "doing", f"review {RLO}gnihton").exit_code == 3
    assert run("user", "set", f"name=Ada{RLO}").exit_code == 3
    assert snapshot(desk.root) == before


def test_a_persons_commit_is_refused_by_the_hook(desk: DeskFolder) -> None:
    start = head(desk.root)
    write(desk.root, "memory/deploy.md", memory_text("deploy", body=f"Deploy with {RLI}--force{PDI} never."))
    reindex_text(desk.root)
    refused = add_commit(desk.root, "deploy note", "memory/deploy.md", "MEMORY.md")
    assert refused.returncode != 0
    assert "memory/deploy.md:7: bidi-control" in refused.stderr, refused.stderr
    write(desk.root, "NOW.md", f"# NOW\n\n## Doing\n\n{RLO}x\n")
    git(desk.root, "reset", "-q")
    refused = add_commit(desk.root, "now", "NOW.md")
    assert refused.returncode != 0 and "NOW.md:5: bidi-control" in refused.stderr, refused.stderr
    assert head(desk.root) == start


def test_right_to_left_text_and_the_archive_views_pass(desk: DeskFolder, run: DeskRunner) -> None:
    arabic = run("remember", "greeting", "يقول المستخدم: مرحبا \u200f(RLM)", "--type", "fact",
                 "-d", "How the user greets", "-t", "greeting")
    assert arabic.exit_code == 0, arabic.output
    write(desk.root, "conversations/2026-11-29.md", f"# a quoted turn\n\nuser: {RLO}as said\n")
    assert add_commit(desk.root, "a conversation view", "conversations/2026-11-29.md").returncode == 0
    assert git(desk.root, "status", "--porcelain") == ""


def test_validate_all_reports_a_control_already_committed(desk: DeskFolder, run: DeskRunner) -> None:
    write(desk.root, "SOUL.md", f"# SOUL\n\nBe {RLO}kind.\n")
    sh(desk.root, "add", "SOUL.md")
    assert sh(desk.root, "commit", "-q", "--no-verify", "-m", "past the hooks").returncode == 0
    result = run("validate", "--all")
    assert result.exit_code == 3, result.output
    assert "SOUL.md:3: bidi-control: column 4" in result.output
