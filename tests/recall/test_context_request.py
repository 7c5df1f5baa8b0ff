"""desk.recall.context's request object: one ContextRequest gives the read the CLI and Desk.context give.

The fixed desk is built here (memories desk-wide and in a project, a profile, a person's edit not
committed, the project's own AGENTS.md); the expectations are the read contract of docs/context.md
written out: which sections, in which order, under which headings, and each desk file's
provenance (its blob, and HEAD's commit only when HEAD holds exactly that blob).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path

import pytest

from desk import open as open_desk
from desk.errors import UsageError
from desk.layout import DeskFolder
from desk.recall.context import ContextRequest, build_context, render_markdown
from tests.conftest import DeskRunner, git

AS_OF = dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc)
QUERY = "write the weekly report"


@pytest.fixture
def fixed(desk: DeskFolder, run: DeskRunner, tmp_path: Path) -> Path:
    """The desk of these tests; returns the project's AGENTS.md."""
    run("remember", "report-style", "Reports in Chinese, under 500 characters.", "--type", "preference",
        "-d", "How reports look", "-t", "report", "--importance", "4")
    run("remember", "chart-colors", "Charts use the blue palette.", "--type", "convention",
        "-d", "Chart colours", "-t", "chart")
    run("remember", "weekly-tabs", "The project's reports use tabs.", "--type", "convention",
        "-d", "Tabs in reports", "-t", "weekly", "--project", "proj")
    run("user", "set", "name=Ann")
    with desk.path("NOW.md").open("a", encoding="utf-8") as now:
        now.write("- a person's edit, not committed\n")
    agents = tmp_path / "AGENTS.md"
    agents.write_text("# Project rules\nUse tabs.\n", "utf-8")
    return agents


def _headings(markdown: str) -> list[str]:
    return [line.removeprefix("## desk: ").rsplit(" [", 1)[0] for line in markdown.splitlines()
            if line.startswith("## desk: ")]


def test_request_reads_the_contract_sections_order_and_provenance(desk: DeskFolder, fixed: Path) -> None:
    request = ContextRequest(query=QUERY, project="proj", project_agents=fixed, as_of=AS_OF)
    result = build_context(desk, request)
    assert (result.mode, result.query, result.as_of) == ("wake", QUERY, "2026-11-30T00:00:00Z")
    assert _headings(render_markdown(result)) == [
        f"AGENTS.md (project): {fixed}", "AGENTS.md", "SOUL.md", "NOW.md", "MISTAKES.md", "USER.md",
        "User profile and preferences: PREFERENCES.md", "MEMORY.md",
        "MEMORY.md (project): projects/proj/MEMORY.md", f"Recalled memories (query: {QUERY})"]
    head = git(desk.root, "rev-parse", "HEAD").strip()
    assert result.commit == head
    shown = {s.key: s for s in result.sections}
    assert shown["project_agents"].sources == [{"path": str(fixed), "commit": None}]  # not the desk's
    for key, rel in [("agents", "AGENTS.md"), ("soul", "SOUL.md"), ("mistakes", "MISTAKES.md"),
                     ("user", "USER.md"), ("memory_index", "MEMORY.md"),
                     ("project_index", "projects/proj/MEMORY.md")]:
        blob = git(desk.root, "rev-parse", f"HEAD:{rel}").strip()
        assert shown[key].sources == [{"path": rel, "blob": blob, "commit": head, "committed": True}], key
    edited = git(desk.root, "hash-object", "NOW.md").strip()
    assert shown["now"].sources == [{"path": "NOW.md", "blob": edited, "commit": None, "committed": False}]
    assert "a person's edit, not committed" in shown["now"].text
    # the trigger hits: the desk-wide memory and the project's, most important first, each with
    # the commit that last changed it; the memory not hit is not read
    recalled = [(m["path"], m["commit"]) for m in result.recalled]
    assert recalled == [(p, git(desk.root, "log", "-1", "--format=%H", "--", p).strip())
                        for p in ("memory/report-style.md", "projects/proj/memory/weekly-tabs.md")]
    assert shown["recalled"].sources == [{"path": p, "commit": c} for p, c in recalled]
    assert "Charts use the blue palette." not in render_markdown(result)


def test_the_cli_and_the_api_read_through_the_same_request(desk: DeskFolder, run: DeskRunner, fixed: Path) -> None:
    """`desk context --format json` is Desk.context's result, which is build_context's for the
    request Desk.context makes (its recent facts reader aside, given here as the API gives it)."""
    args = ["--query", QUERY, "--project", "proj", "--project-agents", str(fixed), "--now", "2026-11-30T00:00:00Z",
            "--section-budget", "mistakes=50"]
    cli = json.loads(run("context", "--format", "json", *args).output)
    api = open_desk(desk.root).context(query=QUERY, project="proj", project_agents=fixed, now=AS_OF,
                                       section_budgets={"mistakes": 50})
    assert api.to_json() == cli
    assert run("context", *args).output == api.text()
    request = ContextRequest(query=QUERY, project="proj", project_agents=fixed, as_of=AS_OF,
                             section_budgets={"mistakes": 50})
    direct = build_context(desk, request)
    # the same sections but the recent facts (no reader given: no section)
    assert [s for s in cli["sections"] if s["key"] != "recent_facts"] == [s.to_json() for s in direct.sections]


def test_spot_request_reads_now_mistakes_and_the_newest_journal_days(desk: DeskFolder, run: DeskRunner) -> None:
    for day in ("2026-11-27", "2026-11-28", "2026-12-01"):
        desk.path(f"journal/{day}.md").parent.mkdir(exist_ok=True)
        desk.path(f"journal/{day}.md").write_text(f"# {day}\n\nWork of {day}.\n", "utf-8")
    result = build_context(desk, ContextRequest(mode="spot", journal_days=2, as_of=AS_OF))
    assert _headings(render_markdown(result)) == [
        "NOW.md", "MISTAKES.md", "journal/2026-11-28.md", "journal/2026-11-27.md"]  # none after as_of
    journal = [s for s in result.sections if s.key == "journal"]
    assert [s.sources[0]["committed"] for s in journal] == [False, False]  # not committed
    assert run("context", "--mode", "spot", "--journal-days", "2", "--now",
               "2026-11-30T00:00:00Z").output == render_markdown(result)


def test_request_is_a_frozen_record_checked_mode_first(desk: DeskFolder) -> None:
    request = ContextRequest(mode="nap", section_budgets={"nope": 3})
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.mode = "wake"  # type: ignore[misc]
    with pytest.raises(UsageError, match="unknown context mode 'nap'"):  # the mode is checked first
        build_context(desk, request)
    with pytest.raises(UsageError, match="unknown budget section 'nope'"):
        build_context(desk, dataclasses.replace(request, mode="wake"))
    assert ContextRequest() == ContextRequest(mode="wake", section_budgets={})
