"""Schema versions: a v1 desk (tests/fixtures/desk-v1.tar.gz, made by desk before adjudication) is
read as it is, upgraded file by file by its next writes, or all at once by `desk migrate`; a newer
desk is refused."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

import desk as desk_api
from desk.api import Desk
from desk.errors import DeskError
from desk.layout import DeskFolder
from tests.conftest import DeskRunner, git, snapshot

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


def test_a_v1_desk_is_read_as_it_is_and_reading_never_rewrites(v1: Desk) -> None:
    assert versions(v1) == (1, 1)
    before = snapshot(v1.root)
    cases = v1.conflicts_list().cases
    assert len(cases) == 2 and all(c["resolution"] is None for c in cases)
    v1.conflicts_show(cases[0]["id"])
    assert v1.validate("all").exit_code == 0
    v1.context()
    assert snapshot(v1.root) == before


def test_the_next_write_saves_the_current_version(v1: Desk) -> None:
    case = next(c for c in v1.conflicts_list().cases if c["key"] == "storage.db")
    choice = next(c["id"] for c in case["candidates"] if c["content"] == "Use MySQL.")
    v1.resolve(case["id"], choice, expected_revision=1, event_id="review:v1", actor="ada", rationale="ok",
               now=NOW)
    assert versions(v1) == (1, 2)  # the queue was written; desk.json waits for `desk migrate`
    assert v1.path("memory/storage.db.md").read_text().endswith("Use MySQL.\n")
    assert v1.validate("all").exit_code == 0


def test_migrate_upgrades_the_whole_desk_in_one_commit(v1: Desk) -> None:
    head = git(v1.root, "rev-parse", "HEAD")
    before = snapshot(v1.root)
    run = DeskRunner(v1.root)
    planned = run("migrate", "--dry-run", "--json")
    assert planned.exit_code == 0 and json.loads(planned.output)["status"] == "planned"
    assert {c["path"] for c in json.loads(planned.output)["changes"]} == {".system/desk.json",
                                                                          ".system/conflicts.json"}
    assert snapshot(v1.root) == before
    done = v1.migrate().value
    assert done.status == "migrated" and (done.from_version, done.to_version) == (1, 2)
    assert versions(v1) == (2, 2)
    assert git(v1.root, "rev-parse", "HEAD~1") == head  # one commit
    assert sorted(git(v1.root, "show", "--name-only", "--format=", "HEAD").split()) == [
        ".system/conflicts.json", ".system/desk.json"]
    assert git(v1.root, "status", "--porcelain") == ""
    assert v1.migrate().value.status == "unchanged"
    assert len(v1.conflicts_list().cases) == 2 and v1.validate("all").exit_code == 0


def test_a_newer_desk_is_refused_never_downgraded(v1: Desk) -> None:
    path = v1.path(".system/desk.json")
    config = json.loads(path.read_text())
    config["schema_version"] = 3
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
    assert ".system/desk.json:1" in result.output and "budgets.from_the_future" in result.output
    assert "upgrade desk" in result.output
    assert snapshot(desk.root) == before
