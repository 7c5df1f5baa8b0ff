"""Results of the user-scope verbs: `desk user show|set|unset`, `desk pref set|get|list|delete`."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from desk.results.base import Outcome, Wrapped, commit_suffix, preview

if TYPE_CHECKING:
    from desk.formats.scope_files import Preference
    from desk.scopes.prefs import PrefChange, PrefListing
    from desk.scopes.profile import ProfileView


class UserProfile(Wrapped["ProfileView"]):
    """`user show`: the fields; `user set`/`unset`: the status, the fields changed, the commit."""

    def text(self) -> str:
        v = self.value
        if v.status is not None:
            return (f"{v.status}: {v.path}" + (f" ({', '.join(v.changed)})" if v.changed else "")
                    + commit_suffix(v.commit))
        fields = [f"{k}: {', '.join(x) if isinstance(x, list) else x}" for k, x in v.fields.items()]
        return "\n".join([f"{v.path} (user scope {v.user_scope})", *(fields or ["(no profile fields)"])])


class PrefChanged(Wrapped["PrefChange"]):
    """`pref set`/`pref delete`: created | updated | unchanged | deleted, revision, previous, current."""

    def text(self) -> str:
        v = self.value
        def shown(value: str | None) -> str:  # quoted as people quote, never a Python repr
            return "(none)" if value is None else f'"{preview(value, 120)}"'

        if v.status == "deleted":
            return f"deleted: {v.key} (was {shown(v.previous)}){commit_suffix(v.commit)}"
        return (f"{v.status}: {v.key} revision {v.revision}: {shown(v.previous)} -> {shown(v.current)}"
                + commit_suffix(v.commit))


@dataclass(frozen=True)
class PrefShown(Outcome):
    """`pref get`: one preference and whether it is active at `as_of`."""

    record: Preference
    as_of: dt.datetime

    def to_json(self) -> dict[str, Any]:
        return self.record.to_json(self.as_of)

    def text(self) -> str:
        r = self.record.to_json(self.as_of)
        state = "active" if r["active"] else f"expired (at {r['expires']})"
        return "\n".join([f"{r['key']}: {r['value']}", f"  revision {r['revision']}, {state}, updated "
                          f"{r['updated']}, source {r['source']}"
                          + (f", event {r['source_event']}" if r["source_event"] else "")])


class PrefList(Wrapped["PrefListing"]):
    """`pref list`: the active preferences at a time (or all), and the files refused."""

    def text(self) -> str:
        v = self.value
        return "\n".join(f"{r.key}: {r.value}  (revision {r.revision})" + ("" if r.is_active(v.as_of) else "  [expired]")
                         for r in v.records) or "no preferences"

    def warnings(self) -> list[str]:
        return [f"warning: refused {f.path}:{f.line}: {f.rule}: {f.message}" for f in self.value.problems]
