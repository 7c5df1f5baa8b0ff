"""Schema versions: a v1 desk (tests/fixtures/desk-v1.tar.gz, made by desk before adjudication,
before memory files and facts carried a version) is read as it is, upgraded file by file by its
next writes, or all at once by `desk migrate`; a newer desk, memory file or fact is refused."""

from __future__ import annotations

import json
import subprocess
import tarfile
from pathlib import Path

import pytest

import desk as desk_api
from desk.api import Desk
from desk.archive.store import append_event
from desk.digest.run import read_facts
from desk.errors import DeskError
from desk.layout import DeskFolder
from desk.text.times import parse_time
from tests.conftest import DeskRunner, git, snapshot
from tests.guard_helpers import commit, git_env, sh

FIXTURE = Path(__file__).parent / "fixtures" / "desk-v1.tar.gz"
NOW = "2026-11-30T09:00:00Z"


@pytest.fixture
def v1(tmp_path: Path) -> Desk:
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(tmp_path, filter="data")
    d = desk_api.open(tmp_path / "desk")
    d.hooks_install()  # the archive leaves out hooks: they name the Python that installed them
    git(d.root, "config", "user.name", "Ada Lovelace")
    git(d.root, "config", "user.email", "ada@example.org")
    return d


def versions(d: Desk) -> tuple[int, int]:
    return (json.loads(d.path(".system/desk.json").read_text())["schema_version"],
            json.loads(d.path(".system/conflicts.json").read_text())["schema_version"])


MEMORY = "memory/storage.db.md"


def test_a_v1_desk_is_read_as_it_is_and_reading_never_rewrites(v1: Desk) -> None:
    assert versions(v1) == (1, 1)
    before = snapshot(v1.root)
    cases = v1.conflicts_list().cases
    assert len(cases) == 2 and all(c["resolution"] is None for c in cases)
    shown = v1.conflicts_show(cases[0]["id"])
    assert all(e is not None and e["content"] for e in shown.evidence.values())  # v1 facts, read
    assert v1.validate("all").exit_code == 0
    v1.context()
    # v1 memory files (no `schema:` key) and v1 facts (no payload.schema_version) read as they are
    memory = v1.show("storage.db").memory
    assert memory is not None and memory.meta.schema is None and memory.meta.schema_version == 1
    assert b"schema" not in before[MEMORY]
    assert "schema" not in json.loads(DeskRunner(v1.root)("show", "storage.db", "--json").output)
    facts, invalid = read_facts(v1, parse_time("2026-11-29T20:00:00Z", "t"))
    assert (len(facts), invalid) == (7, 0)
    assert all("schema_version" not in json.loads(line)["payload"]
               for path, data in before.items() if path.startswith(".system/archive/2026")
               for line in data.decode().splitlines())
    assert snapshot(v1.root) == before


def test_the_next_write_saves_the_current_version(v1: Desk) -> None:
    case = next(c for c in v1.conflicts_list().cases if c["key"] == "storage.db")
    choice = next(c["id"] for c in case["candidates"] if c["content"] == "Use MySQL.")
    v1.resolve(case["id"], choice, expected_revision=1, event_id="review:v1", actor="ada", rationale="ok",
               now=NOW)
    assert versions(v1) == (1, 2)  # the queue was written; desk.json waits for `desk migrate`
    text = v1.path(MEMORY).read_text()
    assert text.endswith("\nschema: 2\n---\nUse MySQL.\n")  # the memory written is stamped
    assert v1.validate("all").exit_code == 0
    v1.fact_add("Tabs, never spaces.", kind="convention", importance=5, key="style.indent", at="2026-10-01T10:00:00Z")
    digested = v1.digest(as_of="2026-12-30T00:00:00Z").value
    assert digested.promoted == ["style.indent"]  # a memory the digest writes is stamped
    assert v1.path("memory/style.indent.md").read_text().endswith("\nschema: 2\n---\nTabs, never spaces.\n")
    added = v1.fact_add("Use Redis for caching.", kind="decision", importance=3)
    assert added.record["payload"]["schema_version"] == 2  # a new fact says its version


def test_migrate_upgrades_the_whole_desk_in_one_commit(v1: Desk) -> None:
    head = git(v1.root, "rev-parse", "HEAD")
    before = snapshot(v1.root)
    run = DeskRunner(v1.root)
    planned = run("migrate", "--dry-run", "--json")
    assert planned.exit_code == 0 and json.loads(planned.output)["status"] == "planned"
    assert json.loads(planned.output)["memory_files"] == 1
    assert {c["path"] for c in json.loads(planned.output)["changes"]} == {".system/desk.json",
                                                                          ".system/conflicts.json", "memory/"}
    assert snapshot(v1.root) == before
    shown = run("migrate")
    assert shown.exit_code == 0 and "1 memory file stamped `schema: 2`" in shown.output
    assert versions(v1) == (3, 2)
    assert git(v1.root, "rev-parse", "HEAD~1") == head  # one commit
    assert sorted(git(v1.root, "show", "--name-only", "--format=", "HEAD").split()) == [
        ".system/conflicts.json", ".system/desk.json", MEMORY]
    # the memory file gains exactly one line, at the end of its frontmatter; MEMORY.md is untouched
    diff = git(v1.root, "diff", "-U0", "HEAD~1", "HEAD", "--", MEMORY).splitlines()
    assert [line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")] == ["+schema: 2"]
    assert v1.path(MEMORY).read_bytes() == before[MEMORY].replace(b"\n---\n", b"\nschema: 2\n---\n", 1)
    assert v1.path("MEMORY.md").read_bytes() == before["MEMORY.md"]
    assert "Desk-Op: migrate" in git(v1.root, "log", "-1", "--format=%B")
    assert git(v1.root, "status", "--porcelain") == ""
    again = v1.migrate().value
    assert (again.status, again.memory_files, again.changes, again.commit) == ("unchanged", 0, [], None)
    assert git(v1.root, "rev-parse", "HEAD~1") == head  # the second migrate committed nothing
    assert len(v1.conflicts_list().cases) == 2 and v1.validate("all").exit_code == 0
    memory = v1.show("storage.db").memory
    assert memory is not None and memory.meta.schema == 2


def test_migrate_stamps_project_memories_and_hand_written_files_and_refuses_a_dirty_one(v1: Desk) -> None:
    v1.remember("tea", type="preference", description="Tea", body="Green tea.", triggers=["tea"],
                project="garden")
    hand = "---\nname: notes\ndescription: By hand\ntype: fact   # typed by a person\n---\nA note.\n"
    v1.path("memory/notes.md").write_text(hand)
    git(v1.root, "add", "memory/notes.md")
    git(v1.root, "commit", "-qm", "a person's memory", "--no-verify")
    v1.reindex()
    v1.path(MEMORY).write_text(v1.path(MEMORY).read_text() + "An edit not committed.\n")
    before = snapshot(v1.root)
    result = DeskRunner(v1.root)("migrate")
    assert result.exit_code == 4 and MEMORY in result.output  # a person's uncommitted edit: not touched
    assert snapshot(v1.root) == before
    git(v1.root, "checkout", "--", MEMORY)
    done = v1.migrate().value
    assert done.memory_files == 2  # storage.db and notes; the project memory was written stamped
    assert v1.path("memory/notes.md").read_text() == hand.replace("\n---\nA", "\nschema: 2\n---\nA")
    assert "schema: 2\n" in v1.path("projects/garden/memory/tea.md").read_text()
    assert v1.validate("all").exit_code == 0 and v1.migrate().value.status == "unchanged"
    # a current desk that gains a person's unversioned file: migrate stamps it, the desk stays at 3
    v1.path("memory/later.md").write_text(hand.replace("notes", "later"))
    git(v1.root, "add", "memory/later.md")
    git(v1.root, "commit", "-qm", "another by hand", "--no-verify")
    v1.reindex()
    later = DeskRunner(v1.root)("migrate")
    assert later.exit_code == 0 and "migrated the desk at schema 3" in later.output, later.output
    assert "memory/: 1 memory file stamped" in later.output


def test_a_newer_desk_is_refused_never_downgraded(v1: Desk) -> None:
    path = v1.path(".system/desk.json")
    config = json.loads(path.read_text())
    config["schema_version"] = 4
    path.write_text(json.dumps(config, indent=2) + "\n")
    git(v1.root, "commit", "-qam", "from the future", "--no-verify")
    run = DeskRunner(v1.root)
    before = snapshot(v1.root)
    for args in (["migrate"], ["digest", "--as-of", NOW], ["remember", "x", "A body.", "--type", "fact",
                                                           "-d", "d", "-t", "x"]):
        result = run(*args)
        assert result.exit_code == 1 and "newer desk" in result.output, (args, result.output)
    assert snapshot(v1.root) == before
    with pytest.raises(DeskError):
        desk_api.open(v1.root).migrate()
    queue = v1.path(".system/conflicts.json")
    queue.write_text(queue.read_text().replace('"schema_version": 1', '"schema_version": 7'))
    assert any(f.rule == "conflicts-version" for f in v1.validate("all").report.findings)


def test_an_unknown_setting_names_the_key_and_says_to_upgrade(desk: DeskFolder) -> None:
    path = desk.path(".system/desk.json")
    config = json.loads(path.read_text())
    config["budgets"]["from_the_future"] = 1
    path.write_text(json.dumps(config, indent=2) + "\n")
    git(desk.root, "-c", "user.name=Ada", "-c", "user.email=ada@example.org", "commit", "-qam",
        "a newer desk setting", "--no-verify")
    before = snapshot(desk.root)
    result = DeskRunner(desk.root)("context")  # a command that reads the settings
    assert result.exit_code == 3, result.output
    line = next(i for i, l in enumerate(path.read_text().split("\n"), 1) if '"from_the_future"' in l)
    assert f".system/desk.json:{line}:" in result.output and "budgets.from_the_future" in result.output
    assert "upgrade desk" in result.output
    assert snapshot(desk.root) == before


def test_a_newer_memory_file_is_refused_by_validate_the_hook_and_writers(v1: Desk) -> None:
    path = v1.path(MEMORY)
    text = path.read_text().replace("\n---\n", "\nschema: 99\n---\n", 1)
    line = text.splitlines().index("schema: 99") + 1
    path.write_text(text)
    run = DeskRunner(v1.root)
    result = run("validate", "--all")
    assert result.exit_code == 3
    assert f"{MEMORY}:{line}: memory-schema: schema: 99 was written by a newer desk" in result.output
    assert "upgrade desk" in result.output
    # a real `git commit` through the installed hook: refused, naming path:line; the hook exits 3
    sh(v1.root, "add", MEMORY)
    proc = commit(v1.root, "from a newer desk")
    assert proc.returncode != 0 and f"{MEMORY}:{line}: memory-schema" in proc.stdout + proc.stderr
    hook = subprocess.run([str(v1.root / ".git" / "hooks" / "pre-commit")], cwd=v1.root, env=git_env(),
                          capture_output=True, text=True)
    assert hook.returncode == 3, hook.stdout + hook.stderr
    sh(v1.root, "commit", "-qm", "from a newer desk", "--no-verify")
    before = snapshot(v1.root)
    for args in (["remember", "storage.db", "Use Oracle.", "--type", "decision", "-d", "d"],
                 ["set", "storage.db", "--importance", "2"], ["migrate"]):
        refused = run(*args)
        assert refused.exit_code == 3 and "newer desk" in refused.output, (args, refused.output)
    assert snapshot(v1.root) == before  # never downgraded


def test_a_fact_of_a_newer_version_is_refused_by_its_readers(v1: Desk) -> None:
    # unkeyed: an older fact like it is a recent fact `desk context` shows
    event = append_event(v1, "fact", content="Deploy on Fridays.", at="2026-09-05T10:00:00Z",
                         payload={"kind": "decision", "importance": 5, "key": None, "schema_version": 3})
    where = f".system/archive/2026-09-05.{event['id'].split('-')[1]}.jsonl:1"
    before = snapshot(v1.root)
    run = DeskRunner(v1.root)
    digest = run("digest", "--as-of", NOW)
    assert digest.exit_code == 1, digest.output
    assert f"{where}: fact {event['id']} has schema_version 3: made by a newer desk" in digest.output
    assert "upgrade desk" in digest.output
    case = next(c for c in v1.conflicts_list().cases if c["key"] == "storage.db")
    resolve = run("resolve", case["id"], case["candidates"][0]["id"], "--expected-revision", "1",
                  "--event-id", "e", "--actor", "ada", "--rationale", "r")
    assert resolve.exit_code == 1 and f"{where}: fact" in resolve.output
    context = run("context", "--now", "2026-09-06T00:00:00Z")
    assert context.exit_code == 0 and f"{where}: fact {event['id']}" in context.output  # said, not shown
    assert "- " + event["id"] not in context.output and "Deploy on Fridays." not in context.output.replace(
        f"fact {event['id']}", "")
    assert snapshot(v1.root) == before
