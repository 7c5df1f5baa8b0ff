"""Which turn of a conversation recall puts first (issue 33): the turn that states a fact above a
reply that repeats it, and both turns of a fact spread over a session. Small real desks: events
archived through desk's own append, recalled through the API."""

from __future__ import annotations

from typing import Any

import pytest

from desk.layout import DeskFolder
from desk.recall.search import recall

AS_OF = "2026-12-01T00:00:00Z"  # after every turn below: the same answer on any day


def _turns(desk: DeskFolder, session: str, turns: list[tuple[str, str]], day: int = 20) -> list[dict[str, Any]]:
    """Archive `(actor, content)` turns of one session, a minute apart; their events."""
    from desk.archive.store import append_event

    return [append_event(desk, "inbound" if actor == "user" else "outbound", text, session=session, actor=actor,
                         at=f"2026-11-{day:02d}T09:{i:02d}:00Z")
            for i, (actor, text) in enumerate(turns)]


def _ids(desk: DeskFolder, query: str) -> list[str]:
    return [h.id for h in recall(desk, query, as_of=AS_OF, kind="conversation", limit=10).hits]


def test_the_turn_stating_a_fact_ranks_above_the_reply_that_repeats_it(desk: DeskFolder) -> None:
    """The issue's example: the user's turn ends with a question, so the assistant's reply was
    its "answer" and got half the user's score on top of its own echo of the same words."""
    stated, echo = _turns(desk, "house", [
        ("user", "I got pre-approved for $350,000 from Wells Fargo last week, so we are finally house "
                 "hunting. What should I check before making an offer?"),
        ("assistant", "Congratulations on your pre-approval! With $350,000 approved, check the inspection "
                      "report, property taxes and HOA fees before you offer, and keep the pre-approval "
                      "letter handy: it is usually valid for 60 to 90 days."),
    ])
    _turns(desk, "other", [("user", "Can you remind me to call the bank tomorrow?"),
                           ("assistant", "Sure, I will remind you to call the bank tomorrow morning.")], day=21)
    for query in ("How much was I pre-approved for?", "What amount did I get pre-approved for?"):
        ids = _ids(desk, query)
        assert ids.index(f"event:{stated['id']}") < ids.index(f"event:{echo['id']}"), query
    reply = next(h for h in recall(desk, "How much was I pre-approved for?", as_of=AS_OF,
                                   kind="conversation").hits if h.id == f"event:{echo['id']}")
    # the reply says every matched term itself: the question before it lends it nothing
    assert reply.score_breakdown.contributions["question"] == 0
    assert reply.score_breakdown.session_terms == ()


def test_the_answer_to_a_bare_question_keeps_the_whole_pairing(desk: DeskFolder) -> None:
    """A question that states nothing cannot be echoed: its answer, which says the same words
    and the new fact, stays first and gets the whole question's score (the benchmark's shape:
    "How's work treating you?" then "New job news: I work as a nurse now")."""
    asked, answer = _turns(desk, "job", [("Jonas", "How is work treating you?"),
                                         ("Mara", "New job news: I work as a nurse at the hospital now.")])
    hits = recall(desk, "Where does Mara work now?", as_of=AS_OF, kind="conversation").hits
    assert [h.id for h in hits] == [f"event:{answer['id']}", f"event:{asked['id']}"]
    assert hits[0].score_breakdown.contributions["question"] > 0
    assert hits[1].score_breakdown.contributions["question"] == 0


def test_an_answer_still_borrows_the_terms_it_lacks_from_its_question(desk: DeskFolder) -> None:
    """The pairing still finds an answer through its question, for the terms only the question
    says, and the explanation names them."""
    _, answer = _turns(desk, "pet", [("user", "Did you end up getting that dog you wanted?"),
                                     ("assistant", "Yes! We named her Biscuit.")])
    hit = next(h for h in recall(desk, "what did they name the dog", as_of=AS_OF, kind="conversation").hits
               if h.id == f"event:{answer['id']}")
    b = hit.score_breakdown
    assert b.matched_terms == ("name",) and b.session_terms == ("dog",)
    assert b.contributions["question"] > 0
    assert abs(sum(b.contributions.values()) - b.total) < 1e-6


def test_a_question_lends_its_answer_what_it_said_not_who_asked(desk: DeskFolder) -> None:
    """Mara asks Jonas about his trip and Jonas asks Mara about hers: each answer borrows "trip"
    from the question before it, but Mara's name, which only her own question's speaker field
    holds, is hers: her answer ranks above Jonas's for "Mara trip", and Jonas's answer is never
    credited with her name (before, it borrowed the question's whole own score, name and all)."""
    _, jonas = _turns(desk, "a", [("Mara", "How was the trip?"), ("Jonas", "Lisbon was great, we went diving.")])
    _, mara = _turns(desk, "b", [("Jonas", "How was the trip?"), ("Mara", "Kyoto was great, we hiked a lot.")],
                     day=19)
    hits = {h.id: h.score_breakdown for h in recall(desk, "Mara trip", as_of=AS_OF, kind="conversation",
                                                    limit=10).hits}
    ids = list(hits)
    assert ids.index(f"event:{mara['id']}") < ids.index(f"event:{jonas['id']}")
    assert hits[f"event:{jonas['id']}"].session_terms == ("trip",)
    assert hits[f"event:{mara['id']}"].contributions["field"] > 0
    for b in hits.values():
        assert abs(sum(b.contributions.values()) - b.total) < 1e-6


def _set_meta_fields(desk: DeskFolder, fields: object) -> None:
    import json

    path = desk.path(".system/desk.json")
    config = json.loads(path.read_text("utf-8"))
    config["recall"] = {"meta_fields": fields}
    path.write_text(json.dumps(config, indent=2), "utf-8")


def test_meta_values_are_searched_only_for_keys_declared_searchable(desk: DeskFolder) -> None:
    """An opaque reference in `meta` never matches a query word; a caption (searchable by
    default) does; desk.json's `recall.meta_fields` declares the keys, and changing it re-indexes."""
    from desk.archive.store import append_event
    from desk.config import load_config
    from desk.errors import InvalidFileError

    event = append_event(desk, "inbound", "Look at this!", session="s", actor="user", at="2026-11-20T09:00:00Z",
                         meta={"ref": "orion 7f3a", "caption": "a photo of the new flat"})
    _turns(desk, "t", [("user", "The orion project kicked off today.")], day=21)
    assert f"event:{event['id']}" not in _ids(desk, "orion")
    hit = recall(desk, "flat", as_of=AS_OF, kind="conversation").hits[0]
    assert hit.id == f"event:{event['id']}" and hit.score_breakdown.contributions["field"] > 0
    assert hit.provenance["meta"]["ref"] == "orion 7f3a"  # kept and shown, only not searched
    _set_meta_fields(desk, ["ref"])
    assert f"event:{event['id']}" in _ids(desk, "orion")
    assert _ids(desk, "flat") == []
    _set_meta_fields(desk, [])
    assert _ids(desk, "flat") == [] and f"event:{event['id']}" not in _ids(desk, "orion")
    assert load_config(desk.root).recall.meta_fields == []
    _set_meta_fields(desk, "caption")  # not a list of keys: refused by the config's check
    with pytest.raises(InvalidFileError, match="recall.meta_fields"):
        load_config(desk.root)


@pytest.mark.parametrize("query", ["Which city did Mara move to after she started as a nurse?",
                                   "Mara nurse hospital moved city"])
def test_a_query_spread_over_two_turns_of_a_session_surfaces_both(desk: DeskFolder, query: str) -> None:
    """Multi-hop: each evidence turn holds part of the query; turns of other sessions hold the
    same parts one by one. The session lends each evidence turn the terms the other one holds,
    so both come first, and the explanation names the lent terms."""
    nurse, _, moved = _turns(desk, "mara", [("Mara", "I started my first shift as a nurse at the hospital!"),
                                            ("Jonas", "Haha, totally."),
                                            ("Mara", "And we moved, the new city is lovely.")])
    _turns(desk, "jonas", [("Jonas", "My sister started as a nurse at the hospital too."),
                           ("Mara", "Nice, tell me more.")], day=21)
    _turns(desk, "later", [("Jonas", "We moved the big meeting, the city office is closed."),
                           ("Mara", "Ok, I have to go.")], day=22)
    hits = recall(desk, query, as_of=AS_OF, kind="conversation", limit=10).hits
    assert {h.id for h in hits[:2]} == {f"event:{nurse['id']}", f"event:{moved['id']}"}
    lent = {h.id: h.score_breakdown for h in hits[:2]}
    assert lent[f"event:{moved['id']}"].contributions["session"] > 0
    assert "nurs" in lent[f"event:{moved['id']}"].session_terms
    assert "move" in lent[f"event:{nurse['id']}"].session_terms
