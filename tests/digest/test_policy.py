"""The distill policy case by case, as pure functions over hand-made facts and a fixed clock."""

from __future__ import annotations

import datetime as dt

from desk.config import DistillPolicy
from desk.digest.conflicts import reconcile
from desk.digest.policy import Active, decide, group_facts
from desk.digest.memory_writes import alternate_name, memory_name
from desk.digest.facts import FactRecord
from desk.formats.memory_file import name_problem

AS_OF = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc)
POLICY = DistillPolicy()


def fact(fid: str, days_ago: float, content: str, *, kind: str = "decision", importance: int = 3,
         key: str | None = None) -> FactRecord:
    return FactRecord(fid, AS_OF - dt.timedelta(days=days_ago), kind, importance, key, content)


def plan_for(facts: list[FactRecord], actives: dict[str, Active] | None = None):  # type: ignore[no-untyped-def]
    return decide(group_facts(facts, POLICY, AS_OF), actives or {}, POLICY)


def active(name: str, content: str, evidence: tuple[str, ...], last_seen_days_ago: float) -> Active:
    return Active(name, content + "\n", evidence, AS_OF - dt.timedelta(days=last_seen_days_ago))


# -- the promotion gate ------------------------------------------------------------------------

def test_age_boundary_is_thirty_days() -> None:
    young = plan_for([fact("e1", 29.99, "SQLite runs in WAL mode.", importance=5)])
    old = plan_for([fact("e1", 30, "SQLite runs in WAL mode.", importance=5)])
    assert young.promote == []
    assert [c.evidence for c in old.promote] == [("e1",)]


def test_only_decision_convention_pitfall_are_promoted_outcome_never() -> None:
    facts = [fact(f"{kind}-{i}", 40 + i, f"{kind} text", kind=kind, importance=5)
             for kind in ("decision", "convention", "pitfall", "outcome") for i in range(3)]
    plan = plan_for(facts)
    assert sorted(c.kind for c in plan.promote) == ["convention", "decision", "pitfall"]


def test_outcome_stays_out_even_when_configured_in() -> None:
    policy = DistillPolicy(kinds=["decision", "outcome"])
    facts = [fact("o", 40, "Tests passed.", kind="outcome", importance=5),
             fact("p", 40, "A pitfall.", kind="pitfall", importance=5)]
    assert decide(group_facts(facts, policy, AS_OF), {}, policy).promote == []


def test_policy_thresholds_come_from_the_config() -> None:
    policy = DistillPolicy(min_age_days=7, min_importance=5, min_occurrences=3)
    facts = [fact("a", 8, "Four.", importance=4), fact("b", 8, "Five.", importance=5),
             fact("c", 8, "Thrice.", importance=1), fact("d", 9, "thrice.", importance=1),
             fact("e", 10, "THRICE.", importance=1), fact("f", 8, "Twice.", importance=1),
             fact("g", 9, "twice.", importance=1)]
    plan = decide(group_facts(facts, policy, AS_OF), {}, policy)
    assert sorted(c.content for c in plan.promote) == ["Five.", "THRICE."]


def test_importance_four_or_more_is_enough_alone() -> None:
    plan = plan_for([fact("a", 40, "Low importance once.", importance=3),
                     fact("b", 40, "High importance once.", importance=4)])
    assert [c.content for c in plan.promote] == ["High importance once."]


def test_repetition_after_normalisation_promotes_low_importance() -> None:
    plan = plan_for([fact("a", 50, "Paths are  relative to the WORKSPACE.", kind="convention", importance=1),
                     fact("b", 40, "paths are relative to the workspace.", kind="convention", importance=2),
                     fact("c", 40, "Mentioned only once.", kind="convention", importance=2)])
    assert len(plan.promote) == 1
    promoted = plan.promote[0]
    assert promoted.evidence == ("a", "b")
    assert promoted.content == "Paths are  relative to the WORKSPACE."  # the first wording stays
    assert promoted.importance == 2


def test_the_same_event_seen_twice_is_one_occurrence() -> None:
    plan = plan_for([fact("a", 40, "Once.", importance=1), fact("a", 40, "Once.", importance=1)])
    assert plan.promote == []


def test_keyed_and_unkeyed_facts_are_different_domains() -> None:
    plan = plan_for([fact("a", 40, "Use Python 3.11.", importance=2, key="runtime.python-version"),
                     fact("b", 40, "Use Python 3.11.", importance=2)])
    assert plan.promote == []  # one occurrence each: never merged across domains


# -- an active memory --------------------------------------------------------------------------

def test_same_content_as_active_only_adds_new_evidence() -> None:
    current = active("storage.db", "Use SQLite.", ("a",), 60)
    facts = [fact("a", 60, "Use SQLite.", importance=5, key="storage.db"),
             fact("b", 35, "use   sqlite.", importance=1, key="storage.db")]
    plan = plan_for(facts, {"key:storage.db": current})
    assert plan.promote == [] and plan.supersede == []
    assert [(a.name, c.evidence) for a, c in plan.merge] == [("storage.db", ("b",))]
    again = plan_for(facts, {"key:storage.db": active("storage.db", "Use SQLite.", ("a", "b"), 35)})
    assert again.merge == [] and again.supersede == []


def test_one_newer_confirmation_does_not_supersede_even_at_importance_five() -> None:
    current = active("storage.db", "Use SQLite.", ("a",), 60)
    facts = [fact("a", 60, "Use SQLite.", key="storage.db", importance=5),
             fact("b", 40, "Use Postgres.", key="storage.db", importance=5)]
    plan = plan_for(facts, {"key:storage.db": current})
    assert plan.supersede == []
    assert [c.content for c in plan.unconfirmed] == ["Use Postgres."]


def test_two_newer_confirmations_supersede() -> None:
    current = active("storage.db", "Use SQLite.", ("a",), 60)
    facts = [fact("a", 60, "Use SQLite.", key="storage.db", importance=5),
             fact("b", 40, "Use Postgres.", key="storage.db", importance=2),
             fact("c", 35, "Use Postgres.", key="storage.db", importance=2)]
    plan = plan_for(facts, {"key:storage.db": current})
    assert [(a.name, c.content, c.evidence) for a, c in plan.supersede] == [
        ("storage.db", "Use Postgres.", ("b", "c"))]
    assert "key:storage.db" in plan.settled


def test_stale_challenger_never_rolls_back_a_newer_value() -> None:
    current = active("storage.db", "Use Postgres.", ("c", "d"), 40)
    facts = [fact("a", 90, "Use SQLite.", key="storage.db", importance=5),
             fact("b", 80, "Use SQLite.", key="storage.db", importance=5),
             fact("c", 45, "Use Postgres.", key="storage.db", importance=2),
             fact("d", 40, "Use Postgres.", key="storage.db", importance=2)]
    plan = plan_for(facts, {"key:storage.db": current})
    assert plan.supersede == [] and plan.merge == []
    assert [c.content for c in plan.stale] == ["Use SQLite."]


def test_only_confirmations_newer_than_the_active_count() -> None:
    current = active("storage.db", "Use Postgres.", ("c",), 50)
    facts = [fact("a", 90, "Use SQLite.", key="storage.db", importance=5),
             fact("b", 45, "Use SQLite.", key="storage.db", importance=5),
             fact("c", 50, "Use Postgres.", key="storage.db", importance=4)]
    plan = plan_for(facts, {"key:storage.db": current})
    assert plan.supersede == []
    assert [c.content for c in plan.unconfirmed] == ["Use SQLite."]


def test_reconfirming_the_active_value_makes_an_older_challenger_stale() -> None:
    current = active("storage.db", "Use SQLite.", ("a",), 80)
    facts = [fact("a", 80, "Use SQLite.", key="storage.db", importance=4),
             fact("b", 50, "Use Postgres.", key="storage.db", importance=2),
             fact("c", 45, "Use Postgres.", key="storage.db", importance=2),
             fact("d", 35, "Use SQLite.", key="storage.db", importance=1)]
    plan = plan_for(facts, {"key:storage.db": current})
    assert plan.supersede == []
    assert [c.evidence for _, c in plan.merge] == [("d",)]
    assert [c.content for c in plan.stale] == ["Use Postgres."]


# -- ties and the conflict queue ---------------------------------------------------------------

def _tied_facts() -> list[FactRecord]:
    return [fact("a", 90, "Use SQLite.", key="storage.db", importance=5),
            fact("b", 50, "Use Postgres.", key="storage.db", importance=3),
            fact("c", 40, "Use Postgres.", key="storage.db", importance=3),
            fact("d", 50, "Use MySQL.", key="storage.db", importance=3),
            fact("e", 40, "Use MySQL.", key="storage.db", importance=3)]


def test_tied_challengers_open_one_case_and_keep_the_active() -> None:
    current = active("storage.db", "Use SQLite.", ("a",), 90)
    plan = plan_for(_tied_facts(), {"key:storage.db": current})
    assert plan.supersede == [] and plan.promote == []
    assert len(plan.ties) == 1
    tie = plan.ties[0]
    assert tie.incumbent == current
    assert sorted(c.content for c in tie.challengers) == ["Use MySQL.", "Use Postgres."]
    queue = reconcile([], plan.ties, plan.settled, "desk-1", AS_OF)
    assert len(queue.opened) == 1
    case = queue.cases[0]
    assert case["status"] == "open" and case["revision"] == 1 and case["key"] == "storage.db"
    assert [c["role"] for c in case["candidates"]] == ["incumbent", "challenger", "challenger"]
    assert case["observed_fact_ids"] == ["a", "b", "c", "d", "e"]


def test_tie_without_an_active_value_promotes_nothing() -> None:
    plan = plan_for([fact("a", 40, "Use Python 3.11.", key="runtime.python", importance=5),
                     fact("b", 40, "Use Python 3.12.", key="runtime.python", importance=5)])
    assert plan.promote == [] and len(plan.ties) == 1 and plan.ties[0].incumbent is None


def test_rerun_finds_the_same_case_instead_of_opening_another() -> None:
    current = active("storage.db", "Use SQLite.", ("a",), 90)
    plan = plan_for(_tied_facts(), {"key:storage.db": current})
    first = reconcile([], plan.ties, plan.settled, "desk-1", AS_OF)
    second = reconcile(first.cases, plan.ties, plan.settled, "desk-1",
                       AS_OF + dt.timedelta(days=1))
    assert not second.changed and second.kept == first.opened
    assert second.cases == first.cases


def test_case_id_depends_on_desk_and_evidence() -> None:
    current = active("storage.db", "Use SQLite.", ("a",), 90)
    plan = plan_for(_tied_facts(), {"key:storage.db": current})
    one = reconcile([], plan.ties, plan.settled, "desk-1", AS_OF).opened
    other = reconcile([], plan.ties, plan.settled, "desk-2", AS_OF).opened
    assert one != other


def test_new_evidence_still_tied_supersedes_the_case_with_the_next_revision() -> None:
    current = active("storage.db", "Use SQLite.", ("a",), 90)
    plan = plan_for(_tied_facts(), {"key:storage.db": current})
    first = reconcile([], plan.ties, plan.settled, "desk-1", AS_OF)
    more = _tied_facts() + [fact("f", 40, "Use Postgres.", key="storage.db", importance=3),
                            fact("g", 40, "Use MySQL.", key="storage.db", importance=3)]
    plan2 = plan_for(more, {"key:storage.db": current})
    second = reconcile(first.cases, plan2.ties, plan2.settled, "desk-1", AS_OF)
    assert second.superseded == first.opened and len(second.opened) == 1
    old, new = second.cases
    assert old["status"] == "superseded" and old["superseded_by"] == new["id"]
    assert new["status"] == "open" and new["revision"] == 2


def test_a_decisive_confirmation_closes_the_open_case() -> None:
    current = active("storage.db", "Use SQLite.", ("a",), 90)
    plan = plan_for(_tied_facts(), {"key:storage.db": current})
    first = reconcile([], plan.ties, plan.settled, "desk-1", AS_OF)
    more = _tied_facts() + [fact("f", 35, "Use Postgres.", key="storage.db", importance=3)]
    plan2 = plan_for(more, {"key:storage.db": current})
    assert [c.content for _, c in plan2.supersede] == ["Use Postgres."]
    second = reconcile(first.cases, plan2.ties, plan2.settled, "desk-1", AS_OF)
    assert second.opened == [] and second.superseded == first.opened
    assert second.cases[0]["status"] == "superseded"


# -- names -------------------------------------------------------------------------------------

def test_names_come_from_the_key_or_from_kind_and_content() -> None:
    keyed = plan_for([fact("a", 40, "Use WAL.", key="storage.sqlite.journal-mode", importance=5)])
    assert memory_name(keyed.promote[0]) == "storage.sqlite.journal-mode"
    reserved = plan_for([fact("a", 40, "x", key="con.device", importance=5)])
    name = memory_name(reserved.promote[0])
    assert name.startswith("k-con.device-") and name_problem(name) is None
    plain = plan_for([fact("a", 40, "Never write tokens into memory!", kind="pitfall", importance=5),
                      fact("b", 40, "永远不要把令牌写进记忆。", kind="pitfall", importance=5)])
    names = {c.evidence[0]: memory_name(c) for c in plain.promote}
    assert names["a"].startswith("pitfall-never-write-tokens-into-memory-")
    assert names["b"].startswith("pitfall-") and len(names["b"]) == len("pitfall-") + 8
    assert all(name_problem(n) is None for n in names.values())
    long = plan_for([fact("a", 40, "word " * 100, importance=5)])
    assert name_problem(memory_name(long.promote[0])) is None
    assert name_problem(alternate_name("x" * 80, "key:x")) is None


# -- a run's answer is a fixed point -----------------------------------------------------------

def test_a_value_that_lost_on_importance_wins_at_once_if_its_confirmations_are_newer() -> None:
    facts = [fact("a", 90, "Use SQLite.", key="storage.db", importance=5),
             fact("b", 50, "Use Postgres.", key="storage.db", importance=2),
             fact("c", 40, "Use Postgres.", key="storage.db", importance=2)]
    plan = plan_for(facts)
    # What daily runs would have done: SQLite first, then two newer confirmations of Postgres.
    assert [c.content for c in plan.promote] == ["Use Postgres."]
    assert [c.content for c in plan.stale] == ["Use SQLite."]


def apply(plan, actives: dict[str, Active], facts: list[FactRecord]) -> dict[str, Active]:  # type: ignore[no-untyped-def]
    """What desk.digest.run does with a plan, as far as the next run's actives are concerned."""
    at = {f.id: f.at for f in facts}
    out = dict(actives)
    for c in plan.promote:
        out[c.domain] = Active(c.domain, c.content + "\n", c.evidence, c.latest)
    for a, c in plan.supersede:
        out[c.domain] = Active(a.name, c.content + "\n", c.evidence, c.latest)
    for a, c in plan.merge:
        evidence = tuple(sorted(set(a.evidence) | set(c.evidence)))
        out[c.domain] = Active(a.name, a.content, evidence, max(at[e] for e in evidence))
    return out


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

FACTS = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(20, 80),
                           st.integers(1, 5), st.sampled_from(["decision", "pitfall", "outcome"])),
                 max_size=14)


def _records(rows: list[tuple[int, int, int, int, str]]) -> list[FactRecord]:
    return [fact(f"e{i:02d}", days, f"value {value}", kind=kind, importance=imp,
                 key=None if key == 0 else f"k{key}") for i, (key, value, days, imp, kind) in enumerate(rows)]


@settings(max_examples=150, deadline=None)
@given(FACTS, FACTS)
def test_reruns_change_nothing_and_new_facts_settle_too(first: list, more: list) -> None:  # type: ignore[type-arg]
    facts = _records(first)
    plan = plan_for(facts)
    actives = apply(plan, {}, facts)
    again = plan_for(facts, actives)
    assert again.promote == [] and again.supersede == [] and again.merge == []
    queue = reconcile([], plan.ties, plan.settled, "desk-1", AS_OF)
    assert not reconcile(queue.cases, again.ties, again.settled, "desk-1", AS_OF).changed
    everything = facts + [replace_id(f, i) for i, f in enumerate(_records(more))]
    actives = apply(plan_for(everything, actives), actives, everything)
    settled = plan_for(everything, actives)
    assert settled.promote == [] and settled.supersede == [] and settled.merge == []


def replace_id(f: FactRecord, i: int) -> FactRecord:
    from dataclasses import replace

    return replace(f, id=f"n{i:02d}")


@settings(max_examples=100, deadline=None)
@given(FACTS, st.randoms())
def test_the_plan_does_not_depend_on_the_order_facts_are_read(rows: list, rnd) -> None:  # type: ignore[no-untyped-def, type-arg]
    facts = _records(rows)
    shuffled = list(facts)
    rnd.shuffle(shuffled)
    assert plan_for(facts) == plan_for(shuffled)
