"""The gate's `index-stale` rule for the scopes' generated files (docs/scopes.md).

`projects/<name>/MEMORY.md` must equal its regenerated index. A scope's `PREFERENCES.md` must be
what its preference files render at *some* time (before every expiry, or at one), so no clock is
needed. Only the scopes a change touches are read; unparsable files are left out of the rendering."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Mapping

from desk.errors import Finding, InvalidFileError
from desk.gate.index_rule import first_difference
from desk.layout import (PREFS_DIR, is_scope_id, prefs_index_path, project_file, project_index_path,
                         project_problem, scope_file, scope_root)

Read = Callable[[list[str]], Mapping[str, bytes]]
FilesUnder = Callable[[str], Mapping[str, str]]  # a folder or file path -> `{path: blob}` of the commit
_EARLIEST = dt.datetime.min.replace(tzinfo=dt.timezone.utc)


def touched_scopes(paths: Collection[str]) -> tuple[set[str], set[str]]:
    """(projects, user scopes) whose generated file a change of `paths` may leave stale."""
    projects: set[str] = set()
    scopes: set[str] = set()
    for path in paths:
        found = project_file(path)
        if found is not None and found[0] in ("memory", "index") and project_problem(found[1]) is None:
            projects.add(found[1])
        in_scope = scope_file(path)
        if in_scope is not None and in_scope[0] in ("pref", "prefs-index") and is_scope_id(in_scope[1]):
            scopes.add(in_scope[1])
    return projects, scopes


def check_scope_indexes(paths: Collection[str], files_under: FilesUnder, read: Read, desk_id: str,
                        now: dt.datetime) -> tuple[list[Finding], dict[str, bytes]]:
    """`index-stale` for each generated scope file the change of `paths` concerns, and `{path: correct
    file}` of the stale ones (rendered at `now`, for the pre-commit fixer)."""
    projects, scopes = touched_scopes(paths)
    findings: list[Finding] = []
    regenerated: dict[str, bytes] = {}
    generated: list[tuple[str, str, str, str | None]] = [
        (project_index_path(p), f"projects/{p}/memory/", "memory", None) for p in sorted(projects)]
    generated += [(prefs_index_path(s), f"{scope_root(s)}{PREFS_DIR}/", "pref", s) for s in sorted(scopes)]
    for index, source, kind, scope in generated:
        files = {**files_under(source), **files_under(index)}
        sources = {p: b for p, b in files.items() if ((scope_file if scope else project_file)(p) or ("",))[0] == kind}
        if not sources and index not in files:
            continue  # the project or scope is gone as a whole
        accepted = _prefs_renderings(scope, sources, read, desk_id, now) if scope else [_project_index(sources, read)]
        blob = files.get(index)
        actual = read([blob]).get(blob) if blob is not None else None
        if actual in accepted:
            continue
        regenerated[index] = accepted[0]
        # the line where it departs from the rendering it is closest to
        line = max(first_difference(actual, r) for r in accepted) if actual is not None else 1
        what = "is missing" if actual is None else "does not match its scope's files"
        findings.append(Finding(index, line, "index-stale", f"{index} {what}; it is generated from {source}: run "
                                "`desk reindex` (the pre-commit hook regenerates it in the work tree)"))
    return findings, regenerated


def _project_index(memories: Mapping[str, str], read: Read) -> bytes:
    from desk.formats.memory_file import parse_memory  # YAML: only commits touching a project pay
    from desk.formats.memory_index import IndexEntry, render_index

    blobs = read(sorted(set(memories.values())))
    entries = []
    for path, blob in sorted(memories.items()):
        found = project_file(path)
        try:
            entries.append(IndexEntry.of(parse_memory(blobs[blob], path, found[2] if found else None)))
        except (InvalidFileError, KeyError):
            continue  # its own finding says why (a copy from another project included)
    return render_index(entries)


def _prefs_renderings(scope: str, prefs: Mapping[str, str], read: Read, desk_id: str,
                      now: dt.datetime) -> list[bytes]:
    """Every PREFERENCES.md the preference files render at some time, the one at `now` first."""
    from desk.formats.scope_files import ownership_problem, parse_pref, render_prefs_index

    blobs = read(sorted(set(prefs.values())))
    records = []
    for path, blob in sorted(prefs.items()):
        found = scope_file(path)
        try:
            record = parse_pref(blobs[blob], path, found[2] if found else None)
        except (InvalidFileError, KeyError):
            continue
        if ownership_problem(record.user_scope, record.desk_id, scope, desk_id) is None:
            records.append(record)
    instants = [_EARLIEST, *sorted({r.expires for r in records if r.expires is not None})]
    renderings: list[bytes] = [render_prefs_index(records, now)]
    for instant in instants:
        rendered = render_prefs_index(records, instant)
        if rendered not in renderings:
            renderings.append(rendered)
    return renderings

