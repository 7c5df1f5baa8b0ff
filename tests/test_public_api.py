"""One public API (issue 28.6): desk/__init__.py's `__all__` is the one list of public names, and
every name docs/api.md shows imports from `desk`.

The page is read as a user reads it: each `desk.NAME` it writes (prose, tables and code) and each
class name it puts in backticks (`Synced`, `RejectedError`) must be in `desk.__all__` and import
with `from desk import NAME`. A page naming something desk does not export fails here, as
`desk.clone` and `Synced` (reachable only through `desk.api`) once did.
"""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import desk
import desk.errors
import desk.results

API_PAGE = Path(__file__).resolve().parents[1] / "docs" / "api.md"

# `desk.NAME` as code writes it (a public name: not `desk.__all__`), not the tail of a path or of a longer
# name (`.system/desk.json`, `my-desk.x`)
DOTTED = re.compile(r"(?<![\w./-])desk\.([A-Za-z]\w*)")
# a backticked span that is one CamelCase identifier: a class name (`Synced`), not `None`, `Z` or `MEMORY`
CLASS_SPAN = re.compile(r"`([A-Z][a-z]\w*)`")
NOT_DESK = {"None", "True", "False"}  # Python's own names a page may put in backticks


def dotted_names(text: str) -> set[str]:
    return set(DOTTED.findall(text))


def class_names(text: str) -> set[str]:
    return set(CLASS_SPAN.findall(text)) - NOT_DESK


def importable(name: str) -> bool:
    """`from desk import NAME` works (through desk's own `__getattr__`, as a user's import goes)."""
    scope: dict[str, object] = {}
    try:
        exec(f"from desk import {name}", scope)  # noqa: S102 - the statement under test, verbatim
    except ImportError:
        return False
    return scope.get(name) is not None


def result_and_error_classes() -> set[str]:
    """Every result class desk.results holds and every error desk.errors defines."""
    errors = {name for name, value in vars(desk.errors).items()
              if inspect.isclass(value) and value.__module__ == "desk.errors"}
    return set(desk.results._HOMES) | errors


def test_the_page_names_what_it_should() -> None:
    """The parsing itself: the page's known names are found (a regex that found nothing would pass
    every check below)."""
    text = API_PAGE.read_text("utf-8")
    assert {"open", "init", "clone", "stopped_notice", "RejectedError", "DeskError"} <= dotted_names(text)
    assert {"Synced", "Cloned", "MemoryChange", "Outcome", "ConflictError", "Finding", "Desk", "Time"} \
        <= class_names(text)
    assert "json" not in dotted_names(text + " .system/desk.json")
    assert class_names("`Z` `None` `MEMORY` `Synced`") == {"Synced"}


def test_every_desk_name_on_the_api_page_imports_from_desk() -> None:
    text = API_PAGE.read_text("utf-8")
    missing = sorted(name for name in dotted_names(text) if name not in desk.__all__ or not importable(name))
    assert missing == [], f"docs/api.md writes desk.NAME for names desk does not export: {missing}"


def test_every_class_the_api_page_names_imports_from_desk() -> None:
    """Every class name in backticks: results and errors above all (the page's tables name them),
    and any other class the page shows a user (`Desk`)."""
    text = API_PAGE.read_text("utf-8")
    names = class_names(text)
    assert names & result_and_error_classes(), "the page names no result or error class"
    missing = sorted(name for name in names if name not in desk.__all__ or not importable(name))
    assert missing == [], f"docs/api.md names classes desk does not export: {missing}"


def test_every_result_and_error_class_is_public() -> None:
    """A result class added to desk.results (or an error to desk.errors) without its line in
    desk/__init__.py's `__all__` would be reachable only through a private module again."""
    missing = sorted(result_and_error_classes() - set(desk.__all__))
    assert missing == []


def test_every_name_in_all_resolves_and_is_listed_once() -> None:
    assert len(desk.__all__) == len(set(desk.__all__))
    for name in desk.__all__:
        assert importable(name), name
        assert name in dir(desk), name
    assert set(desk._HOMES) | {"__version__"} == set(desk.__all__)  # nothing loadable that is not listed


def test_a_name_desk_does_not_export_fails() -> None:
    """The check can fail: `missing_setup` (the CLI's own check, in desk.api) and a made-up name are
    not public, and desk.api no longer hands out result classes beside `desk`."""
    assert not importable("missing_setup") and "missing_setup" not in desk.__all__
    assert not importable("NoSuchResult")
    with pytest.raises(AttributeError):
        desk.missing_setup  # noqa: B018
    page = "Call `desk.missing_setup(d)`, then read `NoSuchResult`."
    assert sorted(n for n in dotted_names(page) | class_names(page) if n not in desk.__all__) == \
        ["NoSuchResult", "missing_setup"]


def test_the_public_names_keep_import_desk_light() -> None:
    """`import desk` loads no other desk module, and listing its names (`dir`, `__all__`) loads none either."""
    code = ("import sys, desk; names = dir(desk), desk.__all__; "
            "print(sorted(m for m in sys.modules if m.startswith('desk')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['desk']"
