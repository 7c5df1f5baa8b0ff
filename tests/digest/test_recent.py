"""desk.digest.recent reads facts without pydantic (fact_version.read_fact); it must agree with desk.digest.facts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from desk.digest import fact_version, facts, policy, recent
from desk.digest.fact_version import NewerFactError

VALUE = st.one_of(st.none(), st.booleans(), st.integers(-1, 7), st.sampled_from(
    ["decision", "outcome", "pitfall", "bogus", "runtime.python", "Bad Key", "a..b", "x" * 81, " ", "\0"]),
    st.text(max_size=6))


@settings(max_examples=300, deadline=None)
@given(kind=VALUE, importance=VALUE, key=VALUE, content=st.one_of(VALUE, st.just("x" * 4001), st.just(" ok ")),
       at=st.sampled_from(["2026-11-28T10:00:00Z", "2026-11-28T10:00:00.123456Z", "2026-11-28", "soon", None]),
       ident=st.sampled_from(["evt-1", None, 5]), with_payload=st.booleans(),
       version=st.one_of(st.just("absent"), VALUE, st.integers(-1, 4), st.just(10**30)))
def test_the_light_fact_check_agrees_with_the_model(kind: object, importance: object, key: object,
                                                     content: object, at: object, ident: object,
                                                     with_payload: bool, version: object) -> None:
    payload = {"kind": kind, "importance": importance, "key": key}
    if version != "absent":
        payload["schema_version"] = version
    record = {"id": ident, "at": at, "content": content, "payload": payload if with_payload else None}
    outcomes = []
    for read in (facts.fact_from_record, fact_version.read_fact):
        try:
            outcomes.append(read(record, "a.jsonl:3"))
        except ValueError:
            outcomes.append(None)
        except NewerFactError as exc:  # a fact of a newer desk: refused by both, naming where
            assert exc.message.startswith("a.jsonl:3: fact ") and "newer desk" in exc.message
            outcomes.append("newer")
    model, light = outcomes
    if with_payload and type(version) is int and version > 2:
        assert model == light == "newer", (record, model, light)
        return
    assert "newer" not in outcomes
    if model is None or light is None:
        assert model is light is None, (record, model, light)
        return
    assert (light.id, light.at, light.kind, light.importance, light.key, light.content) == (
        model.id, model.at, model.kind, model.importance, model.key, model.content)
    assert recent.domain_id(light) == policy.domain_id(model)
