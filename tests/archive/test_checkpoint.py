"""`desk checkpoint`: archive growth in one commit, head hashes in trailers."""

from __future__ import annotations

import json

from desk.archive.store import append_event, clone_id, head_hash
from desk.layout import DeskFolder

from tests.conftest import DeskRunner, git


def test_checkpoint_commits_growth_once_with_head_trailers(desk: DeskFolder, run: DeskRunner) -> None:
    append_event(desk, "inbound", "a", at="2026-11-28T10:00:00Z")
    append_event(desk, "inbound", "b", at="2026-11-29T10:00:00Z")
    append_event(desk, "inbound", "c", at="2026-11-29T11:00:00Z")
    before = int(git(desk.root, "rev-list", "--count", "HEAD"))
    result = run("checkpoint", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["status"] == "committed" and data["events"] == 3 and len(data["files"]) == 2
    assert int(git(desk.root, "rev-list", "--count", "HEAD")) == before + 1
    assert git(desk.root, "status", "--porcelain", "--", ".system/archive") == ""
    message = git(desk.root, "log", "-1", "--format=%B")
    clone = clone_id(desk)
    day29 = desk.path(f".system/archive/2026-11-29.{clone}.jsonl").read_bytes()
    assert f"Desk-Archive-Head: 2026-11-29.{clone}.jsonl 2 {head_hash(day29)}" in message
    assert "Desk-Op: checkpoint" in message
    trailers = git(desk.root, "log", "-1", "--format=%(trailers:key=Desk-Archive-Head,valueonly)")
    assert len(trailers.split()) == 6  # two files, three words each: git parses them as trailers
    # nothing new: no commit
    assert json.loads(run("checkpoint", "--json").output)["status"] == "unchanged"
    assert int(git(desk.root, "rev-list", "--count", "HEAD")) == before + 1
    append_event(desk, "outbound", "d", at="2026-11-29T12:00:00Z")
    assert json.loads(run("checkpoint", "--json").output)["events"] == 1


def test_checkpoint_leaves_a_torn_tail_for_later(desk: DeskFolder, run: DeskRunner) -> None:
    append_event(desk, "inbound", "a")
    path = desk.path(f".system/archive/{append_event(desk, 'inbound', 'b')['at'][:10]}.{clone_id(desk)}.jsonl")
    with path.open("ab") as fh:
        fh.write(b'{"actor":nu')
    data = json.loads(run("checkpoint", "--json").output)
    assert data["status"] == "unchanged" and data["skipped"] == [str(path.relative_to(desk.root))]
    append_event(desk, "inbound", "c")  # closes the fragment
    data = json.loads(run("checkpoint", "--json").output)
    assert data["status"] == "committed" and data["events"] == 4  # 3 records + the closed fragment line


def test_checkpoint_waits_for_no_person_and_keeps_other_work(desk: DeskFolder, run: DeskRunner) -> None:
    desk.path("SOUL.md").write_text("edited by a person\n")
    append_event(desk, "inbound", "a")
    assert run("checkpoint").exit_code == 0
    assert git(desk.root, "status", "--porcelain").strip() == "M SOUL.md"


def test_checkpoint_refuses_a_broken_record_and_changes_nothing(desk: DeskFolder, run: DeskRunner) -> None:
    rec = append_event(desk, "inbound", "a")
    path = desk.path(f".system/archive/{rec['at'][:10]}.{clone_id(desk)}.jsonl")
    path.write_bytes(path.read_bytes() + b'{"kind":"forged"}\n')
    head = git(desk.root, "rev-parse", "HEAD")
    before = path.read_bytes()
    result = run("checkpoint")
    assert result.exit_code == 3 and ":2: archive-record" in result.output
    assert git(desk.root, "rev-parse", "HEAD") == head
    assert path.read_bytes() == before
    assert git(desk.root, "diff", "--cached", "--name-only") == ""


def test_a_hand_commit_rewriting_committed_archive_is_rejected_by_the_hook(desk: DeskFolder, run: DeskRunner) -> None:
    """The archive is append-only for a person's `git commit` too: desk's pre-commit hook names the
    rewritten line and the commit does not happen. The test installs the hooks itself (it skipped
    where they were missing, hiding the very gate it checks)."""
    assert run("hooks", "install").exit_code == 0
    assert (desk.git_dir / "hooks" / "pre-commit").exists()
    rec = append_event(desk, "inbound", "original")
    append_event(desk, "inbound", "second")
    assert run("checkpoint").exit_code == 0
    rel = f".system/archive/{rec['at'][:10]}.{clone_id(desk)}.jsonl"
    head = git(desk.root, "rev-parse", "HEAD")
    path = desk.path(rel)
    path.write_bytes(path.read_bytes().replace(b"original", b"rewritten"))
    import subprocess

    from desk.storage.git import clean_env

    proc = subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@example.org", "commit",
                           "-qm", "edit history", "--", rel], cwd=desk.root, env=clean_env(),
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert f"{rel}:1: archive-append-only" in proc.stdout + proc.stderr
    assert git(desk.root, "rev-parse", "HEAD") == head
    assert "original" in git(desk.root, "show", f"HEAD:{rel}")


def _appender(root: str, worker: int) -> None:
    from pathlib import Path

    desk = DeskFolder(Path(root))
    for i in range(15):
        append_event(desk, "progress", f"w{worker} #{i}")


def _checkpointer(root: str) -> None:
    from pathlib import Path

    from desk.archive.checkpoint import checkpoint

    for _ in range(4):
        checkpoint(DeskFolder(Path(root)))


def test_checkpoints_racing_appenders_commit_every_record_once(desk: DeskFolder, run: DeskRunner) -> None:
    import multiprocessing

    from desk.archive.store import iter_events
    from desk.archive.verify import verify_archive

    clone_id(desk)
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_appender, args=(str(desk.root), w)) for w in range(4)]
    procs.append(ctx.Process(target=_checkpointer, args=(str(desk.root),)))
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    run("checkpoint")
    assert git(desk.root, "status", "--porcelain", "--", ".system/archive") == ""
    assert sorted(e.record["content"] for e in iter_events(desk)) == sorted(
        f"w{w} #{i}" for w in range(4) for i in range(15))
    report = verify_archive(desk)
    assert report.ok and report.findings == []
