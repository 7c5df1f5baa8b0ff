"""What a person reads to decide a conflict case (`desk conflicts show`): each candidate's label,
source (its facts, or a merge's side and commit) and diff from the active memory now."""

from __future__ import annotations

import difflib
from typing import Any

from desk.errors import GitError
from desk.layout import DeskFolder

DELETED = "(deleted)"


def body_of(text: str) -> str:
    """A memory file's body (its frontmatter dropped); other text as it is."""
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end >= 0:
            return text[end + 4:].lstrip("\n")
    return text


def label(content: str | None) -> str:
    """The first non-empty line of a candidate's body, or "(deleted)" for a deletion."""
    if content is None:
        return DELETED
    for line in body_of(content).splitlines():
        if line.strip():
            return line.strip().lstrip("#").strip() or line.strip()
    return "(empty)"


def udiff(old: str | None, new: str | None, names: tuple[str, str]) -> str:
    """The unified diff from `old` to `new`; None is a deleted file ("(deleted)", no lines)."""
    def lines(text: str | None) -> list[str]:
        if text is None:
            return []
        return (text if text.endswith("\n") else text + "\n").splitlines(True)
    return "".join(difflib.unified_diff(lines(old), lines(new), *names))


def active_path(case: dict[str, Any]) -> str | None:
    """The file a case's decision writes: a merge's case names it; a digest case its memory."""
    if case.get("origin") == "sync":
        return str(case["key"])
    if not case.get("active"):
        return None
    folder = f"projects/{case['project']}/memory" if case.get("project") else "memory"
    return f"{folder}/{case['active']['name']}.md"


def _active_text(desk: DeskFolder, case: dict[str, Any], path: str | None) -> str | None:
    data = desk.read_if_present(path) if path else None
    if data is None:
        return None
    text = data.decode("utf-8", "replace")
    if case.get("origin") == "sync" and str(case["domain"]).startswith("now:"):
        from desk.formats.now import NowNote

        return NowNote.parse(text).section(case["domain"].split(":", 1)[1])
    return text if case.get("origin") == "sync" else body_of(text)


def _source(desk: DeskFolder, case: dict[str, Any], cand: dict[str, Any],
            evidence: dict[str, dict[str, Any] | None]) -> dict[str, Any]:
    if case.get("origin") != "sync":
        return {"kind": "facts", "events": [
            {"event": i, "clone": i.split("-")[1] if len(i.split("-")) > 3 else None,
             "at": (evidence.get(i) or {}).get("at"), "missing": not evidence.get(i)} for i in cand["evidence"]]}
    source: dict[str, Any] = {"kind": "merge", "side": cand.get("side"), "commit": cand.get("commit")}
    if cand.get("commit"):
        try:
            found = desk.git.history.log([str(case["key"])], limit=1, rev=cand["commit"])
        except GitError:  # a commit this clone does not hold (a queue merged from elsewhere)
            found = []
        if found:
            c = found[0]
            source["changed_in"] = {"commit": c.sha, "at": c.date, "author": c.author,
                                    "subject": c.subject, "actor": next(iter(c.trailers.get("Desk-Actor", [])), None)}
    return source


def review(desk: DeskFolder, case: dict[str, Any], evidence: dict[str, dict[str, Any] | None]) -> dict[str, Any]:
    """`case` with what a person reads to decide it: `active_path`, `active_text`, `diffs` (the
    first candidate against each other), and per candidate `label`, `source` and `diff` (from the
    active memory now to the candidate; None when the domain has no active memory)."""
    path = active_path(case)
    active = _active_text(desk, case, path)
    now_name = f"{path or 'active memory'} (now)"
    candidates = [{**cand, "label": label(cand["content"]), "source": _source(desk, case, cand, evidence),
                   "diff": udiff(active, cand["content"], (now_name, cand["id"])) if path else None}
                  for cand in case["candidates"]]
    first = case["candidates"][0]
    diffs = [{"from": first["id"], "to": c["id"], "diff": udiff(first["content"], c["content"], (first["id"], c["id"]))}
             for c in case["candidates"][1:]]
    return {**case, "candidates": candidates, "active_path": path, "active_text": active, "diffs": diffs}
