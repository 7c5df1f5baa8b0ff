"""`desk context --as-of T` reads every desk file as committed then, and a project memory past its
`valid_to` is shown as no longer true, never injected (issue 33, docs/time.md). Commits are dated
by the test, never by today's clock."""

from __future__ import annotations

from pathlib import Path

import pytest

import desk as desk_api
from desk.setup.init import init_desk
from desk.text.times import parse_time


def _dated(monkeypatch: pytest.MonkeyPatch, when: str) -> desk_api.Desk:
    for key in ("GIT_COMMITTER_DATE", "GIT_AUTHOR_DATE"):
        monkeypatch.setenv(key, when)
    return desk_api.open(Path.cwd() / "desk")


def _remember(d: desk_api.Desk, name: str, body: str, when: str, **kw: object) -> None:
    d.remember(name, body, type="fact", description=f"About {name}", triggers=[name], project="alpha",
               now=parse_time(when), **kw)  # type: ignore[arg-type]


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, identity: None) -> Path:
    monkeypatch.chdir(tmp_path)
    for key in ("GIT_COMMITTER_DATE", "GIT_AUTHOR_DATE"):
        monkeypatch.setenv(key, "2026-01-01T00:00:00Z")
    init_desk(tmp_path / "desk")
    return tmp_path / "desk"


def test_as_of_reads_the_profile_preferences_and_project_memories_committed_then(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _dated(monkeypatch, "2026-02-01T00:00:00Z")
    d.user_set({"name": "Ann"})
    d.pref_set("tone", "brief", now=parse_time("2026-02-01T00:00:00Z"))
    _remember(d, "deploy", "Deploy on Fridays.", "2026-02-01T00:00:00Z")
    february = d.git.refs.head()
    d = _dated(monkeypatch, "2026-03-01T00:00:00Z")
    d.user_set({"name": "Bea"})
    d.pref_set("tone", "verbose", now=parse_time("2026-03-01T00:00:00Z"))
    _remember(d, "deploy", "Deploy on Mondays.", "2026-03-01T00:00:00Z")
    _remember(d, "region", "The region is north.", "2026-03-01T00:00:00Z")
    result = d.context(query="deploy region", project="alpha", as_of="2026-02-15T00:00:00Z").to_json()
    text = {s["key"]: s["text"] for s in result["sections"]}
    assert "name: Ann" in text["user"] and "Bea" not in text["user"]
    assert "`tone`: brief" in text["user_prefs"] and "verbose" not in text["user_prefs"]
    assert "[deploy]" in text["project_index"] and "region" not in text["project_index"]
    assert [(m["name"], m["body"], m["commit"]) for m in result["recalled"]] == [
        ("deploy", "Deploy on Fridays.\n", february)]
    sources = {s["key"]: s["sources"] for s in result["sections"]}
    assert sources["user"] == [{"path": "USER.md", "commit": february}]
    assert sources["user_prefs"] == [{"path": "prefs/tone.md", "commit": february}]
    now = d.context(query="deploy region", project="alpha").to_json()
    assert "name: Bea" in now["sections"][4]["text"] and len(now["recalled"]) == 2
    before = d.context(project="alpha", as_of="2025-12-31T00:00:00Z").text()
    assert "_(USER.md does not exist)_" in before and "Ann" not in before


def test_a_project_memory_past_its_valid_to_is_no_longer_true_and_never_injected(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _dated(monkeypatch, "2026-02-01T00:00:00Z")
    _remember(d, "host", "The host is kiwi.", "2026-02-01T00:00:00Z", valid_to="2026-02-10T00:00:00Z")
    during = d.context(query="which host", project="alpha", now="2026-02-05T00:00:00Z")
    assert "The host is kiwi." in during.text() and [m["name"] for m in during.to_json()["recalled"]] == ["host"]
    after = d.context(query="which host", project="alpha", now="2026-02-15T00:00:00Z")
    assert "NO LONGER TRUE since 2026-02-10T00:00:00Z" in after.text()
    assert "The host is kiwi." not in after.text() and after.to_json()["recalled"] == []
    then = d.context(query="which host", project="alpha", as_of="2026-02-15T00:00:00Z")
    assert "NO LONGER TRUE" in then.text() and then.to_json()["recalled"] == []
