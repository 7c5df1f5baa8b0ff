"""The keyed state as a whole: digest memories, their evidence and the review queue agree.

Each keyed domain has exactly one active digest memory; every evidence id is a fact the archive
holds; an open case still describes its domain. These rules run over the whole desk (`validate
--all`, `doctor`); the pre-commit hook runs the first on the memories a commit stages."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from desk.errors import Finding
from desk.formats.memory_file import MemoryFile

_ID_RE = re.compile(rb'"id": ?"([^"\\]+)"')


def archive_ids(chunks: Iterable[bytes]) -> set[str]:
    """The record ids in archive file contents (a regex, not a JSON parse: only ids are needed)."""
    return {m.group(1).decode("utf-8", "replace") for data in chunks for m in _ID_RE.finditer(data)}


def key_of(memory: MemoryFile) -> str | None:
    """The key of a digest memory (the active revision of that key's domain), None otherwise."""
    return memory.meta.key if memory.meta.source == "digest" and memory.meta.key else None


def duplicate_keys(memories: Mapping[str, MemoryFile], changed: Iterable[str] | None = None,
                   texts: Mapping[str, str] | None = None) -> list[Finding]:
    """`keyed-duplicate` at each digest memory whose key another one holds too (only the changed
    ones, when `changed` is given), at the line of its `key:`."""
    holders: dict[str, list[str]] = {}
    for path in sorted(memories):
        key = key_of(memories[path])
        if key:
            holders.setdefault(key, []).append(path)
    wanted = set(changed) if changed is not None else None
    found = []
    for key, paths in sorted(holders.items()):
        if len(paths) < 2:
            continue
        for path in paths:
            if wanted is not None and path not in wanted:
                continue
            others = ", ".join(p for p in paths if p != path)
            found.append(Finding(path, _text_line((texts or {}).get(path, ""), "\nkey:") + 1,
                                 "keyed-duplicate",
                                 f"key {key} is also held by {others}: a domain has exactly one "
                                 "active revision; forget one of them (git history keeps it)"))
    return found


def keyed_findings(memories: Mapping[str, MemoryFile], texts: Mapping[str, str], cases: list[dict[str, Any]],
                   known_ids: set[str] | None, queue_text: str = "", queue_path: str = "") -> list[Finding]:
    """Every keyed-state rule over the desk's memories (`texts` for line numbers; `known_ids` the
    archive's ids, None: not checked). Project cases are checked by `desk resolve` instead."""
    found = duplicate_keys(memories, texts=texts)
    if known_ids is not None:
        for path, memory in sorted(memories.items()):
            for event in memory.meta.evidence:
                if event not in known_ids:
                    found.append(Finding(path, _text_line(texts.get(path, ""), event), "keyed-evidence",
                                         f"evidence {event} is not in the archive; evidence ids name "
                                         "archived facts (restore the archive, or remove the id)"))
    by_name = {m.meta.name: m for m in memories.values()}
    for case in cases:
        if case.get("status") != "open" or case.get("project"):
            continue  # a project's case weighs its project's memories, not these desk-wide ones
        seen, key = case.get("active"), case.get("key")
        if case.get("origin") == "sync":  # a merge's case names a file; the file holds the kept version
            moved = key is not None and key in texts and texts[key] != next(
                (c["content"] for c in case["candidates"] if c["role"] == "incumbent"), None)
        else:
            now = by_name.get(seen["name"]) if seen else None
            moved = (now is None or sorted(now.meta.evidence) != sorted(seen["evidence"])) if seen else (
                key is not None and any(key_of(m) == key for m in memories.values()))
        if moved:
            found.append(Finding(queue_path, _text_line(queue_text, f'"{case["id"]}"'), "conflicts-stale-case",
                                 f"open case {case['id']}: the active memory of {key or case['domain']} "
                                 "changed since it was opened; " + ("decide it again after reading the file "
                                 f"(`desk conflicts show {case['id']}`)" if case.get("origin") == "sync"
                                 else "`desk digest` reviews it again"),
                                 "warning"))
    return found


def _text_line(text: str, needle: str) -> int:
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1
