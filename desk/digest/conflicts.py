"""`.system/conflicts.json`: opening and superseding cases of tied distill candidates (docs/design.md §8.0).

A case snapshots the incumbent, the tied challengers and their evidence; its id hashes the desk,
the domain and that evidence, so a rerun finds the case it opened. New evidence supersedes the
open case (with the next revision when still tied). The queue is never injected into a prompt.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from desk.digest.policy import Tie
from desk.formats.queue import parse_queue, render_queue
from desk.text.times import format_time

__all__ = ["parse_queue", "render_queue", "make_case", "reconcile", "open_cases", "case_candidates", "candidate_id",
           "case_id", "evidence_fingerprint"]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def candidate_id(domain: str, content_key: str) -> str:
    return "cand-" + _sha(f"{domain}\0{content_key}")[:12]


def _candidate(role: str, domain: str, content_key: str, content: str, evidence: Iterable[str],
               latest: dt.datetime, importance: int | None = None, kind: str | None = None
               ) -> dict[str, Any]:
    return {"id": candidate_id(domain, content_key), "role": role, "content": content,
            "kind": kind, "importance": importance, "evidence": sorted(evidence),
            "latest": format_time(latest)}


def case_candidates(tie: Tie) -> list[dict[str, Any]]:
    """The incumbent (when there is one) and the tied challengers, in a stable order."""
    did, inc = tie.domain.id, tie.incumbent
    out = [] if inc is None else [_candidate("incumbent", did, inc.content_key, inc.content.strip(),
                                             inc.evidence, inc.last_seen)]
    return out + [_candidate("challenger", did, c.content_key, c.content, c.evidence, c.latest, c.importance, c.kind)
                  for c in sorted(tie.challengers, key=lambda c: c.content_key)]


def evidence_fingerprint(candidates: list[dict[str, Any]]) -> str:
    """A hash of which evidence backs which candidate: changes whenever the evidence does."""
    lines = sorted(f"{c['id']}:{','.join(c['evidence'])}" for c in candidates)
    return "sha256:" + _sha("\n".join(lines))


def case_id(desk_id: str, domain: str, fingerprint: str) -> str:
    return "case-" + _sha(f"{desk_id}\0{domain}\0{fingerprint}")[:16]


def make_case(desk_id: str, domain: str, key: str | None, candidates: list[dict[str, Any]],
              observed_fact_ids: list[str], active: dict[str, Any] | None, *, revision: int,
              opened: str, project: str | None = None) -> dict[str, Any]:
    """A new open case, the one place a case is made: `candidates` as `case_candidates` makes them,
    `active` the `{"name", "evidence"}` of the domain's active memory (None: none), `revision` one
    more than the domain's last case; a desk-wide case has no `project` field."""
    fingerprint = evidence_fingerprint(candidates)
    case: dict[str, Any] = {
        "id": case_id(desk_id, domain, fingerprint), "domain": domain, "key": key,
        "revision": revision, "status": "open", "opened": opened, "closed": None,
        "superseded_by": None, "note": None, "fingerprint": fingerprint, "active": active,
        "candidates": candidates, "observed_fact_ids": sorted(observed_fact_ids), "resolution": None,
    }
    if project is not None:
        case["project"] = project
    return case


@dataclass
class QueueChange:
    """The queue after a distill run and what changed in it."""

    cases: list[dict[str, Any]]
    opened: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # still open, same evidence: not duplicated

    @property
    def changed(self) -> bool:
        return bool(self.opened or self.superseded)


def reconcile(cases: list[dict[str, Any]], ties: Iterable[Tie], settled: Iterable[str],
              desk_id: str, now: dt.datetime, project: str | None = None) -> QueueChange:
    """Open a case per new tie, keep known ones, supersede open cases whose evidence moved on.
    `project`: the scope the ties and settled domains are of (their domain ids carry it too)."""
    cases = [dict(c) for c in cases]
    by_id = {c["id"]: c for c in cases}
    change = QueueChange(cases)
    stamp = format_time(now)

    def close(case: dict[str, Any], successor: str | None, note: str) -> None:
        case.update(status="superseded", closed=stamp, superseded_by=successor, note=note)
        change.superseded.append(case["id"])

    for tie in ties:
        did = tie.domain.id
        candidates = case_candidates(tie)
        fingerprint = evidence_fingerprint(candidates)
        cid = case_id(desk_id, did, fingerprint)
        if cid in by_id:
            if by_id[cid]["status"] == "open":
                change.kept.append(cid)
            continue
        same_domain = [c for c in cases if c["domain"] == did]
        for old in same_domain:
            if old["status"] == "open":
                close(old, cid, "the evidence changed and the candidates are still tied")
        case = make_case(
            desk_id, did, tie.domain.key, candidates, list(tie.domain.fact_ids),
            {"name": tie.incumbent.name, "evidence": list(tie.incumbent.evidence)}
            if tie.incumbent else None, revision=1 + max((c["revision"] for c in same_domain), default=0),
            opened=stamp, project=project)
        cases.append(case)
        by_id[cid] = case
        change.opened.append(cid)
    for did in sorted(set(settled)):
        for case in cases:
            if case["domain"] == did and case["status"] == "open":
                close(case, None, "new evidence let the policy decide without a tie")
    cases.sort(key=lambda c: (c["domain"], c["revision"], c["id"]))
    return change


def open_cases(cases: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in cases if c["status"] == "open"]
