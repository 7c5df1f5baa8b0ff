"""`desk restore NAME [--from REV]` (issue 29.3): a forgotten or overwritten memory back from git
history as one commit, through the gate, and how `desk forget` and `desk history` point at it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

import desk as desk_api
from desk.errors import DeskError, UsageError
from desk.formats.memory_file import MemoryFile, parse_memory
from desk.layout import DeskFolder
from desk.storage.git import parse_trailers
from tests.conftest import DeskRunner, git, snapshot
from tests.guard_helpers import add_commit, commit, memory_text, reindex_text, sh, write

BODIES = ("Green tea, no sugar.", "Green tea with honey.", "Black tea, strong.")


def _remember(run: DeskRunner, body: str, name: str = "tea", *extra: str) -> str:
    result = run("remember", name, "--type", "preference", "-d", "What to drink", "-t", "tea", *extra,
                 "--json", body)
    assert result.exit_code == 0, result.output
    return str(json.loads(result.stdout)["commit"])


def _head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def _trailers(root: Path, rev: str = "HEAD") -> dict[str, list[str]]:
    return parse_trailers(git(root, "log", "-1", "--format=%B", rev))


def _changed(root: Path, rev: str = "HEAD") -> list[str]:
    return sorted(git(root, "diff-tree", "--no-commit-id", "--name-only", "-r", rev).split())


def _count(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "HEAD"))


def test_forget_then_restore_brings_the_last_version_back_byte_for_byte_in_one_commit(
        desk: DeskFolder, run: DeskRunner) -> None:
    _remember(run, BODIES[0])
    last = _remember(run, BODIES[1])
    kept, index = desk.path("memory/tea.md").read_bytes(), desk.path("MEMORY.md").read_bytes()
    forgot = run("forget", "tea")
    assert forgot.exit_code == 0 and "to bring it back: desk restore tea" in forgot.stdout
    assert not desk.path("memory/tea.md").exists() and b"[tea]" not in desk.path("MEMORY.md").read_bytes()
    before = _count(desk.root)

    result = run("restore", "tea", "--json")

    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data == {"status": "restored", "name": "tea", "path": "memory/tea.md", "commit": _head(desk.root),
                    "restored_from": last, "from_path": "memory/tea.md", "reason": None}
    assert desk.path("memory/tea.md").read_bytes() == kept  # `updated:` too: that version's
    assert desk.path("MEMORY.md").read_bytes() == index
    assert _count(desk.root) == before + 1
    assert _changed(desk.root) == ["MEMORY.md", "memory/tea.md"]
    assert _trailers(desk.root) == {"Desk-Op": ["restore"], "Desk-Memory": ["tea"], "Desk-Actor": ["user"],
                                    "Desk-Restored-From": [last]}
    assert git(desk.root, "log", "-1", "--format=%s").strip() == f"restore: tea from {last[:7]}"
    assert git(desk.root, "status", "--porcelain") == ""
    assert run("validate", "--all").exit_code == 0


def test_forget_json_names_the_restore_command(run: DeskRunner) -> None:
    _remember(run, BODIES[0])
    data = json.loads(run("forget", "tea", "--json").stdout)
    assert data["status"] == "deleted" and data["restore"] == "desk restore tea"


def test_an_existing_memory_goes_back_one_version_and_from_takes_any_commit(
        desk: DeskFolder, run: DeskRunner) -> None:
    first = _remember(run, BODIES[0])
    v1 = desk.path("memory/tea.md").read_bytes()
    second = _remember(run, BODIES[1])
    v2 = desk.path("memory/tea.md").read_bytes()
    git(desk.root, "tag", "honey")
    _remember(run, BODIES[2])

    result = run("restore", "tea", "--json")  # the version before the current one
    assert json.loads(result.stdout)["restored_from"] == second
    assert desk.path("memory/tea.md").read_bytes() == v2
    again = json.loads(run("restore", "tea", "--json").stdout)  # twice: back and forth
    assert desk.path("memory/tea.md").read_bytes().endswith(BODIES[2].encode() + b"\n")
    assert again["restored_from"] != second

    assert run("restore", "tea", "--from", first[:10]).exit_code == 0  # an abbreviated id
    assert desk.path("memory/tea.md").read_bytes() == v1
    assert run("restore", "tea", "--from", "honey").exit_code == 0  # a tag
    assert desk.path("memory/tea.md").read_bytes() == v2
    assert _trailers(desk.root)["Desk-Restored-From"] == [second]  # the commit the tag names, in full

    count = _count(desk.root)
    same = run("restore", "tea", "--from", "HEAD", "--json")  # the current version: nothing to do
    assert same.exit_code == 0 and json.loads(same.stdout)["status"] == "unchanged"
    assert json.loads(same.stdout)["commit"] is None and _count(desk.root) == count
    assert "unchanged: memory/tea.md is already the version of" in run("restore", "tea", "--from", "HEAD").stdout


def test_from_a_commit_where_the_memory_did_not_exist_is_refused_and_changes_nothing(
        desk: DeskFolder, run: DeskRunner) -> None:
    start = _head(desk.root)
    made = _remember(run, BODIES[0])
    assert run("forget", "tea").exit_code == 0
    before = snapshot(desk.root)

    missing = run("restore", "tea", "--from", start[:12])
    assert missing.exit_code == 1
    assert f"--from '{start[:12]}': memory 'tea' did not exist at that commit" in missing.stderr
    assert f"e.g. {made[:7]}" in missing.stderr  # a commit where it did
    unknown = run("restore", "tea", "--from", "no-such-rev")
    assert unknown.exit_code == 2 and "--from 'no-such-rev': no such commit" in unknown.stderr
    blob = run("restore", "tea", "--from", f"{made}:memory/tea.md")  # a file, not a commit
    assert blob.exit_code == 2
    never = run("restore", "teas")
    assert never.exit_code == 1 and "no memory named 'teas'" in never.stderr
    bad = run("restore", "Tea\n")
    assert bad.exit_code == 3 and "invalid memory name" in bad.stderr
    assert snapshot(desk.root) == before


@pytest.mark.parametrize("rev", ["--all", "-n1", "HEAD\nHEAD~1", "HEAD\r", "\u200bHEAD", "x" * 5000, ""])
def test_a_hostile_from_is_a_usage_error(desk: DeskFolder, run: DeskRunner, rev: str) -> None:
    _remember(run, BODIES[0])
    before = snapshot(desk.root)
    with pytest.raises(UsageError) as caught:
        desk_api.open(desk.root).restore("tea", from_rev=rev)
    assert caught.value.exit_code == 2 and "--from" in caught.value.message
    assert snapshot(desk.root) == before


def test_a_name_no_commit_ever_held_is_an_error_with_a_suggestion(desk: DeskFolder, run: DeskRunner) -> None:
    _remember(run, BODIES[0])
    result = run("restore", "tee")
    assert result.exit_code == 1
    assert "no memory named 'tee'" in result.stderr and "did you mean `tea`" in result.stderr


def test_restore_follows_a_rename_and_takes_an_old_name_only_before_the_rename(
        desk: DeskFolder, run: DeskRunner) -> None:
    old = _remember(run, BODIES[0], "drink")
    at_old = desk.path("memory/drink.md").read_bytes()
    assert run("rename", "drink", "tea").exit_code == 0
    _remember(run, BODIES[1])

    result = run("restore", "tea", "--from", old)
    assert result.exit_code == 0 and f"restored: memory/tea.md from {old[:7]} (memory/drink.md)" in result.stdout
    was = parse_memory(at_old, "memory/drink.md", "drink")
    assert desk.path("memory/tea.md").read_bytes() == MemoryFile(was.meta.replace(name="tea"), was.body).render()
    assert not desk.path("memory/drink.md").exists()
    assert _changed(desk.root) == ["memory/tea.md"]  # the same index line: MEMORY.md as it was

    # tea is forgotten and a new, unrelated memory takes the old name: at a commit after the
    # rename, memory/drink.md is that new memory, never tea's past
    forgotten = desk.path("memory/tea.md").read_bytes()
    assert run("forget", "tea").exit_code == 0
    _remember(run, "Coffee after lunch only.", "drink")
    later = _head(desk.root)
    before = snapshot(desk.root)
    refused = run("restore", "tea", "--from", later)
    assert refused.exit_code == 1 and "did not exist at that commit" in refused.stderr
    assert snapshot(desk.root) == before
    # without --from: the version tea had when it was forgotten
    assert run("restore", "tea").exit_code == 0
    assert desk.path("memory/tea.md").read_bytes() == forgotten
    history = run("history", "tea")
    assert "restore: tea from" in history.stdout and "rename: drink -> tea" in history.stdout


def test_history_shows_the_restore_and_where_it_came_from(desk: DeskFolder, run: DeskRunner) -> None:
    made = _remember(run, BODIES[0])
    run("forget", "tea")
    run("restore", "tea")
    text = run("history", "tea").stdout.splitlines()
    assert text[0].endswith(f"restore: tea from {made[:7]}  [memory=tea, actor=user, restored-from={made[:7]}]")
    data = json.loads(run("history", "tea", "--json").stdout)
    assert data["commits"][0]["trailers"]["Desk-Restored-From"] == [made]
    assert [c["subject"] for c in data["commits"]] == ["restore: tea from " + made[:7], "forget: tea", "remember: tea"]


def test_a_persons_hand_commits_in_between(desk: DeskFolder, run: DeskRunner) -> None:
    mine = _remember(run, BODIES[0])
    v1 = desk.path("memory/tea.md").read_bytes()
    # a person edits the memory in an editor and commits it through the installed hooks
    write(desk.root, "memory/tea.md", v1.decode().replace(BODIES[0], "Oolong, twice a day."))
    assert add_commit(desk.root, "tea: oolong", "memory/tea.md").returncode == 0
    theirs = _head(desk.root)

    assert json.loads(run("restore", "tea", "--json").stdout)["restored_from"] == mine
    assert desk.path("memory/tea.md").read_bytes() == v1
    assert git(desk.root, "rev-parse", "HEAD~1").strip() == theirs  # on top of the person's commit

    # forgotten, then a person commits something else: restore still lands on top of it
    run("forget", "tea")
    write(desk.root, "journal/2026-01-01.md", "# notes\n")
    assert add_commit(desk.root, "notes", "journal/2026-01-01.md").returncode == 0
    other = _head(desk.root)
    assert run("restore", "tea").exit_code == 0
    assert desk.path("memory/tea.md").read_bytes() == v1
    assert git(desk.root, "rev-parse", "HEAD~1").strip() == other
    assert git(desk.root, "status", "--porcelain") == ""


def test_restore_passes_the_installed_hooks(desk: DeskFolder, run: DeskRunner) -> None:
    # A foreign hook chained beside desk's (`.legacy`) makes desk run the hooks on its own commit;
    # each records what it was shown.
    for hook, record in (("pre-commit", "git diff --cached --name-only"), ("commit-msg", 'cat "$1"')):
        path = desk.root / ".git" / "hooks" / f"{hook}.legacy"
        path.write_text(f"#!/bin/sh\n{record} >> \"$(git rev-parse --git-dir)/{hook}.saw\"\nexit 0\n")
        path.chmod(0o755)
    made = _remember(run, BODIES[0])
    run("forget", "tea")
    for hook in ("pre-commit", "commit-msg"):
        (desk.root / ".git" / f"{hook}.saw").unlink()

    assert run("restore", "tea").exit_code == 0
    assert (desk.root / ".git" / "pre-commit.saw").read_text().split() == ["MEMORY.md", "memory/tea.md"]
    assert f"Desk-Restored-From: {made}" in (desk.root / ".git" / "commit-msg.saw").read_text()

    # the same change and message committed by a person's `git commit`, through desk's hooks
    message = git(desk.root, "log", "-1", "--format=%B")
    assert sh(desk.root, "reset", "-q", "--soft", "HEAD~1").returncode == 0
    by_hand = commit(desk.root, message)
    assert by_hand.returncode == 0, by_hand.stderr
    assert _trailers(desk.root)["Desk-Op"] == ["restore"]


def test_a_refusing_hook_refuses_the_restore_with_nothing_changed(desk: DeskFolder, run: DeskRunner) -> None:
    _remember(run, BODIES[0])
    run("forget", "tea")
    hook = desk.root / ".git" / "hooks" / "pre-commit.legacy"
    hook.write_text("#!/bin/sh\necho 'no restores on Fridays' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = snapshot(desk.root)
    result = run("restore", "tea")
    assert result.exit_code == 3 and "no restores on Fridays" in result.stderr
    assert snapshot(desk.root) == before


def test_a_version_with_a_secret_is_refused_with_the_finding(desk: DeskFolder, run: DeskRunner) -> None:
    # a person's commit that skipped the hooks put a token in a memory; it was forgotten since
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    write(desk.root, "memory/token.md", memory_text("token", body=f"The deploy token is {token}."))
    reindex_text(desk.root)
    sh(desk.root, "add", "-A")
    assert sh(desk.root, "commit", "-q", "--no-verify", "-m", "token").returncode == 0
    assert run("forget", "token").exit_code == 0
    before = snapshot(desk.root)

    result = run("restore", "token")

    assert result.exit_code == 3
    assert "memory/token.md:7: secret: github-token" in result.stderr
    assert "desk history token" in result.stderr  # what else to do
    assert snapshot(desk.root) == before


def test_a_version_the_gate_now_calls_a_duplicate_is_refused(desk: DeskFolder, run: DeskRunner) -> None:
    _remember(run, BODIES[0])
    run("forget", "tea")
    _remember(run, BODIES[0], "chai")  # the same fact, written again under another name
    before = snapshot(desk.root)
    result = run("restore", "tea", "--json")
    assert result.exit_code == 3
    data = json.loads(result.stdout)
    assert data["status"] == "rejected" and "already recorded in memory/chai.md" in data["message"]
    assert data["reason"] == "already_recorded" and data["name"] == "tea" and data["commit"] is None
    assert snapshot(desk.root) == before


def test_a_version_that_no_longer_parses_is_refused_naming_file_and_line(desk: DeskFolder, run: DeskRunner) -> None:
    write(desk.root, "memory/odd.md", memory_text("odd", extra="colour: red\n"))
    reindex_text(desk.root)
    sh(desk.root, "add", "-A")
    assert sh(desk.root, "commit", "-q", "--no-verify", "-m", "odd").returncode == 0
    sh(desk.root, "rm", "-q", "memory/odd.md")
    reindex_text(desk.root)
    sh(desk.root, "add", "-A")
    assert sh(desk.root, "commit", "-q", "--no-verify", "-m", "drop odd").returncode == 0
    before = snapshot(desk.root)
    result = run("restore", "odd")
    assert result.exit_code == 3 and "memory/odd.md:6:" in result.stderr and "colour" in result.stderr
    assert snapshot(desk.root) == before


def test_uncommitted_edits_are_never_overwritten(desk: DeskFolder, run: DeskRunner) -> None:
    _remember(run, BODIES[0])
    _remember(run, BODIES[1])
    desk.path("memory/tea.md").write_text(desk.path("memory/tea.md").read_text() + "mine\n")
    before = snapshot(desk.root)
    result = run("restore", "tea")
    assert result.exit_code == 4 and "uncommitted changes" in result.stderr
    assert snapshot(desk.root) == before


def test_no_earlier_version_is_an_error(desk: DeskFolder, run: DeskRunner) -> None:
    _remember(run, BODIES[0])
    result = run("restore", "tea")
    assert result.exit_code == 1 and "no earlier version" in result.stderr


def test_project_memories_restore_too(desk: DeskFolder, run: DeskRunner) -> None:
    _remember(run, BODIES[0], "tea", "--project", "acme")
    kept = desk.path("projects/acme/memory/tea.md").read_bytes()
    index = desk.path("projects/acme/MEMORY.md").read_bytes()
    forgot = json.loads(run("forget", "tea", "--project", "acme", "--json").stdout)
    assert forgot["restore"] == "desk restore tea --project acme"

    result = run("restore", "tea", "--project", "acme", "--json")

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["path"] == "projects/acme/memory/tea.md"
    assert desk.path("projects/acme/memory/tea.md").read_bytes() == kept
    assert desk.path("projects/acme/MEMORY.md").read_bytes() == index
    assert _changed(desk.root) == ["projects/acme/MEMORY.md", "projects/acme/memory/tea.md"]
    assert _trailers(desk.root)["Desk-Project"] == ["acme"]
    assert not desk.path("memory/tea.md").exists()  # never desk-wide
    missing = run("restore", "tea")  # the desk-wide tea never existed
    assert missing.exit_code == 1


def test_the_api_returns_a_restored_result(desk: DeskFolder, run: DeskRunner) -> None:
    now = dt.datetime(2029, 1, 1, tzinfo=dt.timezone.utc)
    d = desk_api.open(desk.root)
    made = d.remember("tea", BODIES[0], type="preference", description="What to drink", triggers=["tea"],
                      expires="2030-01-01T00:00:00Z", now=now).value.commit
    d.forget("tea", actor="assistant")

    result = d.restore("memory/tea.md", actor="assistant", now=dt.datetime(2031, 1, 1, tzinfo=dt.timezone.utc))

    assert isinstance(result, desk_api.Restored) and "Restored" in desk_api.__all__
    assert result.to_json()["restored_from"] == made and result.to_json()["status"] == "restored"
    assert _trailers(desk.root)["Desk-Actor"] == ["assistant"]
    assert "expired at 2030-01-01T00:00:00Z" in result.to_json()["warnings"][0]  # type: ignore[index]
    assert result.warnings()[0].startswith("desk: warning: tea expired")
    with pytest.raises(DeskError, match="no earlier version"):
        d.restore("tea")  # every version in its history is this one
    with pytest.raises(UsageError):
        d.restore("tea", from_rev=made, actor="robot")
