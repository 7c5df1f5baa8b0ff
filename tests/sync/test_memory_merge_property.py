"""desk's memory merge against git's own (`git merge-file`) over random pairs of edits (issue 32):
wherever git merges the two versions cleanly, desk does too, byte for byte; desk opens a case only
where git would write conflict markers (and not even there when the two sides changed different
fields of the frontmatter, or both restamped `updated`)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from desk.storage.frontmatter import parse
from desk.sync.drivers import merge_memory

WORDS = ("alpha", "beta", "gamma", "delta")
LINES = ("Use tables.", "Keep it short.", "Cite sources.", "No jargon.", "Dates in ISO form.", "")


def render(m: dict[str, Any]) -> bytes:
    head = [f"name: {m['name']}", f"description: {m['description']}", f"type: {m['type']}",
            "triggers:", *(f"- {t}" for t in m["triggers"])]
    if m.get("importance") is not None:
        head.append(f"importance: {m['importance']}")
    head += [f"created: {m['created']}", f"updated: {m['updated']}", "schema: 2"]
    return ("---\n" + "\n".join(head) + "\n---\n" + "".join(line + "\n" for line in m["body"])).encode()


base_memory = st.fixed_dictionaries({
    "name": st.just("m"), "description": st.sampled_from(WORDS), "type": st.sampled_from(("fact", "convention")),
    "triggers": st.lists(st.sampled_from(WORDS), min_size=1, max_size=3, unique=True),
    "importance": st.none() | st.integers(1, 5), "created": st.just("2026-01-01T00:00:00Z"),
    "updated": st.just("2026-01-01T00:00:00Z"),
    "body": st.lists(st.sampled_from(LINES), min_size=1, max_size=8)})

edit = st.one_of(
    st.tuples(st.just("description"), st.sampled_from([w + " style" for w in WORDS])),
    st.tuples(st.just("type"), st.sampled_from(("fact", "convention", "decision"))),
    st.tuples(st.just("triggers"), st.lists(st.sampled_from(WORDS), min_size=1, max_size=3, unique=True)),
    st.tuples(st.just("importance"), st.none() | st.integers(1, 5)),
    st.tuples(st.just("updated"), st.sampled_from(("2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"))),
    st.tuples(st.just("replace"), st.integers(0, 7), st.sampled_from(LINES + ("Changed.",))),
    st.tuples(st.just("insert"), st.integers(0, 8), st.sampled_from(LINES + ("Added.",))),
    st.tuples(st.just("delete"), st.integers(0, 7)),
)


def apply(m: dict[str, Any], edits: list[tuple[Any, ...]]) -> dict[str, Any]:
    m = {**m, "body": list(m["body"])}
    for op, *args in edits:
        body = m["body"]
        if op == "replace" and body:
            body[args[0] % len(body)] = args[1]
        elif op == "insert":
            body.insert(args[0] % (len(body) + 1), args[1])
        elif op == "delete" and len(body) > 1:
            del body[args[0] % len(body)]
        elif op not in ("replace", "insert", "delete"):
            m[op] = args[0]
    return m


def git_merge(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in (("o", ours), ("b", base), ("t", theirs)):
            (Path(tmp) / name).write_bytes(data)
        proc = subprocess.run(["git", "merge-file", "-p", "o", "b", "t"], cwd=tmp, capture_output=True)
    assert proc.returncode >= 0 and proc.returncode < 128, proc.stderr
    return proc.stdout if proc.returncode == 0 else None


@settings(max_examples=150, deadline=None)
@given(base=base_memory, mine=st.lists(edit, max_size=3), other=st.lists(edit, max_size=3))
def test_desk_merges_a_memory_wherever_git_does_with_the_same_bytes(
        base: dict[str, Any], mine: list[tuple[Any, ...]], other: list[tuple[Any, ...]]) -> None:
    b, o, t = render(base), render(apply(base, mine)), render(apply(base, other))
    expected = git_merge(b, o, t)
    result = merge_memory("memory/m.md", b, o, t)
    if expected is not None:
        assert result.pending == [] and result.data == expected
    if not result.pending:
        assert result.data is not None
        assert parse(result.data, "memory/m.md").meta["name"] == "m"  # framed, its YAML loads, no key twice
    else:
        assert expected is None and result.data == o  # a clash keeps this clone's file whole


def test_different_fields_merge_where_git_sees_touching_lines() -> None:
    """description and type are neighbours: git's merge stops on them, desk merges per field; a
    restamped `updated` on both sides keeps the later stamp."""
    base = {"name": "m", "description": "alpha", "type": "fact", "triggers": ["beta"], "importance": None,
            "created": "2026-01-01T00:00:00Z", "updated": "2026-01-01T00:00:00Z", "body": ["One."]}
    o = render({**base, "description": "changed", "updated": "2026-03-01T00:00:00Z"})
    t = render({**base, "type": "decision", "updated": "2026-02-01T00:00:00Z"})
    assert git_merge(render(base), o, t) is None
    result = merge_memory("memory/m.md", render(base), o, t)
    assert result.pending == []
    assert result.data == render({**base, "description": "changed", "type": "decision",
                                  "updated": "2026-03-01T00:00:00Z"})


ITEMS = ("- write the report", "- call the bank", "- book the train", "- read the draft", "")
SECTIONS = ("Doing", "Blocked", "Next", "Reminders")


def render_now(sections: dict[str, list[str]]) -> bytes:
    text = "# NOW.md — the assistant's hot working note\n"
    for title in SECTIONS:
        text += f"\n## {title}\n\n" + "".join(line + "\n" for line in sections[title])
    return (text.rstrip("\n") + "\n").encode()  # as desk writes it


now_edit = st.tuples(st.sampled_from(SECTIONS), st.sampled_from(("append", "replace", "delete")),
                     st.integers(0, 5), st.sampled_from(ITEMS[:-1] + ("- changed",)))


def apply_now(sections: dict[str, list[str]], edits: list[tuple[str, str, int, str]]) -> dict[str, list[str]]:
    out = {k: list(v) for k, v in sections.items()}
    for title, op, i, item in edits:
        items = out[title]
        if op == "append":
            items.append(item)
        elif items and op == "replace":
            items[i % len(items)] = item
        elif items:
            del items[i % len(items)]
    return out


@settings(max_examples=100, deadline=None)
@given(base=st.fixed_dictionaries({t: st.lists(st.sampled_from(ITEMS[:-1]), max_size=3) for t in SECTIONS}),
       mine=st.lists(now_edit, max_size=3), other=st.lists(now_edit, max_size=3))
def test_now_md_merges_wherever_git_does_with_the_same_bytes(base: dict[str, list[str]], mine: list[Any],
                                                             other: list[Any]) -> None:
    """NOW.md: git's clean merges are desk's, byte for byte; and where both sides only appended
    to a section (git's one clash at its end), desk keeps every item, this side's first."""
    from desk.sync.drivers import merge_now

    o, t = apply_now(base, mine), apply_now(base, other)
    expected = git_merge(render_now(base), render_now(o), render_now(t))
    result = merge_now(render_now(base), render_now(o), render_now(t))
    if expected is not None:
        assert result.pending == [] and result.data == expected
    appended_only = all(o[k][:len(base[k])] == base[k] and t[k][:len(base[k])] == base[k] for k in SECTIONS)
    if appended_only:
        assert result.pending == []
        for k in SECTIONS:
            assert all(item in (result.data or b"").decode() for item in o[k] + t[k])


def test_hostile_sides_open_a_case_and_never_crash() -> None:
    """NUL bytes (git merge-file refuses binary data) and CRLF lines clash as wholes: this side is
    kept and a case opens; a zero-width character in a key or a repeated key merge as git's line
    merge would (the gate refuses the result before it is committed). Never a raise, never markers."""
    base = b"---\nname: m\ndescription: d\n---\none\ntwo\nthree\n"
    for ours, theirs, clash in [
            (base.replace(b"one", b"o\0ne"), base.replace(b"three", b"t\0hree"), True),
            (base.replace(b"\n", b"\r\n"), base.replace(b"two", b"2"), True),
            (base.replace(b"name:", "na\u200bme:".encode()), base.replace(b"d\n", b"e\n"), False),
            (base.replace(b"description: d\n", b"description: d\ndescription: x\n"), base.replace(b"one", b"1"), False)]:
        result = merge_memory("memory/m.md", base, ours, theirs)
        assert result.data is not None and b"<<<<<<<" not in result.data
        assert bool(result.pending) == clash and (result.data == ours if clash else result.data not in (ours, theirs))
