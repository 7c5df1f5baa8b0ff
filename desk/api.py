"""The public Python API: `desk.open(path)` and `desk.init(path)` return a `Desk`.

A `Desk` is the desk on disk (`desk.layout.DeskFolder`) with one method per CLI verb: `desk X`
is `Desk.x`, `desk X Y` is `Desk.x_y`. Each method returns a result from `desk.results` whose
`.to_json()` is the CLI's `--json` and whose `.text()` is its human output; failures raise the
`desk.errors.DeskError` kinds, each with the CLI's exit code. The CLI and the agent-facing server
are thin renderings of these calls. Operation modules are imported inside the methods, so a
command pays only for the code it runs.

The public names (`Desk`, `open`, `init`, `clone`, `stopped_notice`, `Time`, `Progress`) are
exported by `desk` itself: desk/__init__.py's `__all__` is the one public list. `missing_setup`
is the CLI's own check, not part of it.
"""

from __future__ import annotations

import builtins
import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desk.errors import RejectedError, UsageError
from desk.layout import INDEX_FILE, MEMORY_DIR, DeskFolder, find_desk
from desk.vocabulary import REASON_MAX

if TYPE_CHECKING:  # at run time each method imports its result class: a command loads only its own
    from desk.results import (Appended, ArchiveCheck, ArchivedEvent, AuditTrail, Checkpointed, Cloned,
                              ConflictCase, ConflictCases, Context, ConversationsRendered, Diagnosis,
                              Digested, EventList, Exported, HooksChange, Imported, ImportPlan, Initialized,
                              MemoryChange, MemoryDiff, MemoryList, Migrated, MistakeAdded, MistakeList,
                              NowChange, NowView, Outcome as Outcome, PrefChanged, PrefList, PrefShown, Recalled,
                              Resolved, ShownMemory, Stats, Synced, UserProfile, Validation, Wrapped)

Progress = Callable[[int, int], None]  # progress(done, total), e.g. for a progress bar
Time = str | dt.datetime  # ISO 8601 with Z or an offset, or an aware datetime


def _words(value: Any, what: str) -> Any:
    """`value` unless it is one string where a list of strings belongs: Python would iterate it
    character by character (`triggers="report"` stored the triggers r, e, p, o, r, t)."""
    if isinstance(value, (str, bytes)):
        raise UsageError(f"{what} must be a list of strings, not one string {value!r}",
                         hint=f"wrap it in a list: {what}=[{value!r}]")
    return value


class Desk(DeskFolder):
    """A desk: a git repository of Markdown files holding an assistant's identity and memory."""

    initialized: Initialized | None = None  # what `desk.init` did; None from `desk.open`
    cloned: Cloned | None = None  # what `desk.clone` did
    _search_cache: Any = None  # recall's SearchCache, kept warm across calls until close()
    _dense: Any = None  # hybrid recall's DenseIndex per embedder (name or object), warm until close()

    def with_trailers(self, trailers: Mapping[str, str]) -> Desk:
        """This desk, for commits that also carry `trailers` (`Key: value`) after each operation's
        own (an operation's own key wins). `desk serve` names the MCP client this way
        (`Desk-Client`). The copy shares this object's caches; closing either closes both.

        UsageError (exit 2) for a key that is not letters, digits and `-`, or an empty value.
        """
        import copy
        import re

        for key, value in trailers.items():
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9-]*", key):
                raise UsageError(f"trailer key {key!r} must be letters, digits and `-`")
            if not " ".join(str(value).split()):
                raise UsageError(f"trailer {key} needs a value")
        clone = copy.copy(self)
        clone.trailers = {**self.trailers, **trailers}
        return clone

    def close(self) -> None:
        """Release what recall keeps open between calls (its search cache). Safe to call twice."""
        if self._search_cache is not None:
            self._search_cache.close()
            self._search_cache = None
        for index in (self._dense or {}).values():
            index.close()
        self._dense = None

    def __enter__(self) -> Desk:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- memories ----------------------------------------------------------------------------

    def _name(self, name: str, project: str | None = None) -> str:
        """A memory name from what a person typed: `x`, `x.md`, `memory/x.md` or a path to it
        (in `project`'s memory folder when given, also `projects/<project>/memory/x.md`)."""
        from desk.layout import PROJECTS_DIR, project_problem
        from desk.formats.memory_file import memory_name_arg

        if project is None or project_problem(project):  # a bad project name is refused later
            return memory_name_arg(name, self.root / MEMORY_DIR)
        name = name.removeprefix("./").removeprefix(f"{PROJECTS_DIR}/{project}/")  # the desk-relative path
        return memory_name_arg(name, self.root / PROJECTS_DIR / project / MEMORY_DIR)

    def remember(self, name: str, body: str, *, type: str | None = None,
                 description: str | None = None, triggers: Sequence[str] | None = None,
                 importance: int | None = None, expires: Time | None = None,
                 source: str | None = None, source_event: str | None = None, actor: str = "user",
                 scope: str = "durable", clear: Iterable[str] = (),
                 now: dt.datetime | None = None, project: str | None = None) -> MemoryChange:
        """Create or update memory `name` through the write gate: one commit, none when unchanged.

        A new memory needs `type` and `description`. On an update, a field left None keeps its
        value (`clear` names fields to empty: triggers, importance, expires). The result warns
        when the memory ends up without triggers. With `project`, the memory is
        `projects/<project>/memory/<name>.md` and the index is the project's own MEMORY.md
        (docs/scopes.md). RejectedError (exit 3) when the gate refuses,
        with nothing changed; its `details` carry the `--json` fields (name, path, reason).
        ConflictError (exit 4) over uncommitted edits.
        """
        from desk.memory.operations import remember
        from desk.results.change import MemoryChange

        name = self._name(name, project)
        path = f"memory/{name}.md"
        try:
            if project is not None:
                from desk.layout import project_memory_path
                from desk.scopes.projects import remember_in_project

                path = project_memory_path(project, name)
                return MemoryChange(remember_in_project(
                    self, project, name, type=type, description=description, body=body,
                    triggers=_words(triggers, "triggers"), importance=importance, expires=expires,
                    source=source, source_event=source_event, actor=actor, scope=scope,
                    clear=tuple(_words(clear, "clear")),
                    now=now))
            return MemoryChange(remember(
                self, name, type=type, description=description, body=body,
                triggers=_words(triggers, "triggers"), importance=importance, expires=expires,
                source=source, source_event=source_event, actor=actor, scope=scope,
                clear=tuple(_words(clear, "clear")), now=now))
        except RejectedError as exc:
            exc.details = {"name": name, "path": path, "commit": None,
                           "reason": getattr(exc, "reason", None) or "invalid"}
            raise

    def remember_file(self, name: str, text: str | bytes, *, actor: str = "user",
                      now: dt.datetime | None = None) -> MemoryChange:
        """Create or update memory `name` from the whole text of its file (frontmatter and body),
        through the same write gate as `remember`; one commit, none when unchanged.

        What a file-editing agent (the memory tool) writes. RejectedError (exit 3), nothing
        changed, when the text does not parse (the hint shows the required header), when it sets
        or changes `source_event`, `evidence` or `key` (provenance is the harness's), or when the
        gate refuses.
        """
        from desk.memory.whole_file import remember_file
        from desk.results.change import MemoryChange

        data = text.encode("utf-8") if isinstance(text, str) else text
        try:
            return MemoryChange(remember_file(self, name, data, actor=actor, now=now))
        except RejectedError as exc:
            exc.details = {"name": name, "path": f"memory/{name}.md", "commit": None,
                           "reason": getattr(exc, "reason", None) or "invalid"}
            raise

    def set(self, name: str, *, description: str | None = None, type: str | None = None,
            triggers: Sequence[str] | None = None, add_triggers: Sequence[str] = (),
            remove_triggers: Sequence[str] = (), importance: int | None = None,
            expires: Time | None = None, clear: Iterable[str] = (), actor: str = "user",
            now: dt.datetime | None = None) -> MemoryChange:
        """Change fields of memory `name` without restating its body: one commit, none when
        nothing differs. `triggers` replaces the list; `clear` empties triggers, importance or
        expires. DeskError (exit 1) when there is no such memory."""
        from desk.memory.revise import set_fields
        from desk.results.change import MemoryChange

        return MemoryChange(set_fields(
            self, self._name(name), description=description, type=type,
            triggers=_words(triggers, "triggers"), add_triggers=_words(add_triggers, "add_triggers"),
            remove_triggers=_words(remove_triggers, "remove_triggers"), importance=importance,
            expires=expires, clear=tuple(_words(clear, "clear")), actor=actor, now=now))

    def rename(self, old: str, new: str, *, actor: str = "user") -> MemoryChange:
        """Rename memory `old` to `new` in one commit (file, `name:` and MEMORY.md); history follows it."""
        from desk.memory.revise import rename
        from desk.results.change import MemoryChange

        return MemoryChange(rename(self, self._name(old), self._name(new), actor=actor))

    def diff(self, name: str, rev: str | None = None) -> MemoryDiff:
        """What changed in memory `name` from `rev` (default: before its last committed change)
        to the file as it is now, as a unified diff. UsageError (exit 2) for an unknown `rev`."""
        from desk.memory.reads import diff
        from desk.results.memory import MemoryDiff

        return MemoryDiff(self._name(name), *diff(self, self._name(name), rev))

    def forget(self, name: str, *, reason: str | None = None, actor: str = "user",
               project: str | None = None) -> MemoryChange:
        """Delete memory `name` (of `project`, when given) and its index line in one commit (git
        history keeps it)."""
        from desk.results.change import MemoryChange

        _require_reason(reason)
        if project is not None:
            from desk.scopes.projects import forget_in_project

            return MemoryChange(forget_in_project(self, project, self._name(name, project),
                                                  reason=reason, actor=actor))
        from desk.memory.operations import forget

        return MemoryChange(forget(self, self._name(name), reason=reason, actor=actor))

    def show(self, name: str, *, project: str | None = None) -> ShownMemory:
        """The memory file `name` (of `project`, when given) as it is on disk; an invalid file
        comes with its findings (`valid` false) rather than an error, so a person can see what to fix."""
        from desk.results.memory import ShownMemory

        if project is not None:
            from desk.scopes.projects import show_in_project

            return ShownMemory(show_in_project(self, project, self._name(name, project)))
        from desk.memory.reads import show

        return ShownMemory(show(self, self._name(name)))

    def memory_names(self, *, project: str | None = None) -> builtins.list[str]:
        """The names of the memory files in memory/ (or `project`'s memory folder), sorted, read
        from the folder without parsing: what shell completion offers ([] for a bad project name)."""
        from desk.layout import MEMORY_DIR, PROJECTS_DIR, project_problem

        if project is not None and project_problem(project):
            return []
        folder = self.root / (MEMORY_DIR if project is None else f"{PROJECTS_DIR}/{project}/{MEMORY_DIR}")
        return sorted(p.name[:-3] for p in folder.glob("*.md") if not p.is_symlink())

    def project_names(self) -> builtins.list[str]:
        """The projects with a folder under projects/ (a valid name each), sorted."""
        from desk.scopes.projects import all_projects

        return all_projects(self)

    def list(self, *, type: str | None = None, project: str | None = None) -> MemoryList:
        """The memories on disk sorted by name (optionally of one type; of `project` when given),
        and unparseable or refused files."""
        from desk.results.memory import MemoryList

        if project is not None:
            from desk.scopes.projects import list_in_project

            return MemoryList(*list_in_project(self, project, type))
        from desk.memory.reads import list_memories

        return MemoryList(*list_memories(self, type))

    def history(self, name: str, *, project: str | None = None) -> AuditTrail:
        """Every commit that touched memory `name` (of `project`, when given), newest first
        (forgotten revisions too, and across renames). DeskError (exit 1) when no commit ever
        touched it."""
        from desk.results.memory import AuditTrail

        if project is not None:
            from desk.scopes.projects import history_in_project

            name = self._name(name, project)
            return AuditTrail(history_in_project(self, project, name), name)
        from desk.memory.reads import history

        name = self._name(name)
        return AuditTrail(history(self, name), name)

    def log(self, limit: int | None = None) -> AuditTrail:
        """The desk's audit trail: commits with their Desk-* trailers, newest first."""
        from desk.memory.reads import log
        from desk.results.memory import AuditTrail

        return AuditTrail(log(self, limit))

    def reindex(self, *, actor: str = "user", now: dt.datetime | None = None) -> MemoryChange:
        """Regenerate MEMORY.md from memory/, every user scope's PREFERENCES.md from its
        preference files (as of `now`) and every project's MEMORY.md; commit what changed.

        Status `written` (not committed) when memory/ has a person's uncommitted edits. The
        result's `scopes` names the scope projections repaired.
        """
        from desk.memory.operations import reindex
        from desk.results.change import MemoryChange
        from desk.scopes.prefs import reindex_scopes

        result = reindex(self, actor=actor)
        result.scopes, prefs_commit = reindex_scopes(self, actor=actor, now=now)
        if prefs_commit is not None:
            result.commit = prefs_commit if result.commit is None else result.commit
            if result.status in ("unchanged", "restored"):
                result.status = "updated"
        elif result.scopes and result.status == "unchanged":
            result.status = "restored"
        return MemoryChange(result)

    def edit(self, name: str, *, actor: str = "user", ask: Callable[[str], bool] | None = None,
             editor: str | None = None) -> MemoryChange:
        """Open memory `name` in `editor` ($VISUAL, else $EDITOR), validate it, commit it.

        `ask(findings)` decides after a rule break: True edits again, False (the default) aborts
        with RejectedError and nothing changed.
        """
        from desk.memory.edit import edit_memory
        from desk.results.change import MemoryChange

        return MemoryChange(edit_memory(self, self._name(name), actor=actor, ask=ask or (lambda _f: False),
                                        editor=editor))

    # -- guarding the desk -------------------------------------------------------------------

    def validate(self, mode: str = "staged", *, fix: bool = False) -> Validation:
        """Run the gate over what is staged (`staged`) or every desk file (`all`).

        With `fix` (staged only), a stale MEMORY.md is rewritten in the work tree for the person
        to `git add`. The result's `exit_code` is 3 when any finding is an error.
        """
        from desk.results.guard import Validation

        if mode == "all":
            from desk.gate.whole import validate_all  # git lists the work tree while the gate loads

            return Validation(mode, validate_all(self))
        from desk.gate.validate import fix_index, validate_staged
        from desk.storage.git import staged_git

        if mode != "staged":
            raise UsageError(f"validate mode must be staged or all, not {mode!r}")
        report, regenerated = validate_staged(self)
        stale = any(f.rule == "index-stale" for f in report.findings)
        if fix and stale and regenerated is not None and fix_index(
                self, regenerated, staged_git(self.root).read_blobs([f":{INDEX_FILE}"]).get(f":{INDEX_FILE}")):
            report.fixed.append(INDEX_FILE)
        return Validation(mode, report)

    def hooks_install(self) -> HooksChange:
        """Install desk's pre-commit, commit-msg and pre-merge-commit hooks; a foreign hook is kept and runs first.

        DeskError when core.hooksPath is set: the hint says how to wire the hooks by hand.
        """
        from desk.setup.hooks import install
        from desk.results.guard import HooksChange

        return HooksChange(install(self.root))

    def hooks_uninstall(self) -> HooksChange:
        """Remove desk's hooks and restore the hooks they had replaced."""
        from desk.setup.hooks import uninstall
        from desk.results.guard import HooksChange

        return HooksChange(uninstall(self.root))

    def sync(self, remote: str | None = None, *, push: bool = True,
             progress: Callable[[str], None] | None = None, now: dt.datetime | None = None,
             resume: bool = False) -> Synced:
        """Fetch, integrate by merge (never rewriting history), check with the gate, push (never forced).

        ConflictError (exit 4) when the remote rewrote history (naming the commits it would lose)
        or keeps moving; DeskError (exit 1) when it cannot be reached, with nothing changed;
        RejectedError (exit 3) for a remote address that embeds a password, or for incoming
        commits that break the rules. With `resume` (`desk sync --continue`): settle and finish a
        person's `git pull` that stopped on a conflict (a memory deleted on one side and changed
        on the other), nothing fetched or pushed; UsageError when none is stopped.
        """
        from desk.results.sync import Synced

        if resume:
            from desk.sync.stopped import continue_stopped

            return Synced(continue_stopped(self, now=now))
        from desk.sync.run import sync

        return Synced(sync(self, remote, push=push, progress=progress, now=now))

    def doctor(self, *, repair: bool = False, commits: int = 200) -> Diagnosis:
        """Check the desk's health (and with `repair`, fix what is safe); exit_code 3 while a problem remains."""
        from desk.guard.checkup import diagnose  # git reads while the doctor's modules load
        from desk.results.guard import Diagnosis

        return Diagnosis(diagnose(self, repair=repair, commits=commits))

    def migrate(self, *, dry_run: bool = False) -> Migrated:
        """Upgrade an older desk's schema in one commit (status `unchanged` when it is current,
        `planned` with `dry_run`). DeskError when the desk is newer than this desk."""
        from desk.setup.migrate import migrate
        from desk.results.working import Migrated

        return Migrated(migrate(self, dry_run=dry_run))

    # -- reading -----------------------------------------------------------------------------

    def recall(self, query: str, *, limit: int = 5, kind: str = "all", as_of: Time | None = None,
               ranker: str = "default", progress: Progress | None = None,
               project: str | None = None, all_scopes: bool = False, embedder: Any = None,
               embed_progress: Progress | None = None) -> Recalled:
        """Search memories and archived conversations for `query`; read-only.

        UsageError (exit 2) for an empty or punctuation-only query or a limit outside 1..10.
        Memories searched: the desk-wide ones and `project`'s, or every project's with
        `all_scopes` (docs/scopes.md). `.xml()` renders docs/design.md §8.1's
        `<recalled_context>` block. The search cache stays loaded between calls on this object (refreshed incrementally each time), so a
        harness that keeps one `Desk` recalls warm; `close()` (or `with desk.open(...)`) frees it.

        `embedder` turns on hybrid recall (docs/recall.md "Hybrid retrieval (optional)"): an
        entry point name of `desk.embedders`, `package.module:factory`, or an object with `name`,
        `dimension` and `embed(texts)`. Its dense ranking is fused with the lexical one; the
        embedder is loaded once per `Desk` and `embed_progress(done, total)` follows the records
        it embeds. UsageError (exit 2) for an unknown embedder; DeskError (exit 1) for one that
        fails or returns vectors of the wrong dimension.
        """
        asked = None
        if self._search_cache is None:  # a cold recall: git works while the search modules load
            from desk.recall.git_state import search_git_state

            asked = search_git_state(self)
        from desk.recall.search import recall
        from desk.recall.search_cache import SearchCache
        from desk.results.read import Recalled

        if self._search_cache is None:
            self._search_cache = SearchCache(self)
            self._search_cache.take_asked(asked)
        dense = None
        if embedder is not None:
            from desk.recall.hybrid import DenseIndex, check_embedder, load_embedder

            self._dense = self._dense or {}
            dense = self._dense.get(embedder if isinstance(embedder, str) else id(embedder))
            if dense is None:
                made = load_embedder(embedder) if isinstance(embedder, str) else check_embedder(embedder)
                dense = self._dense[embedder if isinstance(embedder, str) else id(embedder)] = DenseIndex(self, made)
            dense.progress = embed_progress
        return Recalled(recall(self, query, limit=limit, kind=kind, as_of=as_of, ranker=ranker,
                               cache=self._search_cache, progress=progress, project=project,
                               all_scopes=all_scopes, dense=dense))

    def context(self, *, mode: str = "wake", query: str | None = None, budget: int | None = None,
                section_budgets: Mapping[str, int] | None = None,
                project_agents: str | Path | None = None, as_of: Time | None = None,
                journal_days: int | None = None, user: str | None = None,
                project: str | None = None) -> Context:
        """What the assistant reads, within the budgets (docs/context.md).

        `mode` is the read: `wake` (the start of a session: AGENTS.md ... MEMORY.md and the recent
        facts) or `spot` (the key-turn spot check: NOW.md, MISTAKES.md and the newest
        `journal_days` journal days). UsageError (exit 2) for an unknown mode or budget section.
        `user` (a user id; None: the desk owner) selects whose profile and preferences the wake-up
        read loads; nothing of any other user is. `project` adds that project's memory index (and,
        with a query, its trigger-hit memories) to the desk-wide ones; never another project's
        (docs/scopes.md).
        """
        from desk.recall.git_state import context_git_state

        # git works (memory/'s state, the shown files' blobs) while the context modules load;
        # build_context owns the processes from here (and ends them if the read fails)
        asked = context_git_state(self, mode, query, user, project)
        try:
            from desk.recall.context import build_context
            from desk.results.read import Context
            from desk.text.times import utc_now

            if mode == "wake":  # its recent facts' modules load while git answers, not after it did
                from desk.digest.recent import recent_facts as _loaded  # noqa: F401
            if as_of is not None:
                from desk.recall.search import parse_as_of  # recall's modules only for --as-of

                when = parse_as_of(as_of)
            else:
                when = utc_now()
        except BaseException:
            if asked is not None:
                asked.close()
            raise

        def facts(count: int, memories: Mapping[str, Any]) -> Any:
            from desk.digest.recent import recent_facts

            return recent_facts(self, as_of=when, count=count, memories=memories, project=project)

        return Context(build_context(
            self, mode=mode, query=query, budget=budget, section_budgets=section_budgets,
            project_agents=Path(project_agents) if project_agents is not None else None,
            as_of=when, journal_days=journal_days, facts=facts, user=user, project=project,
            git_state=asked))

    def stats(self, *, unverified_days: int = 180, now: dt.datetime | None = None) -> Stats:
        """Memories by type, the resident index's token cost, stale memories, archive size."""
        from desk.recall.stats import desk_stats
        from desk.results.read import Stats

        return Stats(desk_stats(self, now=now, unverified_days=unverified_days))

    # -- users: profile and preferences (docs/scopes.md) -------------------------------------

    def user_show(self, *, user: str | None = None) -> UserProfile:
        """The profile of `user` (a user id; None: the desk owner)."""
        from desk.results.scopes import UserProfile
        from desk.scopes.profile import show_user

        return UserProfile(show_user(self, user=user))

    def user_set(self, fields: Mapping[str, Any], *, user: str | None = None,
                 actor: str = "user") -> UserProfile:
        """Set the named profile fields (others unchanged): one commit, none when the same.

        UsageError (exit 2) for an unknown field or an invalid value (e.g. a timezone that is
        neither an IANA name nor a UTC offset), with nothing changed.
        """
        from desk.results.scopes import UserProfile
        from desk.scopes.profile import patch_user

        return UserProfile(patch_user(self, user=user, set_fields=fields, actor=actor))

    def user_unset(self, fields: Sequence[str], *, user: str | None = None,
                   actor: str = "user") -> UserProfile:
        """Remove the named profile fields: one commit, none when none was set."""
        from desk.results.scopes import UserProfile
        from desk.scopes.profile import patch_user

        return UserProfile(patch_user(self, user=user, unset=_words(fields, "fields"), actor=actor))

    def pref_set(self, key: str, value: str, *, user: str | None = None, expires: Time | None = None,
                 source: str | None = None, at: Time | None = None, actor: str = "user",
                 source_event: str | None = None, now: dt.datetime | None = None) -> PrefChanged:
        """Create or update preference `key`: `created` (revision 1), `unchanged` (no commit),
        `updated` (revision + 1), one commit with `Desk-Op: pref` per change.

        ConflictError (exit 4) when `at` is not later than the stored change's time.
        `source_event` is the harness's provenance (an archive event id): the agent-facing
        server never passes it, so a model cannot invent evidence.
        """
        from desk.results.scopes import PrefChanged
        from desk.scopes.prefs import set_pref

        return PrefChanged(set_pref(self, key, value, user=user, expires=expires, source=source,
                                    source_event=source_event, at=at, actor=actor, now=now))

    def pref_get(self, key: str, *, user: str | None = None, as_of: Time | None = None) -> PrefShown:
        """Preference `key` (expired ones too; `active` says whether it is at `as_of`)."""
        from desk.results.scopes import PrefShown
        from desk.scopes.prefs import get_pref

        return PrefShown(*get_pref(self, key, user=user, as_of=as_of))

    def pref_list(self, *, user: str | None = None, all: bool = False,
                  as_of: Time | None = None) -> PrefList:
        """The preferences active at `as_of` (default now), or all of them with `all`; read-only."""
        from desk.results.scopes import PrefList
        from desk.scopes.prefs import list_prefs

        return PrefList(list_prefs(self, user=user, include_expired=all, as_of=as_of))

    def pref_delete(self, key: str, *, user: str | None = None, actor: str = "user") -> PrefChanged:
        """Delete preference `key` (exact key only) in one commit."""
        from desk.results.scopes import PrefChanged
        from desk.scopes.prefs import delete_pref

        return PrefChanged(delete_pref(self, key, user=user, actor=actor))

    def pref_history(self, key: str, *, user: str | None = None) -> AuditTrail:
        """Every commit that touched preference `key`, newest first."""
        from desk.results.memory import AuditTrail
        from desk.scopes.prefs import pref_history

        return AuditTrail(pref_history(self, key, user=user), key)

    # -- facts, the digest and conflicts -----------------------------------------------------

    def fact_add(self, text: str, *, kind: str, importance: int, key: str | None = None,
                 session: str | None = None, actor: str | None = None, at: str | None = None,
                 redact: bool = True, project: str | None = None) -> Appended:
        """Validate a fact and append it to the archive (kind `fact`); not committed on its own.

        `project` records the project scope the fact belongs to (payload `project`): the
        desk-wide digest never distils it into memory/. RejectedError (exit 3) for an invalid
        fact, with nothing written.
        """
        from desk.digest.facts import add_fact
        from desk.results.archive import Appended

        return Appended(add_fact(self, text, kind=kind, importance=importance, key=key,
                                 session=session, actor=actor, at=at, redact=redact, project=project))

    def digest(self, *, date: str | dt.date | None = None, as_of: Time | None = None,
               summarizer: str | None = None, project: str | None = None) -> Digested:
        """Write journal/D.md and distil old facts into memories: one commit, none when unchanged.

        With `project`, distil that project's facts only, into `projects/<project>/memory/` and its
        MEMORY.md (no journal): a key in one project never supersedes or conflicts with the same
        key in another project or desk-wide (docs/scopes.md)."""
        from desk.digest.run import digest
        from desk.results.working import Digested

        return Digested(digest(self, date=date, as_of=as_of, summarizer=summarizer, project=project))

    def conflicts_list(self, *, include_closed: bool = False) -> ConflictCases:
        """The conflict review queue: open cases (all cases with `include_closed`). Read-only.

        Each open case's candidates carry the `desk resolve` command that picks them. A broken
        `.system/conflicts.json` raises InvalidFileError (exit 3) naming path:line, with a hint
        naming the last commit whose queue was good.
        """
        from desk.digest.conflicts import open_cases
        from desk.results.working import ConflictCases

        cases = self._cases()
        return ConflictCases(cases if include_closed else open_cases(cases), include_closed)

    def conflicts(self, *, include_closed: bool = False) -> ConflictCases:
        """`desk conflicts` without a subcommand: the same as `conflicts_list`."""
        return self.conflicts_list(include_closed=include_closed)

    def conflicts_show(self, case: str) -> ConflictCase:
        """One case (any status) in full: candidates, their evidence with its archived text, the
        `desk resolve` command for each. DeskError (exit 1) when there is no such case."""
        from desk.archive.store import iter_events
        from desk.errors import DeskError
        from desk.results.working import ConflictCase

        found = next((c for c in self._cases() if c["id"] == case), None)
        if found is None:
            raise DeskError(f"no conflict case {case}", hint="list them with `desk conflicts --all`")
        wanted = {e for c in found["candidates"] for e in c["evidence"]}
        evidence: dict[str, dict[str, Any] | None] = dict.fromkeys(wanted)
        for event in iter_events(self, kinds=["fact"]):
            if event.record.get("id") in wanted:
                evidence[event.record["id"]] = {k: event.record.get(k) for k in ("at", "content", "session")}
        return ConflictCase(found, evidence)

    def _cases(self) -> builtins.list[dict[str, Any]]:
        """The queue's cases; a broken queue's hint names the last commit where it was good."""
        from desk.errors import InvalidFileError
        from desk.layout import CONFLICTS_FILE
        from desk.formats.queue import parse_queue
        from desk.gate.checks import last_good_hint

        try:
            return parse_queue(self.read_if_present(CONFLICTS_FILE))
        except InvalidFileError as exc:
            exc.hint = last_good_hint(self, CONFLICTS_FILE)
            raise

    def resolve(self, case: str, candidate: str, *, expected_revision: int, event_id: str, actor: str,
                rationale: str, now: Time | None = None) -> Resolved:
        """A person's decision on conflict case `case`: `candidate` becomes (or stays) the domain's
        value. One commit: the memory (for a challenger), MEMORY.md, the closed case and the audit
        line. Never offered to the model (not in `context`, not in `desk serve`).

        ConflictError (exit 4) when the case is closed or at another revision, its evidence or its
        active memory changed since, or `event_id` recorded a different decision; the same call
        again returns the first result with status `unchanged` and writes nothing.
        """
        from desk.digest.resolve import resolve
        from desk.results.working import Resolved

        return Resolved(resolve(self, case, candidate, expected_revision=expected_revision,
                                event_id=event_id, actor=actor, rationale=rationale, now=now))

    # -- the archive -------------------------------------------------------------------------

    def archive_append(self, kind: str, content: str | None = None, *,
                       payload: dict[str, Any] | None = None, session: str | None = None,
                       actor: str | None = None, at: Time | None = None,
                       meta: Mapping[str, str] | None = None, redact: bool = True) -> Appended:
        """Append one event (content and/or a JSON-object payload) to its UTC day's archive file.

        Not committed: `checkpoint` (or `digest`) commits the archive's growth.
        """
        from desk.archive.store import append_event
        from desk.results.archive import Appended

        if content is None and payload is None:
            raise UsageError("give the event's TEXT (or `-` for stdin), or --payload JSON")
        return Appended(append_event(self, kind, content, payload=payload, session=session,
                                     actor=actor, at=at, meta=dict(meta or {}), redact=redact))

    def archive_import(self, path: str | Path, *, redact: bool = True,
                       progress: Progress | None = None) -> Imported:
        """Append every event of a JSONL file under one lock; a bad line changes nothing."""
        from desk.archive.importing import import_events
        from desk.results.archive import Imported

        return Imported(import_events(self, Path(path), redact=redact, progress=progress))

    def archive_list(self, *, since: Time | None = None, until: Time | None = None,
                     kinds: Iterable[str] | None = None, session: str | None = None,
                     limit: int | None = None) -> EventList:
        """Archived events with since <= at < until, in time order; `limit` keeps the last N."""
        from collections import deque
        from desk.results.archive import ArchivedEvent, EventList

        from desk.archive.store import iter_events
        from desk.errors import Finding

        problems: list[Finding] = []
        events = iter_events(self, since=since, until=until, kinds=_words(kinds, "kinds") or None,
                             session=session, problems=problems)
        shown = list(deque(events, maxlen=limit)) if limit else list(events)
        return EventList([ArchivedEvent.of(e) for e in shown], problems)

    def archive_show(self, event_id: str) -> ArchivedEvent:
        """The archived event `event_id`, with its file and line."""
        from desk.archive.store import find_event
        from desk.results.archive import ArchivedEvent

        return ArchivedEvent.of(find_event(self, event_id))

    def archive_verify(self) -> ArchiveCheck:
        """Check every record, the hash chains and committed history.

        InvalidFileError (exit 3) naming each broken record; a torn tail is only a warning.
        """
        from desk.archive.verify import verify_archive
        from desk.errors import InvalidFileError
        from desk.results.archive import ArchiveCheck

        report = verify_archive(self)
        if not report.ok:
            exc = InvalidFileError([f for f in report.findings if f.severity == "error"],
                                   hint="the archive is append-only evidence: restore the file from git "
                                        "(`git restore -- PATH`) or a backup")
            exc.details = {"files": report.files, "lines": report.lines,
                           "warnings": [f.to_json() for f in report.findings if f.severity != "error"]}
            raise exc
        return ArchiveCheck(report)

    def checkpoint(self, *, actor: str = "assistant", progress: Progress | None = None) -> Checkpointed:
        """Commit the archive's growth in one commit (status `unchanged` when there is none).

        `progress(done, total)` counts the archive files read (then the commit runs).
        """
        from desk.archive.checkpoint import checkpoint
        from desk.results.archive import Checkpointed

        return Checkpointed(checkpoint(self, actor=actor, progress=progress))

    def conversations_render(self, *, date: str | None = None, session: str | None = None,
                             actor: str = "assistant") -> ConversationsRendered:
        """Regenerate conversations/DAY/SESSION.md from the archive; one commit when changed."""
        from desk.archive.conversations import render_conversations
        from desk.results.working import ConversationsRendered

        return ConversationsRendered(render_conversations(self, date=date, session=session, actor=actor))

    # -- working notes -----------------------------------------------------------------------

    def now_show(self, *, section: str | None = None) -> NowView:
        """NOW.md (or one section: doing, blocked, next, reminders)."""
        from desk.formats.now import section_name
        from desk.notes.now import read_now
        from desk.results.working import NowView

        return NowView(read_now(self), section_name(section))

    def now_set(self, text: str, *, section: str | None = None, actor: str = "assistant") -> NowChange:
        """Replace one section of NOW.md (or the whole note) with `text`; one commit."""
        from desk.notes.now import set_now
        from desk.results.working import NowChange

        return NowChange(set_now(self, text, section=section, actor=actor))

    def now_append(self, text: str, *, section: str = "doing", actor: str = "assistant") -> NowChange:
        """Add `text` to a section of NOW.md (one line becomes a `- ` item); one commit."""
        from desk.notes.now import append_now
        from desk.results.working import NowChange

        return NowChange(append_now(self, text, section=section, actor=actor))

    def mistake_add(self, *, what: str, context: str, cause: str, avoid: str,
                    memory: str | None = None, actor: str = "assistant") -> MistakeAdded:
        """Add an entry to MISTAKES.md in one commit; the same lesson again changes nothing.

        `memory` links the entry to a memory, given as `x`, `x.md` or `memory/x.md`."""
        from desk.notes.mistakes import add_mistake
        from desk.results.working import MistakeAdded

        if memory is not None:
            memory = self._name(memory)
        return MistakeAdded(add_mistake(self, what=what, context=context, cause=cause, avoid=avoid,
                                        memory=memory, actor=actor))

    def mistake_list(self) -> MistakeList:
        """The entries of MISTAKES.md."""
        from desk.notes.mistakes import list_mistakes
        from desk.results.working import MistakeList

        return MistakeList(list_mistakes(self))

    # -- interchange with other tools --------------------------------------------------------

    def import_(self, format: str, source: str | Path, *, dry_run: bool = False,
                progress: Progress | None = None, now: dt.datetime | None = None,
                project: str | None = None, user: str | None = None,
                max_bytes: int | None = None) -> ImportPlan:
        """`desk import FORMAT SOURCE` (`import` is a Python keyword, hence the underscore).

        Reads SOURCE in `format` (claude-code, openclaw, markdown, mem0, chat-export, jsonl),
        plans each memory through the write gate and appends conversation records to the
        archive, all in one commit; `dry_run` returns the plan and writes nothing. A malformed
        source raises UsageError (exit 2) naming the file and line, with nothing written.
        `progress(done, total)` follows the archive records as they are appended. `project`
        imports the memories into that project's scope; `user` applies the profile fields the
        source carries (an OpenClaw USER.md) to that user's profile in the same commit, and is
        refused (UsageError) for a source that carries none (docs/import-export.md). A source
        whose files hold more than `max_bytes` together (None: $DESK_IMPORT_MAX_MIB MiB, else
        256 MiB) is refused (UsageError) before it is read whole.
        """
        from desk.interchange.importing import import_source
        from desk.results.interchange import ImportPlan

        return ImportPlan(import_source(self, format, Path(source), dry_run=dry_run, progress=progress,
                                        now=now, project=project, user=user, max_bytes=max_bytes))

    def export(self, format: str, dest: str | Path) -> Exported:
        """`desk export FORMAT DEST`: the memories as claude-code, openclaw, markdown or jsonl files."""
        from desk.interchange.exporting import export_desk
        from desk.results.interchange import Exported

        return Exported(export_desk(self, format, Path(dest)))




def open(path: str | Path | None = None) -> Desk:  # noqa: A001 - `desk.open(path)` is the API's name
    """The desk at `path`, else the desk enclosing the current folder, else `$DESK_HOME`.

    NotADeskError (exit 1) when there is none.
    """
    folder = find_desk(explicit=Path(path) if path is not None else None)
    return Desk(folder.root, found_by=folder.found_by)


def last_landed() -> tuple[str, str] | None:
    """The last commit this process moved a desk's branch to, as (sha, subject), else None: the
    CLI says so when a Ctrl-C comes after it landed. Nothing is imported to answer: no
    transaction loaded, no commit made."""
    import sys

    transaction = sys.modules.get("desk.transaction")
    landed = getattr(transaction, "LANDED", None)
    return landed[-1] if landed else None


def stopped_notice(desk: DeskFolder) -> str | None:
    """What to run when a person's `git pull` (merge or rebase) is stopped on a conflict in this
    clone, else None. A few file checks when nothing is stopped: every CLI command asks."""
    from desk.storage.gitdir import stopped_operation  # not desk.git: `archive append` runs no git

    if stopped_operation(desk.git_dir) is None:
        return None
    from desk.sync.stopped import stopped_notice as notice

    return notice(desk)


def missing_setup(desk: DeskFolder) -> list[str]:
    """The hooks and merge drivers the clone holding `desk` lacks (empty when complete; `desk hooks
    install` sets them). File reads only: every CLI command checks it, to warn once."""
    from desk.formats.hook_files import missing_setup as missing

    return missing(desk.root, desk.git_dir)


def clone(url: str, path: str | Path | None = None, *,
          progress: Callable[[str], None] | None = None) -> Desk:
    """Clone the desk at `url` into `path`, install its hooks and merge drivers, make the clone's
    id and run `doctor` once; `Desk.cloned` says what was done."""
    from desk.guard.doctor import diagnose
    from desk.results.sync import Cloned
    from desk.sync.run import clone as clone_desk

    root, setup = clone_desk(url, Path(path) if path is not None else None, progress=progress)
    desk = Desk(root)
    desk.cloned = Cloned(root, setup, diagnose(desk))
    return desk


def init(path: str | Path, *, allow_nonempty: bool = False, allow_nested: bool = False) -> Desk:
    """Scaffold a desk at `path` (git init, templates, hooks, first commit) and open it.

    On an existing desk nothing changes. `Desk.initialized` says what was done. A non-empty
    folder, or one inside another repository's work tree, is refused unless allowed.
    """
    from desk.results.memory import Initialized
    from desk.setup.init import init_desk

    result = init_desk(Path(path), allow_nonempty=allow_nonempty, allow_nested=allow_nested)
    desk = Desk(result.path)
    desk.initialized = Initialized(result)
    return desk


def _require_reason(reason: str | None) -> None:
    """`forget --reason`: free text kept in the commit (Desk-Reason), as long as resolve's
    --rationale may be; a usage error (exit 2) naming its length, nothing echoed."""
    if reason is not None and len(reason) > REASON_MAX:
        raise UsageError(f"--reason is {len(reason):,} characters; the limit is {REASON_MAX:,}",
                         hint="say why in a sentence or two: the commit keeps it as Desk-Reason")
