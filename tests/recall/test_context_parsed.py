"""desk.recall.context.parsed: USER.md's and injected memories' parses kept by their bytes give
exactly what parsing gives, notice every edit, and spare a cold `desk context` PyYAML."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys

import pytest

from desk.layout import DeskFolder
from desk.memory.operations import remember
from desk.recall.context import ContextRequest, build_context, render_markdown

NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc)


def _desk(desk: DeskFolder) -> DeskFolder:
    remember(desk, "tea", type="preference", description="Drink of choice", body="Green tea, no sugar.",
             triggers=("tea",), importance=4, now=NOW)
    remember(desk, "coffee", type="preference", description="Never coffee", body="No coffee after noon.",
             triggers=("coffee",), now=NOW)
    user = desk.path("USER.md")
    user.write_text(user.read_text("utf-8").replace("display_name: ''", "display_name: 'Mara'"), "utf-8")
    return desk


def _render(desk: DeskFolder, query: str = "tea and coffee") -> str:
    result = build_context(desk, ContextRequest(query=query, as_of=NOW))
    return render_markdown(result) + json.dumps(result.to_json(), sort_keys=True)


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from desk.formats import memory_file
    from desk.formats import scope_files

    parsed: list[str] = []
    real_memory, real_profile = memory_file.parse_memory, scope_files.profile_fields_unchecked

    def memory(*args: object, **kwargs: object) -> object:
        parsed.append("memory")
        return real_memory(*args, **kwargs)  # type: ignore[arg-type]

    def profile(*args: object, **kwargs: object) -> object:
        parsed.append("profile")
        return real_profile(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(memory_file, "parse_memory", memory)
    monkeypatch.setattr(scope_files, "profile_fields_unchecked", profile)
    return parsed


def test_kept_parses_render_what_parsing_renders(desk: DeskFolder, monkeypatch: pytest.MonkeyPatch) -> None:
    _desk(desk)
    for i, path in enumerate(sorted(desk.path("memory").glob("*.md"))):  # written an hour ago: views kept
        when = path.stat().st_mtime - 3600 - i
        os.utime(path, (when, when))
    parsed = _count_parses(monkeypatch)
    first = _render(desk)
    assert "Mara" in first and "Green tea, no sugar." in first and "No coffee after noon." in first
    parsed.clear()
    assert _render(desk) == first
    assert parsed == []  # every answer kept
    (desk.cache_dir / "context.sqlite").unlink()  # the entries stay cached: only the two bodies and USER.md
    assert _render(desk) == first and sorted(parsed) == ["memory", "memory", "profile"]


def test_every_edit_is_parsed_again(desk: DeskFolder) -> None:
    _desk(desk)
    _render(desk)
    user = desk.path("USER.md")
    user.write_text(user.read_text("utf-8").replace("'Mara'", "'Nora'"), "utf-8")  # same size
    memory = desk.path("memory/tea.md")
    memory.write_text(memory.read_text("utf-8").replace("Green tea", "Black tea"), "utf-8")  # same size
    out = _render(desk)
    assert "Nora" in out and "Mara" not in out
    assert "Black tea, no sugar." in out and "Green tea" not in out
    user.write_text(user.read_text("utf-8").replace("display_name: 'Nora'", "display_name: ["), "utf-8")
    broken = _render(desk)  # a USER.md that does not parse: named, never kept, the rest loads
    assert "USER.md left out" in broken and "Nora" not in broken and "Black tea" in broken
    assert _render(desk) == broken


def test_a_cold_context_with_kept_parses_loads_no_parser(desk: DeskFolder) -> None:
    _desk(desk)
    code = ("import sys, desk\n"
            f"out = desk.open({str(desk.root)!r}).context(query='tea and coffee', now='2026-11-29T12:00:00Z')\n"
            "print(sorted(m for m in ('yaml', 'desk.formats.memory_file', 'desk.formats.scope_files') if m in sys.modules))\n"
            "print(out.to_json()['recalled'][0]['body'])\n")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    first = runs[0].splitlines()[0]  # parsed (PyYAML too unless the frontmatter reader's fast path read it), kept
    assert first.startswith("['desk.formats.memory_file', 'desk.formats.scope_files'"), first
    assert runs[1].splitlines() == ["[]", *runs[0].splitlines()[1:]]  # the same answer, no parser loaded
