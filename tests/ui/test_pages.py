"""What each page of `desk ui` shows, through Starlette's TestClient against a real desk: the
filters, expired memories, a user's preferences, evidence one click from a memory, the context's
left-out parts, the timeline's journal and health."""

from __future__ import annotations

import datetime as dt
import re

import pytest

import desk

pytest.importorskip("jinja2", reason="desk ui's pages need the ui extra: pip install 'desk[ui]'")
from tests.ui.test_security import client  # noqa: E402


def rows(html: str) -> list[str]:
    """The memory names the list page shows, in order."""
    return re.findall(r'<tr[^>]*>\s*<td><a href="/memory/([^"?]+)', html)


def test_the_list_filters_and_marks_expired_memories(ui_desk: desk.Desk) -> None:
    long_ago = dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)  # expired whatever today is
    ui_desk.remember("old-news", "Old news.\n", type="fact", description="Gone stale",
                     expires="2000-01-02T00:00:00Z", now=long_ago)
    ui_desk.remember("alpha-only", "Only in alpha.\n", type="fact", description="A project memory",
                     project="alpha")
    ui_desk.pref_set("tone", "terse", user="bob@example.org")
    c = client(ui_desk)
    everything = c.get("/").text
    assert rows(everything) == ["deploy", "old-news", "report-style"]
    assert re.search(r'<tr class="expired">\s*<td><a href="/memory/old-news"', everything)
    assert rows(c.get("/?type=convention").text) == ["deploy"]
    assert rows(c.get("/?trigger=report").text) == ["report-style"]
    assert rows(c.get("/?project=alpha").text) == ["alpha-only"]
    assert rows(c.get("/?q=deploy+main").text)[0] == "deploy"  # recall's order
    assert "terse" in c.get("/?user=bob@example.org").text and "terse" not in everything
    assert c.get("/?q=%20").status_code == 200  # a blank search is no search


def test_a_memory_links_its_evidence(ui_desk: desk.Desk) -> None:
    c = client(ui_desk)
    page = c.get("/memory/deploy").text
    [event] = set(re.findall(r'href="/event/([^"]+)"', page))
    assert "Desk-Source-Event" in page and "Desk-Actor" in page
    shown = c.get(f"/event/{event}")
    assert shown.status_code == 200 and "Deploy with make deploy, always from main." in shown.text
    assert c.get("/memory/no-such-memory").status_code == 404


def test_the_context_preview_says_what_it_left_out(ui_desk: desk.Desk) -> None:
    c = client(ui_desk)
    page = c.get("/context?q=report&budget=400").text
    assert "<meter" in page and "Left out to stay within its budget" in page
    assert c.get("/context?q=report").text.count("<meter") >= 5


def test_the_timeline_shows_the_journal_the_archive_and_the_health(ui_desk: desk.Desk) -> None:
    page = client(ui_desk).get("/timeline").text
    assert "2026-11-29" in page and "Journal" in page  # the digest's journal day
    assert "Use Python 3.11." in page and "2026-09-01" in page  # the archived facts, by day
    assert "desk doctor found nothing to fix" in page
    (ui_desk.root / "memory" / "broken.md").write_text("no frontmatter\n")
    assert "desk doctor found nothing to fix" not in client(ui_desk).get("/timeline").text


def test_a_memory_no_commit_holds_yet_is_shown_and_never_overwritten(ui_desk: desk.Desk) -> None:
    text = (ui_desk.root / "memory" / "report-style.md").read_text("utf-8").replace("name: report-style", "name: by-hand")
    (ui_desk.root / "memory" / "by-hand.md").write_text(text)
    c = client(ui_desk)
    page = c.get("/memory/by-hand")
    assert page.status_code == 200 and "Reports in English." in page.text
    form = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', page.text))
    before = ui_desk.log(limit=1).commits[0].sha
    refused = c.post("/memory/by-hand", data={**form, "text": text.replace("English", "French")})
    assert refused.status_code == 409 and "uncommitted" in refused.text  # as `desk remember` refuses it
    assert ui_desk.log(limit=1).commits[0].sha == before
    assert (ui_desk.root / "memory" / "by-hand.md").read_text("utf-8") == text


def test_a_case_sync_opened_with_a_deleted_side_is_drawn_and_resolved(tmp_path: object, identity: None) -> None:
    """The case page renders the same `conflicts_show` data: a deletion is "(deleted)", each
    option is named by its body's first line, the note says what happened."""
    from pathlib import Path

    from tests.sync.conftest import Clones
    from tests.sync.test_sync import NOW, _delete_here_change_there

    clones = Clones(Path(str(tmp_path)))
    _a, b = _delete_here_change_there(clones)
    (case_id,) = b.sync(now=NOW).value.cases
    page = client(b).get(f"/cases/{case_id}")
    assert page.status_code == 200
    assert "(deleted)" in page.text and "None" not in page.text
    assert "was deleted by the merged-in commits" in page.text
    assert re.search(r'value="cand-[0-9a-f]{12}" required> Changed here\.</label>', page.text)
    deletion = next(c for c in b.conflicts_show(case_id).to_json()["case"]["candidates"] if c["content"] is None)
    data = {"candidate": deletion["id"], "revision": "1", "actor": "ada@example.org", "rationale": "Gone.",
            "event_id": f"ui:{case_id}:r1", "csrf": "the-csrf"}
    done = client(b).post(f"/cases/{case_id}", data=data)
    assert done.status_code == 200 and "Resolved: resolved" in done.text
    assert not (b.root / "memory/foo.md").exists()
