"""`desk user show|set|unset`: a scope's profile (USER.md's frontmatter) as field patches, one
commit per change; the free text below it is kept as it is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from desk.errors import Finding, InvalidFileError, UsageError
from desk.layout import OWNER_SCOPE, DeskFolder, profile_path, scope_id
from desk.formats.scope_files import (PROFILE_FIELDS, ProfileFile, ownership_problem, parse_profile,
                               profile_scope, validate_profile)
from desk.transaction import commit_message, transaction
from desk.vocabulary import ACTORS


@dataclass
class ProfileView:
    """A scope's profile: its fields, and for `set`/`unset` what happened."""

    user_scope: str
    path: str
    fields: dict[str, Any]
    status: str | None = None  # created | updated | unchanged (set/unset only)
    changed: list[str] = field(default_factory=list)
    commit: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"user_scope": self.user_scope, "path": self.path, "fields": self.fields}
        if self.status is not None:
            data.update(status=self.status, changed=self.changed, commit=self.commit)
        return data


def read_profile(desk: DeskFolder, scope: str) -> ProfileFile | None:
    """USER.md of `scope`, None when absent; InvalidFileError (exit 3) when it does not parse, is a
    symlink, or records another scope or desk (it is never read as this user's)."""
    path = profile_path(scope)
    data = desk.read_checked(path, "USER.md")
    if data is None:
        return None
    profile = parse_profile(data, path)
    if profile.framed or scope != OWNER_SCOPE:
        problem = ownership_problem(profile_scope(profile, scope), profile.desk_id, scope, desk.desk_id)
        if problem:
            raise InvalidFileError([Finding(path, 1, "scope-mismatch", problem)],
                                   hint=f"remove it (`git rm {path}`) or move it to the scope it records")
    return profile


def show_user(desk: DeskFolder, *, user: str | None = None) -> ProfileView:
    scope = scope_id(user)
    profile = read_profile(desk, scope)
    return ProfileView(scope, profile_path(scope), dict(profile.fields) if profile else {})


def patch_user(desk: DeskFolder, *, user: str | None = None, set_fields: Mapping[str, Any] | None = None,
               unset: Sequence[str] = (), actor: str = "user") -> ProfileView:
    """Set the named fields and remove the `unset` ones; one commit, none when nothing changes."""
    if actor not in ACTORS:
        raise UsageError(f"--actor must be one of {', '.join(ACTORS)}, not {actor!r}")
    set_fields = dict(set_fields or {})
    unknown = sorted({*set_fields, *unset} - set(PROFILE_FIELDS))
    if unknown:
        raise UsageError(f"unknown profile field {unknown[0]!r}; the profile holds "
                         + ", ".join(PROFILE_FIELDS))
    if not set_fields and not unset:
        raise UsageError("name at least one field to change")
    scope = scope_id(user)
    path = profile_path(scope)
    try:
        checked = validate_profile(set_fields, "(arguments)")
    except InvalidFileError as exc:
        raise UsageError("; ".join(f.message for f in exc.findings)) from None
    with transaction(desk) as tx:
        tx.require_clean([path])
        profile = read_profile(desk, scope)
        before = dict(profile.fields) if profile else {}
        after = {k: v for k, v in {**before, **checked}.items() if k not in unset}
        for name in set_fields:
            if name not in checked:  # FIELD= (empty) removes it, as unset does
                after.pop(name, None)
        changed = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
        if not changed:
            return ProfileView(scope, path, before, "unchanged")
        base = profile or ProfileFile({}, None, None, "", False, {})
        data = base.render(after, scope, desk.desk_id)
        message = commit_message(f"user: {', '.join(changed)}" + ("" if scope == OWNER_SCOPE else f" ({scope})"),
                                 {"Desk-Op": "user", "Desk-User": scope, "Desk-Fields": " ".join(changed),
                                  "Desk-Actor": actor})
        sha = tx.commit({path: data}, message)
    return ProfileView(scope, path, after, "updated" if profile else "created", changed, sha)
