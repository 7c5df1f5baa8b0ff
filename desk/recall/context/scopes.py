"""The scope sections of `desk context`'s wake-up read (docs/scopes.md): `user` (the selected
user's USER.md) and `user_prefs` (their profile line and active preferences, seed 003's block).
A file that records another scope or desk, or is a symbolic link, is left out and named, never
shown; the caller escapes the content, the notes beside it are desk's own lines."""

from __future__ import annotations

import datetime as dt
import functools
import json
from typing import TYPE_CHECKING, Any

from desk.errors import Finding, InvalidFileError
from desk.layout import OWNER_SCOPE, PREFS_DIR, DeskFolder, pref_path, prefs_index_path, profile_path, scope_root
from desk.recall.context.files import committed_files, past_blob
from desk.recall.context.parsed import ParsedCache
from desk.recall.context.sections import _note
from desk.storage.reading import SymlinkError
from desk.text.escape import markdown_block, one_line

if TYPE_CHECKING:
    from desk.formats.scope_files import Preference
    from desk.memory.past import Past

_LINK = "it is a symbolic link, and desk never reads through one"


def scope_note(message: str) -> str:
    """A desk note whose text may hold stored values: one line, desk's elements escaped."""
    return _note(markdown_block(one_line(message))) + "\n"


def _profile(desk: DeskFolder, scope: str, shown: str, parsed: ParsedCache,
             past: Past | None) -> tuple[bytes | None, str | None, dict[str, Any]]:
    """The scope's USER.md bytes (None when absent; as `past`'s commit holds it, `--as-of`), why it
    must not be shown (or None), and its profile fields (empty when it must not be shown). `parsed`
    keeps the answer by the file's bytes: a file read before is not parsed again."""
    try:
        data = desk.read_if_present(shown) if past is None else past_blob(desk, past, shown)
    except SymlinkError:
        return None, _LINK, {}
    if data is None:
        return None, None, {}
    extra = (shown, scope, desk.desk_id)
    kept = parsed.get("profile", data, *extra)
    if kept is not None:
        return data, kept["problem"], kept["fields"]
    from desk.formats.scope_files import ownership_problem, profile_fields_unchecked

    try:
        fields, found, found_desk, framed = profile_fields_unchecked(data, shown)
        problem = None if not framed and scope == OWNER_SCOPE else ownership_problem(  # a USER.md from before scopes
            found if found is not None or scope != OWNER_SCOPE else OWNER_SCOPE, found_desk, scope, desk.desk_id)
    except InvalidFileError as exc:
        fields, problem = {}, exc.findings[0].message if exc.findings else "it does not parse"
    kept = {"problem": problem, "fields": {} if problem else fields}
    parsed.put("profile", data, extra, kept)
    return data, problem, kept["fields"]


def profile_section(desk: DeskFolder, scope: str, read: dict[str, bytes | None], parsed: ParsedCache,
                    past: Past | None) -> tuple[str, str, str]:
    """The `user` section: (content, shown path, notes). The file's blob goes to `read` (not as of a time)."""
    shown = profile_path(scope)
    data, problem, _ = _profile(desk, scope, shown, parsed, past)
    if problem:
        return "", shown, scope_note(f"{shown} left out: {problem}")
    if past is None:
        read[shown] = data
    if data is None:
        if scope == OWNER_SCOPE:
            return f"_({shown} does not exist)_\n", shown, ""
        return "_(no profile for this user yet: `desk --user ID user set FIELD=VALUE`)_\n", shown, ""
    return data.decode("utf-8", "replace").rstrip() + "\n", shown, ""


def user_prefs_section(desk: DeskFolder, scope: str, as_of: dt.datetime, read: dict[str, bytes | None],
                       parsed: ParsedCache, past: Past | None) -> tuple[str, str, str, list[str]]:
    """The `user_prefs` section: (content, shown path, notes, the preference files shown)."""
    notes: list[str] = []
    shown = profile_path(scope)
    data, problem, fields = _profile(desk, scope, shown, parsed, past)
    if problem:
        notes.append(f"{shown} left out: {problem}")
    problems: list[Finding] = []
    folder = scope_root(scope) + PREFS_DIR
    prefs = None if past is None else committed_files(
        desk, past.commit, folder, functools.partial(_committed_pref, desk, scope), problems)
    if not (desk.path(folder).is_dir() if prefs is None else prefs or problems):
        # No preferences: the block is a function of the profile fields alone, kept with them.
        profile = json.dumps(fields).encode()  # in the fields' order, as the block shows them
        block = parsed.get("user block", profile)
        if block is None:
            from desk.formats.scope_files import user_block

            block = user_block(fields, [])
            parsed.put("user block", profile, (), block)
        return block, prefs_index_path(scope), "".join(scope_note(n) for n in notes), []
    from desk.formats.scope_files import user_block

    if prefs is None:
        from desk.scopes.prefs import scope_prefs  # the preference modules only when there are any

        prefs = scope_prefs(desk, scope, problems)
    active = [p for p in prefs if p.is_active(as_of)]
    notes += [f"{f.path} left out: {f.message}" for f in problems]
    files = [pref_path(scope, p.key) for p in sorted(active, key=lambda p: p.key)]
    for rel in files if past is None else ():  # their blobs, for the sources (just read: they are plain)
        try:
            read[rel] = desk.read_if_present(rel)
        except SymlinkError:
            read[rel] = None
    return user_block(fields, active), prefs_index_path(scope), "".join(scope_note(n) for n in notes), files


def _committed_pref(desk: DeskFolder, scope: str, data: bytes, path: str, key: str) -> Preference:
    """A preference file as a commit holds it, refused as `desk.scopes.prefs.read_pref` refuses one."""
    from desk.formats.scope_files import key_problem, ownership_problem, parse_pref

    if key_problem(key):
        raise InvalidFileError([Finding(path, 1, "pref-key", f"{key!r} is not a preference key")])
    record = parse_pref(data, path, key)
    problem = ownership_problem(record.user_scope, record.desk_id, scope, desk.desk_id)
    if problem:
        raise InvalidFileError([Finding(path, 1, "scope-mismatch", problem)])
    return record
