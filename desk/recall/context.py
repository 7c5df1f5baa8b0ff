"""`desk context`: the injection contract of docs/design.md §4.1, rendered deterministically within budgets.

Read order: the project's AGENTS.md (when given), the desk's AGENTS.md, SOUL.md, NOW.md, MISTAKES.md,
USER.md, MEMORY.md (active memories only), then, with a query, the bodies of the memories whose
triggers the query hits (docs/design.md §8.4: no hit, nothing injected), each with its provenance, inside one
block that carries the notice that memory is background that may be out of date.

Budgets (estimated tokens, `desk.text.tokens`) come per section from `.system/desk.json` `budgets` and
can be overridden per call; the total budget is spent in read order. Whatever is trimmed is named in
the output, never dropped silently; MISTAKES.md keeps its highest-value entries (importance, then
newest). Memory text is XML-escaped, so a body cannot close the block it sits in. The output is a
pure function of the files, the query, the budgets and `as_of`: same inputs, same bytes.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from desk.errors import Finding, InvalidFileError, UsageError
from desk.layout import (AGENTS_FILE, CONFIG_PATH, INDEX_FILE, MISTAKES_FILE, NOW_FILE, OWNER_SCOPE,
                         PREFS_INDEX_FILE, PROJECTS_DIR, SOUL_FILE, USER_FILE, DeskFolder, profile_path,
                         prefs_index_path, project_index_path, project_memory_path, scope_id)
from desk.memory.index import HEADER, IndexEntry, entries_in_worktree, invalid_paths, memory_path
from desk.memory.mirror import head_mirror
from desk.text.escape import injected_body, xml_attr
from desk.recall.records import text_terms
from desk.text.normalize import normalize
from desk.text.times import format_time, utc_now
from desk.text.tokens import CJK_CLASS, estimate_tokens

NOTICE = ("Memory is background that may be out of date; when it conflicts with the current "
          "conversation, the current conversation wins.")
BLOCK = "desk-memory"
SECTIONS = (  # budget key, label, desk path (None: the project's file)
    ("project_agents", f"{AGENTS_FILE} (project)", None),
    ("agents", AGENTS_FILE, AGENTS_FILE),
    ("soul", SOUL_FILE, SOUL_FILE),
    ("now", NOW_FILE, NOW_FILE),
    ("mistakes", MISTAKES_FILE, MISTAKES_FILE),
    ("user", USER_FILE, USER_FILE),
    ("user_prefs", "User profile and preferences", PREFS_INDEX_FILE),
    ("memory_index", INDEX_FILE, INDEX_FILE),
    ("project_index", f"{INDEX_FILE} (project)", PROJECTS_DIR),
)
BUDGET_KEYS = ("total", *(key for key, _, _ in SECTIONS), "recalled")
# Budget keys added after desks were made, with their defaults (desk.config.ContextBudgets; a test
# keeps them equal): an older desk.json without them still takes the fast path below.
LATER_BUDGETS = {"user_prefs": 400, "project_index": 800}
_IMPORTANCE = re.compile(r"importance\W{0,3}([1-5])", re.I)
_WORDISH = re.compile(rf"[^\W_{CJK_CLASS}]")


@dataclass
class Section:
    key: str
    label: str
    path: str | None
    text: str
    budget: int
    left_out: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "label": self.label, "path": self.path, "tokens": self.tokens,
                "budget": self.budget, "trimmed": bool(self.left_out), "left_out": self.left_out,
                "text": self.text}


@dataclass
class ContextResult:
    sections: list[Section]
    query: str | None
    recalled: list[dict[str, Any]]
    budget: int

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, "budget": self.budget,
                "total_tokens": sum(s.tokens for s in self.sections),
                "sections": [s.to_json() for s in self.sections], "recalled": self.recalled,
                "left_out": [f"{s.label}: {item}" for s in self.sections for item in s.left_out]}


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
        before_ok = start == 0 or not (_WORDISH.match(needle[0]) and _WORDISH.match(query[start - 1]))
        rest = query[end:]
        for suffix in ("", "s", "es"):
            if rest.startswith(suffix):
                after = rest[len(suffix):len(suffix) + 1]
                if not (after and _WORDISH.match(needle[-1]) and _WORDISH.match(after)):
                    if before_ok:
                        return True
        start = query.find(needle, start + 1)
    return False


def _configured_budgets(desk: DeskFolder) -> dict[str, int]:
    """The budgets of `.system/desk.json`. When they are complete and plain, as `desk init` writes
    them, they are read as JSON: loading pydantic to validate them would cost a cold `desk context`
    ~70 ms. Anything else goes through the validating loader, which says what is wrong."""
    try:
        found = json.loads(desk.read(CONFIG_PATH))["budgets"]
        if isinstance(found, dict):
            found = {**LATER_BUDGETS, **found}
        if (isinstance(found, dict) and sorted(found) == sorted(BUDGET_KEYS)
                and all(type(v) is int and v >= 0 for v in found.values())):
            return dict(found)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return desk.config.budgets.model_dump()


def budgets_for(desk: DeskFolder, total: int | None, overrides: Mapping[str, int]) -> dict[str, int]:
    budgets = _configured_budgets(desk)
    for key, value in overrides.items():
        if key not in BUDGET_KEYS:
            raise UsageError(f"unknown budget section {key!r}; one of {', '.join(BUDGET_KEYS)}")
        if value < 0:
            raise UsageError(f"budget for {key} must be 0 or more, not {value}")
        budgets[key] = value
    if total is not None:
        if total < 0:
            raise UsageError(f"--budget must be 0 or more, not {total}")
        budgets["total"] = total
    return budgets


def build_context(desk: DeskFolder, *, query: str | None = None, budget: int | None = None,
                  section_budgets: Mapping[str, int] | None = None, project_agents: Path | None = None,
                  as_of: dt.datetime | None = None, user: str | None = None,
                  project: str | None = None) -> ContextResult:
    """The sections to inject, trimmed to their budgets, in the contract's read order.

    `user` (a user id; None: the desk owner) selects whose USER.md and preferences are loaded;
    nothing of any other user's scope is read. `project` adds that project's active memories (its
    index, and with a query its trigger-hit bodies); no other project's are read.
    """
    as_of = as_of or utc_now()
    scope = scope_id(user)
    project_active: dict[str, IndexEntry] = {}
    project_expired = 0
    project_refused: list[Finding] = []
    if project is not None:
        from desk.scopes.projects import project_entries, require_project

        require_project(project)
        found = project_entries(desk, project, project_refused)
        project_active = {n: e for n, e in found.items() if not e.is_expired(as_of)}
        project_expired = len(found) - len(project_active)
    budgets = budgets_for(desk, budget, section_budgets or {})
    remaining = budgets["total"]
    # A person's broken hand edit must not keep the assistant from waking up: the file is named
    # (`desk validate` says what is wrong) and everything else is still loaded.
    invalid: list[Finding] = []
    entries = entries_in_worktree(desk, invalid)
    broken = invalid_paths(invalid)
    active = {n: e for n, e in entries.items() if not e.is_expired(as_of)}
    sections: list[Section] = []
    for key, label, rel in SECTIONS:
        if rel == PROJECTS_DIR:
            if project is None:
                continue
            text = _index_text(project_active, project_expired, invalid_paths(project_refused))
            shown = project_index_path(project)
        elif rel is None:
            if project_agents is None:
                continue
            text, shown = _read(project_agents, str(project_agents), None), str(project_agents)
        elif rel == INDEX_FILE:
            text, shown = _index_text(active, len(entries) - len(active), broken), rel
        elif rel == USER_FILE:
            shown = profile_path(scope)
            text = _profile_text(desk, scope, shown)
        elif rel == PREFS_INDEX_FILE:
            text, shown = _user_block(desk, scope, as_of), prefs_index_path(scope)
        else:
            text, shown = _read(desk.path(rel), rel, desk.root), rel
        limit = min(budgets[key], remaining)
        if key == "mistakes":
            section = _trim_entries(key, label, shown, text, limit, query or "")
        else:
            section = _trim_lines(key, label, shown, text, limit)
        remaining -= section.tokens
        sections.append(section)
    recalled: list[dict[str, Any]] = []
    if query is not None and query.strip():
        block = _recalled(desk, query, active, min(budgets["recalled"], remaining),
                          (project, project_active) if project is not None else None)
        if block is not None:
            sections.append(block[0])
            recalled = block[1]
    return ContextResult(sections, query, recalled, budgets["total"])


def _profile_text(desk: DeskFolder, scope: str, shown: str) -> str:
    """The scope's USER.md as it is, unless it records another scope or desk (then only a note)."""
    problem = _profile_problem(desk, scope, shown)
    if problem:
        return _note(f"{shown} left out: {problem}") + "\n"
    if scope != OWNER_SCOPE and not desk.path(shown).is_file():
        return "_(no profile for this user yet: `desk --user ID user set FIELD=VALUE`)_\n"
    return _read(desk.path(shown), shown, desk.root)


def _profile_problem(desk: DeskFolder, scope: str, shown: str) -> str | None:
    from desk.scopes.files import ownership_problem, profile_fields_unchecked

    from desk.storage.reading import SymlinkError

    try:
        data = desk.read_if_present(shown)
    except SymlinkError:
        return "it is a symbolic link, and desk never reads through one"
    if data is None:
        return None
    try:
        _, found, found_desk, framed = profile_fields_unchecked(data, shown)
    except InvalidFileError as exc:
        return exc.findings[0].message if exc.findings else "it does not parse"
    if not framed and scope == OWNER_SCOPE:
        return None
    return ownership_problem(found if found is not None or scope != OWNER_SCOPE else OWNER_SCOPE,
                             found_desk, scope, desk.desk_id)


def _user_block(desk: DeskFolder, scope: str, as_of: dt.datetime) -> str:
    """The selected user's profile line and active preferences (seed 003's block), values escaped;
    files that record another scope or desk are left out and named."""
    from desk.scopes.files import profile_fields_unchecked, user_block
    from desk.scopes.prefs import scope_prefs

    notes: list[str] = []
    fields: dict[str, Any] = {}
    shown = profile_path(scope)
    problem = _profile_problem(desk, scope, shown)
    if problem:
        notes.append(f"{shown} left out: {problem}")
    elif desk.path(shown).is_file():
        fields = profile_fields_unchecked(desk.read(shown), shown)[0]
    problems: list[Finding] = []
    active = [p for p in scope_prefs(desk, scope, problems) if p.is_active(as_of)]
    notes += [f"{f.path} left out: {f.message}" for f in problems]
    return user_block(fields, active, notes)


def _read(path: Path, shown: str, root: Path | None) -> str:
    """A section's file. Inside the desk (`root`) a symlink is never read through: the section says
    it was refused instead (the link could point anywhere, /proc/self/environ or a key file), and
    everything else still loads. The project's AGENTS.md is the caller's own path, outside it."""
    from desk.storage.reading import SymlinkError, read_text

    try:
        if root is None:
            return path.read_text("utf-8", "replace").rstrip() + "\n"
        return read_text(path, root, "replace").rstrip() + "\n"
    except SymlinkError:
        return (f"_({shown} was not read: it is a symbolic link, and desk never reads through one; "
                "`desk validate --all` names it and says how to put the file back)_\n")
    except FileNotFoundError:
        return f"_({shown} does not exist)_\n"
    except OSError as exc:
        raise UsageError(f"cannot read {shown}: {exc}") from None


def _index_text(active: Mapping[str, IndexEntry], expired: int, broken: list[str]) -> str:
    lines = [HEADER.rstrip("\n"), ""]
    lines += [e.line() for e in sorted(active.values(), key=lambda e: e.name)] or ["_No active memories._"]
    if expired:
        lines.append(f"_({expired} expired {'memory' if expired == 1 else 'memories'} not shown.)_")
    if broken:
        lines.append(f"_({', '.join(broken)} left out: the file does not parse or belongs to another scope; run `desk validate`.)_")
    return "\n".join(lines) + "\n"


def _note(text: str) -> str:
    return f"[desk context: {text}]"


def _trim_lines(key: str, label: str, shown: str, text: str, limit: int) -> Section:
    """Keep the first lines that fit; say which lines were left out."""
    section = Section(key, label, shown, text, limit)
    if _fits(text, limit):
        return section
    lines = text.rstrip("\n").split("\n")

    def note(count: int) -> str:
        return _note(f"{label} trimmed to its budget of {limit} tokens: lines {count + 1}-{len(lines)} "
                     f"of {len(lines)} left out; open {shown} for the rest")

    room = limit - estimate_tokens(note(len(lines))) - 1
    kept: list[str] = []
    for line in lines:
        room -= estimate_tokens(line) + 1
        if room < 0:
            break
        kept.append(line)
    section.text = "\n".join([*kept, note(len(kept))]) + "\n"
    section.left_out = [f"lines {len(kept) + 1}-{len(lines)}"]
    if estimate_tokens(section.text) > limit:
        section.text, section.left_out = "", ["the whole file"]
    return section


def _fits(text: str, limit: int, chunk: int = 8192) -> bool:
    """`estimate_tokens(text) <= limit`, counted in pieces that stop once over the limit (MEMORY.md
    of 10,000 memories is 600 kB; its budget shows a few hundred lines).

    Pieces end after a newline that follows a non-space character: the estimator counts that
    newline on its own, so the pieces' counts add up to the whole text's exactly.
    """
    total, start = 0, 0
    while start < len(text):
        end = text.find("\n", start + chunk)
        while end > 0 and text[end - 1].isspace():
            end = text.find("\n", end + 1)
        end = len(text) if end < 0 else end + 1
        total += estimate_tokens(text[start:end])
        if total > limit:
            return False
        start = end
    return total <= limit


def _trim_entries(key: str, label: str, shown: str, text: str, limit: int, query: str) -> Section:
    """MISTAKES.md: keep the highest-value `## ` entries that fit.

    Value: an explicit `importance: N` first, then how many of the query's terms the entry shares
    (a lesson about the task at hand), then the newest (entries are appended).
    """
    section = Section(key, label, shown, text, limit)
    if estimate_tokens(text) <= limit:
        return section
    parts = re.split(r"(?m)^(?=## )", text)
    preamble, entries = (parts[0], parts[1:]) if not parts[0].startswith("## ") else ("", parts)
    wanted = set(text_terms(query))
    ranked = sorted(range(len(entries)), key=lambda i: (
        -_importance(entries[i]), -len(wanted.intersection(text_terms(entries[i]))), -i))
    chosen: set[int] = set()
    for i in ranked:
        trial = chosen | {i}
        if estimate_tokens(_assemble(preamble, entries, trial, label)) <= limit:
            chosen = trial
    section.left_out = [_title(entries[i]) for i in range(len(entries)) if i not in chosen]
    body = _assemble(preamble, entries, chosen, label)
    if estimate_tokens(body) > limit:
        body, section.left_out = "", ["the whole file"]
    section.text = body
    return section


def _importance(entry: str) -> int:
    match = _IMPORTANCE.search(entry)
    return int(match.group(1)) if match else 0


def _title(entry: str) -> str:
    return entry.split("\n", 1)[0].removeprefix("## ").strip()


def _assemble(preamble: str, entries: list[str], chosen: set[int], label: str) -> str:
    left = [_title(e) for i, e in enumerate(entries) if i not in chosen]
    text = preamble + "".join(entries[i] for i in sorted(chosen))
    if left:
        text = text.rstrip("\n") + "\n\n" + _note(
            f"{label} trimmed to its budget: {len(left)} lower-value "
            f"{'entry' if len(left) == 1 else 'entries'} left out: " + _some(left, "; ")) + "\n"
    return text


def _some(names: list[str], sep: str, most: int = 6) -> str:
    """At most `most` names and a count of the rest: a trim note must not outgrow its budget."""
    shown = sep.join(names[:most])
    return shown + (f"{sep}and {len(names) - most} more" if len(names) > most else "")


def _recalled(desk: DeskFolder, query: str, active: Mapping[str, IndexEntry],
              limit: int, project: tuple[str, Mapping[str, IndexEntry]] | None = None
              ) -> tuple[Section, list[dict[str, Any]]] | None:
    """The trigger-gated memory block, or None when no trigger is hit (nothing injected).

    `project` (its name and active entries) adds that project's memories to the desk-wide ones.
    """
    normalized = normalize(query)
    scoped = [(memory_path(n), n, e) for n, e in sorted(active.items())]
    if project is not None:
        scoped += [(project_memory_path(project[0], n), n, e) for n, e in sorted(project[1].items())]
    hits = []
    for path, name, entry in scoped:
        hit = [t for t in entry.triggers if trigger_hits(t, normalized)]
        if hit:
            hits.append((path, name, entry, hit))
    if not hits:
        return None
    # Each hit's last commit from the HEAD mirror: no git process per hit (docs/recall.md).
    with head_mirror(desk) as mirror:
        committed = mirror.committed(name for path, name, _, _ in hits if path == memory_path(name))
    hits.sort(key=lambda h: (-(h[2].importance or 0), h[1], h[0]))  # importance, then name
    head = f"<{BLOCK}>\n{NOTICE}\n"
    tail = f"</{BLOCK}>\n"
    chosen: list[dict[str, Any]] = []
    left: list[str] = []
    used = estimate_tokens(head + tail)
    for path, name, entry, hit in hits:
        at_head = committed.get(name) if path == memory_path(name) else None
        m = {"name": name, "path": path, "commit": at_head.commit if at_head else None,
             "type": entry.type, "importance": entry.importance, "source": entry.source,
             "source_event": entry.source_event, "updated": entry.updated_field, "triggers_hit": hit}
        # Elements are whole lines, so their token estimates add up, and the index entry knows
        # each one but for a newline: a memory that cannot fit is never read (40: room for the
        # note on what was left out).
        least = estimate_tokens(_memory_tag(m) + "\n") + entry.injected_tokens + estimate_tokens(_CLOSE)
        if used + least + 40 > limit:
            left.append(name)
            continue
        from desk.memory.file import parse_memory  # PyYAML only when a body is injected

        memory = parse_memory(desk.read(path), path, name)
        meta = memory.meta
        m.update({"type": meta.type, "importance": meta.importance, "source": meta.source,
                  "source_event": meta.source_event,
                  "updated": format_time(meta.updated) if meta.updated else None, "body": memory.body})
        trial = estimate_tokens(head + "".join(_memory_xml(x) for x in [*chosen, m]) + tail)
        if trial + 40 <= limit:
            chosen.append(m)
            used = trial
        else:
            left.append(name)
    text = head + "".join(_memory_xml(m) for m in chosen)
    if left:
        text += _note(f"recalled memories over the budget of {limit} tokens left out: "
                      + _some(left, ", ") + "; read them with `desk show NAME`") + "\n"
    text += tail
    label = f"Recalled memories (query: {' '.join(query.split())})"
    section = Section("recalled", label, None, text, limit, left)
    return section, chosen


_CLOSE = "</memory>\n"


def _memory_tag(m: Mapping[str, Any]) -> str:
    shown = {**m, "commit": (m["commit"] or "")[:12]}  # the full sha is in --format json
    attrs = " ".join(f"{k}={xml_attr(shown[k])}" for k in ("name", "path", "commit", "type", "source",
                                                        "source_event", "updated") if shown.get(k))
    attrs += f" triggers_hit={xml_attr(', '.join(m['triggers_hit']))}"
    return f"<memory {attrs}>"


def _memory_xml(m: Mapping[str, Any]) -> str:
    return f"{_memory_tag(m)}\n{injected_body(m['body'])}\n{_CLOSE}"


def render_markdown(result: ContextResult) -> str:
    """The context as Markdown: one `## desk: <file>` heading per section, in read order.

    The `desk:` prefix keeps the section headings apart from the files' own `##` headings.
    """
    out = ["# Desk context", "",
           f"<!-- generated by `desk context`; read order: project {AGENTS_FILE}, {AGENTS_FILE}, {SOUL_FILE}, "
           f"{NOW_FILE}, {MISTAKES_FILE}, {USER_FILE}, user preferences, {INDEX_FILE}, recalled memories -->", ""]
    for section in result.sections:
        heading = section.label if not section.path or section.path == section.label.split(" ")[0] \
            else f"{section.label}: {section.path}"
        out += [f"## desk: {heading}", "", section.text.rstrip("\n") or _note(
            f"{section.label} left out: the total budget is spent"), ""]
    return "\n".join(out).rstrip("\n") + "\n"
