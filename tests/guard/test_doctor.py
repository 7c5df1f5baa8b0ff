"""`desk doctor [--repair]`: each kind of debris found, the safe ones repaired, a person's work kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from desk.layout import DeskFolder
from tests.conftest import DeskRunner
from tests.guard_helpers import commit, head, memory_text, sh, write

OLD = time.time() - 3600


def doctor(run: DeskRunner, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = run("doctor", "--json", *args)
    return result.exit_code, json.loads(result.output)


def checks(data: dict) -> dict[str, str]:  # type: ignore[type-arg]
    return {p["check"]: p["status"] for p in data["problems"]}


def test_healthy_desk(desk: DeskFolder, run: DeskRunner) -> None:
    result = run("doctor")
    assert result.exit_code == 0 and "ok: nothing to repair" in result.output


def test_no_verify_commits_are_caught(desk: DeskFolder, run: DeskRunner) -> None:
    write(desk.root, "memory/broken.md", "---\nname: broken\n---\nno type\n")
    write(desk.root, "SOUL.md", "# rewritten by the assistant\n")
    sh(desk.root, "add", "memory/broken.md", "SOUL.md")
    assert commit(desk.root, "sneaky\n\nDesk-Actor: assistant", "--no-verify").returncode == 0
    code, data = doctor(run)
    assert code == 3
    found = checks(data)
    assert found["frontmatter-field"] == "needs-person"
    assert found["bypassed-soul-unauthorized"] == "needs-person"
    message = next(p["message"] for p in data["problems"] if p["check"] == "bypassed-soul-unauthorized")
    assert head(desk.root)[:7] in message


def test_no_verify_commit_with_a_folded_trailer_is_caught(desk: DeskFolder, run: DeskRunner) -> None:
    """History is read with git's trailer rules: `Key :` and folded values count."""
    write(desk.root, "SOUL.md", "# rewritten by the assistant\n")
    sh(desk.root, "add", "SOUL.md")
    assert commit(desk.root, "sneaky\n\nDesk-Actor :\n  assistant", "--no-verify").returncode == 0
    code, data = doctor(run)
    assert code == 3 and checks(data)["bypassed-soul-unauthorized"] == "needs-person"


def test_stale_index_repaired(desk: DeskFolder, run: DeskRunner) -> None:
    write(desk.root, "memory/kappa.md", memory_text("kappa"))
    sh(desk.root, "add", "memory/kappa.md")
    commit(desk.root, "no index", "--no-verify")
    code, data = doctor(run)
    assert code == 3 and checks(data)["index-stale"] == "found"
    code, data = doctor(run, "--repair")
    assert code == 0 and checks(data)["index-stale"] == "repaired"
    assert "kappa" in (desk.root / "MEMORY.md").read_text()
    assert sh(desk.root, "status", "--porcelain").stdout == ""
    assert run("validate", "--all").exit_code == 0


def test_temp_files(desk: DeskFolder, run: DeskRunner) -> None:
    old = write(desk.root, "memory/.desk-tmp-abc123", "half")
    os.utime(old, (OLD, OLD))
    fresh = write(desk.root, ".desk-tmp-new", "in progress")
    code, data = doctor(run)
    assert code == 3 and {p["path"]: p["status"] for p in data["problems"]} == {
        "memory/.desk-tmp-abc123": "found", ".desk-tmp-new": "note"}
    code, data = doctor(run, "--repair")
    assert code == 0 and not old.exists() and fresh.exists()


def test_an_older_desks_commit_records_are_noted_and_removed_by_repair(desk: DeskFolder, run: DeskRunner) -> None:
    """The records an older desk kept in .git/ for its in-process commits (and a temporary file of
    one, left by a crash) are harmless: a note, removed by --repair; a file of the person's that only
    looks alike is never touched."""
    from desk.guard.doctor import OLD_RECORDS

    git_dir = desk.git_dir
    left = [git_dir / name for name in OLD_RECORDS] + [git_dir / "desk-tree-kept.4242.0a1b2c.tmp"]
    for path in left:
        path.write_bytes(b"an older desk's record\n")
    person = [git_dir / "desk-tree-kept.notes", git_dir / "desk-tree-keptx.1.tmp"]
    for path in person:
        path.write_bytes(b"not desk's\n")
    code, data = doctor(run)
    assert code == 0 and {p["path"]: p["status"] for p in data["problems"]} == {str(p): "note" for p in left}
    assert all(path.exists() for path in left + person)
    code, data = doctor(run, "--repair")
    assert code == 0 and {p["path"]: p["status"] for p in data["problems"]} == {str(p): "repaired" for p in left}
    assert not any(path.exists() for path in left) and all(path.exists() for path in person)
    code, data = doctor(run)
    assert code == 0 and data["problems"] == []
    assert sh(desk.root, "status", "--porcelain").stdout == ""


def test_torn_archive_tail(desk: DeskFolder, run: DeskRunner) -> None:
    from desk.archive.store import append_event

    append_event(desk, "inbound", "hello")
    path = next((desk.root / ".system/archive").glob("*.jsonl"))
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"at":"2026-')
    code, data = doctor(run)
    assert code == 3 and checks(data)["archive-torn"] == "found"
    code, data = doctor(run, "--repair")
    # Evidence is never cut: the fragment stays, and the next append starts on a new line.
    assert code == 0 and path.read_bytes() == whole + b'{"at":"2026-'
    assert checks(data)["archive-torn"] == "note"
    record = append_event(desk, "inbound", "after the crash")
    lines = path.read_bytes().splitlines()
    assert lines[-2] == b'{"at":"2026-' and record["id"].encode() in lines[-1]


def test_torn_archive_record_missing_only_its_newline_is_kept(desk: DeskFolder, run: DeskRunner) -> None:
    from desk.archive.store import append_event

    append_event(desk, "inbound", "hello")
    path = next((desk.root / ".system/archive").glob("*.jsonl"))
    whole = path.read_bytes()
    path.write_bytes(whole[:-1])  # a crash between the record and its newline
    code, data = doctor(run, "--repair")
    assert code == 0 and checks(data)["archive-torn"] == "repaired"
    assert path.read_bytes() == whole


def _crash_before_commit(root: Path, name: str, before: str = "Refs.move_head") -> None:
    """A real `remember` in a child process that dies (exit 9) right before `before` runs (by
    default: its files are written, under git's index lock, and the branch has not moved)."""
    code = ("import os, sys\nfrom pathlib import Path\nfrom desk.storage.git import Git, IndexLock\n"
            "from desk.storage.git.index import Index\nfrom desk.storage.git.refs import Refs\n"
            "from desk.transaction import Transaction\n"
            f"{before} = lambda self, *args, **kw: os._exit(9)\n"
            "from desk.layout import DeskFolder\nfrom desk.memory.operations import remember\n"
            f"remember(DeskFolder(Path({str(root)!r})), {name!r}, type='fact', description='Crashed',"
            " body='It crashed here.', triggers=['crash'])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert proc.returncode == 9, proc.stderr


def test_interrupted_mutation_is_finished(desk: DeskFolder, run: DeskRunner) -> None:
    before = head(desk.root)
    _crash_before_commit(desk.root, "lambda")
    assert head(desk.root) == before and (desk.root / "memory/lambda.md").exists()
    assert (desk.git_dir / "index.lock").exists()  # it died holding git's lock
    code, data = doctor(run)
    assert code == 3 and checks(data)["interrupted"] == "found" and checks(data)["index-lock"] == "found"
    code, data = doctor(run, "--repair")
    assert code == 0 and checks(data)["interrupted"] == "repaired", data
    assert checks(data)["index-lock"] == "repaired" and not (desk.git_dir / "index.lock").exists()
    assert head(desk.root) != before
    assert sh(desk.root, "log", "-1", "--format=%s").stdout.strip() == "remember: lambda"
    assert sh(desk.root, "status", "--porcelain").stdout == ""
    assert not list(desk.git_dir.glob("desk-pending-*"))


def test_interrupted_mutation_edited_since_is_left_to_a_person(desk: DeskFolder, run: DeskRunner) -> None:
    _crash_before_commit(desk.root, "mu")
    mine = memory_text("mu", body="My own words, typed after the crash.")
    write(desk.root, "memory/mu.md", mine)
    code, data = doctor(run, "--repair")
    assert code == 3 and checks(data)["interrupted"] == "needs-person"
    assert (desk.root / "memory/mu.md").read_text() == mine


def test_stale_index_lock(desk: DeskFolder, run: DeskRunner) -> None:
    lock = desk.git_dir / "index.lock"
    lock.write_bytes(b"")
    code, data = doctor(run, "--repair")
    assert code == 3 and checks(data)["index-lock"] == "needs-person" and lock.exists()  # recent
    os.utime(lock, (OLD, OLD))
    code, data = doctor(run)
    assert code == 3 and checks(data)["index-lock"] == "found" and lock.exists()
    code, data = doctor(run, "--repair")
    assert code == 0 and checks(data)["index-lock"] == "repaired" and not lock.exists()
    write(desk.root, "journal/a.md", "works again\n")
    sh(desk.root, "add", "journal/a.md")
    assert commit(desk.root, "after").returncode == 0


def test_missing_hooks_reinstalled(desk: DeskFolder, run: DeskRunner) -> None:
    run("hooks", "uninstall")
    code, data = doctor(run)
    assert code == 3 and checks(data)["hooks"] == "found"
    code, data = doctor(run, "--repair")
    assert code == 0 and (desk.git_dir / "hooks" / "pre-commit").exists()


def test_hooks_from_an_older_desk_still_guard_and_are_rewritten(desk: DeskFolder, run: DeskRunner) -> None:
    """Hooks written by desk 0.1.0 run `python -m desk.hooks`: they keep working, doctor says so."""
    for hook in ("pre-commit", "commit-msg", "pre-merge-commit"):
        path = desk.git_dir / "hooks" / hook
        path.write_text(path.read_text().replace("-m desk.cli.hook ", "-m desk.hooks "))
    write(desk.root, "memory/bad.md", "no frontmatter here\n")
    sh(desk.root, "add", "memory/bad.md")
    refused = commit(desk.root, "a broken memory")
    assert refused.returncode != 0 and "memory/bad.md:1:" in refused.stderr  # the old entry still validates
    sh(desk.root, "rm", "-q", "--cached", "memory/bad.md")
    (desk.root / "memory" / "bad.md").unlink()
    code, data = doctor(run)
    assert code == 3 and checks(data)["hooks"] == "found"
    assert "older desk" in next(p["message"] for p in data["problems"] if p["check"] == "hooks")
    code, data = doctor(run, "--repair")
    assert code == 0 and "-m desk.cli.hook " in (desk.git_dir / "hooks" / "pre-commit").read_text()


def test_persons_uncommitted_edits_survive_repair(desk: DeskFolder, run: DeskRunner) -> None:
    write(desk.root, "NOW.md", "# NOW\n\nmy unsaved thoughts\n")
    write(desk.root, "memory/nu.md", memory_text("nu"))  # new, uncommitted, index not yet updated
    code, data = doctor(run, "--repair")
    assert (desk.root / "NOW.md").read_text() == "# NOW\n\nmy unsaved thoughts\n"
    assert (desk.root / "memory/nu.md").read_text() == memory_text("nu")
    assert "nu" in (desk.root / "MEMORY.md").read_text()  # index written, not committed
    assert "?? memory/nu.md" in sh(desk.root, "status", "--porcelain").stdout


def test_the_next_mutation_first_finishes_an_interrupted_one(desk: DeskFolder, run: DeskRunner) -> None:
    _crash_before_commit(desk.root, "xi")
    from desk.transaction import commit_message, transaction

    with transaction(desk) as tx:  # the next mutation, on other paths
        tx.commit({"journal/2026-11-29.md": b"# a day\n"}, commit_message("journal", {}))
    subjects = sh(desk.root, "log", "--format=%s").stdout.splitlines()
    assert subjects[:2] == ["journal", "remember: xi"]
    assert not list(desk.git_dir.glob("desk-pending-*"))
    assert sh(desk.root, "status", "--porcelain").stdout == ""
    code, data = doctor(run)
    assert code == 0, data


def test_a_crash_before_the_index_refresh_of_a_new_memory_is_finished(desk: DeskFolder,
                                                                     run: DeskRunner) -> None:
    """Killed after writing memory/new.md but before the person's index knew it: it is untracked."""
    _crash_before_commit(desk.root, "fresh", before="Index.refresh_entries")  # the person's index refreshed next
    assert "?? memory/fresh.md" in sh(desk.root, "status", "--porcelain").stdout
    code_, data = doctor(run, "--repair")
    assert code_ == 0 and checks(data)["interrupted"] == "repaired", data
    assert "remember: fresh" in sh(desk.root, "log", "--format=%s").stdout
    assert sh(desk.root, "status", "--porcelain").stdout == ""


def test_secret_and_archive_rewrite_in_history(desk: DeskFolder, run: DeskRunner) -> None:
    from desk.archive.store import append_event

    secret = "gh" + "p_" + "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC1234"
    write(desk.root, "NOW.md", f"# NOW\n\n{secret}\n")
    sh(desk.root, "add", "NOW.md")
    commit(desk.root, "leak", "--no-verify")
    write(desk.root, "NOW.md", "# NOW\n")
    sh(desk.root, "add", "NOW.md")
    assert commit(desk.root, "clean up").returncode == 0  # the file is clean now; history is not
    append_event(desk, "inbound", "hello")
    rel = sh(desk.root, "ls-files", "--others", ".system/archive").stdout.split()[0]
    sh(desk.root, "add", "-f", rel)  # ignored until desk commits it
    assert commit(desk.root, "archive").returncode == 0
    (desk.root / rel).write_bytes(b"")
    sh(desk.root, "add", rel)
    commit(desk.root, "truncate", "--no-verify")
    code, data = doctor(run)
    found = checks(data)
    assert code == 3 and found["bypassed-secret"] == "needs-person"
    assert found["bypassed-archive-append-only"] == "needs-person"
    assert secret not in json.dumps(data)


def test_a_crash_after_the_branch_moved_leaves_no_stale_index(desk: DeskFolder, run: DeskRunner) -> None:
    """Killed after the compare-and-swap, before the person's index was published: HEAD has the
    commit, the person's index still the old entries, which a plain `git commit` would revert."""
    _crash_before_commit(desk.root, "omicron", before="IndexLock.publish")
    assert "remember: omicron" in sh(desk.root, "log", "-1", "--format=%s").stdout
    code, data = doctor(run, "--repair")
    assert code == 0, data
    assert sh(desk.root, "diff", "--cached", "--name-only").stdout == ""
    assert sh(desk.root, "status", "--porcelain").stdout == ""
    write(desk.root, "journal/after.md", "# a person's note\n")
    sh(desk.root, "add", "journal/after.md")
    assert commit(desk.root, "a person's commit").returncode == 0
    assert sh(desk.root, "show", "--name-only", "--format=", "HEAD").stdout.split() == ["journal/after.md"]
    assert (desk.root / "memory/omicron.md").exists()


def test_a_no_verify_merge_is_checked_against_each_parent(desk: DeskFolder, run: DeskRunner) -> None:
    """Issue 15.6: what a merge made itself (a SOUL.md change, a key in NOW.md) is reported; what it
    took from a parent (checked in that parent's commit) is not reported again."""
    secret = "gh" + "p_" + "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC1234"
    sh(desk.root, "checkout", "-q", "-b", "side")
    write(desk.root, "journal/side.md", "from the side\n")
    sh(desk.root, "add", "journal/side.md")
    assert commit(desk.root, "side").returncode == 0
    write(desk.root, "SOUL.md", "# a new soul, authorised\n")
    sh(desk.root, "add", "SOUL.md")
    assert commit(desk.root, "soul\n\nDesk-Actor: user\nDesk-Authorized-By: Ada").returncode == 0
    sh(desk.root, "checkout", "-q", "main")
    write(desk.root, "journal/main.md", "on main\n")
    sh(desk.root, "add", "journal/main.md")
    assert commit(desk.root, "main").returncode == 0
    # a clean merge that only takes the side's authorised SOUL.md: nothing to report
    assert sh(desk.root, "merge", "-q", "--no-edit", "side").returncode == 0
    code, data = doctor(run)
    assert code == 0, data
    # a --no-verify merge that changes SOUL.md and NOW.md itself
    sh(desk.root, "checkout", "-q", "side")
    write(desk.root, "journal/side2.md", "more\n")
    sh(desk.root, "add", "journal/side2.md")
    assert commit(desk.root, "side 2").returncode == 0
    sh(desk.root, "checkout", "-q", "main")
    sh(desk.root, "merge", "-q", "--no-commit", "--no-ff", "side")
    write(desk.root, "SOUL.md", "# rewritten inside the merge\n")
    write(desk.root, "NOW.md", f"# NOW\n\n{secret}\n")
    sh(desk.root, "add", "SOUL.md", "NOW.md")
    assert commit(desk.root, "merge side\n\nDesk-Actor: assistant", "--no-verify").returncode == 0
    assert len(sh(desk.root, "log", "-1", "--format=%P").stdout.split()) == 2
    code, data = doctor(run)
    found = checks(data)
    assert code == 3 and found["bypassed-soul-unauthorized"] == "needs-person"
    assert found["bypassed-secret"] == "needs-person"
    merge = head(desk.root)[:7]
    assert all(merge in p["message"] for p in data["problems"] if p["check"].startswith("bypassed-"))
    assert secret not in json.dumps(data)


def test_records_that_block_every_checkpoint_are_moved_aside_never_lost(desk: DeskFolder, run: DeskRunner) -> None:
    """A record of another desk in the uncommitted growth (as desk 0.1 could write, or a hand
    edit) blocked checkpoint and digest for good; the only hint was to discard the day's events."""
    from desk.archive.store import append_event, archive_files

    for text in ("first event", "second event", "third event"):
        append_event(desk, "inbound", text, session="s1", at="2026-03-01T10:00:00Z")
    rel = archive_files(desk)[0].rel
    path = desk.root / rel
    lines = path.read_bytes().split(b"\n")
    record = json.loads(lines[1])
    record["desk_id"] = "desk-someone-else"
    lines[1] = json.dumps(record, sort_keys=True, separators=(",", ":")).encode()
    damaged = b"\n".join(lines)
    path.write_bytes(damaged)
    assert run("checkpoint").exit_code == 3
    found = run("doctor", "--json")
    problems = json.loads(found.output)["problems"]
    assert [p["status"] for p in problems if p["check"] == "archive-blocked"] == ["found"]

    repaired = run("doctor", "--repair", "--json")
    done = [p for p in json.loads(repaired.output)["problems"] if p["check"] == "archive-blocked"]
    assert [p["status"] for p in done] == ["repaired"], repaired.output
    aside = list((desk.root / ".system/quarantine").iterdir())
    assert len(aside) == 1 and aside[0].read_bytes() == damaged  # every byte kept
    kept = [json.loads(line) for line in path.read_bytes().splitlines()]
    assert [r["content"] for r in kept] == ["first event", "third event"]  # the valid ones, again
    old_ids = {json.loads(line)["id"] for line in damaged.splitlines()}
    assert all(r["meta"]["desk.restored_from"] in old_ids and r["id"] not in old_ids for r in kept)
    committed = sh(desk.root, "show", "--name-only", "--format=", "HEAD").stdout.split()
    assert rel in committed and any(p.startswith(".system/quarantine/") for p in committed)
    assert "Desk-Op: quarantine" in sh(desk.root, "log", "-1", "--format=%B").stdout
    assert sh(desk.root, "status", "--porcelain").stdout == ""
    assert run("archive", "verify").exit_code == 0
    assert run("checkpoint").exit_code == 0  # nothing blocks it any more


def _in_read_only_mount(root: Path, *commands: list[str]) -> list[tuple[int, str]]:
    """(exit code, stdout + stderr) of each `desk --desk ROOT ...` command, run on a read-only bind
    mount of the desk in a mount namespace of its own (`unshare`: root too is refused every write,
    as in tests/storage/test_sqlite_cache.py)."""
    import re
    import shutil

    import pytest

    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) for a read-only mount")
    mark = "@@exit@@"
    quote = "'{}'".format
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" || exit 99; ' + "; ".join(
        " ".join(quote(w) for w in [sys.executable, "-m", "desk", "--desk", str(root), *argv]) + f" 2>&1; echo {mark}$?"
        for argv in commands)
    proc = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, str(root)],
                          capture_output=True, text=True)
    if proc.returncode == 99 or proc.returncode and not proc.stdout:
        pytest.skip(f"no read-only bind mount here (unshare): {proc.stderr.strip()}")
    parts = re.split(f"{mark}(\\d+)\n", proc.stdout)
    return [(int(code), out) for out, code in zip(parts[0::2], parts[1::2])]


def test_a_read_only_desk_is_diagnosed_and_repair_is_refused_naming_the_folder(desk: DeskFolder,
                                                                               run: DeskRunner) -> None:
    """`desk doctor` of a desk on a read-only mount (or another user's folder) answers as it does
    where the desk is writable: its lock is taken shared on a read-only descriptor (it could not
    open the lock file to write, and said so as a bare "Read-only file system"). `--repair`
    there is refused (exit 1) naming the folder it cannot write, with a hint; nothing changes."""
    from desk.archive.store import append_event
    from tests.conftest import snapshot

    write(desk.root, "memory/broken.md", "---\nname: broken\n---\nno type\n")
    append_event(desk, "inbound", "hello")
    archive = next((desk.root / ".system/archive").glob("*.jsonl"))
    archive.write_bytes(archive.read_bytes() + b'{"at":"2026-')  # torn: looked at under the archive lock
    writable = doctor(run)
    assert writable[0] == 3 and checks(writable[1]) == {"frontmatter-field": "needs-person", "archive-torn": "found"}
    # The config cache is to be written anew (its temporary file could not be removed either).
    (desk.git_dir / "desk-config.json").unlink(missing_ok=True)
    os.utime(desk.git_dir / "config", (OLD, OLD))  # not written this very second: an answer to keep
    before = snapshot(desk.root)
    read, repair = _in_read_only_mount(desk.root, ["doctor", "--json"], ["doctor", "--repair"])
    assert (read[0], json.loads(read[1])) == writable
    assert repair[0] == 1, repair
    assert repair[1].startswith(f"desk: error: cannot write in {desk.git_dir} (Read-only file system)"), repair
    assert "\nhint: " in repair[1] and "without --repair" in repair[1] and "Traceback" not in repair[1]
    assert snapshot(desk.root) == before
    for lock in desk.git_dir.glob("desk*.lock*"):  # a desk no desk process ever locked: nothing to lock
        lock.unlink()
    [read] = _in_read_only_mount(desk.root, ["doctor", "--json"])
    assert (read[0], json.loads(read[1])) == writable
