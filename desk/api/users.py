"""Desk's methods for user scopes: the profile and preferences (docs/scopes.md)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from desk.api.base import DeskBase, Time, words

if TYPE_CHECKING:
    from desk.results import AuditTrail, PrefChanged, PrefList, PrefShown, UserProfile


class UserMethods(DeskBase):
    """User scopes: the profile and preferences."""

    def user_show(self, *, user: str | None = None) -> UserProfile:
        """The profile of `user` (a user id; None: the desk owner)."""
        from desk.results.scopes import UserProfile
        from desk.scopes.profile import show_user

        return UserProfile(show_user(self, user=user))

    def user_set(self, fields: Mapping[str, Any], *, user: str | None = None,
                 actor: str = "user") -> UserProfile:
        """Set the named profile fields (others unchanged): one commit, none when the same.
        UsageError (exit 2) for an unknown field or an invalid value."""
        from desk.results.scopes import UserProfile
        from desk.scopes.profile import patch_user

        return UserProfile(patch_user(self, user=user, set_fields=fields, actor=actor))

    def user_unset(self, fields: Sequence[str], *, user: str | None = None,
                   actor: str = "user") -> UserProfile:
        """Remove the named profile fields: one commit, none when none was set."""
        from desk.results.scopes import UserProfile
        from desk.scopes.profile import patch_user

        return UserProfile(patch_user(self, user=user, unset=words(fields, "fields"), actor=actor))

    def pref_set(self, key: str, value: str, *, user: str | None = None, expires: Time | None = None,
                 source: str | None = None, at: Time | None = None, actor: str = "user",
                 source_event: str | None = None, now: dt.datetime | None = None) -> PrefChanged:
        """Create or update preference `key` (one commit per change). ConflictError (exit 4) when
        `at` is not later than the stored change's time."""
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
