"""Conflict cases for what a merge could not settle: one memory (or NOW.md section) changed on both sides.

The case has the shape of the digest's cases in `.system/conflicts.json` (desk.digest.conflicts),
so `desk conflicts` lists it and `desk resolve` settles it: the version kept in the file is the
`incumbent` candidate, the other side's version the `challenger` (a deletion is a candidate with
`content: null`). `origin: "sync"` tells them apart from the digest's ties. Everything that shapes
a case is in `sync_case`, so the format can follow the queue's as it grows.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from desk.digest.conflicts import candidate_id, case_id, evidence_fingerprint
from desk.text.normalize import content_key
from desk.text.times import format_time

DELETED = "(deleted)"


def sync_case(pending: dict[str, Any], desk_id: str, existing: list[dict[str, Any]],
              now: dt.datetime) -> dict[str, Any]:
    """The case for one pending record of a merge driver (see desk.sync.drivers.merge_memory)."""
    domain, path, kept = pending["domain"], pending["path"], pending["kept"]
    versions: dict[str, str | None] = pending["versions"]
    stamp = format_time(now)
    candidates: list[dict[str, Any]] = []
    for side in (kept, "theirs" if kept == "ours" else "ours"):
        text = versions.get(side)
        key = content_key(text) if text is not None else DELETED
        candidates.append({"id": candidate_id(domain, key),
                           "role": "incumbent" if side == kept else "challenger",
                           "content": text, "kind": None, "importance": None, "evidence": [],
                           "latest": stamp, "side": side, "deleted": text is None})
    fingerprint = evidence_fingerprint([{**c, "evidence": [c["id"]]} for c in candidates])
    same_domain = [c for c in existing if c["domain"] == domain]
    return {
        "id": case_id(desk_id, domain, fingerprint), "domain": domain, "key": path,
        "revision": 1 + max((c["revision"] for c in same_domain), default=0),
        "status": "open", "opened": stamp, "closed": None, "superseded_by": None,
        "note": f"{path} was changed differently on two clones; the file keeps the {kept} side's "
                "version, the other is a candidate",
        "fingerprint": fingerprint, "origin": "sync",
        "active": {"name": path, "evidence": []},
        "candidates": candidates, "observed_fact_ids": [],
    }


def add_cases(cases: list[dict[str, Any]], pending: list[dict[str, Any]], desk_id: str,
              now: dt.datetime) -> list[str]:
    """Add a case to `cases` for each pending record not already there; return the new ids."""
    opened = []
    known = {c["id"] for c in cases}
    for item in pending:
        case = sync_case(item, desk_id, cases, now)
        if case["id"] in known:
            continue
        cases.append(case)
        known.add(case["id"])
        opened.append(case["id"])
    cases.sort(key=lambda c: (c["domain"], c["revision"], c["id"]))
    return opened
