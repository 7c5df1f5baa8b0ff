"""desk.gate.scope_index: a project's MEMORY.md and a user scope's PREFERENCES.md are checked by
the gate like MEMORY.md (real `git commit` through the hooks), and the fixer regenerates them."""

from __future__ import annotations

import datetime as dt
import json

import desk as desk_api
from desk.gate.validate import validate_staged
from desk.gate.whole import validate_all
from desk.layout import DeskFolder, pref_path, prefs_index_path, project_index_path, project_memory_path
from tests.conftest import DeskRunner
from tests.guard_helpers import add_commit, commit, head, memory_text, sh, write

NOW = "2026-08-01T00:00:00Z"


def project_memory_text(name: str, project: str) -> str:
    return memory_text(name, extra=f"project: {project}\n")


def stale(findings: list[object]) -> list[tuple[str, int]]:
    return [(f.path, f.line) for f in findings if f.rule == "index-stale"]  # type: ignore[attr-defined]


def test_a_project_memory_committed_without_its_index_gets_it_from_the_fixer(desk: DeskFolder) -> None:
    path = project_memory_path("billing", "gamma")
    write(desk.root, path, project_memory_text("gamma", "billing"))
    sh(desk.root, "add", path)
    report, _ = validate_staged(desk)
    assert stale(report.findings) == [(project_index_path("billing"), 1)]
    proc = commit(desk.root, "gamma without its index")
    assert proc.returncode == 0, proc.stderr
    assert f"{project_index_path('billing')} was regenerated" in proc.stderr
    committed = sh(desk.root, "show", f"HEAD:{project_index_path('billing')}").stdout
    assert "- [gamma](memory/gamma.md)" in committed
    assert desk.path(project_index_path("billing")).read_text() == committed
    assert sh(desk.root, "status", "--porcelain").stdout == ""
    assert "gamma" not in desk.path("MEMORY.md").read_text()  # the desk-wide index is not its


def test_a_forged_project_index_line_is_refused_naming_its_line(desk: DeskFolder, run: DeskRunner) -> None:
    assert run("--project", "billing", "remember", "runtime", "--type", "decision", "-d", "Runtime",
               "-t", "runtime", "Billing runs 3.12.").exit_code == 0
    index = project_index_path("billing")
    good = desk.path(index).read_text()
    desk.path(index).write_text(good + "- [forged](memory/forged.md) — forged\n")
    before = head(desk.root)
    proc = commit(desk.root, "forge", "--", index)  # named paths: refused, the work tree fixed
    assert proc.returncode != 0 and f"{index}:" in proc.stderr and "index-stale" in proc.stderr
    assert head(desk.root) == before and desk.path(index).read_text() == good
    desk.path(index).write_text(good + "- [forged](memory/forged.md) — forged\n")
    found = json.loads(run("validate", "--all", "--json").output)["findings"]
    assert [(f["path"], f["rule"]) for f in found] == [(index, "index-stale")]
    assert found[0]["line"] == good.count("\n") + 1


def test_preferences_md_is_checked_without_a_clock(desk: DeskFolder, run: DeskRunner,
                                                   identity: None) -> None:
    d = desk_api.open(desk.root)
    then = dt.datetime(2026, 8, 1, tzinfo=dt.timezone.utc)
    d.pref_set("response.detail", "verbose", at=NOW, expires="2026-08-02T00:00:00Z", now=then)
    d.pref_set("response.language", "Chinese", at=NOW, now=then)
    index = prefs_index_path("owner")
    assert "response.detail" in desk.path(index).read_text()  # rendered at its (past) time
    # today the first has expired: a projection behind the clock is reindex's, never a refusal
    assert stale(validate_all(desk, cached=False).findings) == []
    proc = add_commit(desk.root, "the same projection", index)
    assert "index-stale" not in proc.stderr
    # a hand edit of a value, or a key that no preference file has, is refused
    text = desk.path(index).read_text()
    desk.path(index).write_text(text.replace("Chinese", "English"))
    line = text.splitlines().index("- `response.language`: Chinese") + 1
    assert stale(validate_all(desk, cached=False).findings) == [(index, line)]
    sh(desk.root, "add", index)
    assert stale(validate_staged(desk)[0].findings) == [(index, line)]
    proc = commit(desk.root, "edit the projection")  # whole index: the fixer puts it right
    assert proc.returncode == 0, proc.stderr
    fixed = sh(desk.root, "show", f"HEAD:{index}").stdout
    assert "Chinese" in fixed and "English" not in fixed
    assert "response.detail" not in fixed  # the fixer renders at the real time


def test_a_user_preference_file_added_by_hand_needs_its_projection(desk: DeskFolder,
                                                                  identity: None) -> None:
    d = desk_api.open(desk.root)
    d.pref_set("editor.indent", "tabs", user="alice", at=NOW)
    scope = d.pref_get("editor.indent", user="alice").to_json()["user_scope"]
    source = desk.path(pref_path(scope, "editor.indent")).read_text()
    write(desk.root, pref_path(scope, "editor.theme"),
          source.replace("key: editor.indent", "key: editor.theme").replace("value: tabs", "value: dark"))
    sh(desk.root, "add", pref_path(scope, "editor.theme"))
    proc = commit(desk.root, "theme by hand", "--", pref_path(scope, "editor.theme"))
    index = prefs_index_path(scope)
    assert proc.returncode != 0 and f"{index}:6: index-stale" in proc.stderr
    assert "- `editor.theme`: dark" in desk.path(index).read_text()  # the fixer, in the work tree
    # committed without it (as a pull brings it): `desk reindex` repairs it
    sh(desk.root, "commit", "-q", "--no-verify", "-m", "theme by hand", "--", pref_path(scope, "editor.theme"))
    sh(desk.root, "checkout", "--", index)
    assert stale(validate_all(desk, cached=False).findings) == [(index, 6)]
    assert d.reindex().to_json()["scopes"] == [prefs_index_path(scope)]
    assert stale(validate_all(desk, cached=False).findings) == []
