"""What every check of the gate shares: a `Change`, the `Report`, and `run_rules`, which runs the
per-file, message, memory-set and scope-index rules over a list of changes."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from desk.errors import Finding, InvalidFileError
from desk.gate.index_rule import MemorySet, Read, check_memory_set
from desk.gate.scope_index import FilesUnder, check_scope_indexes, touched_scopes
from desk.gate.rules import (FILE_MODE, SYMLINK_MODE, FileVerdict, check_message, file_verdict, is_checked,
                             message_secret_verdict, needs_old)
from desk.layout import CONFIG_PATH, CONFLICTS_FILE, INDEX_FILE, MEMORY_PREFIX, DeskFolder, memory_name
from desk.storage.git import Git, blob_sha
from desk.storage.reading import SymlinkError

if TYPE_CHECKING:
    from desk.gate.verdicts import FileKey, VerdictCache
    from desk.formats.memory_file import MemoryFile


@dataclass(frozen=True, slots=True)
class Change:
    """One path as the commit (or the check) will have it."""

    path: str
    new: bytes | None  # None: deleted
    mode: str = FILE_MODE
    old_blob: str | None = None  # the blob at HEAD, when there was one
    blob: str | None = None  # the blob id of `new`, when git already named it

    def key(self) -> FileKey:
        """What its verdict is cached under: the replaced blob only where the rules read it (`needs_old`)."""
        old = self.old_blob or "" if needs_old(self.path) else ""
        return (self.path, self.mode, self.blob or blob_sha(self.new or b""), old)


@dataclass(slots=True)
class Report:
    """The findings of one validation run, errors and warnings."""

    findings: list[Finding] = field(default_factory=list)
    checked: int = 0
    fixed: list[str] = field(default_factory=list)
    computed: int = 0  # files the rules ran on
    reused: int = 0  # files whose verdict came from the cache (desk.gate.verdicts)
    # `{path: correct bytes}` of each stale generated scope file (desk.gate.scope_index): what
    # the pre-commit fixer writes. Not part of the JSON output.
    regenerated: dict[str, bytes] = field(default_factory=dict, init=False, repr=False)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict[str, object]:
        return {"status": "ok" if self.ok else "rejected", "checked": self.checked,
                "errors": len(self.errors), "warnings": len(self.findings) - len(self.errors),
                "findings": [f.to_json() for f in self.findings], "fixed": self.fixed}


def run_rules(desk: DeskFolder, changes: list[Change], memory: MemorySet | None, read: Read,
         message: str | None, now: dt.datetime | None, *, cached: bool = False,
         head_config: Callable[[], bytes | None] | None = None,
         files_under: FilesUnder | None = None) -> tuple[Report, bytes | None]:
    """The rules over `changes`; the memory-set rules when memory/ or MEMORY.md changed; the scopes'
    generated files when a scope's files changed. `cached`: verdicts from and to the blob-keyed
    cache; `head_config()`: HEAD's desk.json when the caller has read it."""
    now = now or dt.datetime.now(dt.timezone.utc)
    managed = [c for c in changes if is_checked(c.path, c.mode)]
    report = Report(checked=len(managed))
    if not managed and message is None and memory is None:
        return report, None
    desk_id, allow = commit_config(desk, changes, head_config)
    # MEMORY.md made from a clean HEAD index waits for the memory-set rule: when that finds it is
    # HEAD's index with the changed lines spliced in, only those lines are scanned (docs/guard.md).
    index = next((c for c in managed if c.path == INDEX_FILE and c.new is not None and c.mode == FILE_MODE
                  and memory is not None and memory.base_clean and not cached), None)
    cache = open_cache(desk, desk_id) if cached else None
    try:
        known = cache.files(c.key() for c in managed if c.new is not None) if cache else {}
        verdicts, fresh = file_verdicts([c for c in managed if c is not index], desk_id, read, known, report,
                                    keyed=cache is not None)
        if cache is not None:
            cache.put_files(fresh)
    finally:
        if cache is not None:
            cache.close()
    changed = {c.path for c in changes}
    regenerated = None
    memory_findings: list[Finding] = []
    if memory is not None and (INDEX_FILE in changed or any(p.startswith(MEMORY_PREFIX) for p in changed)):
        contents = {c.path: c.new for c in changes
                    if memory_name(c.path) is not None and c.mode != SYMLINK_MODE}
        lines = {path: verdict_line(verdicts.get(path)) for path in contents}
        added = {c.path for c in changes if c.old_blob is None}
        memory_findings, regenerated = check_memory_set(desk, lines, memory, added, contents)
        memory_findings += _staged_duplicate_keys(contents, memory)
        if index is not None:
            spliced = [line for line in lines.values() if line is not None] if memory.spliced else None
            verdicts[INDEX_FILE] = file_verdict(INDEX_FILE, index.new, desk_id=desk_id, unscanned=spliced)
            report.computed += 1
    if index is not None and INDEX_FILE not in verdicts:  # no memory-set rule ran: the whole file
        verdicts[INDEX_FILE] = file_verdict(INDEX_FILE, index.new, desk_id=desk_id)
        report.computed += 1
    for change in managed:
        report.findings += verdicts[change.path].findings_at(allow, now)
    report.findings += memory_findings
    if files_under is not None and any(touched_scopes(changed)):
        found_scoped, report.regenerated = check_scope_indexes(changed, files_under, read, desk_id, now)
        report.findings += found_scoped
    if message is not None:
        report.findings += check_message(message, changed)
        report.findings += message_secret_verdict(message).findings_at(allow, now)
    return report, regenerated


def _staged_duplicate_keys(contents: Mapping[str, bytes | None], memory: MemorySet) -> list[Finding]:
    """`keyed-duplicate` for the digest memories this commit writes (others holding the same key are
    looked for by name); nothing is read unless a changed memory carries a key."""
    keyed = {p: d for p, d in contents.items() if d is not None and b"\nkey:" in d}
    if not keyed:
        return []
    from desk.formats.memory_file import parse_memory
    from desk.gate.keyed import duplicate_keys, key_of

    def parsed(path: str, data: bytes) -> MemoryFile | None:
        try:
            return parse_memory(data, path, memory_name(path))
        except InvalidFileError:
            return None

    mine = {p: m for p, d in keyed.items() if (m := parsed(p, d)) is not None and key_of(m)}
    if not mine:
        return []
    prefixes = tuple({k[:40] for m in mine.values() for k in (m.meta.key or "", "k-" + (m.meta.key or ""))})
    others = {p: b for p, b in memory.all_files().items()
              if p not in contents and (memory_name(p) or "").startswith(prefixes)}
    blobs = memory.read(list(others.values())) if others else {}
    every = dict(mine)
    for path, blob in others.items():
        data = blobs.get(blob)
        if data is not None and (m := parsed(path, data)) is not None:
            every[path] = m
    return duplicate_keys(every, mine, {p: d.decode("utf-8", "replace") for p, d in keyed.items()})


def verdict_line(verdict: FileVerdict | None) -> str | None:
    return verdict.entry[1] if verdict is not None and verdict.entry is not None else None


def open_cache(desk: DeskFolder, desk_id: str) -> VerdictCache:
    from desk.gate.verdicts import VerdictCache  # SQLite: only the runs that use the cache pay

    return VerdictCache(desk.cache_dir, desk_id)


def file_verdicts(changes: list[Change], desk_id: str, read: Read, known: Mapping[FileKey, FileVerdict],
              report: Report, *, keyed: bool = True
              ) -> tuple[dict[str, FileVerdict], dict[FileKey, FileVerdict]]:
    """`{path: verdict}` for `changes` (from `known` when cached) and the verdicts computed here by key
    (none unless `keyed`; deletions are not cached)."""
    keys = {c.path: c.key() for c in changes if c.new is not None} if keyed else {}
    olds = read([c.old_blob for c in changes
                 if c.old_blob and needs_old(c.path) and keys.get(c.path) not in known])
    verdicts: dict[str, FileVerdict] = {}
    fresh: dict[FileKey, FileVerdict] = {}
    for change in changes:
        key = keys.get(change.path)
        if key is not None and key in known:
            verdicts[change.path] = known[key]
            report.reused += 1
            continue
        old = olds.get(change.old_blob) if change.old_blob else None
        verdicts[change.path] = file_verdict(change.path, change.new, desk_id=desk_id,
                                             mode=change.mode, old=old)
        report.computed += 1
        if key is not None:
            fresh[key] = verdicts[change.path]
    return verdicts, fresh


def commit_config(desk: DeskFolder, changes: list[Change],
            head: Callable[[], bytes | None] | None = None) -> tuple[str, frozenset[str]]:
    """desk_id and allowed secret fingerprints of the content under check, without pydantic: the
    desk.json being committed, else HEAD's (never an unstaged edit, which could let a secret through)."""
    found = next((config_values(c.new) for c in changes if c.path == CONFIG_PATH and c.new is not None), None)
    if found:
        return found
    # A broken desk.json under check (its own finding) falls back to HEAD's.
    data = head() if head is not None else desk.git.objects.blob_at("HEAD", CONFIG_PATH)
    return config_values(data) or ("", frozenset())


def config_values(data: bytes | None) -> tuple[str, frozenset[str]] | None:
    """desk_id and the allowed secret fingerprints of desk.json's bytes; None when it is broken."""
    try:
        config = json.loads(data or b"")
        allow = config.get("secrets", {}).get("allow", [])
        return str(config["desk_id"]), frozenset(a for a in allow if isinstance(a, str))
    except (ValueError, KeyError, AttributeError, TypeError):
        return None


def current_config(desk: DeskFolder) -> tuple[str, frozenset[str]]:
    """desk_id and the allowed secret fingerprints of the work tree's desk.json (else HEAD's), read
    without pydantic: `desk doctor` judges history by the allow-list as it stands."""
    try:
        data = desk.read_if_present(CONFIG_PATH)
    except SymlinkError:
        data = None
    return commit_config(desk, [Change(CONFIG_PATH, data)] if data is not None else [])


def blob_reader(git: Git, known: Mapping[str, bytes]) -> Read:
    """Blobs from `known` (already read or about to be written), the rest from git's object store."""
    def read(shas: list[str]) -> Mapping[str, bytes]:
        return {**{s: known[s] for s in shas if s in known},
                **git.objects.read_blobs(s for s in shas if s not in known)}
    return read


def restore_hints(desk: DeskFolder, findings: list[Finding]) -> list[Finding]:
    """A broken conflict queue's findings name the last commit whose queue was good (HEAD's copy
    may be the broken one). One `git log` of the queue, and only when it is broken."""
    if not any(f.path == CONFLICTS_FILE and f.severity == "error" for f in findings):
        return findings
    hint = last_good_hint(desk, CONFLICTS_FILE)
    return [f._replace(message=f"{f.message}; {hint}")
            if f.path == CONFLICTS_FILE and f.severity == "error" else f for f in findings]


def last_good_hint(desk: DeskFolder, path: str = CONFLICTS_FILE) -> str:
    """What to do about a broken queue: restore the newest of its last 50 versions that is good
    (HEAD's may be the broken one), named by its commit."""
    from desk.formats.queue import queue_findings  # pydantic: only when the queue is broken

    for commit in desk.git.history.log([path], limit=50):
        data = desk.git.objects.blob_at(commit.sha, path)
        if data is not None and not any(f.severity == "error" for f in queue_findings(path, data)):
            return (f"restore the last good version: `git checkout {commit.sha[:12]} -- {path}` "
                    f"(from \"{commit.subject}\"), then commit it")
    return f"no good version in its last 50 commits; `git log -p -- {path}` shows its history"
