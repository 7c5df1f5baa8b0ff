"""Project scopes: `--project` memories in projects/<name>/, isolation, refusal of copies, facts."""

from __future__ import annotations

import json
import shutil

import pytest

import desk as desk_api
from desk.digest.facts import fact_from_record
from desk.digest.policy import domain_id
from desk.errors import DeskError, RejectedError
from desk.layout import DeskFolder, project_index_path, project_memory_path
from desk.formats.memory_file import parse_memory
from tests.conftest import DeskRunner, git, snapshot

AS_OF = "2026-08-01T04:00:00Z"
RUNTIME = ("--type", "decision", "-d", "Runtime version", "-t", "runtime")


def test_two_projects_with_the_same_name_stay_apart(desk: DeskFolder, run: DeskRunner) -> None:
    assert run("--project", "billing", "remember", "runtime", *RUNTIME, "Billing runs Python 3.12.").exit_code == 0
    assert run("remember", "runtime", *RUNTIME, "Search runs Python 3.11.", "--project", "search").exit_code == 0
    assert run("remember", "house-style", "--type", "convention", "-d", "House style", "-t", "runtime",
               "Everything is typed.").exit_code == 0
    billing = parse_memory(desk.path(project_memory_path("billing", "runtime")).read_bytes(),
                           "x", "runtime")
    assert billing.meta.project == "billing" and "3.12" in billing.body
    assert "- [runtime](memory/runtime.md) — Runtime version" in desk.path(
        project_index_path("billing")).read_text()
    assert "runtime" not in desk.path("MEMORY.md").read_text()
    message = git(desk.root, "log", "-1", "--format=%B", "--", project_memory_path("search", "runtime"))
    assert "Desk-Project: search" in message
    listed = json.loads(run("list", "--project", "billing", "--json").output)
    assert [m["name"] for m in listed["memories"]] == ["runtime"]
    assert [m["name"] for m in json.loads(run("list", "--json").output)["memories"]] == ["house-style"]
    context = desk_api.open(desk.root).context(project="billing", query="which runtime", now=AS_OF).text()
    assert "3.12" in context and "3.11" not in context and "Everything is typed." in context
    assert "projects/billing/MEMORY.md" in context
    recalled = desk_api.open(desk.root).context(project="billing", query="which runtime", now=AS_OF).to_json()
    commits = {m["path"]: m["commit"] for m in recalled["recalled"]}
    assert commits[project_memory_path("billing", "runtime")] == git(
        desk.root, "log", "-n1", "--format=%H", "--", project_memory_path("billing", "runtime")).strip()
    plain = desk_api.open(desk.root).context(query="which runtime", now=AS_OF).text()
    assert "3.12" not in plain and "3.11" not in plain and "Everything is typed." in plain


def test_statuses_and_forget_in_a_project(desk: DeskFolder, run: DeskRunner) -> None:
    d = desk_api.open(desk.root)
    args = dict(type="decision", description="Runtime version", triggers=["runtime"], project="billing")
    assert d.remember("runtime", "Python 3.12.", **args).value.status == "created"  # type: ignore[arg-type]
    assert d.remember("runtime", "Python 3.12.", **args).value.status == "unchanged"  # type: ignore[arg-type]
    assert d.remember("runtime", "Python 3.13.", **args).value.status == "updated"  # type: ignore[arg-type]
    with pytest.raises(RejectedError):  # the same fact under a second name, in the same project
        d.remember("runtime-again", "Python 3.13.", **args)  # type: ignore[arg-type]
    assert d.show("runtime", project="billing").memory.body == "Python 3.13.\n"
    assert len(d.history("runtime", project="billing").commits) == 2
    assert d.forget("runtime", project="billing").value.status == "deleted"
    assert "runtime" not in desk.path(project_index_path("billing")).read_text()
    with pytest.raises(DeskError):
        d.show("runtime", project="billing")
    assert run("forget", "runtime", "--project", "billing").exit_code == 1


@pytest.mark.parametrize("name", ["Billing", "../x", "a/b", "-x", "a" * 65, "a..b", " ", "con", "com1", "x\n"])
def test_project_names_are_validated_slugs(desk: DeskFolder, run: DeskRunner, name: str) -> None:
    before = snapshot(desk.root)
    assert run("--project", name, "remember", "x", *RUNTIME, "body").exit_code == 2
    assert run("--project", name, "list").exit_code == 2
    assert snapshot(desk.root) == before


def test_a_copied_project_memory_is_refused(desk: DeskFolder, run: DeskRunner, identity: None) -> None:
    run("--project", "billing", "remember", "runtime", *RUNTIME, "Billing runs Python 3.12.")
    run("--project", "search", "remember", "other", *RUNTIME, "Search is fast.")
    copy = project_memory_path("search", "runtime")
    shutil.copyfile(desk.path(project_memory_path("billing", "runtime")), desk.path(copy))
    d = desk_api.open(desk.root)
    listed = d.list(project="search")
    assert [e.name for e in listed.entries] == ["other"] and listed.invalid[0].rule == "scope-mismatch"
    shown = d.show("runtime", project="search")  # as desk-wide `show`: the file with its findings
    assert shown.memory is None and [f.rule for f in shown.findings] == ["scope-mismatch"]
    assert shown.to_json()["valid"] is False
    assert "3.12" not in d.context(project="search", query="runtime", now=AS_OF).text()
    found = json.loads(run("validate", "--all", "--json").output)["findings"]
    assert [(f["path"], f["rule"]) for f in found] == [(copy, "scope-mismatch")]
    git(desk.root, "add", copy)
    import subprocess

    hook = subprocess.run(["git", "commit", "-qm", "copy"], cwd=desk.root, capture_output=True, text=True)
    assert hook.returncode != 0 and "scope-mismatch" in hook.stdout + hook.stderr
    # and a project memory copied into the desk-wide memory/
    git(desk.root, "reset", "-q")
    (desk.root / copy).unlink()
    shutil.copyfile(desk.path(project_memory_path("billing", "runtime")), desk.path("memory/runtime.md"))
    assert "memory/runtime.md" in {f["path"] for f in json.loads(
        run("validate", "--all", "--json").output)["findings"] if f["rule"] == "scope-mismatch"}


def test_desk_wide_readers_refuse_a_memory_recording_a_project(desk: DeskFolder, run: DeskRunner,
                                                               identity: None) -> None:
    """list, show, recall, context, MEMORY.md and the hook: a memory/ file holding `project:` is
    never read desk-wide, and each names path:line (a fast-forward pull runs no hook)."""
    run("remember", "house", "--type", "convention", "-d", "House style", "-t", "runtime", "All typed.")
    run("--project", "billing", "remember", "runtime", *RUNTIME, "Billing runs Python 3.12.")
    index = desk.path("MEMORY.md").read_bytes()
    shutil.copyfile(desk.path(project_memory_path("billing", "runtime")), desk.path("memory/runtime.md"))
    line = desk.path("memory/runtime.md").read_text().splitlines().index("project: billing") + 1
    where = f"memory/runtime.md:{line}: scope-mismatch"
    d = desk_api.open(desk.root)
    listed = d.list()
    assert [e.name for e in listed.entries] == ["house"]
    assert [(f.path, f.line, f.rule) for f in listed.invalid] == [("memory/runtime.md", line, "scope-mismatch")]
    shown = d.show("runtime")
    assert shown.memory is None and shown.to_json()["valid"] is False
    assert where in run("show", "runtime").output
    context = d.context(query="which runtime", now=AS_OF).text()
    assert "3.12" not in context and "All typed." in context
    hits = d.recall("billing python runtime", kind="memory", now="2100-01-01T00:00:00Z").to_json()["hits"]
    assert "memory/runtime.md" not in {h["provenance"]["path"] for h in hits}
    reindexed = run("reindex")
    assert where in reindexed.output and desk.path("MEMORY.md").read_bytes() == index
    git(desk.root, "add", "memory/runtime.md")
    import subprocess

    hook = subprocess.run(["git", "commit", "-qm", "copy"], cwd=desk.root, capture_output=True, text=True)
    assert hook.returncode != 0 and where in hook.stdout + hook.stderr
    assert git(desk.root, "log", "-1", "--format=%s").strip() != "copy"
    # a project memory that records no project (or another) is refused in its folder too
    path = desk.path(project_memory_path("billing", "runtime"))
    path.write_text(path.read_text().replace("project: billing\n", ""))
    assert [f.rule for f in d.list(project="billing").invalid] == ["scope-mismatch"]


def test_a_hand_broken_project_index_is_repaired_by_reindex(desk: DeskFolder, run: DeskRunner) -> None:
    run("--project", "billing", "remember", "runtime", *RUNTIME, "Billing runs Python 3.12.")
    index = project_index_path("billing")
    good = desk.path(index).read_bytes()
    desk.path(index).write_text("- [forged](memory/forged.md) — forged\n")
    out = json.loads(run("reindex", "--json").output)
    assert out["scopes"] == [index] and desk.path(index).read_bytes() == good


def test_facts_carry_their_project_and_the_desk_wide_digest_leaves_them(desk: DeskFolder,
                                                                       run: DeskRunner) -> None:
    d = desk_api.open(desk.root)
    at = "2026-01-02T10:00:00Z"
    for project in ("billing", "search", None):
        d.fact_add(f"Use Python 3.1{len(project or '')}", kind="decision", importance=5,
                   key="runtime.python-version", at=at, project=project)
    assert run("fact", "add", "x", "--kind", "decision", "--importance", "4", "--project", "Bad!").exit_code == 3
    events = [e.record for e in d.archive_list(kinds=["fact"]).events]
    facts = [fact_from_record(r) for r in events]
    assert [f.project for f in facts] == ["billing", "search", None]
    assert len({domain_id(f) for f in facts}) == 3  # one key, three conflict domains
    assert "project" not in events[2]["payload"]  # desk-wide facts keep their old payload
    result = d.digest(as_of=AS_OF).value
    assert result.promoted == ["runtime.python-version"]
    text = desk.path("memory/runtime.python-version.md").read_text()
    assert "Use Python 3.10" in text and "3.17" not in text and "3.16" not in text
    assert not desk.path("projects").exists()
    assert result.open_conflicts == 0


def test_desk_project_selects_the_project(desk: DeskFolder, run: DeskRunner,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DESK_PROJECT", "billing")
    assert run("remember", "runtime", *RUNTIME, "Billing runs Python 3.12.").exit_code == 0
    assert desk.path(project_memory_path("billing", "runtime")).is_file()
    assert not desk.path("memory/runtime.md").exists()


def test_recall_searches_desk_wide_and_the_named_project(desk: DeskFolder, run: DeskRunner) -> None:
    run("--project", "billing", "remember", "runtime", *RUNTIME, "The interpreter is Python 3.12 here.")
    run("--project", "search", "remember", "runtime", *RUNTIME, "The interpreter is Python 3.11 there.")
    run("remember", "typing", "--type", "convention", "-d", "Typing", "-t", "typing",
        "The interpreter runs mypy strict everywhere.")
    d = desk_api.open(desk.root)

    def found(**kwargs: object) -> list[tuple[str, str | None]]:
        hits = d.recall("interpreter", kind="memory", now="2100-01-01T00:00:00Z", limit=10, **kwargs).to_json()["hits"]  # type: ignore[arg-type]
        return sorted((h["provenance"]["path"], h["scope"].get("project")) for h in hits)

    assert found() == [("memory/typing.md", None)]
    assert found(project="billing") == [("memory/typing.md", None),
                                        ("projects/billing/memory/runtime.md", "billing")]
    assert found(all_scopes=True) == [("memory/typing.md", None), ("projects/billing/memory/runtime.md", "billing"),
                                      ("projects/search/memory/runtime.md", "search")]
    out = json.loads(run("recall", "interpreter", "--project", "search", "--json").output)
    assert {h["provenance"]["path"] for h in out["hits"]} == {"memory/typing.md",
                                                              "projects/search/memory/runtime.md"}
    # a project hit names its commit like a desk-wide one (from the cache, not a git log per hit)
    for hit in out["hits"]:
        path = hit["provenance"]["path"]
        assert hit["provenance"]["commit"] == git(desk.root, "log", "-n1", "--format=%H", "--", path).strip()
        assert hit["provenance"]["uncommitted"] is False and hit["provenance"]["committed_at"]
    edited = desk.path(project_memory_path("search", "runtime"))
    edited.write_text(edited.read_text().replace("3.11", "3.10"))
    [hit] = [h for h in json.loads(run("recall", "interpreter", "--project", "search", "--json").output)["hits"]
             if h["scope"].get("project")]
    assert hit["provenance"]["uncommitted"] is True
    # a memory copied into another project is never recalled there
    shutil.copyfile(desk.path(project_memory_path("billing", "runtime")),
                    desk.path(project_memory_path("search", "copied")))
    assert "projects/search/memory/copied.md" not in {p for p, _ in found(all_scopes=True)}
    assert run("recall", "interpreter", "--project", "Bad").exit_code == 2


def test_a_project_update_keeps_what_it_is_not_told(desk: DeskFolder, run: DeskRunner) -> None:
    """remember --project follows desk-wide remember (issue 9): unnamed fields kept, --no-X clears."""
    assert run("remember", "runtime", *RUNTIME, "--importance", "4", "Billing runs Python 3.12.",
               "--project", "billing").exit_code == 0
    path = project_memory_path("billing", "runtime")
    result = run("remember", f"{path}", "Billing runs Python 3.13.", "--project", "billing", "--json")
    assert json.loads(result.output)["status"] == "updated"
    meta = parse_memory(desk.path(path).read_bytes(), path, "runtime").meta
    assert (meta.type, meta.description, meta.triggers, meta.importance) == (
        "decision", "Runtime version", ["runtime"], 4)
    run("remember", "runtime.md", "Billing runs Python 3.13.", "--no-importance", "--project", "billing")
    assert parse_memory(desk.path(path).read_bytes(), path, "runtime").meta.importance is None
    before = snapshot(desk.root)
    new = run("remember", "other", "A body.", "--project", "billing")
    assert new.exit_code == 2 and "--type and --description" in new.stderr
    assert snapshot(desk.root) == before


def test_user_and_project_are_global_options(desk: DeskFolder, run: DeskRunner) -> None:
    """Accepted after any subcommand (GLOBAL_OPTIONS), like --desk; the same as before it."""
    from desk.cli.main import hoist_global_options

    assert hoist_global_options(["pref", "list", "--user", "bob", "--project=x"]) == [
        "--user", "bob", "--project=x", "pref", "list"]
    assert run("pref", "set", "editor.indent", "tabs", "--user", "bob").exit_code == 0
    assert run("--user", "bob", "pref", "get", "editor.indent").exit_code == 0
    assert run("pref", "get", "editor.indent").exit_code != 0  # the owner has none
    assert run("remember", "runtime", *RUNTIME, "B.", "--project", "billing").exit_code == 0
    assert desk.path(project_memory_path("billing", "runtime")).is_file()
    out = run("context", "--now", AS_OF, "--project", "billing", "--user", "bob").output
    assert "projects/billing/MEMORY.md" in out and "`editor.indent`: tabs" in out
    assert "projects/" not in run("context", "--mode", "spot", "--project", "billing", "--now", AS_OF).output


def test_recent_facts_in_context_are_the_desk_wide_ones_and_the_projects_own(desk: DeskFolder) -> None:
    d = desk_api.open(desk.root)
    d.fact_add("Alpha launches on Friday.", kind="outcome", importance=4, at="2026-11-29T10:00:00Z",
               project="alpha")
    d.fact_add("Beta's vendor is Acme.", kind="outcome", importance=4, at="2026-11-29T10:01:00Z",
               project="beta")
    d.fact_add("The office moves in March.", kind="outcome", importance=4, at="2026-11-29T10:02:00Z")
    as_of = "2026-11-30T00:00:00Z"

    def facts(project: str | None) -> list[str]:
        shown = d.context(now=as_of, project=project).to_json()
        section = next(s for s in shown["sections"] if s["label"] == "Recent facts")
        return [f["content"] for f in section["facts"]] if "facts" in section else [
            line for line in section["text"].splitlines() if "outcome" in line]

    wide, alpha = facts(None), facts("alpha")
    assert any("office" in f for f in wide) and not any("Alpha" in f or "Acme" in f for f in wide)
    assert any("Alpha" in f for f in alpha) and any("office" in f for f in alpha)
    assert not any("Acme" in f for f in alpha)  # never another project's


def test_a_duplicate_in_a_project_names_the_project_file(desk: DeskFolder, run: DeskRunner) -> None:
    """The gate's "already recorded" of a project memory names the file where it is
    (projects/P/memory/x.md, not the desk-wide memory/x.md) and the command that updates it."""
    args = ("--type", "fact", "-d", "Deploy day", "-t", "deploy", "Deploys happen on Tuesdays.")
    assert run("--project", "billing", "remember", "deploy-day", *args).exit_code == 0
    before = snapshot(desk.root)
    result = run("--project", "billing", "remember", "deploys", *args, "--json")
    assert result.exit_code == 3, result.output
    refusal = json.loads(result.output)
    assert refusal["reason"] == "already_recorded"
    assert refusal["message"].endswith(f"already recorded in {project_memory_path('billing', 'deploy-day')}")
    assert refusal["hint"] == "update that memory instead (`desk remember deploy-day --project billing ...`)"
    assert snapshot(desk.root) == before
    text = run("--project", "billing", "remember", "deploys", *args).output
    assert "projects/billing/memory/deploy-day.md" in text
    assert "`desk remember deploy-day --project billing ...`" in text
    # Desk-wide, the same body is no duplicate of the project's: the scopes are apart.
    assert run("remember", "deploys", *args).exit_code == 0
    result = run("remember", "deploys-too", *args)
    assert "already recorded in memory/deploys.md" in result.output
    assert "`desk remember deploys ...`" in result.output
