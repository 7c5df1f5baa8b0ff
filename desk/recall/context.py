"""`desk context`: the read contract of docs/context.md, rendered deterministically within budgets.

Two reads, one `mode` parameter (the CLI's `--mode wake|spot`; docs/context.md says why one
option and not a flag per read: the MCP `context` tool and `Desk.context` take the same value):

- `wake` (seed 002 "Read A/B", the default): the project's AGENTS.md (when given), the desk's
  AGENTS.md, SOUL.md, NOW.md, MISTAKES.md, USER.md, the user's profile line and preferences,
  MEMORY.md (active memories only), the `--project` scope's own MEMORY.md (when given), then at
  most `context.recent_facts` recent facts (seed 000: facts not yet memories, never a keyed fact,
  `desk.digest.recent`). `user` selects whose USER.md and preferences are read (the owner's by
  default; nothing of any other user's scope is read), `project` which project's memories are
  added to the desk-wide ones (never another project's): docs/scopes.md, desk.recall.context_scopes.
- `spot` (seed 002 "Read C", the key-turn spot check): NOW.md, MISTAKES.md and the newest
  `journal_days` journal days on or before `as_of`; nothing of SOUL.md, USER.md or MEMORY.md.

In both, a query adds the bodies of the memories whose triggers it hits (docs/design.md §8.4: no
hit, nothing injected), each with its provenance, inside one block that carries the notice that
memory is background that may be out of date.

Budgets (estimated tokens, `desk.text.tokens`) come per section from `.system/desk.json` `budgets` and
can be overridden per call; the total budget is spent in read order. Whatever is trimmed is named in
the output, never dropped silently; MISTAKES.md keeps its highest-value entries (importance, then
query terms, then newest). Every stored text is escaped for what it sits in (`desk.text.escape`):
Markdown sections cannot open a heading of desk's levels, a desk note or a desk element, memory
text in the XML block cannot close it, and the headings carry a boundary token derived from the
rendered content. The output is a pure function of the files, the archive's facts, the query, the
budgets and `as_of`: same inputs, same bytes.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from desk.errors import DeskError, Finding, UsageError
from desk.layout import (AGENTS_FILE, CONFIG_PATH, INDEX_FILE, JOURNAL_DIR, MISTAKES_FILE, NOW_FILE,
                         PREFS_INDEX_FILE, PROJECTS_DIR, SOUL_FILE, USER_FILE, DeskFolder, profile_path,
                         project_index_path, scope_id)
from desk.formats.memory_index import HEADER, IndexEntry
from desk.gate.entries import invalid_paths
from desk.recall.context_cache import FileBlobs, MemoryView, memory_view
from desk.recall.context_parsed import ParsedCache
# Re-exported: the public names of `desk context` stay importable from here.
from desk.recall.context_memories import BLOCK, NOTICE, _memory_xml, _recalled, trigger_hits  # noqa: F401
from desk.recall.context_scopes import profile_section, user_prefs_section
from desk.recall.context_sections import Section, _note, _trim_entries, _trim_head, _trim_lines  # noqa: F401
from desk.recall.git_state import context_git_state
from desk.storage.git import FolderState, blob_sha
from desk.text.escape import boundary_token, markdown_block, one_line
from desk.text.times import format_time, utc_now
from desk.vocabulary import CONTEXT_MODES

if TYPE_CHECKING:
    from desk.digest.recent import RecentFacts

MODES = CONTEXT_MODES
FILE_SECTIONS = (  # budget key, label, desk path (None: the project's file)
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
SECTIONS = FILE_SECTIONS  # the wake-up read's file sections (kept for callers of the old name)
READ_ORDER = {
    "wake": ["project_agents", "agents", "soul", "now", "mistakes", "user", "user_prefs", "memory_index",
             "project_index", "recent_facts"],
    "spot": ["now", "mistakes", "journal"],
}
BUDGET_KEYS = ("total", *(key for key, _, _ in FILE_SECTIONS), "recent_facts", "journal", "recalled")
OPTION_DEFAULTS = {"recent_facts": 6, "journal_days": 1}  # desk.config.ContextOptions' defaults
# Budget keys added after desks were first made: a desk.json without them reads their defaults
# (desk.config.ContextBudgets'; a test keeps the two equal) without loading pydantic.
LATER_BUDGETS = {"user_prefs": 400, "project_index": 800, "recent_facts": 400, "journal": 1500}
_JOURNAL_DAY = re.compile(r"(\d{4}-\d{2}-\d{2})\.md")
FactsReader = Callable[[int, Mapping[str, IndexEntry]], "RecentFacts"]


class ContextResult:
    """The rendered sections of one context read, with what was recalled and the budget.

    A plain class, not a dataclass: ~0.3 ms less at the start of every `desk context`."""

    __slots__ = ("sections", "query", "recalled", "budget", "mode", "as_of", "commit")

    def __init__(self, sections: list[Section], query: str | None, recalled: list[dict[str, Any]], budget: int,
                 mode: str = "wake", as_of: str | None = None, commit: str | None = None) -> None:
        self.sections = sections
        self.query = query
        self.recalled = recalled
        self.budget = budget
        self.mode = mode
        self.as_of = as_of
        self.commit = commit  # HEAD when the files were read

    def __repr__(self) -> str:
        return ("ContextResult(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__) + ")")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass was

    @property
    def boundary(self) -> str:
        """The token on desk's headings: a hash of everything rendered (`desk.text.escape`)."""
        return boundary_token([self.mode, *(p for s in self.sections for p in (s.key, s.label, s.text))])

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "query": self.query, "as_of": self.as_of, "budget": self.budget,
                "commit": self.commit, "boundary": self.boundary,
                "total_tokens": sum(s.tokens for s in self.sections),
                "sections": [s.to_json() for s in self.sections], "recalled": self.recalled,
                "left_out": [f"{s.label}: {item}" for s in self.sections for item in s.left_out]}


def _fast_config(desk: DeskFolder) -> dict[str, Any] | None:
    try:
        found = json.loads(desk.read(CONFIG_PATH))
    except (OSError, ValueError, DeskError):
        return None
    return found if isinstance(found, dict) else None


def _configured_budgets(desk: DeskFolder) -> dict[str, int]:
    """The budgets of `.system/desk.json`. When they are plain, as `desk init` writes them, they
    are read as JSON: loading pydantic to validate them would cost a cold `desk context` ~70 ms.
    Anything else goes through the validating loader, which says what is wrong."""
    found = (_fast_config(desk) or {}).get("budgets")
    if isinstance(found, dict) and all(type(v) is int and v >= 0 for v in found.values()):
        merged = {**LATER_BUDGETS, **found}
        if sorted(merged) == sorted(BUDGET_KEYS):
            return merged
    return desk.config.budgets.model_dump()


def configured_options(desk: DeskFolder) -> dict[str, int]:
    """`.system/desk.json` `context`: how many recent facts, how many journal days."""
    found = (_fast_config(desk) or {}).get("context", {})
    if isinstance(found, dict) and set(found) <= set(OPTION_DEFAULTS) and all(
            type(v) is int and 0 <= v <= (50 if k == "recent_facts" else 31) and (v >= 1 or k == "recent_facts")
            for k, v in found.items()):
        return {**OPTION_DEFAULTS, **found}
    return desk.config.context.model_dump()


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


def build_context(desk: DeskFolder, *, mode: str = "wake", query: str | None = None,
                  budget: int | None = None, section_budgets: Mapping[str, int] | None = None,
                  project_agents: Path | None = None, as_of: dt.datetime | None = None,
                  journal_days: int | None = None, facts: FactsReader | None = None,
                  user: str | None = None, project: str | None = None,
                  git_state: FolderState | None | Literal["ask"] = "ask") -> ContextResult:
    """The sections to inject, trimmed to their budgets, in the read order of `mode`.

    `facts(count, active_memories)` reads the recent facts (`desk.digest.recent.recent_facts`,
    passed in by the API: recall sits beside digest, not above it); without it the wake-up read
    has no recent facts section. `user` (a user id; None: the desk owner) selects whose USER.md
    and preferences are loaded; nothing of any other user's scope is read. `project` adds that
    project's active memories (its index, and with a query its trigger-hit bodies); no other
    project's are read. `git_state`: what git was asked for this read
    (`desk.recall.git_state.context_git_state`, started by the caller before this module loaded;
    this call owns it and ends its processes); by default it is asked here.
    """
    started = git_state if not isinstance(git_state, str) else None
    try:
        return _build_context(desk, mode, query, budget, section_budgets or {}, project_agents, as_of,
                              journal_days, facts, user, project, started, git_state == "ask")
    except BaseException:
        if started is not None:
            started.close()  # asked for a read that failed before it looked (a usage error)
        raise


def _build_context(desk: DeskFolder, mode: str, query: str | None, budget: int | None,
                   section_budgets: Mapping[str, int], project_agents: Path | None, as_of: dt.datetime | None,
                   journal_days: int | None, facts: FactsReader | None, user: str | None,
                   project: str | None, memory_state: FolderState | None, ask: bool) -> ContextResult:
    if mode not in MODES:
        raise UsageError(f"unknown context mode {mode!r}; one of {', '.join(MODES)}")
    options = configured_options(desk)
    if journal_days is not None and not 1 <= journal_days <= 31:
        raise UsageError(f"--journal-days must be 1 to 31, not {journal_days}")
    as_of = as_of or utc_now()
    scope = scope_id(user)
    project_active: dict[str, IndexEntry] = {}
    project_expired = 0
    project_refused: list[Finding] = []
    if project is not None:
        from desk.scopes.projects import project_entries, require_project

        require_project(project)
        found_entries = project_entries(desk, project, project_refused)
        project_active = {n: e for n, e in found_entries.items() if not e.is_expired(as_of)}
        project_expired = len(found_entries) - len(project_active)
    budgets = budgets_for(desk, budget, section_budgets)
    remaining = budgets["total"]
    # A person's broken hand edit must not keep the assistant from waking up: the file is named
    # (`desk validate` says what is wrong) and everything else is still loaded.
    # The desk-wide memories: the index text and the trigger table kept between runs while
    # memory/ is unchanged (desk.recall.context_cache); entries are loaded only where needed.
    if project_agents is not None and not project_agents.exists():  # a typo must not drop its rules
        raise UsageError(f"--project-agents {project_agents}: no such file",
                         hint="give the path of the project's AGENTS.md, or leave the option out")
    # git is asked for memory/'s state now (or was, by the caller), and answers while the other
    # sections are read. The same look-up names HEAD's blobs of the files the read shows
    # (`_stamp_sources`).
    if ask:
        memory_state = context_git_state(desk, mode, query, user, project)
    kept: list[MemoryView] = []
    parsed = ParsedCache(desk)  # USER.md's and injected memories' parses, kept by their bytes
    blobs = FileBlobs(desk)

    def memory() -> MemoryView:
        if not kept:
            kept.append(memory_view(desk, as_of, lambda act, expired, broken: markdown_block(
                _index_text(act, expired, broken)), memory_state))
        return kept[0]

    try:
        sections: list[Section] = []
        read: dict[str, bytes | None] = {}  # desk files read: their blobs are checked against HEAD
        hashed: dict[str, str] = {}  # desk files not read: their stat vouched for their blob (`FileBlobs`)
        labels = {key: (label, rel) for key, label, rel in FILE_SECTIONS}
        for key in READ_ORDER[mode]:
            limit = min(budgets[key], remaining)
            if key == "recent_facts":
                if facts is None:
                    continue
                found = [_facts_section(facts(options["recent_facts"], memory().active()), limit,
                                        options["recent_facts"])]
            elif key == "journal":
                found = _journal_sections(desk, as_of, journal_days or options["journal_days"], limit, read)
            else:
                label, rel = labels[key]
                sources: list[dict[str, Any]] | None = None
                if rel is None:
                    if project_agents is None:
                        continue
                    shown = one_line(str(project_agents))
                    text = markdown_block(_read(project_agents, shown, {}, None))
                    sources = [{"path": shown, "commit": None}]
                elif rel == INDEX_FILE:  # its blob, for the sources (the text is the memory view's)
                    if (blob := blobs.known(rel)) is not None:
                        hashed[rel] = blob
                    else:
                        _read(desk.path(rel), rel, read, rel, desk.root)
                    text, shown = memory().index_head, rel  # its start, or all of it (`MemoryView`)
                elif rel == PROJECTS_DIR:
                    if project is None:
                        continue
                    shown = project_index_path(project)
                    _read(desk.path(shown), shown, read, shown, desk.root)  # its blob, for the sources
                    text = markdown_block(_index_text(project_active, project_expired, invalid_paths(project_refused)))
                elif rel == USER_FILE:
                    content, shown, notes = profile_section(desk, scope, read, parsed)
                    text = markdown_block(content) + notes
                elif rel == PREFS_INDEX_FILE:
                    content, shown, notes, files = user_prefs_section(desk, scope, as_of, read, parsed)
                    text = markdown_block(content) + notes
                    sources = [{"path": f} for f in files]
                else:
                    text, shown = markdown_block(_read(desk.path(rel), rel, read, rel, desk.root)), rel
                if key == "mistakes":
                    section = _trim_entries(key, label, shown, text, limit, query or "")
                elif rel == INDEX_FILE and not memory().index_whole:  # the budget shows a few dozen lines
                    section = _trim_head(key, label, shown, text, memory().index_lines, limit,
                                         lambda: memory().index_text)
                else:
                    section = _trim_lines(key, label, shown, text, limit)
                section.sources = sources if sources is not None else [{"path": shown}]
                found = [section]
            for section in found:
                remaining -= section.tokens
                sections.append(section)
        recalled: list[dict[str, Any]] = []
        if query is not None and query.strip():
            block = _recalled(desk, query, memory(), min(budgets["recalled"], remaining),
                              (project, project_active) if project is not None else None, parsed)
            if block is not None:
                sections.append(block[0])
                recalled = block[1]
        head = _stamp_sources(desk, sections, read, memory_state.ids if memory_state is not None else None,
                              hashed, blobs)
    finally:
        parsed.close()
        blobs.close()
        for view in kept:
            view.close()  # its entry cache
        if memory_state is not None and not kept:
            memory_state.close()  # not looked at (a read without memories, an error): its processes end
    return ContextResult(sections, query, recalled, budgets["total"], mode, format_time(as_of), head)


def _read(path: Path, shown: str, read: dict[str, bytes | None], rel: str | None,
          root: Path | None = None) -> str:
    """A section's file. Inside the desk (`root`) a symlink is never read through, nor a folder
    on the way that is one: the section says it was refused instead (the link could point
    anywhere, /proc/self/environ or a key file), and everything else still loads. The project's
    AGENTS.md is the caller's own path, outside the desk; it is still never read through a link."""
    from desk.storage.reading import SymlinkError, read_regular

    try:
        data = read_regular(path, root)
    except FileNotFoundError:
        if rel is not None:
            read[rel] = None
        return f"_({shown} does not exist)_\n"
    except SymlinkError:
        return (f"_({shown} was not read: it is a symbolic link, and desk never reads through one; "
                "`desk validate --all` names it and says how to put the file back)_\n")
    except OSError as exc:
        raise UsageError(f"cannot read {shown}: {exc}",
                         hint="check the file's permissions, or leave it out") from None
    if rel is not None:
        read[rel] = data
    elif b"\0" in data or not _utf8(data):  # the caller's own file (--project-agents): text only
        raise UsageError(f"--project-agents {shown}: not a UTF-8 text file",
                         hint="give the project's AGENTS.md (Markdown, UTF-8), or leave the option out")
    return data.decode("utf-8", "replace").rstrip() + "\n"


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _stamp_sources(desk: DeskFolder, sections: list[Section], read: Mapping[str, bytes | None],
                   known: Mapping[str, str | None] | None = None, hashed: Mapping[str, str] | None = None,
                   blobs: FileBlobs | None = None) -> str | None:
    """Give each desk file source its blob and, when HEAD holds exactly that, HEAD's commit
    (`known`: HEAD's ids looked up with memory/'s state, when they name every file read; else
    one `git cat-file --batch-check` for all of them). `hashed`: blobs of files not read, which
    `blobs` vouched for by their stat; `blobs` keeps the blob of the files it was asked about and
    that were read."""
    hashed = hashed or {}
    names = ["HEAD", *(f"HEAD:{rel}" for rel in [*read, *hashed])]
    if known is not None and known.get("HEAD") is not None and all(n in known for n in names):
        ids: Mapping[str, str | None] = known
    else:
        try:
            ids = desk.git.object_ids(names)
        except DeskError:
            ids = {}
    head = ids.get("HEAD")
    for section in sections:
        for source in section.sources:
            rel = source["path"]
            if (rel not in read and rel not in hashed) or "commit" in source:
                continue
            data = read.get(rel)
            blob = hashed.get(rel) or (blob_sha(data) if data is not None else None)
            if data is not None and blob is not None and blobs is not None:
                blobs.keep(rel, data, blob)
            committed = blob is not None and ids.get(f"HEAD:{rel}") == blob
            source.update(blob=blob, commit=head if committed else None, committed=committed)
    return head


def _index_text(active: Mapping[str, IndexEntry], expired: int, broken: list[str]) -> str:
    lines = [HEADER.rstrip("\n"), ""]
    lines += [_index_line(e) for e in sorted(active.values(), key=lambda e: e.name)] or ["_No active memories._"]
    if expired:
        lines.append(f"_({expired} expired {'memory' if expired == 1 else 'memories'} not shown.)_")
    if broken:
        lines.append(f"_({', '.join(broken)} left out: the file does not parse or belongs to another "
                     "scope; run `desk validate`.)_")
    return "\n".join(lines) + "\n"


def _index_line(entry: IndexEntry) -> str:
    """MEMORY.md's line for `entry`, every stored field on one line (escaped with the block)."""
    line = f"- [{one_line(entry.name)}](memory/{one_line(entry.name)}.md) — {one_line(entry.description)}"
    return line + (f" (expires {one_line(entry.expires)})" if entry.expires else "")


def _facts_section(found: RecentFacts, limit: int, count: int) -> Section:
    """Seed 000's recent facts: newest first, each with its time and event id."""
    label = "Recent facts"
    lines = [f"Newest first, at most {count}: raw facts not yet distilled into memories (a keyed fact "
             "shows only as its domain's active memory)."]
    lines += [f"- {format_time(r.fact.at)} `{one_line(r.fact.id)}` {r.fact.kind}, importance "
              f"{r.fact.importance}: {one_line(r.fact.content)}" for r in found.facts] or ["_No recent facts._"]
    if found.excluded:
        lines.append("_(not shown: " + "; ".join(f"{n} {why}" for why, n in sorted(found.excluded.items())) + ")_")
    lines += [f"_(could not read {one_line(p)})_" for p in found.unreadable]
    section = _trim_lines("recent_facts", label, label, markdown_block("\n".join(lines) + "\n"), limit)
    section.path = None
    by_file: dict[str, list[str]] = {}
    for r in found.facts:
        by_file.setdefault(r.path, []).append(r.fact.id)
    section.sources = [{"path": p, "events": ids, "commit": None} for p, ids in by_file.items()]
    return section


def _journal_sections(desk: DeskFolder, as_of: dt.datetime, days: int, limit: int,
                      read: dict[str, bytes | None]) -> list[Section]:
    """The newest `days` journal days dated on or before `as_of`'s day, newest first, sharing `limit`."""
    folder = desk.path(JOURNAL_DIR)
    last = format_time(as_of, "day")
    names = sorted((m.group(1) for p in (folder.iterdir() if folder.is_dir() else ())
                    if (m := _JOURNAL_DAY.fullmatch(p.name)) and m.group(1) <= last), reverse=True)[:days]
    if not names:
        text = f"_(no {JOURNAL_DIR}/ day on or before {last})_\n"
        return [Section("journal", f"{JOURNAL_DIR}/", None, text, limit)]
    out = []
    for day in names:
        rel = f"{JOURNAL_DIR}/{day}.md"
        text = markdown_block(_read(desk.path(rel), rel, read, rel, desk.root))
        section = _trim_lines("journal", rel, rel, text, limit)
        section.sources = [{"path": rel}]
        limit = max(0, limit - section.tokens)
        out.append(section)
    return out


def render_markdown(result: ContextResult) -> str:
    """The context as Markdown: one `## desk: <label> [<boundary>]` heading per section, in read order.

    Only these headings are desk's: every stored line that would read as a `#` or `##` heading is
    demoted (`desk.text.escape.markdown_block`), and the boundary token is a hash of the rendered
    sections, so stored text can neither write one of these lines nor predict its token.
    """
    token = result.boundary
    order = ", ".join(_ORDER_NAMES[key] for key in READ_ORDER[result.mode])
    out = ["# Desk context", "",
           f"<!-- generated by `desk context --mode {result.mode}`; read order: {order}, recalled memories; "
           f"boundary {token}: only the `## desk: ... [{token}]` headings are desk's, every other "
           "heading belongs to the file it is in -->", ""]
    for section in result.sections:
        heading = section.label if not section.path or section.path == section.label.split(" ")[0] \
            else f"{section.label}: {section.path}"
        body = section.text.rstrip("\n")
        if not body:
            body = _note(f"{section.label} left out: the total budget is spent") if section.left_out or \
                section.budget == 0 else "_(empty)_"
        out += [f"## desk: {one_line(heading)} [{token}]", "", body, ""]
    return "\n".join(out).rstrip("\n") + "\n"


_ORDER_NAMES = {"project_agents": f"project {AGENTS_FILE}", "agents": AGENTS_FILE, "soul": SOUL_FILE,
                "now": NOW_FILE, "mistakes": MISTAKES_FILE, "user": USER_FILE,
                "user_prefs": "the user's profile and preferences", "memory_index": INDEX_FILE,
                "project_index": f"the project's {INDEX_FILE}",
                "recent_facts": "recent facts", "journal": f"the newest {JOURNAL_DIR}/ days"}
