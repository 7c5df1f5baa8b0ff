"""A desk with something on each page of `desk ui`, made through the public API."""

from __future__ import annotations

from pathlib import Path

import pytest

import desk

CASE_FACTS = ("Use Python 3.11.", "Use Python 3.12.")


@pytest.fixture
def ui_desk(tmp_path: Path, identity: None) -> desk.Desk:
    """Two memories (one with two revisions and a source event), a journal day and an open
    conflict case between two tied facts."""
    d = desk.init(tmp_path / "desk")
    d.remember("report-style", "Reports in Chinese.\nUnder 500 characters.\n", type="preference",
               description="Report language and length", triggers=["report"])
    d.remember("report-style", "Reports in English.\nUnder 500 characters.\n")
    event = d.archive_append("inbound", "Deploy with make deploy, always from main.", session="s1")
    d.remember("deploy", "Deploy with `make deploy` from main.\n", type="convention",
               description="How to deploy", source_event=event.id, actor="assistant")
    for text in CASE_FACTS:
        d.fact_add(text, kind="decision", importance=5, key="runtime.python", at="2026-09-01T10:00:00Z")
    d.digest(as_of="2026-11-29T20:00:00Z")
    return d


def head(d: desk.Desk) -> str:
    return d.log(limit=1).commits[0].sha


def commits_since(d: desk.Desk, sha: str) -> list[dict[str, object]]:
    """The commits after `sha`, newest first, as `desk log --json` shows them."""
    found = []
    for commit in d.log(limit=20).to_json()["commits"]:
        if commit["commit"] == sha:
            return found
        found.append(commit)
    raise AssertionError(f"{sha} is not among the last 20 commits")
