"""One context read: a `ContextRequest` in, its mode's sections in read order out, each trimmed to
the smaller of its budget and what is left of the total; then the recalled memories; then every
desk file shown named with its blob and commit (`stamp_sources`)."""

from __future__ import annotations

from typing import Any, Literal

from desk.errors import Finding, UsageError
from desk.layout import INDEX_FILE, MEMORY_DIR, PREFS_INDEX_FILE, PROJECTS_DIR, USER_FILE, DeskFolder, project_index_path, scope_id
from desk.formats.memory_index import IndexEntry
from desk.memory.past import memory_blobs
from desk.gate.entries import invalid_paths
from desk.recall.context.cache import MemoryView, memory_view
from desk.recall.context.files import committed_files, past_blob, read_file, stamp_sources
from desk.recall.context.lists import FactsReader, facts_section, index_text, journal_sections
from desk.recall.context.memories import _recalled
from desk.recall.context.parsed import ParsedCache
from desk.recall.context.request import (FILE_SECTIONS, MODES, READ_ORDER, ContextRequest, budgets_for,
                                         configured_options)
from desk.recall.context.result import ContextResult
from desk.recall.context.scopes import profile_section, user_prefs_section
from desk.recall.context.sections import Section, _trim_entries, _trim_lines
from desk.recall.git_state import context_git_state
from desk.storage.git import FolderState
from desk.text.escape import markdown_block, one_line
from desk.text.times import format_time, utc_now

_LABELS = {key: (label, rel) for key, label, rel in FILE_SECTIONS}


def build_context(desk: DeskFolder, request: ContextRequest, *, facts: FactsReader | None = None,
                  git_state: FolderState | None | Literal["ask"] = "ask") -> ContextResult:
    """The sections to inject, trimmed to their budgets, in the read order of `request.mode`.

    `facts(count, active_memories)` reads the recent facts (passed in by the API: recall sits
    beside digest); without it there is no recent facts section. `git_state`: what git was asked
    for this read (`context_git_state`), owned by this call; by default asked here."""
    started = git_state if not isinstance(git_state, str) else None
    try:
        reading = _Reading(desk, request, facts)
        if git_state == "ask":
            started = context_git_state(desk, request.mode, request.query, request.user, request.project)
    except BaseException:
        if started is not None:
            started.close()  # asked for a read that failed before it looked (a usage error)
        raise
    return reading.run(started)


class _Reading:
    """One read in progress: the request checked and resolved, then the files read so far."""

    def __init__(self, desk: DeskFolder, request: ContextRequest, facts: FactsReader | None) -> None:
        if request.mode not in MODES:
            raise UsageError(f"unknown context mode {request.mode!r}; one of {', '.join(MODES)}")
        self.options = configured_options(desk)
        if request.journal_days is not None and not 1 <= request.journal_days <= 31:
            raise UsageError(f"--journal-days must be 1 to 31, not {request.journal_days}")
        self.desk, self.request, self.facts = desk, request, facts
        self.as_of = request.as_of or utc_now()
        self.scope = scope_id(request.user)
        self.project_active: dict[str, IndexEntry] = {}
        self.project_expired = 0
        self.project_refused: list[Finding] = []
        if request.project is not None:
            self._load_project(request.project)
        self.budgets = budgets_for(desk, request.budget, request.section_budgets)
        if request.project_agents is not None and not request.project_agents.exists():  # a typo must not drop its rules
            raise UsageError(f"--project-agents {request.project_agents}: no such file",
                             hint="give the path of the project's AGENTS.md, or leave the option out")
        self.read: dict[str, bytes | None] = {}  # desk files read: their blobs are checked against HEAD
        self.memory_state: FolderState | None = None
        self._view: MemoryView | None = None
        self.parsed = ParsedCache(desk)  # parses kept by the bytes: opened on first use

    def _load_project(self, project: str) -> None:
        from desk.memory.reads import require_project

        require_project(project)
        past = self.request.past
        if past is None:
            from desk.scopes.projects import project_entries

            found = project_entries(self.desk, project, self.project_refused)
        else:  # as committed then, and begun by then (as the desk-wide memories: docs/time.md)
            found = {n: e for n, e in _committed_entries(self.desk, project, past.commit, self.project_refused).items()
                     if e.has_begun(self.as_of)}
        self.project_active = {n: e for n, e in found.items() if not e.is_expired(self.as_of)}
        self.project_expired = len(found) - len(self.project_active)

    def run(self, memory_state: FolderState | None) -> ContextResult:
        """Read every section; close the caches and git's processes whatever happens."""
        self.memory_state = memory_state  # git answers while the other sections are read
        try:
            sections, recalled = self._sections()
            head = stamp_sources(self.desk, sections, self.read, memory_state.ids if memory_state is not None else None)
        finally:
            self.parsed.close()
            if self._view is not None:
                self._view.close()  # its entry cache
            elif memory_state is not None:
                memory_state.close()  # not looked at (a read without memories, an error): its processes end
        request = self.request
        return ContextResult(sections, request.query, recalled, self.budgets["total"], request.mode,
                             format_time(self.as_of), head)

    def memory(self) -> MemoryView:
        """The desk-wide memories (desk.recall.context.cache), built or loaded on first use."""
        if self._view is None:
            past = self.request.past
            files = None if past is None else {p: b for p, b in memory_blobs(self.desk, past).items()
                                               if p.startswith(MEMORY_DIR + "/")}
            self._view = memory_view(self.desk, self.as_of, self.memory_state, files)
        return self._view

    def _sections(self) -> tuple[list[Section], list[dict[str, Any]]]:
        """The mode's sections in read order, then the recalled memories (a query that hits a trigger)."""
        sections: list[Section] = []
        remaining = self.budgets["total"]
        for key in READ_ORDER[self.request.mode]:
            for section in self._section(key, min(self.budgets[key], remaining)):
                remaining -= section.tokens
                sections.append(section)
        query, project = self.request.query, self.request.project
        if query is None or not query.strip():
            return sections, []
        current = {n: e for n, e in self.project_active.items() if not e.has_ended(self.as_of)}  # never injected
        block = _recalled(self.desk, query, self.memory(), min(self.budgets["recalled"], remaining),
                          (project, current) if project is not None else None, self.parsed, self.request.past)
        if block is None:
            return sections, []
        return [*sections, block[0]], block[1]

    def _section(self, key: str, limit: int) -> list[Section]:
        if key == "recent_facts":
            if self.facts is None:
                return []
            count = self.options["recent_facts"]
            return [facts_section(self.facts(count, self.memory().active()), limit, count)]
        if key == "journal":
            days = self.request.journal_days or self.options["journal_days"]
            return journal_sections(self.desk, self.as_of, days, limit, self.read)
        found = self._file_text(key)
        if found is None:
            return []
        text, shown, sources = found
        label, rel = _LABELS[key]
        if key == "mistakes":
            section = _trim_entries(key, label, shown, text, limit, self.request.query or "")
        else:
            section = _trim_lines(key, label, shown, text, limit)
        section.sources = sources
        return [section]

    def _file_text(self, key: str) -> tuple[str, str, list[dict[str, Any]]] | None:
        """A file section's escaped text, the path it shows and its sources, or None when the read
        has no such section (no project given). As of a time, each file is as committed then."""
        desk, rel, past = self.desk, _LABELS[key][1], self.request.past
        if rel is None:
            if self.request.project_agents is None:
                return None
            shown = one_line(str(self.request.project_agents))
            text = markdown_block(read_file(self.request.project_agents, shown, {}, None))
            return text, shown, [{"path": shown, "commit": None}]
        then = {} if past is None else {"commit": past.commit}  # sources as committed then (docs/time.md)
        if rel == USER_FILE:
            content, shown, notes = profile_section(desk, self.scope, self.read, self.parsed, past)
            return markdown_block(content) + notes, shown, [{"path": shown, **then}]
        if rel == PREFS_INDEX_FILE:
            content, shown, notes, files = user_prefs_section(desk, self.scope, self.as_of, self.read, self.parsed,
                                                              past)
            return markdown_block(content) + notes, shown, [{"path": f, **then} for f in files]
        shown = rel
        if rel == PROJECTS_DIR:
            if self.request.project is None:
                return None
            shown = project_index_path(self.request.project)
        sources = [{"path": shown, **then}]
        if rel in (INDEX_FILE, PROJECTS_DIR):  # desk renders the text; the file is read for its blob
            if past is None:
                read_file(desk.path(shown), shown, self.read, shown, desk.root)
            if rel == INDEX_FILE:
                return self.memory().index_text, rel, sources
            text = index_text(self.project_active, self.project_expired, invalid_paths(self.project_refused),
                              self.as_of)
            return markdown_block(text), shown, sources
        if past is None:
            return markdown_block(read_file(desk.path(rel), rel, self.read, rel, desk.root)), rel, sources
        data = past_blob(desk, past, rel)
        text = data.decode("utf-8", "replace").rstrip() + "\n" if data is not None else f"_({rel} did not exist)_\n"
        return markdown_block(text), rel, sources

def _committed_entries(desk: DeskFolder, project: str, commit: str | None,
                       refused: list[Finding]) -> dict[str, IndexEntry]:
    """`project`'s memories as `commit` holds them, by name; files that do not parse to `refused`."""
    from desk.formats.memory_file import parse_memory

    folder = f"{PROJECTS_DIR}/{project}/{MEMORY_DIR}"
    return {m.name: IndexEntry.of(m) for m in committed_files(desk, commit, folder, parse_memory, refused)}
