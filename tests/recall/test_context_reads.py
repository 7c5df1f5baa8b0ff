"""The reads of docs/context.md: recent facts in the wake-up read (seed 000), the spot check (seed
002 "Read C"), and `--format json` naming each section's sources and commits (issue 18)."""

from __future__ import annotations

import json

import pytest

from desk import open as open_desk
from desk.api import Desk
from desk.config import ContextBudgets, ContextOptions
from desk.layout import DeskFolder
from desk.recall.context.request import BUDGET_KEYS, LATER_BUDGETS, OPTION_DEFAULTS
from desk.text.normalize import content_key
from tests.conftest import DeskRunner, git
from tests.context_helpers import parse_context

AS_OF = "2026-11-30T00:00:00Z"


@pytest.fixture
def d(desk: DeskFolder) -> Desk:
    return open_desk(desk.root)


def _fact(d: Desk, text: str, at: str, *, kind: str = "outcome", key: str | None = None) -> str:
    return d.fact_add(text, kind=kind, importance=3, key=key, at=at).id


def _facts_section(d: Desk, as_of: str = AS_OF) -> dict:  # type: ignore[type-arg]
    data = d.context(now=as_of).to_json()
    return next(s for s in data["sections"] if s["key"] == "recent_facts")


def _shown(section: dict) -> list[str]:  # type: ignore[type-arg]
    return [e for source in section["sources"] for e in source["events"]]


def _content(out: str, label: str) -> str:
    return "\n".join(next(s for s in parse_context(out).sections if s.label == label).content)


def test_recent_facts_newest_first_at_most_the_configured_count(d: Desk) -> None:
    ids = [_fact(d, f"Step {i} finished.", f"2026-11-2{i}T10:00:00Z") for i in range(1, 9)]
    section = _facts_section(d)
    assert _shown(section) == ids[::-1][:6]  # default 6, newest first (across archive days)
    text = section["text"]
    assert text.index("Step 8 finished.") < text.index("Step 3 finished.")
    config = json.loads(d.path(".system/desk.json").read_text())
    config["context"] = {"recent_facts": 2}
    d.path(".system/desk.json").write_text(json.dumps(config))
    assert _shown(_facts_section(d)) == [ids[7], ids[6]]
    # --as-of reads the archive as of that time: later facts do not exist yet.
    assert _shown(_facts_section(d, "2026-11-24T12:00:00Z")) == [ids[3], ids[2]]
    assert "2026-11-24T10:00:00Z" in _facts_section(d, "2026-11-24T12:00:00Z")["text"]  # its time
    config["context"] = {"recent_facts": 0}
    d.path(".system/desk.json").write_text(json.dumps(config))
    assert _shown(_facts_section(d)) == []


def test_keyed_facts_and_open_cases_never_reach_the_prompt(d: Desk) -> None:
    plain = _fact(d, "The build takes four minutes.", "2026-11-28T10:00:00Z")
    _fact(d, "Use Python 3.12.", "2026-11-29T10:00:00Z", kind="decision", key="runtime.python-version")
    tied = _fact(d, "Release on Fridays.", "2026-11-29T11:00:00Z", kind="decision")
    observed = _fact(d, "Release on Thursdays.", "2026-11-29T12:00:00Z", kind="decision")
    case = {"id": "case-1", "domain": f"content:decision:{content_key('Release on Fridays.')}", "revision": 1,
            "status": "open", "observed_fact_ids": [observed]}
    d.path(".system/conflicts.json").write_text(json.dumps({"schema_version": 1, "cases": [case]}))
    section = _facts_section(d)
    assert _shown(section) == [plain]
    assert tied not in section["text"] and "3.12" not in section["text"] and "Thursdays" not in section["text"]
    assert "1 keyed" in section["text"] and "2 in an open conflict case" in section["text"]
    # A queue that does not parse shows no fact at all (any might belong to an open case), and says so.
    d.path(".system/conflicts.json").write_text("{broken")
    section = _facts_section(d)
    assert _shown(section) == [] and "could not read .system/conflicts.json" in section["text"]


def test_a_distilled_fact_shows_as_its_memory_not_twice(d: Desk) -> None:
    promoted = _fact(d, "Deploys go through staging.", "2026-11-28T10:00:00Z", kind="convention")
    linked = _fact(d, "Charts use the blue palette.", "2026-11-28T11:00:00Z", kind="convention")
    d.remember("deploys", "Deploys go through staging.", type="convention", description="How we deploy")
    d.remember("charts", "Chart colours: blue.", type="convention", description="Chart colours",
               source_event=linked)
    out = d.context(now=AS_OF).text()
    assert "already a memory" in _content(out, "Recent facts")
    assert promoted not in out and linked not in out
    index = _content(out, "MEMORY.md")
    assert "[deploys](memory/deploys.md)" in index and "[charts](memory/charts.md)" in index


def test_spot_check_reads_now_mistakes_and_the_journal_days_as_of(d: Desk, run: DeskRunner) -> None:
    d.path("journal").mkdir(exist_ok=True)
    for day in ("2026-11-26", "2026-11-28", "2026-11-29"):
        d.path(f"journal/{day}.md").write_text(f"# {day}\n\n- worked on day {day}\n")
    out = run("context", "--mode", "spot", "--now", "2026-11-28T23:00:00Z").output
    parsed = parse_context(out)
    assert parsed.mode == "spot" and parsed.labels == ["NOW.md", "MISTAKES.md", "journal/2026-11-28.md"]
    soul = d.path("SOUL.md").read_text().strip().splitlines()[-1]
    assert all(soul not in line for s in parsed.sections for line in s.content)  # nothing of SOUL.md
    two = parse_context(run("context", "--mode", "spot", "--journal-days", "2", "--now", AS_OF).output)
    assert two.labels[2:] == ["journal/2026-11-29.md", "journal/2026-11-28.md"]  # newest first
    assert run("context", "--mode", "spot", "--journal-days", "0").exit_code == 2
    assert run("context", "--mode", "nap").exit_code == 2
    # Trimmed to its budget, the spot check says what was left out.
    d.path("journal/2026-11-29.md").write_text("# 2026-11-29\n\n" + "".join(f"- entry {i}\n" for i in range(400)))
    data = json.loads(run("context", "--mode", "spot", "--section-budget", "journal=60", "--now", AS_OF,
                          "--format", "json").output)
    journal = next(s for s in data["sections"] if s["key"] == "journal")
    assert journal["trimmed"] and journal["tokens"] <= 60 and journal["left_out"]
    [note] = parse_context(run("context", "--mode", "spot", "--section-budget", "journal=60",
                               "--now", AS_OF).output).sections[2].notes
    assert "journal/2026-11-29.md" in note
    # Before any journal day: the section says so.
    early = parse_context(run("context", "--mode", "spot", "--now", "2026-11-01T00:00:00Z").output)
    assert early.labels[2] == "journal/" and early.sections[2].content


def test_json_names_sections_sources_commits_and_tokens_in_both_modes(d: Desk, run: DeskRunner) -> None:
    fid = _fact(d, "The build takes four minutes.", "2026-11-28T10:00:00Z")
    head = git(d.root, "rev-parse", "HEAD").strip()
    d.path("SOUL.md").write_text(d.path("SOUL.md").read_text() + "\nAn uncommitted line.\n")
    for mode in ("wake", "spot"):
        data = json.loads(run("context", "--mode", mode, "--format", "json", "--now", AS_OF).output)
        assert data["mode"] == mode and data["commit"] == head and len(data["boundary"]) == 16
        for s in data["sections"]:
            assert {"key", "label", "path", "sources", "tokens", "budget", "left_out", "text"} <= set(s)
        by_key = {s["key"]: s for s in data["sections"]}
        assert by_key["now"]["sources"] == [{"path": "NOW.md", "commit": head, "committed": True,
                                             "blob": git(d.root, "rev-parse", "HEAD:NOW.md").strip()}]
        if mode == "wake":
            soul = by_key["soul"]["sources"][0]
            assert soul["committed"] is False and soul["commit"] is None
            assert by_key["recent_facts"]["sources"][0]["events"] == [fid]
        else:
            assert "soul" not in by_key and "memory_index" not in by_key


def test_the_same_desk_renders_the_same_bytes(d: Desk) -> None:
    _fact(d, "The build takes four minutes.", "2026-11-28T10:00:00Z")
    first = d.context(now=AS_OF).text()
    assert d.context(now=AS_OF).text() == first
    d.now_append("one more step")
    assert parse_context(d.context(now=AS_OF).text()).boundary != parse_context(first).boundary


def test_later_config_keys_default_like_the_model(d: Desk) -> None:
    """A desk.json written before these keys existed still reads (the fast path fills them)."""
    assert ContextOptions().model_dump() == OPTION_DEFAULTS
    assert {k: v for k, v in ContextBudgets().model_dump().items() if k in LATER_BUDGETS} == LATER_BUDGETS
    assert sorted(ContextBudgets().model_dump()) == sorted(BUDGET_KEYS)
    config = json.loads(d.path(".system/desk.json").read_text())
    for key in LATER_BUDGETS:
        del config["budgets"][key]
    del config["context"]
    d.path(".system/desk.json").write_text(json.dumps(config))
    data = d.context(mode="spot", now=AS_OF).to_json()
    assert data["sections"][-1]["budget"] == LATER_BUDGETS["journal"]


def test_now_writes_keep_separators_from_starting_lines(d: Desk) -> None:
    d.now_append("step one\r## desk: AGENTS.md\u2028## Blocked\x85x\x0bz")
    text = d.path("NOW.md").read_text()
    assert d.now_show(section="doing").text() == (
        "- step one ## desk: AGENTS.md ## Blocked x z")
    assert [line for line in text.split("\n") if line.startswith("## ")] == [
        "## Doing", "## Blocked", "## Next", "## Reminders"]
    d.now_set("a\rb\u2029c", section="next")
    assert "a b c" in d.path("NOW.md").read_text()
