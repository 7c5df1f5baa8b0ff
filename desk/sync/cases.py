"""Conflict cases for what a merge could not settle: one memory (or NOW.md section) changed on both sides.

The case has the shape of the digest's cases in `.system/conflicts.json` (desk.digest.conflicts):
the version kept in the file is the `incumbent` candidate, the other side's the `challenger` (a
deletion: `content: null`); `origin: "sync"` tells them from the digest's ties. In a rebase "ours"
is the upstream and "theirs" the commit being replayed (`MergeSides.name` words it).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from desk.digest.conflicts import candidate_id, case_id, evidence_fingerprint
from desk.text.normalize import content_key
from desk.text.times import format_time

DELETED = "(deleted)"


@dataclass(frozen=True, slots=True)
class MergeSides:
    """What met the two versions: `merge` or `rebase` (None: unknown), and each side's commit."""

    operation: str | None = None
    ours: str | None = None
    theirs: str | None = None

    def name(self, side: str) -> str:
        """How a person knows `side` ("ours" or "theirs") in this operation."""
        if self.operation == "rebase":
            return "the upstream" if side == "ours" else "this clone's commit being replayed"
        if self.operation == "merge":
            return "this clone" if side == "ours" else "the merged-in commits"
        return "one side" if side == "ours" else "the other side"


def case_note(path: str, versions: dict[str, str | None], kept: str, sides: MergeSides) -> str:
    """The case's note: what each side did to `path`, and which version the file keeps."""
    other = "theirs" if kept == "ours" else "ours"
    where = {"merge": "a merge", "rebase": "a rebase"}.get(sides.operation or "", "a merge")
    if versions.get(other) is None:
        return (f"{path} was deleted by {sides.name(other)} and changed by {sides.name(kept)} "
                f"({where}); the file keeps the changed version, the deletion is a candidate")
    if versions.get(kept) is None:  # a NOW.md section gone on the kept side
        return (f"{path} was deleted by {sides.name(kept)} and changed by {sides.name(other)} "
                f"({where}); the file keeps the deletion, the changed version is a candidate")
    return (f"{path} was changed by both {sides.name('ours')} and {sides.name('theirs')} ({where}), "
            f"differently; the file keeps {sides.name(kept)}'s version, the other is a candidate")


def sync_case(pending: dict[str, Any], desk_id: str, existing: list[dict[str, Any]],
              now: dt.datetime, sides: MergeSides | None = None) -> dict[str, Any]:
    """The case for one pending record of a merge driver (see desk.sync.drivers.merge_memory)."""
    sides = sides or MergeSides()
    domain, path, kept = pending["domain"], pending["path"], pending["kept"]
    versions: dict[str, str | None] = pending["versions"]
    stamp = format_time(now)
    candidates: list[dict[str, Any]] = []
    for side in (kept, "theirs" if kept == "ours" else "ours"):
        text = versions.get(side)
        key = content_key(text) if text is not None else DELETED
        candidate: dict[str, Any] = {"id": candidate_id(domain, key), "role": "incumbent" if side == kept else "challenger",
                     "content": text, "kind": None, "importance": None, "evidence": [],
                     "latest": stamp, "side": side, "deleted": text is None}
        commit = sides.ours if side == "ours" else sides.theirs
        if commit:
            candidate["commit"] = commit
        candidates.append(candidate)
    fingerprint = evidence_fingerprint([{**c, "evidence": [c["id"]]} for c in candidates])
    same_domain = [c for c in existing if c["domain"] == domain]
    return {
        "id": case_id(desk_id, domain, fingerprint), "domain": domain, "key": path,
        "revision": 1 + max((c["revision"] for c in same_domain), default=0),
        "status": "open", "opened": stamp, "closed": None, "superseded_by": None,
        "note": case_note(path, versions, kept, sides),
        "fingerprint": fingerprint, "origin": "sync",
        "active": {"name": path, "evidence": []},
        "candidates": candidates, "observed_fact_ids": [],
    }


def clash(pending: dict[str, Any]) -> str:
    """What a pending record's clash is, in a person's words."""
    what = "a NOW.md item" if pending["domain"].startswith("now:") else "a memory"
    if None in pending["versions"].values():
        return f"{what} deleted on one side and changed on the other"
    return f"{what} changed differently on both sides"


def add_cases(cases: list[dict[str, Any]], pending: list[dict[str, Any]], desk_id: str,
              now: dt.datetime, sides: MergeSides | None = None) -> dict[str, str]:
    """Add a case to `cases` for each pending record not already there; the new ids, each with
    what clashed (`clash`)."""
    opened = {}
    known = {c["id"] for c in cases}
    for item in pending:
        case = sync_case(item, desk_id, cases, now, sides)
        if case["id"] in known:
            continue
        cases.append(case)
        known.add(case["id"])
        opened[case["id"]] = clash(item)
    cases.sort(key=lambda c: (c["domain"], c["revision"], c["id"]))
    return opened
