"""Docs for people in a hurry (issue 28.8): the README is what desk is, the two commands, the tour
and links, and what it says is true.

- it starts with the two set-up commands CI runs (`.ci/run` quotes the second verbatim);
- its dependency list (and docs/design.md §5a's) is pyproject.toml's, and each package it names is
  imported by desk where the line says;
- it stays about one screen of prose: the figures live in docs/benchmarks.md;
- every relative link in README.md, docs/ and bench/README.md reaches a file, and a heading when it
  names one (pages moved out of the README must not leave links pointing nowhere).
The tour itself is run by tests/test_examples.py.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]

SETUP = ('pip install . && desk init ~/my-desk && desk --desk ~/my-desk remember report-style --type preference '
         '-d "Report language and length (user correction)" -t report "Reports must be written in Chinese; '
         'keep the body under 500 characters."')
TESTS = "pip install -e '.[test]' && python -m pytest"

# The module each distribution is imported as (a new dependency needs its line here and in the README)
MODULES = {"click": "click", "pydantic": "pydantic", "PyYAML": "yaml", "python-frontmatter": "frontmatter",
           "GitPython": "git", "PyStemmer": "Stemmer"}


def pyproject() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        project: dict[str, object] = tomllib.load(f)["project"]
    return project


def distribution(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match, requirement
    return match.group(0)


def dependencies() -> set[str]:
    deps = pyproject()["dependencies"]
    assert isinstance(deps, list)
    return {distribution(d) for d in deps}


def extras() -> set[str]:
    optional = pyproject()["optional-dependencies"]
    assert isinstance(optional, dict)
    return set(optional)


def section(text: str, heading: str) -> str:
    """From `heading` to the next heading of its level or above."""
    level = len(heading) - len(heading.lstrip("#"))
    start = text.index(heading + "\n")
    rest = text[start + len(heading) + 1:]
    end = re.search(rf"^#{{1,{level}}} ", rest, re.M)
    return rest[:end.start()] if end else rest


def prose(text: str) -> list[str]:
    """The non-blank lines outside fenced blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.strip():
            lines.append(line)
    return lines


def test_the_readme_starts_with_the_two_setup_commands() -> None:
    text = README.read_text("utf-8")
    first_block = re.search(r"```sh\n(.*?)\n```", text, re.S)
    assert first_block is not None
    assert first_block.group(1).splitlines()[:2] == [SETUP, TESTS]
    before = text[:first_block.start()]
    assert before.startswith("# desk\n") and "##" not in before  # the title paragraph, then the commands
    ci = (ROOT / ".ci" / "run").read_text("utf-8")
    assert any(TESTS in line for line in ci.splitlines() if not line.lstrip().startswith("#"))  # verbatim


def test_the_readme_lists_exactly_the_dependencies_and_extras() -> None:
    listed = section(README.read_text("utf-8"), "## Dependencies")
    bullets = re.findall(r"^- \*\*([^*]+)\*\*: (.*?)(?=^- |^\S|\Z)", listed, re.M | re.S)
    assert {name for name, _ in bullets} == dependencies()
    extras_line = listed[listed.index("Extras:"):]
    assert set(re.findall(r"`([a-z]+)` \(", extras_line)) == extras()
    for name, line in bullets:  # each says where it is used: a path that exists and imports it
        paths = re.findall(r"`(desk/[\w/.]+)`", line)
        assert paths, (name, line)
        for path in paths:
            assert (ROOT / path).exists(), (name, path)
        module = MODULES[name]
        files = [f for p in paths for f in ((ROOT / p).rglob("*.py") if (ROOT / p).is_dir() else [ROOT / p])]
        pattern = re.compile(rf"^\s*(import {module}\b|from {module}( import|\.))", re.M)
        assert any(pattern.search(f.read_text("utf-8")) for f in files), (name, paths)


def test_every_dependency_is_imported_by_desk() -> None:
    """The list is true the other way too: no package in pyproject.toml that desk never imports."""
    sources = "\n".join(p.read_text("utf-8") for p in (ROOT / "desk").rglob("*.py"))
    assert set(MODULES) == dependencies(), "a new dependency: name its module in MODULES and the README"
    for name, module in MODULES.items():
        assert re.search(rf"^\s*(import {module}\b|from {module}( import|\.))", sources, re.M), name


def test_the_design_page_names_the_same_dependencies() -> None:
    text = (ROOT / "docs" / "design.md").read_text("utf-8")
    listed = section(text, "## 5a. Layers and dependencies")
    listed = listed[listed.index("Dependencies ("):]
    named = set(re.findall(r"^- \*\*([^*]+)\*\*:", listed, re.M))
    assert named == dependencies()
    assert {e for e in extras() if f"`{e}` (" in listed} == extras()
    assert "not used" not in listed  # the old claim about GitPython and python-frontmatter


def test_the_readme_is_about_one_screen_of_prose() -> None:
    text = README.read_text("utf-8")
    assert len(prose(text)) <= 70, "the README is the what, the two commands, the tour and links"
    assert "| target |" not in text and "Latest figures" not in text  # the figures live in docs/benchmarks.md
    assert "Latest figures" in (ROOT / "docs" / "benchmarks.md").read_text("utf-8")
    for page in ("concepts.md", "commands.md", "contributing.md", "benchmarks.md", "api.md", "design.md"):
        assert f"](docs/{page})" in text, page


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in prose(page.read_text("utf-8")):
        match = re.match(r"#{1,6} (.*)", line)
        if match:
            slug = _slug(match.group(1))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def _links(page: Path) -> list[str]:
    text = "\n".join(prose(page.read_text("utf-8")))
    text = re.sub(r"`[^`]*`", "", text)  # inline code: an example like `[name](memory/name.md)`
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_reach_a_file_and_heading(page: Path) -> None:
    broken = []
    for link in _links(page):
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(link)
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
            broken.append(link)
    assert broken == []


def test_the_link_check_can_fail(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A page\n\n## Two words\n\n[x](b.md) [y](#two-words) [z](#nowhere) "
                                   "`[code](c.md)`\n")
    assert _links(tmp_path / "a.md") == ["b.md", "#two-words", "#nowhere"]
    assert _anchors(tmp_path / "a.md") == {"a-page", "two-words"}
    assert _slug("3.2 The write gate") == "32-the-write-gate" and _slug("`desk context`: x") == "desk-context-x"
