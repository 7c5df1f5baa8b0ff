"""The gate's rules for one path and for the commit message (rule ids: docs/guard.md).

A path's findings are a `FileVerdict`, a pure function of the path, git's mode, the bytes, the
bytes they replace, the desk id and the rules' code, so desk.gate.verdicts caches it by blob id;
the allow-list and the clock apply when it is read. Heavy modules load in the rule that needs them."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Collection
from dataclasses import dataclass, replace

from desk.errors import Finding, InvalidFileError
from desk.layout import (ARCHIVE_PREFIX, CONFIG_PATH, CONFLICTS_FILE, INDEX_FILE, MEMORY_PREFIX, OWNER_SCOPE,
                         PREFS_DIR, PREFS_INDEX_FILE, is_scope_id, memory_name, newer_schema, project_file,
                         project_problem, scope_file)
from desk.storage.git import parse_trailers
from desk.text.direction import describe, first_control

ROOT_FILES = frozenset({"AGENTS.md", "SOUL.md", "USER.md", "NOW.md", INDEX_FILE, "MISTAKES.md",
                        PREFS_INDEX_FILE, ".gitattributes", ".gitignore"})
MANAGED_DIRS = (MEMORY_PREFIX, "journal/", "conversations/", ".system/", "users/", "projects/",
                PREFS_DIR + "/")
UNMANAGED_DIRS = (".system/cache/",)  # where derived caches were kept: never committed (`cache-committed`)
TEXT_LIMIT = 1 << 20  # 1 MiB for a hand-written text file
LARGE_LIMIT = 64 << 20  # archive files and the generated index grow with the desk
FILE_MODE = "100644"
SYMLINK_MODE = "120000"
GITLINK_MODE = "160000"


def needs_old(path: str) -> bool:
    """Whether the rules for `path` compare it with the content it replaces (append-only files,
    desk.json's id)."""
    return path.startswith(ARCHIVE_PREFIX) or path == CONFIG_PATH or _is_audit(path)


def _is_audit(path: str) -> bool:
    return path.startswith(".system/adjudications.") and path.endswith(".jsonl")


def is_managed(path: str) -> bool:
    """Whether desk's rules apply to `path` (the desk's own files, not a person's extras)."""
    if path.startswith(UNMANAGED_DIRS):
        return False
    return path in ROOT_FILES or path.startswith(MANAGED_DIRS)


def is_checked(path: str, mode: str) -> bool:
    """Whether the gate checks `path` committed with `mode`: desk's files, any symlink, and anything
    under `.system/cache/`."""
    return mode == SYMLINK_MODE or is_managed(path) or path.startswith(UNMANAGED_DIRS)


# -- the commit message rules -----------------------------------------------------------------


def check_message(message: str, changed: Collection[str]) -> list[Finding]:
    """Rules that need the commit message (who may change SOUL.md, what a digest may touch); trailers
    read as git reads them, keys ignoring case."""
    trailers: dict[str, list[str]] = {}
    for key, values in parse_trailers(message).items():
        trailers.setdefault(key.lower(), []).extend(values)
    findings = []
    actors = {value.lower() for value in trailers.get("desk-actor", [])}
    authorized = [value for value in trailers.get("desk-authorized-by", []) if value]
    if "SOUL.md" in changed and "assistant" in actors and not authorized:
        findings.append(Finding(
            "SOUL.md", 1, "soul-unauthorized",
            "the assistant may not change SOUL.md silently; add a `Desk-Authorized-By: <person>` "
            "trailer naming who allowed it, or leave SOUL.md out of this commit"))
    ops = {value.lower() for value in trailers.get("desk-op", [])}
    if "digest" in ops and "NOW.md" in changed:
        findings.append(Finding(
            "NOW.md", 1, "digest-now",
            "a digest commit (Desk-Op: digest) never changes NOW.md, which belongs to the "
            "assistant's work; leave NOW.md out of the digest commit"))
    return findings


MESSAGE_PATH = "commit message"  # where a finding in a commit message points


def message_secret_items(message: str) -> list[tuple[Finding, str]]:
    """`secret` findings anywhere in a commit message (trailers and comment lines too: desk's own
    commits keep them), each with its `secret:<fingerprint>` condition."""
    return _secret_items(MESSAGE_PATH, message)


def message_secret_verdict(message: str) -> FileVerdict:
    """The `secret` findings of a commit message, before the allow-list."""
    return _verdict(message_secret_items(message))


# -- per-file rules ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileVerdict:
    """What the per-file rules found in one path's content, before the allow-list and the clock.

    `conditions[i]` says when `findings[i]` holds: `""` always, `"secret:<fingerprint>"` unless
    allowed, `"expires:<ISO time>"` from then on. `entry`: a memory's `(name, MEMORY.md line)` when
    it parses."""

    findings: tuple[Finding, ...] = ()
    conditions: tuple[str, ...] = ()
    entry: tuple[str, str] | None = None
    # a memory file with a `key:` or `evidence:` line: the keyed-state rules (desk.gate.keyed)
    # read it (`validate --all` finds them by their verdicts instead of searching every file)
    keyed: bool = False

    def findings_at(self, allow: Collection[str], now: dt.datetime) -> list[Finding]:
        """The findings that hold with this allow-list at this time."""
        found = []
        for finding, condition in zip(self.findings, self.conditions):
            kind, _, value = condition.partition(":")
            if kind == "secret" and value in allow:
                continue
            if kind == "expires" and dt.datetime.fromisoformat(value) > now:
                continue
            found.append(finding)
        return found


_Items = list[tuple[Finding, str]]  # findings with their conditions, in order


def _reviewed(path: str) -> bool:
    """Whether `path` is text a person reviews as memory (the `bidi-control` rule): not the raw
    archive and audit, nor conversations/ and journal/, which quote the archive as it was said."""
    return not path.startswith((".system/", "conversations/", "journal/"))


def _verdict(items: _Items, entry: tuple[str, str] | None = None) -> FileVerdict:
    return FileVerdict(tuple(f for f, _ in items), tuple(c for _, c in items), entry)


def _line_at(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def check_file(path: str, data: bytes | None, *, desk_id: str, allow: Collection[str],
               now: dt.datetime, mode: str = FILE_MODE, old: bytes | None = None) -> list[Finding]:
    """The rules for one path: `data` as it will be committed (None: deleted) with git's `mode`;
    `old` is the content it replaces (the archive and desk.json rules compare against it)."""
    return file_verdict(path, data, desk_id=desk_id, mode=mode, old=old).findings_at(allow, now)


def file_verdict(path: str, data: bytes | None, *, desk_id: str, mode: str = FILE_MODE,
                 old: bytes | None = None, unscanned: list[str] | None = None) -> FileVerdict:
    """The per-file rules' verdict on `path` (arguments as in `check_file`). `unscanned`, for a
    generated index: the caller vouches the other lines are clean, so only these are scanned."""
    if data is not None and mode == SYMLINK_MODE:
        return _verdict([(Finding(path, 1, "symlink", "desk files must be regular files, not "
                                  "symlinks; replace the link with the file itself"), "")])
    if data is not None and path.startswith(UNMANAGED_DIRS):
        return _verdict([(Finding(path, 1, "cache-committed", "desk's caches are derived on each machine "
                                  "and never committed (one made elsewhere could answer for files this "
                                  "desk does not hold); take it out: `git rm -r --cached .system/cache`"), "")])
    if data is not None and mode == GITLINK_MODE:
        return _verdict([(Finding(path, 1, "binary", "a submodule cannot live inside a desk folder; "
                                  "remove it"), "")])
    if data is not None and (named := _secret_items(path, path, "file name")):
        return _verdict(named)
    if data is not None and not path.startswith(ARCHIVE_PREFIX):
        from desk.storage.conflict_markers import conflict_finding, conflict_markers

        markers = conflict_markers(data)
        if markers is not None:  # what a merge left is the finding, not the YAML it broke
            return _verdict([(conflict_finding(path, markers), "")])
    if data is not None and _reviewed(path) and (control := first_control(data)) is not None:
        line, column, char = control
        return _verdict([(Finding(path, line, "bidi-control", f"column {column}: an invisible "
                                  f"{describe(char)} makes this text display in another order than "
                                  "the assistant reads it (CVE-2021-42574); delete it (Arabic and "
                                  "Hebrew text needs none)", column=column), "")])
    if path.startswith(ARCHIVE_PREFIX) and path.endswith(".jsonl"):
        found = check_archive(path, old, data, desk_id)
        if data is not None and not any(f.severity == "error" for f in found):
            return _verdict([(f, "") for f in found] + archive_secret_items(path, old, data))
        return _verdict([(f, "") for f in found])
    if _is_audit(path):
        from desk.formats.audit import check_audit_change, is_audit_path

        if not is_audit_path(path):
            return _verdict([(Finding(path, 1, "audit-record", "adjudication audit files are named "
                                      ".system/adjudications.<clone-id>.jsonl"), "")])
        found = check_audit_change(path, old, data, desk_id)
        if data is not None and not any(f.severity == "error" for f in found):
            return _verdict([(f, "") for f in found] + archive_secret_items(path, old, data))
        return _verdict([(f, "") for f in found])
    if data is None:
        return FileVerdict()
    if memory_name(path) is not None:
        verdict = _memory_verdict(path, data)
        return replace(verdict, keyed=True) if b"\nkey:" in data or b"\nevidence:" in data else verdict
    in_project = project_file(path)
    if in_project is not None:
        kind, project, stem = in_project
        problem = project_problem(project)
        if problem or kind == "other" and path.startswith(f"projects/{project}/memory/"):
            return _verdict([(Finding(path, 1, "scope-path", f"projects/{project}/: {problem}; rename the "
                                      "folder" if problem else "a project's memory/ holds only <name>.md "
                                      "files; move this file out"), "")])
        if kind == "memory":
            return _memory_verdict(path, data, stem, project)
    limit = LARGE_LIMIT if path in (INDEX_FILE,) or path.startswith(".system/") else TEXT_LIMIT
    if len(data) > limit:
        return _verdict([(_too_big(path, data, limit), "")])
    if path.startswith(MEMORY_PREFIX) and not path.endswith("/.gitkeep"):
        return _verdict([(Finding(path, 1, "memory-path", "memory/ holds only <name>.md files; "
                                  "move this file out of memory/"), "")])
    nul = data.find(b"\0")
    if nul >= 0:
        return _verdict([(Finding(path, _line_at(data, nul), "binary", "file holds NUL bytes; desk "
                                  "stores text only: move binary files out of the desk"), "")])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _verdict([(Finding(path, _line_at(data, exc.start), "encoding",
                                  f"invalid UTF-8 at byte {exc.start}; save the file as UTF-8"), "")])
    items: _Items = []
    if path == CONFIG_PATH:
        items += [(f, "") for f in _check_config(data, old)]
    if scope_file(path) is not None:
        items += [(f, "") for f in check_scope_file(path, data, desk_id)]
    if path == CONFLICTS_FILE:
        from desk.formats.queue import queue_findings  # pydantic: only commits of the queue pay

        items += [(f, "") for f in queue_findings(path, data)]
    if unscanned is None or not _clean(unscanned):
        items += _secret_items(path, text)  # every committed text, whatever its folder
    return _verdict(items)


def _clean(lines: list[str]) -> bool:
    from desk.text.secrets import clean_lines

    return all(map(clean_lines, lines))


def check_scope_file(path: str, data: bytes, desk_id: str) -> list[Finding]:
    """A user scope's file: in its place, parsing, and recording the scope and desk it sits in."""
    kind, scope, key = scope_file(path) or ("other", "", None)
    if not is_scope_id(scope) or scope == OWNER_SCOPE and path.startswith("users/"):
        return [Finding(path, 1, "scope-path", f"users/{scope}/ is not a user scope folder (its name "
                        "is a scope id made by `desk --user ID ...`); move the file out of users/")]
    if kind == "other":
        return [Finding(path, 1, "scope-path", "a user scope holds only USER.md, PREFERENCES.md and "
                        "prefs/<key>.md; move this file out of the scope's folder")]
    if kind == "prefs-index":
        return []  # generated; `desk reindex` regenerates it
    from desk.formats.scope_files import ownership_problem, parse_pref, parse_profile, profile_scope

    try:
        if kind == "pref":
            record = parse_pref(data, path, key)
            found: tuple[str | None, str | None] = (record.user_scope, record.desk_id)
        else:
            profile = parse_profile(data, path)
            if not profile.framed and scope == OWNER_SCOPE:
                return []  # the owner's USER.md may be free text only (desks before scopes)
            found = (profile_scope(profile, scope), profile.desk_id)
    except InvalidFileError as exc:
        return list(exc.findings)
    problem = ownership_problem(*found, scope, desk_id)
    return [Finding(path, 1, "scope-mismatch", problem)] if problem else []


def _too_big(path: str, data: bytes, limit: int) -> Finding:
    return Finding(path, 1, "file-size", f"file is {len(data)} bytes; the limit is {limit}: "
                   "split it or move the bulk out of the desk")


def secret_verdict(path: str, text: str) -> FileVerdict:
    """The `secret` findings for `text`, each dropped when the allow-list names it."""
    return _verdict(_secret_items(path, text))


def _secret_items(path: str, text: str, where: str = "", first_line: int = 1) -> _Items:
    from desk.text.secrets import scan  # here: a hook run that scans nothing never loads the patterns

    return [(Finding(path, s.line + first_line - 1, "secret",
                     f"{s.kind} ({s.preview}){' in the ' + where if where else ''}; remove it, or if "
                     f"it is not a secret allow exactly this finding: add \"{s.fingerprint}\" to "
                     f"secrets.allow in {CONFIG_PATH}", column=s.start - text.rfind("\n", 0, s.start)),
             f"secret:{s.fingerprint}") for s in scan(text)]


def archive_secret_items(path: str, old: bytes | None, new: bytes) -> _Items:
    """Secrets in what an archive file gained (records appended with redaction turned off, or
    written by hand): they reach a commit only when the allow-list names them."""
    start = len(old) if old is not None and new.startswith(old) else 0
    grown = new[start:].decode("utf-8", "replace")
    return _secret_items(path, grown, first_line=new.count(b"\n", 0, start) + 1)


def _memory_verdict(path: str, data: bytes, stem: str | None = None,
                    project: str | None = None) -> FileVerdict:
    """A memory file's findings and, when it parses, its index entry (desk-wide memories only; taken
    whatever the findings, as `desk reindex` lists every memory that parses)."""
    from desk.formats.memory_file import name_problem, parse_memory  # YAML: only commits of memories pay
    from desk.formats.memory_index import memory_line

    stem = stem if stem is not None else memory_name(path) or ""
    try:
        memory = parse_memory(data, path, stem)
        entry: tuple[str, str] | None = (
            (memory.meta.name, memory_line(memory)) if project is None else None)
        failure: list[Finding] = []
    except InvalidFileError as exc:
        memory, entry, failure = None, None, list(exc.findings)
    if len(data) > TEXT_LIMIT:
        return _verdict([(_too_big(path, data, TEXT_LIMIT), "")], entry)
    problem = name_problem(stem)
    if problem:
        return _verdict([(Finding(path, 1, "memory-name", f"file name {stem!r}: {problem}; rename "
                                  "the file"), "")], entry)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = ""  # parse_memory reports the encoding
    if memory is None:
        return _verdict([(f, "") for f in failure] + _secret_items(path, text))
    items: _Items = []  # a memory recording another project fails parse_memory (scope-mismatch)
    if memory.meta.expires is not None:
        items.append((Finding(path, 1, "memory-expired", "memory has expired and is no longer "
                              f"injected; `desk forget {stem}` or move `expires` later", "warning"),
                      f"expires:{memory.meta.expires.isoformat()}"))
    if not memory.meta.triggers:
        items.append((Finding(path, 1, "memory-no-triggers", "memory has no triggers, so recall "
                              "never injects its body; add `triggers: [word, ...]`", "warning"), ""))
    return _verdict(items + _secret_items(path, text), entry)


def check_archive(path: str, old: bytes | None, new: bytes | None, desk_id: str) -> list[Finding]:
    """An archive file only grows: `new` (None: deleted) must extend `old` by valid records."""
    if new is None:
        return [Finding(path, 1, "archive-append-only",
                        "archive files are never deleted; restore it (`git restore --staged "
                        f"--worktree -- {path}`)")]
    from desk.formats.archive import check_archive_change  # only commits of archive files pay

    return check_archive_change(path, old, new, desk_id)


def _check_config(data: bytes, old: bytes | None) -> list[Finding]:
    """desk.json parses and validates, and keeps the desk_id it had."""
    from pydantic import ValidationError  # pydantic (~0.1 s): only commits of desk.json pay

    from desk.config import DeskConfig, config_errors, field_line

    try:
        doc = json.loads(data)
        newer = newer_schema(doc.get("schema_version") if isinstance(doc, dict) else None)
        if newer:
            return [Finding(CONFIG_PATH, 1, "config", f"{newer}: upgrade desk before committing it")]
        config = DeskConfig.model_validate(doc)
    except json.JSONDecodeError as exc:
        return [Finding(CONFIG_PATH, exc.lineno, "config", f"invalid JSON: {exc.msg}", column=exc.colno)]
    except ValidationError as exc:
        return [Finding(CONFIG_PATH, field_line(data, loc), "config", f"{'.'.join(str(p) for p in loc)}: {msg}")
                for loc, msg in config_errors(exc)]
    try:
        before = json.loads(old).get("desk_id") if old else None
    except (ValueError, AttributeError):
        before = None  # the committed file was broken: nothing to compare against
    if before and config.desk_id != before:
        return [Finding(CONFIG_PATH, 1, "config", f"desk_id changed from {before!r}; a desk keeps "
                        "its id for life (archive records carry it)")]
    return []
