"""The recalled-memories block of `desk context`: trigger-gated memory bodies (docs/design.md §8.4),
in one `<desk-memory>` block with the notice and each one's provenance, escaped so a body cannot
close or imitate the block. No trigger hit, nothing injected."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from desk.layout import DeskFolder, project_memory_path
from desk.formats.memory_index import IndexEntry, memory_path
from desk.gate.mirror import Committed, head_mirror, project_heads
from desk.recall.context.cache import MemoryView
from desk.recall.context.files import past_blob
from desk.recall.context.parsed import ParsedCache
from desk.recall.context.sections import Section, _note, _some
from desk.text.escape import injected_body, one_line, xml_attr
from desk.text.normalize import normalize
from desk.text.times import format_time
from desk.text.tokens import CJK_CLASS, estimate_tokens

if TYPE_CHECKING:
    from desk.memory.past import Past

NOTICE = ("Memory is background that may be out of date; when it conflicts with the current "
          "conversation, the current conversation wins.")
BLOCK = "desk-memory"


@functools.cache
def _wordish_re() -> re.Pattern[str]:
    """Compiled on first use: a class over the CJK ranges is slow for `re` to compile."""
    return re.compile(rf"[^\W_{CJK_CLASS}]")


def _wordish(ch: str) -> bool:
    """Whether the character `ch` is a letter or digit of a word (not `_`, not CJK)."""
    return ch.isalnum() if ch.isascii() else _wordish_re().match(ch) is not None


def trigger_hits(trigger: str, query: str) -> bool:
    """Whether the normalised `query` mentions `trigger`: CJK anywhere, words on word boundaries.

    A word trigger also matches its plain plural (`report` hits `reports`), nothing looser.
    """
    needle = normalize(trigger)
    if not needle:
        return False
    start = query.find(needle)
    while start >= 0:
        end = start + len(needle)
        before_ok = start == 0 or not (_wordish(needle[0]) and _wordish(query[start - 1]))
        rest = query[end:]
        for suffix in ("", "s", "es"):
            if rest.startswith(suffix):
                after = rest[len(suffix):len(suffix) + 1]
                if not (after and _wordish(needle[-1]) and _wordish(after)):
                    if before_ok:
                        return True
        start = query.find(needle, start + 1)
    return False


_Hit = tuple[str, str, IndexEntry, list[str]]  # a memory's path, name, entry and the triggers hit
_HEAD = f"<{BLOCK}>\n{NOTICE}\n"
_TAIL = f"</{BLOCK}>\n"


def _recalled(desk: DeskFolder, query: str, view: MemoryView, limit: int,
              project: tuple[str, Mapping[str, IndexEntry]] | None, parsed: ParsedCache,
              past: Past | None = None) -> tuple[Section, list[dict[str, Any]]] | None:
    """The trigger-gated memory block, or None when no trigger is hit. `project` (its name and
    current entries) adds that project's memories; `past` (`--as-of`): read as that commit holds them."""
    hits = _hits(normalize(query), view, project)
    if not hits:
        return None
    read = desk.read
    if past is not None and past.commit is not None:
        committed = {_key(path, name): Committed("", past.commit, None) for path, name, _, _ in hits}
        read = functools.partial(_blob_at, desk, past)
    else:
        committed = _last_commits(desk, view, hits)
    hits.sort(key=lambda h: (-(h[2].importance or 0), h[1], h[0]))  # importance, then name
    chosen, left = _fill(read, hits, committed, limit, parsed)
    text = _HEAD + "".join(_memory_xml(m) for m in chosen)
    if left:
        text += _note(f"recalled memories over the budget of {limit} tokens left out: "
                      + _some(left, ", ") + "; read them with `desk show NAME`") + "\n"
    text += _TAIL
    label = f"Recalled memories (query: {' '.join(one_line(query).split())})"
    section = Section("recalled", label, None, text, limit, left,
                      [{"path": m["path"], "commit": m["commit"]} for m in chosen])
    return section, chosen


def _hits(normalized: str, view: MemoryView, project: tuple[str, Mapping[str, IndexEntry]] | None) -> list[_Hit]:
    """The desk-wide memories, then the project's, with a trigger the normalised query hits."""
    active = view.entries(view.candidates(normalized))
    scoped = [(memory_path(n), n, e) for n, e in sorted(active.items())]
    if project is not None:
        scoped += [(project_memory_path(project[0], n), n, e) for n, e in sorted(project[1].items())]
    hits = []
    for path, name, entry in scoped:
        hit = [t for t in entry.triggers if trigger_hits(t, normalized)]
        if hit:
            hits.append((path, name, entry, hit))
    return hits


def _last_commits(desk: DeskFolder, view: MemoryView, hits: list[_Hit]) -> dict[str, Committed]:
    """Each hit's last commit from the HEAD mirror (a project memory's from its table): no git process per hit."""
    with head_mirror(desk, view.entry_cache()) as mirror:
        committed = mirror.committed(name for path, name, _, _ in hits if path == memory_path(name))
    in_project = [path for path, name, _, _ in hits if path != memory_path(name)]
    if in_project:
        with project_heads(desk) as heads:
            committed.update(heads.committed(in_project))
    return committed


def _fill(read: Callable[[str], bytes], hits: list[_Hit], committed: Mapping[str, Committed], limit: int,
          parsed: ParsedCache) -> tuple[list[dict[str, Any]], list[str]]:
    """The hits that fit in `limit` in their order, as the fields their elements show, and the
    names of those left out. Elements are whole lines, so their token estimates add up."""
    chosen: list[dict[str, Any]] = []
    left: list[str] = []
    used = estimate_tokens(_HEAD + _TAIL)
    close = estimate_tokens(_CLOSE)
    for path, name, entry, hit in hits:
        # One that cannot fit even without its tag line, or with it, is never read (40: the note's room)
        if used + entry.injected_tokens + close + 40 > limit:
            left.append(name)
            continue
        at_head = committed.get(_key(path, name))
        m = {"name": name, "path": path, "commit": at_head.commit if at_head else None,
             "type": entry.type, "importance": entry.importance, "source": entry.source,
             "source_event": entry.source_event, "updated": entry.updated_field, "triggers_hit": hit}
        least = estimate_tokens(_memory_tag(m) + "\n") + entry.injected_tokens + close
        if used + least + 40 > limit:
            left.append(name)
            continue
        m.update(_parsed_memory(read, path, name, parsed))
        trial = used + estimate_tokens(_memory_xml(m))
        if trial + 40 <= limit:
            chosen.append(m)
            used = trial
        else:
            left.append(name)
    return chosen, left


_CLOSE = "</memory>\n"


def _key(path: str, name: str) -> str:
    """How `committed` names a hit: a desk-wide memory by its name, a project's by its path."""
    return name if path == memory_path(name) else path


def _blob_at(desk: DeskFolder, past: Past, path: str) -> bytes:
    """A memory file as the commit of a read as of a time holds it."""
    data = past_blob(desk, past, path)
    if data is None:
        raise FileNotFoundError(path)
    return data


def _parsed_memory(read: Callable[[str], bytes], path: str, name: str, parsed: ParsedCache) -> dict[str, Any]:
    """The fields an injected memory shows, parsed from its file or kept from a parse of the same bytes."""
    data = read(path)
    found = parsed.get("memory", data, path, name)
    if found is None:
        from desk.formats.memory_file import parse_memory  # PyYAML only when a body is parsed

        memory = parse_memory(data, path, name)
        meta = memory.meta
        found = {"type": meta.type, "importance": meta.importance, "source": meta.source,
                 "source_event": meta.source_event,
                 "updated": format_time(meta.updated) if meta.updated else None, "body": memory.body}
        parsed.put("memory", data, (path, name), found)
    return found


def _memory_tag(m: Mapping[str, Any]) -> str:
    shown = {**m, "commit": (m["commit"] or "")[:12]}  # the full sha is in --format json
    attrs = " ".join(f"{k}={xml_attr(shown[k])}" for k in ("name", "path", "commit", "type", "source",
                                                        "source_event", "updated") if shown.get(k))
    attrs += f" triggers_hit={xml_attr(', '.join(m['triggers_hit']))}"
    return f"<memory {attrs}>"


def _memory_xml(m: Mapping[str, Any]) -> str:
    return f"{_memory_tag(m)}\n{injected_body(m['body'])}\n{_CLOSE}"
