"""`desk pref set|get|list|delete|history`: preferences by stable key, one file and one commit each.

Seed 003's lifecycle (docs/scopes.md): `created`, `unchanged` when nothing but `--at` differs,
`updated` only when `--at` is later than the stored `updated` (else exit 4). Active while
`as_of < expires`. Each change regenerates the scope's PREFERENCES.md in the same commit.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from desk.errors import ConflictError, DeskError, Finding, InvalidFileError, RejectedError, UsageError, quoted
from desk.layout import (OWNER_SCOPE, PREFS_DIR, USERS_DIR, DeskFolder, is_scope_id, pref_path,
                         prefs_index_path, project_index_path, scope_id, scope_root)
from desk.formats.memory_index import render_index
from desk.formats.scope_files import (EVENT_MAX, SOURCE_MAX, Preference, key_problem, line_problem,
                               ownership_problem, parse_pref, render_prefs_index, stamp, VALUE_MAX)
from desk.storage.atomic import atomic_write
from desk.storage.git import Commit
from desk.text.times import parse_time, utc_now
from desk.transaction import Transaction, commit_message, transaction
from desk.vocabulary import ACTORS


@dataclass
class PrefChange:
    """The outcome of `pref set` / `pref delete`, with the seed's previous and current values."""

    status: str  # created | updated | unchanged | deleted
    key: str
    user_scope: str
    path: str
    revision: int | None
    previous: str | None
    current: str | None
    commit: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class PrefListing:
    """The preferences of one scope (active at `as_of`, or all), and the files refused."""

    user_scope: str
    as_of: dt.datetime
    records: list[Preference]
    include_expired: bool
    problems: list[Finding] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"user_scope": self.user_scope, "as_of": stamp(self.as_of), "all": self.include_expired,
                "preferences": [r.to_json(self.as_of) for r in self.records],
                "refused": [f.to_json() for f in self.problems]}


AT_SKEW = dt.timedelta(minutes=5)  # another machine's clock may run a little ahead of this one's


def _check_key(key: str) -> None:
    if problem := key_problem(key):
        raise UsageError(f"preference key {quoted(key)}: {problem}")


def _time(value: dt.datetime | str | None, what: str) -> dt.datetime | None:
    return None if value is None else parse_time(value, what)


def _no_pref(key: str, scope: str) -> DeskError:
    who = "the desk owner" if scope == OWNER_SCOPE else f"user scope {scope}"
    return DeskError(f"no preference {key!r} for {who}", hint="see the keys with `desk pref list --all`")


def _commit(tx: Transaction, scope: str, key: str, data: bytes | None, records: list[Preference],
            now: dt.datetime, subject: str, trailers: dict[str, str | None]) -> str:
    """Commit preference `key` (None: deleted) and the scope's PREFERENCES.md made from `records`."""
    index, made = prefs_index_path(scope), render_prefs_index(records, now)
    message = commit_message(subject + ("" if scope == OWNER_SCOPE else f" ({scope})"),
                             {"Desk-Op": "pref", "Desk-Pref": key, "Desk-User": scope, **trailers})
    same = _on_disk(tx.desk, index) == made and tx.desk.git.objects.blob_at("HEAD", index) == made
    return tx.commit({pref_path(scope, key): data, **({} if same else {index: made})}, message)


def read_pref(desk: DeskFolder, scope: str, key: str) -> Preference | None:
    """The preference `key` of `scope` on disk; None when absent. A file that does not parse, a
    symlink, or one that records another scope or desk raises InvalidFileError (exit 3)."""
    path = pref_path(scope, key)
    data = desk.read_checked(path, "a preference file")
    if data is None:
        return None
    record = parse_pref(data, path, key)
    problem = ownership_problem(record.user_scope, record.desk_id, scope, desk.desk_id)
    if problem:
        raise InvalidFileError([Finding(path, 1, "scope-mismatch", problem)],
                               hint=f"remove it (`git rm {path}`) or move it to the scope it records")
    return record


def scope_prefs(desk: DeskFolder, scope: str, problems: list[Finding] | None = None) -> list[Preference]:
    """Every readable preference of `scope`, by key; refused files go to `problems`."""
    folder = desk.path(scope_root(scope) + PREFS_DIR)
    records = []
    names = sorted(os.listdir(folder)) if folder.is_dir() else []
    for key in (name[:-3] for name in names if name.endswith(".md")):
        try:
            if key_problem(key):
                raise InvalidFileError([Finding(pref_path(scope, key), 1, "pref-key",
                                                f"{key!r} is not a preference key")])
            record = read_pref(desk, scope, key)
        except InvalidFileError as exc:
            if problems is not None:
                problems.extend(exc.findings)
            continue
        if record is not None:
            records.append(record)
    return records


def set_pref(desk: DeskFolder, key: str, value: str, *, user: str | None = None,
             expires: dt.datetime | str | None = None, source: str | None = None,
             source_event: str | None = None, at: dt.datetime | str | None = None,
             actor: str = "user", now: dt.datetime | None = None) -> PrefChange:
    """Create, update or keep preference `key` of `user`'s scope (seed 003's statuses)."""
    _check_key(key)
    if actor not in ACTORS:
        raise UsageError(f"--actor must be one of {', '.join(ACTORS)}, not {actor!r}")
    for what, text, limit in (("value", value, VALUE_MAX), ("--source", source, SOURCE_MAX),
                              ("--source-event", source_event, EVENT_MAX)):
        problem = line_problem(text, limit) if text is not None else None
        if problem:
            raise UsageError(f"preference {what} {problem}")
    now = now or utc_now()
    when = _time(at, "--at") or now
    if when > now + AT_SKEW:
        # A change stamped in the future would outrank every later change: `pref set` without --at
        # (now) is refused as stale until that time comes, and sync's merge keeps the later
        # `updated` on every clone. --at replays a change that happened; it cannot be ahead of now.
        raise UsageError(f"{key}: --at {stamp(when)} is in the future (now {stamp(now)}); a change "
                         "cannot be stamped later than it is made",
                         hint="give the time the change was made (it is replayed from a transcript), "
                              "or leave --at out (now)")
    until = _time(expires, "--expires")
    if until is not None and until <= when:
        raise RejectedError(f"{key}: expires {stamp(until)} is not after the change's time "
                            f"{stamp(when)}", hint="give a later --expires, or leave it out")
    scope = scope_id(user)
    path, index = pref_path(scope, key), prefs_index_path(scope)
    with transaction(desk) as tx:
        tx.require_clean([path, index])  # never over a person's uncommitted edit, even of the projection
        old = read_pref(desk, scope, key)
        new = Preference(key, value, 1, source or "user", source_event, until, when, when, scope,
                         desk.desk_id)
        if old is not None:
            if old.same_state(new):
                return PrefChange("unchanged", key, scope, path, old.revision, old.value, old.value)
            if when <= old.updated:
                raise ConflictError(
                    f"{key}: the change at {stamp(when)} is not later than the stored preference "
                    f"(updated {stamp(old.updated)}, revision {old.revision}); a replayed older "
                    "change never rolls a newer preference back", hint="give a later --at, or none (now)")
            new = new.replace(revision=old.revision + 1, created=old.created)
        records = [r for r in scope_prefs(desk, scope) if r.key != key] + [new]
        sha = _commit(tx, scope, key, new.render(), records, now, f"pref: {'update' if old else 'set'} {key}",
                      {"Desk-Revision": str(new.revision), "Desk-Actor": actor, "Desk-Source-Event": source_event})
    return PrefChange("updated" if old else "created", key, scope, path, new.revision,
                      old.value if old else None, value, sha)


def delete_pref(desk: DeskFolder, key: str, *, user: str | None = None, actor: str = "user",
                now: dt.datetime | None = None) -> PrefChange:
    """Delete preference `key` by its exact key, in one commit (git history keeps it)."""
    _check_key(key)
    now = now or utc_now()
    scope = scope_id(user)
    path, index = pref_path(scope, key), prefs_index_path(scope)
    with transaction(desk) as tx:
        tx.require_clean([path, index])  # never over a person's uncommitted edit, even of the projection
        old = read_pref(desk, scope, key)
        if old is None:
            raise _no_pref(key, scope)
        records = [r for r in scope_prefs(desk, scope) if r.key != key]
        sha = _commit(tx, scope, key, None, records, now, f"pref: delete {key}", {"Desk-Actor": actor})
    return PrefChange("deleted", key, scope, path, old.revision, old.value, None, sha)


def get_pref(desk: DeskFolder, key: str, *, user: str | None = None,
             as_of: dt.datetime | str | None = None) -> tuple[Preference, dt.datetime]:
    """Preference `key` of `user`'s scope (expired ones too: `active` says which)."""
    _check_key(key)
    scope = scope_id(user)
    record = read_pref(desk, scope, key)
    if record is None:
        raise _no_pref(key, scope)
    return record, _time(as_of, "--as-of") or utc_now()


def list_prefs(desk: DeskFolder, *, user: str | None = None, include_expired: bool = False,
               as_of: dt.datetime | str | None = None) -> PrefListing:
    """The active preferences at `as_of` (default now), or all of them; a pure read."""
    scope = scope_id(user)
    when = _time(as_of, "--as-of") or utc_now()
    problems: list[Finding] = []
    records = scope_prefs(desk, scope, problems)
    shown = records if include_expired else [r for r in records if r.is_active(when)]
    return PrefListing(scope, when, shown, include_expired, problems)


def pref_history(desk: DeskFolder, key: str, *, user: str | None = None) -> list[Commit]:
    """Every commit that touched preference `key` of `user`'s scope, newest first."""
    _check_key(key)
    return desk.git.history.log([pref_path(scope_id(user), key)])


def all_scopes(desk: DeskFolder) -> list[str]:
    """The owner's scope and every `users/<scope-id>/` folder on disk."""
    folder = desk.path(USERS_DIR)
    found = sorted(n for n in os.listdir(folder) if is_scope_id(n)) if folder.is_dir() else []
    return [OWNER_SCOPE, *found]


def reindex_scopes(desk: DeskFolder, *, actor: str = "user", now: dt.datetime | None = None
                   ) -> tuple[list[str], str | None]:
    """Regenerate every user scope's PREFERENCES.md and every project's MEMORY.md: (the projections
    repaired, the commit or None when HEAD held them all)."""
    now = now or utc_now()
    with transaction(desk) as tx:
        wanted = scope_projections(desk, now)
        writes: dict[str, bytes | None] = {}
        repaired = []
        for index, data in wanted.items():
            if desk.git.objects.blob_at("HEAD", index) != data:
                writes[index] = data
                repaired.append(index)
            elif _on_disk(desk, index) != data:
                atomic_write(desk.path(index), data)
                repaired.append(index)
        if not writes:
            return repaired, None
        return repaired, tx.commit(writes, commit_message("reindex: scopes", {"Desk-Op": "reindex", "Desk-Actor": actor}))


def scope_projections(desk: DeskFolder, now: dt.datetime) -> dict[str, bytes]:
    """Every scope's generated file as the work tree's files make it: each user scope's
    PREFERENCES.md (as of `now`) and each project's MEMORY.md (`desk reindex`, and desk.sync
    after a merge)."""
    from desk.scopes.projects import all_projects, project_entries

    wanted: dict[str, bytes] = {}
    for scope in all_scopes(desk):
        index = prefs_index_path(scope)
        records = scope_prefs(desk, scope)
        if records or desk.path(index).exists() or desk.path(scope_root(scope) + PREFS_DIR).exists():
            wanted[index] = render_prefs_index(records, now)
    for project in all_projects(desk):
        wanted[project_index_path(project)] = render_index(project_entries(desk, project).values())
    return wanted


def _on_disk(desk: DeskFolder, path: str) -> bytes | None:
    """A generated file's bytes as they are, never read through a symlink (a link reads as
    different bytes, so it is replaced by the file)."""
    from desk.storage.reading import SymlinkError

    try:
        return desk.read_if_present(path)
    except (SymlinkError, IsADirectoryError):
        return b"\0(not a regular file)"
