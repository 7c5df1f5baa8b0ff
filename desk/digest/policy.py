"""The distill policy as pure functions over fact records (no files, git or clock): the six rules
of docs/design.md §3.3, in the order they apply. One event id counts once however often it is seen.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from desk.config import DistillPolicy
from desk.digest.facts import FactRecord
from desk.digest.fact_version import domain_id
from desk.text.normalize import content_key

EVIDENCE_MAX = 20  # evidence ids a memory file lists: the first and the latest ones
DISTILLABLE = frozenset({"decision", "convention", "pitfall"})
EARLIEST = dt.datetime.min.replace(tzinfo=dt.timezone.utc)  # "never seen": before every fact


@dataclass(frozen=True)
class Candidate:
    """One value of a domain: the facts whose normalised content is the same, oldest first."""

    domain: str
    key: str | None
    facts: tuple[FactRecord, ...]

    @property
    def content(self) -> str:
        return self.facts[0].content  # the first wording stays: later repeats do not churn the file

    @property
    def content_key(self) -> str:
        return content_key(self.facts[0].content)

    @property
    def kind(self) -> str:
        return self.facts[0].kind

    @property
    def importance(self) -> int:
        return max(f.importance for f in self.facts)

    @property
    def count(self) -> int:
        return len(self.facts)

    @property
    def latest(self) -> dt.datetime:
        return max(f.at for f in self.facts)

    @property
    def evidence(self) -> tuple[str, ...]:
        return tuple(sorted(f.id for f in self.facts))

    def score(self) -> tuple[int, int, dt.datetime]:
        return (self.importance, self.count, self.latest)

    def newer_than(self, when: dt.datetime) -> Candidate | None:
        facts = tuple(f for f in self.facts if f.at > when)
        return replace(self, facts=facts) if facts else None


@dataclass(frozen=True)
class Domain:
    """A conflict domain: `key:<key>`, or `content:<kind>:<hash>` for facts without a key."""

    id: str
    key: str | None
    candidates: tuple[Candidate, ...]

    @property
    def fact_ids(self) -> tuple[str, ...]:
        return tuple(sorted(i for c in self.candidates for i in c.evidence))


@dataclass(frozen=True)
class Active:
    """The active digest memory of a domain, as far as the policy needs it."""

    name: str
    content: str
    evidence: tuple[str, ...]
    last_seen: dt.datetime

    @property
    def content_key(self) -> str:
        return content_key(self.content)


@dataclass(frozen=True)
class Tie:
    """Best candidates with the same score: a conflict case, never a guess."""

    domain: Domain
    incumbent: Active | None
    challengers: tuple[Candidate, ...]


@dataclass
class DistillPlan:
    """What one distill run decided, domain by domain."""

    promote: list[Candidate] = field(default_factory=list)
    merge: list[tuple[Active, Candidate]] = field(default_factory=list)  # active, same-content facts
    supersede: list[tuple[Active, Candidate]] = field(default_factory=list)
    ties: list[Tie] = field(default_factory=list)
    stale: list[Candidate] = field(default_factory=list)
    unconfirmed: list[Candidate] = field(default_factory=list)
    settled: set[str] = field(default_factory=set)  # domains decided without a tie this run


def eligible(fact: FactRecord, policy: DistillPolicy, as_of: dt.datetime) -> bool:
    """Old enough and of a distillable kind (`outcome` never, whatever the configured kinds say)."""
    return (fact.kind in policy.kinds and fact.kind in DISTILLABLE
            and fact.at <= as_of - dt.timedelta(days=policy.min_age_days))


def group_facts(facts: Iterable[FactRecord], policy: DistillPolicy, as_of: dt.datetime
                ) -> dict[str, Domain]:
    """The eligible facts grouped into domains and candidates (deterministic order)."""
    by_domain: dict[str, dict[str, dict[str, FactRecord]]] = {}
    keys: dict[str, str | None] = {}
    for fact in facts:
        if not eligible(fact, policy, as_of):
            continue
        did = domain_id(fact)
        keys[did] = fact.key
        by_domain.setdefault(did, {}).setdefault(content_key(fact.content), {})[fact.id] = fact
    domains = {}
    for did in sorted(by_domain):
        candidates = tuple(
            Candidate(did, keys[did], tuple(sorted(group.values(), key=lambda f: (f.at, f.id))))
            for _, group in sorted(by_domain[did].items()))
        domains[did] = Domain(did, keys[did], candidates)
    return domains


def passes_gate(candidate: Candidate, policy: DistillPolicy) -> bool:
    """Important enough, or repeated often enough."""
    return candidate.importance >= policy.min_importance or candidate.count >= policy.min_occurrences


def decide(domains: Mapping[str, Domain], actives: Mapping[str, Active],
           policy: DistillPolicy) -> DistillPlan:
    """Apply the policy to every domain; `actives` maps domain id to its active memory."""
    plan = DistillPlan()
    for did, domain in domains.items():
        _decide(domain, actives.get(did), policy, plan)
    return plan


def _decide(domain: Domain, active: Active | None, policy: DistillPolicy, plan: DistillPlan) -> None:
    """One domain: pick or keep the active value, then let confirmed newer values replace it until
    none is confirmed (`last_seen` moves strictly forward): a fixed point a rerun does not move."""
    merge: Candidate | None = None
    if active is not None:
        current, last_seen = active.content_key, active.last_seen
        known = set(active.evidence)
        for candidate in domain.candidates:
            # Only confirmations newer than the value was last seen add evidence: a memory keeps at
            # most EVIDENCE_MAX ids, so "not listed" alone would re-merge dropped old ids forever.
            fresh = tuple(f for f in candidate.facts if f.id not in known and f.at > active.last_seen)
            if candidate.content_key == current and fresh:
                merge = replace(candidate, facts=fresh)
                last_seen = max(last_seen, merge.latest)  # the active value was seen again
    else:
        passing = [c for c in domain.candidates if passes_gate(c, policy)]
        if not passing:
            plan.settled.add(domain.id)
            return
        top = max(c.score() for c in passing)
        best = [c for c in passing if c.score() == top]
        if len(best) > 1:
            plan.ties.append(Tie(domain, None, tuple(best)))
            return
        current, last_seen = best[0].content_key, best[0].latest
    winner: Candidate | None = None if active is not None else best[0]
    while True:
        stale, unconfirmed, challengers = _challengers(domain, current, last_seen, policy)
        if not challengers:
            tie = None
            break
        top = max(newer.score() for _, newer in challengers)
        best = [whole for whole, newer in challengers if newer.score() == top]
        if len(best) > 1:
            tie = best
            break
        winner = best[0]
        current, last_seen = winner.content_key, winner.latest
    plan.stale += stale
    plan.unconfirmed += unconfirmed
    if winner is None:
        if active is not None and merge is not None:
            plan.merge.append((active, merge))
    elif active is None:
        plan.promote.append(winner)
    else:
        plan.supersede.append((active, winner))
    if tie is None:
        plan.settled.add(domain.id)
        return
    incumbent = active
    if winner is not None:  # the value this run makes active is the one the case weighs
        incumbent = Active(active.name if active else "", winner.content, winner.evidence, winner.latest)
    plan.ties.append(Tie(domain, incumbent, tuple(tie)))


def _challengers(domain: Domain, current: str, last_seen: dt.datetime, policy: DistillPolicy
                 ) -> tuple[list[Candidate], list[Candidate], list[tuple[Candidate, Candidate]]]:
    """(stale, unconfirmed, eligible as (whole candidate, its facts newer than `last_seen`))."""
    stale, unconfirmed, eligible_ = [], [], []
    for candidate in domain.candidates:
        if candidate.content_key == current:
            continue
        newer = candidate.newer_than(last_seen)
        if newer is None:
            if passes_gate(candidate, policy):
                stale.append(candidate)  # older evidence never rolls back a newer value
        elif newer.count < policy.min_confirmations or not passes_gate(newer, policy):
            if passes_gate(candidate, policy):
                unconfirmed.append(candidate)
        else:
            eligible_.append((candidate, newer))
    return stale, unconfirmed, eligible_


def kept_evidence(ids: Iterable[str], at: Mapping[str, dt.datetime]) -> list[str]:
    """At most EVIDENCE_MAX of `ids`: the first stated and the most recent, sorted by id."""
    ordered = sorted(set(ids), key=lambda i: (at.get(i, EARLIEST), i))
    if len(ordered) > EVIDENCE_MAX:
        ordered = ordered[:1] + ordered[len(ordered) - EVIDENCE_MAX + 1:]
    return sorted(ordered)
