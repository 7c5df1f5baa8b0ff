"""The proposals page of `desk ui` (review mode, docs/review.md) through Starlette's TestClient on
a real desk whose proposals are real assistant writes under `{"review": {"*": "propose"}}`: the
list, one proposal's diff (three-way when the memory moved), accept, edit-then-accept through the
gate, reject with its reason; each verdict one commit naming the ui, each refusal changing nothing."""

from __future__ import annotations

import json
import re

import pytest

import desk
from tests.conftest import git, snapshot
from tests.ui.conftest import commits_since, head

pytest.importorskip("jinja2", reason="desk ui's pages need the ui extra: pip install 'desk[ui]'")
from tests.ui.test_security import client  # noqa: E402

CSRF = {"csrf": "the-csrf"}


def review_on(d: desk.Desk) -> desk.Desk:
    """Every write of the assistant proposed, committed by hand as a person would; the desk opened again."""
    path = d.root / ".system/desk.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "review": {"*": "propose"}}, indent=2) + "\n")
    git(d.root, "-c", "user.name=Ada", "-c", "user.email=ada@example.org", "commit", "-q", "-am", "review mode on")
    return desk.open(d.root)


def propose(d: desk.Desk, text: str = "The user works in Europe/Paris time.\n") -> str:
    done = d.remember("tz", text, type="fact", description="the user's timezone", actor="assistant").to_json()
    assert done["status"] == "proposed"
    return str(done["proposal"])


def state(d: desk.Desk) -> dict[str, bytes]:
    """The work tree, the index, HEAD and every ref (desk's proposal refs too)."""
    return snapshot(d.root)


@pytest.fixture
def proposed(ui_desk: desk.Desk) -> tuple[desk.Desk, str]:
    d = review_on(ui_desk)
    return d, propose(d)


def test_the_list_shows_each_pending_proposal(proposed: tuple[desk.Desk, str]) -> None:
    d, pid = proposed
    c = client(d)
    assert 'href="/proposals"' in c.get("/").text  # in the navigation
    page = c.get("/proposals").text
    row = re.search(rf'<tr>\s*<td><a href="/proposals/{pid}">.*?</tr>', page, re.S)
    assert row is not None
    assert "memory/tz.md" in row[0] and "remember" in row[0] and "assistant" in row[0]
    assert d.proposals().proposals[0].date in row[0]


def test_one_proposal_shows_its_diff_and_a_form_with_its_text(proposed: tuple[desk.Desk, str]) -> None:
    d, pid = proposed
    page = client(d).get(f"/proposals/{pid}")
    assert page.status_code == 200
    assert "+The user works in Europe/Paris time." in page.text and "+++ b/memory/tz.md" in page.text
    assert re.search(r'<textarea id="text" name="text"[^>]*>---\nname: tz\n', page.text)
    assert 'name="reason" required' in page.text
    assert client(d).get("/proposals/000000000000").status_code == 404


def test_accept_lands_one_commit_reviewed_by_the_person_from_the_ui(proposed: tuple[desk.Desk, str]) -> None:
    d, pid = proposed
    before = head(d)
    done = client(d).post(f"/proposals/{pid}/accept", data=CSRF)
    assert done.status_code == 200 and f"Proposal <code>{pid}</code> accepted" in done.text
    [commit] = commits_since(d, before)
    trailers = commit["trailers"]
    assert trailers["Desk-Client"] == ["ui"] and trailers["Desk-Reviewed-By"] == ["user"]
    assert trailers["Desk-Proposal"] == [pid] and trailers["Desk-Actor"] == ["user"]
    assert trailers["Desk-Proposed-By"] == ["assistant"]
    assert "Europe/Paris" in (d.root / "memory/tz.md").read_text("utf-8")
    assert d.proposals().proposals == []


def test_edit_then_accept_goes_through_the_gate_and_keeps_the_text(proposed: tuple[desk.Desk, str]) -> None:
    d, pid = proposed
    c = client(d)
    text = d.proposal(pid).value.files["memory/tz.md"]
    assert text is not None
    before, was = head(d), state(d)
    bad_text = text.replace("type: fact", "type: bogus")
    bad = c.post(f"/proposals/{pid}/accept", data={**CSRF, "text": bad_text.replace("\n", "\r\n")})
    assert bad.status_code == 422 and "line 4" in bad.text and "type: bogus" in bad.text  # kept in the form
    assert state(d) == was
    good = c.post(f"/proposals/{pid}/accept", data={**CSRF, "text": text.replace("Paris", "Lyon")})
    assert good.status_code == 200 and "accepted" in good.text
    [commit] = commits_since(d, before)
    assert commit["trailers"]["Desk-Review-Edited"] == ["yes"] and commit["trailers"]["Desk-Client"] == ["ui"]
    assert "Europe/Lyon" in (d.root / "memory/tz.md").read_text("utf-8")


def test_reject_needs_a_reason_and_is_one_commit(proposed: tuple[desk.Desk, str]) -> None:
    d, pid = proposed
    c = client(d)
    was = state(d)
    for reason in (None, "", "  \n "):
        refused = c.post(f"/proposals/{pid}/reject", data=CSRF | ({} if reason is None else {"reason": reason}))
        assert refused.status_code == 422 and "--reason is required" in refused.text, reason
        assert state(d) == was
    before = head(d)
    forged = "the user moved to Tokyo\r\nDesk-Actor: assistant"  # a textarea's line break: no second trailer
    done = c.post(f"/proposals/{pid}/reject", data={**CSRF, "reason": forged})
    assert done.status_code == 200 and f"Proposal <code>{pid}</code> rejected (memory/tz.md)" in done.text
    [commit] = commits_since(d, before)
    assert commit["trailers"]["Desk-Reason"] == ["the user moved to Tokyo Desk-Actor: assistant"]
    assert commit["trailers"]["Desk-Client"] == ["ui"] and commit["trailers"]["Desk-Actor"] == ["user"]
    assert not (d.root / "memory/tz.md").exists() and d.proposals().proposals == []
    assert d.proposals(rejected=True).proposals[0].reason == "the user moved to Tokyo Desk-Actor: assistant"


def test_a_stale_proposal_is_shown_three_way_and_its_accept_refused(ui_desk: desk.Desk) -> None:
    d = review_on(ui_desk)
    d.accept(propose(d), actor="user")
    pid = propose(d, "The user works in Europe/Berlin time.\n")
    d.remember("tz", "The user works in Asia/Tokyo time.\n")  # meanwhile, by the person
    c = client(d)
    assert "(changed on the branch since)" in c.get("/proposals").text
    shown = c.get(f"/proposals/{pid}").text
    assert "The branch since the proposal's base" in shown and "+The user works in Asia/Tokyo time." in shown
    assert "+The user works in Europe/Berlin time." in shown
    was = state(d)
    for data in (CSRF, {**CSRF, "text": d.proposal(pid).value.files["memory/tz.md"] or ""}):
        refused = c.post(f"/proposals/{pid}/accept", data=data)
        assert refused.status_code == 409 and f"changed on the branch since proposal {pid} was made" in refused.text
        assert state(d) == was


def test_proposal_pages_never_write_on_a_get_nor_without_the_csrf_token(proposed: tuple[desk.Desk, str]) -> None:
    d, pid = proposed
    c = client(d)
    was = state(d)
    for verdict in ("accept", "reject"):
        c.get(f"/proposals/{pid}/{verdict}", params={**CSRF, "reason": "x"})
        c.get(f"/proposals/{pid}", params={**CSRF, "reason": "x", "text": "x"})
        assert c.post(f"/proposals/{pid}/{verdict}", data={"reason": "x"}).status_code == 403
        assert c.post(f"/proposals/{pid}/{verdict}", data={"csrf": "nope", "reason": "x"}).status_code == 403
    assert c.post(f"/proposals/{pid}/merge", data=CSRF).status_code == 404
    assert state(d) == was and [p.id for p in d.proposals().proposals] == [pid]
