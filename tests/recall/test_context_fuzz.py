"""Fuzzing the context renderer (issue 15.12): whatever the stored text, `desk context` renders
the structure it would render for harmless text (parsed, tests/context_helpers.py), and a
write that refuses hostile text leaves the desk exactly as it was."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from desk import open as open_desk
from desk.errors import DeskError
from desk.layout import DeskFolder
from desk.recall.context import BUDGET_KEYS, ContextResult, Section, render_markdown
from desk.text.escape import markdown_block
from tests.conftest import snapshot
from tests.context_helpers import parse_context

PIECES = ["\n", "\r", "\r\n", "\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1e", "\x00", "\x1b[2J",
          "## desk: AGENTS.md", "# Desk context", "[desk context: x]", "<desk-memory>", "</desk-memory>",
          "</memory>", "<memory name=\"x\">", "<!--", "-->", "===", "---", "\u200b", "\ufeff", "\uff03",
          "   ", "\t", "#", "[", "<", "&", "报告"]
HOSTILE = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=8)), max_size=12).map("".join)
ROOMY = {key: 10**6 for key in BUDGET_KEYS if key != "total"}
FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@settings(max_examples=300, deadline=None)
@given(st.lists(HOSTILE, min_size=1, max_size=4))
@example(["\x1b[2J\n===---"])  # found by this test in CI: a mixed underline after a control sequence
@example(["\xa0## desk: AGENTS.md"])  # found by this test: a heading behind a no-break space
@example(["text\n\u3000---"])  # an underline behind an ideographic space
def test_escaped_sections_render_exactly_their_headings(texts: list[str]) -> None:
    sections = [Section("now", f"S{i}", None, markdown_block(t), 100) for i, t in enumerate(texts)]
    parsed = parse_context(render_markdown(ContextResult(sections, None, [], 100)))
    assert parsed.shape() == [(f"S{i}", 0, ()) for i in range(len(texts))]


@FUZZ
@given(now=HOSTILE, soul=HOSTILE, journal=HOSTILE, fact=HOSTILE, query=HOSTILE, pref=HOSTILE)
def test_a_desk_full_of_hostile_text_keeps_its_structure(desk: DeskFolder, now: str, soul: str, journal: str,
                                                         fact: str, query: str, pref: str) -> None:
    d = open_desk(desk.root)
    d.path("NOW.md").write_text(now, "utf-8", newline="")
    d.path("SOUL.md").write_text(soul, "utf-8", newline="")
    d.path("journal").mkdir(exist_ok=True)
    d.path("journal/2026-11-29.md").write_text(journal, "utf-8", newline="")
    try:
        d.fact_add(fact, kind="outcome", importance=2, at="2026-11-29T10:00:00Z")
    except DeskError:
        pass
    try:
        d.pref_set("fuzz.value", pref or "x")
    except DeskError:
        pass
    wake = ["AGENTS.md", "SOUL.md", "NOW.md", "MISTAKES.md", "USER.md", "User profile and preferences: PREFERENCES.md",
            "MEMORY.md", "Recent facts"]
    for mode, labels in (("wake", wake), ("spot", ["NOW.md", "MISTAKES.md", "journal/2026-11-29.md"])):
        out = d.context(mode=mode, query=query or None, now="2026-11-30T00:00:00Z", budget=10**7,
                        section_budgets=ROOMY).text()
        assert parse_context(out).shape() == [(label, 0, ()) for label in labels]


@FUZZ
@given(text=HOSTILE, section=st.sampled_from([None, "doing", "next"]), append=st.booleans())
def test_now_writes_refuse_cleanly_or_keep_four_sections(desk: DeskFolder, text: str, section: str | None,
                                                         append: bool) -> None:
    d = open_desk(desk.root)
    before = snapshot(desk.root)
    try:
        if append:
            d.now_append(text, section=section or "doing")
        else:
            d.now_set(text, section=section)
    except DeskError:
        assert snapshot(desk.root) == before  # refused: nothing written
        return
    body = d.path("NOW.md").read_text("utf-8")
    assert not any(ch in body for ch in "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\x00")
    if section is not None:
        heads = [line for line in body.split("\n") if line.startswith("## ")]
        assert heads == sorted(set(heads), key=heads.index)  # no section twice


@FUZZ
@given(name=st.one_of(st.sampled_from(["ok-name", "x\n", "con", "a/b", "..", "é"]), st.text(max_size=12)),
       description=HOSTILE, body=HOSTILE, trigger=HOSTILE)
def test_remember_refuses_cleanly_or_stays_recallable(desk: DeskFolder, name: str, description: str, body: str,
                                                      trigger: str) -> None:
    d = open_desk(desk.root)
    before = snapshot(desk.root)
    try:
        d.remember(name, body, type="preference", description=description, triggers=[trigger])
    except DeskError:
        assert snapshot(desk.root) == before
        return
    out = d.context(query=trigger, now="2026-11-30T00:00:00Z", budget=10**7, section_budgets=ROOMY).text()
    assert parse_context(out).labels[:8] == ["AGENTS.md", "SOUL.md", "NOW.md", "MISTAKES.md", "USER.md",
                                             "User profile and preferences: PREFERENCES.md", "MEMORY.md",
                                             "Recent facts"]
