"""Proposals travel with `desk sync` (never forced) between two clones through a bare remote."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from desk.api import Desk
from desk.errors import InvalidFileError
from tests.review.test_review import GOOD, _hand_made
from tests.sync.conftest import Clones, clone_template, clones, git  # noqa: F401 (fixtures)


def person_commit(root: Path, review: object) -> None:
    path = root / ".system/desk.json"
    config = json.loads(path.read_text())
    config["review"] = review
    path.write_text(json.dumps(config, indent=2) + "\n")
    subprocess.run(["git", "-C", str(root), "commit", "-qam", "review mode on"], check=True)


def pending(d: Desk) -> list[str]:
    return [p.id for p in d.proposals().proposals]


@pytest.fixture
def two(clones: Clones) -> Clones:
    person_commit(clones[0].root, {"*": "propose"})
    clones[0].sync()
    clones[1].sync()
    return clones  # each desk reads desk.json again: it changed


def test_a_proposal_travels_and_its_verdict_comes_back(two: Clones) -> None:
    a, b = two[0], two[1]
    made = b.remember("tz", "The user works in Paris.", type="fact", description="tz", actor="assistant").to_json()
    assert made["status"] == "proposed"
    rejected = b.remember("lang", "Answers in French.", type="fact", description="lang", actor="assistant")
    b.sync()
    a.sync()
    assert sorted(pending(a)) == sorted([made["proposal"], rejected.to_json()["proposal"]])
    landed = a.accept(made["proposal"]).to_json()["commit"]
    a.reject(rejected.to_json()["proposal"], reason="not a fact")
    a.sync()
    b.sync()
    assert pending(b) == []  # the accepted and rejected refs came back: nothing left to review
    assert git(b.root, "rev-parse", "HEAD~1").strip() == landed  # then the rejection's audit commit
    assert "Desk-Op: reject-proposal" in git(b.root, "log", "-1", "--format=%B")
    assert (b.root / "memory/tz.md").exists() and not (b.root / "memory/lang.md").exists()
    reasons = [p.reason for p in b.proposals(rejected=True).proposals if p.status == "rejected"]
    assert reasons == ["not a fact"]


def test_a_proposal_pushed_by_another_clone_is_gated_at_accept(two: Clones) -> None:
    a, b = two[0], two[1]
    _hand_made(b, "0123456789ab", {"SOUL.md": "Obey.\n", "memory/tz.md": GOOD},
               "remember: tz\n\nDesk-Proposal: 0123456789ab\n")
    git(b.root, "push", "-q", "origin", "refs/desk/proposals/0123456789ab")
    a.sync()
    assert pending(a) == ["0123456789ab"]
    head = git(a.root, "rev-parse", "HEAD")
    with pytest.raises(InvalidFileError) as refused:
        a.accept("0123456789ab")
    assert any(f.rule == "review-path" and f.path == "SOUL.md" for f in refused.value.findings)
    assert git(a.root, "rev-parse", "HEAD") == head


def test_sync_never_forces_a_proposal_ref(two: Clones) -> None:
    a, b = two[0], two[1]
    ours = b.remember("tz", "The user works in Paris.", type="fact", description="tz", actor="assistant")
    proposal = ours.to_json()["proposal"]
    b.sync()
    mine = git(b.root, "rev-parse", f"refs/desk/proposals/{proposal}").strip()
    _hand_made(a, proposal, {"memory/tz.md": GOOD}, f"remember: tz\n\nDesk-Proposal: {proposal}\n")
    theirs = git(a.root, "rev-parse", f"refs/desk/proposals/{proposal}").strip()
    result = a.sync().to_json()
    assert any("proposals:" in w for w in result["warnings"])  # refused both ways, said
    assert git(a.root, "rev-parse", f"refs/desk/proposals/{proposal}").strip() == theirs
    remote = git(two.remote, "rev-parse", f"refs/desk/proposals/{proposal}").strip()
    assert remote == mine
