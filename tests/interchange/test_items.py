"""Names, descriptions and triggers derived from foreign items, and the progress lines."""

from __future__ import annotations

import io

from desk.cli.import_progress import ProgressLines
from desk.interchange.items import derive_triggers, one_line, slugify
from desk.interchange.readers.notes import bullets
from desk.formats.memory_file import name_problem


def test_slugs_are_valid_names_and_stable() -> None:
    for title in ("Hello, World!", "Café au lait", "晚上 11 点", "", "con", "-" * 200, "a" * 300, "x.\n"):
        slug = slugify(title, "seed", "note")
        assert name_problem(slug) is None and len(slug) <= 71, (title, slug)
        assert slug == slugify(title, "seed", "note")
    assert slugify("Hello, World!", "s") == "hello-world"
    assert slugify("Café au lait", "s") == "cafe-au-lait"
    assert slugify("晚上 11 点", "seed", "openclaw").startswith("openclaw-")
    assert slugify("晚上 11 点", "seed") != slugify("晚上 11 点", "other seed")


def test_one_line_and_triggers() -> None:
    assert one_line("\n\n## Heading\u200b here\r\nmore") == "Heading here"
    assert len(one_line("x" * 500)) == 150
    assert derive_triggers(["#Coffee", "coffee", "brewing"], "ignored") == ["Coffee", "brewing"]
    assert derive_triggers([], "The user prefers Go over Rust", "about the 2026 plan") == [
        "user", "prefers", "rust", "plan"]  # stopwords, short words and numbers left out
    assert derive_triggers([], "晚上不要打扰") == ["晚上不要打扰"]
    words = derive_triggers([], "The user prefers Go for services")
    assert words == ["user", "prefers", "services"]


def test_bullets_keep_sections_and_continuations() -> None:
    text = "# T\n\n## Decisions\n- one\n  more of one\n- two\n\ntext\n## Other\n* three\n"
    assert [(b.section, b.text) for b in bullets(text)] == [
        ("Decisions", "one\nmore of one"), ("Decisions", "two"), ("Other", "three")]


def test_progress_lines_every_few_seconds_when_not_a_terminal() -> None:
    out = io.StringIO()
    now = [0.0]
    lines = ProgressLines("records", every=2.0, stream=out, clock=lambda: now[0])
    for done in range(0, 10_001, 1000):
        lines(done, 10_000)
        now[0] += 0.9
    assert out.getvalue().splitlines() == ["records: 0/10,000 (0%)", "records: 3,000/10,000 (30%)",
                                           "records: 6,000/10,000 (60%)", "records: 9,000/10,000 (90%)",
                                           "records: 10,000/10,000 (100%)"]
