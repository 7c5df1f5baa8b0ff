"""Desk's methods for memories: remember, set, rename, forget, restore, show, list, history, edit."""

from __future__ import annotations

import builtins
import datetime as dt
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from desk.api.base import DeskBase, Time, require_reason, words
from desk.api.review import reviewed
from desk.errors import RejectedError

if TYPE_CHECKING:
    from desk.results import AuditTrail, MemoryChange, MemoryDiff, MemoryList, Restored, ShownMemory, Timeline


def _text_type(data: bytes, path: str, name: str) -> str | None:
    """The type a whole memory file's text declares, None when it does not parse."""
    from desk.errors import DeskError
    from desk.formats.memory_file import parse_memory

    try:
        return parse_memory(data, path, name).meta.type
    except (DeskError, ValueError):
        return None


def _path(name: str, project: str | None) -> str:
    from desk.layout import project_memory_path

    return f"memory/{name}.md" if project is None else project_memory_path(project, name)


@contextmanager
def _refusing(name: str, path: str) -> Iterator[None]:
    """A refused write's `--json` fields (name, path, reason) on its RejectedError."""
    try:
        yield
    except RejectedError as exc:
        exc.details = {"name": name, "path": path, "commit": None,
                       "reason": getattr(exc, "reason", None) or "invalid", **exc.details}
        raise


class MemoryMethods(DeskBase):
    """Remember, change, read back and forget memories."""

    def remember(self, name: str, body: str, *, type: str | None = None,
                 description: str | None = None, triggers: Sequence[str] | None = None,
                 importance: int | None = None, expires: Time | None = None,
                 source: str | None = None, source_event: str | None = None, actor: str = "user",
                 scope: str = "durable", clear: Iterable[str] = (),
                 now: dt.datetime | None = None, project: str | None = None,
                 valid_from: Time | None = None, valid_to: Time | None = None) -> MemoryChange:
        """Create or update memory `name` through the write gate: one commit, none when unchanged.

        A new memory needs `type` and `description`; on an update a field left None keeps its
        value (`clear` names fields to empty). RejectedError (exit 3) when the gate refuses;
        ConflictError (exit 4) over uncommitted edits.
        """
        from desk.memory.operations import remember
        from desk.memory.review import memory_type
        from desk.results.change import MemoryChange

        name = self._name(name, project)
        path = _path(name, project)
        old = memory_type(self, path) if actor != "user" else None
        operation = "update" if actor != "user" and self.path(path).exists() else "create"
        with _refusing(name, path):
            return MemoryChange(reviewed(self, actor, operation, [type, old], name, path, lambda target: remember(
                target, name, type=type, description=description, body=body,
                triggers=words(triggers, "triggers"), importance=importance, expires=expires,
                source=source, source_event=source_event, actor=actor, scope=scope,
                clear=tuple(words(clear, "clear")), now=now, project=project,
                valid_from=valid_from, valid_to=valid_to)))

    def remember_file(self, name: str, text: str | bytes, *, actor: str = "user",
                      now: dt.datetime | None = None, project: str | None = None) -> MemoryChange:
        """Create or update memory `name` from the whole text of its file, through `remember`'s gate.

        RejectedError (exit 3) when the text does not parse, sets or changes `source_event`,
        `evidence` or `key` (provenance is the harness's), or the gate refuses.
        """
        from desk.memory.review import memory_type
        from desk.memory.whole_file import remember_file
        from desk.results.change import MemoryChange

        data = text.encode("utf-8") if isinstance(text, str) else text
        path = _path(name, project)
        types = [memory_type(self, path), _text_type(data, path, name)] if actor != "user" else []
        operation = "update" if self.path(path).exists() else "create"
        with _refusing(name, path):
            return MemoryChange(reviewed(self, actor, operation, types, name, path,
                                         lambda target: remember_file(target, name, data, actor=actor, now=now,
                                                                      project=project)))

    def set(self, name: str, *, description: str | None = None, type: str | None = None,
            triggers: Sequence[str] | None = None, add_triggers: Sequence[str] = (),
            remove_triggers: Sequence[str] = (), importance: int | None = None,
            expires: Time | None = None, clear: Iterable[str] = (), actor: str = "user",
            now: dt.datetime | None = None, valid_from: Time | None = None,
            valid_to: Time | None = None) -> MemoryChange:
        """Change fields of memory `name` without restating its body: one commit, none when
        nothing differs. DeskError (exit 1) when there is no such memory."""
        from desk.memory.review import memory_type
        from desk.memory.revise import set_fields
        from desk.results.change import MemoryChange

        name = self._name(name)
        path = f"memory/{name}.md"
        return MemoryChange(reviewed(self, actor, "update", [type, memory_type(self, path)], name, path,
                                     lambda target: set_fields(
            target, name, description=description, type=type,
            triggers=words(triggers, "triggers"), add_triggers=words(add_triggers, "add_triggers"),
            remove_triggers=words(remove_triggers, "remove_triggers"), importance=importance,
            expires=expires, clear=tuple(words(clear, "clear")), actor=actor, now=now,
            valid_from=valid_from, valid_to=valid_to)))

    def rename(self, old: str, new: str, *, actor: str = "user") -> MemoryChange:
        """Rename memory `old` to `new` in one commit (file, `name:` and MEMORY.md); history follows it."""
        from desk.memory.review import memory_type
        from desk.memory.revise import rename
        from desk.results.change import MemoryChange

        old, new = self._name(old), self._name(new)
        return MemoryChange(reviewed(self, actor, "rename", [memory_type(self, f"memory/{old}.md")], new,
                                     f"memory/{new}.md", lambda target: rename(target, old, new, actor=actor)))

    def diff(self, name: str, rev: str | None = None) -> MemoryDiff:
        """The unified diff of memory `name` from `rev` (default: before its last committed change)
        to the file as it is now."""
        from desk.memory.reads import diff
        from desk.results.memory import MemoryDiff

        name = self._name(name)
        return MemoryDiff(name, *diff(self, name, rev))

    def forget(self, name: str, *, reason: str | None = None, actor: str = "user",
               project: str | None = None) -> MemoryChange:
        """Delete memory `name` and its index line in one commit (git history keeps it)."""
        from desk.memory.operations import forget
        from desk.memory.review import memory_type
        from desk.results.change import MemoryChange
        from desk.scopes.projects import forget_in_project

        require_reason(reason)
        name = self._name(name, project)
        path = _path(name, project)
        return MemoryChange(reviewed(self, actor, "forget", [memory_type(self, path)], name, path, lambda target: (
            forget(target, name, reason=reason, actor=actor) if project is None
            else forget_in_project(target, project, name, reason=reason, actor=actor))))

    def restore(self, name: str, *, from_rev: str | None = None, actor: str = "user",
                project: str | None = None, now: dt.datetime | None = None) -> Restored:
        """Bring memory `name` back from git history byte for byte in one commit, through the gate.

        `from_rev` picks the version (under the name it had there); without it, a forgotten
        memory's last version, else the one before the current. Status `unchanged` when that
        version is the current one. docs/api.md lists the errors.
        """
        from desk.memory.restore import restore
        from desk.results.change import Restored

        name = self._name(name, project)
        with _refusing(name, _path(name, project)):
            return Restored(restore(self, name, from_rev=from_rev, actor=actor, project=project, now=now))

    def show(self, name: str, *, project: str | None = None, as_of: Time | None = None) -> ShownMemory:
        """The memory file `name` as it is on disk (an invalid one with its findings); with `as_of`,
        the revision committed at the last commit at or before that time, and that commit."""
        from desk.results.memory import ShownMemory

        name = self._name(name, project)
        if as_of is not None:
            from desk.memory import past
            from desk.memory.reads import Shown

            past.require_desk_wide(project)
            when = past.start_at(self, as_of)()
            return ShownMemory(Shown(*past.show(self, name, when), [], when))
        if project is not None:
            from desk.scopes.projects import show_in_project

            return ShownMemory(show_in_project(self, project, name))
        from desk.memory.reads import show

        return ShownMemory(show(self, name))

    def memory_names(self, *, project: str | None = None) -> builtins.list[str]:
        """The names of the memory files in memory/ (or `project`'s), unparsed: for shell completion."""
        from desk.layout import MEMORY_DIR, PROJECTS_DIR, project_problem

        if project is not None and project_problem(project):
            return []
        folder = self.root / (MEMORY_DIR if project is None else f"{PROJECTS_DIR}/{project}/{MEMORY_DIR}")
        return sorted(p.name[:-3] for p in folder.glob("*.md") if not p.is_symlink())

    def project_names(self) -> builtins.list[str]:
        """The projects with a folder under projects/ (a valid name each), sorted."""
        from desk.scopes.projects import all_projects

        return all_projects(self)

    def list(self, *, type: str | None = None, project: str | None = None, as_of: Time | None = None) -> MemoryList:
        """The memories on disk sorted by name, and unparseable files; with `as_of`, those committed
        at the last commit at or before that time and valid then."""
        from desk.results.memory import MemoryList

        if as_of is not None:
            from desk.memory import past

            past.require_desk_wide(project)
            started = past.start_at(self, as_of)
            import desk.gate.entries  # noqa: F401  (what `entries` reads with, loaded while git walks the history)

            when = started()
            found = sorted(past.entries(self, when).values(), key=lambda e: e.name)
            return MemoryList([e for e in found if type is None or e.type == type], [], when)

        if project is not None:
            from desk.scopes.projects import list_in_project

            return MemoryList(*list_in_project(self, project, type))
        from desk.memory.reads import list_memories

        return MemoryList(*list_memories(self, type))

    def history(self, name: str, *, project: str | None = None) -> AuditTrail:
        """Every commit that touched memory `name`, newest first, across renames and forgets."""
        from desk.results.memory import AuditTrail

        name = self._name(name, project)
        if project is not None:
            from desk.scopes.projects import history_in_project

            return AuditTrail(history_in_project(self, project, name), name)
        from desk.memory.reads import history

        return AuditTrail(history(self, name), name)

    def timeline(self, name: str, *, project: str | None = None) -> Timeline:
        """Every revision of memory `name`, newest first, with the interval it was true for and its
        evidence (docs/time.md)."""
        from desk.memory import past
        from desk.results.memory import Timeline

        past.require_desk_wide(project)
        name = self._name(name)
        return Timeline(name, past.timeline(self, name))

    def log(self, limit: int | None = None) -> AuditTrail:
        """The desk's audit trail: commits with their Desk-* trailers, newest first."""
        from desk.memory.reads import log
        from desk.results.memory import AuditTrail

        return AuditTrail(log(self, limit))

    def reindex(self, *, actor: str = "user", now: dt.datetime | None = None) -> MemoryChange:
        """Regenerate MEMORY.md, every scope's PREFERENCES.md and every project's MEMORY.md; commit
        what changed (status `written`, uncommitted, over a person's edits in memory/)."""
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
        """Open memory `name` in `editor` ($VISUAL, else $EDITOR), validate it, commit it;
        `ask(findings)` after a rule break: True edits again, False aborts (RejectedError)."""
        from desk.memory.edit import edit_memory
        from desk.results.change import MemoryChange

        return MemoryChange(edit_memory(self, self._name(name), actor=actor, ask=ask or (lambda _f: False),
                                        editor=editor))
