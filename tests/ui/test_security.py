"""The review page's security rules, fast, through Starlette's TestClient against a real desk: no
token, a foreign Host or Origin, a form without its CSRF token, and a GET that would write are
refused with nothing changed; the pages load nothing from elsewhere."""

from __future__ import annotations

import re

import pytest

import desk
from tests.ui.conftest import commits_since, head

pytest.importorskip("jinja2", reason="desk ui's pages need the ui extra: pip install 'desk[ui]'")
pytest.importorskip("starlette.testclient", reason="desk ui needs the ui extra: pip install 'desk[ui]'")
from starlette.testclient import TestClient  # noqa: E402

from desk.ui.app import build_app  # noqa: E402

PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"
PAGES = ["/", "/?q=report", "/memory/report-style", "/context?q=report", "/timeline", "/cases", "/style.css"]


def client(d: desk.Desk, *, logged_in: bool = True) -> TestClient:
    c = TestClient(build_app(d, token="the-token", csrf="the-csrf", port=PORT), base_url=BASE)
    if logged_in:
        c.get("/?token=the-token")
    return c


def file_text(d: desk.Desk, name: str) -> str:
    return (d.root / "memory" / f"{name}.md").read_text("utf-8")


def edit_form(d: desk.Desk, name: str, text: str) -> dict[str, str]:
    """The edit form's fields as the page draws them (its hidden base values), with `text`."""
    import re

    html = client(d).get(f"/memory/{name}").text
    hidden = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', html))
    return {**hidden, "text": text}


def test_every_page_needs_the_token(ui_desk: desk.Desk) -> None:
    anonymous = client(ui_desk, logged_in=False)
    for url in PAGES:
        assert anonymous.get(url).status_code == 403, url
        assert anonymous.get(url + ("&" if "?" in url else "?") + "token=wrong").status_code == 403, url
    anonymous.cookies.set("desk_ui", "the-tokenX")
    assert anonymous.get("/").status_code == 403


def test_the_token_moves_into_a_strict_http_only_cookie(ui_desk: desk.Desk) -> None:
    c = client(ui_desk, logged_in=False)
    first = c.get("/context?token=the-token&q=report", follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"] == "/context?q=report"
    odd = c.get("/?token=the-token&q=a%26b&type=fact", follow_redirects=False).headers["location"]
    assert odd == "/?q=a%26b&type=fact"  # the rest of the query intact
    cookie = first.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    for url in PAGES:
        shown = c.get(url)
        assert shown.status_code == 200, url
        assert shown.headers["content-security-policy"].startswith("default-src 'self'"), url
        assert "http://" not in shown.text and "https://" not in shown.text, url  # nothing loaded from elsewhere


def test_a_foreign_host_or_origin_is_refused(ui_desk: desk.Desk) -> None:
    c = client(ui_desk)
    for host in ("evil.example:8765", "127.0.0.1:9999", "localhost.evil.example"):
        assert c.get("/", headers={"host": host}).status_code == 403, host  # DNS rebinding
    assert c.get("/", headers={"origin": "http://evil.example"}).status_code == 403
    assert c.get("/", headers={"origin": f"http://localhost:{PORT}"}).status_code == 200
    before, text = head(ui_desk), file_text(ui_desk, "report-style")
    form = edit_form(ui_desk, "report-style", text.replace("English", "French"))
    refused = c.post("/memory/report-style", data=form, headers={"origin": "http://evil.example"})
    assert refused.status_code == 403
    assert head(ui_desk) == before and file_text(ui_desk, "report-style") == text


def test_a_form_without_its_csrf_token_changes_nothing(ui_desk: desk.Desk) -> None:
    c = client(ui_desk)
    before, text = head(ui_desk), file_text(ui_desk, "report-style")
    form = edit_form(ui_desk, "report-style", text.replace("English", "French"))
    for csrf in (None, "", "the-csrfX"):
        data = {k: v for k, v in form.items() if k != "csrf"} | ({} if csrf is None else {"csrf": csrf})
        assert c.post("/memory/report-style", data=data).status_code == 403, csrf
    case = ui_desk.conflicts_list().cases[0]
    data = {"candidate": case["candidates"][0]["id"], "revision": "1", "actor": "ada", "rationale": "newer",
            "event_id": "ui:x"}
    assert c.post(f"/cases/{case['id']}", data=data).status_code == 403
    assert head(ui_desk) == before and file_text(ui_desk, "report-style") == text
    assert ui_desk.conflicts_list().cases[0]["status"] == "open"


def test_a_get_never_writes(ui_desk: desk.Desk) -> None:
    c = client(ui_desk)
    before, text = head(ui_desk), file_text(ui_desk, "report-style")
    form = edit_form(ui_desk, "report-style", text.replace("English", "French"))
    case = ui_desk.conflicts_list().cases[0]
    c.get("/memory/report-style", params=form)
    c.get(f"/cases/{case['id']}", params={"candidate": case["candidates"][0]["id"], "revision": "1",
                                           "actor": "ada", "rationale": "x", "event_id": "e", "csrf": "the-csrf"})
    assert c.put("/memory/report-style", data=form).status_code == 405
    assert head(ui_desk) == before and file_text(ui_desk, "report-style") == text


def test_an_edit_goes_through_the_gate_in_one_commit_naming_the_ui(ui_desk: desk.Desk) -> None:
    c = client(ui_desk)
    text = file_text(ui_desk, "report-style")
    before = head(ui_desk)
    bad = c.post("/memory/report-style", data=edit_form(ui_desk, "report-style",
                                                        text.replace("type: preference", "type: bogus")))
    assert bad.status_code == 422 and "line 4" in bad.text and "type: bogus" in bad.text  # the form keeps the text
    assert head(ui_desk) == before
    good = c.post("/memory/report-style", data=edit_form(ui_desk, "report-style", text.replace("English", "French")))
    assert good.status_code == 200 and "Saved: updated" in good.text
    [commit] = commits_since(ui_desk, before)
    assert commit["trailers"]["Desk-Client"] == ["ui"] and commit["trailers"]["Desk-Op"] == ["remember"]
    assert "Reports in French." in file_text(ui_desk, "report-style")


def test_an_edit_error_names_its_line_and_column(ui_desk: desk.Desk) -> None:
    """A YAML mistake in the edit form: the page names the line and the column the gate found it at."""
    text = file_text(ui_desk, "report-style")
    broken = text.replace("type: preference", "type: [preference")
    line = broken.splitlines().index("type: [preference") + 1
    bad = client(ui_desk).post("/memory/report-style", data=edit_form(ui_desk, "report-style", broken))
    assert bad.status_code == 422
    found = re.search(r"line (\d+), column (\d+)</a>: yaml-syntax", bad.text)
    assert found is not None, bad.text
    assert int(found.group(1)) >= line and int(found.group(2)) >= 1


def test_a_stale_form_is_refused_with_the_diff(ui_desk: desk.Desk) -> None:
    c = client(ui_desk)
    text = file_text(ui_desk, "report-style")
    form = edit_form(ui_desk, "report-style", text.replace("English", "French"))
    ui_desk.remember("report-style", "Reports in German.\nUnder 500 characters.\n")  # meanwhile, elsewhere
    before, now = head(ui_desk), file_text(ui_desk, "report-style")
    stale = c.post("/memory/report-style", data=form)
    assert stale.status_code == 409 and "+Reports in German." in stale.text and "Reports in French." in stale.text
    assert head(ui_desk) == before and file_text(ui_desk, "report-style") == now


def test_resolving_a_case_is_one_commit_naming_the_ui(ui_desk: desk.Desk) -> None:
    c = client(ui_desk)
    case = ui_desk.conflicts_list().cases[0]
    picked = case["candidates"][1]
    before = head(ui_desk)
    data = {"candidate": picked["id"], "revision": str(case["revision"]), "actor": "ada@example.org",
            "rationale": "3.12 is what CI runs", "event_id": f"ui:{case['id']}:r1", "csrf": "the-csrf"}
    done = c.post(f"/cases/{case['id']}", data=data)
    assert done.status_code == 200 and "Resolved: resolved" in done.text
    [commit] = commits_since(ui_desk, before)
    assert commit["trailers"]["Desk-Client"] == ["ui"]
    again = c.post(f"/cases/{case['id']}", data={**data, "revision": "7"})
    assert again.status_code == 409 and head(ui_desk) == commit["commit"]  # stale: nothing written


def test_a_form_for_no_memory_or_with_a_forged_base_changes_nothing(ui_desk: desk.Desk) -> None:
    c = client(ui_desk)
    before, text = head(ui_desk), file_text(ui_desk, "report-style")
    assert c.post("/memory/no-such", data={"csrf": "the-csrf", "text": text, "base": "x"}).status_code == 404
    form = {**edit_form(ui_desk, "report-style", text.replace("English", "French")), "base": "0" * 64,
            "base_commit": "--output=/tmp/x"}
    stale = c.post("/memory/report-style", data=form)
    assert stale.status_code == 409 and "-Reports in French." in stale.text  # the texts' own difference
    assert head(ui_desk) == before and file_text(ui_desk, "report-style") == text


def test_a_project_memory_is_edited_in_its_project_in_one_commit(ui_desk: desk.Desk) -> None:
    import html as html_lib

    ui_desk.remember("alpha-only", "Only in alpha.\n", type="fact", description="A project memory", project="alpha")
    c = client(ui_desk)
    page = c.get("/memory/alpha-only?project=alpha").text
    assert 'action="/memory/alpha-only?project=alpha"' in page
    hidden = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', page))
    path = ui_desk.root / "projects" / "alpha" / "memory" / "alpha-only.md"
    text = html_lib.unescape(re.search(r'<textarea[^>]*>(.*?)</textarea>', page, re.S).group(1))  # type: ignore[union-attr]
    assert text == path.read_text("utf-8")
    before = head(ui_desk)
    saved = c.post("/memory/alpha-only?project=alpha",
                   data={**hidden, "text": text.replace("Only in alpha.", "Only in alpha, edited.")})
    assert saved.status_code == 200 and "Saved: updated" in saved.text
    [commit] = commits_since(ui_desk, before)
    assert commit["trailers"]["Desk-Client"] == ["ui"]
    assert "Only in alpha, edited." in path.read_text("utf-8")
    assert not (ui_desk.root / "memory" / "alpha-only.md").exists()  # never written desk-wide
