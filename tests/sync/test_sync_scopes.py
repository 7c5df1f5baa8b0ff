"""Merging the scopes (docs/scopes.md, docs/sync.md): a project's memories and MEMORY.md, a user
scope's preference files and PREFERENCES.md, through `desk sync` and a person's plain `git pull`,
between real clones of one bare remote."""

from __future__ import annotations

import datetime as dt
import subprocess

import desk.api as api
from desk.layout import pref_path, prefs_index_path, project_index_path, project_memory_path, scope_id
from desk.formats.scope_files import parse_pref
from tests.sync.conftest import Clones, git

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
T1, T2 = "2026-11-30T10:00:00Z", "2026-11-30T11:00:00Z"


def remember(d: api.Desk, project: str, name: str, body: str) -> None:
    d.remember(name, body, type="fact", description=f"{name} of {project}", triggers=[name],
               project=project, now=NOW)


def tree(d: api.Desk) -> str:
    return git(d.root, "rev-parse", "HEAD^{tree}").strip()


def no_markers(d: api.Desk) -> None:
    for path in d.root.rglob("*"):
        if ".git" not in path.parts and path.is_file():
            assert b"<<<<<<<" not in path.read_bytes(), path


def test_project_memories_from_two_clones_merge_with_an_exact_project_index(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    remember(a, "billing", "alpha", "Alpha of billing.")
    remember(b, "billing", "beta", "Beta of billing.")
    a.sync()
    assert b.sync(now=NOW).value.status == "merged"
    index = (b.root / project_index_path("billing")).read_text()
    assert "[alpha]" in index and "[beta]" in index
    a.sync()
    assert tree(a) == tree(b) and b.validate("all").exit_code == 0
    # the same through a person's plain `git pull` (the drivers and the post-merge hook)
    c = clones[2]
    remember(c, "billing", "gamma", "Gamma of billing.")
    remember(a, "billing", "delta", "Delta of billing.")
    a.sync()
    git(c.root, "pull", "-q", "--no-rebase", "origin", "main")
    no_markers(c)
    index = (c.root / project_index_path("billing")).read_text()
    assert all(f"[{n}]" in index for n in ("alpha", "beta", "gamma", "delta"))
    assert c.validate("all").exit_code == 0 and git(c.root, "status", "--porcelain").strip() == ""


def test_a_project_memory_changed_on_both_sides_opens_a_case_resolve_writes_the_project(
        clones: Clones) -> None:
    a, b = clones[0], clones[1]
    remember(a, "billing", "runtime", "Shared.")
    a.sync()
    b.sync()
    remember(a, "billing", "runtime", "A's version.")
    remember(b, "billing", "runtime", "B's version.")
    a.sync()
    result = b.sync(now=NOW).value
    no_markers(b)
    path = project_memory_path("billing", "runtime")
    assert "B's version." in (b.root / path).read_text()
    (case,) = [c for c in b.conflicts().to_json()["cases"] if c["id"] in result.cases]
    assert case["domain"] == "project:billing/memory:runtime" and case["key"] == path
    assert b.validate("all").exit_code == 0
    theirs = next(c for c in case["candidates"] if c["role"] == "challenger")
    resolved = b.resolve(case["id"], theirs["id"], expected_revision=case["revision"],
                         event_id="review:sync:1", actor="ada@example.org", rationale="A was right",
                         now=NOW).value
    assert resolved.outcome == "replaced" and "A's version." in (b.root / path).read_text()
    changed = git(b.root, "show", "--name-only", "--format=", "HEAD").split()
    assert path in changed and b.validate("all").exit_code == 0


def _prefs(d: api.Desk, value: str, at: str, user: str | None = None) -> None:
    d.pref_set("response.language", value, at=at, user=user, now=NOW)


def test_a_preference_changed_on_both_sides_keeps_the_later_one_on_every_clone(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    _prefs(a, "Chinese", T1)
    a.sync()
    b.sync()
    _prefs(a, "English", T2)  # the later change, made on a
    _prefs(b, "French", "2026-11-30T10:30:00Z")  # an earlier change, made on b
    a.sync()
    synced = b.sync(now=NOW).value
    assert synced.cases == []  # decided by `updated`, never a case, but named in the report
    assert any(w.startswith("desk: a preference changed differently on both sides: ") and "response.language" in w
               for w in synced.warnings)
    no_markers(b)
    path = pref_path("owner", "response.language")
    assert parse_pref((b.root / path).read_bytes(), path, "response.language").value == "English"
    assert "English" in (b.root / prefs_index_path("owner")).read_text()
    a.sync()
    assert tree(a) == tree(b) and a.validate("all").exit_code == 0


def test_a_persons_git_pull_merges_preferences_the_same_way(clones: Clones) -> None:
    a, c = clones[0], clones[2]
    _prefs(a, "Chinese", T1, user="alice")
    a.sync()
    c.sync()
    scope = scope_id("alice")
    index = prefs_index_path(scope)
    # different keys on the two clones: the drivers merge files and projection exactly
    c.pref_set("editor.indent", "tabs", at=T2, user="alice", now=NOW)
    a.pref_set("editor.theme", "dark", at=T2, user="alice", now=NOW)
    a.sync()
    git(c.root, "pull", "-q", "--no-rebase", "origin", "main")
    no_markers(c)
    text = (c.root / index).read_text()
    assert "`editor.indent`: tabs" in text and "`editor.theme`: dark" in text
    assert c.validate("all").exit_code == 0 and git(c.root, "status", "--porcelain").strip() == ""
    c.sync()
    # the same key on both: the later `updated` wins the file; the projection that kept the
    # puller's line is stopped by pre-merge-commit, regenerated in the work tree, and one
    # `git add` + `git commit --no-edit` concludes the merge (as for MEMORY.md, docs/sync.md)
    _prefs(c, "Italian", "2026-11-30T10:30:00Z", user="alice")  # the puller's own, earlier change
    _prefs(a, "English", T2, user="alice")  # the later one comes in with the pull
    a.sync()
    pulled = subprocess.run(["git", "pull", "-q", "--no-rebase", "origin", "main"], cwd=c.root,
                            capture_output=True, text=True)
    assert pulled.returncode != 0 and f"git add {index} && git commit --no-edit" in pulled.stderr
    no_markers(c)
    path = pref_path(scope, "response.language")
    assert parse_pref((c.root / path).read_bytes(), path, "response.language").value == "English"
    assert "English" in (c.root / index).read_text()
    git(c.root, "add", index)
    git(c.root, "commit", "-q", "--no-edit")
    assert c.validate("all").exit_code == 0 and git(c.root, "status", "--porcelain").strip() == ""
    assert "English" in git(c.root, "show", f"HEAD:{index}")


def test_an_older_desks_gitattributes_gains_the_scope_lines(clones: Clones) -> None:
    b = clones[1]
    attributes = (b.root / ".gitattributes").read_text()
    old = "".join(line + "\n" for line in attributes.splitlines()
                  if not line.startswith(("projects/", "prefs/", "users/", "PREFERENCES.md")))
    (b.root / ".gitattributes").write_text(old)
    git(b.root, "commit", "-qam", "attributes as an older desk wrote them")
    planned = b.migrate(dry_run=True).to_json()
    assert [c["path"] for c in planned["changes"]] == [".gitattributes"]
    assert b.migrate().to_json()["status"] == "migrated"
    text = (b.root / ".gitattributes").read_text()
    assert text.startswith(old) and "users/*/prefs/*.md merge=desk-pref\n" in text
    assert b.migrate().to_json()["status"] == "unchanged"
    (b.root / ".gitattributes").write_text(old)  # `desk hooks install` does the same
    git(b.root, "commit", "-qam", "older again")
    actions = b.hooks_install().value.merge_drivers
    assert actions[".gitattributes"].startswith("updated and committed")
    assert (b.root / ".gitattributes").read_text() == text
    assert actions["desk-pref"] == "ok" and actions["desk-generated"] == "ok"
