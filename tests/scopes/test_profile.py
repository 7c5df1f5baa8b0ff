"""`desk user`: explicit field patches on a fixed schema, one commit per change, scopes kept apart."""

from __future__ import annotations

import json
import shutil

import pytest

import desk as desk_api
from desk.errors import InvalidFileError
from desk.layout import OWNER_SCOPE, DeskFolder, is_scope_id, profile_path, scope_id
from desk.formats.scope_files import parse_profile, timezone_problem
from tests.conftest import DeskRunner, git, snapshot

AS_OF = "2026-08-01T04:00:00Z"


def commits(desk: DeskFolder) -> int:
    return int(git(desk.root, "rev-list", "--count", "HEAD"))


def test_set_changes_only_the_named_fields_and_keeps_the_free_text(desk: DeskFolder, run: DeskRunner) -> None:
    body = parse_profile(desk.path("USER.md").read_bytes(), "USER.md").body
    start = commits(desk)
    out = json.loads(run("user", "set", "name=老王", "call_them=王哥", "timezone=UTC+8", "--json").output)
    assert (out["status"], out["changed"]) == ("updated", ["call_them", "name", "timezone"])
    out = json.loads(run("user", "set", "language=Chinese", "--json").output)
    assert out["fields"] == {"name": "老王", "call_them": "王哥", "timezone": "UTC+8", "language": "Chinese"}
    same = json.loads(run("user", "set", "name=老王", "timezone=UTC+8", "--json").output)
    assert (same["status"], same["commit"]) == ("unchanged", None)
    assert commits(desk) == start + 2
    profile = parse_profile(desk.path("USER.md").read_bytes(), "USER.md")
    assert profile.body == body and profile.user_scope == OWNER_SCOPE
    assert "Desk-Op: user" in git(desk.root, "log", "-1", "--format=%B")
    context = desk_api.open(desk.root).context(now=AS_OF).text()
    assert "Name: 老王 · Call them: 王哥 · Timezone: UTC+8 · Language: Chinese" in context


def test_unset_removes_and_unset_of_nothing_is_unchanged(desk: DeskFolder, run: DeskRunner) -> None:
    run("user", "set", "name=Ada", "pronouns=she/her")
    start = commits(desk)
    out = json.loads(run("user", "unset", "pronouns", "--json").output)
    assert (out["status"], out["fields"]) == ("updated", {"name": "Ada"})
    assert json.loads(run("user", "unset", "pronouns", "--json").output)["status"] == "unchanged"
    assert json.loads(run("user", "set", "name=", "--json").output)["fields"] == {}  # empty = unset
    assert commits(desk) == start + 2


@pytest.mark.parametrize("args", [("colour=red",), ("timezone=Mars/Olympus",), ("timezone=UTC+15",),
                                  ("timezone=../../etc/passwd",), ("name=two\nlines",), ("name",),
                                  ("name= padded ",)])
def test_unknown_fields_and_bad_values_are_usage_errors(desk: DeskFolder, run: DeskRunner,
                                                        args: tuple[str, ...]) -> None:
    before = snapshot(desk.root)
    result = run("user", "set", *args)
    assert result.exit_code == 2, result.output
    assert snapshot(desk.root) == before
    assert run("user", "unset", "colour").exit_code == 2


def test_timezones() -> None:
    for ok in ("Asia/Shanghai", "UTC", "UTC+8", "UTC-05:30", "+0800", "GMT+14", "Europe/London"):
        assert timezone_problem(ok) is None, ok
    for bad in ("UTC+15", "+14:30", "Asia/Nowhere", "", "utc+8", "/etc/localtime", "Asia/../UTC"):
        assert timezone_problem(bad) is not None, bad


def test_other_users_live_in_their_own_scope(desk: DeskFolder, run: DeskRunner) -> None:
    assert run("--user", "ada@example.org", "user", "set", "name=Ada").exit_code == 0
    scope = scope_id("Ada@Example.org ")
    assert is_scope_id(scope) and scope == scope_id("ada@example.org") != OWNER_SCOPE
    assert scope_id("../../etc") .startswith("u-") and scope_id(None) == scope_id("  ") == OWNER_SCOPE
    path = profile_path(scope)
    assert path == f"users/{scope}/USER.md" and desk.path(path).is_file()
    assert "ada@example.org" not in desk.path(path).read_text()  # the id itself is never stored
    shown = json.loads(run("user", "show", "--user", "ada@example.org", "--json").output)
    assert shown == {"user_scope": scope, "path": path, "fields": {"name": "Ada"}}
    assert json.loads(run("user", "show", "--json").output)["fields"] == {}  # the owner's, untouched
    ada = desk_api.open(desk.root).context(user="ada@example.org", now=AS_OF)
    paths = [s["path"] for s in ada.to_json()["sections"]]
    assert "USER.md" not in paths and path in paths


def test_a_copied_profile_is_refused(desk: DeskFolder, run: DeskRunner) -> None:
    run("--user", "ada", "user", "set", "name=Ada Secret")
    run("--user", "bob", "user", "set", "name=Bob")
    shutil.copyfile(desk.path(profile_path(scope_id("ada"))), desk.path(profile_path(scope_id("bob"))))
    with pytest.raises(InvalidFileError):
        desk_api.open(desk.root).user_show(user="bob")
    assert run("--user", "bob", "user", "show").exit_code == 3
    context = desk_api.open(desk.root).context(user="bob", now=AS_OF).text()
    assert "Ada Secret" not in context and "left out" in context
    assert run("validate", "--all").exit_code == 3
    shutil.copyfile(desk.path(profile_path(scope_id("ada"))), desk.path("USER.md"))
    assert "Ada Secret" not in desk_api.open(desk.root).context(now=AS_OF).text()


def test_stray_files_in_users_are_refused_by_validate(desk: DeskFolder, run: DeskRunner) -> None:
    run("--user", "ada", "user", "set", "name=Ada")
    (desk.root / "users" / "alice").mkdir()
    (desk.root / "users" / "alice" / "USER.md").write_text("---\nname: x\n---\n")
    (desk.root / "users" / scope_id("ada") / "notes.md").write_text("hello\n")
    found = json.loads(run("validate", "--all", "--json").output)["findings"]
    assert sorted((f["path"], f["rule"]) for f in found) == [
        ("users/alice/USER.md", "scope-path"), (f"users/{scope_id('ada')}/notes.md", "scope-path")]


def test_an_owner_profile_without_frontmatter_is_free_text(desk: DeskFolder, run: DeskRunner) -> None:
    desk.path("USER.md").write_text("Just some notes about the owner.\n")
    git(desk.root, "-c", "user.name=T", "-c", "user.email=t@example.org", "commit", "-qam", "plain")
    assert run("validate", "--all").exit_code == 0
    assert json.loads(run("user", "set", "name=Ann", "--json").output)["status"] == "updated"
    profile = parse_profile(desk.path("USER.md").read_bytes(), "USER.md")
    assert profile.fields == {"name": "Ann"} and profile.body == "Just some notes about the owner.\n"


def test_an_older_desk_json_keeps_the_fast_budget_path(desk: DeskFolder) -> None:
    """Budget keys added for scopes default as desk.config says, without loading pydantic."""
    from desk.config import ContextBudgets
    from desk.recall.context.request import LATER_BUDGETS, _configured_budgets

    defaults = ContextBudgets().model_dump()
    assert {k: defaults[k] for k in LATER_BUDGETS} == LATER_BUDGETS
    config = json.loads(desk.path(".system/desk.json").read_text())
    for key in LATER_BUDGETS:
        del config["budgets"][key]
    desk.path(".system/desk.json").write_text(json.dumps(config))
    assert _configured_budgets(DeskFolder(desk.root)) == defaults
