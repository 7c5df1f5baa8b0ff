"""`desk import --project` (memories into a project's scope) and `--user` (an OpenClaw USER.md's
profile fields into a user's profile), with the interchange fixtures (docs/import-export.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import desk as desk_api
from desk.errors import UsageError
from desk.layout import DeskFolder, profile_path, project_index_path, project_memory_path, scope_id
from desk.formats.memory_file import parse_memory
from tests.conftest import DeskRunner, git, snapshot
from tests.interchange.test_importing import NOW, SOURCES, commits, do_import


def project_memory(desk: DeskFolder, project: str, name: str):  # type: ignore[no-untyped-def]
    path = project_memory_path(project, name)
    return parse_memory(desk.path(path).read_bytes(), path, name)


@pytest.mark.parametrize("fmt", ["claude-code", "markdown"])
def test_import_into_a_project_lands_in_its_memory_folder(desk: DeskFolder, identity: None, fmt: str) -> None:
    desk_index = desk.path("MEMORY.md").read_bytes()
    before = commits(desk)
    report = do_import(desk, fmt, SOURCES[fmt], project="billing")
    assert report["status"] == "imported" and report["project"] == "billing" and commits(desk) == before + 1
    created = [m for m in report["memories"] if m["action"] == "create"]
    assert created and all(m["path"] == project_memory_path("billing", m["name"]) for m in created)
    for line in created:
        memory = project_memory(desk, "billing", line["name"])
        assert memory.meta.project == "billing" and memory.meta.source == "import"
    index = desk.path(project_index_path("billing")).read_text()
    assert all(f"- [{m['name']}](memory/{m['name']}.md)" in index for m in created)
    assert desk.path("MEMORY.md").read_bytes() == desk_index and not list(desk.path("memory").glob("*.md"))
    changed = git(desk.root, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(changed) == sorted([project_index_path("billing"), *(m["path"] for m in created)])
    assert "Desk-Project: billing" in git(desk.root, "log", "-1", "--format=%B")
    assert desk_api.open(desk.root).validate("all").exit_code == 0
    again = do_import(desk, fmt, SOURCES[fmt], project="billing")  # idempotent, in its scope
    assert again["status"] == "unchanged" and commits(desk) == before + 1
    # the same source desk-wide is another scope: its memories are created there, apart
    assert {m["action"] for m in do_import(desk, fmt, SOURCES[fmt])["memories"]} >= {"create"}
    assert desk.path(project_index_path("billing")).read_text() == index


def test_a_project_import_collides_only_within_the_project(desk: DeskFolder, identity: None,
                                                           run: DeskRunner) -> None:
    assert run("--project", "billing", "remember", "user-role", "--type", "fact", "-d", "Another fact",
               "-t", "role", "Billing's own fact about roles.").exit_code == 0
    report = do_import(desk, "claude-code", SOURCES["claude-code"], project="billing")
    line = next(m for m in report["memories"] if m["origin"] == "claude-code:memory/user_role.md")
    assert line["name"] == "user-role-2" and "holds a different fact" in line["reason"]
    out = json.loads(run("import", "claude-code", str(SOURCES["claude-code"]), "--project", "search",
                         "--dry-run", "--json").output)
    assert out["project"] == "search" and next(
        m for m in out["memories"] if m["origin"] == "claude-code:memory/user_role.md")["name"] == "user-role"
    assert not desk.path("projects/search").exists()


def test_import_into_a_bad_project_name_is_refused_with_nothing_written(desk: DeskFolder, run: DeskRunner) -> None:
    before = snapshot(desk.root)
    assert run("import", "markdown", str(SOURCES["markdown"]), "--project", "../x").exit_code == 2
    assert snapshot(desk.root) == before


def test_openclaw_user_md_fills_that_users_profile_in_the_import_commit(desk: DeskFolder, identity: None,
                                                                       run: DeskRunner) -> None:
    before = commits(desk)
    planned = do_import(desk, "openclaw", SOURCES["openclaw"], user="mei@example.org", dry_run=True)
    scope = scope_id("mei@example.org")
    assert planned["profile"] == {"user_scope": scope, "path": profile_path(scope),
                                  "fields": {"name": "Mei", "timezone": "Asia/Shanghai"},
                                  "changed": ["name", "timezone"]}
    assert not desk.path(profile_path(scope)).exists()
    report = do_import(desk, "openclaw", SOURCES["openclaw"], user="mei@example.org")
    assert commits(desk) == before + 1  # memories and profile: one commit
    assert profile_path(scope) in git(desk.root, "show", "--name-only", "--format=", "HEAD").split()
    shown = desk_api.open(desk.root).user_show(user="mei@example.org").to_json()
    assert shown["fields"] == {"name": "Mei", "timezone": "Asia/Shanghai"}
    assert report["profile"]["changed"] == ["name", "timezone"]
    assert do_import(desk, "openclaw", SOURCES["openclaw"], user="mei@example.org")["status"] == "unchanged"
    out = run("import", "openclaw", str(SOURCES["openclaw"]), "--user", "mei@example.org", "--dry-run")
    assert "profile" in out.output and "nothing changes" in out.output


@pytest.mark.parametrize("fmt", ["claude-code", "markdown", "mem0", "chat-export"])
def test_user_is_refused_for_a_source_without_profile_data(desk: DeskFolder, run: DeskRunner, fmt: str) -> None:
    before = snapshot(desk.root)
    with pytest.raises(UsageError, match="carries no user profile data"):
        do_import(desk, fmt, SOURCES[fmt], user="ada@example.org")
    result = run("import", fmt, str(SOURCES[fmt]), "--user", "ada@example.org")
    assert result.exit_code == 2 and "hint:" in result.output
    assert snapshot(desk.root) == before


def test_user_is_refused_for_a_user_md_without_a_labelled_field(desk: DeskFolder, tmp_path: Path) -> None:
    source = tmp_path / "workspace"
    shutil.copytree(SOURCES["openclaw"], source)
    (source / "USER.md").write_text("# USER.md\n\n- **Name:** *(optional)*\n- **Notes:** likes tea\n")
    with pytest.raises(UsageError, match="no labelled line"):
        do_import(desk, "openclaw", source, user="ada@example.org")
    (source / "USER.md").write_text("# USER.md\n\n- **Name:** Ada\n- **Timezone:** Mars/Olympus\n")
    from desk.errors import InvalidFileError

    before = snapshot(desk.root)
    with pytest.raises(InvalidFileError, match="timezone") as refused:
        do_import(desk, "openclaw", source, user="ada@example.org")
    # the finding names the source's file and the line the bad value was read from, not line 1 of
    # the desk's own USER.md (which `desk validate --all`, the old hint, found nothing wrong with)
    assert [(f.path, f.line) for f in refused.value.findings] == [(str(source / "USER.md"), 4)]
    assert "source's USER.md" in str(refused.value.hint) and "validate" not in str(refused.value.hint)
    assert snapshot(desk.root) == before
    assert NOW  # the fixed clock of the import tests
